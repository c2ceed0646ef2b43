// `polnode init`: creates a node home (config.toml, genesis.json, node.key) for a new local chain.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <ostream>

#include "commands.h"
#include "json.h"
#include "node_home.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/contracts/genesis.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode init";

// "PUBKEY=AMOUNT,PUBKEY=AMOUNT" -> allocations appended to `spec`.
Status AddAccounts(std::string_view list, proto::GenesisSpec& spec) {
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
    proto::Allocation* a = spec.add_allocations();
    a->set_pubkey(key.data(), key.size());
    a->set_amount(amount);
  }
  return Status::Ok();
}

Status Init(const FlagSet& flags, Io& io) {
  const std::string dir = flags.Get("home");
  for (const char* name : {kConfigFileName, kGenesisFileName, kNodeKeyFileName}) {
    if (std::filesystem::exists(dir + "/" + name)) {
      return Status::AlreadyExists(dir + "/" + name + " exists; 'polnode init' never overwrites a node home");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("create " + dir + ": " + ec.message());
  // The home holds the node key; keep it private like ~/.ssh.
  ::chmod(dir.c_str(), 0700);

  GenesisFile genesis;
  genesis.spec.set_chain_id(flags.Get("chain-id"));
  POLNODE_RETURN_IF_ERROR(contracts::ValidateChainId(genesis.spec.chain_id()).WithContext("--chain-id"));
  *genesis.spec.mutable_params() = contracts::DefaultParams();
  genesis.genesis_time_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  POLNODE_ASSIGN_OR_RETURN(std::int64_t balance, flags.GetInt("balance", 0, INT64_MAX));
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, consensus::SecretKey::Generate());
  const std::string pubkey = consensus::ToHex(key.PublicKey().bytes());
  if (balance > 0) {
    proto::Allocation* a = genesis.spec.add_allocations();
    a->set_pubkey(key.PublicKey().bytes().data(), 32);
    a->set_amount(static_cast<std::uint64_t>(balance));
  }
  POLNODE_RETURN_IF_ERROR(AddAccounts(flags.Get("accounts"), genesis.spec));

  NodeConfig config;
  if (flags.Given("listen")) config.listen = flags.Get("listen");
  POLNODE_ASSIGN_OR_RETURN(config.block_interval_ms, flags.GetInt("block-interval-ms", 1, 3600 * 1000));
  // Round-trip through the parser so init never writes a config the node would refuse.
  POLNODE_ASSIGN_OR_RETURN(config, ParseNodeConfig(FormatNodeConfig(config)));

  NodeHome home;
  home.dir = dir;
  POLNODE_RETURN_IF_ERROR(consensus::WriteKeyFile(home.KeyPath(), key));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(home.GenesisPath(), FormatGenesisJson(genesis)));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(home.ConfigPath(), FormatNodeConfig(config)));

  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("home", dir)
        .Field("chain_id", genesis.spec.chain_id())
        .Field("node_pubkey", pubkey)
        .Field("key_file", home.KeyPath())
        .Field("genesis", home.GenesisPath())
        .Field("config", home.ConfigPath())
        .Field("listen", config.listen)
        .EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "initialized node home " << dir << "\n"
           << "  chain id:    " << genesis.spec.chain_id() << "\n"
           << "  node key:    " << home.KeyPath() << " (mode 0600), public key " << pubkey << "\n"
           << "  genesis:     " << home.GenesisPath() << " (" << genesis.spec.allocations_size() << " funded accounts)\n"
           << "  config:      " << home.ConfigPath() << " (listen " << config.listen << ")\n"
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
  flags.Value("home", "DIR", "the node home directory to create", "", true);
  flags.Value("chain-id", "ID", "chain id ([A-Za-z0-9._/-], at most 64 characters)", "polnode-local");
  flags.Value("balance", "AMOUNT", "genesis balance of the node key's account", "1000000000000");
  flags.Value("accounts", "LIST", "more genesis accounts, comma-separated PUBKEY=AMOUNT");
  flags.Value("listen", "HOST:PORT", "address of the HTTP API", "127.0.0.1:26657");
  flags.Value("block-interval-ms", "N", "milliseconds between blocks", "1000");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Init(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
