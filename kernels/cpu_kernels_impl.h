// The bodies of the fast CPU kernels (cpu_kernels.h), written once over a "lanes" type and
// compiled once per instruction set. Not a normal header: each cpu_kernels_<isa>.cc includes it
// after defining
//   POLNODE_CPU_ISA_NS   a namespace name unique to that file (avx512, avx2, scalar), so that no
//                        symbol compiled with one set of ISA flags can be picked by the linker
//                        for code running at another level;
//   POLNODE_CPU_ISA      the CpuIsa enumerator of that level;
// and, inside namespace polnode::kernels::POLNODE_CPU_ISA_NS (after including cpu_one_lane.h),
//   struct Lanes         kWidth floats per register with Load/Store/Set1/Zero/Add/Sub/Mul/Div/
//                        Sqrt/Fma/PositiveSelect, each one IEEE operation per lane;
//   kMicroRows, kMicroVectors   the microkernel tile: kMicroRows x (kMicroVectors * kWidth).
// Vector bodies and their scalar tails run the same operations, so a lane's result never depends
// on whether it sat in a vector or in the tail.

#include <cstdint>

#include "cpu_kernels.h"
#include "cpu_one_lane.h"

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
    .divide = Divide,
    .sgd = Sgd,
    .adamw = AdamW,
};

}  // namespace polnode::kernels::POLNODE_CPU_ISA_NS

#undef POLNODE_UNROLL
