// Ledger costs, measured in one run on a real RocksDB store with real BIP-340 keys (issue 5):
//   - admission: pre-signed transfers from many funded accounts (a genesis allocation) go through
//     Ledger::SubmitTx (decode, signature check, duplicate/nonce checks, CheckTx's nonce, fee and
//     balance check, insertion) on 1 and on 2 threads, each on a fresh ledger. The peer is raw
//     libsecp256k1 on the same signatures and thread count: parse the x-only key and verify the
//     BIP-340 signature of the (precomputed) digest. Admission does both too, except that it parses
//     a signer's key through a bounded cache (consensus::XOnlyKeyCache): here each account sends
//     --admit / --accounts txs (2 by default), so at most that share of the parses is saved.
//     Peer and admission alternate --rounds times (a ratio is taken within each round, so a
//     neighbour's burst of load affects both sides alike); printed are the best rates, the median
//     and range of the rounds' ratios, and the least CPU time per tx of each side (all threads
//     together; steadier than wall time when neighbours load the machine);
//   - block commit: ProduceBlock with 1,000 txs per block and sync_writes on (as `polnode ledger`
//     runs), with a backlog of pending txs beyond the block so the post-commit recheck has work;
//     p50/p99/max over the blocks. Submission of the block's txs is not timed.
// Signing is never timed: every tx is signed before the clock starts.
//
// Usage: ledger_bench [--accounts N] [--admit M] [--rounds R] [--blocks B] [--block-txs T] [--backlog K]
//                     [--dir D]
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "polnode/contracts.pb.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/ledger/ledger.h"

namespace {

// The first line of a small text file (a /proc setting), or "?" when it cannot be read.
std::string ReadFirstLine(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return "?";
  char line[64] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  if (!read) return "?";
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

namespace consensus = polnode::consensus;
namespace node = polnode::node;
using Clock = std::chrono::steady_clock;

constexpr char kChain[] = "ledger-bench";
constexpr std::int64_t kGenesisTime = 1700000000000;

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

consensus::SecretKey AccountKey(std::size_t i) {
  // Distinct valid scalars: index + 1 in the low bytes of a big-endian 32-byte number.
  std::array<std::uint8_t, 32> bytes{};
  for (int b = 0; b < 8; ++b) bytes[31 - b] = static_cast<std::uint8_t>(((i + 1) >> (8 * b)) & 0xff);
  bytes[0] = 0x5a;  // keep the scalar far from tiny values; still below the curve order
  return *consensus::SecretKey::FromBytes(bytes);
}

// A signed transfer that will pass admission and execute successfully.
struct SignedTx {
  std::string encoded;
  std::size_t signer = 0;
};

polnode::Result<std::string> SignTransfer(const consensus::SecretKey& from, std::uint64_t nonce,
                                          const consensus::SecretKey& to) {
  polnode::proto::TransferTx payload;
  payload.set_to(to.PublicKey().bytes().data(), 32);
  payload.set_amount(1);
  consensus::TxEnvelope e;
  e.chain_id = kChain;
  e.nonce = nonce;
  e.payload_type = std::string(polnode::contracts::payload::kTransfer);
  e.payload = payload.SerializeAsString();
  POLNODE_ASSIGN_OR_RETURN(consensus::TxEnvelope signed_env, consensus::SignEnvelope(from, e));
  return consensus::EncodeEnvelope(signed_env);
}

// Txs numbered from `first`: tx j comes from account j % N with nonce j / N, so the txs of one
// account appear in nonce order and each block of <= N consecutive txs has distinct signers.
std::vector<SignedTx> MakeTxs(const std::vector<consensus::SecretKey>& keys, std::size_t first, std::size_t count) {
  const std::size_t n = keys.size();
  std::vector<SignedTx> txs(count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t j = first + k;
    auto encoded = SignTransfer(keys[j % n], j / n, keys[(j * 7 + 1) % n]);
    if (!encoded.ok()) {
      std::fprintf(stderr, "ledger_bench: signing: %s\n", encoded.status().ToString().c_str());
      std::exit(1);
    }
    txs[k] = SignedTx{std::move(encoded).value(), j % n};
  }
  return txs;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The CPU seconds the threads of the last RunThreads used, all together: on a shared machine the
// wall-clock rates move with the neighbours' load, the CPU time per tx much less.
double last_cpu_seconds = 0;

// Runs body(t) on `threads` threads at once and returns the wall time from a common start.
double RunThreads(int threads, const std::function<void(int)>& body) {
  std::vector<std::thread> pool;
  std::vector<double> cpu(static_cast<std::size_t>(threads), 0);
  const Clock::time_point start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const double before = ThreadCpuSeconds();
      body(t);
      cpu[static_cast<std::size_t>(t)] = ThreadCpuSeconds() - before;
    });
  }
  for (std::thread& th : pool) th.join();
  const double wall = Seconds(start);
  last_cpu_seconds = 0;
  for (double c : cpu) last_cpu_seconds += c;
  return wall;
}

