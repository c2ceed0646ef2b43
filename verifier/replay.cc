#include "polnode/verifier/replay.h"

#include <algorithm>
#include <span>
#include <cstring>

#include "polnode/consensus/hex.h"
#include "polnode/kernels/detmath.h"
#include "polnode/verifier/segments.h"

namespace polnode::verifier {
namespace {

using kernels::det::BitsFloat;
using kernels::det::FloatBits;

// The checkpoint's tensors must be exactly the task's state layout (same names, shapes, order as
// `layout`): the stepper treats a mismatch as a caller error, but here the bytes are the prover's,
// so a mismatch must become a rejection (kCorruption), never a verifier error.
Status CheckLayout(const solver::TrainState& state, const solver::TrainState& layout, std::int64_t index) {
  const std::string where = "checkpoint " + std::to_string(index);
  if (state.tensors.size() != layout.tensors.size()) {
    return Status::Corruption(where + " has " + std::to_string(state.tensors.size()) + " tensors, the task's state has " +
                              std::to_string(layout.tensors.size()));
  }
  for (std::size_t i = 0; i < layout.tensors.size(); ++i) {
    const solver::NamedTensor& got = state.tensors[i];
    const solver::NamedTensor& want = layout.tensors[i];
    if (got.name != want.name || got.tensor.shape() != want.tensor.shape()) {
      return Status::Corruption(where + " tensor " + std::to_string(i) + " is " + got.name + " " +
                                kernels::ShapeToString(got.tensor.shape()) + ", the task's state has " + want.name +
                                " " + kernels::ShapeToString(want.tensor.shape()));
    }
  }
  return Status::Ok();
}

// The segments VerifyProof replays before the final one: the caller's explicit list, checked, or
// the beacon's draw.
Result<std::vector<std::int64_t>> SegmentsToReplay(const solver::TaskSpec& task, const VerifyOptions& options) {
  if (options.segments < 1) return Status::InvalidArgument("Q must be at least 1");
  const std::int64_t segment_count = task.checkpoint_count() - 1;
  if (!options.explicit_segments.empty()) {
    std::vector<std::int64_t> seen = options.explicit_segments;
    std::sort(seen.begin(), seen.end());
    if (seen.front() < 0 || seen.back() >= segment_count) {
      return Status::InvalidArgument("explicit segments must lie in [0, " + std::to_string(segment_count) + ")");
    }
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
      return Status::InvalidArgument("explicit segments repeat a segment");
    }
    return options.explicit_segments;
  }
  // The task's Q is the protocol's floor: a caller may replay more, never fewer, and asking for
  // more than exist replays them all.
  const std::int64_t q = std::min(segment_count, std::max(options.segments, task.segments_per_check));
  return SelectSegments(options.beacon, segment_count, q);
}

}  // namespace

Status CheckCheckpointState(const solver::TrainState& state, const solver::TrainState& layout, std::int64_t index,
                            std::int64_t checkpoint_interval) {
  if (state.step != index * checkpoint_interval) {
    return Status::Corruption("checkpoint " + std::to_string(index) + " holds step " + std::to_string(state.step) +
                              ", expected " + std::to_string(index * checkpoint_interval));
  }
  return CheckLayout(state, layout, index);
}

Result<solver::TrainState> LoadCheckpoint(const solver::ProofManifest& m, const solver::BlobStore& store,
                                          const solver::TrainState& layout, std::int64_t index) {
  const std::size_t i = static_cast<std::size_t>(index);
  // Every checkpoint of the task encodes to exactly the size of its initial state (same tensors,
  // same shapes): a larger blob is refused before a byte of it is read.
  const std::uint64_t size = solver::EncodeState(layout).size();
  Result<solver::StoredState> stored = store.GetState(m.checkpoint_blobs[i], size);
  if (!stored.ok()) return stored.status().WithContext("checkpoint " + std::to_string(index));
  if (stored->state_hash != m.checkpoint_hashes[i]) {
    return Status::Corruption("checkpoint " + std::to_string(index) + ": blob " + consensus::ToHex(m.checkpoint_blobs[i]) +
                              " holds a state whose state hash is not the manifest's checkpoint hash");
  }
  POLNODE_RETURN_IF_ERROR(CheckCheckpointState(stored->state, layout, index, m.checkpoint_interval));
  return std::move(stored->state);
}

