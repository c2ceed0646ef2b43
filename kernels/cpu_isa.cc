// Run-time choice of the fast CPU backend's instruction-set level (cpu_backend.h).
#include <cstdlib>
#include <string_view>
#include <vector>

#include "cpu_kernels.h"
#include "polnode/kernels/cpu_backend.h"

namespace polnode::kernels {

namespace scalar {
const CpuKernels& Kernels();
}
#if defined(__x86_64__)
namespace avx2 {
const CpuKernels& Kernels();
}
namespace avx512 {
const CpuKernels& Kernels();
}
#endif

std::string_view CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "unknown";
}

std::vector<CpuIsa> AvailableCpuIsas() {
  std::vector<CpuIsa> isas = {CpuIsa::kScalar};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XGETBV).
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    isas.push_back(CpuIsa::kAvx2);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      isas.push_back(CpuIsa::kAvx512);
    }
  }
#endif
  return isas;
}

CpuIsa SelectedCpuIsa() {
  const std::vector<CpuIsa> available = AvailableCpuIsas();
  if (const char* forced = std::getenv("POLNODE_CPU_ISA"); forced != nullptr) {
    for (CpuIsa isa : available) {
      if (CpuIsaName(isa) == forced) return isa;
    }
  }
  return available.back();
}

void NormalizePixels(CpuIsa isa, std::span<const std::uint8_t> pixels, float mean, float stddev, float* out) {
  GetCpuKernels(isa).normalize_pixels(pixels.data(), mean, stddev, out, static_cast<std::int64_t>(pixels.size()));
}

void NormalizePixels(std::span<const std::uint8_t> pixels, float mean, float stddev, float* out) {
  // Chosen once: every level gives the same bits, and a data loader calls this per image.
  static const CpuKernels& kernels = GetCpuKernels(SelectedCpuIsa());
  kernels.normalize_pixels(pixels.data(), mean, stddev, out, static_cast<std::int64_t>(pixels.size()));
}

const CpuKernels& GetCpuKernels(CpuIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case CpuIsa::kAvx512: return avx512::Kernels();
    case CpuIsa::kAvx2: return avx2::Kernels();
#endif
    default: return scalar::Kernels();
  }
}

}  // namespace polnode::kernels
