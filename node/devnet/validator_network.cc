#include "polnode/devnet/validator_network.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/rpc/abci_genesis.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"

namespace polnode::node {
namespace {

// Loopback ports picked for children that start later. Each probe socket stays bound until the
// reservation is destroyed, so no two picks in one network coincide; the ports are then free again
// for the children to listen on.
class PortReservation {
 public:
  PortReservation() = default;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation() {
    for (const int fd : fds_) ::close(fd);
  }

  // A loopback port no socket is bound to, distinct from every earlier pick of this reservation.
  Result<std::uint16_t> Pick() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return Status::IOError("socket() failed");
    fds_.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return Status::IOError("cannot find a free loopback port");
    }
    return ntohs(addr.sin_port);
  }

 private:
  std::vector<int> fds_;
};

Result<std::string> ReadText(const std::string& path) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, 16 << 20));
  return std::string(bytes.begin(), bytes.end());
}

// Replaces the one occurrence of `from` in `text`: CometBFT writes these files, and a shape it no
// longer writes must stop the devnet rather than leave a node on a default port.
Status ReplaceOnce(std::string& text, const std::string& from, const std::string& to, const std::string& file) {
  const std::size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) {
    return Status::Corruption("'" + from + "' is not in " + file + " exactly once (another CometBFT version?)");
  }
  text.replace(at, from.size(), to);
  return Status::Ok();
}

// GET `target` of `url`'s server; the body of a 200 answer.
Result<std::string> GetBody(const std::string& url, const std::string& target) {
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint endpoint, ParseHttpUrl(url));
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint, "GET", target, {}, {}, std::chrono::seconds(5)));
  if (r.status != 200) return Status::Unavailable(url + target + " answered " + std::to_string(r.status));
  return std::move(r.body);
}

}  // namespace

void ValidatorWindows(proto::Params& p) {
  p.set_verify_window(1200);
  p.set_challenge_window(60);
  p.set_reveal_window(600);
  p.set_dispute_move_window(300);
  p.set_publish_window(1200);
  p.set_seed_reveal_window(600);
}

