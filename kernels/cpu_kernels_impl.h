// The bodies of the fast CPU kernels (cpu_kernels.h), written once over a "lanes" type and
// compiled once per instruction set. Not a normal header: each cpu_kernels_<isa>.cc includes it
// after defining
//   POLNODE_CPU_ISA_NS   a namespace name unique to that file (avx512, avx2, scalar), so that no
//                        symbol compiled with one set of ISA flags can be picked by the linker
//                        for code running at another level;
//   POLNODE_CPU_ISA      the CpuIsa enumerator of that level;
// and, inside namespace polnode::kernels::POLNODE_CPU_ISA_NS (after including cpu_one_lane.h),
//   struct Lanes         kWidth floats per register with Load/Store/Set1/Zero/Add/Sub/Mul/Div/
//                        Sqrt/Fma/PositiveSelect, each one IEEE operation per lane (LoadBytes:
//                        kWidth bytes, each converted to a float), and the
//                        Mask type with Lt/Le/Gt/Eq/IsNan/Select and the exact bit operations
//                        Abs/Neg/SignBit/Or/Pow2 that det::Exp and det::Tanh need, and the
//                        copies SplitPairs/JoinPairs (the even and odd floats of two
//                        registers, and back), LoadPartial/StorePartial (the first n < kWidth
//                        lanes, masked) and Transpose (kWidth registers);
//   kMicroRows, kMicroVectors   the microkernel tile: kMicroRows x (kMicroVectors * kWidth).
// Vector bodies and their scalar tails run the same operations, so a lane's result never depends
// on whether it sat in a vector or in the tail.

#include <cstdint>

#include "cpu_kernels.h"
#include "cpu_one_lane.h"
#include "polnode/kernels/detmath_constants.h"

#if defined(__clang__)
#define POLNODE_UNROLL _Pragma("unroll")
#else
#define POLNODE_UNROLL _Pragma("GCC unroll 32")
#endif

namespace polnode::kernels::POLNODE_CPU_ISA_NS {

// Calls body.operator()<L>(i) for i = 0, kWidth, 2 kWidth, ... with L = Lanes while a whole
// register fits, then with L = OneLane for the remaining elements.
template <typename Body>
void ForEachLane(std::int64_t count, Body&& body) {
  std::int64_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) body.template operator()<Lanes>(i);
  for (; i < count; ++i) body.template operator()<OneLane>(i);
}

// ---- det::Exp, det::Tanh and the GELU formulas, lane by lane ----------------------------------
// The same operations as detmath.h, in the same order, for every lane; where the scalar code
// branches (special cases, range reduction paths) every path is computed and Select keeps the one
// the scalar code would take, so each lane has det::'s bits exactly. cpu_backend_test.cc checks
// this over sweeps of inputs, special values included.

template <typename L>
typename L::Reg ExpLanes(typename L::Reg x) {
  using R = typename L::Reg;
  using namespace det::detail;
  const R shifter = L::Set1(kRoundShifter);
  const R shifted = L::Fma(x, L::Set1(kLog2e), shifter);
  // det::Exp reads k from the bits of `shifted`; kf = shifted - shifter is the same integer as a
  // float wherever the result is not replaced by a special case below.
  const R kf = L::Sub(shifted, shifter);
  const R neg_kf = L::Neg(kf);
  R r = L::Fma(neg_kf, L::Set1(kLn2Hi), x);
  r = L::Fma(neg_kf, L::Set1(kLn2Lo), r);
  R p = L::Fma(L::Set1(kExpC7), r, L::Set1(kExpC6));
  p = L::Fma(p, r, L::Set1(kExpC5));
  p = L::Fma(p, r, L::Set1(kExpC4));
  p = L::Fma(p, r, L::Set1(kExpC3));
  p = L::Fma(p, r, L::Set1(kExpC2));
  p = L::Fma(p, r, L::Set1(1.0f));
  p = L::Fma(p, r, L::Set1(1.0f));
  // k > 127: (p * 2^(k-1)) * 2;  k < -126: (p * 2^(k+64)) * 2^-64;  else p * 2^k.
  const typename L::Mask big = L::Gt(kf, L::Set1(127.0f));
  const typename L::Mask small = L::Lt(kf, L::Set1(-126.0f));
  const R k_scaled =
      L::Select(big, L::Sub(kf, L::Set1(1.0f)), L::Select(small, L::Add(kf, L::Set1(64.0f)), kf));
  R y = L::Mul(p, L::Pow2(k_scaled));
  y = L::Select(big, L::Mul(y, L::Set1(2.0f)), L::Select(small, L::Mul(y, L::Set1(0x1p-64f)), y));
  y = L::Select(L::Lt(x, L::Set1(kExpUnderflowAt)), L::Zero(), y);
  y = L::Select(L::Gt(x, L::Set1(kExpOverflowAt)), L::Set1(__builtin_inff()), y);
  return L::Select(L::IsNan(x), L::Add(x, x), y);
}

