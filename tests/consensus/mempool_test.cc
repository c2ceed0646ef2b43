// Mempool admission: size, decoding, chain id, signature, duplicates, capacity, the application's
// check, and the admission order offered to the producer.
#include "polnode/consensus/mempool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "polnode/consensus/block.h"
#include "polnode/testing/ledger_fixtures.h"

namespace polnode::consensus {
namespace {

using polnode::testing::KeyFromByte;

std::string SignedTx(std::uint8_t signer, std::uint64_t nonce, std::string chain = "test-chain",
                     std::string payload = "p") {
  TxEnvelope e;
  e.chain_id = std::move(chain);
  e.nonce = nonce;
  e.payload_type = "transfer";
  e.payload = std::move(payload);
  auto signed_env = SignEnvelope(KeyFromByte(signer), e);
  EXPECT_TRUE(signed_env.ok());
  auto bytes = EncodeEnvelope(*signed_env);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

Status AcceptAll(const PendingTx&) { return Status::Ok(); }

Mempool MakePool(std::size_t max_txs = 100, std::size_t max_bytes = 4096) {
  return Mempool(MempoolOptions{.chain_id = "test-chain", .max_txs = max_txs, .max_tx_bytes = max_bytes});
}

TEST(MempoolTest, AdmitsValidTxAndReturnsItsId) {
  Mempool pool = MakePool();
  std::string tx = SignedTx(1, 0);
  auto id = pool.Add(tx, AcceptAll);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, TxId(tx));
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_TRUE(pool.Contains(*id));
}

TEST(MempoolTest, RejectsBadSignature) {
  Mempool pool = MakePool();
  auto env = *DecodeEnvelope(SignedTx(1, 0));
  env.signature[3] ^= 0x01;
  auto bytes = EncodeEnvelope(env);
  ASSERT_TRUE(bytes.ok());
  auto r = pool.Add(*bytes, AcceptAll);
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("bad signature"), std::string::npos) << r.status().message();
  // A payload changed after signing is the same failure.
  auto altered = *DecodeEnvelope(SignedTx(1, 0));
  altered.payload = "changed";
  EXPECT_EQ(pool.Add(*EncodeEnvelope(altered), AcceptAll).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(MempoolTest, RejectsWrongChainId) {
  Mempool pool = MakePool();
  auto r = pool.Add(SignedTx(1, 0, "other-chain"), AcceptAll);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("wrong chain id"), std::string::npos);
}

TEST(MempoolTest, RejectsReplayedTxAndDuplicateNonce) {
  Mempool pool = MakePool();
  std::string tx = SignedTx(1, 5);
  ASSERT_TRUE(pool.Add(tx, AcceptAll).ok());
  auto replay = pool.Add(tx, AcceptAll);
  EXPECT_EQ(replay.status().code(), StatusCode::kAlreadyExists);
  // Same signer and nonce, different contents (a different signature, so a different id).
  auto same_nonce = pool.Add(SignedTx(1, 5, "test-chain", "other"), AcceptAll);
  EXPECT_EQ(same_nonce.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(same_nonce.status().message().find("nonce 5"), std::string::npos);
  // Another signer may use the same nonce.
  EXPECT_TRUE(pool.Add(SignedTx(2, 5), AcceptAll).ok());
  EXPECT_EQ(pool.size(), 2u);
}

TEST(MempoolTest, NextPendingNonceIsOnePastTheSignersHighestPendingNonce) {
  Mempool pool = MakePool();
  const auto signer_one = KeyFromByte(1).PublicKey().bytes();
  const auto signer_two = KeyFromByte(2).PublicKey().bytes();
  const auto signer_three = KeyFromByte(3).PublicKey().bytes();
  EXPECT_EQ(pool.NextPendingNonce(signer_one), std::nullopt);
  ASSERT_TRUE(pool.Add(SignedTx(1, 4), AcceptAll).ok());
  ASSERT_TRUE(pool.Add(SignedTx(1, 5), AcceptAll).ok());
  Result<Hash256> signer_two_tx = pool.Add(SignedTx(2, 0), AcceptAll);
  ASSERT_TRUE(signer_two_tx.ok());
  EXPECT_EQ(pool.NextPendingNonce(signer_one), std::optional<std::uint64_t>(6));
  EXPECT_EQ(pool.NextPendingNonce(signer_two), std::optional<std::uint64_t>(1));
  EXPECT_EQ(pool.NextPendingNonce(signer_three), std::nullopt) << "other signers' txs do not count";
  pool.Remove(std::span<const Hash256>(&*signer_two_tx, 1));
  EXPECT_EQ(pool.NextPendingNonce(signer_two), std::nullopt) << "a signer whose last tx left has none pending";
  ASSERT_TRUE(pool.Add(SignedTx(2, 3), AcceptAll).ok());
  EXPECT_EQ(pool.NextPendingNonce(signer_two), std::optional<std::uint64_t>(4));
}

// Each pool keys its hash tables with fresh randomness, so two pools walk their signers in
// different orders; the candidates must not depend on that: the same admissions give the same
// list, in admission order, each signer's txs in nonce order within the positions they hold.
TEST(MempoolTest, CandidatesAreTheSameInEveryPoolGivenTheSameAdmissions) {
  // Forty signers send nonces 0 and 1; every fourth sends 1 first. All first txs come before
  // all second ones, the second ones in reverse signer order.
  std::vector<std::string> txs;
  for (std::uint8_t signer = 1; signer <= 40; ++signer) txs.push_back(SignedTx(signer, signer % 4 == 0 ? 1 : 0));
  for (std::uint8_t signer = 40; signer >= 1; --signer) txs.push_back(SignedTx(signer, signer % 4 == 0 ? 0 : 1));
  std::vector<std::vector<Hash256>> lists;
  for (int pool_index = 0; pool_index < 4; ++pool_index) {
    Mempool pool = MakePool(1000);
    for (const std::string& tx : txs) ASSERT_TRUE(pool.Add(tx, AcceptAll).ok());
    std::vector<Hash256> ids;
    for (const PendingTx& candidate : pool.Candidates(1000, 1 << 20)) ids.push_back(candidate.id);
    lists.push_back(std::move(ids));
  }
  ASSERT_EQ(lists[0].size(), 80u);
  for (std::size_t i = 1; i < lists.size(); ++i) EXPECT_EQ(lists[i], lists[0]) << "pool " << i;
  // Signer 4 sent nonce 1 before nonce 0; nonce 0 takes the first of its positions.
  Mempool pool = MakePool(1000);
  for (const std::string& tx : txs) ASSERT_TRUE(pool.Add(tx, AcceptAll).ok());
  const std::vector<PendingTx> candidates = pool.Candidates(1000, 1 << 20);
  const auto signer_four = KeyFromByte(4).PublicKey().bytes();
  std::vector<std::uint64_t> nonces;
  for (const PendingTx& candidate : candidates) {
    if (candidate.envelope.signer_pubkey == signer_four) nonces.push_back(candidate.envelope.nonce);
  }
  EXPECT_EQ(nonces, (std::vector<std::uint64_t>{0, 1}));
}

TEST(MempoolTest, RejectsOversizedTxBeforeDecoding) {
  Mempool pool = MakePool(100, 512);
  auto r = pool.Add(SignedTx(1, 0, "test-chain", std::string(600, 'x')), AcceptAll);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pool.Add(std::string(513, '\x0a'), AcceptAll).status().code(), StatusCode::kResourceExhausted);
}

TEST(MempoolTest, RejectsGarbageBytes) {
  Mempool pool = MakePool();
  EXPECT_FALSE(pool.Add("definitely not a protobuf envelope", AcceptAll).ok());
  EXPECT_FALSE(pool.Add("", AcceptAll).ok());
}

TEST(MempoolTest, ApplicationCheckDecidesLast) {
  Mempool pool = MakePool();
  auto r = pool.Add(SignedTx(1, 0), [](const PendingTx& tx) {
    return tx.envelope.nonce == 0 ? Status::FailedPrecondition("insufficient balance for fee") : Status::Ok();
  });
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(MempoolTest, FullPoolRejects) {
  Mempool pool = MakePool(2);
  ASSERT_TRUE(pool.Add(SignedTx(1, 0), AcceptAll).ok());
  ASSERT_TRUE(pool.Add(SignedTx(1, 1), AcceptAll).ok());
  EXPECT_EQ(pool.Add(SignedTx(1, 2), AcceptAll).status().code(), StatusCode::kUnavailable);
}

TEST(MempoolTest, CandidatesComeInAdmissionOrderAndRemoveAndRecheckPrune) {
  Mempool pool = MakePool();
  std::vector<Hash256> ids;
  for (std::uint8_t signer : {3, 1, 2}) ids.push_back(*pool.Add(SignedTx(signer, 0), AcceptAll));
  ids.push_back(*pool.Add(SignedTx(1, 1), AcceptAll));
  auto all = pool.Candidates(10, 1 << 20);
  ASSERT_EQ(all.size(), 4u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].id, ids[i]);
    if (i > 0) {
      EXPECT_LT(all[i - 1].seq, all[i].seq);
    }
  }
  EXPECT_EQ(pool.Candidates(2, 1 << 20).size(), 2u);
  pool.Remove(std::span<const Hash256>(ids.data(), 1));
  EXPECT_EQ(pool.size(), 3u);
  EXPECT_FALSE(pool.Contains(ids[0]));
  // After a block used signer 1's nonce 0, recheck drops that tx and keeps the rest.
  std::size_t dropped = pool.Recheck(
      [&](const PendingTx& tx) {
        return tx.envelope.signer_pubkey == KeyFromByte(1).PublicKey().bytes() && tx.envelope.nonce == 0
                   ? Status::FailedPrecondition("nonce already used")
                   : Status::Ok();
      },
      1);
  EXPECT_EQ(dropped, 1u);
  EXPECT_EQ(pool.size(), 2u);
  // The removed (signer, nonce) slot is free again.
  EXPECT_TRUE(pool.Add(SignedTx(1, 0, "test-chain", "again"), AcceptAll).ok());
}

// An admission check that knows each signer's next nonce (0 unless set), as the ledger's does.
struct Accounts {
  std::map<std::array<std::uint8_t, 32>, std::uint64_t> next;
  AdmissionCheck Check() {
    return [this](PendingTx& tx) {
      tx.account_nonce = next[tx.envelope.signer_pubkey];
      return tx.envelope.nonce < tx.account_nonce ? Status::FailedPrecondition("nonce already used") : Status::Ok();
    };
  }
};

// Issue 15 finding 2: 32 accounts parked 2,016 transactions behind nonce gaps; the producer only
// looked at the first 2,000 candidates in arrival order, so a valid transfer stayed pending and
// blocks carried nothing. Now gap txs are capped per signer and in total, are never candidates, and
// expire.
TEST(MempoolTest, TxsParkedBehindNonceGapsNeitherFillThePoolNorBlockAValidTx) {
  Mempool pool(MempoolOptions{.chain_id = "test-chain", .max_txs = 100000, .max_tx_bytes = 4096});
  Accounts accounts;
  std::size_t parked = 0;
  std::size_t refused = 0;
  for (std::uint8_t signer = 1; signer <= 32; ++signer) {
    for (std::uint64_t nonce = 1; nonce <= 63; ++nonce) {  // nonce 0 never comes
      Result<Hash256> id = pool.Add(SignedTx(signer, nonce), accounts.Check());
      if (id.ok()) {
        ++parked;
      } else {
        EXPECT_EQ(id.status().code(), StatusCode::kResourceExhausted) << id.status().ToString();
        ++refused;
      }
    }
  }
  EXPECT_EQ(parked, 32u * 16u);  // max_future_per_signer
  EXPECT_EQ(refused, 32u * 63u - parked);
  EXPECT_EQ(pool.future_count(), parked);
  const Hash256 valid = *pool.Add(SignedTx(99, 0), accounts.Check());
  const std::vector<PendingTx> candidates = pool.Candidates(2000, 4 << 20);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].id, valid);
  // Once a signer's gap is filled, its whole run becomes executable, in nonce order.
  ASSERT_TRUE(pool.Add(SignedTx(1, 0), accounts.Check()).ok());
  std::vector<std::uint64_t> nonces;
  for (const PendingTx& tx : pool.Candidates(2000, 4 << 20)) {
    if (tx.envelope.signer_pubkey == KeyFromByte(1).PublicKey().bytes()) nonces.push_back(tx.envelope.nonce);
  }
  ASSERT_EQ(nonces.size(), 17u);
  EXPECT_TRUE(std::is_sorted(nonces.begin(), nonces.end()));
  // The rest never become executable: they expire (the pool's Recheck after each block).
  accounts.next[KeyFromByte(1).PublicKey().bytes()] = 17;  // signer 1's run went into a block
  EXPECT_EQ(pool.Recheck(accounts.Check(), 50), 17u);
  EXPECT_EQ(pool.future_count(), 31u * 16u);
  EXPECT_EQ(pool.Recheck(accounts.Check(), 200), 31u * 16u);
  EXPECT_EQ(pool.future_count(), 0u);
  EXPECT_EQ(pool.size(), 1u);  // the valid tx, still waiting for its block
}

