// Drives one task through its life cycle on a test Chain, with a fixed cast: a submitter, a
// solver, three staked verifiers (two get assigned), a staked whistleblower and an outsider.
#ifndef POLNODE_TESTING_TASK_FLOW_H_
#define POLNODE_TESTING_TASK_FLOW_H_

#include <optional>
#include <string>
#include <vector>

#include "polnode/testing/chain_harness.h"

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
  std::string proof_root = Bytes32(0xAA);
  /// When set, Submit posts this spec (with TaskSubmission's payment) instead of the default one.
  std::optional<proto::TaskSpec> spec;

  Chain chain;
  std::string task_id;

  /// Submits a task paying `payment`; expects success.
  void Submit(std::uint64_t payment = 10'000);
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

  TxResult Verdict(const PubKey& verifier, bool accept);
  TxResult Dispute(const PubKey& disputer, const PubKey& verifier);
  /// Advances to the end of the current status's deadline.
  void AdvancePastDeadline();
  /// The solver reveals `secret` with `result_root`.
  TxResult Reveal(const std::string& result_root);

  proto::Task task() const { return chain.Task(task_id); }
};

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTING_TASK_FLOW_H_
