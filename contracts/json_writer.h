// A minimal JSON writer for query results: objects, arrays, strings (escaped), unsigned integers
// and booleans. Commas are placed by the writer, so callers only name keys and values. Amounts
// are written as JSON numbers; readers that parse numbers as doubles lose precision above 2^53.
#ifndef POLNODE_CONTRACTS_JSON_WRITER_H_
#define POLNODE_CONTRACTS_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace polnode::contracts {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  /// The key of the next value inside an object.
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Uint(std::uint64_t value);
  JsonWriter& Bool(bool value);

  /// Shorthands for Key(key) followed by the value.
  JsonWriter& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, std::uint64_t value) { return Key(key).Uint(value); }
  JsonWriter& Field(std::string_view key, std::uint32_t value) { return Key(key).Uint(value); }
  JsonWriter& Field(std::string_view key, bool value) { return Key(key).Bool(value); }

  /// The document written so far.
  const std::string& str() const { return out_; }

 private:
  // Writes the comma that separates this value from the previous one at the same level.
  void BeforeValue();

  std::string out_;
  std::vector<bool> first_;  // per open container: no value written yet
  bool after_key_ = false;
};

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_JSON_WRITER_H_
