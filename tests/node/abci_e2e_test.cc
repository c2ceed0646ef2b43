// polnode under a real CometBFT (the version scripts/install-deps.sh pins): `cometbft init` makes a
// one-validator home on loopback ports, `polnode abci` and `cometbft start` run as real processes,
// signed polnode transactions go in through CometBFT's RPC (broadcast_tx_sync over HTTP), reads come
// back through abci_query, and the app hash CometBFT puts in its headers is polnode's state root.
// The roles' LedgerClient then uses polnode's HTTP API on the validator (`polnode abci --http`):
// nonce, post (forwarded to CometBFT), wait for the block, account and params reads.
// Then both are killed with SIGKILL and restarted (the handshake resumes at the same height and app
// hash), and a polnode with an empty store is started under the same CometBFT node (the handshake
// replays every block from genesis and reaches the same state).
//
// The test fails, not skips, without CometBFT: install-deps.sh builds it. POLNODE_COMETBFT names
// another binary.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "polnode/base/clock.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/payloads.h"
#include "polnode/consensus/block.h"
#include "polnode/rpc/abci_genesis.h"
#include "polnode/ledger/abci_beacon.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/testing/eventually.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/ledger_process.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using polnode::testing::DaemonProcess;
using polnode::testing::Eventually;
using polnode::testing::KeyFromByte;

constexpr char kChain[] = "abci-e2e";
constexpr std::uint64_t kBalance = 1'000'000'000;
constexpr auto kWait = std::chrono::seconds(90);

std::string CometbftBinary() {
  if (const char* env = std::getenv("POLNODE_COMETBFT"); env != nullptr && *env != '\0') return env;
  return "/opt/polnode-cometbft/v0.38.26/bin/cometbft";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Replaces the one occurrence of `from` in `text`; fails the test when it is not there exactly once
// (CometBFT's generated config changed shape).
::testing::AssertionResult ReplaceOnce(std::string& text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) {
    return ::testing::AssertionFailure() << "'" << from << "' is not in the file exactly once";
  }
  text.replace(at, from.size(), to);
  return ::testing::AssertionSuccess();
}

// A loopback TCP port that was free a moment ago.
std::uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The string value of the first "key":"..." in CometBFT's compact JSON ("" when absent).
std::string JsonString(const std::string& body, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  const std::size_t at = body.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t start = at + needle.size();
  return body.substr(start, body.find('"', start) - start);
}

