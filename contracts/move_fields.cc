#include "move_fields.h"

#include <cstring>

namespace polnode::contracts {

Result<consensus::Hash256> HashField(std::string_view bytes, std::string_view what) {
  consensus::Hash256 h;
  if (bytes.size() != h.size()) return Status::InvalidArgument(std::string(what) + " must be 32 bytes");
  std::memcpy(h.data(), bytes.data(), h.size());
  return h;
}

Result<std::vector<consensus::Hash256>> SiblingsField(const google::protobuf::RepeatedPtrField<std::string>& siblings) {
  std::vector<consensus::Hash256> path;
  path.reserve(static_cast<std::size_t>(siblings.size()));
  for (const std::string& s : siblings) {
    POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 h, HashField(s, "sibling"));
    path.push_back(h);
  }
  return path;
}

Result<consensus::MerkleProof> ProofField(std::string_view bytes, std::string_view what) {
  Result<consensus::MerkleProof> proof =
      consensus::ParseMerkleProof(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  if (!proof.ok()) return Status::InvalidArgument(std::string(what) + ": " + proof.status().message());
  return proof;
}

}  // namespace polnode::contracts
