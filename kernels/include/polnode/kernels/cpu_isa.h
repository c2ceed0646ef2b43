// CpuIsa: the instruction-set levels of the fast CPU backend. Kept in a header of its own, free
// of other includes, because the per-ISA kernel files (compiled with AVX2 or AVX-512 flags) need
// it: any inline function they pulled in from a larger header could be emitted with those flags
// and picked by the linker for code that runs on machines without them.
#ifndef POLNODE_KERNELS_CPU_ISA_H_
#define POLNODE_KERNELS_CPU_ISA_H_

namespace polnode::kernels {

/// Instruction-set levels of the fast CPU backend, lowest first. Every level produces the same
/// bits; they differ only in speed.
enum class CpuIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_CPU_ISA_H_
