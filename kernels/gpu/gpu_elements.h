// gpu_elements.h: the arithmetic of the GPU kernels, one output element (or one phase of a tile)
// at a time, as POLNODE_HOST_DEVICE functions.
//
// gpu_backend.cu's kernels are thin loops around these functions, and the same functions compile
// for the host, so tests/kernels/gpu_twin_test.cc can run the GPU backend's exact index math and
// evaluation order on a CPU (where CI has no GPU) and compare it bit for bit with the reference.
// Every fma is det::Fma (fmaf's single rounding on both sides); every other operation is a plain
// IEEE + - * / or sqrt, which nvcc (--fmad=false), hipcc and g++ (-ffp-contract=off) all leave
// unfused.
#ifndef POLNODE_KERNELS_GPU_GPU_ELEMENTS_H_
#define POLNODE_KERNELS_GPU_GPU_ELEMENTS_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#if defined(__CUDACC__) || defined(__HIPCC__)
// The vendor runtime first: detmath.h's device paths use its intrinsics (__fmaf_rn, ...).
#include "gpu/gpu_vendor.h"
#endif
#include "polnode/kernels/detmath.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <cmath>
#endif

namespace polnode::kernels::gpu {

using i64 = std::int64_t;

/// Correctly rounded square root on host and device (nvcc --prec-sqrt=true, hipcc
/// -fhip-fp32-correctly-rounded-divide-sqrt).
POLNODE_HOST_DEVICE inline float Sqrt(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return sqrtf(x);
#else
  return std::sqrt(x);
#endif
}

// ---- Long chains ---------------------------------------------------------------------------
// A thread that runs one long chain (a weight or bias gradient over a whole batch) spends its time
// waiting for loads unless the loads run ahead of the arithmetic. SumChain loads a group of
// kChainGroup terms while the previous group's steps run; the steps themselves, and their order,
// are the plain loop's.
inline constexpr int kChainGroup = 8;

/// acc continued with acc + v[k] for k = 0 .. n-1 ascending.
POLNODE_HOST_DEVICE inline float SumChain(const float* v, i64 n, float acc) {
  i64 k = 0;
  if (n >= kChainGroup) {
    float cur[kChainGroup];
    for (int g = 0; g < kChainGroup; ++g) cur[g] = v[g];
    for (k = kChainGroup; k + kChainGroup <= n; k += kChainGroup) {
      float next[kChainGroup];
      for (int g = 0; g < kChainGroup; ++g) next[g] = v[k + g];
      for (int g = 0; g < kChainGroup; ++g) acc = acc + cur[g];
      for (int g = 0; g < kChainGroup; ++g) cur[g] = next[g];
    }
    for (int g = 0; g < kChainGroup; ++g) acc = acc + cur[g];
  }
  for (; k < n; ++k) acc = acc + v[k];
  return acc;
}

// ---- Matrix products -----------------------------------------------------------------------
// One tiled kernel serves kMatmul, both gradients and their batched forms through strides:
//   out[i, j] = fma chain over p ascending from +0.0f of X(i, p) * Y(p, j),
//   X(i, p) = x[i * xsi + p * xsp],  Y(p, j) = y[p * ysp + j * ysj].
// A block owns a Tile x Tile output tile of one matrix (MatmulOfBlock, MatmulTileOrigin); each
// of its kTileThreads^2 threads owns Micro^2 outputs (rows ty + kTileThreads * r, columns
// tx + kTileThreads * c), Tile = kTileThreads * Micro. The block walks p in slices of kDepth:
// all threads stage the slice (MatmulStage), a barrier, each thread continues its chains over the
// staged p in ascending order (MatmulSteps), a barrier; finally MatmulStore. Every output is one
// chain whatever the tile size, so the size is chosen per product for speed alone
// (MatmulMicroFor): large tiles reuse each staged value Micro times, small ones give a small
// output enough blocks to occupy the device.
inline constexpr int kTileThreads = 16;

/// The sizes that follow from Micro (4, 2 or 1: tiles of 64, 32 or 16).
template <int Micro>
struct MatmulTiling {
  static constexpr int kTile = kTileThreads * Micro;
  // p per staged slice: smaller tiles take deeper slices, so every size stages the same 4 values
  // per operand and thread (loads in flight together) and its chains pass fewer barriers.
  static constexpr int kDepth = 64 / Micro;
  // Row length of the staged tiles: +1 so that loads that run along p do not all hit one
  // shared-memory bank.
  static constexpr int kStride = kTile + 1;
  static constexpr int kStage = kDepth * kStride;  // floats per staged operand
  static constexpr int kStageElements = kTile * kDepth;  // MatmulStage's e runs over [0, this)
};

struct MatmulOperands {
  const float* x;
  i64 xsi, xsp;
  const float* y;
  i64 ysp, ysj;
  float* out;
  i64 rows, cols, depth;
  // The batched products: `batches` independent products, matrix g at x + g * x_batch, y + g *
  // y_batch, out + g * out_batch. A 2-D product is one batch.
  i64 batches = 1;
  i64 x_batch = 0, y_batch = 0, out_batch = 0;
};

/// The strides and sizes of `op` (kMatmul, kMatmulGradA, kMatmulGradB or their batched forms) for
/// validated input shapes `a` and `b`, with x, y, out left null for the caller to fill with device
/// (or host) pointers. The batched forms use the 2-D layout on the last two axes of each input.
inline MatmulOperands MatmulOperandsFor(Op op, const Shape& a, const Shape& b) {
  const std::size_t r = a.size();
  const i64 a0 = a[r - 2], a1 = a[r - 1], b0 = b[r - 2], b1 = b[r - 1];
  i64 batches = 1;
  for (std::size_t axis = 0; axis + 2 < r; ++axis) batches *= a[axis];
  MatmulOperands m{};
  switch (op) {
    case Op::kMatmulGradA:
    case Op::kBatchedMatmulGradA:  // dC[M,N] B[K,N] -> dA[M,K]: X = dC, Y(p = n, j = k) = B[k, n]
      m = {nullptr, a1, 1, nullptr, 1, b1, nullptr, a0, b0, a1};
      break;
    case Op::kMatmulGradB:
    case Op::kBatchedMatmulGradB:  // A[M,K] dC[M,N] -> dB[K,N]: X(i = k, p = m) = A[m, k], Y = dC
      m = {nullptr, 1, a1, nullptr, b1, 1, nullptr, a1, b1, a0};
      break;
    default:  // kMatmul, kBatchedMatmul: A[M,K] B[K,N] -> C[M,N]
      m = {nullptr, a1, 1, nullptr, b1, 1, nullptr, a0, b1, a1};
      break;
  }
  m.batches = batches;
  m.x_batch = a0 * a1;
  m.y_batch = b0 * b1;
  m.out_batch = m.rows * m.cols;
  return m;
}

/// Number of Tile x Tile output tiles of one matrix.
template <int Micro>
POLNODE_HOST_DEVICE inline i64 MatmulTilesPerMatrix(const MatmulOperands& m) {
  constexpr int kTile = MatmulTiling<Micro>::kTile;
  return ((m.rows + kTile - 1) / kTile) * ((m.cols + kTile - 1) / kTile);
}

/// Number of blocks: one per output tile of every matrix (0 for an empty output).
template <int Micro>
inline i64 MatmulBlocks(const MatmulOperands& m) {
  return m.batches * MatmulTilesPerMatrix<Micro>(m);
}

/// The tile size for `m` on a device of `multiprocessors`: the largest (Micro 4) when its blocks
/// cover every multiprocessor, else the largest smaller one whose blocks do, else the smallest
/// (Micro 1, 16 x 16 tiles). Speed only: every size gives the same bits.
inline int MatmulMicroFor(const MatmulOperands& m, i64 multiprocessors) {
  if (MatmulBlocks<4>(m) >= multiprocessors) return 4;
  if (MatmulBlocks<2>(m) >= multiprocessors) return 2;
  return 1;
}

/// The single product block `block` works on (its matrix's pointers) and, in *tile, the block's
/// tile within that matrix. Blocks run matrix by matrix, tiles row-major within each.
template <int Micro>
POLNODE_HOST_DEVICE inline MatmulOperands MatmulOfBlock(const MatmulOperands& m, i64 block, i64* tile) {
  const i64 tiles = MatmulTilesPerMatrix<Micro>(m);
  const i64 g = block / tiles;
  *tile = block % tiles;
  MatmulOperands one = m;
  one.x = m.x + g * m.x_batch;
  one.y = m.y + g * m.y_batch;
  one.out = m.out + g * m.out_batch;
  one.batches = 1;
  return one;
}

/// The first output row and column of tile `tile` of a matrix, tiles numbered row-major. A 1-D
/// grid avoids the 65535-block limit of the second grid axis.
template <int Micro>
POLNODE_HOST_DEVICE inline void MatmulTileOrigin(const MatmulOperands& m, i64 tile, i64* i0, i64* j0) {
  constexpr int kTile = MatmulTiling<Micro>::kTile;
  const i64 tiles_per_row = (m.cols + kTile - 1) / kTile;
  *i0 = (tile / tiles_per_row) * kTile;
  *j0 = (tile % tiles_per_row) * kTile;
}

/// Stages element `e` (0 <= e < kStageElements) of the p-slice at p0 of block (i0, j0) into
/// xs[p][i] and ys[p][j] (row length kStride). Out-of-range elements stage +0.0f; they are never
/// read by MatmulSteps. Consecutive e read consecutive addresses along whichever axis has stride
/// 1; only which thread loads what changes with that, never the staged values.
template <int Micro>
POLNODE_HOST_DEVICE inline void MatmulStage(const MatmulOperands& m, i64 i0, i64 j0, i64 p0, int e, float* xs,
                                            float* ys) {
  constexpr int kTile = MatmulTiling<Micro>::kTile;
  constexpr int kDepth = MatmulTiling<Micro>::kDepth;
  constexpr int kStride = MatmulTiling<Micro>::kStride;
  const int xi = m.xsp == 1 ? e / kDepth : e % kTile;
  const int xp = m.xsp == 1 ? e % kDepth : e / kTile;
  const i64 gi = i0 + xi;
  const i64 gxp = p0 + xp;
  xs[xp * kStride + xi] = (gi < m.rows && gxp < m.depth) ? m.x[gi * m.xsi + gxp * m.xsp] : 0.0f;
  const int yj = m.ysj == 1 ? e % kTile : e / kDepth;
  const int yp = m.ysj == 1 ? e / kTile : e % kDepth;
  const i64 gj = j0 + yj;
  const i64 gyp = p0 + yp;
  ys[yp * kStride + yj] = (gj < m.cols && gyp < m.depth) ? m.y[gyp * m.ysp + gj * m.ysj] : 0.0f;
}

/// How many p of the slice at p0 are real. The chains stop there: padding steps would be
/// fma(0, 0, acc), which turns an acc of -0.0f into +0.0f.
template <int Micro>
POLNODE_HOST_DEVICE inline int MatmulTileDepth(const MatmulOperands& m, i64 p0) {
  constexpr int kDepth = MatmulTiling<Micro>::kDepth;
  return m.depth - p0 < kDepth ? static_cast<int>(m.depth - p0) : kDepth;
}

/// Thread (tx, ty) continues its Micro x Micro chains over the first `pn` staged p, ascending.
template <int Micro>
POLNODE_HOST_DEVICE inline void MatmulSteps(const float* xs, const float* ys, int tx, int ty, int pn,
                                            float (&acc)[Micro][Micro]) {
  constexpr int kStride = MatmulTiling<Micro>::kStride;
  for (int pp = 0; pp < pn; ++pp) {
    float a[Micro];
    float b[Micro];
    for (int r = 0; r < Micro; ++r) a[r] = xs[pp * kStride + ty + kTileThreads * r];
    for (int c = 0; c < Micro; ++c) b[c] = ys[pp * kStride + tx + kTileThreads * c];
    for (int r = 0; r < Micro; ++r)
      for (int c = 0; c < Micro; ++c) acc[r][c] = det::Fma(a[r], b[c], acc[r][c]);
  }
}

/// Writes thread (tx, ty)'s finished chains of block (i0, j0), skipping rows and columns beyond
/// the matrix.
template <int Micro>
POLNODE_HOST_DEVICE inline void MatmulStore(const MatmulOperands& m, i64 i0, i64 j0, int tx, int ty,
                                            const float (&acc)[Micro][Micro]) {
  for (int r = 0; r < Micro; ++r) {
    const i64 i = i0 + ty + kTileThreads * r;
    if (i >= m.rows) continue;
    for (int c = 0; c < Micro; ++c) {
      const i64 j = j0 + tx + kTileThreads * c;
      if (j < m.cols) m.out[i * m.cols + j] = acc[r][c];
    }
  }
}

// ---- Bias -----------------------------------------------------------------------------------
/// X viewed as [outer, channels, inner]: [M, N] is [M, N, 1], [N, C, H, W] is [N, C, H*W]; the
/// bias (gradient) runs along `channels`.
struct ChannelLayout {
  i64 outer, channels, inner;
};

inline ChannelLayout ChannelLayoutOf(const Shape& x) {
  if (x.size() == 4) return {x[0], x[1], x[2] * x[3]};
  return {x[0], x[1], 1};
}

/// Y[e] = X[e] + b[channel of e]; one rounding.
POLNODE_HOST_DEVICE inline float BiasAddAt(const float* x, const float* b, i64 e, ChannelLayout l) {
  return x[e] + b[(e / l.inner) % l.channels];
}

/// Element s of channel c's sum, s in [0, outer * inner): db[c] = sum over s ascending from +0.0f
/// of these, which is dY[m, c] over m (2-D) or dY[n, c, h, w] over (n, h, w) row-major (4-D).
POLNODE_HOST_DEVICE inline float BiasGradTerm(const float* dy, i64 c, i64 s, ChannelLayout l) {
  return dy[((s / l.inner) * l.channels + c) * l.inner + s % l.inner];
}

/// Chunk length of the bias-gradient kernel: a block stages this many terms in shared memory,
/// and one thread adds them in order, continuing the channel's single chain, while the block
/// stages the next chunk.
inline constexpr int kSumChunk = 1024;

// ---- ReLU -----------------------------------------------------------------------------------
/// X > 0 ? X : +0.0f; the comparison is false for -0.0f and NaN, which both give +0.0f.
POLNODE_HOST_DEVICE inline float ReluAt(float x) { return x > 0.0f ? x : 0.0f; }
POLNODE_HOST_DEVICE inline float ReluGradAt(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

// ---- 3x3 convolution, stride 1, zero padding 1 ----------------------------------------------
struct ConvDims {
  i64 n, ci, co, h, w;
};

/// The sizes of `op` (one of the three conv operators) for validated input shapes `t0`, `t1`.
inline ConvDims ConvDimsFor(Op op, const Shape& t0, const Shape& t1) {
  switch (op) {
    case Op::kConv2d3x3GradInput:  // dY[N,Co,H,W] W[Co,Ci,3,3]
      return {t0[0], t1[1], t0[1], t0[2], t0[3]};
    case Op::kConv2d3x3GradWeight:  // X[N,Ci,H,W] dY[N,Co,H,W]
      return {t0[0], t0[1], t1[1], t0[2], t0[3]};
    default:  // kConv2d3x3: X[N,Ci,H,W] W[Co,Ci,3,3]
      return {t0[0], t0[1], t1[0], t0[2], t0[3]};
  }
}

/// plane[row, col] of an h x w plane, +0.0f outside it (the zero padding).
POLNODE_HOST_DEVICE inline float PaddedAt(const float* plane, i64 h, i64 w, i64 row, i64 col) {
  return (row >= 0 && row < h && col >= 0 && col < w) ? plane[row * w + col] : 0.0f;
}

/// Y[n,o,h,w] (flat index e) = fma chain over (ci, kh, kw) ascending from +0.0f of
/// W[o,ci,kh,kw] * Xpad[n,ci,h+kh-1,w+kw-1]; padded taps take their step with +0.0f.
POLNODE_HOST_DEVICE inline float ConvAt(const float* x, const float* wt, ConvDims d, i64 e) {
  const i64 col = e % d.w;
  const i64 row = (e / d.w) % d.h;
  const i64 o = (e / (d.w * d.h)) % d.co;
  const i64 n = e / (d.w * d.h * d.co);
  float acc = 0.0f;
  for (i64 ci = 0; ci < d.ci; ++ci) {
    const float* plane = x + (n * d.ci + ci) * d.h * d.w;
    const float* k = wt + (o * d.ci + ci) * 9;
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw)
        acc = det::Fma(k[kh * 3 + kw], PaddedAt(plane, d.h, d.w, row + kh - 1, col + kw - 1), acc);
  }
  return acc;
}

/// dX[n,ci,h,w] (flat index e) = fma chain over (o, kh, kw) ascending from +0.0f of
/// W[o,ci,kh,kw] * dYpad[n,o,h-kh+1,w-kw+1].
POLNODE_HOST_DEVICE inline float ConvGradInputAt(const float* dy, const float* wt, ConvDims d, i64 e) {
  const i64 col = e % d.w;
  const i64 row = (e / d.w) % d.h;
  const i64 ci = (e / (d.w * d.h)) % d.ci;
  const i64 n = e / (d.w * d.h * d.ci);
  float acc = 0.0f;
  for (i64 o = 0; o < d.co; ++o) {
    const float* plane = dy + (n * d.co + o) * d.h * d.w;
    const float* k = wt + (o * d.ci + ci) * 9;
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw)
        acc = det::Fma(k[kh * 3 + kw], PaddedAt(plane, d.h, d.w, row - kh + 1, col - kw + 1), acc);
  }
  return acc;
}

