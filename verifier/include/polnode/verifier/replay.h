// Verifying a proof of learning (DESIGN.md sections 4 and 5): manifest checks, the initial-state
// check, and the replay of beacon-drawn segments, with the evidence behind the verdict.
#ifndef POLNODE_VERIFIER_REPLAY_H_
#define POLNODE_VERIFIER_REPLAY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/task_steps.h"
#include "polnode/verifier/distance.h"

namespace polnode::verifier {

/// What the replay of segment i (checkpoint i to i + 1) found.
struct SegmentEvidence {
  std::int64_t segment = 0;
  bool ok = false;
  std::string reason;            // why it failed; empty when ok
  bool available = false;        // both checkpoints were loaded and check against the proof
  bool replayed = false;         // the k steps ran (false when a checkpoint could not be loaded)
  bool have_distances = false;   // the claimed end state was loaded and comparable
  Distances distances;           // replayed vs claimed end state
  consensus::Hash256 recomputed{};  // StateHash of the replayed end state
  consensus::Hash256 claimed{};     // the manifest's hash of checkpoint i + 1
  bool losses_match = false;        // every replayed step loss has the claimed bits
  double loss_deviation = 0.0;      // the largest LossDeviation of a replayed step from its claim
  /// Tolerant replays judged with an element limit (ReplayFromStates): the flat state indices at
  /// which the replayed end differs from the claimed one by more than the limit, ascending
  /// (DifferingIndices). In a forced round they are the perturbed elements of a forced checkpoint,
  /// which a reject commits to (consensus::PerturbedIndicesHash). Empty otherwise.
  std::vector<std::uint64_t> beyond_limit;
};

struct Verdict {
  bool accept = false;
  std::string reason;  // the first failed check; empty on accept
  bool manifest_ok = false;
  bool is_signed = false;
  bool initial_state_ok = false;
  /// Q, the number of segments drawn from the beacon or given as VerifyOptions::explicit_segments
  /// (0 when the manifest checks failed).
  std::int64_t drawn = 0;
  /// The final segment (ending in the model that is paid for) replayed and passed; it is always
  /// replayed, drawn or not.
  bool final_segment_ok = false;
  /// The drawn segments' evidence in draw order, then the final segment's when it was not drawn.
  std::vector<SegmentEvidence> segments;
};

struct VerifyOptions {
  consensus::Hash256 beacon{};
  /// Segments the caller asks to replay; the verifier replays max(segments, the task's
  /// segments_per_check), capped at the number of segments. Must be >= 1.
  std::int64_t segments = 1;
  /// When non-empty, exactly these segments are replayed, in this order, instead of a beacon draw
  /// (then `beacon` and `segments` are unused): the segments the ledger assigned this verifier's
  /// slots (contracts::DrawSegments), so that what it checks is what it answers for in a dispute. The
  /// final segment is added when absent, as always. Each must be in [0, segment count) and
  /// appear once: kInvalidArgument otherwise.
  std::vector<std::int64_t> explicit_segments;
  /// When set, the manifest must be signed by exactly this x-only solver key (the one committed
  /// with the task's claim); when unset any valid signature is accepted, but one is required.
  std::optional<std::array<std::uint8_t, 32>> solver_pubkey;
  /// Tolerant mode compares distances with these; exact mode compares hashes and ignores them.
  Thresholds thresholds;
};

/// The manifest checks: task id, k and step count equal the task's; steps / k + 1 checkpoint
/// hashes; one loss per step; CheckManifestIntegrity (one blob hash per checkpoint, Merkle root,
/// signature). ok or kCorruption /
/// kFailedPrecondition naming the failed check.
[[nodiscard]] Status CheckManifestAgainstTask(const solver::ProofManifest& manifest, const solver::TaskSpec& task);

/// Loads checkpoint `index` of the proof `manifest` describes from `store` by its blob hash (the
/// store refuses bytes that do not hash to it, and blobs larger than `layout` encodes to), decodes
/// it and checks that its StateHash is the manifest's checkpoint hash `index` and, as
/// CheckCheckpointState, its step and layout. Precondition: the manifest passed
/// CheckManifestAgainstTask and index < its checkpoint count. The store's errors (kNotFound for a
/// missing blob) and kCorruption for a blob that does not hold that checkpoint.
[[nodiscard]] Result<solver::TrainState> LoadCheckpoint(const solver::ProofManifest& manifest,
                                                        const solver::BlobStore& store,
                                                        const solver::TrainState& layout, std::int64_t index);

/// The checks a checkpoint state obtained elsewhere needs before a replay may start from it (a
/// checkpoint its solver published on the ledger, whose hash the ledger proved against the
/// committed root): its step counter is index * checkpoint_interval and its tensors have exactly
/// `layout`'s names, shapes and order (the task's initial state). kCorruption naming the difference.
[[nodiscard]] Status CheckCheckpointState(const solver::TrainState& state, const solver::TrainState& layout,
                                          std::int64_t index, std::int64_t checkpoint_interval);

/// Replays segment `segment` with `stepper` on `backend`: loads checkpoint i from `store` (by the
/// manifest's blob hash; the store refuses bytes that do not hash to it), checks that it decodes to
/// a state whose StateHash is the manifest's checkpoint hash i, its step counter and its tensor
/// layout (names, shapes, order) against the task's initial state,
/// runs k steps, and compares with checkpoint i + 1. Precondition: the manifest
/// passed CheckManifestAgainstTask. A replay that cannot proceed, or whose end checkpoint is not
/// servable intact (missing or corrupt blob), is a
/// failed segment, not an error; errors are the verifier's own (a backend failure).
Result<SegmentEvidence> ReplaySegment(const solver::ProofManifest& manifest, const solver::BlobStore& store,
                                      solver::TaskStepper& stepper, kernels::Backend& backend,
                                      std::int64_t segment, const Thresholds& thresholds);

/// Replays segment `segment` from `start` (checkpoint `segment`, obtained and checked by the
/// caller: from a proof's blobs, or as its solver published it on the ledger) and judges the
/// result against `end` (checkpoint segment + 1): its state hash in exact mode, distances within
/// `thresholds` in tolerant mode, and, when `claimed_loss_bits` is not empty (one per step of the
/// segment), the claimed per-step losses (bit for bit in exact mode, within thresholds.loss in
/// tolerant mode). With `element_limit` (tolerant mode: forced_delta / 2 of a task whose forced
/// rounds perturb elements by forced_delta), the replay also fails when any element of the
/// replayed end differs from `end` by more than the limit, and the evidence lists those elements
/// (SegmentEvidence::beyond_limit); exact mode ignores it. Errors are the verifier's own (a
/// backend failure), or kInvalidArgument for a wrong number of claimed losses or a negative or
/// NaN element limit.
Result<SegmentEvidence> ReplayFromStates(solver::TaskStepper& stepper, kernels::Backend& backend,
                                         std::int64_t segment, solver::TrainState start, const solver::TrainState& end,
                                         std::span<const std::uint32_t> claimed_loss_bits,
                                         const Thresholds& thresholds,
                                         std::optional<double> element_limit = std::nullopt);

/// The full verification: manifest checks, a valid solver signature (required; it must be by
/// options.solver_pubkey when that is set), checkpoint 0 == InitialState(task) bit for bit, then
/// Q = min(n, max(options.segments, task.segments_per_check)) segments drawn by
/// SelectSegments(options.beacon) and replayed (or options.explicit_segments when given), plus the
/// final segment (n - 1) when not among them.
/// Accepts only when every check and every replayed segment passes; each segment is replayed
/// even after a failure so the verdict carries all the evidence. Errors (not verdicts): the task does not fit
/// `data`, the data set hash differs from the task's (kFailedPrecondition), options.segments < 1,
/// an explicit segment out of range or repeated (kInvalidArgument).
Result<Verdict> VerifyProof(const solver::TaskSpec& task, const solver::ImageDataset& data,
                            const solver::ProofManifest& manifest, const solver::BlobStore& store,
                            kernels::Backend& backend, const VerifyOptions& options);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_REPLAY_H_
