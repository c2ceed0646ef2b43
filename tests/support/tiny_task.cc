#include "polnode/testing/tiny_task.h"

#include <charconv>

#include "polnode/consensus/hex.h"

namespace polnode::solver::testing {

std::string TinyTaskToml(const TaskSpec& task) {
  char lr[32];
  const auto [end, error] = std::to_chars(lr, lr + sizeof lr, task.optimizer.lr);  // shortest exact form
  return "model = \"" + task.model + "\"\ndata = \"" + task.data_location + "\"\ndataset_hash = \"" +
         consensus::ToHex(task.dataset_hash) + "\"\nlr = " + (error == std::errc() ? std::string(lr, end) : "?") +
         "\nbatch = " + std::to_string(task.batch) + "\nsteps = " + std::to_string(task.steps) +
         "\ncheckpoint_interval = " + std::to_string(task.checkpoint_interval) + "\nseed = " + std::to_string(task.seed) +
         "\nsegments = " + std::to_string(task.segments_per_check) + "\n";
}

}  // namespace polnode::solver::testing
