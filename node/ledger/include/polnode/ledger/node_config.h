// The node home's config.toml: where the ledger listens, how often it makes blocks, where its
// data lives, and the HTTP limits. Read with a small TOML subset reader (enough for this file):
//
//   # comment                       whole-line or after a value
//   [section]                       keys below belong to "section" (names: [A-Za-z0-9_.-]+)
//   key = "string"                  basic strings with \" \\ \n \t escapes
//   key = 123  /  key = -5          64-bit integers (underscores allowed between digits)
//   key = true / false
//
// Anything else (arrays, tables inline, dates, multi-line strings, a key given twice) is an error
// naming the line, because a config line silently ignored is a setting silently not applied.
#ifndef POLNODE_LEDGER_NODE_CONFIG_H_
#define POLNODE_LEDGER_NODE_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "polnode/base/status.h"

namespace polnode::node {

/// One parsed TOML value.
using TomlValue = std::variant<std::string, std::int64_t, bool>;

/// Parsed TOML subset: "section.key" (or "key" before any section) -> value.
using TomlTable = std::map<std::string, TomlValue, std::less<>>;

/// Parses `text` as the subset above. kInvalidArgument naming the line number and the problem.
[[nodiscard]] Result<TomlTable> ParseToml(std::string_view text);

/// Everything config.toml sets. Defaults are what `polnode init` writes.
struct NodeConfig {
  // [ledger]
  std::string listen = "127.0.0.1:26657";  // HOST:PORT of the HTTP API
  std::int64_t block_interval_ms = 1000;   // one block per interval, empty or not
  std::string data_dir = "data";           // RocksDB directory; relative paths are under the home
  std::int64_t max_txs_per_block = 1000;
  // Largest signed envelope the mempool admits. A dispute's referee move carries one operator's
  // input tensors: 2.4 MB for the SGD update of the default MLP's first layer.
  std::int64_t max_tx_bytes = 4 << 20;
  std::int64_t mempool_max_txs = 50000;
  bool sync_writes = true;                 // fsync every block (off: survives kill -9, not power loss)
  // [http]
  std::int64_t max_body_bytes = 12 << 20;  // larger request bodies get 413 (a hex JSON tx doubles its size)
  std::int64_t read_timeout_ms = 10000;    // a request must arrive completely within this
  std::int64_t http_threads = 2;
};

/// Parses config.toml text. Unknown sections or keys and values of the wrong type or out of range
/// are kInvalidArgument naming the key; missing keys keep their defaults.
[[nodiscard]] Result<NodeConfig> ParseNodeConfig(std::string_view text);

/// The config.toml text for `config` (what `polnode init` writes), with a comment per key.
std::string FormatNodeConfig(const NodeConfig& config);

/// Splits "HOST:PORT" (port 0..65535; HOST non-empty, IPv6 literals in brackets).
/// kInvalidArgument otherwise.
[[nodiscard]] Result<std::pair<std::string, std::uint16_t>> SplitHostPort(std::string_view listen);

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_NODE_CONFIG_H_
