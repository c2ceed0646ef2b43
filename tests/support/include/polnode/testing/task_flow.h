// Drives one task through its life cycle on a test Chain, with a fixed cast: a submitter, a
// solver, three staked verifiers (two get assigned), a staked whistleblower and an outsider.
#ifndef POLNODE_TESTING_TASK_FLOW_H_
#define POLNODE_TESTING_TASK_FLOW_H_

#include <optional>
#include <string>
#include <vector>

#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
using consensus::Hash256;
}  // namespace polnode::contracts::testing

namespace polnode::contracts::testing {

/// Starting balance of every actor.
inline constexpr std::uint64_t kFunds = 100'000;

class TaskFlow {
 public:
  /// Funds every actor and, in block 1, stakes the solver (1000), the verifiers (500 each) and
  /// the whistleblower (300), the minimums of TestParams.
  explicit TaskFlow(const proto::Params& params = TestParams());

  const PubKey submitter = Key(1);
  const PubKey solver = Key(2);
  const std::vector<PubKey> verifiers = {Key(3), Key(4), Key(5)};
  const PubKey whistleblower = Key(6);
  const PubKey outsider = Key(7);
  const std::string secret = Bytes32(0x5E);
  /// The committed proof's root: SetCheckpoints sets it (the constructor sets 11 leaves whose first
  /// is the default spec's initial state); Commit proves checkpoint 0 from `checkpoints`.
  std::string proof_root;
  /// The final state an honest replay reaches: the digest every Verdict commits to. In a forced
  /// round it is the honest final checkpoint (RevealForced reveals it).
  std::string replay_final = Bytes32(0xF1);
  /// When set, Submit posts this spec (with TaskSubmission's payment) instead of the default one.
  std::optional<proto::TaskSpec> spec;
  /// When set, Submit commits to this beacon seed (RevealSeed reveals it).
  std::optional<std::string> seed;

  Chain chain;
  std::string task_id;
  std::vector<Hash256> checkpoints;  // the committed proof's leaves

  /// Submits a task paying `payment`; expects success.
  void Submit(std::uint64_t payment = 10'000);
  /// The submitter reveals `seed`.
  TxResult RevealSeed(const std::string& revealed);
  /// The solver claims with the commitment to `secret`; expects success.
  void Claim();
  /// Waits for the forced-error seed, then commits `proof_root`; expects success.
  void Commit();
  /// Waits for the segment beacon (verifiers assigned).
  void AwaitAssignment();
  /// Submit + Claim + Commit + AwaitAssignment.
  void RunToVerifying(std::uint64_t payment = 10'000);
  /// The assigned verifiers, in slot order.
  std::vector<PubKey> Assigned() const;
  /// The one staked verifier that was not assigned.
  PubKey Unassigned() const;

  /// The number of segments of the task's spec, and the index of the final one.
  std::uint64_t Segments() const;
  std::uint64_t FinalSegment() const { return Segments() - 1; }
  /// Builds the committed proof over `leaves` (Segments() + 1 checkpoint hashes): proof_root.
  void SetCheckpoints(std::vector<Hash256> leaves);
  /// An accept, or a reject naming the final segment, with the digest of replay_final, on
  /// `verifier`'s first slot that awaits a verdict (its first slot when none does).
  TxResult Verdict(const PubKey& verifier, bool accept);
  /// A reject naming `failed` (the digest of replay_final), on the slot Verdict picks.
  TxResult Reject(const PubKey& verifier, const std::vector<std::uint64_t>& failed);
  TxResult Unavailable(const PubKey& verifier);
  /// `verdict` naming `failed` on slot `slot`, by the key that holds it (the digest of replay_final).
  TxResult SlotVerdict(std::uint32_t slot, proto::Verdict verdict, const std::vector<std::uint64_t>& failed = {});
  /// The solver disputes `verifier`'s first undisputed reject verdict.
  TxResult Dispute(const PubKey& verifier);
  /// The key that holds slot `slot`.
  PubKey KeyOfSlot(std::uint32_t slot) const;
  /// `challenger` (a whistleblower) challenges the committed proof, with the digest of replay_final.
  TxResult Challenge(const PubKey& challenger);
  /// The same, committing to `final_state` as the state its replay of the final segment reached.
  TxResult ChallengeReaching(const PubKey& challenger, const std::string& final_state);
  /// Advances to the end of the current status's deadline.
  void AdvancePastDeadline();
  /// The solver reveals `secret` with `result_root` (a round that is not forced).
  TxResult Reveal(const std::string& result_root);
  /// The solver reveals a forced round: the honest proof is the committed one (SetCheckpoints)
  /// with its final checkpoint replaced by `honest_final`.
  TxResult RevealForced(const std::string& honest_final);
  /// The root of the committed proof with its final checkpoint replaced by `final_hash`.
  std::string RootWithFinal(const std::string& final_hash) const;

  proto::Task task() const { return chain.Task(task_id); }
};

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTING_TASK_FLOW_H_
