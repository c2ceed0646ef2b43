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
  /// The solver's secret: Claim commits to it, the reveals show it. A test may pick another one
  /// before Claim (in a forced round it decides the forced checkpoints).
  std::string secret = Bytes32(0x5E);
  /// The committed proof's root: SetCheckpoints sets it (the constructor sets 11 leaves whose first
  /// is the default spec's initial state); Commit proves checkpoint 0 from `checkpoints`.
  std::string proof_root;
  /// In a forced round the result proof's hash at forced checkpoint k is 32 bytes of
  /// honest_fill + k (ResultLeaves): what a replay of segment k - 1 reaches, so the digests the
  /// helpers below give are those of a diligent replay. Changing it before RevealForced makes the
  /// solver reveal other hashes than the replays reached.
  std::uint8_t honest_fill = 0x10;
  /// When set, Submit posts this spec (with TaskSubmission's payment) instead of the default one.
  std::optional<proto::TaskSpec> spec;
  /// When set, Submit commits to this beacon seed (RevealSeed reveals it).
  std::optional<std::string> seed;
  /// With a tolerant spec and tolerant_states set, Commit replaces checkpoints 1.. by the hashes
  /// of real states (TolerantState), with each forced checkpoint perturbed as a forced round must
  /// (consensus/forced_perturbation.h), and the replay digests and reveals follow those states;
  /// tolerant_variant varies the states (and so the slots). Unset, a tolerant task commits the
  /// checkpoints the test set (a real proof's).
  bool tolerant_states = false;
  std::uint32_t tolerant_variant = 0;
  /// When set, the committed perturbation moves each drawn element by this instead of the spec's
  /// forced_delta (a solver cheating on the perturbation's size); the reveal shows what it did.
  std::optional<float> committed_delta;

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

  /// A tolerant task's checkpoint `k` as the honest training reaches it: the spec's
  /// state_tensor_count tensors named t0, t1, ..., the first [100, 70] (4 blocks) with values in
  /// [-0.5, 0.5), the others known only by a made-up tensor hash each.
  struct TolerantState {
    std::vector<std::string> names;
    std::vector<std::int64_t> dims;
    std::vector<float> first;
    std::vector<Hash256> other_hashes;
  };
  TolerantState HonestTolerantState(std::uint64_t k) const;
  /// The same state as committed: perturbed when k is a forced checkpoint of a forced round.
  TolerantState CommittedTolerantState(std::uint64_t k) const;
  /// The v2 state hash of `state` at checkpoint k.
  Hash256 TolerantStateHash(std::uint64_t k, const TolerantState& state) const;
  /// The flat indices a diligent tolerant replay of the segment ending at `k` finds beyond
  /// forced_delta / 2: the perturbed ones at a forced checkpoint, none elsewhere.
  std::vector<std::uint64_t> TolerantReplayIndices(std::uint64_t k) const;
  bool UsesTolerantStates() const { return tolerant_states && spec && spec->tolerant(); }

  /// The number of segments of the task's spec, and the index of the final one.
  std::uint64_t Segments() const;
  std::uint64_t FinalSegment() const { return Segments() - 1; }
  /// Builds the committed proof over `leaves` (Segments() + 1 checkpoint hashes): proof_root.
  void SetCheckpoints(std::vector<Hash256> leaves);

  /// Whether the round is a forced error (after Commit: the forced-error seed is drawn).
  bool Forced() const;
  /// The forced checkpoints (beacon.h ForcedCheckpoints) of a forced round; empty otherwise.
  std::vector<std::uint64_t> ForcedCheckpoints() const;
  /// The result proof's leaves: the committed ones with each forced checkpoint k replaced by 32
  /// bytes of honest_fill + k (the committed ones when the round is not forced), and their root.
  std::vector<Hash256> ResultLeaves() const;
  std::string ResultRoot() const;
  /// The digest a diligent replay by `party` of `segment` commits to: beacon.h SegmentDigest of
  /// the result proof's hash at segment + 1 (tolerant: of the indices TolerantReplayIndices).
  std::string ReplayDigest(const PubKey& party, std::uint64_t segment) const;
  /// The covered segments of slot `slot` (its drawn ones and the final one), and of a challenge by
  /// `challenger` (beacon.h ChallengeSegments), ascending.
  std::vector<std::uint64_t> SlotCovered(std::uint32_t slot) const;
  std::vector<std::uint64_t> ChallengeCovered(const PubKey& challenger) const;
  /// Those of `covered` that end at a forced checkpoint: what a diligent replay finds failed.
  std::vector<std::uint64_t> ForcedEnds(const std::vector<std::uint64_t>& covered) const;

  /// An accept, or a reject naming the final segment (with its replay digest), on `verifier`'s
  /// first slot that awaits a verdict (its first slot when none does).
  TxResult Verdict(const PubKey& verifier, bool accept);
  /// A reject naming `failed` (with their replay digests), on the slot Verdict picks.
  TxResult Reject(const PubKey& verifier, const std::vector<std::uint64_t>& failed);
  TxResult Unavailable(const PubKey& verifier);
  /// `verdict` naming `failed` on slot `slot`, by the key that holds it, with the replay digests of
  /// `failed`.
  TxResult SlotVerdict(std::uint32_t slot, proto::Verdict verdict, const std::vector<std::uint64_t>& failed = {});
  /// The same with exactly `digests`.
  TxResult SlotVerdictWith(std::uint32_t slot, proto::Verdict verdict, const std::vector<std::uint64_t>& failed,
                           const std::vector<std::string>& digests);
  /// What a diligent verifier of slot `slot` says: a reject naming ForcedEnds of its covered
  /// segments with their replay digests, or an accept when there are none.
  TxResult DiligentVerdict(std::uint32_t slot);
  /// The solver disputes `verifier`'s first undisputed reject verdict.
  TxResult Dispute(const PubKey& verifier);
  /// The key that holds slot `slot`.
  PubKey KeyOfSlot(std::uint32_t slot) const;
  /// `challenger` (a whistleblower) challenges the committed proof naming the final segment (with
  /// its replay digest).
  TxResult Challenge(const PubKey& challenger);
  /// A challenge naming `failed` with exactly `digests`.
  TxResult ChallengeWith(const PubKey& challenger, const std::vector<std::uint64_t>& failed,
                         const std::vector<std::string>& digests);
  /// A challenge naming ForcedEnds of its covered segments with their replay digests.
  TxResult DiligentChallenge(const PubKey& challenger);
  /// Advances to the end of the current status's deadline.
  void AdvancePastDeadline();
  /// The solver reveals `secret` with `result_root` (a round that is not forced).
  TxResult Reveal(const std::string& result_root);
  /// A forced round's reveal showing `shown` (contracts/forced.h RevealCheckpoints when not
  /// given): each checkpoint's committed and result hash with its proof, and the result root; for
  /// a tolerant task the perturbation proof of each shown forced checkpoint.
  proto::RevealTx ForcedReveal(const std::vector<std::uint64_t>& shown) const;
  proto::RevealTx ForcedReveal() const;
  /// The same over the result proof `result` (Segments() + 1 leaves) instead of ResultLeaves().
  /// A tolerant perturbation proof is built from the states whatever `result` says.
  proto::RevealTx ForcedRevealOver(const std::vector<Hash256>& result, const std::vector<std::uint64_t>& shown) const;
  /// The solver posts ForcedReveal().
  TxResult RevealForced();

  proto::Task task() const { return chain.Task(task_id); }
};

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTING_TASK_FLOW_H_
