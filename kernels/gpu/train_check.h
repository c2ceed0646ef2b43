// End-to-end training on two backends from operators alone: the GPU check's training comparison
// where the node's other libraries (and so `polnode train`) cannot be built (issue 19 item 5).
//
// An MLP with SGD and momentum and a CNN with AdamW, each step written out as the operators the
// solver's step graph runs (forward, softmax cross-entropy, backward, optimizer), train on
// synthetic data that is a pure function of the step. After every step both backends' parameters,
// optimizer buffers and losses must have the same bits, except that any NaN matches any NaN
// (consensus/pinpoint.h reads every NaN alike).
#ifndef POLNODE_KERNELS_GPU_TRAIN_CHECK_H_
#define POLNODE_KERNELS_GPU_TRAIN_CHECK_H_

#include <cstdint>
#include <string>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"

namespace polnode::kernels::train_check {

enum class Model {
  kMlp,  // inputs side^2 -> hidden1 -> hidden2 -> classes, ReLU, SGD with momentum and decay
  kCnn,  // [1, side, side] -> conv 3x3 (hidden1) -> ReLU -> pool -> conv 3x3 (hidden2) -> ReLU ->
         // pool -> linear (classes), AdamW
};

/// A model's sizes. side >= 4 and a multiple of 4 for kCnn; every count >= 1.
struct Spec {
  Model model = Model::kMlp;
  std::int64_t batch = 128;
  std::int64_t side = 28;
  std::int64_t hidden1 = 256;
  std::int64_t hidden2 = 128;
  std::int64_t classes = 10;
};

/// "mlp 784-256-128-10, batch 128" / "cnn 1x28x28 c8-p-c16-p-10, batch 128".
std::string Describe(const Spec& spec);

/// What a comparison found.
struct Outcome {
  /// The first step (1-based: after that many steps) whose state or loss differs; 0 if none.
  std::int64_t first_difference = 0;
  /// What differed first, e.g. "w2 element 17: 0x3c1a2b00 vs 0x3c1a2b01"; empty if nothing.
  std::string detail;
  /// FNV-1a 64 over both runs' final states (tensors in a fixed order, their bits with every NaN
  /// as 0x7FC00000): equal when the states are.
  std::uint64_t candidate_digest = 0;
  std::uint64_t reference_digest = 0;
  float first_loss = 0.0f;  // the reference's loss at step 1 and at the last step
  float last_loss = 0.0f;
  double candidate_seconds = 0.0;  // time in each backend's steps, state comparison excluded
  double reference_seconds = 0.0;
};

/// Trains `spec` for `steps` (>= 1) steps on `candidate` and on `reference` from one initial state
/// and compares them after every step; stops at the first difference. kInvalidArgument for a bad
/// spec or step count; a backend's error is returned as it is.
Result<Outcome> CompareTraining(Backend& candidate, Backend& reference, const Spec& spec, std::int64_t steps);

}  // namespace polnode::kernels::train_check

#endif  // POLNODE_KERNELS_GPU_TRAIN_CHECK_H_
