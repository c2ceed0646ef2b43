// Distances between a replayed and a claimed training state (DESIGN.md section 3): L1, L2,
// L-infinity and cosine distance over every element of every tensor of the state, in state order,
// accumulated in double in ascending index order (reporting and threshold comparison only; no
// hash depends on them).
#ifndef POLNODE_VERIFIER_DISTANCE_H_
#define POLNODE_VERIFIER_DISTANCE_H_

#include "polnode/base/status.h"
#include "polnode/solver/train_state.h"

namespace polnode::verifier {

struct Distances {
  double l1 = 0.0;
  double l2 = 0.0;
  double linf = 0.0;
  /// 1 - cos(a, b); 0 when both are all zero, 1 when exactly one is.
  double cosine = 0.0;
};

/// Per-metric limits; a replay is within them when every distance is <= its limit. `loss` bounds
/// the LossDeviation of every replayed step loss from the proof's claimed loss.
struct Thresholds {
  double l1 = 0.0;
  double l2 = 0.0;
  double linf = 0.0;
  double cosine = 0.0;
  double loss = 0.0;
};

/// |a - b| / max(1, |b|): absolute below 1, relative above; NaN when either is NaN.
double LossDeviation(float a, float b);

bool WithinThresholds(const Distances& d, const Thresholds& t);

/// The distances between `a` and `b`. kInvalidArgument when their tensors differ in count, name
/// or shape. A NaN element makes every distance NaN, which no threshold admits.
Result<Distances> StateDistance(const solver::TrainState& a, const solver::TrainState& b);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_DISTANCE_H_
