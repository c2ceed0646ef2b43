// Blocks: header hash, signature, tx root and the canonical protobuf form.
#include "polnode/consensus/block.h"

#include <gtest/gtest.h>

#include "polnode/consensus/merkle.h"
#include "polnode/testing/ledger_fixtures.h"

namespace polnode::consensus {
namespace {

using polnode::testing::KeyFromByte;

Block SampleBlock() {
  Block b;
  b.header.chain_id = "polnode-test";
  b.header.height = 7;
  b.header.prev_hash = Sha256("parent");
  b.txs = {"tx-one", "tx-two", "tx-three"};
  b.header.tx_root = ComputeTxRoot(b.txs);
  b.header.state_root = Sha256("state");
  b.header.time_unix_ms = 1700000000123;
  EXPECT_TRUE(SignBlockHeader(KeyFromByte(7), b.header).ok());
  return b;
}

TEST(BlockTest, SignedHeaderVerifiesAndNamesItsProducer) {
  Block b = SampleBlock();
  EXPECT_EQ(b.header.producer, KeyFromByte(7).PublicKey().bytes());
  EXPECT_TRUE(VerifyBlockSignature(b.header).ok());
  EXPECT_TRUE(CheckBlockContents(b).ok());
}

TEST(BlockTest, EveryHeaderFieldIsCoveredByTheSignature) {
  const Block base = SampleBlock();
  std::vector<std::function<void(BlockHeader&)>> edits = {
      [](BlockHeader& h) { h.chain_id = "other"; },       [](BlockHeader& h) { h.height++; },
      [](BlockHeader& h) { h.prev_hash[0] ^= 1; },        [](BlockHeader& h) { h.tx_root[31] ^= 1; },
      [](BlockHeader& h) { h.state_root[5] ^= 0x80; },    [](BlockHeader& h) { h.time_unix_ms++; },
      [](BlockHeader& h) { h.signature[10] ^= 1; },
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    BlockHeader h = base.header;
    edits[i](h);
    EXPECT_EQ(VerifyBlockSignature(h).code(), StatusCode::kCorruption) << "edit " << i;
  }
  BlockHeader other_producer = base.header;
  other_producer.producer = KeyFromByte(9).PublicKey().bytes();
  EXPECT_FALSE(VerifyBlockSignature(other_producer).ok());
}

TEST(BlockTest, HashExcludesSignatureAndFollowsTheDefinition) {
  Block b = SampleBlock();
  Hash256 before = BlockHash(b.header);
  ASSERT_TRUE(SignBlockHeader(KeyFromByte(7), b.header).ok());  // fresh aux randomness
  EXPECT_EQ(BlockHash(b.header), before);
  std::vector<Hash256> ids = {TxId("tx-one"), TxId("tx-two"), TxId("tx-three")};
  EXPECT_EQ(b.header.tx_root, MerkleRoot(ids));
  EXPECT_EQ(TxId("tx-one"), Sha256("tx-one"));
}

TEST(BlockTest, TamperedTransactionListFailsContentCheck) {
  Block b = SampleBlock();
  b.txs[1] = "tx-evil";
  EXPECT_EQ(CheckBlockContents(b).code(), StatusCode::kCorruption);
  Block dropped = SampleBlock();
  dropped.txs.pop_back();
  EXPECT_EQ(CheckBlockContents(dropped).code(), StatusCode::kCorruption);
  Block genesis = SampleBlock();
  genesis.header.height = 0;
  EXPECT_EQ(CheckBlockContents(genesis).code(), StatusCode::kCorruption);
}

TEST(BlockTest, EncodeDecodeRoundTripsAndRejectsNonCanonicalBytes) {
  Block b = SampleBlock();
  auto bytes = EncodeBlock(b);
  ASSERT_TRUE(bytes.ok());
  auto back = DecodeBlock(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, b);

  std::string trailing = *bytes + std::string("\x08\x01", 2);  // an extra field 1 varint
  EXPECT_EQ(DecodeBlock(trailing).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeBlock(std::string_view("\xff\xff\xff", 3)).status().code(), StatusCode::kCorruption);
  std::string truncated = bytes->substr(0, bytes->size() - 3);
  EXPECT_FALSE(DecodeBlock(truncated).ok());
}

TEST(BlockTest, DecodeRejectsWrongFixedSizesAndOversizedInput) {
  Block b = SampleBlock();
  auto bytes = EncodeBlock(b);
  ASSERT_TRUE(bytes.ok());
  // Corrupt the length of the prev_hash field (tag 0x1a inside the header) to make it 31 bytes.
  std::string wrong = *bytes;
  auto pos = wrong.find(std::string("\x1a\x20", 2));
  ASSERT_NE(pos, std::string::npos);
  EXPECT_FALSE(DecodeBlock(wrong.replace(pos, 3, std::string("\x1a\x1f", 2))).ok());
  std::string huge(kMaxBlockBytes + 1, '\0');
  EXPECT_EQ(DecodeBlock(huge).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace polnode::consensus
