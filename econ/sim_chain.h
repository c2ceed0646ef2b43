// A chain for the simulator: the real contracts::Application over a MemoryStateStore, driven block
// by block, with transactions built for named actors and every failed transaction reported as an
// error (a strategy never sends a transaction it expects to fail, so a failure is a simulator bug or
// a rule it did not know about, and must not pass silently).
//
// Block randomness is SHA-256(seed, epoch, height - epoch start): each simulated task starts an epoch,
// so two worlds forked from one state that run the same task see the same randomness at the same
// point of that task (the same forced rounds and, where stakes agree, the same verifier draws),
// whatever the other world did before. That pairing is what lets a deviation be compared with the
// honest strategy task by task.
#ifndef POLNODE_ECON_SIM_CHAIN_H_
#define POLNODE_ECON_SIM_CHAIN_H_

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/state_store.h"
#include "polnode/dispute.pb.h"

namespace polnode::econ {

using contracts::PubKey;

/// The raw 32 bytes of a key, as records and payloads hold them.
std::string Raw(const PubKey& key);
/// The key whose raw bytes are `raw` (32 bytes).
PubKey KeyOf(std::string_view raw);
/// Lowercase hex of raw bytes, as state keys spell keys and ids.
std::string Hex(std::string_view raw);

/// A transaction waiting for the next block.
struct PendingTx {
  PubKey signer{};
  std::string type;
  std::string payload;
};

/// `payload` as a PendingTx of `type` from `signer`.
PendingTx MakeTx(const PubKey& signer, std::string_view type, const google::protobuf::MessageLite& payload);

class SimChain {
 public:
  /// Genesis with `params` and `balance` for each of `funded`.
  [[nodiscard]] static Result<SimChain> Create(const proto::Params& params, const std::vector<PubKey>& funded,
                                               std::uint64_t balance, std::uint64_t seed);

  /// Starts epoch `epoch`: the next block is its first (see the file comment).
  void StartEpoch(std::uint64_t epoch);

  /// Finalizes and commits one block of `txs` (each signer's in the given order, nonces assigned
  /// here); kInternal naming the transaction when any of them fails.
  [[nodiscard]] Status Block(const std::vector<PendingTx>& txs);
  /// Empty blocks until the last finalized height is `height`.
  [[nodiscard]] Status AdvanceTo(std::uint64_t height);

  std::uint64_t height() const { return height_; }
  const proto::Params& params() const { return params_; }

  /// Balance plus bonded and unbonding stake of every role: what `key` owns.
  [[nodiscard]] Result<std::uint64_t> Wealth(const PubKey& key) const;
  [[nodiscard]] Result<proto::StakeRecord> Stake(proto::Role role, const PubKey& key) const;
  [[nodiscard]] Result<std::uint64_t> Nonce(const PubKey& key) const;
  [[nodiscard]] Result<std::uint64_t> Jackpot() const;
  [[nodiscard]] Result<proto::Task> Task(std::string_view task_id) const;
  [[nodiscard]] Result<proto::DisputeGame> Game(std::string_view task_id, std::string_view challenger) const;

 private:
  SimChain(const proto::Params& params, std::uint64_t seed) : params_(params), seed_(seed) {}

  template <typename Message>
  Result<Message> Read(const std::string& key) const;

  proto::Params params_;
  std::uint64_t seed_ = 0;
  contracts::MemoryStateStore state_;
  contracts::Application app_;
  std::uint64_t height_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t epoch_start_ = 1;
};

}  // namespace polnode::econ

#endif  // POLNODE_ECON_SIM_CHAIN_H_
