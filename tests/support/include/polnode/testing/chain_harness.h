// A test chain: a MemoryStateStore with a genesis, an Application, and helpers that build
// transactions, run blocks and read state. Every block checks the supply invariant.
#ifndef POLNODE_TESTING_CHAIN_HARNESS_H_
#define POLNODE_TESTING_CHAIN_HARNESS_H_

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/contracts.pb.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/state_store.h"

namespace polnode::contracts::testing {

inline constexpr std::string_view kChainId = "polnode-test";

/// A key whose 32 bytes are all `n` (not a curve point; the state machine never checks keys).
PubKey Key(std::uint8_t n);
/// The raw bytes of a key, as records and payloads hold them.
std::string Raw(const PubKey& key);
/// 32 bytes of `n`, for hashes, roots and secrets.
std::string Bytes32(std::uint8_t n);
/// The raw bytes of a hash, as records and payloads hold them.
std::string HashBytes(const consensus::Hash256& h);

/// Params sized for tests: fee 1, locks solver 1000 / verifier 500 / whistleblower 300 (no payment
/// scaling), beacon delay 2, verify 5, challenge 4, reveal 3, publish 4 blocks, unbonding 5,
/// 2 verifiers per task and one verification round, verifier fee 10%, jackpot cut 2%, jackpot
/// payout 50% (capped at the payment), forced errors off.
proto::Params TestParams();

/// The payload of a task/submit with `payment` and windows of 10 (claim) and 20 (training) blocks.
proto::SubmitTaskTx TaskSubmission(std::uint64_t payment);

class Chain {
 public:
  /// Genesis with `params` and `balance` for each key in `funded`.
  Chain(const proto::Params& params, const std::vector<PubKey>& funded, std::uint64_t balance);

  /// A transaction from `signer` with its next nonce (counting txs built for the pending block).
  VerifiedTx Tx(const PubKey& signer, std::string_view type, const google::protobuf::MessageLite& payload);

  /// Finalizes and commits one block of `txs`; checks the supply invariant afterwards.
  BlockResult Block(const std::vector<VerifiedTx>& txs);

  /// One transaction in its own block; returns its result.
  TxResult Run(const PubKey& signer, std::string_view type, const google::protobuf::MessageLite& payload);

  /// Empty blocks until the last finalized height is `height`.
  void AdvanceTo(std::uint64_t height);

  /// The proposer that collects fees.
  static PubKey Proposer() { return Key(0xEE); }
  /// The randomness the harness gives block `height`.
  static consensus::Hash256 RandomnessAt(std::uint64_t height);

  std::uint64_t height() const { return height_; }
  std::uint64_t Balance(const PubKey& key) const;
  std::uint64_t Nonce(const PubKey& key) const;
  proto::StakeRecord Stake(proto::Role role, const PubKey& key) const;
  std::uint64_t Jackpot() const;
  proto::Task Task(std::string_view task_id) const;
  /// The id of the task with submission number `seq`.
  std::string TaskIdAt(std::uint64_t seq) const;

  MemoryStateStore& state() { return state_; }
  Application& app() { return app_; }
  const proto::Params& params() const { return params_; }

 private:
  proto::Params params_;
  MemoryStateStore state_;
  Application app_;
  std::uint64_t height_ = 0;
  std::map<PubKey, std::uint64_t> pending_nonces_;
};

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTING_CHAIN_HARNESS_H_
