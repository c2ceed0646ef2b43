#include "keys.h"

#include <cstdio>

namespace polnode::contracts {
namespace {

// 16 lowercase hex digits, so that bytewise key order is numeric order.
std::string FixedHex64(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return std::string(buffer, 16);
}

}  // namespace

std::string_view RoleName(proto::Role role) {
  switch (role) {
    case proto::ROLE_SOLVER:
      return "solver";
    case proto::ROLE_VERIFIER:
      return "verifier";
    case proto::ROLE_WHISTLEBLOWER:
      return "whistleblower";
    default:
      return "unspecified";
  }
}

std::string AccountKey(std::string_view pubkey) { return std::string(kAccountPrefix) + ToHex(pubkey); }

std::string StakeKey(proto::Role role, std::string_view pubkey) {
  return std::string(kStakePrefix) + std::string(RoleName(role)) + "/" + ToHex(pubkey);
}

std::string TaskKey(std::string_view task_id) { return std::string(kTaskPrefix) + ToHex(task_id); }

std::string TaskSeqKey(std::uint64_t seq) { return std::string(kTaskSeqPrefix) + FixedHex64(seq); }

std::string DueKey(std::uint64_t height) { return std::string(kDuePrefix) + FixedHex64(height); }

std::string GameKey(std::string_view task_id, std::string_view challenger) {
  return std::string(kGamePrefix) + ToHex(task_id) + "/" + ToHex(challenger);
}

std::string SpecKey(std::string_view spec_hash) { return std::string(kSpecPrefix) + ToHex(spec_hash); }

std::string PublishKey(std::string_view task_id, std::uint64_t checkpoint) {
  return std::string(kPublishPrefix) + ToHex(task_id) + "/" + FixedHex64(checkpoint);
}

std::string PublishChunkKey(std::string_view task_id, std::uint64_t checkpoint, std::uint32_t tensor,
                            std::uint32_t chunk) {
  return PublishKey(task_id, checkpoint) + "/" + FixedHex64(tensor) + "/" + FixedHex64(chunk);
}

std::string RevealKey(std::string_view task_id) { return std::string(kRevealPrefix) + ToHex(task_id); }

}  // namespace polnode::contracts