template <typename L>
typename L::Reg TanhLanes(typename L::Reg x) {
  using R = typename L::Reg;
  using namespace det::detail;
  const R a = L::Abs(x);
  const R z = L::Mul(a, a);
  R p = L::Fma(L::Set1(kTanhP7), z, L::Set1(kTanhP6));
  p = L::Fma(p, z, L::Set1(kTanhP5));
  p = L::Fma(p, z, L::Set1(kTanhP4));
  p = L::Fma(p, z, L::Set1(kTanhP3));
  p = L::Fma(p, z, L::Set1(kTanhP2));
  p = L::Fma(p, z, L::Set1(kTanhP1));
  p = L::Fma(p, z, L::Set1(kTanhP0));
  const R polynomial = L::Fma(a, L::Mul(z, p), a);
  const R exponential =
      L::Sub(L::Set1(1.0f),
             L::Div(L::Set1(2.0f), L::Add(ExpLanes<L>(L::Mul(L::Set1(2.0f), a)), L::Set1(1.0f))));
  R y = L::Select(L::Lt(a, L::Set1(kTanhSplit)), polynomial, exponential);
  y = L::Select(L::Le(L::Set1(kTanhOneFrom), a), L::Set1(1.0f), y);
  y = L::Or(y, L::SignBit(x));
  y = L::Select(L::Lt(a, L::Set1(kTanhTinyBelow)), x, y);
  return L::Select(L::IsNan(x), L::Add(x, x), y);
}

void Microkernel(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                 bool load_c) {
  constexpr int kW = Lanes::kWidth;
  constexpr int kNr = kMicroVectors * kW;
  typename Lanes::Reg acc[kMicroRows][kMicroVectors];
  POLNODE_UNROLL
  for (int i = 0; i < kMicroRows; ++i) {
    POLNODE_UNROLL
    for (int j = 0; j < kMicroVectors; ++j) {
      acc[i][j] = load_c ? Lanes::Load(c + i * ldc + j * kW) : Lanes::Zero();
    }
  }
  for (std::int64_t p = 0; p < kc; ++p) {
    typename Lanes::Reg bv[kMicroVectors];
    POLNODE_UNROLL
    for (int j = 0; j < kMicroVectors; ++j) bv[j] = Lanes::Load(b + p * kNr + j * kW);
    POLNODE_UNROLL
    for (int i = 0; i < kMicroRows; ++i) {
      const typename Lanes::Reg av = Lanes::Set1(a[p * kMicroRows + i]);
      POLNODE_UNROLL
      for (int j = 0; j < kMicroVectors; ++j) acc[i][j] = Lanes::Fma(av, bv[j], acc[i][j]);
    }
  }
  POLNODE_UNROLL
  for (int i = 0; i < kMicroRows; ++i) {
    POLNODE_UNROLL
    for (int j = 0; j < kMicroVectors; ++j) Lanes::Store(c + i * ldc + j * kW, acc[i][j]);
  }
}

void Add(const float* x, const float* b, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(y + i, L::Add(L::Load(x + i), L::Load(b + i)));
  });
}

void AddScalar(const float* x, float b, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(y + i, L::Add(L::Load(x + i), L::Set1(b)));
  });
}

void Accumulate(const float* x, float* acc, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(acc + i, L::Add(L::Load(acc + i), L::Load(x + i)));
  });
}

