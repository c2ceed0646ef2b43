#include "polnode/consensus/vrf.h"

#include <openssl/crypto.h>
#include <secp256k1.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "secp_context.h"

namespace polnode::consensus {
namespace {

constexpr std::string_view kSuite = "polnode/ecvrf-secp256k1-sha256-tai/v1";
using Point33 = std::array<std::uint8_t, 33>;
using Scalar = std::array<std::uint8_t, 32>;

// A scalar that wipes itself: nonces and secrets.
struct SecretScalar {
  Scalar bytes{};
  ~SecretScalar() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

Point33 Serialize(const secp256k1_pubkey& point) {
  Point33 out{};
  std::size_t len = out.size();
  secp256k1_ec_pubkey_serialize(SecpContext(), out.data(), &len, &point, SECP256K1_EC_COMPRESSED);
  return out;
}

bool Parse(std::span<const std::uint8_t> bytes, secp256k1_pubkey& point) {
  return secp256k1_ec_pubkey_parse(SecpContext(), &point, bytes.data(), bytes.size()) == 1;
}

// Y: the even-y point of an x-only key.
secp256k1_pubkey EvenPoint(const XOnlyPublicKey& key) {
  Point33 compressed{};
  compressed[0] = 0x02;
  std::copy(key.bytes().begin(), key.bytes().end(), compressed.begin() + 1);
  secp256k1_pubkey point;
  // The key parsed as an x-only key, so its even-y point exists.
  Parse(compressed, point);
  return point;
}

void Absorb(Sha256Hasher& h, std::span<const std::uint8_t> bytes) { h.Update(bytes); }
void Absorb(Sha256Hasher& h, std::uint8_t byte) { h.Update(std::span<const std::uint8_t>(&byte, 1)); }

Result<secp256k1_pubkey> HashToCurve(const Point33& y, std::span<const std::uint8_t> alpha) {
  for (int ctr = 0; ctr < 256; ++ctr) {
    Sha256Hasher h;
    h.Update(kSuite);
    Absorb(h, 0x01);
    Absorb(h, y);
    Absorb(h, alpha);
    Absorb(h, static_cast<std::uint8_t>(ctr));
    const Hash256 x = h.Finalize();
    Point33 candidate{};
    candidate[0] = 0x02;
    std::copy(x.begin(), x.end(), candidate.begin() + 1);
    secp256k1_pubkey point;
    if (Parse(candidate, point)) return point;
  }
  // Each try succeeds with probability about 1/2.
  return Status::Internal("hash to curve found no point in 256 tries");
}

std::array<std::uint8_t, 16> Challenge(const Point33& y, const Point33& h, const Point33& gamma, const Point33& u,
                                       const Point33& v) {
  Sha256Hasher hasher;
  hasher.Update(kSuite);
  Absorb(hasher, 0x02);
  for (const Point33* p : {&y, &h, &gamma, &u, &v}) Absorb(hasher, *p);
  Absorb(hasher, 0x00);
  const Hash256 digest = hasher.Finalize();
  std::array<std::uint8_t, 16> c{};
  std::copy(digest.begin(), digest.begin() + 16, c.begin());
  return c;
}

Scalar WideChallenge(std::span<const std::uint8_t, 16> c) {
  Scalar wide{};
  std::copy(c.begin(), c.end(), wide.begin() + 16);
  return wide;
}

Hash256 Output(const Point33& gamma) {
  Sha256Hasher h;
  h.Update(kSuite);
  Absorb(h, 0x03);
  Absorb(h, gamma);
  Absorb(h, 0x00);
  return h.Finalize();
}

// a * P - b * Q, or nullopt when a factor is not a valid scalar or the result is the point at
// infinity.
std::optional<secp256k1_pubkey> Difference(const Scalar& a, const secp256k1_pubkey* p, const Scalar& b,
                                           secp256k1_pubkey q) {
  const secp256k1_context* ctx = SecpContext();
  secp256k1_pubkey ap;
  if (p == nullptr) {
    if (secp256k1_ec_pubkey_create(ctx, &ap, a.data()) != 1) return std::nullopt;
  } else {
    ap = *p;
    if (secp256k1_ec_pubkey_tweak_mul(ctx, &ap, a.data()) != 1) return std::nullopt;
  }
  if (secp256k1_ec_pubkey_tweak_mul(ctx, &q, b.data()) != 1 || secp256k1_ec_pubkey_negate(ctx, &q) != 1) {
    return std::nullopt;
  }
  const secp256k1_pubkey* terms[] = {&ap, &q};
  secp256k1_pubkey sum;
  if (secp256k1_ec_pubkey_combine(ctx, &sum, terms, 2) != 1) return std::nullopt;
  return sum;
}

}  // namespace

Result<VrfProof> VrfProve(const SecretKey& key, std::span<const std::uint8_t> alpha) {
  const secp256k1_context* ctx = SecpContext();
  SecretScalar x;
  std::copy(key.bytes().begin(), key.bytes().end(), x.bytes.begin());
  secp256k1_pubkey own;
  if (secp256k1_ec_pubkey_create(ctx, &own, x.bytes.data()) != 1) return Status::Internal("invalid secret key");
  // BIP-340 keys name the even-y point: a secret whose point has odd y is negated.
  if (Serialize(own)[0] == 0x03 && secp256k1_ec_seckey_negate(ctx, x.bytes.data()) != 1) {
    return Status::Internal("cannot negate the secret key");
  }
  const secp256k1_pubkey y = EvenPoint(key.PublicKey());
  const Point33 y33 = Serialize(y);
  POLNODE_ASSIGN_OR_RETURN(secp256k1_pubkey h, HashToCurve(y33, alpha));
  const Point33 h33 = Serialize(h);
  secp256k1_pubkey gamma = h;
  if (secp256k1_ec_pubkey_tweak_mul(ctx, &gamma, x.bytes.data()) != 1) return Status::Internal("x * H failed");
  SecretScalar k;
  for (int ctr = 0;; ++ctr) {
    if (ctr == 256) return Status::Internal("no valid nonce");
    Sha256Hasher hasher;
    hasher.Update(kSuite);
    Absorb(hasher, 0x04);
    Absorb(hasher, x.bytes);
    Absorb(hasher, h33);
    Absorb(hasher, static_cast<std::uint8_t>(ctr));
    const Hash256 digest = hasher.Finalize();
    std::copy(digest.begin(), digest.end(), k.bytes.begin());
    if (secp256k1_ec_seckey_verify(ctx, k.bytes.data()) == 1) break;
  }
  secp256k1_pubkey u;
  secp256k1_pubkey v = h;
  if (secp256k1_ec_pubkey_create(ctx, &u, k.bytes.data()) != 1 ||
      secp256k1_ec_pubkey_tweak_mul(ctx, &v, k.bytes.data()) != 1) {
    return Status::Internal("k * G or k * H failed");
  }
  const Point33 gamma33 = Serialize(gamma);
  const std::array<std::uint8_t, 16> c = Challenge(y33, h33, gamma33, Serialize(u), Serialize(v));
  const Scalar c_wide = WideChallenge(c);
  // s = k + c * x (mod n).
  SecretScalar s;
  s.bytes = x.bytes;
  if (secp256k1_ec_seckey_tweak_mul(ctx, s.bytes.data(), c_wide.data()) != 1 ||
      secp256k1_ec_seckey_tweak_add(ctx, s.bytes.data(), k.bytes.data()) != 1) {
    return Status::Internal("s = k + c * x failed");
  }
  VrfProof proof{};
  std::copy(gamma33.begin(), gamma33.end(), proof.begin());
  std::copy(c.begin(), c.end(), proof.begin() + 33);
  std::copy(s.bytes.begin(), s.bytes.end(), proof.begin() + 49);
  return proof;
}

Result<Hash256> VrfVerify(const XOnlyPublicKey& key, std::span<const std::uint8_t> alpha,
                          std::span<const std::uint8_t, kVrfProofBytes> proof) {
  const secp256k1_context* ctx = SecpContext();
  secp256k1_pubkey gamma;
  if (!Parse(proof.subspan<0, 33>(), gamma)) return Status::InvalidArgument("VRF proof: Gamma is not a curve point");
  Scalar s{};
  std::copy(proof.begin() + 49, proof.end(), s.begin());
  if (secp256k1_ec_seckey_verify(ctx, s.data()) != 1) return Status::InvalidArgument("VRF proof: s is out of range");
  const std::span<const std::uint8_t, 16> c = proof.subspan<33, 16>();
  const Scalar c_wide = WideChallenge(c);
  const secp256k1_pubkey y = EvenPoint(key);
  const Point33 y33 = Serialize(y);
  POLNODE_ASSIGN_OR_RETURN(secp256k1_pubkey h, HashToCurve(y33, alpha));
  const std::optional<secp256k1_pubkey> u = Difference(s, nullptr, c_wide, y);
  const std::optional<secp256k1_pubkey> v = Difference(s, &h, c_wide, gamma);
  if (!u || !v) return Status::InvalidArgument("VRF proof: does not verify");
  const Point33 gamma33 = Serialize(gamma);
  const std::array<std::uint8_t, 16> expected = Challenge(y33, Serialize(h), gamma33, Serialize(*u), Serialize(*v));
  if (!std::equal(expected.begin(), expected.end(), c.begin())) {
    return Status::InvalidArgument("VRF proof: does not verify");
  }
  return Output(gamma33);
}

}  // namespace polnode::consensus
