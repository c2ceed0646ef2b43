// Ledger (in-process, real RocksDB): genesis, admission reasons, block production, restart, and
// chain verification catching tampered blocks, signatures, state roots and state.
#include "polnode/ledger/ledger.h"

#include <rocksdb/db.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/queries.h"
#include "polnode/ledger/chain_verifier.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using consensus::SecretKey;
using polnode::testing::KeyFromByte;

std::string Hex(const SecretKey& k) { return consensus::ToHex(k.PublicKey().bytes()); }

constexpr char kChain[] = "ledger-test";

GenesisFile TestGenesis(std::uint64_t alice_balance = 1000000) {
  GenesisFile g = polnode::testing::TestGenesis(kChain, KeyFromByte(1), alice_balance);
  g.genesis_time_unix_ms = 1700000000000;
  return g;
}

std::string Transfer(const SecretKey& from, std::uint64_t nonce, const SecretKey& to, std::uint64_t amount,
                     std::string chain = kChain) {
  return polnode::testing::SignedTx(from, chain, nonce, contracts::payload::kTransfer,
                                    polnode::testing::TransferTo(to, amount));
}

std::uint64_t Balance(const Ledger& ledger, const SecretKey& k) {
  const auto& pub = k.PublicKey().bytes();
  Result<proto::Account> account = ledger.ReadCommitted([&](const contracts::StateStore& state) {
    return contracts::QueryAccount(state, std::string(reinterpret_cast<const char*>(pub.data()), pub.size()));
  });
  EXPECT_TRUE(account.ok()) << account.status().ToString();
  return account.ok() ? account->balance() : 0;
}

class LedgerTest : public ::testing::Test {
 protected:
  // A ledger in `name` under the test's directory; `sync_writes` as `polnode ledger` runs (fsync
  // per block) or off (faster, for tests that do not race commits).
  std::unique_ptr<Ledger> Open(const GenesisFile& genesis = TestGenesis(), bool sync_writes = false,
                               const std::string& name = "data") {
    LedgerOptions o;
    o.data_dir = dir_.File(name);
    o.sync_writes = sync_writes;
    o.max_tx_bytes = 2048;
    auto ledger = Ledger::Open(o, genesis, KeyFromByte(9));
    EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
    return ledger.ok() ? std::move(ledger).value() : nullptr;
  }

  polnode::testing::TempDir dir_;
  const SecretKey alice_ = KeyFromByte(1);
  const SecretKey bob_ = KeyFromByte(2);
};

TEST_F(LedgerTest, GenesisIsBlockZeroWithTheGenesisState) {
  auto ledger = Open();
  ASSERT_NE(ledger, nullptr);
  LedgerStatus s = ledger->GetStatus();
  EXPECT_EQ(s.height, 0u);
  EXPECT_EQ(s.chain_id, kChain);
  EXPECT_EQ(Balance(*ledger, alice_), 1000000u);
  auto block0 = consensus::DecodeBlock(*ledger->GetEncodedBlock(0));
  ASSERT_TRUE(block0.ok());
  EXPECT_TRUE(consensus::VerifyBlockSignature(block0->header).ok());
  EXPECT_EQ(block0->header.producer, KeyFromByte(9).PublicKey().bytes());
}

TEST_F(LedgerTest, TransfersCommitInABlockAndMoveBalances) {
  auto ledger = Open();
  ASSERT_TRUE(ledger->SubmitTx(Transfer(alice_, 0, bob_, 300)).ok());
  auto second = ledger->SubmitTx(Transfer(alice_, 1, bob_, 200));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(ledger->IsPending(*second));
  auto block = ledger->ProduceBlock(1700000001000);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  EXPECT_EQ(block->height, 1u);
  EXPECT_EQ(block->tx_count, 2u);
  EXPECT_EQ(block->failed_txs, 0u);
  EXPECT_EQ(ledger->GetStatus().mempool_size, 0u);
  EXPECT_EQ(Balance(*ledger, bob_), 500u);
  auto loc = ledger->FindTx(*second);
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->height, 1u);
  EXPECT_EQ(loc->index, 1u);
  EXPECT_EQ(ledger->counters().txs_committed.load(), 2u);
}