/// dW[o,ci,kh,kw] (flat index e) = fma chain over (n, h, w) ascending from +0.0f of
/// dY[n,o,h,w] * Xpad[n,ci,h+kh-1,w+kw-1].
POLNODE_HOST_DEVICE inline float ConvGradWeightAt(const float* x, const float* dy, ConvDims d, i64 e) {
  const int kw = static_cast<int>(e % 3);
  const int kh = static_cast<int>((e / 3) % 3);
  const i64 ci = (e / 9) % d.ci;
  const i64 o = e / (9 * d.ci);
  float acc = 0.0f;
  for (i64 n = 0; n < d.n; ++n) {
    const float* dplane = dy + (n * d.co + o) * d.h * d.w;
    const float* xplane = x + (n * d.ci + ci) * d.h * d.w;
    for (i64 row = 0; row < d.h; ++row)
      for (i64 col = 0; col < d.w; ++col)
        acc = det::Fma(dplane[row * d.w + col], PaddedAt(xplane, d.h, d.w, row + kh - 1, col + kw - 1), acc);
  }
  return acc;
}

/// The weight gradient by terms (ConvGradWeightTermsKernel): one block per (o, ci), whose nine
/// taps' chains of N*H*W terms each are the whole work, and the chains are long (100,352 terms for
/// a 28x28 layer at batch 128) while there are few of them (72 for 1 -> 8 channels). A thread alone
/// on such a chain waits on every load. Instead the chain's terms are cut into stages of
/// kConvTermChunk consecutive terms t = (n, h, w) row-major; the block's other threads write a
/// stage's operands into shared memory as ten rows of kConvTermStride floats (dY[n, o, h, w], then
/// Xpad[n, ci, h+kh-1, w+kw-1] for each tap in row-major order), so each tap's thread reads its two
/// operands from contiguous, aligned memory and continues its chain with nothing between one fma
/// and the next: the same terms in the same order as ConvGradWeightAt. Two stages alternate, so
/// writing the next one overlaps the chains over the current one.
inline constexpr int kConvTermChunk = 512;
/// A stage row's length: the chunk and 4 floats, so the nine taps' rows start in different shared
/// memory banks and stay 16-byte aligned (4-float loads).
inline constexpr int kConvTermStride = kConvTermChunk + 4;
/// One stage: dY's row and the nine taps' rows.
inline constexpr int kConvTermFloats = 10 * kConvTermStride;
/// The most (o, ci) blocks the by-terms kernel takes; more pairs than this have enough chains to
/// fill a device one thread per weight (ConvGradWeightKernel).
inline constexpr i64 kConvTermMaxPairs = i64{1} << 20;

