// OneLane: the "lanes" type with one float per register, used for the tails of the vector loops
// and as the whole scalar level (see cpu_kernels_impl.h). Like the implementation header it is
// compiled once per instruction set, inside that file's POLNODE_CPU_ISA_NS namespace, so that the
// copy built with AVX-512 flags can never be linked into code that runs at a lower level.
#ifndef POLNODE_KERNELS_CPU_ONE_LANE_H_
#define POLNODE_KERNELS_CPU_ONE_LANE_H_

#ifndef POLNODE_CPU_ISA_NS
#error "define POLNODE_CPU_ISA_NS before including cpu_one_lane.h"
#endif

#include <cstdint>

namespace polnode::kernels::POLNODE_CPU_ISA_NS {

struct OneLane {
  using Reg = float;
  using Mask = bool;
  static constexpr int kWidth = 1;
  static Reg Load(const float* p) { return *p; }
  // The byte at p as a float (exact: every byte value is a float).
  static Reg LoadBytes(const std::uint8_t* p) { return static_cast<float>(*p); }
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
  // Ordered comparisons (false when either side is NaN), and the NaN test.
  static Mask Lt(Reg a, Reg b) { return a < b; }
  static Mask Le(Reg a, Reg b) { return a <= b; }
  static Mask Gt(Reg a, Reg b) { return a > b; }
  static Mask Eq(Reg a, Reg b) { return a == b; }
  static Mask IsNan(Reg a) { return a != a; }
  // m ? a : b, lane by lane.
  static Reg Select(Mask m, Reg a, Reg b) { return m ? a : b; }
  // Two neighbours as the even and the odd one, and back.
  static void SplitPairs(Reg lo, Reg hi, Reg& even, Reg& odd) {
    even = lo;
    odd = hi;
  }
  static void JoinPairs(Reg even, Reg odd, Reg& first, Reg& second) {
    first = even;
    second = odd;
  }
  // A one-by-one transpose changes nothing.
  static void Transpose(Reg[kWidth]) {}
  // The vector levels' masked forms for the first n < kWidth lanes: with one lane, n is 0 and
  // nothing is read or written.
  static Reg LoadPartial(const float*, int) { return 0.0f; }
  static void StorePartial(float*, Reg, int) {}
  // Sign-bit manipulation, exact: |a|, a with its sign flipped, a's sign bit alone (+0 or -0),
  // and the bitwise or of two floats.
  static Reg Abs(Reg a) { return FromBits(Bits(a) & 0x7FFFFFFFu); }
  static Reg Neg(Reg a) { return FromBits(Bits(a) ^ 0x80000000u); }
  static Reg SignBit(Reg a) { return FromBits(Bits(a) & 0x80000000u); }
  static Reg Or(Reg a, Reg b) { return FromBits(Bits(a) | Bits(b)); }
  // 2^k for an integral k in [-126, 127] (built from the exponent bits); some finite float for
  // any other k, NaN included, which callers discard (the guard keeps the conversion defined).
  static Reg Pow2(Reg k) {
    const float biased = k + 127.0f;
    if (!(biased >= 1.0f && biased <= 254.0f)) return 0.0f;
    return FromBits(static_cast<unsigned>(static_cast<int>(biased)) << 23);
  }

 private:
  // __builtin_bit_cast, not std::bit_cast: nothing here may instantiate a library function (see
  // the file comment).
  static unsigned Bits(float a) { return __builtin_bit_cast(unsigned, a); }
  static float FromBits(unsigned u) { return __builtin_bit_cast(float, u); }
};

}  // namespace polnode::kernels::POLNODE_CPU_ISA_NS

#endif  // POLNODE_KERNELS_CPU_ONE_LANE_H_
