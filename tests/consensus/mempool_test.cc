// Mempool admission: size, decoding, chain id, signature, duplicates, capacity, the application's
// check, and the admission order offered to the producer.
#include "polnode/consensus/mempool.h"

#include <gtest/gtest.h>

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
  ASSERT_TRUE(pool.Add(SignedTx(2, 0), AcceptAll).ok());
  EXPECT_EQ(pool.NextPendingNonce(signer_one), std::optional<std::uint64_t>(6));
  EXPECT_EQ(pool.NextPendingNonce(signer_two), std::optional<std::uint64_t>(1));
  EXPECT_EQ(pool.NextPendingNonce(signer_three), std::nullopt) << "other signers' txs do not count";
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
  auto all = pool.Candidates(10);
  ASSERT_EQ(all.size(), 4u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].id, ids[i]);
    if (i > 0) {
      EXPECT_LT(all[i - 1].seq, all[i].seq);
    }
  }
  EXPECT_EQ(pool.Candidates(2).size(), 2u);
  pool.Remove(std::span<const Hash256>(ids.data(), 1));
  EXPECT_EQ(pool.size(), 3u);
  EXPECT_FALSE(pool.Contains(ids[0]));
  // After a block used signer 1's nonce 0, recheck drops that tx and keeps the rest.
  std::size_t dropped = pool.Recheck([&](const PendingTx& tx) {
    return tx.envelope.signer_pubkey == KeyFromByte(1).PublicKey().bytes() && tx.envelope.nonce == 0
               ? Status::FailedPrecondition("nonce already used")
               : Status::Ok();
  });
  EXPECT_EQ(dropped, 1u);
  EXPECT_EQ(pool.size(), 2u);
  // The removed (signer, nonce) slot is free again.
  EXPECT_TRUE(pool.Add(SignedTx(1, 0, "test-chain", "again"), AcceptAll).ok());
}

}  // namespace
}  // namespace polnode::consensus
