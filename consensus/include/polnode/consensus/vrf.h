// A verifiable random function on secp256k1: the block producer's randomness (DESIGN.md section
// 7), which it can compute but not choose.
//
// Construction: ECVRF as in RFC 9381 (section 5), instantiated on secp256k1 with SHA-256 and the
// try-and-increment hash to curve, under the suite string "polnode/ecvrf-secp256k1-sha256-tai/v1"
// (RFC 9381 defines no secp256k1 suite; the steps are the RFC's):
//   H     = hash_to_curve(Y, alpha): the first x = SHA-256(suite, 0x01, Y, alpha, ctr), ctr = 0, 1,
//           ..., that is a curve point with even y
//   Gamma = x * H;  k = a secret nonce from SHA-256(suite, x, H);  U = k * G;  V = k * H
//   c     = the first 16 bytes of SHA-256(suite, 0x02, Y, H, Gamma, U, V, 0x00)
//   s     = k + c * x  (mod n)
//   proof = Gamma (33 bytes compressed) || c (16 bytes) || s (32 bytes): 81 bytes
//   beta  = SHA-256(suite, 0x03, Gamma, 0x00): the output
// Verification recomputes U = s * G - c * Y and V = s * H - c * Gamma and checks c. The key is a
// BIP-340 x-only key (keys.h): Y is its even-y point, and a secret whose point has odd y is negated
// first, as BIP-340 signing does.
//
// Properties relied on: for a given key and alpha there is exactly one output any valid proof can
// give (uniqueness), so the holder of the key cannot grind it; without the key the output is
// unpredictable.
#ifndef POLNODE_CONSENSUS_VRF_H_
#define POLNODE_CONSENSUS_VRF_H_

#include <array>
#include <cstdint>
#include <span>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

inline constexpr std::size_t kVrfProofBytes = 81;
using VrfProof = std::array<std::uint8_t, kVrfProofBytes>;

/// The proof of the VRF output of `key` on `alpha` (any length). Deterministic. kInternal only if
/// libsecp256k1 refuses an operation on valid inputs (it should not).
[[nodiscard]] Result<VrfProof> VrfProve(const SecretKey& key, std::span<const std::uint8_t> alpha);

/// The output (beta) that `proof` proves for `key` on `alpha`, or kInvalidArgument when the proof
/// does not verify (malformed Gamma, c or s out of range, or a wrong challenge).
[[nodiscard]] Result<Hash256> VrfVerify(const XOnlyPublicKey& key, std::span<const std::uint8_t> alpha,
                                        std::span<const std::uint8_t, kVrfProofBytes> proof);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_VRF_H_