/// Whether the weight gradient of `d` runs by terms (ConvGradWeightTermsKernel).
POLNODE_HOST_DEVICE inline bool ConvGradWeightByTerms(ConvDims d) { return d.co * d.ci <= kConvTermMaxPairs; }

/// Terms in stage `c` of block (o, ci)'s chains: kConvTermChunk, or fewer in the last stage.
POLNODE_HOST_DEVICE inline int ConvTermCount(ConvDims d, i64 c) {
  const i64 left = d.n * d.h * d.w - c * kConvTermChunk;
  return static_cast<int>(left < kConvTermChunk ? left : kConvTermChunk);
}

/// Writes term k of the stage that starts at term t0 of block (o, ci) into `stage`
/// (kConvTermFloats floats): stage[k] = dY[n, o, h, w] and stage[(1 + tap) * kConvTermStride + k] =
/// Xpad[n, ci, h + kh - 1, w + kw - 1] for tap = kh * 3 + kw, where (n, h, w) is term t0 + k.
/// Requires 0 <= k < kConvTermChunk and t0 + k < N*H*W.
POLNODE_HOST_DEVICE inline void ConvTermStage(const float* x, const float* dy, ConvDims d, i64 o, i64 ci, i64 t0,
                                              int k, float* stage) {
  const i64 plane = d.h * d.w;
  const i64 t = t0 + k;
  const i64 n = t / plane;
  const i64 at = t - n * plane;
  const i64 row = at / d.w;
  const i64 col = at - row * d.w;
  stage[k] = dy[(n * d.co + o) * plane + at];
  const float* xplane = x + (n * d.ci + ci) * plane;
  for (int tap = 0; tap < 9; ++tap) {
    stage[(1 + tap) * kConvTermStride + k] = PaddedAt(xplane, d.h, d.w, row + tap / 3 - 1, col + tap % 3 - 1);
  }
}