std::string Base64Decode(const std::string& text) {
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
    if (v < 0) continue;  // padding
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

::testing::AssertionResult HaveCometbft() {
  if (std::filesystem::exists(CometbftBinary())) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no CometBFT at " << CometbftBinary()
                                       << ": scripts/install-deps.sh builds it (or set POLNODE_COMETBFT)";
}

std::string Raw(const std::string& hex) {
  Result<std::vector<std::uint8_t>> bytes = consensus::HexToBytes(hex);
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : std::string();
}

// The CometBFT validator address (raw bytes) of the node at `comet_home`.
std::string ValidatorAddress(const std::string& comet_home) {
  // The file is indented JSON ("address": "..."), unlike the RPC's compact answers.
  const std::string text = ReadFile(comet_home + "/config/priv_validator_key.json");
  const std::string needle = "\"address\": \"";
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t start = at + needle.size();
  return Raw(text.substr(start, text.find('"', start) - start));
}

// Each validator's VRF public key (the vrf_pubkey its `polnode abci` startup line reports) by its
// CometBFT address.
using VrfKeys = BeaconKeys;

// Adds the validator at `comet_home`, whose application reported `startup`, to `keys`.
::testing::AssertionResult AddVrfKey(VrfKeys& keys, const std::string& comet_home, const std::string& startup) {
  const std::string hex = JsonString(startup, "vrf_pubkey");
  const std::string raw = Raw(hex);
  if (raw.size() != 32) return ::testing::AssertionFailure() << "no vrf_pubkey in " << startup;
  Result<consensus::XOnlyPublicKey> key =
      consensus::XOnlyPublicKey::FromBytes(std::span<const std::uint8_t, 32>(reinterpret_cast<const std::uint8_t*>(raw.data()), 32));
  if (!key.ok()) return ::testing::AssertionFailure() << key.status().ToString();
  keys.emplace(ValidatorAddress(comet_home), *key);
  return ::testing::AssertionSuccess();
}

// Puts the polnode genesis, with the validators' VRF keys, into CometBFT's genesis.json as
// app_state, under polnode's chain id, and turns vote extensions on from height 1 (the beacon's).
::testing::AssertionResult SetAppState(const std::string& comet_home, const VrfKeys& keys) {
  const std::string path = comet_home + "/config/genesis.json";
  std::string genesis = ReadFile(path);
  const std::size_t chain_at = genesis.find("\"chain_id\": \"");
  if (chain_at == std::string::npos) return ::testing::AssertionFailure() << path << " has no chain_id";
  const std::size_t chain_end = genesis.find('"', chain_at + 13);
  genesis.replace(chain_at, chain_end + 1 - chain_at, "\"chain_id\": \"" + std::string(kChain) + "\"");
  Result<std::string> app_state =
      AddBeaconKeys(FormatGenesisJson(polnode::testing::TestGenesis(kChain, KeyFromByte(1), kBalance)), keys);
  if (!app_state.ok()) return ::testing::AssertionFailure() << app_state.status().ToString();
  auto replaced = ReplaceOnce(genesis, "\"app_hash\": \"\"", "\"app_hash\": \"\",\n  \"app_state\": " + *app_state);
  if (!replaced) return replaced;
  replaced = ReplaceOnce(genesis, "\"vote_extensions_enable_height\": \"0\"", "\"vote_extensions_enable_height\": \"1\"");
  if (!replaced) return replaced;
  WriteFile(path, genesis);
  return ::testing::AssertionSuccess();
}

// One validator: a CometBFT home and the polnode application it drives, on loopback ports of its own.
class ValidatorNode {
 public:
  ValidatorNode(std::string comet_home, std::string app_home)
      : comet_home_(std::move(comet_home)), app_home_(std::move(app_home)), rpc_{"127.0.0.1", FreePort()},
        p2p_port_(FreePort()), app_port_(FreePort()) {}

  // Points config.toml at this node's ports, with fast timeouts; `more` are further replacements.
  ::testing::AssertionResult Configure(const std::vector<std::pair<std::string, std::string>>& more = {}) {
    std::string config = ReadFile(comet_home_ + "/config/config.toml");
    std::vector<std::pair<std::string, std::string>> edits = {
        {"proxy_app = \"tcp://127.0.0.1:26658\"", "proxy_app = \"tcp://127.0.0.1:" + std::to_string(app_port_) + "\""},
        {"laddr = \"tcp://127.0.0.1:26657\"", "laddr = \"tcp://127.0.0.1:" + std::to_string(rpc_.port) + "\""},
        {"laddr = \"tcp://0.0.0.0:26656\"", "laddr = \"tcp://127.0.0.1:" + std::to_string(p2p_port_) + "\""},
        {"timeout_propose = \"3s\"", "timeout_propose = \"1s\""},
        {"timeout_commit = \"1s\"", "timeout_commit = \"100ms\""}};
    edits.insert(edits.end(), more.begin(), more.end());
    for (const auto& edit : edits) {
      auto r = ReplaceOnce(config, edit.first, edit.second);
      if (!r) return r;
    }
    WriteFile(comet_home_ + "/config/config.toml", config);
    return ::testing::AssertionSuccess();
  }

  std::uint16_t p2p_port() const { return p2p_port_; }

  // Starts `polnode abci` on `app_home` and waits for its startup line; returns the height and app
  // hash (hex) it reports from its own store.
  ::testing::AssertionResult StartApp(const std::string& app_home, std::string& startup) {
    const std::string out = app_home + ".out";
    std::filesystem::create_directories(app_home);
    auto started = app_.Start({polnode::testing::PolnodeBinary(), "abci", "--home", app_home, "--json", "--listen",
                               "tcp://127.0.0.1:" + std::to_string(app_port_), "--http", "127.0.0.1:0", "--comet-rpc",
                               "http://127.0.0.1:" + std::to_string(rpc_.port)},
                              out, app_home + ".log");
    if (!started) return started;
    if (!Eventually([&] { return ReadFile(out).find('\n') != std::string::npos; }, kWait)) {
      return ::testing::AssertionFailure() << "polnode abci did not start: " << ReadFile(app_home + ".log");
    }
    startup = ReadFile(out);
    const std::size_t at = startup.find("\"http_port\":");
    if (at == std::string::npos) return ::testing::AssertionFailure() << "no http_port in " << startup;
    http_port_ = static_cast<std::uint16_t>(std::stoul(startup.substr(at + 12)));
    return ::testing::AssertionSuccess();
  }

  // The roles' client of polnode's HTTP API on this validator (`polnode abci --http`).
  LedgerClient Api() const { return *LedgerClient::FromUrl("http://127.0.0.1:" + std::to_string(http_port_)); }

  ::testing::AssertionResult StartComet() {
    auto started = comet_.Start({CometbftBinary(), "start", "--home", comet_home_}, comet_home_ + ".out", comet_home_ + ".log");
    if (!started) return started;
    // Its RPC starts after the ABCI handshake (InitChain, replay) is done.
    if (!Eventually([&] { return !Get("/status").empty(); }, kWait)) {
      return ::testing::AssertionFailure() << "CometBFT's RPC did not start; its log ends:\n" << Tail(ReadFile(comet_home_ + ".out"));
    }
    return ::testing::AssertionSuccess();
  }

  // Waits until CometBFT and the application have both committed block `height`. CometBFT stores
  // a block (and reports its height) before the application has executed and committed it, so a
  // query of the application right after CometBFT's height moved can still miss the block; on a
  // busy machine it did.
  ::testing::AssertionResult WaitForHeight(std::int64_t height) {
    if (Eventually([&] { return Height() >= height && AppHeight() >= height; }, kWait)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "no block " << height << "; CometBFT's log ends:\n" << CometLog();
  }

  // The last block the application committed, as its Info answer says (abci_info).
  std::int64_t AppHeight() const {
    const std::string h = JsonString(Get("/abci_info"), "last_block_height");
    return h.empty() ? 0 : std::stoll(h);
  }

  void KillBoth() {
    comet_.Kill9();
    app_.Kill9();
  }

  // GET on CometBFT's RPC; "" when it does not answer 200.
  std::string Get(const std::string& target) const {
    Result<HttpResponse> r = HttpCall(rpc_, "GET", target);
    return r.ok() && r->status == 200 ? r->body : "";
  }

  std::int64_t Height() const {
    const std::string h = JsonString(Get("/status"), "latest_block_height");
    return h.empty() ? 0 : std::stoll(h);
  }

  // broadcast_tx_sync; the tx hash (hex) CometBFT assigns, or "" when CheckTx refused it.
  std::string Broadcast(const std::string& tx) const {
    const std::string body = Get("/broadcast_tx_sync?tx=0x" + consensus::ToHex(std::span<const std::uint8_t>(
                                                                   reinterpret_cast<const std::uint8_t*>(tx.data()), tx.size())));
    if (body.find("\"code\":0,") == std::string::npos) {
      ADD_FAILURE() << "broadcast_tx_sync refused the tx: " << body;
      return "";
    }
    return JsonString(body, "hash");
  }

  // abci_query's value (protobuf bytes) for `path`; "" with a test failure when the code is not 0.
  std::string Query(const std::string& path) const {
    const std::string body = Get("/abci_query?path=%22" + path + "%22");
    if (body.find("\"code\":0,") == std::string::npos) {
      ADD_FAILURE() << "abci_query " << path << " failed: " << body;
      return "";
    }
    return Base64Decode(JsonString(body, "value"));
  }

  // The app hash (upper-case hex) CometBFT's block `height` header carries: the app's state root
  // after block height-1.
  std::string HeaderAppHash(std::int64_t height) const {
    return JsonString(Get("/block?height=" + std::to_string(height)), "app_hash");
  }

  // The randomness polnode stored in block `height`'s header (abci_query /v1/blocks/{height}).
  consensus::Hash256 Randomness(std::int64_t height) const {
    Result<consensus::Block> block = consensus::DecodeBlock(Query("/v1/blocks/" + std::to_string(height)));
    EXPECT_TRUE(block.ok()) << "block " << height;
    return block.ok() ? block->header.randomness : consensus::Hash256{};
  }

  // The first tx of CometBFT's block `height` ("" when it has none).
  std::string FirstTx(std::int64_t height) const {
    const std::string body = Get("/block?height=" + std::to_string(height));
    const std::string needle = "\"txs\":[\"";
    const std::size_t at = body.find(needle);
    if (at == std::string::npos) return "";
    const std::size_t start = at + needle.size();
    return Base64Decode(body.substr(start, body.find('"', start) - start));
  }

  static std::string Tail(const std::string& text) { return text.size() > 3000 ? text.substr(text.size() - 3000) : text; }

  const std::string& app_home() const { return app_home_; }
  std::string CometLog() const { return Tail(ReadFile(comet_home_ + ".out")); }

  // Waits until `hash` (hex, from Broadcast) is in a block that executed it without error; returns
  // that block's height (0 with a test failure otherwise).
  std::int64_t WaitForTx(const std::string& hash) {
    std::string found;
    if (!Eventually([&] {
          found = Get("/tx?hash=0x" + hash);
          return !found.empty();
        }, kWait)) {
      ADD_FAILURE() << "tx " << hash << " never reached a block; CometBFT's log:\n" << CometLog();
      return 0;
    }
    EXPECT_NE(found.find("\"code\":0,"), std::string::npos) << found;
    const std::string height = JsonString(found, "height");
    return height.empty() ? 0 : std::stoll(height);
  }

 private:
  std::string comet_home_;
  std::string app_home_;
  HttpEndpoint rpc_;
  std::uint16_t p2p_port_;
  std::uint16_t app_port_;
  std::uint16_t http_port_ = 0;
  DaemonProcess app_;
  DaemonProcess comet_;
};

// "height" and "app_hash" of `polnode abci --json`'s startup line.
std::pair<std::int64_t, std::string> StartupState(const std::string& line) {
  const std::size_t at = line.find("\"height\":");
  return {at == std::string::npos ? -1 : std::stoll(line.substr(at + 9)), Upper(JsonString(line, "app_hash"))};
}

TEST(AbciE2eTest, OneValidatorCometbftRunsPolnodeAndSurvivesKillNine) {
  ASSERT_TRUE(HaveCometbft());
  polnode::testing::TempDir dir("abci-e2e");
  ValidatorNode node(dir.File("cometbft"), dir.File("app"));
  polnode::testing::ProcessResult init = polnode::testing::RunProcess({CometbftBinary(), "init", "--home", dir.File("cometbft")});
  ASSERT_EQ(init.exit_code, 0) << init.out << init.err;
  ASSERT_TRUE(node.Configure());
  std::string startup;
  ASSERT_TRUE(node.StartApp(node.app_home(), startup));
  EXPECT_EQ(StartupState(startup).first, 0);
  VrfKeys keys;
  ASSERT_TRUE(AddVrfKey(keys, dir.File("cometbft"), startup));
  ASSERT_TRUE(SetAppState(dir.File("cometbft"), keys));
  ASSERT_TRUE(node.StartComet());
  ASSERT_TRUE(node.WaitForHeight(1));

  proto::Params params;
  ASSERT_TRUE(params.ParseFromString(node.Query("/v1/params")));
  const std::uint64_t fee = params.tx_fee();

  // A transfer and a stake, signed by the genesis account, in through CometBFT's RPC.
  const std::string transfer = polnode::testing::SignedTx(KeyFromByte(1), kChain, 0, contracts::payload::kTransfer,
                                                          polnode::testing::TransferTo(KeyFromByte(2), 12345));
  proto::StakeTx stake;
  stake.set_role(proto::ROLE_VERIFIER);
  stake.set_amount(5000);
  const std::string staking = polnode::testing::SignedTx(KeyFromByte(1), kChain, 1, contracts::payload::kStake, stake);
  const std::string transfer_hash = node.Broadcast(transfer);
  const std::string stake_hash = node.Broadcast(staking);
  ASSERT_FALSE(transfer_hash.empty());
  ASSERT_FALSE(stake_hash.empty());
  // Both end up in blocks, executed without error.
  ASSERT_GT(node.WaitForTx(transfer_hash), 0);
  ASSERT_GT(node.WaitForTx(stake_hash), 0);
  const std::string recipient = "/v1/accounts/" + consensus::ToHex(KeyFromByte(2).PublicKey().bytes());
  const std::string sender = "/v1/accounts/" + consensus::ToHex(KeyFromByte(1).PublicKey().bytes());
  proto::Account received;
  ASSERT_TRUE(received.ParseFromString(node.Query(recipient)));
  EXPECT_EQ(received.balance(), 12345u);
  proto::Account paid;
  ASSERT_TRUE(paid.ParseFromString(node.Query(sender)));
  EXPECT_EQ(paid.balance(), kBalance - 12345 - 5000 - 2 * fee);
  EXPECT_EQ(paid.nonce(), 2u);

  // The roles' path: polnode's HTTP API on the validator, through the roles' own client. The nonce
  // comes from the API, the post is forwarded to CometBFT's broadcast_tx_sync, and the tx is
  // followed to its block; a replay of it is refused as a duplicate.
  const LedgerClient api = node.Api();
  Result<LedgerInfo> info = api.Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->chain_id, kChain);
  Result<LedgerClient::Sent> sent =
      api.Send(KeyFromByte(1), contracts::payload::kTransfer, polnode::testing::TransferTo(KeyFromByte(2), 55).SerializeAsString());
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(sent->nonce, 2u);
  Result<std::uint64_t> committed_at = api.WaitCommitted(sent->id_hex, kWait, SystemClock());
  ASSERT_TRUE(committed_at.ok()) << committed_at.status().ToString() << "\n" << node.CometLog();
  const consensus::SecretKey recipient_secret = KeyFromByte(2);
  const auto& recipient_key = recipient_secret.PublicKey().bytes();
  Result<proto::Account> via_api =
      api.Account(std::string_view(reinterpret_cast<const char*>(recipient_key.data()), recipient_key.size()));
  ASSERT_TRUE(via_api.ok()) << via_api.status().ToString();
  EXPECT_EQ(via_api->balance(), 12345u + 55u);
  const Result<std::string> again = api.PostTx(sent->envelope);
  EXPECT_FALSE(again.ok());
  Result<proto::Params> api_params = api.Params();
  ASSERT_TRUE(api_params.ok()) << api_params.status().ToString();
  EXPECT_EQ(api_params->tx_fee(), fee);
  paid.Clear();
  ASSERT_TRUE(paid.ParseFromString(node.Query(sender)));
  EXPECT_EQ(paid.nonce(), 3u);

  // Kill both mid-run. polnode's own store then says where it stands, and CometBFT's next header
  // after that height must carry exactly that state root as its app hash.
  node.KillBoth();
  ASSERT_TRUE(node.StartApp(node.app_home(), startup));
  const auto [height, app_hash] = StartupState(startup);
  ASSERT_GE(height, 2);
  ASSERT_EQ(app_hash.size(), 64u);
  ASSERT_TRUE(node.StartComet());
  ASSERT_TRUE(node.WaitForHeight(height + 2));
  EXPECT_EQ(node.HeaderAppHash(height + 1), app_hash);
  paid.Clear();
  ASSERT_TRUE(paid.ParseFromString(node.Query(sender)));
  EXPECT_EQ(paid.nonce(), 3u);

  // A polnode with an empty store under the same CometBFT node: the handshake runs InitChain and
  // replays every stored block; CometBFT refuses to go on if any replayed app hash differs.
  node.KillBoth();
  const std::string fresh = dir.File("app-fresh");
  // The validator's VRF key is its own, like its CometBFT key: the new store gets the same one.
  std::filesystem::create_directories(fresh);
  std::filesystem::copy_file(node.app_home() + "/vrf.key", fresh + "/vrf.key");
  ASSERT_TRUE(node.StartApp(fresh, startup));
  EXPECT_EQ(StartupState(startup).first, 0);
  ASSERT_TRUE(node.StartComet());
  const std::int64_t replayed_to = node.Height();
  ASSERT_TRUE(node.WaitForHeight(replayed_to + 2));
  EXPECT_EQ(node.HeaderAppHash(height + 1), app_hash);
  received.Clear();
  ASSERT_TRUE(received.ParseFromString(node.Query(recipient)));
  EXPECT_EQ(received.balance(), 12345u + 55u);
  node.KillBoth();
}

// Four validators from `cometbft testnet`, each with its own polnode application, on loopback
// ports: a transfer goes in at one node and every node executes it to the same app hash; one
// validator (CometBFT node and application) is killed with SIGKILL, the other three go on with a
// second transfer, and the killed one restarts, catches up and agrees again. Before the kill,
// every block's randomness is checked: the same at every validator, and the derivation from the
// beacon tx (the validators' VRF proofs from their vote extensions) that CometBFT's block carries.
TEST(AbciE2eTest, FourValidatorsAgreeAndAKilledOneCatchesUp) {
  ASSERT_TRUE(HaveCometbft());
  polnode::testing::TempDir dir("abci-4v");
  polnode::testing::ProcessResult made = polnode::testing::RunProcess(
      {CometbftBinary(), "testnet", "--v", "4", "--n", "0", "--o", dir.File("net"), "--starting-ip-address", "127.0.0.2",
       "--populate-persistent-peers"});
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  constexpr int kNodes = 4;
  std::vector<std::unique_ptr<ValidatorNode>> nodes;
  for (int i = 0; i < kNodes; ++i) {
    const std::string home = dir.File("net/node" + std::to_string(i));
    nodes.push_back(std::make_unique<ValidatorNode>(home, dir.File("app" + std::to_string(i))));
  }
  // testnet names peer i at 127.0.0.(2+i):26656; each node listens on a port of its own instead.
  std::vector<std::pair<std::string, std::string>> peers;
  for (int i = 0; i < kNodes; ++i) {
    peers.push_back({"@127.0.0." + std::to_string(2 + i) + ":26656",
                     "@127.0.0.1:" + std::to_string(nodes[static_cast<std::size_t>(i)]->p2p_port())});
  }
  for (auto& node : nodes) ASSERT_TRUE(node->Configure());
  for (int i = 0; i < kNodes; ++i) {
    const std::string path = dir.File("net/node" + std::to_string(i) + "/config/config.toml");
    std::string config = ReadFile(path);
    for (const auto& peer : peers) ASSERT_TRUE(ReplaceOnce(config, peer.first, peer.second));
    WriteFile(path, config);
  }
  std::string startup;
  VrfKeys keys;
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(nodes[static_cast<std::size_t>(i)]->StartApp(nodes[static_cast<std::size_t>(i)]->app_home(), startup));
    ASSERT_TRUE(AddVrfKey(keys, dir.File("net/node" + std::to_string(i)), startup));
  }
  for (int i = 0; i < kNodes; ++i) ASSERT_TRUE(SetAppState(dir.File("net/node" + std::to_string(i)), keys));
  for (auto& node : nodes) ASSERT_TRUE(node->StartComet());
  for (auto& node : nodes) ASSERT_TRUE(node->WaitForHeight(1));

  const std::string recipient = "/v1/accounts/" + consensus::ToHex(KeyFromByte(2).PublicKey().bytes());
  const auto transfer = [](std::uint64_t nonce, std::uint64_t amount) {
    return polnode::testing::SignedTx(KeyFromByte(1), kChain, nonce, contracts::payload::kTransfer,
                                      polnode::testing::TransferTo(KeyFromByte(2), amount));
  };
  // Every node's block `height + 1` carries the same app hash (the state root after `height`),
  // and every node's application answers `balance` for the recipient.
  const auto agree = [&](std::int64_t height, std::uint64_t balance, std::size_t count) {
    std::string first;
    for (std::size_t i = 0; i < count; ++i) {
      ValidatorNode& node = *nodes[i];
      ASSERT_TRUE(node.WaitForHeight(height + 1));
      const std::string app_hash = node.HeaderAppHash(height + 1);
      ASSERT_EQ(app_hash.size(), 64u);
      if (i == 0) first = app_hash;
      EXPECT_EQ(app_hash, first) << "node " << i << " at height " << height;
      proto::Account account;
      ASSERT_TRUE(account.ParseFromString(node.Query(recipient)));
      EXPECT_EQ(account.balance(), balance) << "node " << i;
    }
  };
  const std::int64_t first_height = nodes[0]->WaitForTx(nodes[0]->Broadcast(transfer(0, 100)));
  ASSERT_GT(first_height, 0);
  agree(first_height, 100, kNodes);

  // The beacon: for blocks 2..first_height+1 every validator stored the same randomness, and it is
  // the derivation (abci_beacon.h) from the beacon tx CometBFT's block carries first, with the
  // validators' registered keys (power 1 each) on alpha(h-1) = (h-1, R(h-2)).
  VotingPowers powers;
  for (const auto& entry : keys) powers[entry.first] = 1;
  for (std::int64_t h = 2; h <= first_height + 1; ++h) {
    std::vector<consensus::Hash256> at_node;
    for (auto& node : nodes) at_node.push_back(node->Randomness(h));
    for (std::size_t i = 1; i < at_node.size(); ++i) EXPECT_EQ(at_node[i], at_node[0]) << "node " << i << " block " << h;
    const std::string beacon_tx = nodes[0]->FirstTx(h);
    ASSERT_TRUE(IsBeaconTx(beacon_tx)) << "block " << h;
    const Result<consensus::Hash256> derived = VerifyBeaconTx(
        beacon_tx, keys, powers, BeaconAlpha(kChain, static_cast<std::uint64_t>(h - 1), nodes[0]->Randomness(h - 2)));
    ASSERT_TRUE(derived.ok()) << derived.status().ToString();
    EXPECT_EQ(*derived, at_node[0]) << "block " << h;
    EXPECT_NE(at_node[0], nodes[0]->Randomness(h - 1));
  }
  EXPECT_EQ(nodes[0]->Randomness(1), GenesisBeacon(kChain));

  nodes[3]->KillBoth();
  const std::int64_t second_height = nodes[1]->WaitForTx(nodes[1]->Broadcast(transfer(1, 50)));
  ASSERT_GT(second_height, first_height);
  agree(second_height, 150, 3);

  ASSERT_TRUE(nodes[3]->StartApp(nodes[3]->app_home(), startup));
  ASSERT_TRUE(nodes[3]->StartComet());
  agree(second_height, 150, kNodes);
  for (auto& node : nodes) node->KillBoth();
}

}  // namespace
}  // namespace polnode::node
