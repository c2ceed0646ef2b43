// The per-instruction-set kernels of the fast CPU backend: one table per level, each compiled in
// its own translation unit with that level's compiler flags (cpu_kernels_avx512.cc, ...), chosen
// at run time. Everything ISA-independent (blocking, packing, threading) lives in gemm.cc and
// cpu_backend.cc, compiled for the baseline architecture.
//
// Every kernel computes exactly the operations of op.h's canonical order, lane by lane, so all
// tables give the same bits.
//
// This header is included by the ISA-flagged files, so it includes nothing that defines inline
// functions (see cpu_isa.h for why).
#ifndef POLNODE_KERNELS_CPU_KERNELS_H_
#define POLNODE_KERNELS_CPU_KERNELS_H_

#include <cstdint>

#include "polnode/kernels/cpu_isa.h"

namespace polnode::kernels {

struct SgdParams {
  float lr, momentum, weight_decay;
};

// The per-element constants of AdamW as op.h defines them (products rounded once, on the host).
struct AdamParams {
  float lr, lr_times_wd, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction1,
      bias_correction2, eps;
};

// kConv2d3x3 and kConv2d3x3GradInput as direct convolutions over zero-bordered planes: each input
// channel's h x w plane copied into (h + 2) x (w + 2) floats with a border of +0.0f, row stride
// w + 2, channel c's at source + c * plane_stride. For o < outputs, r < rows, x < width:
//   y[o * y_stride + r * width + x] = fma chain over (c, t) ascending (c < channels, t < 9) from
//   +0.0f of weights[(o * channels + c) * 9 + t] *
//              source[c * plane_stride + (r0 + r) * (width + 2) + x + tap_offsets[t]].
// tap_offsets put each tap where op.h reads it: the forward taps (kh, kw) at kh * (w + 2) + kw,
// the input gradient's, which run the other way, at (2 - kh) * (w + 2) + 2 - kw. Vectors may
// read past a row's end (those lanes are dropped), so `source` must be readable
// kConvReadSlack floats past its last plane.
struct Conv3x3Direct {
  const float* source;
  std::int64_t plane_stride, channels, width, r0, rows;
  const std::int64_t* tap_offsets;  // 9, in chain order
  const float* weights;
  std::int64_t outputs;
  float* y;
  std::int64_t y_stride;
};

// kConv2d3x3GradWeight's chains continued over one image: for c < channels, t < 9,
// o < outputs_padded,
//   acc[(c * 9 + t) * outputs_padded + o] = fma chain continued from its value over the image's
//   pixels (h, x) ascending of dy_t[(h * width + x) * outputs_padded + o] *
//                              source[c * plane_stride + h * (width + 2) + x + tap_offsets[t]]
// with `source` the image's zero-bordered planes (Conv3x3Direct) and dy_t its dY channels-last,
// outputs_padded a multiple of conv_lanes (lanes past the real outputs compute chains nobody reads).
struct Conv3x3WeightGrad {
  const float* dy_t;
  std::int64_t outputs_padded;
  const float* source;
  std::int64_t plane_stride, channels, height, width;
  const std::int64_t* tap_offsets;  // 9, in chain order
  float* acc;
};

// One image's part of kBiasGrad's 4-D chains for `channels` <= conv_lanes adjacent channels:
//   acc[c] = acc[c] + g[c * plane + p] for p ascending, continued from acc[c], for c < channels.
// With relu_dx set (kReluGradBiasGrad; g is then relu_dx), the planes are first written as
// kReluGrad's: g[e] = relu_x[e] > 0 ? relu_dy[e] : +0.0f, for e < channels * plane.
struct BiasGradPlanes {
  const float* g;
  std::int64_t channels, plane;
  float* acc;
  const float* relu_x = nullptr;
  const float* relu_dy = nullptr;
  float* relu_dx = nullptr;
};

/// Floats past a zero-bordered source's last plane that the direct convolutions may read.
inline constexpr std::int64_t kConvReadSlack = 64;

struct CpuKernels {
  CpuIsa isa;
  // The GEMM microkernel computes an mr x nr tile of C from packed panels (gemm.cc):
  //   a: kc groups of mr floats (a[p*mr + i] = A(i, p)); b: kc groups of nr floats.
  //   c[i*ldc + j] = fma chain over p ascending of a[p*mr+i] * b[p*nr+j], starting from
  //   c[i*ldc + j] when load_c, else from +0.0f. Each element is one chain: never split.
  int mr;
  int nr;
  void (*microkernel)(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                      bool load_c);
  // y[i] = x[i] + b[i].
  void (*add)(const float* x, const float* b, float* y, std::int64_t count);
  // y[i] = x[i] + b.
  void (*add_scalar)(const float* x, float b, float* y, std::int64_t count);
  // acc[i] = acc[i] + x[i]: one step of a column sum taken row by row.
  void (*accumulate)(const float* x, float* acc, std::int64_t count);
  // y[i] = x[i] > 0 ? x[i] : +0.0f.
  void (*relu)(const float* x, float* y, std::int64_t count);
  // dx[i] = x[i] > 0 ? dy[i] : +0.0f.
  void (*relu_grad)(const float* x, const float* dy, float* dx, std::int64_t count);
  // One output row of kMaxPool2x2: window i's taps are top[2i], top[2i + 1], bottom[2i],
  // bottom[2i + 1]; y[i] is the first tap unless a later one is strictly greater (op.h), arg[i]
  // the chosen tap's index as a float.
  void (*max_pool_row)(const float* top, const float* bottom, float* y, float* arg, std::int64_t count);
  // One output row of kMaxPool2x2Grad: window i's four taps (as above) get dy[i]'s bits at tap
  // arg[i] and +0.0f at the others.
  void (*max_pool_grad_row)(const float* arg, const float* dy, float* top, float* bottom, std::int64_t count);
  // y[i] = x[i] / divisor.
  void (*divide)(const float* x, float divisor, float* y, std::int64_t count);
  // op.h's kSgdMomentum per element; w_out may be w and v_out may be v.
  void (*sgd)(const SgdParams& p, const float* w, const float* g, const float* v, float* w_out,
              float* v_out, std::int64_t count);
  // op.h's kAdamW per element; outputs may be their inputs (w, m, v).
  void (*adamw)(const AdamParams& p, const float* w, const float* g, const float* m,
                const float* v, float* w_out, float* m_out, float* v_out, std::int64_t count);
  // op.h's kGelu and kGeluGrad per element (det::GeluTanh / det::GeluTanhGrad, lane by lane).
  void (*gelu)(const float* x, float* y, std::int64_t count);
  void (*gelu_grad)(const float* x, const float* dy, float* dx, std::int64_t count);
  // y[i] = x[i] * factor.
  void (*multiply)(const float* x, float factor, float* y, std::int64_t count);
  // y[i] = det::Exp(x[i] - shift); y may be x.
  void (*exp_shifted)(const float* x, float shift, float* y, std::int64_t count);
  // kLayerNorm's row chains for `rows` rows of `channels` floats: mean[r] and rstd[r] as op.h
  // writes them (sum, then fma chain of squared deviations, both over c ascending).
  void (*layer_norm_stats)(const float* x, std::int64_t rows, std::int64_t channels, float eps,
                           float* mean, float* rstd);
  // kLayerNormGrad's row chains: a[r] = sum_g / C and b[r] = sum_gx / C.
  void (*layer_norm_grad_sums)(const float* x, const float* dy, const float* gamma,
                               const float* mean, const float* rstd, std::int64_t rows,
                               std::int64_t channels, float* a, float* b);
  // The fma chain over i ascending from +0.0f of p[i] * q[i].
  float (*dot_chain)(const float* p, const float* q, std::int64_t count);
  // kLayerNorm's output for one row: y[i] = fma((x[i] - mean) * rstd, gamma[i], beta[i]).
  void (*layer_norm_row)(const float* x, float mean, float rstd, const float* gamma,
                         const float* beta, float* y, std::int64_t count);
  // kLayerNormGrad's dX for one row, from its a = sum_g / C and b = sum_gx / C:
  //   dx[i] = rstd * fma(-xhat, b, dy[i] * gamma[i] - a), xhat = (x[i] - mean) * rstd.
  void (*layer_norm_grad_row)(const float* x, const float* dy, const float* gamma, float mean,
                              float rstd, float a, float b, float* dx, std::int64_t count);
  // One row's step of kLayerNormGrad's column chains: dgamma[i] = fma(dy[i], xhat, dgamma[i]),
  // dbeta[i] = dbeta[i] + dy[i], xhat = (x[i] - mean) * rstd.
  void (*layer_norm_param_step)(const float* x, const float* dy, float mean, float rstd,
                                float* dgamma, float* dbeta, std::int64_t count);
  // kCausalSoftmaxGrad for one row's visible part: ds[i] = (p[i] * (dp[i] - dot)) * scale.
  void (*softmax_grad_row)(const float* p, const float* dp, float dot, float scale, float* ds,
                           std::int64_t count);
  // The direct convolutions (Conv3x3Direct, Conv3x3WeightGrad above). conv_lanes: floats per
  // register, which Conv3x3WeightGrad::outputs_padded must be a multiple of.
  void (*conv3x3_direct)(const Conv3x3Direct& args);
  void (*conv3x3_weight_grad)(const Conv3x3WeightGrad& args);
  // dst[p * stride + c] = src[c * plane + p] for c < channels, p < plane (a [channels, plane]
  // block to channels-last, as Conv3x3WeightGrad reads dY); stride must be a multiple of
  // conv_lanes of at least channels, and dst[p * stride + c] for channels <= c < the next multiple
  // of conv_lanes is written +0.0f. Copies only.
  void (*channels_last)(const float* src, std::int64_t channels, std::int64_t plane, std::int64_t stride, float* dst);
  int conv_lanes;
  // The 4-D bias gradient's chains over one image (BiasGradPlanes above): the channels' values
  // gathered into lanes by register transposes, so that one vector addition steps every chain.
  void (*bias_grad_planes)(const BiasGradPlanes& args);
  // y[i] = (float(pixels[i]) / 255 - mean) / stddev, each operation rounded to float.
  void (*normalize_pixels)(const std::uint8_t* pixels, float mean, float stddev, float* y, std::int64_t count);
};

/// The table for `isa`. Precondition: `isa` is in AvailableCpuIsas().
const CpuKernels& GetCpuKernels(CpuIsa isa);

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_CPU_KERNELS_H_