// even[i] = p[2i], odd[i] = p[2i + 1] for i < kWidth, and back; the Partial forms for the first
// n < kWidth pairs only (masked: nothing past them is read or written).
template <typename L>
void LoadPairs(const float* p, typename L::Reg& even, typename L::Reg& odd) {
  L::SplitPairs(L::Load(p), L::Load(p + L::kWidth), even, odd);
}
template <typename L>
void StorePairs(float* p, typename L::Reg even, typename L::Reg odd) {
  typename L::Reg first, second;
  L::JoinPairs(even, odd, first, second);
  L::Store(p, first);
  L::Store(p + L::kWidth, second);
}
template <typename L>
void LoadPairsPartial(const float* p, int n, typename L::Reg& even, typename L::Reg& odd) {
  L::SplitPairs(L::LoadPartial(p, 2 * n), L::LoadPartial(p + L::kWidth, 2 * n - L::kWidth), even, odd);
}
template <typename L>
void StorePairsPartial(float* p, typename L::Reg even, typename L::Reg odd, int n) {
  typename L::Reg first, second;
  L::JoinPairs(even, odd, first, second);
  L::StorePartial(p, first, 2 * n);
  L::StorePartial(p + L::kWidth, second, 2 * n - L::kWidth);
}

// kMaxPool2x2 for n windows of one output row: n = kWidth through whole registers, n < kWidth
// through masked loads and stores (a short row, such as a 28-wide image's 14 windows, stays in
// one register instead of going lane by lane).
template <bool kPartial>
void MaxPoolWindows(const float* top, const float* bottom, float* y, float* arg, int n) {
  using R = typename Lanes::Reg;
  R tap[4];
  if constexpr (kPartial) {
    LoadPairsPartial<Lanes>(top, n, tap[0], tap[1]);
    LoadPairsPartial<Lanes>(bottom, n, tap[2], tap[3]);
  } else {
    LoadPairs<Lanes>(top, tap[0], tap[1]);
    LoadPairs<Lanes>(bottom, tap[2], tap[3]);
  }
  R best = tap[0], which = Lanes::Zero();
  POLNODE_UNROLL
  for (int t = 1; t < 4; ++t) {
    const typename Lanes::Mask greater = Lanes::Gt(tap[t], best);  // false for NaN on either side
    best = Lanes::Select(greater, tap[t], best);
    which = Lanes::Select(greater, Lanes::Set1(static_cast<float>(t)), which);
  }
  if constexpr (kPartial) {
    Lanes::StorePartial(y, best, n);
    Lanes::StorePartial(arg, which, n);
  } else {
    Lanes::Store(y, best);
    Lanes::Store(arg, which);
  }
}

void MaxPoolRow(const float* top, const float* bottom, float* y, float* arg, std::int64_t count) {
  std::int64_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    MaxPoolWindows<false>(top + 2 * i, bottom + 2 * i, y + i, arg + i, Lanes::kWidth);
  }
  if (i < count) MaxPoolWindows<true>(top + 2 * i, bottom + 2 * i, y + i, arg + i, static_cast<int>(count - i));
}

// kMaxPool2x2Grad for n windows of one output row, as MaxPoolWindows.
template <bool kPartial>
void MaxPoolGradWindows(const float* arg, const float* dy, float* top, float* bottom, int n) {
  using R = typename Lanes::Reg;
  const R which = kPartial ? Lanes::LoadPartial(arg, n) : Lanes::Load(arg);
  const R g = kPartial ? Lanes::LoadPartial(dy, n) : Lanes::Load(dy);
  R tap[4];
  POLNODE_UNROLL
  for (int t = 0; t < 4; ++t) {
    tap[t] = Lanes::Select(Lanes::Eq(which, Lanes::Set1(static_cast<float>(t))), g, Lanes::Zero());
  }
  if constexpr (kPartial) {
    StorePairsPartial<Lanes>(top, tap[0], tap[1], n);
    StorePairsPartial<Lanes>(bottom, tap[2], tap[3], n);
  } else {
    StorePairs<Lanes>(top, tap[0], tap[1]);
    StorePairs<Lanes>(bottom, tap[2], tap[3]);
  }
}

