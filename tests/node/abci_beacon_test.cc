// The CometBFT beacon's pieces (node/ledger/abci_beacon.h): vote extensions made and checked with
// real VRF keys, the beacon tx's encoding and every way it is refused, and the derivation.
#include "polnode/ledger/abci_beacon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "polnode/testing/fuzz_seeds.h"
#include "polnode/testing/ledger_fixtures.h"

namespace polnode::node {
namespace {

using consensus::Hash256;
using polnode::testing::KeyFromByte;

constexpr char kChain[] = "beacon-test";

std::string Address(char c) { return std::string(kValidatorAddressBytes, c); }

// Four validators of power 10 each, addresses "aaa...", "bbb...", ... with VRF keys 1..4.
struct Net {
  Net() {
    for (int i = 0; i < 4; ++i) {
      keys.emplace(Address(static_cast<char>('a' + i)), KeyFromByte(static_cast<std::uint8_t>(i + 1)).PublicKey());
      powers[Address(static_cast<char>('a' + i))] = 10;
    }
    alpha = BeaconAlpha(kChain, 7, GenesisBeacon(kChain));
  }
  // Validator i's extension on `on`.
  std::string Extension(int i, const std::vector<std::uint8_t>& on) const {
    Result<std::string> e = MakeBeaconExtension(KeyFromByte(static_cast<std::uint8_t>(i + 1)), on);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : std::string();
  }
  ExtendedVote Vote(int i) const { return ExtendedVote{Address(static_cast<char>('a' + i)), Extension(i, alpha)}; }
  BeaconEntry Entry(int i) const {
    BeaconEntry e;
    e.address = Address(static_cast<char>('a' + i));
    const std::string proof = Extension(i, alpha);
    std::copy(proof.begin(), proof.end(), e.proof.begin());
    return e;
  }