/// Continues tap `tap`'s chain over the first `count` terms of a stage: acc = fma(dY, Xpad, acc)
/// per term in order, as ConvGradWeightAt does.
POLNODE_HOST_DEVICE inline float ConvTermSteps(const float* stage, int tap, int count, float acc) {
  const float* xs = stage + (1 + tap) * kConvTermStride;
  for (int k = 0; k < count; ++k) acc = det::Fma(stage[k], xs[k], acc);
  return acc;
}

// ---- 2x2 max-pool ---------------------------------------------------------------------------
/// Output e of pooling `planes` h x w planes (stride 2, floor): writes Y[e] and Arg[e], the tap
/// index 0..3 in row-major order. The first tap wins; a later one replaces it only when strictly
/// greater, so a NaN never replaces the first tap.
POLNODE_HOST_DEVICE inline void MaxPoolAt(const float* x, float* y, float* arg, i64 h, i64 w, i64 e) {
  const i64 ho = h / 2;
  const i64 wo = w / 2;
  const i64 oc = e % wo;
  const i64 orow = (e / wo) % ho;
  const i64 p = e / (wo * ho);
  const float* top = x + (p * h + 2 * orow) * w + 2 * oc;
  const float taps[4] = {top[0], top[1], top[w], top[w + 1]};
  float best = taps[0];
  int best_tap = 0;
  for (int t = 1; t < 4; ++t) {
    if (taps[t] > best) {
      best = taps[t];
      best_tap = t;
    }
  }
  y[e] = best;
  arg[e] = static_cast<float>(best_tap);
}