void MaxPoolGradRow(const float* arg, const float* dy, float* top, float* bottom, std::int64_t count) {
  std::int64_t i = 0;
  for (; i + Lanes::kWidth <= count; i += Lanes::kWidth) {
    MaxPoolGradWindows<false>(arg + i, dy + i, top + 2 * i, bottom + 2 * i, Lanes::kWidth);
  }
  if (i < count) {
    MaxPoolGradWindows<true>(arg + i, dy + i, top + 2 * i, bottom + 2 * i, static_cast<int>(count - i));
  }
}

void Relu(const float* x, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg v = L::Load(x + i);
    L::Store(y + i, L::PositiveSelect(v, v));
  });
}

void ReluGrad(const float* x, const float* dy, float* dx, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(dx + i, L::PositiveSelect(L::Load(x + i), L::Load(dy + i)));
  });
}

void NormalizePixels(const std::uint8_t* pixels, float mean, float stddev, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg unit = L::Div(L::LoadBytes(pixels + i), L::Set1(255.0f));
    L::Store(y + i, L::Div(L::Sub(unit, L::Set1(mean)), L::Set1(stddev)));
  });
}

void Divide(const float* x, float divisor, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(y + i, L::Div(L::Load(x + i), L::Set1(divisor)));
  });
}

// d = fma(wd, w, g); v' = fma(momentum, v, d); w' = fma(-lr, v', w). All loads of a block happen
// before its stores, so in-place updates are safe.
void Sgd(const SgdParams& prm, const float* w, const float* g, const float* v, float* w_out,
         float* v_out, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg we = L::Load(w + i);
    const typename L::Reg d = L::Fma(L::Set1(prm.weight_decay), we, L::Load(g + i));
    const typename L::Reg v_new = L::Fma(L::Set1(prm.momentum), L::Load(v + i), d);
    L::Store(w_out + i, L::Fma(L::Set1(-prm.lr), v_new, we));
    L::Store(v_out + i, v_new);
  });
}

void AdamW(const AdamParams& prm, const float* w, const float* g, const float* m, const float* v,
           float* w_out, float* m_out, float* v_out, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg we = L::Load(w + i), ge = L::Load(g + i);
    const typename L::Reg w1 = L::Fma(L::Set1(-prm.lr_times_wd), we, we);
    const typename L::Reg m_new =
        L::Fma(L::Set1(prm.beta1), L::Load(m + i), L::Mul(L::Set1(prm.one_minus_beta1), ge));
    const typename L::Reg v_new = L::Fma(L::Set1(prm.beta2), L::Load(v + i),
                                         L::Mul(L::Mul(L::Set1(prm.one_minus_beta2), ge), ge));
    const typename L::Reg mhat = L::Div(m_new, L::Set1(prm.bias_correction1));
    const typename L::Reg vhat = L::Div(v_new, L::Set1(prm.bias_correction2));
    const typename L::Reg step = L::Div(mhat, L::Add(L::Sqrt(vhat), L::Set1(prm.eps)));
    L::Store(w_out + i, L::Sub(w1, L::Mul(L::Set1(prm.lr), step)));
    L::Store(m_out + i, m_new);
    L::Store(v_out + i, v_new);
  });
}

void Gelu(const float* x, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg v = L::Load(x + i);
    const typename L::Reg inner = L::Mul(
        L::Set1(det::kGeluBeta), L::Fma(L::Set1(det::kGeluKappa), L::Mul(L::Mul(v, v), v), v));
    L::Store(y + i, L::Mul(L::Mul(L::Set1(0.5f), v), L::Add(L::Set1(1.0f), TanhLanes<L>(inner))));
  });
}

