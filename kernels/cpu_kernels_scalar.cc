// The fast CPU kernels without SIMD, for machines with neither AVX2 nor AVX-512 (and non-x86
// hosts): the same blocking and threading as the vector levels, one float per "register".
#define POLNODE_CPU_ISA_NS scalar
#define POLNODE_CPU_ISA CpuIsa::kScalar

#include "cpu_kernels.h"
#include "cpu_one_lane.h"

namespace polnode::kernels::scalar {

using Lanes = OneLane;
// 4 x 4 tile: 16 independent fma chains keep a scalar FMA unit busy.
constexpr int kMicroRows = 4;
constexpr int kMicroVectors = 4;

}  // namespace polnode::kernels::scalar

#include "cpu_kernels_impl.h"

namespace polnode::kernels::scalar {
const CpuKernels& Kernels() { return kKernels; }
}  // namespace polnode::kernels::scalar
