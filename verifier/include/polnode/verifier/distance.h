// Distances between a replayed and a claimed training state (DESIGN.md section 3): L1, L2,
// L-infinity and cosine distance over every element of every tensor of the state, in state order,
// accumulated in double in ascending index order (reporting and threshold comparison only; no
// hash depends on them). Also which elements differ beyond a limit: what a tolerant verdict
// commits to in a forced round (consensus/forced_perturbation.h).
#ifndef POLNODE_VERIFIER_DISTANCE_H_
#define POLNODE_VERIFIER_DISTANCE_H_

#include <cstdint>
#include <vector>

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

/// The flat state indices at which `a` and `b` differ by more than `limit`, ascending: the index
/// of an element counts every element of the tensors before its own, in state order (so the first
/// tensor's flat indices are the state's). An element differs when |a - b|, computed in double, is
/// greater than `limit`, or is NaN (either value NaN, or both the same infinity): a replay that
/// cannot say how far it is from the claim must not pass as close to it. kInvalidArgument when
/// their tensors differ in count, name or shape. Precondition: limit >= 0.
Result<std::vector<std::uint64_t>> DifferingIndices(const solver::TrainState& a, const solver::TrainState& b,
                                                    double limit);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_DISTANCE_H_
