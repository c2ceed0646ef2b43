// Keys and BIP-340 Schnorr signatures: the official test vectors (tests/consensus/data/
// bip340_vectors.csv, typed from bitcoin/bips bip-0340/test-vectors.csv including the
// variable-length message vectors added 2022-12), and the properties around them.
#include "polnode/consensus/keys.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "consensus_test_util.h"

namespace polnode::consensus {
namespace {

using testing::Unhex;

struct Bip340Vector {
  int index = 0;
  std::string secret_key;  // empty: verification-only vector
  std::string public_key;
  std::string aux_rand;
  std::string message;
  std::string signature;
  bool valid = false;
  std::string comment;
};

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();  // getline drops a trailing empty field
  return fields;
}

std::vector<Bip340Vector> LoadVectors() {
  const std::string path = std::string(POLNODE_SOURCE_DIR) + "/tests/consensus/data/bip340_vectors.csv";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<Bip340Vector> vectors;
  std::string line;
  std::getline(in, line);  // header
  EXPECT_EQ(line, "index,secret key,public key,aux_rand,message,signature,verification result,comment");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f = SplitCsvLine(line);
    EXPECT_EQ(f.size(), 8u) << line;
    if (f.size() != 8) continue;
    EXPECT_TRUE(f[6] == "TRUE" || f[6] == "FALSE") << line;
    vectors.push_back({std::stoi(f[0]), f[1], f[2], f[3], f[4], f[5], f[6] == "TRUE", f[7]});
  }
  return vectors;
}

std::array<std::uint8_t, 32> Array32(std::string_view hex) {
  std::array<std::uint8_t, 32> out{};
  EXPECT_TRUE(HexToFixed(hex, out).ok()) << hex;
  return out;
}

SchnorrSignature Signature(std::string_view hex) {
  SchnorrSignature out{};
  EXPECT_TRUE(HexToFixed(hex, out).ok()) << hex;
  return out;
}

TEST(Bip340VectorsTest, FileHasEveryOfficialVector) {
  const std::vector<Bip340Vector> vectors = LoadVectors();
  ASSERT_EQ(vectors.size(), 19u);
  int must_fail = 0;
  int signing = 0;
  std::set<std::size_t> message_sizes;
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    EXPECT_EQ(vectors[i].index, static_cast<int>(i));
    must_fail += vectors[i].valid ? 0 : 1;
    signing += vectors[i].secret_key.empty() ? 0 : 1;
    message_sizes.insert(vectors[i].message.size() / 2);
  }
  EXPECT_EQ(must_fail, 10);
  EXPECT_EQ(signing, 8);
  EXPECT_EQ(message_sizes, (std::set<std::size_t>{0, 1, 17, 32, 100}));
}

TEST(Bip340VectorsTest, VerificationMatchesExpectedResult) {
  for (const Bip340Vector& v : LoadVectors()) {
    SCOPED_TRACE(::testing::Message() << "vector " << v.index << " (" << v.comment << ")");
    const std::vector<std::uint8_t> msg = Unhex(v.message);
    Result<XOnlyPublicKey> key = XOnlyPublicKey::FromBytes(Array32(v.public_key));
    if (!key.ok()) {
      // Only the vectors whose point is the invalid public key may fail to parse.
      EXPECT_FALSE(v.valid);
      EXPECT_NE(v.comment.find("public key"), std::string::npos);
      EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
      continue;
    }
    EXPECT_EQ(VerifySchnorr(*key, msg, Signature(v.signature)), v.valid);
  }
}

TEST(Bip340VectorsTest, SigningReproducesSignaturesByteForByte) {
  int signed_count = 0;
  for (const Bip340Vector& v : LoadVectors()) {
    if (v.secret_key.empty()) continue;
    SCOPED_TRACE(::testing::Message() << "vector " << v.index);
    Result<SecretKey> sk = SecretKey::FromBytes(Array32(v.secret_key));
    ASSERT_TRUE(sk.ok()) << sk.status().ToString();
    EXPECT_EQ(ToHex(sk->PublicKey().bytes()), ToHex(Unhex(v.public_key)));
    Result<SchnorrSignature> sig = SignSchnorr(*sk, Unhex(v.message), Array32(v.aux_rand));
    ASSERT_TRUE(sig.ok()) << sig.status().ToString();
    EXPECT_EQ(ToHex(*sig), ToHex(Unhex(v.signature)));
    ++signed_count;
  }
  EXPECT_EQ(signed_count, 8);
}