  BeaconKeys keys;
  VotingPowers powers;
  std::vector<std::uint8_t> alpha;
};

TEST(AbciBeaconTest, ExtensionVerifiesUnderItsKeyOnly) {
  Net net;
  const std::string ext = net.Extension(0, net.alpha);
  ASSERT_EQ(ext.size(), consensus::kVrfProofBytes);
  Result<Hash256> out = VerifyBeaconExtension(net.keys, Address('a'), ext, net.alpha);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Deterministic: the same key and alpha give the same proof and output.
  EXPECT_EQ(net.Extension(0, net.alpha), ext);
  // Another validator's key, an unknown validator, another height, a flipped bit, a short one.
  EXPECT_EQ(VerifyBeaconExtension(net.keys, Address('b'), ext, net.alpha).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyBeaconExtension(net.keys, Address('z'), ext, net.alpha).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(VerifyBeaconExtension(net.keys, Address('a'), ext, BeaconAlpha(kChain, 8, GenesisBeacon(kChain))).ok());
  std::string flipped = ext;
  flipped[40] = static_cast<char>(flipped[40] ^ 1);
  EXPECT_FALSE(VerifyBeaconExtension(net.keys, Address('a'), flipped, net.alpha).ok());
  EXPECT_FALSE(VerifyBeaconExtension(net.keys, Address('a'), ext.substr(1), net.alpha).ok());
  EXPECT_FALSE(VerifyBeaconExtension(net.keys, Address('a'), "", net.alpha).ok());
}

TEST(AbciBeaconTest, AlphaBindsChainHeightAndPreviousRandomness) {
  const Hash256 r = GenesisBeacon(kChain);
  EXPECT_NE(BeaconAlpha(kChain, 7, r), BeaconAlpha("other", 7, r));
  EXPECT_NE(BeaconAlpha(kChain, 7, r), BeaconAlpha(kChain, 8, r));
  EXPECT_NE(BeaconAlpha(kChain, 7, r), BeaconAlpha(kChain, 7, GenesisBeacon("other")));
  // The chain id is length-prefixed: moving bytes between it and the height changes alpha.
  EXPECT_NE(BeaconAlpha("ab", 7, r), BeaconAlpha("a", 7, r));
  EXPECT_NE(GenesisBeacon(kChain), GenesisBeacon("other"));
}

TEST(AbciBeaconTest, BeaconIsTheHashOfTheOutputsInAddressOrder) {
  Net net;
  // Offered out of order, with a duplicate and one extension that does not verify: the tx has
  // the three valid ones, sorted.
  std::vector<ExtendedVote> votes = {net.Vote(2), net.Vote(0), net.Vote(0), net.Vote(1)};
  ExtendedVote bad = net.Vote(3);
  bad.extension[5] = static_cast<char>(bad.extension[5] ^ 1);
  votes.push_back(bad);
  Result<std::string> tx = BuildBeaconTx(votes, net.keys, net.powers, net.alpha);
  ASSERT_TRUE(tx.ok()) << tx.status().ToString();
  EXPECT_EQ(*tx, EncodeBeaconTx({net.Entry(0), net.Entry(1), net.Entry(2)}));
  EXPECT_TRUE(IsBeaconTx(*tx));
  Result<Hash256> beacon = VerifyBeaconTx(*tx, net.keys, net.powers, net.alpha);
  ASSERT_TRUE(beacon.ok()) << beacon.status().ToString();
  // The derivation written out: SHA-256 of the tag and the three outputs in address order.
  consensus::Sha256Hasher h;
  h.Update(std::string_view("polnode/abci-beacon/v2/block"));
  for (int i = 0; i < 3; ++i) h.Update(*VerifyBeaconExtension(net.keys, Address(static_cast<char>('a' + i)), net.Extension(i, net.alpha), net.alpha));
  EXPECT_EQ(*beacon, h.Finalize());
  // Another subset of more than 2/3 is another valid beacon: the proposer's only choice.
  const std::string all = EncodeBeaconTx({net.Entry(0), net.Entry(1), net.Entry(2), net.Entry(3)});
  Result<Hash256> beacon_all = VerifyBeaconTx(all, net.keys, net.powers, net.alpha);
  ASSERT_TRUE(beacon_all.ok()) << beacon_all.status().ToString();
  EXPECT_NE(*beacon_all, *beacon);
}

TEST(AbciBeaconTest, RefusesTooLittlePower) {
  Net net;
  // 2 of 4 equal validators: exactly half.
  EXPECT_EQ(BuildBeaconTx({net.Vote(0), net.Vote(1)}, net.keys, net.powers, net.alpha).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(VerifyBeaconTx(EncodeBeaconTx({net.Entry(0), net.Entry(1)}), net.keys, net.powers, net.alpha).status().code(),
            StatusCode::kInvalidArgument);
  // Exactly 2/3 is not more than 2/3: 3 validators of power 10 against a fourth of power 15.
  net.powers[Address('d')] = 15;
  EXPECT_FALSE(VerifyBeaconTx(EncodeBeaconTx({net.Entry(0), net.Entry(1), net.Entry(2)}), net.keys, net.powers, net.alpha).ok());
  // The heavy validator with two others is enough.
  EXPECT_TRUE(VerifyBeaconTx(EncodeBeaconTx({net.Entry(0), net.Entry(1), net.Entry(3)}), net.keys, net.powers, net.alpha).ok());
}

TEST(AbciBeaconTest, RefusesDuplicateUnsortedUnknownAndBadProofs) {
  Net net;
  const auto code = [&](const std::string& tx) { return VerifyBeaconTx(tx, net.keys, net.powers, net.alpha).status().code(); };
  EXPECT_EQ(code(EncodeBeaconTx({net.Entry(0), net.Entry(0), net.Entry(1), net.Entry(2)})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(EncodeBeaconTx({net.Entry(1), net.Entry(0), net.Entry(2)})), StatusCode::kInvalidArgument);
  // A validator not in the last commit's set, though its key is registered.
  net.powers.erase(Address('d'));
  net.powers[Address('e')] = 10;
  EXPECT_EQ(code(EncodeBeaconTx({net.Entry(0), net.Entry(1), net.Entry(3)})), StatusCode::kInvalidArgument);
  // A validator of the set without a registered key.
  BeaconEntry e = net.Entry(2);
  e.address = Address('e');
  EXPECT_EQ(code(EncodeBeaconTx({net.Entry(0), net.Entry(1), e})), StatusCode::kInvalidArgument);
  // A proof made with another validator's key under a valid validator's address.
  BeaconEntry swapped = net.Entry(3);
  swapped.address = Address('c');
  EXPECT_EQ(code(EncodeBeaconTx({net.Entry(0), net.Entry(1), swapped})), StatusCode::kInvalidArgument);
  // A proof for another height.
  BeaconEntry stale = net.Entry(2);
  const std::string old = net.Extension(2, BeaconAlpha(kChain, 6, GenesisBeacon(kChain)));
  std::copy(old.begin(), old.end(), stale.proof.begin());
  EXPECT_EQ(code(EncodeBeaconTx({net.Entry(0), net.Entry(1), stale})), StatusCode::kInvalidArgument);
}

TEST(AbciBeaconTest, DecodeRefusesMalformedTxs) {
  Net net;
  const std::string good = EncodeBeaconTx({net.Entry(0), net.Entry(1), net.Entry(2)});
  ASSERT_TRUE(DecodeBeaconTx(good).ok());
  EXPECT_FALSE(DecodeBeaconTx("").ok());
  EXPECT_FALSE(DecodeBeaconTx(std::string(1, '\0')).ok());          // no entry
  EXPECT_FALSE(DecodeBeaconTx(good.substr(0, good.size() - 1)).ok());  // truncated
  EXPECT_FALSE(DecodeBeaconTx(good + "x").ok());                    // trailing byte
  EXPECT_FALSE(DecodeBeaconTx("\x01" + good.substr(1)).ok());       // another prefix
  EXPECT_FALSE(IsBeaconTx("\x0a\x01"));
  Result<std::vector<BeaconEntry>> entries = DecodeBeaconTx(good);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[2].address, Address('c'));
  EXPECT_EQ((*entries)[2].proof, net.Entry(2).proof);
}

// fuzz/corpus/beacon_tx: the seeds of fuzz/targets/beacon_tx.cc, made for four validators whose VRF
// secrets are 32 bytes of 0x31, 0x32, 0x33, 0x34, power 10 each, at height 7 after R(1).
TEST(AbciBeaconTest, FuzzSeedsMeanWhatTheirNamesSay) {
  BeaconKeys keys;
  VotingPowers powers;
  for (int i = 0; i < 4; ++i) {
    std::array<std::uint8_t, 32> secret{};
    secret.fill(static_cast<std::uint8_t>(0x31 + i));
    keys.emplace(Address(static_cast<char>('a' + i)), consensus::SecretKey::FromBytes(secret)->PublicKey());
    powers[Address(static_cast<char>('a' + i))] = 10;
  }
  const std::vector<std::uint8_t> alpha = BeaconAlpha("polnode-fuzz", 7, GenesisBeacon("polnode-fuzz"));
  const auto verify = [&](std::string_view name) {
    return VerifyBeaconTx(polnode::testing::FuzzSeed("beacon_tx", name), keys, powers, alpha);
  };
  EXPECT_TRUE(verify("valid-three").ok());
  EXPECT_TRUE(verify("valid-four").ok());
  for (const char* bad : {"too-little-power", "unsorted", "duplicate", "truncated", "prefix-only", "empty", "bad-proof"}) {
    EXPECT_EQ(verify(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(DecodeBeaconTx(polnode::testing::FuzzSeed("beacon_tx", "bad-proof")).ok());
  EXPECT_TRUE(DecodeBeaconTx(polnode::testing::FuzzSeed("beacon_tx", "too-little-power")).ok());
}

}  // namespace
}  // namespace polnode::node