/// dX[e] for an h x w input: dY of the window holding e if that window chose e's tap, else
/// +0.0f (also for the row and column beyond the floored windows). Arg holds taps 0..3
/// (InferOutputShapes checks).
POLNODE_HOST_DEVICE inline float MaxPoolGradAt(const float* arg, const float* dy, i64 h, i64 w, i64 e) {
  const i64 ho = h / 2;
  const i64 wo = w / 2;
  const i64 col = e % w;
  const i64 row = (e / w) % h;
  const i64 p = e / (w * h);
  const i64 orow = row / 2;
  const i64 oc = col / 2;
  if (orow >= ho || oc >= wo) return 0.0f;
  const i64 o = (p * ho + orow) * wo + oc;
  const int tap = static_cast<int>((row % 2) * 2 + (col % 2));
  return static_cast<int>(arg[o]) == tap ? dy[o] : 0.0f;
}

// ---- Softmax cross-entropy ------------------------------------------------------------------
/// Row b in op.h's order: max over c (first wins), e[c] = det::Exp(Z - max) into P, their sum
/// ascending, P = e / s; returns row_loss = (max + det::Log(s)) - Z[b, label].
POLNODE_HOST_DEVICE inline float SoftmaxRow(const float* z, const float* labels, float* p, i64 classes, i64 b) {
  const float* zr = z + b * classes;
  float* pr = p + b * classes;
  float mx = zr[0];
  for (i64 c = 1; c < classes; ++c) {
    if (zr[c] > mx) mx = zr[c];
  }
  float s = 0.0f;
  for (i64 c = 0; c < classes; ++c) {
    const float e = det::Exp(zr[c] - mx);
    pr[c] = e;
    s = s + e;
  }
  for (i64 c = 0; c < classes; ++c) pr[c] = pr[c] / s;
  const i64 label = static_cast<i64>(labels[b]);
  return (mx + det::Log(s)) - zr[label];
}

/// loss = (sum over b ascending from +0.0f of row_loss[b]) / B.
POLNODE_HOST_DEVICE inline float MeanLoss(const float* row_loss, i64 batch) {
  float acc = 0.0f;
  for (i64 b = 0; b < batch; ++b) acc = acc + row_loss[b];
  return acc / static_cast<float>(batch);
}

/// dZ[e] = (P[e] - (c == L[b] ? 1 : 0)) / B for e = b * classes + c.
POLNODE_HOST_DEVICE inline float SoftmaxGradAt(const float* p, const float* labels, i64 batch, i64 classes, i64 e) {
  const i64 c = e % classes;
  const i64 label = static_cast<i64>(labels[e / classes]);
  return (p[e] - (c == label ? 1.0f : 0.0f)) / static_cast<float>(batch);
}

// ---- Optimizers -----------------------------------------------------------------------------
/// SGD with momentum, element e: d = fma(wd, w, g); v' = fma(momentum, v, d); w' = fma(-lr, v', w).
POLNODE_HOST_DEVICE inline void SgdMomentumAt(const float* w, const float* g, const float* v, float* w_out,
                                              float* v_out, float neg_lr, float momentum, float wd, i64 e) {
  const float we = w[e];
  const float d = det::Fma(wd, we, g[e]);
  const float v1 = det::Fma(momentum, v[e], d);
  v_out[e] = v1;
  w_out[e] = det::Fma(neg_lr, v1, we);
}

/// AdamW's scalars, the products op.h rounds once on the host already rounded.
struct AdamScalars {
  float lr;
  float neg_lr_wd;  // -(lr * wd)
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float eps;
  float bias_correction1, bias_correction2;
};

