// Target pol_manifest: DecodeManifest + CheckManifestIntegrity on arbitrary bytes. Properties:
// never crashes; failures carry only the documented codes; an accepted manifest re-encodes and
// decodes to the same signing digest.
#include <array>
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/merkle.h"
#include "polnode/solver/proof_manifest.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  Result<solver::ProofManifest> decoded = solver::DecodeManifest(input);
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kResourceExhausted,
                       "DecodeManifest failed with an undocumented status code");
    return;
  }
  const Status integrity = solver::CheckManifestIntegrity(*decoded);
  POLNODE_FUZZ_CHECK(integrity.ok() || integrity.code() == StatusCode::kCorruption,
                     "CheckManifestIntegrity failed with an undocumented status code");
  const std::string wire = solver::EncodeManifest(*decoded);
  Result<solver::ProofManifest> again =
      solver::DecodeManifest(std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()));
  POLNODE_FUZZ_CHECK(again.ok(), "a decoded manifest does not re-decode from its own encoding");
  POLNODE_FUZZ_CHECK(solver::ManifestSigningDigest(*again) == solver::ManifestSigningDigest(*decoded),
                     "re-decoding changed the manifest");
}

std::vector<std::uint8_t> Wire(const solver::ProofManifest& m) {
  const std::string wire = solver::EncodeManifest(m);
  return {wire.begin(), wire.end()};
}

// Signed with a fixed public test key so regenerated seeds are identical.
std::vector<Seed> Seeds() {
  solver::ProofManifest m;
  m.task_id = consensus::Sha256("task");
  m.checkpoint_interval = 2;
  m.steps = 4;
  m.checkpoint_hashes = {consensus::Sha256("c0"), consensus::Sha256("c1"), consensus::Sha256("c2")};
  m.checkpoint_blobs = {consensus::Sha256("b0"), consensus::Sha256("b1"), consensus::Sha256("b2")};
  m.merkle_root = consensus::MerkleRoot(m.checkpoint_hashes);
  m.loss_bits = {0x3f800000, 0x3f000000, 0x3e800000, 0x3e000000};
  m.backend = "reference";
  const std::vector<std::uint8_t> unsigned_wire = Wire(m);
  std::array<std::uint8_t, 32> key{};
  key.fill(0x55);
  Result<consensus::SecretKey> secret = consensus::SecretKey::FromBytes(key);
  if (secret.ok()) static_cast<void>(solver::SignManifest(m, *secret));
  const std::vector<std::uint8_t> signed_wire = Wire(m);
  m.merkle_root[0] ^= 1;
  const std::vector<std::uint8_t> bad_root = Wire(m);
  m.merkle_root[0] ^= 1;
  m.checkpoint_blobs.pop_back();
  const std::vector<std::uint8_t> missing_blob = Wire(m);
  std::vector<std::uint8_t> truncated(signed_wire.begin(), signed_wire.begin() + static_cast<long>(signed_wire.size() / 2));
  return {
      {"valid-unsigned", unsigned_wire},
      {"valid-signed", signed_wire},
      {"bad-merkle-root", bad_root},
      {"missing-blob-hash", missing_blob},
      {"truncated", truncated},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(pol_manifest, Run, Seeds);

}  // namespace polnode::fuzz
