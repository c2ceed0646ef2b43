// A 4-validator CometBFT network against the embedded ledger, in one run, both as real processes
// on loopback HTTP (issue 17 item 7):
//   - throughput and commit latency: pre-signed transfers from `--signers` funded accounts are
//     posted to polnode's HTTP API (`POST /v1/tx`) by 4 threads, each signer keeping at most 48
//     txs in flight (the mempool's nonce window is 64); the embedded ledger gets every post, the
//     network's posts are spread over the 4 validators' APIs (`polnode abci --http`, forwarded to
//     CometBFT's broadcast_tx_sync). A watcher polls the (first) node's blocks every 2 ms and
//     notes when each tx's block appears. tx/s = txs / (last commit - first post); latency = block
//     seen - post start, p50/p99. Both sides make a block every `--block-ms` (the ledger's block
//     interval; CometBFT's timeout_commit);
//   - catch-up: validator 3 (CometBFT and application) is killed with SIGKILL, the other three make
//     `--catch-up-blocks` blocks (timeout_propose, timeout_prevote and timeout_precommit 200 ms,
//     so the rounds it would propose pass quickly), and it is restarted; the time from its restart until it has
//     every one of them (its API reports the height the others had at the restart).
// Signing is never timed.
//
// Usage: abci_bench [--txs N] [--signers S] [--block-ms MS] [--catch-up-blocks B] [--cometbft PATH]
//                   [--polnode PATH] [--dir D]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/payloads.h"
#include "polnode/devnet/child_process.h"
#include "polnode/devnet/validator_network.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/node_home.h"

namespace {

namespace node = polnode::node;
namespace consensus = polnode::consensus;
using Steady = std::chrono::steady_clock;

constexpr char kChain[] = "abci-bench";
constexpr std::uint64_t kInFlightPerSigner = 48;
constexpr int kPosters = 4;

struct Args {
  int txs = 2000;
  int signers = 16;
  int block_ms = 100;
  int catch_up_blocks = 1000;
  std::string cometbft = "/opt/polnode-cometbft/v0.38.26/bin/cometbft";
  std::string polnode;
  std::string dir = "/tmp/polnode-abci-bench";
};

// The children running now, stopped by Die: std::exit skips main's destructors, and a failure in a
// poster or the watcher thread cannot unwind to them, so without this they would outlive the bench.
std::atomic<node::ChildProcess*> g_ledger{nullptr};
std::atomic<node::ValidatorNetwork*> g_network{nullptr};
std::mutex g_die_mu;

[[noreturn]] void Die(const std::string& what) {
  // Only the first failing thread stops the children and exits; any other waits here until then
  // (the lock is never released), so no two threads stop the same child.
  g_die_mu.lock();
  std::fprintf(stderr, "abci_bench: %s\n", what.c_str());
  if (node::ChildProcess* ledger = g_ledger.load()) ledger->Stop();
  if (node::ValidatorNetwork* network = g_network.load()) network->StopAll();
  std::exit(1);
}

template <typename T>
T Must(polnode::Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what + ": " + r.status().ToString());
  return std::move(r).value();
}

void Must(const polnode::Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

// The key whose 32 bytes are all `byte`: the signers are the same on every run.
consensus::SecretKey Key(std::uint8_t byte) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(byte);
  return Must(consensus::SecretKey::FromBytes(bytes), "key");
}

std::string Raw(const consensus::SecretKey& key) {
  const auto& pub = key.PublicKey().bytes();
  return std::string(reinterpret_cast<const char*>(pub.data()), pub.size());
}

// A transfer of 1 from `signer` at `nonce`, signed and encoded: the body of POST /v1/tx.
std::string SignedTransfer(const consensus::SecretKey& signer, std::uint64_t nonce, const std::string& to) {
  polnode::proto::TransferTx payload;
  payload.set_to(to);
  payload.set_amount(1);
  consensus::TxEnvelope envelope;
  envelope.chain_id = kChain;
  envelope.nonce = nonce;
  envelope.payload_type = std::string(polnode::contracts::payload::kTransfer);
  envelope.payload = payload.SerializeAsString();
  return Must(consensus::EncodeEnvelope(Must(consensus::SignEnvelope(signer, std::move(envelope)), "sign")), "encode");
}

struct Tx {
  int signer = 0;
  std::uint64_t nonce = 0;
  std::string bytes;
  std::string id_hex;
  Steady::time_point posted{};
};