inline AdamScalars AdamScalarsOf(const OpAttrs& attrs) {
  AdamScalars s{};
  s.lr = attrs.lr;
  s.neg_lr_wd = -(attrs.lr * attrs.weight_decay);
  s.beta1 = attrs.beta1;
  s.one_minus_beta1 = 1.0f - attrs.beta1;
  s.beta2 = attrs.beta2;
  s.one_minus_beta2 = 1.0f - attrs.beta2;
  s.eps = attrs.eps;
  s.bias_correction1 = attrs.bias_correction1;
  s.bias_correction2 = attrs.bias_correction2;
  return s;
}

/// AdamW, element e, in op.h's formulas. Reads every input of e before writing any output, so
/// the in-place update (outputs aliasing inputs) is safe.
POLNODE_HOST_DEVICE inline void AdamWAt(const float* w, const float* g, const float* m, const float* v, float* w_out,
                                        float* m_out, float* v_out, const AdamScalars& s, i64 e) {
  const float we = w[e];
  const float ge = g[e];
  const float w1 = det::Fma(s.neg_lr_wd, we, we);
  const float m1 = det::Fma(s.beta1, m[e], s.one_minus_beta1 * ge);
  const float v1 = det::Fma(s.beta2, v[e], (s.one_minus_beta2 * ge) * ge);
  const float mhat = m1 / s.bias_correction1;
  const float vhat = v1 / s.bias_correction2;
  m_out[e] = m1;
  v_out[e] = v1;
  w_out[e] = w1 - s.lr * (mhat / (Sqrt(vhat) + s.eps));
}

// ---- Transformer operators ------------------------------------------------------------------
/// kAdd, element e: A[e] + B[e], one rounding.
POLNODE_HOST_DEVICE inline float AddAt(const float* a, const float* b, i64 e) { return a[e] + b[e]; }

/// kTransposeHeads' sizes: X[outer, rows, cols, depth] -> Y[outer, cols, rows, depth].
struct TransposeDims {
  i64 outer, rows, cols, depth;
};

inline TransposeDims TransposeDimsOf(const Shape& x) { return {x[0], x[1], x[2], x[3]}; }

/// Y[e] (e = ((n * cols + b) * rows + a) * depth + d) = X[n, a, b, d]: a copy, no arithmetic.
POLNODE_HOST_DEVICE inline float TransposeHeadsAt(const float* x, TransposeDims t, i64 e) {
  const i64 d = e % t.depth;
  const i64 a = (e / t.depth) % t.rows;
  const i64 b = (e / (t.depth * t.rows)) % t.cols;
  const i64 n = e / (t.depth * t.rows * t.cols);
  return x[((n * t.rows + a) * t.cols + b) * t.depth + d];
}

/// kGelu and kGeluGrad, element e: detmath.h's formulas, the reference's own code.
POLNODE_HOST_DEVICE inline float GeluAt(float x) { return det::GeluTanh(x); }
/// kClipCoefficient, element e.
POLNODE_HOST_DEVICE inline float ClipCoefficientAt(float s, float max_norm) { return det::ClipCoefficient(s, max_norm); }
POLNODE_HOST_DEVICE inline float GeluGradAt(float x, float dy) { return det::GeluTanhGrad(x, dy); }

// ---- LayerNorm ------------------------------------------------------------------------------
/// X[..., C] as rows x channels.
struct RowLayout {
  i64 rows, channels;
};

inline RowLayout RowLayoutOf(const Shape& x) {
  const i64 channels = x.back();
  return {NumElements(x) / channels, channels};
}

/// Row r's chains (one thread per row): mean = sum / C, rstd = 1 / sqrt(var + eps).
POLNODE_HOST_DEVICE inline void LayerNormStatsRow(const float* x, RowLayout l, float eps, i64 r, float* mean,
                                                  float* rstd) {
  const float* xr = x + r * l.channels;
  const float cf = static_cast<float>(l.channels);
  const float m = SumChain(xr, l.channels, 0.0f) / cf;
  float sq = 0.0f;
  i64 c = 0;
  for (; c + kChainGroup <= l.channels; c += kChainGroup) {  // a group's loads before its steps
    float d[kChainGroup];
    for (int g = 0; g < kChainGroup; ++g) d[g] = xr[c + g] - m;
    for (int g = 0; g < kChainGroup; ++g) sq = det::Fma(d[g], d[g], sq);
  }
  for (; c < l.channels; ++c) {
    const float d = xr[c] - m;
    sq = det::Fma(d, d, sq);
  }
  mean[r] = m;
  rstd[r] = 1.0f / Sqrt(sq / cf + eps);
}

/// Y[e] = fma((x - mean) * rstd, gamma, beta), once the row's statistics are known.
POLNODE_HOST_DEVICE inline float LayerNormAt(const float* x, const float* gamma, const float* beta, const float* mean,
                                             const float* rstd, RowLayout l, i64 e) {
  const i64 r = e / l.channels;
  const i64 c = e % l.channels;
  return det::Fma((x[e] - mean[r]) * rstd[r], gamma[c], beta[c]);
}