// The caps are for txs behind a gap: a signer's gap-free run from its account nonce (a daemon
// publishing a checkpoint in many chunks) is admitted however long, and stays executable.
TEST(MempoolTest, AGapFreeRunLongerThanTheCapIsAdmitted) {
  Mempool pool(MempoolOptions{.chain_id = "test-chain", .max_txs = 1000, .max_tx_bytes = 4096});
  Accounts accounts;
  for (std::uint64_t nonce = 0; nonce < 40; ++nonce) {
    ASSERT_TRUE(pool.Add(SignedTx(1, nonce), accounts.Check()).ok()) << nonce;
  }
  EXPECT_EQ(pool.future_count(), 0u);
  EXPECT_EQ(pool.Candidates(100, 4 << 20).size(), 40u);
  // Behind a gap (41 missing), only 16 more fit; filling the gap makes them part of the run.
  for (std::uint64_t nonce = 42; nonce < 60; ++nonce) (void)pool.Add(SignedTx(1, nonce), accounts.Check());
  EXPECT_EQ(pool.future_count(), 16u);
  ASSERT_TRUE(pool.Add(SignedTx(1, 40), accounts.Check()).ok());
  ASSERT_TRUE(pool.Add(SignedTx(1, 41), accounts.Check()).ok());
  EXPECT_EQ(pool.Recheck(accounts.Check(), 1), 0u);
  EXPECT_EQ(pool.future_count(), 0u);
  EXPECT_EQ(pool.Candidates(100, 4 << 20).size(), 58u);
}

