// The block producer's VRF (vrf.h): proofs verify to one output per (key, input), and every
// altered proof, input or key is refused.
#include "polnode/consensus/vrf.h"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

namespace polnode::consensus {
namespace {

SecretKey KeyFromByte(std::uint8_t b) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(b);
  return *SecretKey::FromBytes(bytes);
}

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(VrfTest, ProofsVerifyToADeterministicOutputForKeysOfBothParities) {
  std::set<Hash256> outputs;
  for (std::uint8_t b = 1; b <= 12; ++b) {  // secrets whose points have odd y are among them
    const SecretKey key = KeyFromByte(b);
    Result<VrfProof> proof = VrfProve(key, Bytes("height 7"));
    ASSERT_TRUE(proof.ok()) << proof.status().ToString();
    EXPECT_EQ(*VrfProve(key, Bytes("height 7")), *proof) << "deterministic";
    Result<Hash256> beta = VrfVerify(key.PublicKey(), Bytes("height 7"), *proof);
    ASSERT_TRUE(beta.ok()) << "key " << int(b) << ": " << beta.status().ToString();
    outputs.insert(*beta);
    Result<Hash256> other = VrfVerify(key.PublicKey(), Bytes("height 8"), *VrfProve(key, Bytes("height 8")));
    ASSERT_TRUE(other.ok());
    EXPECT_NE(*other, *beta);
  }
  EXPECT_EQ(outputs.size(), 12u) << "distinct keys give distinct outputs";
}

TEST(VrfTest, AlteredProofsInputsAndKeysAreRefused) {
  const SecretKey key = KeyFromByte(3);
  const VrfProof proof = *VrfProve(key, Bytes("alpha"));
  EXPECT_EQ(VrfVerify(key.PublicKey(), Bytes("alphb"), proof).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VrfVerify(KeyFromByte(4).PublicKey(), Bytes("alpha"), proof).status().code(),
            StatusCode::kInvalidArgument);
  for (std::size_t i = 0; i < proof.size(); ++i) {
    VrfProof altered = proof;
    altered[i] ^= 0x01;
    EXPECT_FALSE(VrfVerify(key.PublicKey(), Bytes("alpha"), altered).ok()) << "byte " << i;
  }
  VrfProof zero_s = proof;
  std::fill(zero_s.begin() + 49, zero_s.end(), 0);
  EXPECT_EQ(VrfVerify(key.PublicKey(), Bytes("alpha"), zero_s).status().code(), StatusCode::kInvalidArgument);
  VrfProof big_s = proof;
  std::fill(big_s.begin() + 49, big_s.end(), 0xFF);
  EXPECT_EQ(VrfVerify(key.PublicKey(), Bytes("alpha"), big_s).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::consensus