TEST_F(LedgerTest, AdmissionRejectsEachBadTransactionWithItsReason) {
  auto ledger = Open();
  auto wrong_chain = ledger->SubmitTx(Transfer(alice_, 0, bob_, 1, "other-chain"));
  EXPECT_EQ(wrong_chain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_chain.status().message().find("chain id"), std::string::npos);

  auto env = *consensus::DecodeEnvelope(Transfer(alice_, 0, bob_, 1));
  env.signature[0] ^= 1;
  auto bad_sig = ledger->SubmitTx(*consensus::EncodeEnvelope(env));
  EXPECT_EQ(bad_sig.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad_sig.status().message().find("signature"), std::string::npos);

  const std::string tx = Transfer(alice_, 0, bob_, 1);
  ASSERT_TRUE(ledger->SubmitTx(tx).ok());
  EXPECT_EQ(ledger->SubmitTx(tx).status().code(), StatusCode::kAlreadyExists);              // duplicate
  EXPECT_EQ(ledger->SubmitTx(Transfer(alice_, 0, bob_, 2)).status().code(), StatusCode::kAlreadyExists);  // nonce

  ASSERT_TRUE(ledger->ProduceBlock(1700000001000).ok());
  auto replay = ledger->SubmitTx(tx);  // already committed: its nonce is used up
  EXPECT_FALSE(replay.ok());
  EXPECT_NE(replay.status().message().find("nonce"), std::string::npos) << replay.status().ToString();

  auto oversized = ledger->SubmitTx(std::string(4096, 'x'));
  EXPECT_EQ(oversized.status().code(), StatusCode::kResourceExhausted);

  auto unfunded = ledger->SubmitTx(Transfer(KeyFromByte(5), 0, alice_, 1));
  EXPECT_FALSE(unfunded.ok()) << "an account with no balance cannot pay the fee";
  EXPECT_GE(ledger->counters().txs_rejected.load(), 7u);
}

TEST_F(LedgerTest, ReopenResumesAtTheLastBlockWithTheSameState) {
  LedgerStatus before;
  std::uint64_t bob_before = 0;
  {
    auto ledger = Open();
    for (std::uint64_t n = 0; n < 3; ++n) {
      ASSERT_TRUE(ledger->SubmitTx(Transfer(alice_, n, bob_, 10)).ok());
      ASSERT_TRUE(ledger->ProduceBlock(1700000001000 + static_cast<std::int64_t>(n)).ok());
    }
    before = ledger->GetStatus();
    bob_before = Balance(*ledger, bob_);
  }
  auto ledger = Open();
  LedgerStatus after = ledger->GetStatus();
  EXPECT_EQ(after.height, 3u);
  EXPECT_EQ(after.tip_hash, before.tip_hash);
  EXPECT_EQ(after.state_root, before.state_root);
  EXPECT_EQ(Balance(*ledger, bob_), bob_before);
  ASSERT_TRUE(ledger->SubmitTx(Transfer(alice_, 3, bob_, 10)).ok());
  auto next = ledger->ProduceBlock(1700000009000);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->height, 4u);
}

