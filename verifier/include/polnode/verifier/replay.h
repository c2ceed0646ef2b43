// Verifying a proof of learning (DESIGN.md sections 4 and 5): manifest checks, the initial-state
// check, and the replay of beacon-drawn segments, with the evidence behind the verdict.
#ifndef POLNODE_VERIFIER_REPLAY_H_
#define POLNODE_VERIFIER_REPLAY_H_

#include <cstdint>
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
  bool replayed = false;         // the k steps ran (false when a checkpoint could not be loaded)
  bool have_distances = false;   // the claimed end state was loaded and comparable
  Distances distances;           // replayed vs claimed end state
  consensus::Hash256 recomputed{};  // StateHash of the replayed end state
  consensus::Hash256 claimed{};     // the manifest's hash of checkpoint i + 1
  bool losses_match = false;        // every replayed step loss has the claimed bits
};

struct Verdict {
  bool accept = false;
  std::string reason;  // the first failed check; empty on accept
  bool manifest_ok = false;
  bool is_signed = false;
  bool initial_state_ok = false;
  std::vector<SegmentEvidence> segments;
};

struct VerifyOptions {
  consensus::Hash256 beacon{};
  std::int64_t segments = 1;  // Q
  /// Tolerant mode compares distances with these; exact mode compares hashes and ignores them.
  Thresholds thresholds;
};

/// The manifest checks: task id, k and step count equal the task's; steps / k + 1 checkpoint
/// hashes; one loss per step; CheckManifestIntegrity (Merkle root, signature). ok or kCorruption /
/// kFailedPrecondition naming the failed check.
[[nodiscard]] Status CheckManifestAgainstTask(const solver::ProofManifest& manifest, const solver::TaskSpec& task);

/// Replays segment `segment` with `stepper` on `backend`: loads checkpoint i from `store` (its
/// name is the manifest's hash, and the store refuses bytes that do not hash to it), checks its
/// step counter, runs k steps, and compares with checkpoint i + 1. Precondition: the manifest
/// passed CheckManifestAgainstTask. A replay that cannot proceed, or whose end checkpoint is not
/// servable intact (missing or corrupt blob), is a
/// failed segment, not an error; errors are the verifier's own (a backend failure).
Result<SegmentEvidence> ReplaySegment(const solver::ProofManifest& manifest, const solver::BlobStore& store,
                                      solver::TaskStepper& stepper, kernels::Backend& backend,
                                      std::int64_t segment, const Thresholds& thresholds);

/// The full verification: manifest checks, checkpoint 0 == InitialState(task) bit for bit, then
/// options.segments segments drawn by SelectSegments(options.beacon) and replayed. Accepts only
/// when every check and every drawn segment passes; each drawn segment is replayed even after a
/// failure so the verdict carries all the evidence. Errors (not verdicts): the task does not fit
/// `data`, the data set hash differs from the task's (kFailedPrecondition), Q out of range.
Result<Verdict> VerifyProof(const solver::TaskSpec& task, const solver::ImageDataset& data,
                            const solver::ProofManifest& manifest, const solver::BlobStore& store,
                            kernels::Backend& backend, const VerifyOptions& options);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_REPLAY_H_