Result<std::unique_ptr<ValidatorNetwork>> ValidatorNetwork::Create(const ValidatorNetworkOptions& options, Clock& clock) {
  std::error_code ec;
  if (!std::filesystem::exists(options.cometbft, ec)) {
    return Status::Unavailable("no CometBFT at " + options.cometbft + ": scripts/install-deps.sh builds the pinned version");
  }
  std::unique_ptr<ValidatorNetwork> net(new ValidatorNetwork(options, clock));
  const std::string out = options.dir + "/net";
  // The nodes' p2p addresses in the generated config are 127.0.0.(2+i):26656; each is rewritten to
  // a port of its own on 127.0.0.1 below.
  POLNODE_ASSIGN_OR_RETURN(ChildProcess testnet,
                           ChildProcess::Spawn({options.cometbft, "testnet", "--v", std::to_string(options.validators), "--n",
                                                "0", "--o", out, "--starting-ip-address", "127.0.0.2",
                                                "--populate-persistent-peers"},
                                               options.log_dir + "/cometbft-testnet.log"));
  const std::optional<int> made = testnet.Wait(std::chrono::seconds(60), clock);
  if (made != 0) return Status::Unavailable("cometbft testnet failed; see " + options.log_dir + "/cometbft-testnet.log");

  // Held until Create returns, so that the 4 ports of every node are distinct; the children bind
  // them in Start.
  PortReservation ports;
  for (int i = 0; i < options.validators; ++i) {
    Node node;
    node.comet_home = out + "/node" + std::to_string(i);
    node.app_home = options.dir + "/app" + std::to_string(i);
    POLNODE_ASSIGN_OR_RETURN(node.rpc_port, ports.Pick());
    POLNODE_ASSIGN_OR_RETURN(node.p2p_port, ports.Pick());
    POLNODE_ASSIGN_OR_RETURN(node.app_port, ports.Pick());
    POLNODE_ASSIGN_OR_RETURN(node.http_port, ports.Pick());
    std::filesystem::create_directories(node.app_home, ec);
    if (ec) return Status::IOError("cannot create " + node.app_home + ": " + ec.message());
    for (const char* file : {"genesis.json", "config.toml"}) {
      POLNODE_ASSIGN_OR_RETURN(std::string text, ReadText(options.node_home + "/" + file));
      POLNODE_RETURN_IF_ERROR(WriteFileAtomically(node.app_home + "/" + file, text));
    }
    net->nodes_.push_back(std::move(node));
  }
  // Each validator's VRF key for the beacon (node/ledger/abci_beacon.h), in its application's home
  // where `polnode abci` reads it, registered in the genesis under its CometBFT address.
  BeaconKeys beacon_keys;
  for (const Node& node : net->nodes_) {
    POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey vrf_key, consensus::SecretKey::Generate());
    POLNODE_RETURN_IF_ERROR(consensus::WriteKeyFile(node.app_home + "/vrf.key", vrf_key));
    const std::string key_path = node.comet_home + "/config/priv_validator_key.json";
    POLNODE_ASSIGN_OR_RETURN(std::string key_json, ReadText(key_path));
    POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(key_json));
    if (!doc.IsObject() || !doc.HasMember("address") || !doc["address"].IsString()) {
      return Status::Corruption(key_path + " has no address");
    }
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> address, consensus::HexToBytes(doc["address"].GetString()));
    if (address.size() != kValidatorAddressBytes) return Status::Corruption(key_path + "'s address is not 20 bytes");
    beacon_keys.emplace(std::string(address.begin(), address.end()), vrf_key.PublicKey());
  }
  POLNODE_ASSIGN_OR_RETURN(const std::string app_state, AddBeaconKeys(options.genesis_json, beacon_keys));
  for (int i = 0; i < options.validators; ++i) {
    const Node& node = net->nodes_[static_cast<std::size_t>(i)];
    const std::string genesis_path = node.comet_home + "/config/genesis.json";
    POLNODE_ASSIGN_OR_RETURN(std::string genesis, ReadText(genesis_path));
    // CometBFT's chain id becomes polnode's (InitChain checks they match) and polnode's genesis
    // rides along as app_state.
    const std::string chain_key = "\"chain_id\": \"";
    const std::size_t chain_at = genesis.find(chain_key);
    if (chain_at == std::string::npos) return Status::Corruption(genesis_path + " has no chain_id");
    const std::size_t chain_end = genesis.find('"', chain_at + chain_key.size());
    if (chain_end == std::string::npos) return Status::Corruption(genesis_path + "'s chain_id has no closing quote");
    genesis.replace(chain_at, chain_end + 1 - chain_at, chain_key + options.chain_id + "\"");
    POLNODE_RETURN_IF_ERROR(ReplaceOnce(genesis, "\"app_hash\": \"\"", "\"app_hash\": \"\",\n  \"app_state\": " + app_state,
                                        genesis_path));
    // The beacon's vote extensions, from height 1.
    POLNODE_RETURN_IF_ERROR(ReplaceOnce(genesis, "\"vote_extensions_enable_height\": \"0\"",
                                        "\"vote_extensions_enable_height\": \"1\"", genesis_path));
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(genesis_path, genesis));

    const std::string config_path = node.comet_home + "/config/config.toml";
    POLNODE_ASSIGN_OR_RETURN(std::string config, ReadText(config_path));
    const std::vector<std::pair<std::string, std::string>> edits = {
        {"proxy_app = \"tcp://127.0.0.1:26658\"", "proxy_app = \"tcp://127.0.0.1:" + std::to_string(node.app_port) + "\""},
        {"laddr = \"tcp://127.0.0.1:26657\"", "laddr = \"tcp://127.0.0.1:" + std::to_string(node.rpc_port) + "\""},
        {"laddr = \"tcp://0.0.0.0:26656\"", "laddr = \"tcp://127.0.0.1:" + std::to_string(node.p2p_port) + "\""},
        {"timeout_propose = \"3s\"", "timeout_propose = \"" + options.timeout_propose + "\""},
        {"timeout_commit = \"1s\"", "timeout_commit = \"" + options.timeout_commit + "\""},
        {"timeout_prevote = \"1s\"", "timeout_prevote = \"" + options.timeout_vote + "\""},
        {"timeout_precommit = \"1s\"", "timeout_precommit = \"" + options.timeout_vote + "\""},
    };
    for (const auto& [from, to] : edits) POLNODE_RETURN_IF_ERROR(ReplaceOnce(config, from, to, config_path));
    for (int peer = 0; peer < options.validators; ++peer) {
      // A node's own address is not among its persistent peers.
      if (peer == i) continue;
      POLNODE_RETURN_IF_ERROR(ReplaceOnce(
          config, "@127.0.0." + std::to_string(2 + peer) + ":26656",
          "@127.0.0.1:" + std::to_string(net->nodes_[static_cast<std::size_t>(peer)].p2p_port), config_path));
    }
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(config_path, config));
  }
  return net;
}

std::string ValidatorNetwork::AppLog(int i) const { return o_.log_dir + "/validator" + std::to_string(i) + "-app.log"; }
std::string ValidatorNetwork::CometLog(int i) const { return o_.log_dir + "/validator" + std::to_string(i) + "-cometbft.log"; }

std::string ValidatorNetwork::api_url(int i) const {
  return "http://127.0.0.1:" + std::to_string(nodes_[static_cast<std::size_t>(i)].http_port);
}

Status ValidatorNetwork::StartApp(int i) {
  Node& node = nodes_[static_cast<std::size_t>(i)];
  const std::uintmax_t from = LogSize(AppLog(i));
  POLNODE_ASSIGN_OR_RETURN(
      ChildProcess p,
      ChildProcess::Spawn({o_.polnode, "abci", "--home", node.app_home, "--json", "--listen",
                           "tcp://127.0.0.1:" + std::to_string(node.app_port), "--http",
                           "127.0.0.1:" + std::to_string(node.http_port), "--comet-rpc",
                           "http://127.0.0.1:" + std::to_string(node.rpc_port)},
                          AppLog(i)));
  node.app.emplace(std::move(p));
  Result<std::string> line = WaitForLogLine(*node.app, from, "{", std::chrono::seconds(60), clock_);
  if (!line.ok()) return line.status().WithContext("validator " + std::to_string(i) + "'s application");
  return Status::Ok();
}

