// `polnode init`: creates a node home (config.toml, genesis.json, node.key) for a new local chain.
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ostream>

#include "flag_groups.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/node_home.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode init";

// "PUBKEY=AMOUNT,PUBKEY=AMOUNT" -> genesis allocations.
Result<std::vector<proto::Allocation>> ParseAccounts(std::string_view list) {
  std::vector<proto::Allocation> accounts;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Status::InvalidArgument("--accounts entry '" + std::string(item) + "' is not PUBKEY=AMOUNT");
    std::array<std::uint8_t, 32> key{};
    POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(item.substr(0, eq), key).WithContext("--accounts public key"));
    std::string amount_text(item.substr(eq + 1));
    char* end = nullptr;
    errno = 0;
    unsigned long long amount = std::strtoull(amount_text.c_str(), &end, 10);
    if (amount_text.empty() || amount_text[0] == '-' || *end != '\0' || errno == ERANGE) {
      return Status::InvalidArgument("--accounts amount '" + amount_text + "' is not a non-negative integer");
    }
    proto::Allocation& a = accounts.emplace_back();
    a.set_pubkey(key.data(), key.size());
    a.set_amount(amount);
  }
  return accounts;
}

Status Init(const FlagSet& flags, Io& io) {
  const std::string dir = flags.Get("home");
  NodeHomeSpec spec;
  spec.chain_id = flags.Get("chain-id");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t balance, flags.GetInt("balance", 0, INT64_MAX));
  spec.node_balance = static_cast<std::uint64_t>(balance);
  POLNODE_ASSIGN_OR_RETURN(spec.accounts, ParseAccounts(flags.Get("accounts")));
  spec.config.listen = flags.Get("listen");
  POLNODE_ASSIGN_OR_RETURN(spec.config.block_interval_ms, flags.GetInt("block-interval-ms", 1, 3600 * 1000));
  POLNODE_ASSIGN_OR_RETURN(NewNodeHome created, CreateNodeHome(dir, spec));
  const NodeHome& home = created.home;
  const std::string pubkey = consensus::ToHex(created.node_pubkey);

  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("home", dir)
        .Field("chain_id", home.genesis.spec.chain_id())
        .Field("pubkey", pubkey)
        .Field("key_file", home.KeyPath())
        .Field("genesis", home.GenesisPath())
        .Field("config", home.ConfigPath())
        .Field("listen", home.config.listen)
        .EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "initialized node home " << dir << "\n"
           << "  chain id:    " << home.genesis.spec.chain_id() << "\n"
           << "  node key:    " << home.KeyPath() << " (mode 0600), public key " << pubkey << "\n"
           << "  genesis:     " << home.GenesisPath() << " (" << home.genesis.spec.allocations_size() << " funded accounts)\n"
           << "  config:      " << home.ConfigPath() << " (listen " << home.config.listen << ")\n"
           << "start it with: polnode ledger --home " << dir << "\n";
  }
  return Status::Ok();
}

}  // namespace

int RunInitCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Create a node home: a new node key (0600), genesis.json for a new chain that funds the node's "
                "account, and config.toml. Edit genesis.json before the first 'polnode ledger' to change the "
                "params or the initial accounts.");
  DeclareNodeHomeFlag(flags, true);
  const NodeHomeSpec defaults;
  flags.Value("chain-id", "ID", "chain id ([A-Za-z0-9._/-], at most 64 characters)", defaults.chain_id);
  flags.Value("balance", "AMOUNT", "genesis balance of the node key's account", std::to_string(defaults.node_balance));
  flags.Value("accounts", "LIST", "more genesis accounts, comma-separated PUBKEY=AMOUNT");
  flags.Value("listen", "HOST:PORT", "address of the HTTP API", defaults.config.listen);
  flags.Value("block-interval-ms", "N", "milliseconds between blocks", std::to_string(defaults.config.block_interval_ms));
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Init(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