struct Result {
  double tx_per_s = 0, p50_ms = 0, p99_ms = 0;
  int committed = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::uint64_t Height(const std::string& url) {
  polnode::Result<node::LedgerClient> client = node::LedgerClient::FromUrl(url);
  if (!client.ok()) return 0;
  polnode::Result<node::LedgerInfo> info = client->Info();
  return info.ok() ? info->height : 0;
}

// Posts every tx (signer s's txs by posters s mod kPosters, to urls[poster mod urls.size()]) while a
// watcher notes the block each appears in on urls[0]; returns throughput and latencies.
Result Drive(std::vector<Tx>& txs, int signers, const std::vector<std::string>& urls) {
  std::mutex mu;
  std::map<std::string, Steady::time_point> committed_at;  // tx id hex -> when its block was seen
  std::vector<std::uint64_t> committed_per_signer(static_cast<std::size_t>(signers), 0);
  std::map<std::string, int> signer_of;
  for (const Tx& tx : txs) signer_of[tx.id_hex] = tx.signer;
  std::atomic<bool> done{false};
  const std::uint64_t start_height = Height(urls[0]);
  std::thread watcher([&] {
    const node::HttpEndpoint endpoint = Must(node::ParseHttpUrl(urls[0]), "url");
    std::uint64_t seen = start_height;
    while (!done.load()) {
      const std::uint64_t tip = Height(urls[0]);
      for (std::uint64_t h = seen + 1; h <= tip; ++h) {
        polnode::Result<node::HttpResponse> r = node::HttpCall(endpoint, "GET", "/v1/blocks/" + std::to_string(h));
        if (!r.ok() || r->status != 200) break;
        const Steady::time_point now = Steady::now();
        polnode::Result<rapidjson::Document> doc = node::ParseJson(r->body);
        if (!doc.ok() || !doc->IsObject() || !doc->HasMember("txs")) Die("block " + std::to_string(h) + " unreadable");
        std::lock_guard<std::mutex> lock(mu);
        for (const rapidjson::Value& t : (*doc)["txs"].GetArray()) {
          const std::string id = t["tx_id"].GetString();
          auto it = signer_of.find(id);
          if (it == signer_of.end()) continue;
          committed_at[id] = now;
          ++committed_per_signer[static_cast<std::size_t>(it->second)];
        }
        seen = h;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> posters;
  for (int p = 0; p < kPosters; ++p) {
    posters.emplace_back([&, p] {
      const node::HttpEndpoint endpoint = Must(node::ParseHttpUrl(urls[static_cast<std::size_t>(p) % urls.size()]), "url");
      for (Tx& tx : txs) {
        if (tx.signer % kPosters != p) continue;
        while (true) {
          {
            std::lock_guard<std::mutex> lock(mu);
            if (tx.nonce < committed_per_signer[static_cast<std::size_t>(tx.signer)] + kInFlightPerSigner) break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        tx.posted = Steady::now();
        polnode::Result<node::HttpResponse> r =
            node::HttpCall(endpoint, "POST", "/v1/tx", tx.bytes, "application/x-protobuf", std::chrono::seconds(30));
        if (!r.ok() || r->status != 200) Die("POST /v1/tx refused: " + (r.ok() ? r->body : r.status().ToString()));
      }
    });
  }
  for (std::thread& t : posters) t.join();
  const Steady::time_point deadline = Steady::now() + std::chrono::seconds(300);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (committed_at.size() == txs.size()) break;
    }
    if (Steady::now() > deadline) Die("not every tx was committed within 300 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  done = true;
  watcher.join();
  Result result;
  Steady::time_point first = txs.front().posted, last = first;
  std::vector<double> latencies;
  for (const Tx& tx : txs) {
    first = std::min(first, tx.posted);
    last = std::max(last, committed_at[tx.id_hex]);
    latencies.push_back(std::chrono::duration<double, std::milli>(committed_at[tx.id_hex] - tx.posted).count());
  }
  result.committed = static_cast<int>(txs.size());
  result.tx_per_s = static_cast<double>(txs.size()) / std::chrono::duration<double>(last - first).count();
  result.p50_ms = Percentile(latencies, 0.50);
  result.p99_ms = Percentile(latencies, 0.99);
  return result;
}

std::vector<Tx> SignAll(const Args& a) {
  std::vector<Tx> txs;
  const std::string to = Raw(Key(200));
  std::vector<consensus::SecretKey> keys;
  for (int s = 0; s < a.signers; ++s) keys.push_back(Key(static_cast<std::uint8_t>(10 + s)));
  const int per_signer = a.txs / a.signers;
  for (int n = 0; n < per_signer; ++n) {
    for (int s = 0; s < a.signers; ++s) {
      Tx tx;
      tx.signer = s;
      tx.nonce = static_cast<std::uint64_t>(n);
      tx.bytes = SignedTransfer(keys[static_cast<std::size_t>(s)], tx.nonce, to);
      tx.id_hex = consensus::ToHex(consensus::TxId(tx.bytes));
      txs.push_back(std::move(tx));
    }
  }
  return txs;
}

void Print(const char* name, const Result& r) {
  std::printf("%-28s %8d txs  %9.1f tx/s  commit latency p50 %8.1f ms  p99 %8.1f ms\n", name, r.committed, r.tx_per_s, r.p50_ms,
              r.p99_ms);
}

}  // namespace

int main(int argc, char** argv) {
  // Each result line as it is measured, also when stdout is a file and a later phase is killed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--txs") a.txs = std::atoi(value.c_str());
    else if (flag == "--signers") a.signers = std::atoi(value.c_str());
    else if (flag == "--block-ms") a.block_ms = std::atoi(value.c_str());
    else if (flag == "--catch-up-blocks") a.catch_up_blocks = std::atoi(value.c_str());
    else if (flag == "--cometbft") a.cometbft = value;
    else if (flag == "--polnode") a.polnode = value;
    else if (flag == "--dir") a.dir = value;
    else Die("unknown flag " + flag);
  }
  if (a.signers < 1 || a.signers > 100 || a.txs < a.signers) Die("need 1..100 signers and at least one tx each");
  if (a.polnode.empty()) {
    a.polnode = (std::filesystem::path(Must(node::SelfExecutable(), "self")).parent_path().parent_path() / "node/polnode").string();
  }
  std::filesystem::remove_all(a.dir);
  std::filesystem::create_directories(a.dir + "/logs");

  node::NodeHomeSpec spec;
  spec.chain_id = kChain;
  for (int s = 0; s < a.signers; ++s) {
    polnode::proto::Allocation& alloc = spec.accounts.emplace_back();
    alloc.set_pubkey(Raw(Key(static_cast<std::uint8_t>(10 + s))));
    alloc.set_amount(1'000'000'000);
  }
  spec.config.listen = "127.0.0.1:0";
  spec.config.block_interval_ms = a.block_ms;
  node::NewNodeHome home = Must(node::CreateNodeHome(a.dir + "/ledger", spec), "node home");
  std::printf("abci_bench: %d transfers from %d signers, a block every %d ms (ledger block interval; CometBFT timeout_commit)\n",
              a.txs / a.signers * a.signers, a.signers, a.block_ms);

  // The embedded ledger.
  {
    std::vector<Tx> txs = SignAll(a);
    node::ChildProcess ledger =
        Must(node::ChildProcess::Spawn({a.polnode, "ledger", "--home", a.dir + "/ledger", "--json"}, a.dir + "/logs/ledger.log"),
             "ledger");
    g_ledger = &ledger;
    const std::string line = Must(node::WaitForLogLine(ledger, 0, "{", std::chrono::seconds(60)), "ledger start");
    polnode::Result<rapidjson::Document> doc = node::ParseJson(line);
    if (!doc.ok() || !doc->HasMember("listen")) Die("ledger startup line: " + line);
    const std::string url = std::string("http://") + (*doc)["listen"].GetString();
    Print("embedded ledger", Drive(txs, a.signers, {url}));
    g_ledger = nullptr;
    ledger.Stop();
  }

  // Four validators.
  node::ValidatorNetworkOptions options;
  options.dir = a.dir + "/validators";
  options.log_dir = a.dir + "/logs";
  options.polnode = a.polnode;
  options.cometbft = a.cometbft;
  options.validators = 4;
  options.chain_id = kChain;
  options.genesis_json = node::FormatGenesisJson(home.home.genesis);
  options.node_home = a.dir + "/ledger";
  options.timeout_commit = std::to_string(a.block_ms) + "ms";
  // A round whose proposer is the killed validator waits this long: short, so the three make their
  // blocks at close to their usual rate.
  options.timeout_propose = "200ms";
  options.timeout_vote = "200ms";
  std::unique_ptr<node::ValidatorNetwork> net =
      Must(node::ValidatorNetwork::Create(options, polnode::SystemClock()), "validator network");
  g_network = net.get();
  Must(net->Start(), "validators start");
  {
    std::vector<Tx> txs = SignAll(a);
    std::vector<std::string> urls;
    for (int i = 0; i < net->size(); ++i) urls.push_back(net->api_url(i));
    Print("4 CometBFT validators", Drive(txs, a.signers, urls));
  }

  // Catch-up of a killed validator.
  const std::uint64_t killed_at = Must(net->Height(0), "height");
  net->Kill(3);
  const Steady::time_point down = Steady::now();
  // Twenty times the blocks' nominal time plus two minutes: a loaded machine slows them, a stalled
  // network must not hold the bench forever.
  const auto patience = std::chrono::milliseconds(20LL * a.catch_up_blocks * a.block_ms) + std::chrono::seconds(120);
  while (Height(net->api_url(0)) < killed_at + static_cast<std::uint64_t>(a.catch_up_blocks)) {
    if (Steady::now() > down + patience) Die("the three validators did not make " + std::to_string(a.catch_up_blocks) + " blocks in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double down_s = std::chrono::duration<double>(Steady::now() - down).count();
  Must(net->Restart(3), "restart validator 3");
  const Steady::time_point restarted = Steady::now();
  const std::uint64_t target = Height(net->api_url(0));
  while (Height(net->api_url(3)) < target) {
    if (Steady::now() > restarted + patience) Die("restarted validator 3 did not reach height " + std::to_string(target) + " in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double catch_up_s = std::chrono::duration<double>(Steady::now() - restarted).count();
  std::printf("catch-up: validator 3 killed -9 at height %llu; the others made %llu blocks in %.1f s; restarted, it had all "
              "of them after %.2f s (%.0f blocks/s)\n",
              static_cast<unsigned long long>(killed_at), static_cast<unsigned long long>(target - killed_at), down_s,
              catch_up_s, static_cast<double>(target - killed_at) / catch_up_s);
  g_network = nullptr;
  net->StopAll();
  return 0;
}