TEST_F(LedgerTest, RefusesAGenesisFileThatDiffersFromTheStoredChain) {
  { ASSERT_NE(Open(), nullptr); }
  LedgerOptions o;
  o.data_dir = dir_.File("data");
  auto edited = Ledger::Open(o, TestGenesis(999), KeyFromByte(9));
  EXPECT_EQ(edited.status().code(), StatusCode::kFailedPrecondition);
  GenesisFile other_chain = TestGenesis();
  other_chain.spec.set_chain_id("another");
  EXPECT_EQ(Ledger::Open(o, other_chain, KeyFromByte(9)).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(LedgerTest, BlockTimesNeverGoBackwards) {
  auto ledger = Open();
  auto b = ledger->ProduceBlock(5);  // a clock far behind genesis time
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(ledger->GetStatus().tip_time_unix_ms, TestGenesis().genesis_time_unix_ms);
}

// The post-commit recheck re-runs CheckTx only for pending txs whose recorded reads the block
// wrote: carol's later txs lose their fee cover when her first tx spends her balance and are
// dropped; dave's tx read nothing the block wrote and stays.
TEST_F(LedgerTest, RecheckDropsTxsTheBlockInvalidatedAndKeepsTheRest) {
  const SecretKey carol = KeyFromByte(3), dave = KeyFromByte(4);
  GenesisFile g = TestGenesis();
  for (const auto& [key, amount] : {std::pair{&carol, 5ull}, std::pair{&dave, 100ull}}) {
    proto::Allocation* a = g.spec.add_allocations();
    a->set_pubkey(key->PublicKey().bytes().data(), 32);
    a->set_amount(amount);
  }
  LedgerOptions o;
  o.data_dir = dir_.File("data");
  o.sync_writes = false;
  o.max_txs_per_block = 1;
  auto ledger = Ledger::Open(o, g, KeyFromByte(9));
  ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
  // Fee 1 each: a balance of 5 covers the fees of nonces 0..2 at admission; tx 0 then spends it all.
  ASSERT_TRUE((*ledger)->SubmitTx(Transfer(carol, 0, bob_, 4)).ok());
  auto c1 = (*ledger)->SubmitTx(Transfer(carol, 1, bob_, 1));
  auto c2 = (*ledger)->SubmitTx(Transfer(carol, 2, bob_, 1));
  auto d0 = (*ledger)->SubmitTx(Transfer(dave, 0, bob_, 5));
  ASSERT_TRUE(c1.ok() && c2.ok() && d0.ok()) << c1.status().ToString() << c2.status().ToString();
  auto block = (*ledger)->ProduceBlock(1700000001000);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  EXPECT_EQ(block->tx_count, 1u);
  EXPECT_EQ(block->dropped_from_mempool, 2u);
  EXPECT_FALSE((*ledger)->IsPending(*c1));
  EXPECT_FALSE((*ledger)->IsPending(*c2));
  EXPECT_TRUE((*ledger)->IsPending(*d0));
  auto next = (*ledger)->ProduceBlock(1700000002000);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->tx_count, 1u);
  EXPECT_EQ(next->failed_txs, 0u);
  EXPECT_EQ((*ledger)->GetStatus().mempool_size, 0u);
}

// Admission runs CheckTx outside the pool's lock, under the ledger's state lock. Threads racing
// txs of one (signer, nonce) must leave exactly one; and with blocks committing meanwhile, a tx
// checked against the state before a block must not get in after it: replays of committed txs
// are refused, and once the submitters stop nothing committed is still pending.
TEST_F(LedgerTest, ConcurrentAdmissionAndBlocksKeepOneTxPerNonceAndNoStaleTx) {
  auto ledger = Open();
  constexpr std::uint64_t kNonces = 40;
  constexpr int kThreads = 3;
  // Per nonce, one transfer per thread with a different amount: different ids, same (signer, nonce).
  std::vector<std::vector<std::string>> txs(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (std::uint64_t n = 0; n < kNonces; ++n) txs[t].push_back(Transfer(alice_, n, bob_, 1 + t));
  }
  std::atomic<int> submitters{kThreads};
  std::vector<std::vector<consensus::Hash256>> accepted(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t n = 0; n < kNonces; ++n) {
        // Each tx twice, and the thread's previous one again: replays race the commits.
        for (const std::string* tx : {&txs[t][n], &txs[t][n], n > 0 ? &txs[t][n - 1] : &txs[t][n]}) {
          Result<consensus::Hash256> id = ledger->SubmitTx(*tx);
          if (id.ok()) accepted[t].push_back(*id);
        }
      }
      submitters.fetch_sub(1);
    });
  }
  std::int64_t time = 1700000001000;
  while (submitters.load() > 0) ASSERT_TRUE(ledger->ProduceBlock(time += 1000).ok());
  for (std::thread& th : threads) th.join();
  for (int i = 0; i < 3 && ledger->GetStatus().mempool_size > 0; ++i) ASSERT_TRUE(ledger->ProduceBlock(time += 1000).ok());

  // Every nonce was used exactly once: alice's account advanced by kNonces, each accepted id is
  // either committed or was dropped, and nothing is left pending.
  EXPECT_EQ(ledger->GetStatus().mempool_size, 0u);
  std::size_t committed = 0, admitted = 0;
  for (const auto& ids : accepted) {
    admitted += ids.size();
    for (const consensus::Hash256& id : ids) {
      EXPECT_FALSE(ledger->IsPending(id));
      committed += ledger->FindTx(id).ok() ? 1 : 0;
    }
  }
  EXPECT_EQ(admitted, kNonces) << "one admitted tx per nonce";
  EXPECT_EQ(committed, kNonces) << "one committed tx per nonce";
  auto account = ledger->ReadCommitted([&](const contracts::StateStore& state) {
    const auto& pub = alice_.PublicKey().bytes();
    return contracts::QueryAccount(state, std::string(reinterpret_cast<const char*>(pub.data()), pub.size()));
  });
  ASSERT_TRUE(account.ok());
  EXPECT_EQ(account->nonce(), kNonces);
  // A replay of any of them now is refused.
  for (int t = 0; t < kThreads; ++t) EXPECT_FALSE(ledger->SubmitTx(txs[t][0]).ok());
}

