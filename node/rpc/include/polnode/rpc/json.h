// polnode's one JSON module: a small streaming writer for --json output, HTTP bodies and JSON
// files, and the one way JSON text is parsed. The writer produces compact, valid JSON (strings
// escaped per RFC 8259) in the order values are written, so output is stable for scripts and
// tests.
#ifndef POLNODE_RPC_JSON_H_
#define POLNODE_RPC_JSON_H_

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::node {

/// Usage:
///   JsonWriter w; w.BeginObject(); w.Key("height"); w.Int(7); w.EndObject(); w.str();
/// Misuse (a value where a key is expected, unbalanced End*) is a programming error and aborts,
/// because emitting broken JSON to a script is worse than stopping.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(std::int64_t value);
  JsonWriter& Uint(std::uint64_t value);
  /// Finite doubles print in the shortest form that reads back exactly; NaN/inf print as null.
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  /// Key + value shorthands.
  JsonWriter& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, std::int64_t value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, int value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, std::uint32_t value) { return Key(key).Uint(value); }
  JsonWriter& Field(std::string_view key, std::uint64_t value) { return Key(key).Uint(value); }
  JsonWriter& Field(std::string_view key, double value) { return Key(key).Double(value); }
  JsonWriter& Field(std::string_view key, bool value) { return Key(key).Bool(value); }

  /// The document so far. Complete once every Begin* has its End*.
  const std::string& str() const { return out_; }

 private:
  enum class Frame { kObjectKey, kObjectValue, kArray };
  void BeforeValue();

  std::string out_;
  std::vector<Frame> stack_;
  std::vector<bool> first_;  // per frame: no element written yet
};

/// `s` escaped as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view s);

/// Parses `text` with rapidjson's iterative parser, which keeps its nesting on the heap: the
/// recursive default would overflow the stack on a deeply nested document (half a megabyte of
/// '[' is enough), and requests, answers and files can all be larger. kInvalidArgument
/// "not valid JSON: <reason> at offset N"; callers add what the text was.
[[nodiscard]] Result<rapidjson::Document> ParseJson(std::string_view text);

}  // namespace polnode::node

#endif  // POLNODE_RPC_JSON_H_
