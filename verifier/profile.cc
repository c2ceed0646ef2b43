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

Result<Profile> ProfileTask(const solver::TaskSpec& task, const solver::ImageDataset& data,
                            std::span<const ProfileVariation> variations) {
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(task, data));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  Profile profile;
  std::optional<solver::TrainState> baseline;
  std::vector<float> baseline_losses;
  consensus::Hash256 baseline_hash{};
  for (const ProfileVariation& variation : variations) {
    Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(variation.backend, variation.threads);
    if (!backend.ok()) {
      profile.skipped.push_back(variation.backend + ": " + backend.status().ToString());
      continue;
    }
    solver::TrainState state = stepper.Initial();
    std::vector<float> losses;
    while (state.step < task.checkpoint_interval) {
      POLNODE_ASSIGN_OR_RETURN(float loss, stepper.Step(state, **backend));
      losses.push_back(loss);
    }
    const consensus::Hash256 hash = solver::StateHash(state);
    if (!baseline) {
      baseline = std::move(state);
      baseline_losses = std::move(losses);
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
    for (std::size_t i = 0; i < losses.size(); ++i) t.loss = std::max(t.loss, LossDeviation(losses[i], baseline_losses[i]));
  }
  if (profile.observations.empty()) return Status::FailedPrecondition("no profiling variation could run");
  return profile;
}

}  // namespace polnode::verifier
