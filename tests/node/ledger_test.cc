// Ledger (in-process, real RocksDB): genesis, admission reasons, block production, restart, and
// chain verification catching tampered blocks, signatures, state roots and state.
#include "ledger.h"

#include <rocksdb/db.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "chain_verifier.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "subprocess.h"

namespace polnode::node {
namespace {

using consensus::SecretKey;

SecretKey KeyFromByte(std::uint8_t b) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(b);
  return *SecretKey::FromBytes(bytes);
}

std::string Hex(const SecretKey& k) { return consensus::ToHex(k.PublicKey().bytes()); }

constexpr char kChain[] = "ledger-test";

GenesisFile TestGenesis(std::uint64_t alice_balance = 1000000) {
  GenesisFile g;
  g.spec.set_chain_id(kChain);
  *g.spec.mutable_params() = contracts::DefaultParams();
  g.genesis_time_unix_ms = 1700000000000;
  proto::Allocation* a = g.spec.add_allocations();
  a->set_pubkey(KeyFromByte(1).PublicKey().bytes().data(), 32);
  a->set_amount(alice_balance);
  return g;
}

std::string Transfer(const SecretKey& from, std::uint64_t nonce, const SecretKey& to, std::uint64_t amount,
                     std::string chain = kChain) {
  proto::TransferTx payload;
  payload.set_to(to.PublicKey().bytes().data(), 32);
  payload.set_amount(amount);
  consensus::TxEnvelope e;
  e.chain_id = std::move(chain);
  e.nonce = nonce;
  e.payload_type = std::string(contracts::payload::kTransfer);
  e.payload = payload.SerializeAsString();
  auto signed_env = consensus::SignEnvelope(from, e);
  EXPECT_TRUE(signed_env.ok());
  return *consensus::EncodeEnvelope(*signed_env);
}

std::string AccountJson(const Ledger& ledger, const SecretKey& k) {
  auto r = ledger.Query("account/" + Hex(k));
  return r.ok() ? *r : r.status().ToString();
}

class LedgerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Ledger> Open(const GenesisFile& genesis = TestGenesis()) {
    LedgerOptions o;
    o.data_dir = dir_.File("data");
    o.sync_writes = false;
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
  EXPECT_NE(AccountJson(*ledger, alice_).find("\"balance\":1000000"), std::string::npos) << AccountJson(*ledger, alice_);
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
  EXPECT_NE(AccountJson(*ledger, bob_).find("\"balance\":500"), std::string::npos) << AccountJson(*ledger, bob_);
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
  std::string bob_before;
  {
    auto ledger = Open();
    for (std::uint64_t n = 0; n < 3; ++n) {
      ASSERT_TRUE(ledger->SubmitTx(Transfer(alice_, n, bob_, 10)).ok());
      ASSERT_TRUE(ledger->ProduceBlock(1700000001000 + static_cast<std::int64_t>(n)).ok());
    }
    before = ledger->GetStatus();
    bob_before = AccountJson(*ledger, bob_);
  }
  auto ledger = Open();
  LedgerStatus after = ledger->GetStatus();
  EXPECT_EQ(after.height, 3u);
  EXPECT_EQ(after.tip_hash, before.tip_hash);
  EXPECT_EQ(after.state_root, before.state_root);
  EXPECT_EQ(AccountJson(*ledger, bob_), bob_before);
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