/// Row r's backward chains (one thread per row): ab[2r] = sum_g / C, ab[2r + 1] = sum_gx / C.
POLNODE_HOST_DEVICE inline void LayerNormGradSumsRow(const float* x, const float* dy, const float* gamma,
                                                     const float* mean, const float* rstd, RowLayout l, i64 r,
                                                     float* ab) {
  float sum_g = 0.0f;
  float sum_gx = 0.0f;
  const float row_mean = mean[r];
  const float row_rstd = rstd[r];
  i64 c = 0;
  for (; c + kChainGroup <= l.channels; c += kChainGroup) {  // a group's loads before its steps
    float g[kChainGroup], xhat[kChainGroup];
    for (int k = 0; k < kChainGroup; ++k) {
      const i64 e = r * l.channels + c + k;
      g[k] = dy[e] * gamma[c + k];
      xhat[k] = (x[e] - row_mean) * row_rstd;
    }
    for (int k = 0; k < kChainGroup; ++k) {
      sum_g = sum_g + g[k];
      sum_gx = det::Fma(g[k], xhat[k], sum_gx);
    }
  }
  for (; c < l.channels; ++c) {
    const i64 e = r * l.channels + c;
    const float g = dy[e] * gamma[c];
    sum_g = sum_g + g;
    sum_gx = det::Fma(g, (x[e] - row_mean) * row_rstd, sum_gx);
  }
  const float cf = static_cast<float>(l.channels);
  ab[2 * r] = sum_g / cf;
  ab[2 * r + 1] = sum_gx / cf;
}

/// dX[e] = rstd * fma(-xhat, b, g - a), from the row's ab.
POLNODE_HOST_DEVICE inline float LayerNormGradInputAt(const float* x, const float* dy, const float* gamma,
                                                      const float* mean, const float* rstd, const float* ab,
                                                      RowLayout l, i64 e) {
  const i64 r = e / l.channels;
  const float xhat = (x[e] - mean[r]) * rstd[r];
  const float g = dy[e] * gamma[e % l.channels];
  return rstd[r] * det::Fma(-xhat, ab[2 * r + 1], g - ab[2 * r]);
}

/// Rows whose operands a LayerNormGradParamsAt thread loads before their chain steps.
inline constexpr int kLayerNormRowGroup = 16;

/// Column c's chains over the rows (one thread per column): dGamma[c] and dBeta[c]. The rows'
/// loads go out kLayerNormRowGroup at a time ahead of their steps (long chains, long loads); the
/// steps and their order are one row at a time, ascending.
POLNODE_HOST_DEVICE inline void LayerNormGradParamsAt(const float* x, const float* dy, const float* mean,
                                                      const float* rstd, RowLayout l, i64 c, float* dgamma,
                                                      float* dbeta) {
  float acc_gamma = 0.0f;
  float acc_beta = 0.0f;
  i64 r = 0;
  for (; r + kLayerNormRowGroup <= l.rows; r += kLayerNormRowGroup) {
    float g[kLayerNormRowGroup], xhat[kLayerNormRowGroup];
    for (int k = 0; k < kLayerNormRowGroup; ++k) {
      const i64 e = (r + k) * l.channels + c;
      g[k] = dy[e];
      xhat[k] = (x[e] - mean[r + k]) * rstd[r + k];
    }
    for (int k = 0; k < kLayerNormRowGroup; ++k) {
      acc_gamma = det::Fma(g[k], xhat[k], acc_gamma);
      acc_beta = acc_beta + g[k];
    }
  }
  for (; r < l.rows; ++r) {
    const i64 e = r * l.channels + c;
    acc_gamma = det::Fma(dy[e], (x[e] - mean[r]) * rstd[r], acc_gamma);
    acc_beta = acc_beta + dy[e];
  }
  dgamma[c] = acc_gamma;
  dbeta[c] = acc_beta;
}

// ---- Causal softmax -------------------------------------------------------------------------
/// Row r of the [..., T, T] scores (one thread per row; query i = r % T sees keys 0..i): P's row
/// in op.h's order, +0.0f past the diagonal.
POLNODE_HOST_DEVICE inline void CausalSoftmaxRow(const float* s, float* p, i64 t, float scale, i64 r) {
  const i64 visible = r % t + 1;
  const float* sr = s + r * t;
  float* pr = p + r * t;
  float mx = sr[0] * scale;
  for (i64 j = 1; j < visible; ++j) {
    const float z = sr[j] * scale;
    if (z > mx) mx = z;
  }
  float sum = 0.0f;
  for (i64 j = 0; j < visible; ++j) {
    const float e = det::Exp(sr[j] * scale - mx);
    pr[j] = e;
    sum = sum + e;
  }
  for (i64 j = 0; j < visible; ++j) pr[j] = pr[j] / sum;
  for (i64 j = visible; j < t; ++j) pr[j] = 0.0f;
}

/// Row r of dS: the dot chain, then (P * (dP - dot)) * scale, +0.0f past the diagonal.
POLNODE_HOST_DEVICE inline void CausalSoftmaxGradRow(const float* p, const float* dp, float* ds, i64 t, float scale,
                                                     i64 r) {
  const i64 visible = r % t + 1;
  const float* pr = p + r * t;
  const float* dpr = dp + r * t;
  float dot = 0.0f;
  for (i64 j = 0; j < visible; ++j) dot = det::Fma(pr[j], dpr[j], dot);
  for (i64 j = 0; j < visible; ++j) ds[r * t + j] = (pr[j] * (dpr[j] - dot)) * scale;
  for (i64 j = visible; j < t; ++j) ds[r * t + j] = 0.0f;
}

// ---- Embedding ------------------------------------------------------------------------------
/// kEmbedding, element e of Y[..., C]: W[ids[e / C], e % C] (ids validated by InferOutputShapes).
POLNODE_HOST_DEVICE inline float EmbeddingAt(const float* w, const float* ids, i64 channels, i64 e) {
  return w[static_cast<i64>(ids[e / channels]) * channels + e % channels];
}