Status CheckManifestAgainstTask(const solver::ProofManifest& m, const solver::TaskSpec& task) {
  if (m.task_id != solver::TaskId(task)) return Status::FailedPrecondition("manifest is for another task");
  if (m.checkpoint_interval != task.checkpoint_interval || m.steps != task.steps) {
    return Status::Corruption("manifest k or step count differs from the task's");
  }
  if (static_cast<std::int64_t>(m.checkpoint_hashes.size()) != task.checkpoint_count()) {
    return Status::Corruption("manifest has " + std::to_string(m.checkpoint_hashes.size()) +
                              " checkpoints, the task needs " + std::to_string(task.checkpoint_count()));
  }
  if (static_cast<std::int64_t>(m.loss_bits.size()) != task.steps) {
    return Status::Corruption("manifest has " + std::to_string(m.loss_bits.size()) + " losses for " +
                              std::to_string(task.steps) + " steps");
  }
  return solver::CheckManifestIntegrity(m);
}

Result<SegmentEvidence> ReplayFromStates(solver::TaskStepper& stepper, kernels::Backend& backend,
                                         std::int64_t segment, solver::TrainState start, const solver::TrainState& end,
                                         std::span<const std::uint32_t> claimed_loss_bits,
                                         const Thresholds& thresholds, std::optional<double> element_limit) {
  if (element_limit && !(*element_limit >= 0.0)) return Status::InvalidArgument("an element limit must be >= 0");
  SegmentEvidence e;
  e.segment = segment;
  e.available = true;
  e.claimed = solver::StateHash(end);
  const std::int64_t k = stepper.task().checkpoint_interval;
  const bool check_losses = !claimed_loss_bits.empty();
  if (check_losses && static_cast<std::int64_t>(claimed_loss_bits.size()) != k) {
    return Status::InvalidArgument("a segment's claimed losses must number checkpoint_interval");
  }
  e.losses_match = true;
  // The state stays in the backend's buffers for the segment's k steps (device-resident training).
  POLNODE_ASSIGN_OR_RETURN(solver::ResidentTraining run, stepper.StartResident(start, backend));
  for (std::int64_t s = 0; s < k; ++s) {
    Result<float> loss = stepper.Step(run);
    // A claimed state that makes training diverge (NaN or infinite weights) is the proof's
    // fault: the segment fails. Anything else is the verifier's own error.
    if (!loss.ok() && loss.status().code() == StatusCode::kFailedPrecondition) {
      e.losses_match = false;
      e.reason = "replay from checkpoint " + std::to_string(segment) + ": " + loss.status().ToString();
      return e;
    }
    if (!loss.ok()) return loss.status();
    if (!check_losses) continue;
    const std::uint32_t claimed_bits = claimed_loss_bits[static_cast<std::size_t>(s)];
    if (FloatBits(*loss) != claimed_bits) e.losses_match = false;
    e.loss_deviation = std::max(e.loss_deviation, LossDeviation(*loss, BitsFloat(claimed_bits)));
  }
  POLNODE_RETURN_IF_ERROR(run.DownloadState(start));
  e.replayed = true;
  e.recomputed = solver::StateHash(start);
  if (Result<Distances> d = StateDistance(start, end); d.ok()) {
    e.distances = *d;
    e.have_distances = true;
  }
  const bool exact = stepper.task().mode == solver::ReproMode::kExact;
  if (!exact && element_limit && e.have_distances) {
    POLNODE_ASSIGN_OR_RETURN(e.beyond_limit, DifferingIndices(start, end, *element_limit));
  }
  if (exact) {
    if (e.recomputed != e.claimed) {
      e.reason = "replayed state hash differs from checkpoint " + std::to_string(segment + 1);
    } else if (!e.losses_match) {
      e.reason = "replayed step losses differ from the manifest's";
    }
  } else if (!e.have_distances) {
    e.reason = "checkpoint " + std::to_string(segment + 1) + " has another tensor layout";
  } else if (!WithinThresholds(e.distances, thresholds)) {
    e.reason = "replay distance exceeds the profiled thresholds";
  } else if (!e.beyond_limit.empty()) {
    // Reached only when the thresholds admit a difference beyond the limit (a profile too loose
    // to tell a forced round's perturbation from replay noise).
    e.reason = std::to_string(e.beyond_limit.size()) + " elements of the replayed state differ from checkpoint " +
               std::to_string(segment + 1) + " by more than " + std::to_string(*element_limit) +
               " (the first at flat index " + std::to_string(e.beyond_limit.front()) + ")";
  } else if (!(e.loss_deviation <= thresholds.loss)) {
    // Tolerant mode still holds the proof to its claimed losses (finding 10: invented losses
    // verified), within what profiling saw the allowed variations differ by.
    e.reason = "replayed step losses deviate from the manifest's beyond the profiled tolerance";
  }
  e.ok = e.reason.empty();
  return e;
}