// A block's RocksDB write and fsync run outside the state lock; only its publication is exclusive.
// Threads admit txs whose verdicts the blocks change (two per (signer, nonce), so the second is
// valid exactly until the first commits) and a reader checks that each read sees one block,
// while blocks commit with sync writes on (so the unlocked window is an fsync long). After every
// block, with no other block committing, the invariant: every pending tx passes CheckTx against
// the committed state. A tx checked against a parent and inserted after the block's recheck
// would break it.
TEST_F(LedgerTest, AdmissionAndReadsDuringCommitsNeverSeeAStaleOrPartialBlock) {
  constexpr int kSigners = 3;
  constexpr std::uint64_t kNonces = 30;
  std::vector<SecretKey> signers;
  GenesisFile genesis = TestGenesis();
  for (int i = 0; i < kSigners; ++i) {
    signers.push_back(KeyFromByte(static_cast<std::uint8_t>(20 + i)));
    proto::Allocation* a = genesis.spec.add_allocations();
    const auto& pub = signers.back().PublicKey().bytes();
    a->set_pubkey(pub.data(), pub.size());
    a->set_amount(1000000);
  }
  std::unique_ptr<Ledger> ledger = Open(genesis, /*sync_writes=*/true, "sync");
  ASSERT_NE(ledger, nullptr);

  struct Admitted {
    consensus::Hash256 id;
    std::string encoded;
  };
  std::mutex admitted_mu;
  std::vector<Admitted> admitted;
  std::atomic<int> submitters{kSigners};
  std::atomic<bool> stop_reader{false};
  std::atomic<int> partial_reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kSigners; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t n = 0; n < kNonces; ++n) {
        for (std::uint64_t amount : {1, 2, 1}) {
          std::string tx = Transfer(signers[t], n, bob_, amount);
          Result<consensus::Hash256> id = ledger->SubmitTx(tx);
          if (!id.ok()) continue;
          std::lock_guard<std::mutex> lock(admitted_mu);
          admitted.push_back(Admitted{*id, std::move(tx)});
        }
      }
      submitters.fetch_sub(1);
    });
  }
  // The height read by key and by scan in one ReadCommitted: equal unless a read saw two blocks.
  threads.emplace_back([&] {
    while (!stop_reader.load()) {
      const bool whole = ledger->ReadCommitted([&](const contracts::StateStore& state) {
        Result<std::optional<std::string>> by_key = state.Get("meta/height");
        std::optional<std::string> by_scan;
        Status scanned = state.Scan("meta/", [&](std::string_view k, std::string_view v) {
          if (k == "meta/height") by_scan = std::string(v);
          return true;
        });
        return by_key.ok() && scanned.ok() && *by_key == by_scan;
      });
      if (!whole) partial_reads.fetch_add(1);
    }
  });
  auto account_nonce = [&](const SecretKey& k) -> std::uint64_t {
    const auto& pub = k.PublicKey().bytes();
    Result<proto::Account> account = ledger->ReadCommitted([&](const contracts::StateStore& state) {
      return contracts::QueryAccount(state, std::string(reinterpret_cast<const char*>(pub.data()), pub.size()));
    });
    EXPECT_TRUE(account.ok());
    return account.ok() ? account->nonce() : 0;
  };
  const contracts::Application app;
  std::int64_t time = 1700000001000;
  std::size_t blocks = 0, stale = 0;
  auto produce_and_check = [&] {
    ASSERT_TRUE(ledger->ProduceBlock(time += 1000).ok());
    ++blocks;
    std::lock_guard<std::mutex> lock(admitted_mu);
    for (const Admitted& a : admitted) {
      if (!ledger->IsPending(a.id)) continue;
      Result<consensus::TxEnvelope> envelope = consensus::DecodeEnvelope(a.encoded);
      ASSERT_TRUE(envelope.ok());
      const Status verdict = ledger->ReadCommitted([&](const contracts::StateStore& state) {
        return app.CheckTx(contracts::MakeVerifiedTx(*envelope, a.id, a.encoded.size()), state);
      });
      if (!verdict.ok()) ++stale;
    }
  };
  while (submitters.load() > 0) produce_and_check();
  for (int i = 0; i < kSigners; ++i) threads[static_cast<std::size_t>(i)].join();
  for (int i = 0; i < 3 && ledger->GetStatus().mempool_size > 0; ++i) produce_and_check();
  stop_reader.store(true);
  threads.back().join();

  EXPECT_EQ(stale, 0u) << "pending txs that fail against the committed state, over " << blocks << " blocks";
  EXPECT_EQ(partial_reads.load(), 0);
  EXPECT_EQ(ledger->GetStatus().mempool_size, 0u);
  for (const SecretKey& k : signers) EXPECT_EQ(account_nonce(k), kNonces);
  std::size_t committed = 0;
  for (const Admitted& a : admitted) committed += ledger->FindTx(a.id).ok() ? 1 : 0;
  EXPECT_EQ(committed, kSigners * kNonces) << "one committed tx per (signer, nonce)";
}