void GeluGrad(const float* x, const float* dy, float* dx, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    using R = typename L::Reg;
    const R v = L::Load(x + i);
    const R u = L::Mul(v, v);
    const R th = TanhLanes<L>(
        L::Mul(L::Set1(det::kGeluBeta), L::Fma(L::Set1(det::kGeluKappa), L::Mul(u, v), v)));
    const R left = L::Mul(L::Set1(0.5f), L::Add(L::Set1(1.0f), th));
    const R sech2 = L::Fma(L::Neg(th), th, L::Set1(1.0f));
    const R right = L::Mul(
        L::Mul(L::Mul(L::Set1(0.5f), v), sech2),
        L::Mul(L::Set1(det::kGeluBeta), L::Fma(L::Set1(det::kGeluKappa3), u, L::Set1(1.0f))));
    L::Store(dx + i, L::Mul(L::Load(dy + i), L::Add(left, right)));
  });
}

void Multiply(const float* x, float factor, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(y + i, L::Mul(L::Load(x + i), L::Set1(factor)));
  });
}

void ExpShifted(const float* x, float shift, float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    L::Store(y + i, ExpLanes<L>(L::Sub(L::Load(x + i), L::Set1(shift))));
  });
}

// Row chains run on scalar registers, each in its op.h order; kRowBlock rows at a time with their
// chains interleaved, so the adds of different rows overlap instead of waiting on each other.
constexpr int kRowBlock = 8;

template <int kRows>
void LayerNormStatsBlock(const float* x, std::int64_t channels, float eps, float* mean,
                         float* rstd) {
  const auto cf = static_cast<float>(channels);
  float sum[kRows], sq[kRows];
  for (int i = 0; i < kRows; ++i) sum[i] = sq[i] = 0.0f;
  for (std::int64_t c = 0; c < channels; ++c) {
    for (int i = 0; i < kRows; ++i) sum[i] = sum[i] + x[i * channels + c];
  }
  for (int i = 0; i < kRows; ++i) mean[i] = sum[i] / cf;
  for (std::int64_t c = 0; c < channels; ++c) {
    for (int i = 0; i < kRows; ++i) {
      const float d = x[i * channels + c] - mean[i];
      sq[i] = OneLane::Fma(d, d, sq[i]);
    }
  }
  for (int i = 0; i < kRows; ++i) rstd[i] = 1.0f / OneLane::Sqrt(sq[i] / cf + eps);
}

void LayerNormStats(const float* x, std::int64_t rows, std::int64_t channels, float eps,
                    float* mean, float* rstd) {
  std::int64_t r = 0;
  for (; r + kRowBlock <= rows; r += kRowBlock) {
    LayerNormStatsBlock<kRowBlock>(x + r * channels, channels, eps, mean + r, rstd + r);
  }
  for (; r < rows; ++r) LayerNormStatsBlock<1>(x + r * channels, channels, eps, mean + r, rstd + r);
}

template <int kRows>
void LayerNormGradSumsBlock(const float* x, const float* dy, const float* gamma, const float* mean,
                            const float* rstd, std::int64_t channels, float* a, float* b) {
  const auto cf = static_cast<float>(channels);
  float sum_g[kRows], sum_gx[kRows];
  for (int i = 0; i < kRows; ++i) sum_g[i] = sum_gx[i] = 0.0f;
  for (std::int64_t c = 0; c < channels; ++c) {
    for (int i = 0; i < kRows; ++i) {
      const float g = dy[i * channels + c] * gamma[c];
      const float xhat = (x[i * channels + c] - mean[i]) * rstd[i];
      sum_g[i] = sum_g[i] + g;
      sum_gx[i] = OneLane::Fma(g, xhat, sum_gx[i]);
    }
  }
  for (int i = 0; i < kRows; ++i) {
    a[i] = sum_g[i] / cf;
    b[i] = sum_gx[i] / cf;
  }
}

void LayerNormGradSums(const float* x, const float* dy, const float* gamma, const float* mean,
                       const float* rstd, std::int64_t rows, std::int64_t channels, float* a,
                       float* b) {
  std::int64_t r = 0;
  for (; r + kRowBlock <= rows; r += kRowBlock) {
    const std::int64_t off = r * channels;
    LayerNormGradSumsBlock<kRowBlock>(x + off, dy + off, gamma, mean + r, rstd + r, channels, a + r,
                                      b + r);
  }
  for (; r < rows; ++r) {
    const std::int64_t off = r * channels;
    LayerNormGradSumsBlock<1>(x + off, dy + off, gamma, mean + r, rstd + r, channels, a + r, b + r);
  }
}

