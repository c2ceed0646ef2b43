// Backend: the one operator interface that every implementation (scalar reference, fast CPU,
// CUDA, HIP) provides. Callers hold a Backend and never branch on which one it is.
#ifndef POLNODE_KERNELS_BACKEND_H_
#define POLNODE_KERNELS_BACKEND_H_

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {

class Backend {
 public:
  virtual ~Backend() = default;

  /// "reference", "cpu-avx512", "cpu-avx2", "cpu-scalar", "cuda", "hip": what actually runs.
  virtual std::string name() const = 0;

  /// Runs `op` on `inputs`, writing `outputs` (resized as needed). Returns kInvalidArgument for
  /// shapes that break the operator's contract (outputs untouched), kUnavailable/kInternal for a
  /// device failure. Bits are those of the canonical order in op.h.
  [[nodiscard]] virtual Status Run(Op op, const OpAttrs& attrs,
                                   std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs) = 0;
};

/// The scalar reference: a direct transcription of op.h, single-threaded. The ledger's referee
/// uses it; every other backend is tested against it bit for bit.
std::unique_ptr<Backend> MakeReferenceBackend();

/// The fast CPU backend: AVX-512 or AVX2 kernels chosen at run time (scalar where neither is
/// present), split over `threads` worker threads by output. threads >= 1.
std::unique_ptr<Backend> MakeCpuBackend(int threads);

/// A backend by name: "reference", "cpu" (with `threads`), "cuda", "hip". kUnavailable when this
/// build or this machine lacks it (no toolchain at build time, no device at run time), with a
/// sentence saying which.
Result<std::unique_ptr<Backend>> MakeBackend(std::string_view name, int threads);

/// Names of the backends compiled into this binary ("reference", "cpu", then "cuda"/"hip").
std::vector<std::string> CompiledBackends();

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_BACKEND_H_