Result<SegmentEvidence> ReplaySegment(const solver::ProofManifest& m, const solver::BlobStore& store,
                                      solver::TaskStepper& stepper, kernels::Backend& backend,
                                      std::int64_t segment, const Thresholds& thresholds) {
  const solver::TrainState layout = stepper.Initial();
  Result<solver::TrainState> start = LoadCheckpoint(m, store, layout, segment);
  // The end checkpoint must be servable even when its hash alone would settle an exact replay:
  // a proof whose blobs cannot be fetched intact cannot be checked by anyone else.
  Result<solver::TrainState> end =
      start.ok() ? LoadCheckpoint(m, store, layout, segment + 1) : Result<solver::TrainState>(start.status());
  if (!start.ok() || !end.ok()) {
    SegmentEvidence e;
    e.segment = segment;
    e.claimed = m.checkpoint_hashes[static_cast<std::size_t>(segment + 1)];
    e.reason = (!start.ok() ? start : end).status().ToString();
    return e;
  }
  const std::size_t first = static_cast<std::size_t>(segment * m.checkpoint_interval);
  const std::span<const std::uint32_t> losses(m.loss_bits.data() + first, static_cast<std::size_t>(m.checkpoint_interval));
  return ReplayFromStates(stepper, backend, segment, std::move(*start), *end, losses, thresholds);
}

Result<Verdict> VerifyProof(const solver::TaskSpec& task, const solver::ImageDataset& data,
                            const solver::ProofManifest& manifest, const solver::BlobStore& store,
                            kernels::Backend& backend, const VerifyOptions& options) {
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(task, data));
  const std::int64_t segment_count = task.checkpoint_count() - 1;
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::int64_t> drawn, SegmentsToReplay(task, options));
  const std::int64_t q = static_cast<std::int64_t>(drawn.size());
  Verdict v;
  v.is_signed = manifest.is_signed;
  if (Status s = CheckManifestAgainstTask(manifest, task); !s.ok()) {
    v.reason = "manifest: " + s.ToString();
    return v;
  }
  // CheckManifestIntegrity only verifies a signature that is present; an unsigned manifest binds
  // no solver to the work, so payment could go to anyone: reject it here.
  if (!manifest.is_signed) {
    v.reason = "manifest: not signed by a solver key";
    return v;
  }
  if (options.solver_pubkey && *options.solver_pubkey != manifest.solver_pubkey) {
    v.reason = "manifest: signed by solver key " + consensus::ToHex(manifest.solver_pubkey) + ", expected " +
               consensus::ToHex(*options.solver_pubkey);
    return v;
  }
  v.manifest_ok = true;
  // Checkpoint 0 is named by its hash, so comparing hashes compares every bit of the state.
  v.initial_state_ok = solver::StateHash(stepper.Initial()) == manifest.checkpoint_hashes[0];
  if (!v.initial_state_ok) v.reason = "checkpoint 0 is not the task's initial state";
  v.drawn = q;
  // The final checkpoint is the model that gets paid for, so its segment is replayed whatever the
  // beacon draws: a forger cannot swap the final model and hope it goes undrawn.
  const std::int64_t final_segment = segment_count - 1;
  if (std::find(drawn.begin(), drawn.end(), final_segment) == drawn.end()) drawn.push_back(final_segment);
  for (std::int64_t segment : drawn) {
    POLNODE_ASSIGN_OR_RETURN(SegmentEvidence e,
                             ReplaySegment(manifest, store, stepper, backend, segment, options.thresholds));
    if (!e.ok && v.reason.empty()) v.reason = "segment " + std::to_string(segment) + ": " + e.reason;
    if (segment == final_segment) v.final_segment_ok = e.ok;
    v.segments.push_back(std::move(e));
  }
  v.accept = v.reason.empty();
  return v;
}

}  // namespace polnode::verifier
