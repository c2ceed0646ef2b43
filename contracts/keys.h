// State keys: the one place that spells the namespaces listed in state_store.h. Public keys and
// task ids are raw 32-byte strings inside the contracts and lowercase hex inside keys.
#ifndef POLNODE_CONTRACTS_KEYS_H_
#define POLNODE_CONTRACTS_KEYS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "polnode/consensus/hex.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

inline constexpr std::string_view kChainIdKey = "meta/chain_id";
inline constexpr std::string_view kHeightKey = "meta/height";
inline constexpr std::string_view kSupplyKey = "meta/supply";
inline constexpr std::string_view kTaskCountKey = "meta/task_count";
inline constexpr std::string_view kParamsKey = "params";
inline constexpr std::string_view kJackpotKey = "jackpot";
inline constexpr std::string_view kVerifiersKey = "verifiers";
inline constexpr std::string_view kAccountPrefix = "acct/";
inline constexpr std::string_view kStakePrefix = "stake/";
inline constexpr std::string_view kTaskPrefix = "task/";
inline constexpr std::string_view kTaskSeqPrefix = "taskseq/";
inline constexpr std::string_view kDuePrefix = "due/";
inline constexpr std::string_view kGamePrefix = "game/";
inline constexpr std::string_view kSpecPrefix = "spec/";
inline constexpr std::string_view kPublishPrefix = "pub/";
inline constexpr std::string_view kRevealPrefix = "reveal/";

/// Length of public keys, task ids, hashes and secrets, in bytes.
inline constexpr std::size_t kIdBytes = 32;

/// The raw bytes of a digest or key, as the records store them.
inline std::string ToBytes(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// Keys, ids and events print raw bytes with consensus's one hex helper.
using consensus::ToHex;

/// "solver", "verifier" or "whistleblower"; "unspecified" for anything else.
std::string_view RoleName(proto::Role role);

std::string AccountKey(std::string_view pubkey);
std::string StakeKey(proto::Role role, std::string_view pubkey);
std::string TaskKey(std::string_view task_id);
std::string TaskSeqKey(std::uint64_t seq);
std::string DueKey(std::uint64_t height);
std::string GameKey(std::string_view task_id, std::string_view challenger);
std::string SpecKey(std::string_view spec_hash);
/// "pub/<task>/<checkpoint>": a published checkpoint's header and progress.
std::string PublishKey(std::string_view task_id, std::uint64_t checkpoint);
/// "pub/<task>/<checkpoint>/<tensor>/<chunk>": one chunk of a published tensor's elements.
std::string PublishChunkKey(std::string_view task_id, std::uint64_t checkpoint, std::uint32_t tensor,
                            std::uint32_t chunk);
/// "reveal/<task>": a forced round's reveal as the ledger checked it.
std::string RevealKey(std::string_view task_id);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_KEYS_H_