/// The positions of each table row, for kEmbeddingGrad: index[v] .. index[v + 1] - 1 (offsets
/// into the list after the V + 1 offsets) hold, in ascending order, the positions n with
/// ids[n] = v. Built on the host by a stable counting sort (ids are exact integers in [0, V)), so
/// each output element's chain runs over its positions in op.h's order without scanning all.
inline std::vector<i64> EmbeddingGradIndex(const float* ids, i64 positions, i64 vocab) {
  std::vector<i64> index(static_cast<std::size_t>(vocab + 1 + positions), 0);
  for (i64 n = 0; n < positions; ++n) ++index[static_cast<std::size_t>(ids[n]) + 1];
  for (i64 v = 0; v < vocab; ++v) index[static_cast<std::size_t>(v + 1)] += index[static_cast<std::size_t>(v)];
  std::vector<i64> next(index.begin(), index.begin() + vocab);
  for (i64 n = 0; n < positions; ++n) {
    const auto v = static_cast<std::size_t>(ids[n]);
    index[static_cast<std::size_t>(vocab + 1 + next[v]++)] = n;
  }
  return index;
}

/// kEmbeddingGrad, element e = v * C + c of dW[V, C]: the chain over v's positions ascending,
/// from +0.0f, of dY[n, c].
POLNODE_HOST_DEVICE inline float EmbeddingGradAt(const float* dy, const i64* index, i64 vocab, i64 channels, i64 e) {
  const i64 v = e / channels;
  const i64 c = e % channels;
  const i64* positions = index + vocab + 1;
  float acc = 0.0f;
  for (i64 i = index[v]; i < index[v + 1]; ++i) acc = acc + dy[positions[i] * channels + c];
  return acc;
}

// ---- Device self-test -----------------------------------------------------------------------
// What a backend runs once on its device before it is used (gpu_backend.cu SelfTest) and compares
// with the same function run on the host: the operations whose results a device or toolchain
// could get wrong without any operator's conformance case noticing at once. An fma split into a
// rounded product and a sum, a division or square root that is not correctly rounded, subnormal
// results or inputs flushed to zero, a hardware max in ReLU that lets -0.0 or NaN through, and
// det::Exp's range reduction. NaN results match any NaN (hashes read every NaN alike).
inline constexpr int kSelfTestOps = 6;
inline constexpr const char* kSelfTestOpNames[kSelfTestOps] = {"fma", "division", "square root", "ReLU",
                                                               "product", "det::Exp"};

/// Operation k of input i into out[kSelfTestOps * i + k].
POLNODE_HOST_DEVICE inline void SelfTestAt(const float* a, const float* b, const float* c, float* out, i64 i) {
  float* y = out + kSelfTestOps * i;
  y[0] = det::Fma(a[i], b[i], c[i]);
  y[1] = a[i] / b[i];
  y[2] = Sqrt(a[i]);
  y[3] = ReluAt(a[i]);
  y[4] = a[i] * b[i];
  y[5] = det::Exp(a[i]);
}

/// The self-test's inputs, `n` of each (n >= 1024): the first three quarters near 1, where a*b + c
/// with c = -(a*b) rounded is the product's rounding error that only a fused fma keeps; the last
/// quarter every ordered pair (and a third operand) from a list of special values: NaNs with each
/// vendor's payload, +-inf, +-0, the smallest and largest subnormals, tiny and huge normals whose
/// products and quotients are subnormal or overflow, and negative values (sqrt, ReLU).
inline void MakeSelfTestInputs(i64 n, std::vector<float>& a, std::vector<float>& b, std::vector<float>& c) {
  a.resize(static_cast<std::size_t>(n));
  b.resize(static_cast<std::size_t>(n));
  c.resize(static_cast<std::size_t>(n));
  std::uint32_t state = 0x9E3779B9u;
  auto next = [&state]() {  // xorshift32: any fixed sequence works, it only needs variety
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  };
  const i64 random_part = n - n / 4;
  for (i64 i = 0; i < random_part; ++i) {
    const auto k = static_cast<std::size_t>(i);
    a[k] = 1.0f + static_cast<float>(next() >> 9) * 0x1p-23f;
    b[k] = 1.0f + static_cast<float>(next() >> 9) * 0x1p-23f;
    if (next() & 1u) a[k] = -a[k];
    c[k] = -(a[k] * b[k]);
  }
  static constexpr std::uint32_t kSpecialBits[] = {
      0xFFC00000u, 0x7FFFFFFFu, 0x7FC00000u,  // NaN as x86, NVIDIA and AMD make it
      0x7F800000u, 0xFF800000u,               // +-inf
      0x00000000u, 0x80000000u,               // +-0
      0x00000001u, 0x807FFFFFu,               // the smallest subnormal, minus the largest
      0x1E3CE508u, 0x60AD78ECu,               // 1e-20 (its square is subnormal), 1e20
      0x3F800000u, 0xC0000000u,               // 1, -2
      0x00800000u, 0x7F7FFFFFu,               // the smallest normal, FLT_MAX
      0x42B170A4u,                            // 88.72: det::Exp near overflow
  };
  constexpr i64 kSpecials = static_cast<i64>(sizeof kSpecialBits / sizeof kSpecialBits[0]);
  for (i64 i = random_part; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const i64 j = i - random_part;
    std::uint32_t bits[3] = {kSpecialBits[j % kSpecials], kSpecialBits[(j / kSpecials) % kSpecials],
                             kSpecialBits[(j / (kSpecials * kSpecials)) % kSpecials]};
    std::memcpy(&a[k], &bits[0], sizeof(float));
    std::memcpy(&b[k], &bits[1], sizeof(float));
    std::memcpy(&c[k], &bits[2], sizeof(float));
  }
}

}  // namespace polnode::kernels::gpu

#endif  // POLNODE_KERNELS_GPU_GPU_ELEMENTS_H_
