// The committed fuzz seed corpora (fuzz/corpus/) still mean what their names say. If a format
// changes, these fail and the seeds must be regenerated:
//   build/fuzz/fuzz/polnode_fuzz --write-seeds=fuzz/corpus
// Stale seeds would not make fuzzing fail, only quietly start it from rejected inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/testing/fuzz_seeds.h"

namespace polnode::consensus {
namespace {

using polnode::testing::FuzzSeed;

TEST(FuzzCorpusTest, TxEnvelopeSeeds) {
  for (const char* name : {"valid-basic", "valid-defaults-omitted", "valid-wide-fields"}) {
    Result<TxEnvelope> e = DecodeEnvelope(FuzzSeed("tx_envelope", name));
    ASSERT_TRUE(e.ok()) << name << ": " << e.status().ToString();
    EXPECT_TRUE(VerifyEnvelope(*e).ok()) << name;
  }
  for (const char* name : {"bad-signature", "signature-for-other-nonce"}) {
    Result<TxEnvelope> e = DecodeEnvelope(FuzzSeed("tx_envelope", name));
    ASSERT_TRUE(e.ok()) << name << ": " << e.status().ToString();
    EXPECT_EQ(VerifyEnvelope(*e).code(), StatusCode::kCorruption) << name;
  }
  for (const char* name : {"truncated", "unknown-field", "fields-out-of-order"}) {
    EXPECT_EQ(DecodeEnvelope(FuzzSeed("tx_envelope", name)).status().code(), StatusCode::kCorruption) << name;
  }
}

TEST(FuzzCorpusTest, MerkleProofSeeds) {
  // The fixed tree of fuzz/targets/merkle_proof.cc.
  std::vector<Hash256> leaves;
  for (std::uint64_t i = 0; i < 13; ++i) {
    HashWriter w;
    w.String("polnode/fuzz/merkle-leaf");
    w.U64(i);
    leaves.push_back(w.Finalize());
  }
  const Hash256 root = MerkleRoot(leaves);
  auto check = [&](const std::string& name) -> Status {
    const std::string seed = FuzzSeed("merkle_proof", name);
    if (seed.size() < 32) return Status::InvalidArgument("shorter than a leaf");
    Hash256 leaf{};
    std::copy_n(seed.begin(), 32, leaf.begin());
    const std::vector<std::uint8_t> proof_bytes(seed.begin() + 32, seed.end());
    POLNODE_ASSIGN_OR_RETURN(MerkleProof proof, ParseMerkleProof(proof_bytes));
    return VerifyMerkleProof(root, leaf, proof);
  };
  for (const char* name : {"valid-leaf-0", "valid-leaf-5", "valid-leaf-12"}) {
    EXPECT_TRUE(check(name).ok()) << name << ": " << check(name).ToString();
  }
  EXPECT_EQ(check("wrong-leaf").code(), StatusCode::kCorruption);
  EXPECT_EQ(check("wrong-count").code(), StatusCode::kCorruption);
  for (const char* name : {"bad-version", "trailing-byte", "truncated"}) {
    EXPECT_EQ(check(name).code(), StatusCode::kCorruption) << name;
  }
}

}  // namespace
}  // namespace polnode::consensus
