// Blocks: header hash, signature, tx root and the canonical protobuf form.
#include "polnode/consensus/block.h"

#include <gtest/gtest.h>

#include "polnode/consensus/merkle.h"

namespace polnode::consensus {
namespace {

SecretKey KeyFromByte(std::uint8_t b) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(b);
  auto key = SecretKey::FromBytes(bytes);
  EXPECT_TRUE(key.ok());
  return *key;
}

Block SampleBlock() {
  Block b;
  b.header.chain_id = "polnode-test";
  b.header.height = 7;
  b.header.prev_hash = Sha256("parent");
  b.txs = {"tx-one", "tx-two", "tx-three"};
  b.header.tx_root = ComputeTxRoot(b.txs);
  b.header.state_root = Sha256("state");
  b.header.time_unix_ms = 1700000000123;
  EXPECT_TRUE(SetBlockRandomness(KeyFromByte(7), b.header, Sha256("parent randomness")).ok());
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
      [](BlockHeader& h) { h.signature[10] ^= 1; },       [](BlockHeader& h) { h.randomness[3] ^= 1; },
      [](BlockHeader& h) { h.randomness_proof[40] ^= 1; },
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

// Issue 15 finding 5: the randomness was the hash of the previous block, which its producer could
// grind by choosing the block's contents. It is now the producer's VRF output on the height and
// the parent's randomness: one possible value, checked by anyone.
TEST(BlockTest, RandomnessIsTheProducersVrfOutputAndNothingElse) {
  const Block b = SampleBlock();
  const Hash256 parent = Sha256("parent randomness");
  EXPECT_TRUE(VerifyBlockRandomness(b.header, parent).ok());
  EXPECT_EQ(VerifyBlockRandomness(b.header, Sha256("other parent")).code(), StatusCode::kCorruption);
  BlockHeader chosen = b.header;  // a producer that picks another value
  chosen.randomness = Sha256("chosen");
  EXPECT_EQ(VerifyBlockRandomness(chosen, parent).code(), StatusCode::kCorruption);
  BlockHeader other_contents = b.header;  // contents do not move it: the same proof still holds
  other_contents.tx_root[0] ^= 1;
  other_contents.time_unix_ms += 1;
  EXPECT_TRUE(VerifyBlockRandomness(other_contents, parent).ok());
  BlockHeader again = b.header;
  again.tx_root[0] ^= 1;
  ASSERT_TRUE(SetBlockRandomness(KeyFromByte(7), again, parent).ok());
  EXPECT_EQ(again.randomness, b.header.randomness);
  BlockHeader other_key = b.header;  // another producer's VRF gives another value
  ASSERT_TRUE(SetBlockRandomness(KeyFromByte(8), other_key, parent).ok());
  EXPECT_NE(other_key.randomness, b.header.randomness);
  EXPECT_EQ(VerifyBlockRandomness(other_key, parent).code(), StatusCode::kCorruption)
      << "the proof is checked against the header's producer";
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
