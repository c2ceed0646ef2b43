// The payload_type names a signed envelope uses to say which contracts.proto message its payload
// holds. Every name here has exactly one payload message and one executor.
#ifndef POLNODE_CONTRACTS_PAYLOADS_H_
#define POLNODE_CONTRACTS_PAYLOADS_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace polnode::contracts::payload {

inline constexpr std::string_view kTransfer = "transfer";        // proto::TransferTx
inline constexpr std::string_view kStake = "stake";              // proto::StakeTx
inline constexpr std::string_view kUnstake = "unstake";          // proto::UnstakeTx
inline constexpr std::string_view kSubmitTask = "task/submit";   // proto::SubmitTaskTx
inline constexpr std::string_view kCancelTask = "task/cancel";   // proto::CancelTaskTx
inline constexpr std::string_view kClaimTask = "task/claim";     // proto::ClaimTaskTx
inline constexpr std::string_view kCommitProof = "task/commit";  // proto::CommitProofTx
inline constexpr std::string_view kVerdict = "task/verdict";     // proto::VerdictTx
inline constexpr std::string_view kDispute = "task/dispute";     // proto::DisputeTx
inline constexpr std::string_view kReveal = "task/reveal";       // proto::RevealTx
inline constexpr std::string_view kPublish = "task/publish";     // proto::PublishTx
inline constexpr std::string_view kRevealSeed = "task/seed";     // proto::SeedRevealTx
inline constexpr std::string_view kDisputeMove = "dispute/move";  // proto::DisputeMoveTx (dispute.proto)

/// task/publish: elements per published chunk (512 KiB of float32, well inside one envelope), and
/// the largest tensor a published checkpoint may hold (64 MiB of float32).
inline constexpr std::uint64_t kPublishChunkElements = std::uint64_t{1} << 17;
inline constexpr std::int64_t kMaxPublishedElements = std::int64_t{1} << 24;

/// Every name above, for CLIs and fuzzers that enumerate them.
inline constexpr std::array<std::string_view, 13> kAll = {
    kTransfer, kStake,  kUnstake, kSubmitTask, kCancelTask, kClaimTask,  kCommitProof,
    kVerdict,  kDispute, kReveal, kPublish,    kRevealSeed, kDisputeMove};

}  // namespace polnode::contracts::payload

#endif  // POLNODE_CONTRACTS_PAYLOADS_H_
