// Profiling (DESIGN.md section 3): replays sample segments of a proof under every variation the
// task allows (backends present on this machine, thread counts) and sets each metric's threshold
// to the largest distance observed between a replay and the proof's claimed checkpoint. In exact
// mode every distance must come out 0; verdicts then compare hashes.
#ifndef POLNODE_VERIFIER_PROFILE_H_
#define POLNODE_VERIFIER_PROFILE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/task_spec.h"
#include "polnode/verifier/distance.h"

namespace polnode::verifier {

struct ProfileVariation {
  std::string backend;  // a MakeBackend name
  int threads = 1;
};

struct ProfileObservation {
  ProfileVariation variation;
  std::string backend_impl;  // Backend::name() of what ran
  std::int64_t segment = 0;
  Distances distances;
  bool hash_equal = false;  // replayed state hash == claimed checkpoint hash
};

struct Profile {
  Thresholds thresholds;
  std::vector<ProfileObservation> observations;
  std::vector<std::string> skipped;  // variations whose backend is not present, with the reason
};

/// Every variation polnode allows: backends reference and cpu, plus cuda and hip (MakeBackend
/// tells later whether present), each at 1 and 2 threads.
std::vector<ProfileVariation> AllVariations();

/// Profiles the task itself, with nothing from a solver: the first segment (checkpoint_interval
/// steps from the initial state, which the task fixes) is trained under each variation whose
/// backend can be made here, and each metric's threshold is the largest distance between one
/// variation's end state and the first one's. A solver cannot move these thresholds (profiling
/// against a proof's claimed checkpoints would let a cheat in the sampled segment widen them).
/// The loss threshold is the largest LossDeviation between a variation's step losses and the
/// first one's. Observations name segment 0; hash_equal compares with the first variation's end
/// state.
/// kFailedPrecondition when no variation could run (or the first step diverges); other errors as
/// TaskStepper::Create and CheckTaskData.
Result<Profile> ProfileTask(const solver::TaskSpec& task, const solver::ImageDataset& data,
                            std::span<const ProfileVariation> variations);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_PROFILE_H_