Status ValidatorNetwork::StartComet(int i) {
  Node& node = nodes_[static_cast<std::size_t>(i)];
  POLNODE_ASSIGN_OR_RETURN(ChildProcess p, ChildProcess::Spawn({o_.cometbft, "start", "--home", node.comet_home}, CometLog(i)));
  node.comet.emplace(std::move(p));
  return Status::Ok();
}

Status ValidatorNetwork::Start() {
  for (int i = 0; i < size(); ++i) POLNODE_RETURN_IF_ERROR(StartApp(i));
  for (int i = 0; i < size(); ++i) POLNODE_RETURN_IF_ERROR(StartComet(i));
  const Clock::TimePoint deadline = clock_.Now() + std::chrono::seconds(120);
  for (int i = 0; i < size(); ++i) {
    while (true) {
      Result<std::uint64_t> height = Height(i);
      if (height.ok() && *height >= 1) break;
      if (nodes_[static_cast<std::size_t>(i)].comet->Exited()) {
        return Status::FailedPrecondition("validator " + std::to_string(i) + "'s CometBFT exited; see " + CometLog(i));
      }
      if (clock_.Now() > deadline) {
        return Status::Unavailable("validator " + std::to_string(i) + " made no block in 120 s; see " + CometLog(i));
      }
      clock_.SleepFor(std::chrono::milliseconds(50));
    }
  }
  return Status::Ok();
}

Result<std::uint64_t> ValidatorNetwork::Height(int i) const {
  POLNODE_ASSIGN_OR_RETURN(LedgerClient client, LedgerClient::FromUrl(api_url(i)));
  POLNODE_ASSIGN_OR_RETURN(LedgerInfo info, client.Info());
  return info.height;
}

void ValidatorNetwork::Kill(int i) {
  Node& node = nodes_[static_cast<std::size_t>(i)];
  for (std::optional<ChildProcess>* p : {&node.comet, &node.app}) {
    if (!*p) continue;
    (*p)->Signal(SIGKILL);
    (*p)->Wait(std::chrono::seconds(10), clock_);
  }
}

Status ValidatorNetwork::Restart(int i) {
  POLNODE_RETURN_IF_ERROR(StartApp(i));
  return StartComet(i);
}

Result<ValidatorAgreement> ValidatorNetwork::Agreement(std::chrono::seconds timeout) {
  ValidatorAgreement result;
  for (int i = 0; i < size(); ++i) {
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t h, Height(i));
    result.height = std::max(result.height, h);
  }
  const Clock::TimePoint deadline = clock_.Now() + timeout;
  for (int i = 0; i < size(); ++i) {
    while (true) {
      Result<std::uint64_t> h = Height(i);
      if (h.ok() && *h >= result.height) {
        result.tips.push_back(*h);
        break;
      }
      if (clock_.Now() > deadline) {
        return Status::Unavailable("validator " + std::to_string(i) + " did not reach height " +
                                   std::to_string(result.height) + "; see " + CometLog(i));
      }
      clock_.SleepFor(std::chrono::milliseconds(50));
    }
  }
  result.agree = true;
  std::map<std::string, std::string> first_outcomes;  // task id hex -> "status/outcome" at validator 0
  for (int i = 0; i < size(); ++i) {
    POLNODE_ASSIGN_OR_RETURN(std::string block, GetBody(api_url(i), "/v1/blocks/" + std::to_string(result.height)));
    POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(block));
    if (!doc.IsObject() || !doc.HasMember("state_root") || !doc["state_root"].IsString()) {
      return Status::Corruption("validator " + std::to_string(i) + "'s block " + std::to_string(result.height) +
                                " has no state_root");
    }
    const std::string root = doc["state_root"].GetString();
    if (i == 0) result.state_root_hex = root;
    if (root != result.state_root_hex) {
      result.agree = false;
      result.difference += "validator " + std::to_string(i) + " has state root " + root + " at height " +
                           std::to_string(result.height) + "; ";
    }
    POLNODE_ASSIGN_OR_RETURN(LedgerClient client, LedgerClient::FromUrl(api_url(i)));
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, client.Tasks(0, 100));
    std::map<std::string, std::string> outcomes;
    for (const proto::Task& task : page.tasks) {
      outcomes[consensus::ToHex(task.id())] =
          proto::TaskStatus_Name(task.status()) + "/" + proto::TaskOutcome_Name(task.outcome());
    }
    if (i == 0) first_outcomes = outcomes;
    if (outcomes != first_outcomes) {
      result.agree = false;
      result.difference += "validator " + std::to_string(i) + " has other task outcomes; ";
    }
  }
  return result;
}

void ValidatorNetwork::StopAll() {
  for (Node& node : nodes_) {
    if (node.comet) node.comet->Stop(std::chrono::seconds(5));
    if (node.app) node.app->Stop(std::chrono::seconds(5));
  }
}

}  // namespace polnode::node