TEST(MempoolTest, FutureTxsAreCappedInTotal) {
  Mempool pool(MempoolOptions{.chain_id = "test-chain", .max_txs = 1000, .max_tx_bytes = 4096, .max_future = 5});
  Accounts accounts;
  for (std::uint8_t signer = 1; signer <= 5; ++signer) ASSERT_TRUE(pool.Add(SignedTx(signer, 3), accounts.Check()).ok());
  const Result<Hash256> sixth = pool.Add(SignedTx(6, 3), accounts.Check());
  EXPECT_EQ(sixth.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(sixth.status().message().find("send nonce 0 first"), std::string::npos) << sixth.status().message();
  EXPECT_TRUE(pool.Add(SignedTx(6, 0), accounts.Check()).ok()) << "executable txs are not capped by it";
}

TEST(MempoolTest, PendingBytesAreBounded) {
  std::size_t three = 0;
  for (std::uint64_t nonce = 0; nonce < 3; ++nonce) three += SignedTx(1, nonce).size();
  Mempool pool(MempoolOptions{.chain_id = "test-chain", .max_txs = 1000, .max_tx_bytes = 4096, .max_bytes = three});
  Accounts accounts;
  for (std::uint64_t nonce = 0; nonce < 3; ++nonce) ASSERT_TRUE(pool.Add(SignedTx(1, nonce), accounts.Check()).ok());
  EXPECT_EQ(pool.bytes(), three);
  EXPECT_EQ(pool.Add(SignedTx(2, 0), accounts.Check()).status().code(), StatusCode::kUnavailable);
  // Candidates respect a byte budget too.
  EXPECT_EQ(pool.Candidates(10, three - 1).size(), 2u);
}

// Signer keys are parsed through a cache: once a signer's key is cached, its next tx with a
// broken signature, or one signed by another key in its name, is still refused.
TEST(MempoolTest, ACachedSignerKeyLetsNoBadSignatureThrough) {
  Mempool pool = MakePool();
  ASSERT_TRUE(pool.Add(SignedTx(1, 0), AcceptAll).ok());
  auto broken = *DecodeEnvelope(SignedTx(1, 1));
  broken.signature[10] ^= 0x20;
  EXPECT_EQ(pool.Add(*EncodeEnvelope(broken), AcceptAll).status().code(), StatusCode::kCorruption);
  auto forged = *DecodeEnvelope(SignedTx(2, 1));
  forged.signer_pubkey = KeyFromByte(1).PublicKey().bytes();  // signer 2's signature, signer 1's name
  EXPECT_EQ(pool.Add(*EncodeEnvelope(forged), AcceptAll).status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(pool.Add(SignedTx(1, 1), AcceptAll).ok());
  EXPECT_EQ(pool.size(), 2u);
}

// InsertAgainstStableState runs the check outside the pool's lock. Threads racing with txs of the
// same (signer, nonce), or with the very same tx, must still leave exactly one of each in the pool.
TEST(MempoolTest, RacingInsertsOutsideTheLockAdmitOneTxPerSignerAndNonce) {
  constexpr int kThreads = 4;
  constexpr std::uint64_t kNonces = 24;
  Mempool pool = MakePool(1000);
  // Thread t's tx for nonce n differs from the others' (its payload), so each has its own id;
  // every thread also submits thread 0's copy, so identical txs race too.
  std::vector<std::vector<PendingTx>> mine(kThreads), shared(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (std::uint64_t n = 0; n < kNonces; ++n) {
      mine[t].push_back(*pool.Precheck(SignedTx(1, n, "test-chain", "from thread " + std::to_string(t))));
      shared[t].push_back(*pool.Precheck(SignedTx(2, n, "test-chain", "the same for all")));
    }
  }
  std::atomic<int> checks{0};
  std::vector<std::vector<Result<Hash256>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t n = 0; n < kNonces; ++n) {
        auto check = [&](PendingTx& tx) {
          checks.fetch_add(1);
          tx.account_nonce = 0;
          return Status::Ok();
        };
        results[t].push_back(pool.InsertAgainstStableState(std::move(mine[t][n]), check));
        results[t].push_back(pool.InsertAgainstStableState(std::move(shared[t][n]), check));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::size_t admitted = 0;
  for (const auto& per_thread : results) {
    for (const Result<Hash256>& r : per_thread) {
      if (r.ok()) {
        ++admitted;
      } else {
        EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists) << r.status().ToString();
      }
    }
  }
  EXPECT_EQ(admitted, 2 * kNonces);
  EXPECT_EQ(pool.size(), 2 * kNonces);
  EXPECT_EQ(pool.NextPendingNonce(KeyFromByte(1).PublicKey().bytes()), std::optional<std::uint64_t>(kNonces));
  EXPECT_EQ(pool.NextPendingNonce(KeyFromByte(2).PublicKey().bytes()), std::optional<std::uint64_t>(kNonces));
  EXPECT_GE(checks.load(), static_cast<int>(2 * kNonces));
  // The pool's indexes agree: every pending tx is offered once.
  EXPECT_EQ(pool.Candidates(1000, 1 << 20).size(), 2 * kNonces);
}

TEST(MempoolTest, InsertAgainstStableStateRefusesWhatInsertRefuses) {
  Mempool pool = MakePool(2);
  auto reject = [](PendingTx&) { return Status::FailedPrecondition("no funds"); };
  auto accept = [](PendingTx&) { return Status::Ok(); };
  EXPECT_EQ(pool.InsertAgainstStableState(*pool.Precheck(SignedTx(1, 0)), reject).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool.size(), 0u);
  const std::string tx = SignedTx(1, 0);
  ASSERT_TRUE(pool.InsertAgainstStableState(*pool.Precheck(tx), accept).ok());
  EXPECT_EQ(pool.InsertAgainstStableState(*pool.Precheck(tx), accept).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(pool.InsertAgainstStableState(*pool.Precheck(SignedTx(1, 0, "test-chain", "x")), accept).status().code(),
            StatusCode::kAlreadyExists);
  ASSERT_TRUE(pool.InsertAgainstStableState(*pool.Precheck(SignedTx(1, 1)), accept).ok());
  EXPECT_EQ(pool.InsertAgainstStableState(*pool.Precheck(SignedTx(2, 0)), accept).status().code(),
            StatusCode::kUnavailable);
}

}  // namespace
}  // namespace polnode::consensus