float DotChain(const float* p, const float* q, std::int64_t count) {
  float acc = 0.0f;
  for (std::int64_t i = 0; i < count; ++i) acc = OneLane::Fma(p[i], q[i], acc);
  return acc;
}

void LayerNormRow(const float* x, float mean, float rstd, const float* gamma, const float* beta,
                  float* y, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg xhat = L::Mul(L::Sub(L::Load(x + i), L::Set1(mean)), L::Set1(rstd));
    L::Store(y + i, L::Fma(xhat, L::Load(gamma + i), L::Load(beta + i)));
  });
}

void LayerNormGradRow(const float* x, const float* dy, const float* gamma, float mean, float rstd,
                      float a, float b, float* dx, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    using R = typename L::Reg;
    const R xhat = L::Mul(L::Sub(L::Load(x + i), L::Set1(mean)), L::Set1(rstd));
    const R g = L::Mul(L::Load(dy + i), L::Load(gamma + i));
    L::Store(dx + i,
             L::Mul(L::Set1(rstd), L::Fma(L::Neg(xhat), L::Set1(b), L::Sub(g, L::Set1(a)))));
  });
}

void LayerNormParamStep(const float* x, const float* dy, float mean, float rstd, float* dgamma,
                        float* dbeta, std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg xhat = L::Mul(L::Sub(L::Load(x + i), L::Set1(mean)), L::Set1(rstd));
    const typename L::Reg d = L::Load(dy + i);
    L::Store(dgamma + i, L::Fma(d, xhat, L::Load(dgamma + i)));
    L::Store(dbeta + i, L::Add(L::Load(dbeta + i), d));
  });
}

void SoftmaxGradRow(const float* p, const float* dp, float dot, float scale, float* ds,
                    std::int64_t count) {
  ForEachLane(count, [&]<typename L>(std::int64_t i) {
    const typename L::Reg pv = L::Load(p + i);
    L::Store(ds + i, L::Mul(L::Mul(pv, L::Sub(L::Load(dp + i), L::Set1(dot))), L::Set1(scale)));
  });
}

// ---- Direct 3x3 convolutions (cpu_kernels.h Conv3x3Direct, Conv3x3WeightGrad) ---------------

// Outs output planes x Vecs registers along a row, from column x0 of row r: the chains run over
// (c, t) in order, each lane its own output; lanes at or past `width` are computed from whatever
// the row's slack holds and dropped.
template <int Outs, int Vecs>
void Conv3x3Block(const Conv3x3Direct& a, std::int64_t o0, std::int64_t r, std::int64_t x0) {
  using R = Lanes::Reg;
  constexpr int kW = Lanes::kWidth;
  R acc[Outs][Vecs];
  POLNODE_UNROLL
  for (int o = 0; o < Outs; ++o) {
    POLNODE_UNROLL
    for (int v = 0; v < Vecs; ++v) acc[o][v] = Lanes::Zero();
  }
  const std::int64_t origin = (a.r0 + r) * (a.width + 2) + x0;
  const std::int64_t weight_stride = a.channels * 9;
  for (std::int64_t c = 0; c < a.channels; ++c) {
    const float* src = a.source + c * a.plane_stride + origin;
    const float* wc = a.weights + o0 * weight_stride + c * 9;
    for (int t = 0; t < 9; ++t) {
      const float* s = src + a.tap_offsets[t];
      R xv[Vecs];
      POLNODE_UNROLL
      for (int v = 0; v < Vecs; ++v) xv[v] = Lanes::Load(s + v * kW);
      POLNODE_UNROLL
      for (int o = 0; o < Outs; ++o) {
        const R wv = Lanes::Set1(wc[o * weight_stride + t]);
        POLNODE_UNROLL
        for (int v = 0; v < Vecs; ++v) acc[o][v] = Lanes::Fma(wv, xv[v], acc[o][v]);
      }
    }
  }
  const std::int64_t left = a.width - x0;
  POLNODE_UNROLL
  for (int o = 0; o < Outs; ++o) {
    float* y = a.y + (o0 + o) * a.y_stride + r * a.width + x0;
    POLNODE_UNROLL
    for (int v = 0; v < Vecs; ++v) {
      if (left >= (v + 1) * kW) {
        Lanes::Store(y + v * kW, acc[o][v]);
      } else if (left > v * kW) {
        float lanes[kW];
        Lanes::Store(lanes, acc[o][v]);
        for (std::int64_t i = v * kW; i < left; ++i) y[i] = lanes[i - v * kW];
      }
    }
  }
}

