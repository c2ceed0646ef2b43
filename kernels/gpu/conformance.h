// Backend conformance: runs one operator on a fixed battery of random inputs through two
// backends and compares the results bit for bit. This is how the CUDA and HIP backends are held
// to the scalar reference (tests/kernels/gpu_backend_test.cc and the polnode_gpu_check program
// that scripts/gpu-check.sh runs on GPU machines); it works for any pair of backends.
#ifndef POLNODE_KERNELS_GPU_CONFORMANCE_H_
#define POLNODE_KERNELS_GPU_CONFORMANCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"

namespace polnode::kernels::conformance {

/// The outcome of one case: one operator on one set of inputs, run by both backends.
struct CaseResult {
  Op op = Op::kMatmul;
  /// What the case is, e.g. "matmul A[7, 17] B[17, 129]" or "sgd_momentum [129, 7] in place".
  std::string name;
  /// True when both backends agree: the same status code and, when ok, every output with the
  /// same shape and bits; and the reference accepted a valid case / rejected an invalid one.
  bool passed = false;
  /// Empty when passed; otherwise a sentence naming what differed (first differing element with
  /// both values and their bits, the count of differing elements, or the two statuses).
  std::string detail;
};

/// Which cases CheckOp runs.
enum class CaseSet {
  kAll,            // the random cases, the malformed ones and the special-value variants
  kSpecialValues,  // the special-value variants only
};

/// Runs every case of `op` in `set` through `candidate` and `reference` and compares them. The
/// cases cover ragged shapes (1, 7, 17, 129, ...), signed zeros and ties where the operator's
/// order matters, in-place updates where op.h allows aliasing, and malformed shapes that both
/// backends must reject with the same status code. Each valid case also has a special-value
/// variant: a few elements of every value input (never class indices, pool taps or token ids)
/// replaced by NaN, +-inf, +-0, subnormals and +-FLT_MAX, where the candidate's NaNs carry another
/// vendor's payload than the reference's (x86 0xFFC00000, NVIDIA 0x7FFFFFFF, AMD 0x7FC00000, a
/// signalling NaN); its outputs must agree bit for bit except that any NaN matches any NaN, which
/// is exactly what the hashes see (consensus/pinpoint.h reads every NaN as one pattern). Inputs are
/// drawn from a generator seeded with `seed`, so a failing case can be replayed. Never empty:
/// every operator has cases in both sets.
std::vector<CaseResult> CheckOp(Backend& candidate, Backend& reference, Op op, std::uint64_t seed,
                                CaseSet set = CaseSet::kAll);

/// A backend whose Run goes through `inner`'s device-resident interface (backend.h): the inputs
/// are uploaded to buffers (one buffer for a tensor passed twice, so in-place updates stay in
/// place), the operator is enqueued on them, and the outputs are downloaded. So CheckOp on it
/// holds Enqueue to the reference exactly as it holds Run. Calls are first checked as Run checks
/// them (ValidateRun: the same refusals and messages; index values too, since a device backend's
/// Enqueue leaves them to its caller). `inner` must outlive it; its name is inner's.
std::unique_ptr<Backend> ThroughBuffers(Backend& inner);

}  // namespace polnode::kernels::conformance

#endif  // POLNODE_KERNELS_GPU_CONFORMANCE_H_
