#include "polnode/ledger/node_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <sstream>

namespace polnode::node {
namespace {

bool IsBareChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Parses a value at the start of `text`; `rest` gets what follows it.
Result<TomlValue> ParseValue(std::string_view text, std::string_view& rest) {
  if (text.empty()) return Status::InvalidArgument("missing value");
  if (text.front() == '"') {
    std::string out;
    for (std::size_t i = 1; i < text.size(); ++i) {
      char c = text[i];
      if (c == '"') {
        rest = text.substr(i + 1);
        return TomlValue(out);
      }
      if (c == '\\') {
        if (++i >= text.size()) break;
        switch (text[i]) {
          case '"': out.push_back('"'); break;
          case '\\': out.push_back('\\'); break;
          case 'n': out.push_back('\n'); break;
          case 't': out.push_back('\t'); break;
          default: return Status::InvalidArgument("unsupported escape \\" + std::string(1, text[i]));
        }
        continue;
      }
      out.push_back(c);
    }
    return Status::InvalidArgument("unterminated string");
  }
  std::size_t end = 0;
  while (end < text.size() && text[end] != ' ' && text[end] != '\t' && text[end] != '#') ++end;
  std::string_view word = text.substr(0, end);
  rest = text.substr(end);
  if (word == "true") return TomlValue(true);
  if (word == "false") return TomlValue(false);
  std::string digits;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (word[i] == '_' && i > 0 && i + 1 < word.size() && std::isdigit(static_cast<unsigned char>(word[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(word[i + 1]))) {
      continue;
    }
    digits.push_back(word[i]);
  }
  std::int64_t v = 0;
  const char* first = digits.data() + (!digits.empty() && digits[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(first, digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) {
    return Status::InvalidArgument("value '" + std::string(word) + "' is not a string, integer or boolean");
  }
  return TomlValue(v);
}

}  // namespace

Result<TomlTable> ParseToml(std::string_view text) {
  TomlTable table;
  std::string section;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    auto fail = [&](const std::string& what) {
      return Status::InvalidArgument("config line " + std::to_string(line_no) + ": " + what);
    };
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') {
      std::size_t close = line.find(']');
      if (close == std::string_view::npos) return fail("unterminated section header");
      std::string_view name = Trim(line.substr(1, close - 1));
      std::string_view after = Trim(line.substr(close + 1));
      if (name.empty() || name.front() == '[' || !std::all_of(name.begin(), name.end(), IsBareChar)) {
        return fail("bad section name '" + std::string(name) + "'");
      }
      if (!after.empty() && after.front() != '#') return fail("unexpected text after section header");
      section = std::string(name);
      continue;
    }
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) return fail("expected key = value");
    std::string_view key = Trim(line.substr(0, eq));
    if (key.empty() || !std::all_of(key.begin(), key.end(), IsBareChar)) return fail("bad key '" + std::string(key) + "'");
    std::string_view rest;
    Result<TomlValue> value = ParseValue(Trim(line.substr(eq + 1)), rest);
    if (!value.ok()) return fail(value.status().message());
    rest = Trim(rest);
    if (!rest.empty() && rest.front() != '#') return fail("unexpected text after the value");
    std::string full = section.empty() ? std::string(key) : section + "." + std::string(key);
    if (!table.emplace(full, std::move(value).value()).second) return fail("key '" + full + "' given twice");
  }
  return table;
}

Result<NodeConfig> ParseNodeConfig(std::string_view text) {
  POLNODE_ASSIGN_OR_RETURN(TomlTable table, ParseToml(text));
  NodeConfig config;
  auto str = [](std::string* out) {
    return [out](const TomlValue& v) -> Status {
      if (!std::holds_alternative<std::string>(v)) return Status::InvalidArgument("must be a string");
      *out = std::get<std::string>(v);
      return Status::Ok();
    };
  };
  auto integer = [](std::int64_t* out, std::int64_t min, std::int64_t max) {
    return [out, min, max](const TomlValue& v) -> Status {
      if (!std::holds_alternative<std::int64_t>(v)) return Status::InvalidArgument("must be an integer");
      std::int64_t x = std::get<std::int64_t>(v);
      if (x < min || x > max) {
        return Status::InvalidArgument("must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      }
      *out = x;
      return Status::Ok();
    };
  };
  auto boolean = [](bool* out) {
    return [out](const TomlValue& v) -> Status {
      if (!std::holds_alternative<bool>(v)) return Status::InvalidArgument("must be true or false");
      *out = std::get<bool>(v);
      return Status::Ok();
    };
  };
  const std::map<std::string, std::function<Status(const TomlValue&)>, std::less<>> setters = {
      {"ledger.listen", str(&config.listen)},
      {"ledger.block_interval_ms", integer(&config.block_interval_ms, 1, 3600 * 1000)},
      {"ledger.data_dir", str(&config.data_dir)},
      {"ledger.max_txs_per_block", integer(&config.max_txs_per_block, 1, 100000)},
      {"ledger.max_tx_bytes", integer(&config.max_tx_bytes, 256, 64 << 20)},
      {"ledger.mempool_max_txs", integer(&config.mempool_max_txs, 1, 10000000)},
      {"ledger.sync_writes", boolean(&config.sync_writes)},
      {"http.max_body_bytes", integer(&config.max_body_bytes, 1024, 64 << 20)},
      {"http.read_timeout_ms", integer(&config.read_timeout_ms, 10, 3600 * 1000)},
      {"http.threads", integer(&config.http_threads, 1, 64)},
  };
  for (const auto& [key, value] : table) {
    auto it = setters.find(key);
    if (it == setters.end()) return Status::InvalidArgument("config: unknown setting '" + key + "'");
    POLNODE_RETURN_IF_ERROR(it->second(value).WithContext("config: " + key));
  }
  POLNODE_RETURN_IF_ERROR(SplitHostPort(config.listen).status().WithContext("config: ledger.listen"));
  if (config.data_dir.empty()) return Status::InvalidArgument("config: ledger.data_dir must not be empty");
  return config;
}

std::string FormatNodeConfig(const NodeConfig& c) {
  std::ostringstream out;
  out << "# polnode node configuration. Flags given on the command line override these values.\n\n"
      << "[ledger]\n"
      << "# HOST:PORT the HTTP API listens on\n"
      << "listen = \"" << c.listen << "\"\n"
      << "# one block per interval, with or without transactions\n"
      << "block_interval_ms = " << c.block_interval_ms << "\n"
      << "# RocksDB directory; relative to this home directory\n"
      << "data_dir = \"" << c.data_dir << "\"\n"
      << "max_txs_per_block = " << c.max_txs_per_block << "\n"
      << "# largest signed transaction the mempool admits, in bytes\n"
      << "max_tx_bytes = " << c.max_tx_bytes << "\n"
      << "mempool_max_txs = " << c.mempool_max_txs << "\n"
      << "# fsync every block; false still survives kill -9 but not power loss\n"
      << "sync_writes = " << (c.sync_writes ? "true" : "false") << "\n\n"
      << "[http]\n"
      << "# request bodies above this get 413\n"
      << "max_body_bytes = " << c.max_body_bytes << "\n"
      << "# a request must arrive completely within this many milliseconds\n"
      << "read_timeout_ms = " << c.read_timeout_ms << "\n"
      << "threads = " << c.http_threads << "\n";
  return out.str();
}

Result<std::pair<std::string, std::uint16_t>> SplitHostPort(std::string_view listen) {
  std::size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == listen.size()) {
    return Status::InvalidArgument("'" + std::string(listen) + "' is not HOST:PORT");
  }
  std::string_view host = listen.substr(0, colon);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return Status::InvalidArgument("bad IPv6 literal in '" + std::string(listen) + "'");
    host = host.substr(1, host.size() - 2);
  }
  std::string_view port_text = listen.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535) {
    return Status::InvalidArgument("bad port in '" + std::string(listen) + "'");
  }
  return std::make_pair(std::string(host), static_cast<std::uint16_t>(port));
}

}  // namespace polnode::node