template <int Outs>
void Conv3x3Outputs(const Conv3x3Direct& a, std::int64_t o0) {
  constexpr int kW = Lanes::kWidth;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    std::int64_t x0 = 0;
    for (; a.width - x0 > kW; x0 += 2 * kW) Conv3x3Block<Outs, 2>(a, o0, r, x0);
    if (x0 < a.width) Conv3x3Block<Outs, 1>(a, o0, r, x0);
  }
}

void Conv3x3DirectKernel(const Conv3x3Direct& a) {
  constexpr int kOuts = 4;  // 4 planes x 2 registers: 8 independent chains per loaded row
  std::int64_t o0 = 0;
  for (; o0 + kOuts <= a.outputs; o0 += kOuts) Conv3x3Outputs<kOuts>(a, o0);
  for (; o0 < a.outputs; ++o0) Conv3x3Outputs<1>(a, o0);
}

// Channels c0 .. c0 + Channels of the weight gradient for output register ov: 9 * Channels
// chains, one pass over the image's pixels.
template <int Channels>
void Conv3x3WeightGradGroup(const Conv3x3WeightGrad& a, std::int64_t c0, std::int64_t ov) {
  using R = Lanes::Reg;
  constexpr int kW = Lanes::kWidth;
  R acc[Channels][9];
  float* out = a.acc + ov * kW;
  POLNODE_UNROLL
  for (int c = 0; c < Channels; ++c) {
    POLNODE_UNROLL
    for (int t = 0; t < 9; ++t) acc[c][t] = Lanes::Load(out + ((c0 + c) * 9 + t) * a.outputs_padded);
  }
  std::int64_t offsets[9];
  for (int t = 0; t < 9; ++t) offsets[t] = a.tap_offsets[t];
  for (std::int64_t h = 0; h < a.height; ++h) {
    const float* d = a.dy_t + h * a.width * a.outputs_padded + ov * kW;
    const float* row = a.source + c0 * a.plane_stride + h * (a.width + 2);
    for (std::int64_t x = 0; x < a.width; ++x) {
      const R dv = Lanes::Load(d + x * a.outputs_padded);
      POLNODE_UNROLL
      for (int c = 0; c < Channels; ++c) {
        const float* s = row + c * a.plane_stride + x;
        POLNODE_UNROLL
        for (int t = 0; t < 9; ++t) acc[c][t] = Lanes::Fma(dv, Lanes::Set1(s[offsets[t]]), acc[c][t]);
      }
    }
  }
  POLNODE_UNROLL
  for (int c = 0; c < Channels; ++c) {
    POLNODE_UNROLL
    for (int t = 0; t < 9; ++t) Lanes::Store(out + ((c0 + c) * 9 + t) * a.outputs_padded, acc[c][t]);
  }
}

void Conv3x3WeightGradKernel(const Conv3x3WeightGrad& a) {
  // Registers for 9 chains per channel: three channels where there are 32 registers (27 chains),
  // one where there are 16.
  constexpr int kChannels = Lanes::kWidth >= 16 ? 3 : 1;
  for (std::int64_t ov = 0; ov < a.outputs_padded / Lanes::kWidth; ++ov) {
    std::int64_t c0 = 0;
    for (; c0 + kChannels <= a.channels; c0 += kChannels) Conv3x3WeightGradGroup<kChannels>(a, c0, ov);
    for (; c0 < a.channels; ++c0) Conv3x3WeightGradGroup<1>(a, c0, ov);
  }
}