// ---- verify-chain ---------------------------------------------------------------------------

class VerifyChainTest : public LedgerTest {
 protected:
  // Builds a 4-block chain with transfers, then closes the ledger.
  void BuildChain() {
    auto ledger = Open();
    std::uint64_t nonce = 0;
    for (int b = 0; b < 4; ++b) {
      for (int t = 0; t < 3; ++t) ASSERT_TRUE(ledger->SubmitTx(Transfer(alice_, nonce++, bob_, 7)).ok());
      ASSERT_TRUE(ledger->ProduceBlock(1700000001000 + b).ok());
    }
  }

  Result<ChainReport> Verify() {
    auto stored = consensus::ChainStore::Open(dir_.File("data"), consensus::ChainStoreOptions{.read_only = true});
    if (!stored.ok()) return stored.status();
    return VerifyChain(**stored, TestGenesis(), dir_.File("scratch-" + std::to_string(++verifications_)));
  }

  // Rewrites raw RocksDB keys, as an attacker with disk access (or a bug) would.
  void RawPut(const std::string& key, const std::string& value) {
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_.File("data"), &db).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, value).ok());
    delete db;
  }

  static std::string BlockKey(std::uint64_t h) {
    std::string k = "b/";
    for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>((h >> (8 * i)) & 0xff));
    return k;
  }

  consensus::Block LoadBlock(std::uint64_t h) {
    auto store = consensus::ChainStore::Open(dir_.File("data"), consensus::ChainStoreOptions{.read_only = true});
    EXPECT_TRUE(store.ok());
    return *consensus::DecodeBlock(*(*store)->GetEncodedBlock(h));
  }

  void StoreBlock(const consensus::Block& b) { RawPut(BlockKey(b.header.height), *consensus::EncodeBlock(b)); }

  void ExpectCorruption(const std::string& expected_text) {
    auto report = Verify();
    ASSERT_FALSE(report.ok()) << "tampering went unnoticed";
    EXPECT_EQ(report.status().code(), StatusCode::kCorruption);
    EXPECT_NE(report.status().message().find(expected_text), std::string::npos) << report.status().ToString();
  }

  int verifications_ = 0;
};

TEST_F(VerifyChainTest, AnUntouchedChainVerifies) {
  BuildChain();
  auto report = Verify();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->blocks, 5u);
  EXPECT_EQ(report->transactions, 12u);
}

TEST_F(VerifyChainTest, DetectsARemovedTransaction) {
  BuildChain();
  consensus::Block b = LoadBlock(2);
  b.txs.pop_back();
  StoreBlock(b);
  ExpectCorruption("block 2: tx_root");
}

TEST_F(VerifyChainTest, DetectsABrokenSignature) {
  BuildChain();
  consensus::Block b = LoadBlock(3);
  b.header.signature[7] ^= 0x40;
  StoreBlock(b);
  ExpectCorruption("block 3: producer signature");
}

TEST_F(VerifyChainTest, DetectsAForgedStateRootEvenWhenReSigned) {
  BuildChain();
  consensus::Block b = LoadBlock(2);
  b.header.state_root[0] ^= 1;
  ASSERT_TRUE(consensus::SignBlockHeader(KeyFromByte(9), b.header).ok());  // the producer's own key
  StoreBlock(b);
  ExpectCorruption("block 2: state root mismatch");
}

TEST_F(VerifyChainTest, DetectsABrokenPrevHashLink) {
  BuildChain();
  consensus::Block b = LoadBlock(4);
  b.header.prev_hash[31] ^= 1;
  ASSERT_TRUE(consensus::SignBlockHeader(KeyFromByte(9), b.header).ok());
  StoreBlock(b);
  ExpectCorruption("block 4: prev_hash");
}

TEST_F(VerifyChainTest, DetectsABlockSignedByAnotherProducer) {
  BuildChain();
  consensus::Block b = LoadBlock(1);
  ASSERT_TRUE(consensus::SignBlockHeader(KeyFromByte(8), b.header).ok());
  StoreBlock(b);
  ExpectCorruption("block 1: signed by a different producer");
}

TEST_F(VerifyChainTest, DetectsTamperedStoredState) {
  BuildChain();
  RawPut("s/acct/" + Hex(bob_), "forged balance record");
  ExpectCorruption("stored state differs");
}

}  // namespace
}  // namespace polnode::node
