// OneLane: the "lanes" type with one float per register, used for the tails of the vector loops
// and as the whole scalar level (see cpu_kernels_impl.h). Like the implementation header it is
// compiled once per instruction set, inside that file's POLNODE_CPU_ISA_NS namespace, so that the
// copy built with AVX-512 flags can never be linked into code that runs at a lower level.
#ifndef POLNODE_KERNELS_CPU_ONE_LANE_H_
#define POLNODE_KERNELS_CPU_ONE_LANE_H_

#ifndef POLNODE_CPU_ISA_NS
#error "define POLNODE_CPU_ISA_NS before including cpu_one_lane.h"
#endif

namespace polnode::kernels::POLNODE_CPU_ISA_NS {

struct OneLane {
  using Reg = float;
  static constexpr int kWidth = 1;
  static Reg Load(const float* p) { return *p; }
  static void Store(float* p, Reg v) { *p = v; }
  static Reg Set1(float x) { return x; }
  static Reg Zero() { return 0.0f; }
  static Reg Add(Reg a, Reg b) { return a + b; }
  static Reg Sub(Reg a, Reg b) { return a - b; }
  static Reg Mul(Reg a, Reg b) { return a * b; }
  static Reg Div(Reg a, Reg b) { return a / b; }
  static Reg Sqrt(Reg a) { return __builtin_sqrtf(a); }
  static Reg Fma(Reg a, Reg b, Reg c) { return __builtin_fmaf(a, b, c); }
  // x > 0 ? v : +0.0f (false for NaN).
  static Reg PositiveSelect(Reg x, Reg v) { return x > 0.0f ? v : 0.0f; }
};

}  // namespace polnode::kernels::POLNODE_CPU_ISA_NS

#endif  // POLNODE_KERNELS_CPU_ONE_LANE_H_