void ChannelsLast(const float* src, std::int64_t channels, std::int64_t plane, std::int64_t stride, float* dst) {
  constexpr int kW = Lanes::kWidth;
  for (std::int64_t c0 = 0; c0 < channels; c0 += kW) {
    const std::int64_t rows = channels - c0 < kW ? channels - c0 : kW;
    std::int64_t p = 0;
    // kW pixels of kW channels at a time through a register transpose (channels past the last
    // are zero rows, so their lanes in dst are written +0.0f).
    for (; kW > 1 && p + kW <= plane; p += kW) {
      typename Lanes::Reg r[kW];
      for (int i = 0; i < kW; ++i) r[i] = i < rows ? Lanes::Load(src + (c0 + i) * plane + p) : Lanes::Zero();
      Lanes::Transpose(r);
      for (int i = 0; i < kW; ++i) Lanes::Store(dst + (p + i) * stride + c0, r[i]);
    }
    for (; p < plane; ++p) {
      for (std::int64_t c = c0; c < c0 + kW; ++c) dst[p * stride + c] = c < channels ? src[c * plane + p] : 0.0f;
    }
  }
}

void BiasGradPlanesKernel(const BiasGradPlanes& a) {
  constexpr int kW = Lanes::kWidth;
  const int rows = static_cast<int>(a.channels);
  // The ReLU's gradient first, in one sequential pass (the planes are adjacent): the sums below
  // then read g from the cache instead of streaming `rows` planes at once.
  if (a.relu_dx != nullptr) ReluGrad(a.relu_x, a.relu_dy, a.relu_dx, a.channels * a.plane);
  // Lane c holds channel c's chain; lanes past `rows` add +0.0f rows and are never stored.
  typename Lanes::Reg sum = rows == kW ? Lanes::Load(a.acc) : Lanes::LoadPartial(a.acc, rows);
  std::int64_t p = 0;
  for (; p + kW <= a.plane; p += kW) {
    typename Lanes::Reg r[kW];
    POLNODE_UNROLL
    for (int i = 0; i < kW; ++i) r[i] = i < rows ? Lanes::Load(a.g + i * a.plane + p) : Lanes::Zero();
    Lanes::Transpose(r);  // r[i]: element p + i of every channel
    POLNODE_UNROLL
    for (int i = 0; i < kW; ++i) sum = Lanes::Add(sum, r[i]);
  }
  if (rows == kW) {
    Lanes::Store(a.acc, sum);
  } else {
    Lanes::StorePartial(a.acc, sum, rows);
  }
  for (; p < a.plane; ++p) {
    for (int c = 0; c < rows; ++c) a.acc[c] = a.acc[c] + a.g[c * a.plane + p];
  }
}

const CpuKernels kKernels = {
    .isa = POLNODE_CPU_ISA,
    .mr = kMicroRows,
    .nr = kMicroVectors * Lanes::kWidth,
    .microkernel = Microkernel,
    .add = Add,
    .add_scalar = AddScalar,
    .accumulate = Accumulate,
    .relu = Relu,
    .relu_grad = ReluGrad,
    .max_pool_row = MaxPoolRow,
    .max_pool_grad_row = MaxPoolGradRow,
    .divide = Divide,
    .sgd = Sgd,
    .adamw = AdamW,
    .gelu = Gelu,
    .gelu_grad = GeluGrad,
    .multiply = Multiply,
    .exp_shifted = ExpShifted,
    .layer_norm_stats = LayerNormStats,
    .layer_norm_grad_sums = LayerNormGradSums,
    .dot_chain = DotChain,
    .layer_norm_row = LayerNormRow,
    .layer_norm_grad_row = LayerNormGradRow,
    .layer_norm_param_step = LayerNormParamStep,
    .softmax_grad_row = SoftmaxGradRow,
    .conv3x3_direct = Conv3x3DirectKernel,
    .conv3x3_weight_grad = Conv3x3WeightGradKernel,
    .channels_last = ChannelsLast,
    .conv_lanes = Lanes::kWidth,
    .bias_grad_planes = BiasGradPlanesKernel,
    .normalize_pixels = NormalizePixels,
};

}  // namespace polnode::kernels::POLNODE_CPU_ISA_NS

#undef POLNODE_UNROLL
