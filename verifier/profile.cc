#include "polnode/verifier/profile.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "polnode/verifier/replay.h"

namespace polnode::verifier {

std::vector<ProfileVariation> AllVariations() {
  std::vector<ProfileVariation> out;
  for (const char* backend : {"reference", "cpu", "cuda", "hip"}) {
    for (int threads : {1, 2}) out.push_back({backend, threads});
  }
  return out;
}

Result<Profile> ProfileProof(const solver::TaskSpec& task, const solver::ImageDataset& data,
                             const solver::ProofManifest& manifest, const solver::BlobStore& store,
                             std::span<const std::int64_t> segments,
                             std::span<const ProfileVariation> variations) {
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(task, data));
  if (Status s = CheckManifestAgainstTask(manifest, task); !s.ok()) {
    return Status::FailedPrecondition("cannot profile this proof: " + s.ToString());
  }
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  Profile profile;
  for (const ProfileVariation& variation : variations) {
    Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(variation.backend, variation.threads);
    if (!backend.ok()) {
      profile.skipped.push_back(variation.backend + ": " + backend.status().ToString());
      continue;
    }
    for (std::int64_t segment : segments) {
      if (segment < 0 || segment + 1 >= task.checkpoint_count()) {
        return Status::InvalidArgument("segment " + std::to_string(segment) + " is not in the proof");
      }
      // Thresholds of +inf: profiling measures, it does not judge.
      const double inf = HUGE_VAL;
      POLNODE_ASSIGN_OR_RETURN(SegmentEvidence e, ReplaySegment(manifest, store, stepper, **backend, segment,
                                                                Thresholds{inf, inf, inf, inf}));
      if (!e.replayed || !e.have_distances) {
        return Status::FailedPrecondition("profiling segment " + std::to_string(segment) + ": " + e.reason);
      }
      profile.observations.push_back({variation, (*backend)->name(), segment, e.distances, e.recomputed == e.claimed});
      Thresholds& t = profile.thresholds;
      t.l1 = std::max(t.l1, e.distances.l1);
      t.l2 = std::max(t.l2, e.distances.l2);
      t.linf = std::max(t.linf, e.distances.linf);
      t.cosine = std::max(t.cosine, e.distances.cosine);
    }
  }
  if (profile.observations.empty()) return Status::FailedPrecondition("no profiling variation could run");
  return profile;
}

Result<Profile> ProfileTask(const solver::TaskSpec& task, const solver::ImageDataset& data,
                            std::span<const ProfileVariation> variations) {
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(task, data));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  Profile profile;
  std::optional<solver::TrainState> baseline;
  consensus::Hash256 baseline_hash{};
  for (const ProfileVariation& variation : variations) {
    Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(variation.backend, variation.threads);
    if (!backend.ok()) {
      profile.skipped.push_back(variation.backend + ": " + backend.status().ToString());
      continue;
    }
    solver::TrainState state = stepper.Initial();
    while (state.step < task.checkpoint_interval) POLNODE_RETURN_IF_ERROR(stepper.Step(state, **backend).status());
    const consensus::Hash256 hash = solver::StateHash(state);
    if (!baseline) {
      baseline = std::move(state);
      baseline_hash = hash;
      profile.observations.push_back({variation, (*backend)->name(), 0, Distances{}, true});
      continue;
    }
    POLNODE_ASSIGN_OR_RETURN(Distances d, StateDistance(state, *baseline));
    profile.observations.push_back({variation, (*backend)->name(), 0, d, hash == baseline_hash});
    Thresholds& t = profile.thresholds;
    t.l1 = std::max(t.l1, d.l1);
    t.l2 = std::max(t.l2, d.l2);
    t.linf = std::max(t.linf, d.linf);
    t.cosine = std::max(t.cosine, d.cosine);
  }
  if (profile.observations.empty()) return Status::FailedPrecondition("no profiling variation could run");
  return profile;
}

}  // namespace polnode::verifier
