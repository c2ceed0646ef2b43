#include "polnode/solver/proof_manifest.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/merkle.h"
#include "polnode/pol.pb.h"

namespace polnode::solver {
namespace {

constexpr std::string_view kManifestDomain = "polnode/pol-manifest/v2";

template <std::size_t N>
bool CopyFixed(const std::string& from, std::array<std::uint8_t, N>& to) {
  if (from.size() != N) return false;
  std::copy(from.begin(), from.end(), to.begin());
  return true;
}

template <std::size_t N>
std::string AsString(const std::array<std::uint8_t, N>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), N);
}

}  // namespace

consensus::Hash256 ManifestSigningDigest(const ProofManifest& m) {
  consensus::HashWriter w;
  w.String(kManifestDomain);
  w.Fixed(m.task_id);
  w.I64(m.checkpoint_interval);
  w.I64(m.steps);
  w.U64(m.checkpoint_hashes.size());
  for (const consensus::Hash256& h : m.checkpoint_hashes) w.Fixed(h);
  w.U64(m.checkpoint_blobs.size());
  for (const consensus::Hash256& h : m.checkpoint_blobs) w.Fixed(h);
  w.Fixed(m.merkle_root);
  w.U64(m.loss_bits.size());
  for (std::uint32_t bits : m.loss_bits) w.U32(bits);
  w.String(m.backend);
  w.Fixed(m.solver_pubkey);
  return w.Finalize();
}

Status SignManifest(ProofManifest& m, const consensus::SecretKey& key) {
  m.solver_pubkey = key.PublicKey().bytes();
  m.is_signed = true;
  const consensus::Hash256 digest = ManifestSigningDigest(m);
  const std::array<std::uint8_t, 32> aux{};
  POLNODE_ASSIGN_OR_RETURN(m.signature, consensus::SignSchnorr(key, digest, aux));
  return Status::Ok();
}

Status CheckManifestIntegrity(const ProofManifest& m) {
  if (m.checkpoint_blobs.size() != m.checkpoint_hashes.size()) {
    return Status::Corruption("manifest has " + std::to_string(m.checkpoint_blobs.size()) + " blob hashes for " +
                              std::to_string(m.checkpoint_hashes.size()) + " checkpoint hashes");
  }
  if (consensus::MerkleRoot(m.checkpoint_hashes) != m.merkle_root) {
    return Status::Corruption("manifest Merkle root does not match its checkpoint hashes");
  }
  if (!m.is_signed) return Status::Ok();
  Result<consensus::XOnlyPublicKey> key = consensus::XOnlyPublicKey::FromBytes(m.solver_pubkey);
  if (!key.ok()) return Status::Corruption("manifest solver key is not a valid public key");
  if (!consensus::VerifySchnorr(*key, ManifestSigningDigest(m), m.signature)) {
    return Status::Corruption("manifest signature does not verify under its solver key");
  }
  return Status::Ok();
}

std::string EncodeManifest(const ProofManifest& m) {
  pol::ProofManifest p;
  p.set_task_id(AsString(m.task_id));
  p.set_checkpoint_interval(m.checkpoint_interval);
  p.set_steps(m.steps);
  for (const consensus::Hash256& h : m.checkpoint_hashes) p.add_checkpoint_hashes(AsString(h));
  for (const consensus::Hash256& h : m.checkpoint_blobs) p.add_checkpoint_blobs(AsString(h));
  p.set_merkle_root(AsString(m.merkle_root));
  for (std::uint32_t bits : m.loss_bits) p.add_loss_bits(bits);
  p.set_backend(m.backend);
  if (m.is_signed) {
    p.set_solver_pubkey(AsString(m.solver_pubkey));
    p.set_signature(AsString(m.signature));
  }
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    // Serializing into a string cannot fail for a message under protobuf's 2 GiB limit, which
    // kMaxCheckpoints keeps manifests far below.
    static_cast<void>(p.SerializeToCodedStream(&coded));
  }
  return out;
}

Result<ProofManifest> DecodeManifest(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > kMaxManifestBytes) return Status::ResourceExhausted("manifest larger than 128 MiB");
  pol::ProofManifest p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("manifest bytes are not a polnode.pol.ProofManifest message");
  }
  ProofManifest m;
  if (!CopyFixed(p.task_id(), m.task_id)) return Status::Corruption("manifest task_id is not 32 bytes");
  if (!CopyFixed(p.merkle_root(), m.merkle_root)) return Status::Corruption("manifest merkle_root is not 32 bytes");
  if (p.checkpoint_interval() < 1 || p.steps() < 0) return Status::Corruption("manifest k or step count out of range");
  m.checkpoint_interval = p.checkpoint_interval();
  m.steps = p.steps();
  m.checkpoint_hashes.resize(static_cast<std::size_t>(p.checkpoint_hashes_size()));
  for (int i = 0; i < p.checkpoint_hashes_size(); ++i) {
    if (!CopyFixed(p.checkpoint_hashes(i), m.checkpoint_hashes[static_cast<std::size_t>(i)])) {
      return Status::Corruption("manifest checkpoint hash " + std::to_string(i) + " is not 32 bytes");
    }
  }
  m.checkpoint_blobs.resize(static_cast<std::size_t>(p.checkpoint_blobs_size()));
  for (int i = 0; i < p.checkpoint_blobs_size(); ++i) {
    if (!CopyFixed(p.checkpoint_blobs(i), m.checkpoint_blobs[static_cast<std::size_t>(i)])) {
      return Status::Corruption("manifest checkpoint blob hash " + std::to_string(i) + " is not 32 bytes");
    }
  }
  m.loss_bits.assign(p.loss_bits().begin(), p.loss_bits().end());
  m.backend = p.backend();
  const bool has_key = !p.solver_pubkey().empty();
  const bool has_sig = !p.signature().empty();
  if (has_key != has_sig) return Status::Corruption("manifest has a solver key without a signature or the reverse");
  if (has_key) {
    if (!CopyFixed(p.solver_pubkey(), m.solver_pubkey)) return Status::Corruption("manifest solver key is not 32 bytes");
    if (!CopyFixed(p.signature(), m.signature)) return Status::Corruption("manifest signature is not 64 bytes");
    m.is_signed = true;
  }
  return m;
}

}  // namespace polnode::solver
