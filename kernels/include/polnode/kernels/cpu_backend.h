// The fast CPU backend's instruction-set levels, for tests and benchmarks that want a specific
// one. Normal callers use MakeCpuBackend (backend.h), which picks the best level at run time.
// Also the data loader's conversion of pixel bytes, vectorized with the same kernels.
#ifndef POLNODE_KERNELS_CPU_BACKEND_H_
#define POLNODE_KERNELS_CPU_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/cpu_isa.h"

namespace polnode::kernels {

/// "scalar", "avx2", "avx512" (the backend's name() is "cpu-" followed by this).
std::string_view CpuIsaName(CpuIsa isa);

/// The levels this machine (and this build) can run, lowest first; always contains kScalar.
std::vector<CpuIsa> AvailableCpuIsas();

/// The level MakeCpuBackend uses: the highest available one, lowered to the value of the
/// environment variable POLNODE_CPU_ISA ("scalar", "avx2" or "avx512") when that is set to an
/// available level. An unknown or unavailable value is ignored (the highest level is used).
CpuIsa SelectedCpuIsa();

/// The fast CPU backend at exactly `isa` with `threads` threads (>= 1); kUnavailable when this
/// machine or build cannot run that level, kInvalidArgument for threads < 1.
Result<std::unique_ptr<Backend>> MakeCpuBackendForIsa(CpuIsa isa, int threads);

/// out[i] = (static_cast<float>(pixels[i]) / 255.0f - mean) / stddev for i < pixels.size(), each
/// operation rounded to float as written, so the bits are those of that expression in scalar
/// code at every level: a data set's pixels as training reads them (solver/dataset.h), converted
/// a register at a time. At `isa`, which must be in AvailableCpuIsas(); without it, at
/// SelectedCpuIsa()'s level. `out` holds pixels.size() floats.
void NormalizePixels(CpuIsa isa, std::span<const std::uint8_t> pixels, float mean, float stddev, float* out);
void NormalizePixels(std::span<const std::uint8_t> pixels, float mean, float stddev, float* out);

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_CPU_BACKEND_H_
