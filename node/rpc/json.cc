#include "polnode/rpc/json.h"

#include <rapidjson/error/en.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace polnode::node {

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"";
  return out;
}

void JsonWriter::BeforeValue() {
  if (stack_.empty()) {
    if (!out_.empty()) std::abort();  // a second top-level value
    return;
  }
  switch (stack_.back()) {
    case Frame::kObjectKey: std::abort();  // a value where a key belongs
    case Frame::kObjectValue: stack_.back() = Frame::kObjectKey; return;
    case Frame::kArray:
      if (!first_.back()) out_ += ",";
      first_.back() = false;
      return;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ += "{";
  stack_.push_back(Frame::kObjectKey);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  if (stack_.empty() || stack_.back() != Frame::kObjectKey) std::abort();
  stack_.pop_back();
  first_.pop_back();
  out_ += "}";
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ += "[";
  stack_.push_back(Frame::kArray);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  if (stack_.empty() || stack_.back() != Frame::kArray) std::abort();
  stack_.pop_back();
  first_.pop_back();
  out_ += "]";
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  if (stack_.empty() || stack_.back() != Frame::kObjectKey) std::abort();
  if (!first_.back()) out_ += ",";
  first_.back() = false;
  out_ += JsonQuote(key);
  out_ += ":";
  stack_.back() = Frame::kObjectValue;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  out_ += JsonQuote(value);
  return *this;
}

JsonWriter& JsonWriter::Int(std::int64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Uint(std::uint64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_ += "null";
    return *this;
  }
  char buf[40];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);  // shortest exact round trip
  if (ec != std::errc()) std::abort();
  out_.append(buf, end);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

Result<rapidjson::Document> ParseJson(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    return Status::InvalidArgument(std::string("not valid JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) +
                                   " at offset " + std::to_string(doc.GetErrorOffset()));
  }
  return doc;
}

}  // namespace polnode::node