constexpr std::string_view kCurveOrder = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141";
constexpr std::string_view kCurveOrderMinusOne = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364140";

TEST(SecretKeyTest, RangeIsOneToOrderMinusOne) {
  EXPECT_EQ(SecretKey::FromBytes(Array32(std::string(64, '0'))).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SecretKey::FromBytes(Array32(kCurveOrder)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SecretKey::FromBytes(Array32(std::string(64, 'F'))).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(SecretKey::FromBytes(Array32(kCurveOrderMinusOne)).ok());
  EXPECT_TRUE(SecretKey::FromBytes(Array32(std::string(63, '0') + "1")).ok());
}

TEST(SecretKeyTest, GeneratedKeysAreDistinctAndSign) {
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    Result<SecretKey> key = SecretKey::Generate();
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    EXPECT_TRUE(seen.insert(ToHex(key->bytes())).second);
    const std::vector<std::uint8_t> msg = {1, 2, 3};
    Result<SchnorrSignature> sig = SignSchnorr(*key, msg);
    ASSERT_TRUE(sig.ok());
    EXPECT_TRUE(VerifySchnorr(key->PublicKey(), msg, *sig));
  }
}

TEST(SecretKeyTest, CopiesAreIndependentAndEqual) {
  Result<SecretKey> key = SecretKey::Generate();
  ASSERT_TRUE(key.ok());
  SecretKey copy = *key;
  EXPECT_EQ(ToHex(copy.bytes()), ToHex(key->bytes()));
  EXPECT_EQ(copy.PublicKey(), key->PublicKey());
  Result<SecretKey> other = SecretKey::Generate();
  ASSERT_TRUE(other.ok());
  copy = *other;
  EXPECT_EQ(copy.PublicKey(), other->PublicKey());
  EXPECT_NE(copy.PublicKey(), key->PublicKey());
}

TEST(SchnorrTest, FreshAuxRandGivesDifferentValidSignatures) {
  Result<SecretKey> key = SecretKey::Generate();
  ASSERT_TRUE(key.ok());
  const std::vector<std::uint8_t> msg(32, 0x5a);
  Result<SchnorrSignature> a = SignSchnorr(*key, msg);
  Result<SchnorrSignature> b = SignSchnorr(*key, msg);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(VerifySchnorr(key->PublicKey(), msg, *a));
  EXPECT_TRUE(VerifySchnorr(key->PublicKey(), msg, *b));
}

TEST(SchnorrTest, AnyChangeBreaksTheSignature) {
  Result<SecretKey> key = SecretKey::Generate();
  Result<SecretKey> other = SecretKey::Generate();
  ASSERT_TRUE(key.ok() && other.ok());
  const std::vector<std::uint8_t> msg = {'p', 'o', 'l'};
  Result<SchnorrSignature> sig = SignSchnorr(*key, msg);
  ASSERT_TRUE(sig.ok());
  EXPECT_FALSE(VerifySchnorr(other->PublicKey(), msg, *sig));
  EXPECT_FALSE(VerifySchnorr(key->PublicKey(), std::vector<std::uint8_t>{'p', 'o', 'k'}, *sig));
  EXPECT_FALSE(VerifySchnorr(key->PublicKey(), std::vector<std::uint8_t>{'p', 'o', 'l', 0}, *sig));
  EXPECT_FALSE(VerifySchnorr(key->PublicKey(), {}, *sig));
  for (std::size_t i = 0; i < sig->size(); ++i) {
    SchnorrSignature bad = *sig;
    bad[i] ^= 0x01;
    EXPECT_FALSE(VerifySchnorr(key->PublicKey(), msg, bad)) << "byte " << i;
  }
}

TEST(XOnlyPublicKeyTest, RejectsNonPoints) {
  // x = p (the field size) and x = 0x...FC30 exceed the field; vector 5's key has no y.
  for (std::string_view x : {"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F",
                             "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30",
                             "EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34"}) {
    EXPECT_EQ(XOnlyPublicKey::FromBytes(Array32(x)).status().code(), StatusCode::kInvalidArgument) << x;
  }
  Result<XOnlyPublicKey> g =
      XOnlyPublicKey::FromBytes(Array32("79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(ToHex(g->bytes()), "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798");
}

// The mempool parses signer keys through a cache: a hit must give what FromBytes gives, and a
// cached key must never make a wrong signature pass.
TEST(XOnlyKeyCacheTest, AHitIsTheParsedKeyAndDecidesNoSignature) {
  XOnlyKeyCache cache(4);
  const SecretKey signer = *SecretKey::FromBytes(Array32("0000000000000000000000000000000000000000000000000000000000000003"));
  const SecretKey other = *SecretKey::FromBytes(Array32("0000000000000000000000000000000000000000000000000000000000000005"));
  const std::array<std::uint8_t, 32> msg{1, 2, 3};
  const SchnorrSignature good = *SignSchnorr(signer, msg);
  Result<XOnlyPublicKey> first = cache.Parse(signer.PublicKey().bytes());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(cache.hits(), 0u);
  Result<XOnlyPublicKey> again = cache.Parse(signer.PublicKey().bytes());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(*again, signer.PublicKey());
  EXPECT_TRUE(VerifySchnorr(*again, msg, good));
  // A cached key with a wrong signature, another key's signature or another message: refused.
  SchnorrSignature flipped = good;
  flipped[40] ^= 0x01;
  EXPECT_FALSE(VerifySchnorr(*again, msg, flipped));
  EXPECT_FALSE(VerifySchnorr(*again, msg, *SignSchnorr(other, msg)));
  const std::array<std::uint8_t, 32> other_msg{1, 2, 4};
  EXPECT_FALSE(VerifySchnorr(*again, other_msg, good));
}

TEST(XOnlyKeyCacheTest, InvalidBytesAreRefusedEveryTimeAndNeverCached) {
  XOnlyKeyCache cache(1);
  const auto bad = Array32("EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cache.Parse(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.hits(), 0u);
}

TEST(XOnlyKeyCacheTest, KeysSharingASetEvictEachOtherAndStayCorrect) {
  XOnlyKeyCache cache(1);  // one set of two slots: three keys in turn evict each other (LRU)
  std::vector<SecretKey> keys;
  for (int i = 1; i <= 3; ++i) {
    std::array<std::uint8_t, 32> b{};
    b[31] = static_cast<std::uint8_t>(i + 10);
    keys.push_back(*SecretKey::FromBytes(b));
  }
  for (int round = 0; round < 2; ++round) {
    for (const SecretKey& k : keys) {
      Result<XOnlyPublicKey> parsed = cache.Parse(k.PublicKey().bytes());
      ASSERT_TRUE(parsed.ok());
      EXPECT_EQ(*parsed, k.PublicKey());
      const std::array<std::uint8_t, 32> msg{7};
      EXPECT_TRUE(VerifySchnorr(*parsed, msg, *SignSchnorr(k, msg)));
    }
  }
  EXPECT_EQ(cache.hits(), 0u);
  EXPECT_TRUE(cache.Parse(keys.back().PublicKey().bytes()).ok());
  EXPECT_EQ(cache.hits(), 1u);
}

TEST(XOnlyKeyCacheTest, ThreadsParsingTheSameKeysAgree) {
  XOnlyKeyCache cache(8);
  std::vector<SecretKey> keys;
  for (int i = 1; i <= 16; ++i) {
    std::array<std::uint8_t, 32> b{};
    b[31] = static_cast<std::uint8_t>(i);
    keys.push_back(*SecretKey::FromBytes(b));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        for (const SecretKey& k : keys) {
          Result<XOnlyPublicKey> parsed = cache.Parse(k.PublicKey().bytes());
          if (!parsed.ok() || !(*parsed == k.PublicKey())) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace polnode::consensus
