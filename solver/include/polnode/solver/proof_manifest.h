// The manifest of a proof of learning (DESIGN.md section 5): which task, k, the checkpoints in
// order, named twice (their state hashes, version 2 of solver/train_state.h, over which the Merkle
// root is taken and which the ledger and disputes name; and the content hashes of their blobs,
// SHA-256 of the EncodeState bytes, by which a BlobStore or an HTTP server serves them), every
// step's loss, the backend, and the solver's BIP-340 signature. Stored as protobuf
// polnode.pol.ProofManifest; signed over the canonical encoding
//   String "polnode/pol-manifest/v2", Fixed task_id, I64 k, I64 steps,
//   U64 checkpoint count, Fixed each state hash, U64 blob count, Fixed each blob hash,
//   Fixed merkle_root, U64 loss count, U32 each loss's bits, String backend, Fixed solver_pubkey
// whose SHA-256 is the signed message.
#ifndef POLNODE_SOLVER_PROOF_MANIFEST_H_
#define POLNODE_SOLVER_PROOF_MANIFEST_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"

namespace polnode::solver {

/// Largest manifest accepted from outside.
inline constexpr std::size_t kMaxManifestBytes = std::size_t{128} << 20;

struct ProofManifest {
  consensus::Hash256 task_id{};
  std::int64_t checkpoint_interval = 0;
  std::int64_t steps = 0;
  std::vector<consensus::Hash256> checkpoint_hashes;  // state hashes, checkpoint 0 (step 0) first
  std::vector<consensus::Hash256> checkpoint_blobs;   // blob content hashes, same order and count
  consensus::Hash256 merkle_root{};
  std::vector<std::uint32_t> loss_bits;  // IEEE-754 bits of each step's loss
  std::string backend;
  bool is_signed = false;
  std::array<std::uint8_t, 32> solver_pubkey{};
  consensus::SchnorrSignature signature{};
};

/// SHA-256 of the canonical encoding above (the message the solver signs).
consensus::Hash256 ManifestSigningDigest(const ProofManifest& manifest);

/// Sets the public key and signs. Deterministic (fixed auxiliary randomness) so that a resumed
/// run produces a byte-identical manifest; BIP-340 nonces still depend on the secret key.
[[nodiscard]] Status SignManifest(ProofManifest& manifest, const consensus::SecretKey& key);

/// Checks what a manifest can prove about itself: one blob hash per checkpoint hash, the Merkle
/// root equals MerkleRoot over the checkpoint (state) hashes, and a signed manifest's signature
/// verifies under its public key. That each blob decodes to a state with its checkpoint's state
/// hash takes the blobs (verifier::ReplaySegment checks it).
/// kCorruption naming the failed check. An unsigned manifest passes: this is self-consistency
/// only, and whether a signature is required is the caller's policy (verifier::VerifyProof
/// requires one).
[[nodiscard]] Status CheckManifestIntegrity(const ProofManifest& manifest);

/// Deterministic protobuf wire form.
std::string EncodeManifest(const ProofManifest& manifest);
/// Decodes untrusted bytes: kResourceExhausted above kMaxManifestBytes; kCorruption for bytes
/// that are not the message, a hash or key of the wrong size, a signature without a key (or the
/// reverse), or negative counts. Does not check the blob count, root or signature
/// (CheckManifestIntegrity).
Result<ProofManifest> DecodeManifest(std::span<const std::uint8_t> bytes);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_PROOF_MANIFEST_H_
