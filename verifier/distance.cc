#include "polnode/verifier/distance.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace polnode::verifier {

double LossDeviation(float a, float b) {
  const double da = a;
  const double db = b;
  return std::fabs(da - db) / std::max(1.0, std::fabs(db));
}

bool WithinThresholds(const Distances& d, const Thresholds& t) {
  // Written as <= so that NaN distances fail every comparison.
  return d.l1 <= t.l1 && d.l2 <= t.l2 && d.linf <= t.linf && d.cosine <= t.cosine;
}

namespace {

// kInvalidArgument naming the first difference when `a` and `b` are not laid out alike.
Status SameLayout(const solver::TrainState& a, const solver::TrainState& b) {
  if (a.tensors.size() != b.tensors.size()) return Status::InvalidArgument("states have different tensor counts");
  for (std::size_t t = 0; t < a.tensors.size(); ++t) {
    const solver::NamedTensor& x = a.tensors[t];
    const solver::NamedTensor& y = b.tensors[t];
    if (x.name != y.name || x.tensor.shape() != y.tensor.shape()) {
      return Status::InvalidArgument("states differ in tensor " + std::to_string(t) + " (" + x.name + " vs " + y.name + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Distances> StateDistance(const solver::TrainState& a, const solver::TrainState& b) {
  POLNODE_RETURN_IF_ERROR(SameLayout(a, b));
  double l1 = 0.0, l2sq = 0.0, linf = 0.0, dot = 0.0, norm_a = 0.0, norm_b = 0.0;
  bool nan = false;
  for (std::size_t t = 0; t < a.tensors.size(); ++t) {
    const solver::NamedTensor& x = a.tensors[t];
    const solver::NamedTensor& y = b.tensors[t];
    const float* p = x.tensor.data();
    const float* q = y.tensor.data();
    for (std::int64_t i = 0; i < x.tensor.numel(); ++i) {
      const double u = p[i];
      const double v = q[i];
      const double diff = std::fabs(u - v);
      nan = nan || std::isnan(diff);
      l1 += diff;
      l2sq += diff * diff;
      linf = std::max(linf, diff);
      dot += u * v;
      norm_a += u * u;
      norm_b += v * v;
    }
  }
  if (nan) {
    const double n = std::numeric_limits<double>::quiet_NaN();
    return Distances{n, n, n, n};
  }
  Distances d{l1, std::sqrt(l2sq), linf, 0.0};
  // Equal states are at distance 0 by every metric, exactly: the ratio below can round to a hair
  // under 1 for identical vectors, and a zero threshold must admit an identical replay.
  if (l1 == 0.0 || (norm_a == 0.0 && norm_b == 0.0)) {
    d.cosine = 0.0;
  } else if (norm_a == 0.0 || norm_b == 0.0) {
    d.cosine = 1.0;
  } else {
    // Clamped: rounding can push the ratio of identical vectors a hair past 1.
    d.cosine = std::max(0.0, 1.0 - dot / (std::sqrt(norm_a) * std::sqrt(norm_b)));
  }
  return d;
}

Result<std::vector<std::uint64_t>> DifferingIndices(const solver::TrainState& a, const solver::TrainState& b,
                                                    double limit) {
  POLNODE_RETURN_IF_ERROR(SameLayout(a, b));
  std::vector<std::uint64_t> indices;
  std::uint64_t first = 0;  // the flat index of the current tensor's element 0
  for (std::size_t t = 0; t < a.tensors.size(); ++t) {
    const kernels::Tensor& x = a.tensors[t].tensor;
    const float* p = x.data();
    const float* q = b.tensors[t].tensor.data();
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      // Written as !(<=) so that a NaN difference counts.
      const double diff = std::fabs(static_cast<double>(p[i]) - static_cast<double>(q[i]));
      if (!(diff <= limit)) indices.push_back(first + static_cast<std::uint64_t>(i));
    }
    first += static_cast<std::uint64_t>(x.numel());
  }
  return indices;
}

}  // namespace polnode::verifier