std::unique_ptr<node::Ledger> OpenLedger(const std::string& dir, const node::GenesisFile& genesis, bool sync,
                                         std::size_t mempool_max) {
  node::LedgerOptions o;
  o.data_dir = dir;
  o.sync_writes = sync;
  o.mempool_max_txs = mempool_max;
  auto ledger = node::Ledger::Open(o, genesis, AccountKey(1u << 30));
  if (!ledger.ok()) {
    std::fprintf(stderr, "ledger_bench: open: %s\n", ledger.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(ledger).value();
}

// Admission rate on a fresh ledger: thread t submits the txs of the signers with index % threads == t,
// each signer's txs in nonce order.
double AdmissionRate(const std::string& dir, const node::GenesisFile& genesis, const std::vector<SignedTx>& txs,
                     int threads) {
  auto ledger = OpenLedger(dir, genesis, /*sync=*/true, txs.size() + 1);
  std::vector<std::size_t> rejected(static_cast<std::size_t>(threads), 0);
  const double seconds = RunThreads(threads, [&](int t) {
    for (const SignedTx& tx : txs) {
      if (tx.signer % static_cast<std::size_t>(threads) != static_cast<std::size_t>(t)) continue;
      if (!ledger->SubmitTx(tx.encoded).ok()) ++rejected[static_cast<std::size_t>(t)];
    }
  });
  std::size_t bad = 0;
  for (std::size_t r : rejected) bad += r;
  if (bad != 0 || ledger->GetStatus().mempool_size != txs.size()) {
    std::fprintf(stderr, "ledger_bench: %zu of %zu txs were rejected at admission\n", bad, txs.size());
    std::exit(1);
  }
  return static_cast<double>(txs.size()) / seconds;
}

// The peer: x-only key parse + BIP-340 verify of each tx's digest, straight through libsecp256k1.
struct RawSig {
  std::array<std::uint8_t, 32> pubkey{};
  consensus::Hash256 digest{};
  consensus::SchnorrSignature sig{};
};

double RawVerifyRate(const std::vector<RawSig>& sigs, int threads) {
  secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
  std::vector<std::size_t> failed(static_cast<std::size_t>(threads), 0);
  const double seconds = RunThreads(threads, [&](int t) {
    for (std::size_t i = static_cast<std::size_t>(t); i < sigs.size(); i += static_cast<std::size_t>(threads)) {
      secp256k1_xonly_pubkey key;
      const RawSig& s = sigs[i];
      if (secp256k1_xonly_pubkey_parse(ctx, &key, s.pubkey.data()) != 1 ||
          secp256k1_schnorrsig_verify(ctx, s.sig.data(), s.digest.data(), s.digest.size(), &key) != 1) {
        ++failed[static_cast<std::size_t>(t)];
      }
    }
  });
  secp256k1_context_destroy(ctx);
  for (std::size_t f : failed) {
    if (f != 0) {
      std::fprintf(stderr, "ledger_bench: raw verification failed\n");
      std::exit(1);
    }
  }
  return static_cast<double>(sigs.size()) / seconds;
}

double Percentile(std::vector<double> sorted, double p) {
  // Nearest rank: the smallest value with at least p of the samples at or below it.
  const std::size_t rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t accounts = 10000, admit = 20000, rounds = 3, blocks = 100, block_txs = 1000, backlog = 1000;
  std::string base = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--accounts") accounts = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--admit") admit = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--rounds") rounds = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--blocks") blocks = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--block-txs") block_txs = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--backlog") backlog = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--dir") base = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: ledger_bench [--accounts N] [--admit M] [--rounds R] [--blocks B] [--block-txs T] "
                   "[--backlog K] [--dir D]\n");
      return 2;
    }
  }
  if (accounts < block_txs || accounts < 2 || blocks == 0 || admit == 0 || rounds == 0) {
    std::fprintf(stderr, "ledger_bench: need --accounts >= --block-txs >= 1, --blocks, --admit and --rounds > 0\n");
    return 2;
  }
  const std::string dir = base + "/polnode-ledger-bench-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  std::vector<consensus::SecretKey> keys;
  keys.reserve(accounts);
  node::GenesisFile genesis;
  genesis.spec.set_chain_id(kChain);
  *genesis.spec.mutable_params() = polnode::contracts::DefaultParams();
  genesis.genesis_time_unix_ms = kGenesisTime;
  for (std::size_t i = 0; i < accounts; ++i) {
    keys.push_back(AccountKey(i));
    polnode::proto::Allocation* a = genesis.spec.add_allocations();
    a->set_pubkey(keys.back().PublicKey().bytes().data(), 32);
    a->set_amount(1'000'000'000);
  }
  const int policy = sched_getscheduler(0);
  std::printf("ledger_bench: %zu funded accounts, RocksDB in %s, %u hardware threads, scheduled %s\n", accounts,
              dir.c_str(), std::thread::hardware_concurrency(),
              policy == SCHED_FIFO ? "SCHED_FIFO" : policy == SCHED_RR ? "SCHED_RR" : "SCHED_OTHER");
  if (policy == SCHED_FIFO || policy == SCHED_RR) {
    // Linux stops real-time threads that used more than sched_rt_runtime_us of a
    // sched_rt_period_us period for the rest of it (50 ms of every second by default): the block
    // loop runs for seconds without sleeping, so its latencies would include those stops.
    std::printf("ledger_bench: note: real-time scheduling; the kernel's real-time throttling (%s of every %s us) "
                "stalls a busy thread for the rest of each period, which shows in the commit p99 and max: "
                "measure latencies under SCHED_OTHER on an idle machine\n",
                ReadFirstLine("/proc/sys/kernel/sched_rt_runtime_us").c_str(),
                ReadFirstLine("/proc/sys/kernel/sched_rt_period_us").c_str());
  }

  // ---- admission ----
  const std::vector<SignedTx> admit_txs = MakeTxs(keys, 0, admit);
  std::vector<RawSig> raw(admit_txs.size());
  for (std::size_t i = 0; i < admit_txs.size(); ++i) {
    consensus::TxEnvelope env = *consensus::DecodeEnvelope(admit_txs[i].encoded);
    raw[i] = RawSig{env.signer_pubkey, consensus::EnvelopeSigningDigest(env), env.signature};
  }
  for (int threads : {1, 2}) {
    double peer = 0, rate = 0, peer_cpu = 1e300, cpu = 1e300;
    std::vector<double> ratios;
    for (std::size_t r = 0; r < rounds; ++r) {
      const double round_peer = RawVerifyRate(raw, threads);
      peer_cpu = std::min(peer_cpu, last_cpu_seconds);
      const double round_rate = AdmissionRate(dir + "/admit-" + std::to_string(threads) + "-" + std::to_string(r),
                                              genesis, admit_txs, threads);
      cpu = std::min(cpu, last_cpu_seconds);
      peer = std::max(peer, round_peer);
      rate = std::max(rate, round_rate);
      ratios.push_back(round_rate / round_peer);
    }
    std::sort(ratios.begin(), ratios.end());
    const double txs = static_cast<double>(admit_txs.size());
    std::printf("admission %d thread%s: %.0f tx/s, raw schnorr verify %.0f/s (best of %zu rounds); admission/raw "
                "%.2f (median round; rounds %.2f-%.2f); cpu %.1f us/tx vs raw %.1f (%.2f) over %zu txs\n",
                threads, threads == 1 ? "" : "s", rate, peer, rounds, ratios[ratios.size() / 2], ratios.front(),
                ratios.back(), cpu * 1e6 / txs, peer_cpu * 1e6 / txs, peer_cpu / cpu, admit_txs.size());
  }

  // ---- block commit ----
  const std::vector<SignedTx> block_txs_all = MakeTxs(keys, 0, blocks * block_txs + backlog);
  auto ledger = OpenLedger(dir + "/blocks", genesis, /*sync=*/true, block_txs + backlog + 1);
  std::size_t next = 0;
  std::vector<double> latency_ms;
  std::size_t failed = 0, dropped = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    while (next < block_txs_all.size() && ledger->GetStatus().mempool_size < block_txs + backlog) {
      auto id = ledger->SubmitTx(block_txs_all[next++].encoded);
      if (!id.ok()) {
        std::fprintf(stderr, "ledger_bench: submit: %s\n", id.status().ToString().c_str());
        return 1;
      }
    }
    const Clock::time_point start = Clock::now();
    auto produced = ledger->ProduceBlock(kGenesisTime + 1000 * static_cast<std::int64_t>(b + 1));
    latency_ms.push_back(Seconds(start) * 1e3);
    if (!produced.ok()) {
      std::fprintf(stderr, "ledger_bench: produce: %s\n", produced.status().ToString().c_str());
      return 1;
    }
    if (produced->tx_count != block_txs) {
      std::fprintf(stderr, "ledger_bench: block %zu holds %zu txs, want %zu\n", b + 1, produced->tx_count, block_txs);
      return 1;
    }
    failed += produced->failed_txs;
    dropped += produced->dropped_from_mempool;
  }
  std::sort(latency_ms.begin(), latency_ms.end());
  std::printf("block commit %zu tx/block, sync on, %zu pending beyond the block: p50 %.2f ms, p99 %.2f ms, "
              "max %.2f ms over %zu blocks (%zu failed txs, %zu dropped by recheck)\n",
              block_txs, backlog, Percentile(latency_ms, 0.50), Percentile(latency_ms, 0.99), latency_ms.back(),
              latency_ms.size(), failed, dropped);
  ledger.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
