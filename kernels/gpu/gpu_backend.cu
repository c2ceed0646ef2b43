// The GPU backend: every operator of op.h as a CUDA/HIP kernel, one source for both vendors
// (gpu_vendor.h maps the runtime names; gpu.cmake compiles this file with nvcc and with hipcc).
//
// Determinism (DESIGN.md section 3): each output element is computed by exactly one thread, which
// runs that element's chain in the order op.h writes down, with det::Fma (a single-rounding fma)
// for every fma of the chain and plain + - * / sqrt elsewhere (--fmad=false / -ffp-contract=off
// stop the compilers from fusing the rest). No float atomics, no tensor cores, no fast-math
// intrinsics; exp and log come from detmath.h, the same code the CPU backends run. Threads and
// blocks split outputs only. The arithmetic itself lives in gpu_elements.h, which also compiles
// for the host so that tests/kernels/gpu_twin_test.cc checks it without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

// The vendor runtime first: later headers' device code (detmath.h) uses its intrinsics.
#include "gpu/gpu_vendor.h"

#include "gpu/amd_targets.h"
#include "gpu/gpu_backend.h"
#include "gpu/gpu_elements.h"
#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/detmath.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"
#include "polnode/kernels/validate_run.h"

namespace polnode::kernels {
namespace POLNODE_GPU_NS {
namespace {

using i64 = std::int64_t;

constexpr int kThreadsPerBlock = 256;
// Grid-stride loops cover any element count with a bounded grid.
constexpr i64 kMaxBlocks = i64{1} << 20;

unsigned BlocksFor(i64 n) {
  return static_cast<unsigned>(std::min<i64>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
}

__device__ inline i64 GlobalThread() {
  return static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline i64 GridStride() { return static_cast<i64>(gridDim.x) * blockDim.x; }
// CUDA and HIP overload min() differently for 64-bit integers; this one reads the same in both.
__device__ inline i64 MinI64(i64 a, i64 b) { return a < b ? a : b; }

// ---------------------------------------------------------------------------------------------
// Device self-test (gpu_elements.h SelfTestAt): run once when a backend is created and compared
// with the same arithmetic on the host, so a device that cannot run this build's code, or whose
// fma, division, square root, subnormals or ReLU differ from the host's, is reported as
// unavailable instead of producing wrong bits later.
__global__ void SelfTestKernel(const float* a, const float* b, const float* c, float* y, i64 n) {
  for (i64 i = GlobalThread(); i < n; i += GridStride()) gpu::SelfTestAt(a, b, c, y, i);
}

// ---------------------------------------------------------------------------------------------
// Operator kernels: loops over the elements a thread owns around the per-element arithmetic of
// gpu_elements.h (shared with the CPU twin test). Grid-stride loops give each element to exactly
// one thread; only the matrix products and the bias gradient use shared memory, both with
// barriers between staging and use, and neither splits a chain.

using gpu::ChannelLayout;
using gpu::ConvDims;
using gpu::MatmulOperands;

template <int Micro>
__global__ void __launch_bounds__(gpu::kTileThreads * gpu::kTileThreads) MatmulKernel(MatmulOperands all) {
  using Tiling = gpu::MatmulTiling<Micro>;
  __shared__ float xs[Tiling::kStage];
  __shared__ float ys[Tiling::kStage];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int tid = ty * gpu::kTileThreads + tx;
  i64 tile = 0;
  const MatmulOperands m = gpu::MatmulOfBlock<Micro>(all, blockIdx.x, &tile);
  i64 i0 = 0;
  i64 j0 = 0;
  gpu::MatmulTileOrigin<Micro>(m, tile, &i0, &j0);
  float acc[Micro][Micro];
  for (int r = 0; r < Micro; ++r)
    for (int c = 0; c < Micro; ++c) acc[r][c] = 0.0f;
  for (i64 p0 = 0; p0 < m.depth; p0 += Tiling::kDepth) {
    // A fixed count of staging elements per thread: the loop unrolls and their loads go out together.
    constexpr int kThreads = gpu::kTileThreads * gpu::kTileThreads;
    static_assert(Tiling::kStageElements % kThreads == 0, "a slice is whole rounds of the block");
#pragma unroll
    for (int k = 0; k < Tiling::kStageElements / kThreads; ++k) {
      gpu::MatmulStage<Micro>(m, i0, j0, p0, tid + k * kThreads, xs, ys);
    }
    __syncthreads();
    gpu::MatmulSteps<Micro>(xs, ys, tx, ty, gpu::MatmulTileDepth<Micro>(m, p0), acc);
    __syncthreads();
  }
  gpu::MatmulStore<Micro>(m, i0, j0, tx, ty, acc);
}

__global__ void BiasAddKernel(const float* x, const float* b, float* y, i64 n, ChannelLayout l) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::BiasAddAt(x, b, e, l);
}

// Writes terms [s0, s0 + len) of channel c's sum into `chunk`, as writer `writer` of `writers`,
// kLoads loads in flight per writer.
__device__ void StageBiasTerms(const float* dy, i64 c, i64 s0, int len, ChannelLayout l, float* chunk, int writer,
                               int writers) {
  constexpr int kLoads = 8;
  for (int t0 = writer; t0 < len; t0 += kLoads * writers) {
    float v[kLoads];
#pragma unroll
    for (int g = 0; g < kLoads; ++g) {
      const int t = t0 + g * writers;
      v[g] = t < len ? gpu::BiasGradTerm(dy, c, s0 + t, l) : 0.0f;
    }
#pragma unroll
    for (int g = 0; g < kLoads; ++g) {
      const int t = t0 + g * writers;
      if (t < len) chunk[t] = v[g];
    }
  }
}

// One block per channel: thread 0 adds one chunk of kSumChunk terms in order to the channel's one
// running chain while the block's other warps stage the next chunk in the other buffer (their
// loads hide memory latency); a barrier per chunk. Every thread stages the first chunk.
__global__ void BiasGradKernel(const float* dy, float* db, ChannelLayout l) {
  __shared__ float chunks[2][gpu::kSumChunk];
  const i64 c = blockIdx.x;
  const i64 total = l.outer * l.inner;
  const i64 count = (total + gpu::kSumChunk - 1) / gpu::kSumChunk;
  const int thread = static_cast<int>(threadIdx.x);
  const int writer = thread - warpSize;  // the writers of the next chunk: every warp but the first
  const int writers = static_cast<int>(blockDim.x) - warpSize;
  const auto length = [&](i64 chunk) { return static_cast<int>(MinI64(gpu::kSumChunk, total - chunk * gpu::kSumChunk)); };
  if (count > 0) StageBiasTerms(dy, c, 0, length(0), l, chunks[0], thread, static_cast<int>(blockDim.x));
  __syncthreads();
  float acc = 0.0f;
  for (i64 s = 0; s < count; ++s) {
    if (writer >= 0) {
      if (s + 1 < count) StageBiasTerms(dy, c, (s + 1) * gpu::kSumChunk, length(s + 1), l, chunks[(s + 1) & 1], writer, writers);
    } else if (thread == 0) {
      acc = gpu::SumChain(chunks[s & 1], length(s), acc);
    }
    __syncthreads();
  }
  if (thread == 0) db[c] = acc;
}

__global__ void ReluKernel(const float* x, float* y, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::ReluAt(x[e]);
}

__global__ void ReluGradKernel(const float* x, const float* dy, float* dx, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dx[e] = gpu::ReluGradAt(x[e], dy[e]);
}

__global__ void ConvKernel(const float* x, const float* wt, float* y, ConvDims d, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::ConvAt(x, wt, d, e);
}

__global__ void ConvGradInputKernel(const float* dy, const float* wt, float* dx, ConvDims d, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dx[e] = gpu::ConvGradInputAt(dy, wt, d, e);
}

// One thread per weight; the nine taps of one (o, ci) sit in neighbouring threads, which read the
// same dY values and neighbouring X values, so the caches serve most loads.
__global__ void ConvGradWeightKernel(const float* x, const float* dy, float* dw, ConvDims d, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dw[e] = gpu::ConvGradWeightAt(x, dy, d, e);
}

// Tap `tap`'s chain over `count` staged terms (gpu_elements.h ConvTermSteps, the same steps in
// the same order) with 4-float shared-memory loads, the next 16 terms' operands loaded while the
// current 16 steps run, so the chain waits on its own fma latency alone. The stage rows are 16-byte
// aligned (kConvTermStride is a multiple of 4).
__device__ float ConvTermChain(const float* stage, int tap, int count, float acc) {
  const float4* d4 = reinterpret_cast<const float4*>(stage);
  const float4* x4 = reinterpret_cast<const float4*>(stage + (1 + tap) * gpu::kConvTermStride);
  constexpr int kQuads = 4;  // 16 terms per group
  const int groups = count / (4 * kQuads);
  float4 dv[kQuads], xv[kQuads];
  if (groups > 0) {
#pragma unroll
    for (int g = 0; g < kQuads; ++g) {
      dv[g] = d4[g];
      xv[g] = x4[g];
    }
  }
  for (int q = 0; q < groups; ++q) {
    float4 dn[kQuads], xn[kQuads];
    const int next = (q + 1 < groups ? q + 1 : q) * kQuads;
#pragma unroll
    for (int g = 0; g < kQuads; ++g) {
      dn[g] = d4[next + g];
      xn[g] = x4[next + g];
    }
#pragma unroll
    for (int g = 0; g < kQuads; ++g) {
      acc = det::Fma(dv[g].x, xv[g].x, acc);
      acc = det::Fma(dv[g].y, xv[g].y, acc);
      acc = det::Fma(dv[g].z, xv[g].z, acc);
      acc = det::Fma(dv[g].w, xv[g].w, acc);
    }
#pragma unroll
    for (int g = 0; g < kQuads; ++g) {
      dv[g] = dn[g];
      xv[g] = xn[g];
    }
  }
  const float* xs = stage + (1 + tap) * gpu::kConvTermStride;
  for (int k = groups * 4 * kQuads; k < count; ++k) acc = det::Fma(stage[k], xs[k], acc);
  return acc;
}

// One block per (o, ci) (gpu_elements.h ConvTermStage): the first warp's first nine threads run
// the nine taps' chains over one stage while the block's other warps write the next stage into the
// other buffer; a barrier per stage. The first stage is written by every thread.
constexpr int kConvTermThreads = 512;
__global__ void __launch_bounds__(kConvTermThreads) ConvGradWeightTermsKernel(const float* x, const float* dy,
                                                                                float* dw, ConvDims d) {
  // float4 storage: the stage rows are read as 4-float vectors.
  static_assert(gpu::kConvTermStride % 4 == 0, "every stage row starts 16-byte aligned");
  __shared__ float4 stages[2][gpu::kConvTermFloats / 4];
  const i64 o = static_cast<i64>(blockIdx.x) / d.ci;
  const i64 ci = static_cast<i64>(blockIdx.x) % d.ci;
  const int thread = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const int writer = thread - warpSize;  // the writers of the next stage: every warp but the first
  const int writers = threads - warpSize;
  const i64 total = d.n * d.h * d.w;
  const i64 chunks = (total + gpu::kConvTermChunk - 1) / gpu::kConvTermChunk;
  if (chunks > 0) {
    const int count = gpu::ConvTermCount(d, 0);
    for (int k = thread; k < count; k += threads) {
      gpu::ConvTermStage(x, dy, d, o, ci, 0, k, reinterpret_cast<float*>(stages[0]));
    }
  }
  __syncthreads();
  float acc = 0.0f;
  for (i64 c = 0; c < chunks; ++c) {
    const float* current = reinterpret_cast<const float*>(stages[c & 1]);
    if (writer >= 0) {
      if (c + 1 < chunks) {
        const int count = gpu::ConvTermCount(d, c + 1);
        float* next = reinterpret_cast<float*>(stages[(c + 1) & 1]);
        for (int k = writer; k < count; k += writers) {
          gpu::ConvTermStage(x, dy, d, o, ci, (c + 1) * gpu::kConvTermChunk, k, next);
        }
      }
    } else if (thread < 9) {
      acc = ConvTermChain(current, thread, gpu::ConvTermCount(d, c), acc);
    }
    __syncthreads();
  }
  if (thread < 9) dw[(o * d.ci + ci) * 9 + thread] = acc;
}

__global__ void MaxPoolKernel(const float* x, float* y, float* arg, i64 h, i64 w, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) gpu::MaxPoolAt(x, y, arg, h, w, e);
}

__global__ void MaxPoolGradKernel(const float* arg, const float* dy, float* dx, i64 h, i64 w, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dx[e] = gpu::MaxPoolGradAt(arg, dy, h, w, e);
}

// One thread per row; P holds e[c] until the row's sum is known.
__global__ void SoftmaxRowsKernel(const float* z, const float* labels, float* p, float* row_loss, i64 batch,
                                  i64 classes) {
  for (i64 b = GlobalThread(); b < batch; b += GridStride()) row_loss[b] = gpu::SoftmaxRow(z, labels, p, classes, b);
}

// The batch mean is one chain, so one thread.
__global__ void MeanLossKernel(const float* row_loss, float* loss, i64 batch) {
  if (GlobalThread() == 0) loss[0] = gpu::MeanLoss(row_loss, batch);
}

__global__ void SoftmaxGradKernel(const float* p, const float* labels, float* dz, i64 batch, i64 classes) {
  const i64 n = batch * classes;
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dz[e] = gpu::SoftmaxGradAt(p, labels, batch, classes, e);
}

__global__ void SgdMomentumKernel(const float* w, const float* g, const float* v, float* w_out, float* v_out,
                                  float neg_lr, float momentum, float wd, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) {
    gpu::SgdMomentumAt(w, g, v, w_out, v_out, neg_lr, momentum, wd, e);
  }
}

__global__ void AdamWKernel(const float* w, const float* g, const float* m, const float* v, float* w_out,
                            float* m_out, float* v_out, gpu::AdamScalars s, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) gpu::AdamWAt(w, g, m, v, w_out, m_out, v_out, s, e);
}

__global__ void AddKernel(const float* a, const float* b, float* c, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) c[e] = gpu::AddAt(a, b, e);
}

// One thread per output element: consecutive threads write consecutive addresses.
__global__ void TransposeHeadsKernel(const float* x, float* y, gpu::TransposeDims t, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::TransposeHeadsAt(x, t, e);
}

__global__ void ClipCoefficientKernel(const float* s, float* c, float max_norm, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) c[e] = gpu::ClipCoefficientAt(s[e], max_norm);
}

__global__ void GeluKernel(const float* x, float* y, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::GeluAt(x[e]);
}

__global__ void GeluGradKernel(const float* x, const float* dy, float* dx, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dx[e] = gpu::GeluGradAt(x[e], dy[e]);
}

// LayerNorm: one thread per row for the row chains, then one per element for the outputs.
__global__ void LayerNormStatsKernel(const float* x, gpu::RowLayout l, float eps, float* mean, float* rstd) {
  for (i64 r = GlobalThread(); r < l.rows; r += GridStride()) gpu::LayerNormStatsRow(x, l, eps, r, mean, rstd);
}

__global__ void LayerNormKernel(const float* x, const float* gamma, const float* beta, const float* mean,
                                const float* rstd, float* y, gpu::RowLayout l, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::LayerNormAt(x, gamma, beta, mean, rstd, l, e);
}

__global__ void LayerNormGradSumsKernel(const float* x, const float* dy, const float* gamma, const float* mean,
                                        const float* rstd, gpu::RowLayout l, float* ab) {
  for (i64 r = GlobalThread(); r < l.rows; r += GridStride()) {
    gpu::LayerNormGradSumsRow(x, dy, gamma, mean, rstd, l, r, ab);
  }
}

__global__ void LayerNormGradInputKernel(const float* x, const float* dy, const float* gamma, const float* mean,
                                         const float* rstd, const float* ab, float* dx, gpu::RowLayout l, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) {
    dx[e] = gpu::LayerNormGradInputAt(x, dy, gamma, mean, rstd, ab, l, e);
  }
}

// One thread per column: its two chains run over every row in order.
__global__ void LayerNormGradParamsKernel(const float* x, const float* dy, const float* mean, const float* rstd,
                                          float* dgamma, float* dbeta, gpu::RowLayout l) {
  for (i64 c = GlobalThread(); c < l.channels; c += GridStride()) {
    gpu::LayerNormGradParamsAt(x, dy, mean, rstd, l, c, dgamma, dbeta);
  }
}

// Causal softmax: one thread per row (its max, sum and dot are chains).
__global__ void CausalSoftmaxKernel(const float* s, float* p, i64 t, float scale, i64 rows) {
  for (i64 r = GlobalThread(); r < rows; r += GridStride()) gpu::CausalSoftmaxRow(s, p, t, scale, r);
}

__global__ void CausalSoftmaxGradKernel(const float* p, const float* dp, float* ds, i64 t, float scale, i64 rows) {
  for (i64 r = GlobalThread(); r < rows; r += GridStride()) gpu::CausalSoftmaxGradRow(p, dp, ds, t, scale, r);
}

__global__ void EmbeddingKernel(const float* w, const float* ids, float* y, i64 channels, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) y[e] = gpu::EmbeddingAt(w, ids, channels, e);
}

// One thread per table element, each running its own chain over its row's positions (the index
// lists them in order); neighbouring threads read neighbouring columns of the same dY rows.
__global__ void EmbeddingGradKernel(const float* dy, const i64* index, float* dw, i64 vocab, i64 channels, i64 n) {
  for (i64 e = GlobalThread(); e < n; e += GridStride()) dw[e] = gpu::EmbeddingGradAt(dy, index, vocab, channels, e);
}

// ---------------------------------------------------------------------------------------------
// Host side.

Status DeviceError(gpuError_t err, const std::string& what) {
  return Status::Internal(std::string(POLNODE_GPU_RUNTIME_NAME) + " " + what + " failed: " + gpuGetErrorString(err));
}

#define POLNODE_GPU_CHECK(expr, what)                          \
  do {                                                         \
    const gpuError_t polnode_gpu_err_ = (expr);                \
    if (polnode_gpu_err_ != gpuSuccess) return DeviceError(polnode_gpu_err_, what); \
  } while (false)

// A device allocation that only grows, reused across Run calls so steady-state training does
// not allocate.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) (void)gpuFree(ptr_);
  }

  // A device array of at least `n` floats (contents unspecified), or the allocation error.
  Result<float*> Reserve(i64 n) {
    const std::size_t bytes = static_cast<std::size_t>(std::max<i64>(n, 1)) * sizeof(float);
    if (bytes <= capacity_) return ptr_;
    if (ptr_ != nullptr) {
      (void)gpuFree(ptr_);
      ptr_ = nullptr;
      capacity_ = 0;
    }
    void* p = nullptr;
    const gpuError_t err = gpuMalloc(&p, bytes);
    if (err != gpuSuccess) {
      (void)gpuGetLastError();  // consume it, so the post-launch check of a later Run does not report it again
      return DeviceError(err, "allocation of " + std::to_string(bytes) + " bytes");
    }
    ptr_ = static_cast<float*>(p);
    capacity_ = bytes;
    return ptr_;
  }

 private:
  float* ptr_ = nullptr;
  std::size_t capacity_ = 0;
};

// A Buffer in device memory (device-resident execution, backend.h), freed with it.
class GpuBuffer final : public Buffer {
 public:
  GpuBuffer(const Backend* owner, const Shape& shape, float* device) : Buffer(owner, shape), device_(device) {}
  ~GpuBuffer() override {
    if (device_ != nullptr) (void)gpuFree(device_);
  }
  float* device() const { return device_; }

 private:
  float* device_;
};

// Pinned host memory that uploads pass through: a copy from pageable memory would be synchronous,
// one from pinned memory overlaps the kernels before it. Two areas are used in turn (double
// buffering), so a caller fills one while the copy from the other runs; an area is reused only
// after its previous copy has finished (its event).
class UploadStaging {
 public:
  UploadStaging() = default;
  UploadStaging(const UploadStaging&) = delete;
  UploadStaging& operator=(const UploadStaging&) = delete;
  ~UploadStaging() {
    for (Area& a : areas_) {
      if (a.done != nullptr) (void)gpuEventSynchronize(a.done);
      if (a.host != nullptr) (void)gpuFreeHost(a.host);
      if (a.done != nullptr) (void)gpuEventDestroy(a.done);
    }
  }

  // The next area, holding at least `bytes`, once its previous copy is done.
  Result<void*> Acquire(std::size_t bytes) {
    Area& a = areas_[static_cast<std::size_t>(next_)];
    if (a.done == nullptr) POLNODE_GPU_CHECK(gpuEventCreateWithFlags(&a.done, gpuEventDisableTiming), "event creation");
    if (a.pending) {
      POLNODE_GPU_CHECK(gpuEventSynchronize(a.done), "waiting for an earlier upload");
      a.pending = false;
    }
    if (a.capacity < bytes) {
      if (a.host != nullptr) (void)gpuFreeHost(a.host);
      a.host = nullptr;
      a.capacity = 0;
      POLNODE_GPU_CHECK(gpuMallocHost(&a.host, bytes), "allocation of " + std::to_string(bytes) + " bytes of pinned memory");
      a.capacity = bytes;
    }
    return a.host;
  }

  // Marks the area Acquire gave as in use by the copies enqueued on `stream` so far.
  Status Release(gpuStream_t stream) {
    Area& a = areas_[static_cast<std::size_t>(next_)];
    POLNODE_GPU_CHECK(gpuEventRecord(a.done, stream), "recording an upload");
    a.pending = true;
    next_ ^= 1;
    return Status::Ok();
  }

 private:
  struct Area {
    void* host = nullptr;
    std::size_t capacity = 0;
    gpuEvent_t done = nullptr;
    bool pending = false;
  };
  Area areas_[2];
  int next_ = 0;
};

// Buffer slots: inputs first, then outputs, then scratch.
constexpr int kMaxInputs = 5;
constexpr int kMaxOutputs = 3;
constexpr int kScratchSlot = kMaxInputs + kMaxOutputs;
constexpr int kNumSlots = kScratchSlot + 1;

class GpuBackend final : public Backend {
 public:
  // `multiprocessors`: the device's, for sizing matrix-product tiles (gpu_elements.h MatmulMicroFor).
  GpuBackend(gpuStream_t stream, i64 multiprocessors)
      : stream_(stream), multiprocessors_(multiprocessors), buffers_(kNumSlots) {}
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;
  ~GpuBackend() override {
    (void)gpuStreamSynchronize(stream_);  // no copy from the staging areas is still running
    buffers_.clear();                     // frees device memory before the stream goes
    (void)gpuStreamDestroy(stream_);
  }

  std::string name() const override { return POLNODE_GPU_VENDOR_NAME; }

  Status Run(Op op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::span<Tensor* const> outputs) override {
    // The same checks, in the same order and with the same messages, as every other backend:
    // output count and aliasing, then shapes and index values (labels, pool taps).
    POLNODE_ASSIGN_OR_RETURN(std::vector<Shape> shapes, ValidateRun(op, attrs, inputs, outputs));

    // Every input reaches the device before any output is written back, so outputs may alias
    // inputs (the optimizers' in-place update) without reading overwritten values.
    const float* in[kMaxInputs] = {};
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      POLNODE_ASSIGN_OR_RETURN(in[i], UploadOperand(static_cast<int>(i), *inputs[i]));
    }
    float* out[kMaxOutputs] = {};
    for (std::size_t o = 0; o < shapes.size(); ++o) {
      POLNODE_ASSIGN_OR_RETURN(out[o], buffers_[kMaxInputs + o].Reserve(NumElements(shapes[o])));
    }
    const Shape* in_shapes[kMaxInputs] = {};
    for (std::size_t i = 0; i < inputs.size(); ++i) in_shapes[i] = &inputs[i]->shape();
    const float* host_ids = op == Op::kEmbeddingGrad ? inputs[0]->data() : nullptr;
    POLNODE_RETURN_IF_ERROR(Launch(op, attrs, std::span<const Shape* const>(in_shapes, inputs.size()), shapes, in, out, host_ids));
    POLNODE_GPU_CHECK(gpuGetLastError(), std::string("launch of ") + std::string(OpName(op)));

    for (std::size_t o = 0; o < shapes.size(); ++o) {
      Tensor& t = *outputs[o];
      t.Resize(shapes[o]);
      if (t.numel() == 0) continue;
      POLNODE_GPU_CHECK(gpuMemcpyAsync(t.data(), out[o], static_cast<std::size_t>(t.numel()) * sizeof(float),
                                       gpuMemcpyDeviceToHost, stream_),
                        "copy of an output to the host");
    }
    POLNODE_GPU_CHECK(gpuStreamSynchronize(stream_), std::string("running ") + std::string(OpName(op)));
    return Status::Ok();
  }

  Result<std::unique_ptr<Buffer>> Allocate(const Shape& shape) override {
    for (i64 d : shape) {
      if (d < 0) return Status::InvalidArgument("cannot allocate a buffer of " + ShapeToString(shape));
    }
    const std::size_t bytes = static_cast<std::size_t>(std::max<i64>(NumElements(shape), 1)) * sizeof(float);
    void* p = nullptr;
    const gpuError_t err = gpuMalloc(&p, bytes);
    if (err != gpuSuccess) {
      (void)gpuGetLastError();
      return Status::ResourceExhausted(std::string(POLNODE_GPU_RUNTIME_NAME) + " allocation of " + std::to_string(bytes) +
                                       " bytes failed: " + gpuGetErrorString(err));
    }
    auto buffer = std::make_unique<GpuBuffer>(this, shape, static_cast<float*>(p));
    POLNODE_GPU_CHECK(gpuMemsetAsync(p, 0, bytes, stream_), "zeroing a buffer");  // all-zero bits are +0.0f
    return std::unique_ptr<Buffer>(std::move(buffer));
  }

  Status Upload(std::span<const float> values, Buffer& to) override {
    POLNODE_ASSIGN_OR_RETURN(float* dev, DeviceOf(&to, "the upload's buffer"));
    if (static_cast<i64>(values.size()) != to.numel()) {
      return Status::InvalidArgument("uploading " + std::to_string(values.size()) + " values to a buffer of " +
                                     ShapeToString(to.shape()));
    }
    if (!values.empty()) {
      POLNODE_ASSIGN_OR_RETURN(void* staged, staging_.Acquire(values.size_bytes()));
      std::memcpy(staged, values.data(), values.size_bytes());
      POLNODE_GPU_CHECK(gpuMemcpyAsync(dev, staged, values.size_bytes(), gpuMemcpyHostToDevice, stream_), "an upload");
      POLNODE_RETURN_IF_ERROR(staging_.Release(stream_));
    }
    CountUpload(static_cast<i64>(values.size_bytes()));
    return Status::Ok();
  }

  Status Download(const Buffer& from, std::span<float> to) override {
    POLNODE_ASSIGN_OR_RETURN(float* dev, DeviceOf(&from, "the download's buffer"));
    if (static_cast<i64>(to.size()) != from.numel()) {
      return Status::InvalidArgument("downloading a buffer of " + ShapeToString(from.shape()) + " into " +
                                     std::to_string(to.size()) + " values");
    }
    if (!to.empty()) {
      POLNODE_GPU_CHECK(gpuMemcpyAsync(to.data(), dev, to.size_bytes(), gpuMemcpyDeviceToHost, stream_), "a download");
    }
    POLNODE_GPU_CHECK(gpuStreamSynchronize(stream_), "waiting for a download");
    CountDownload(static_cast<i64>(to.size_bytes()));
    return Status::Ok();
  }

  Status Enqueue(Op op, const OpAttrs& attrs, std::span<const Buffer* const> inputs,
                 std::span<Buffer* const> outputs) override {
    const std::string name(OpName(op));
    POLNODE_RETURN_IF_ERROR(CheckRunOutputs<Buffer>(op, inputs, outputs));
    if (inputs.size() > static_cast<std::size_t>(kMaxInputs)) return Status::InvalidArgument(name + ": too many inputs");
    const Shape* in_shapes[kMaxInputs] = {};
    const float* in[kMaxInputs] = {};
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      POLNODE_ASSIGN_OR_RETURN(float* dev, DeviceOf(inputs[i], name + ": input " + std::to_string(i)));
      in[i] = dev;
      in_shapes[i] = &inputs[i]->shape();
    }
    // Shapes only: the device's values are not read here (backend.h Enqueue on index inputs).
    POLNODE_ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                             InferOutputShapesOf(op, attrs, std::span<const Shape* const>(in_shapes, inputs.size())));
    float* out[kMaxOutputs] = {};
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      POLNODE_ASSIGN_OR_RETURN(out[o], DeviceOf(outputs[o], name + ": output " + std::to_string(o)));
      if (outputs[o]->shape() != shapes[o]) {
        return Status::InvalidArgument(name + ": output " + std::to_string(o) + " is a buffer of " +
                                       ShapeToString(outputs[o]->shape()) + ", the operator writes " +
                                       ShapeToString(shapes[o]));
      }
    }
    const float* host_ids = nullptr;
    if (op == Op::kEmbeddingGrad) {
      // Its position index is built on the host (gpu_elements.h EmbeddingGradIndex), so the ids come
      // down: B x T values, and the one place the device path can check indices itself.
      enqueued_ids_.resize(static_cast<std::size_t>(inputs[0]->numel()));
      POLNODE_RETURN_IF_ERROR(Download(*inputs[0], enqueued_ids_));
      POLNODE_RETURN_IF_ERROR(CheckIndexValues(op, IndexInput{0, "ids", attrs.num_embeddings}, enqueued_ids_));
      host_ids = enqueued_ids_.data();
    }
    POLNODE_RETURN_IF_ERROR(Launch(op, attrs, std::span<const Shape* const>(in_shapes, inputs.size()), shapes, in, out, host_ids));
    POLNODE_GPU_CHECK(gpuGetLastError(), std::string("launch of ") + name);
    return Status::Ok();
  }

  Status Synchronize() override {
    POLNODE_GPU_CHECK(gpuStreamSynchronize(stream_), "waiting for enqueued operators");
    return Status::Ok();
  }

 private:
  // Run's copy of input `slot` to its device slot (Run's path: every operand crosses each call).
  Result<const float*> UploadOperand(int slot, const Tensor& t) {
    POLNODE_ASSIGN_OR_RETURN(float* dev, buffers_[static_cast<std::size_t>(slot)].Reserve(t.numel()));
    if (t.numel() > 0) {
      POLNODE_GPU_CHECK(gpuMemcpyAsync(dev, t.data(), static_cast<std::size_t>(t.numel()) * sizeof(float),
                                       gpuMemcpyHostToDevice, stream_),
                        "copy of an input to the device");
    }
    return static_cast<const float*>(dev);
  }

  // The device memory of `buffer`, or kInvalidArgument when it is null or another backend made it.
  Result<float*> DeviceOf(const Buffer* buffer, const std::string& what) const {
    if (buffer == nullptr) return Status::InvalidArgument(what + " is null");
    const auto* gpu = dynamic_cast<const GpuBuffer*>(buffer);
    if (gpu == nullptr || buffer->owner() != this) {
      return Status::InvalidArgument(what + " was not allocated by backend " + name());
    }
    return gpu->device();
  }

  // Launches `op`'s kernels on the stream, on device arrays `in` (of shapes `in_shapes`) and `out`
  // (of shapes `shapes`). The sizes come from the same helpers the CPU twin test uses
  // (gpu_elements.h). `host_ids`: kEmbeddingGrad's ids on the host, for its position index.
  // Empty outputs launch nothing.
  Status Launch(Op op, const OpAttrs& attrs, std::span<const Shape* const> in_shapes, const std::vector<Shape>& shapes,
                const float* const* in, float* const* out, const float* host_ids) {
    const Shape& s0 = *in_shapes[0];
    const i64 n = NumElements(shapes[0]);
    const unsigned blocks = BlocksFor(n);
    switch (op) {
      case Op::kMatmul:
      case Op::kMatmulGradA:
      case Op::kMatmulGradB:
      case Op::kBatchedMatmul:
      case Op::kBatchedMatmulGradA:
      case Op::kBatchedMatmulGradB: {
        MatmulOperands m = gpu::MatmulOperandsFor(op, s0, *in_shapes[1]);
        m.x = in[0];
        m.y = in[1];
        m.out = out[0];
        return Matmul(m);
      }
      case Op::kBiasAdd:
        if (n > 0) BiasAddKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], n, gpu::ChannelLayoutOf(s0));
        return Status::Ok();
      case Op::kBiasGrad: {
        const ChannelLayout l = gpu::ChannelLayoutOf(s0);
        if (l.channels > 0) BiasGradKernel<<<static_cast<unsigned>(l.channels), kThreadsPerBlock, 0, stream_>>>(in[0], out[0], l);
        return Status::Ok();
      }
      case Op::kRelu:
        if (n > 0) ReluKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], out[0], n);
        return Status::Ok();
      case Op::kReluGrad:
        if (n > 0) ReluGradKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], n);
        return Status::Ok();
      case Op::kConv2d3x3:
        if (n > 0) ConvKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], gpu::ConvDimsFor(op, s0, *in_shapes[1]), n);
        return Status::Ok();
      case Op::kConv2d3x3GradInput:
        if (n > 0) ConvGradInputKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], gpu::ConvDimsFor(op, s0, *in_shapes[1]), n);
        return Status::Ok();
      case Op::kConv2d3x3GradWeight: {
        if (n == 0) return Status::Ok();
        const ConvDims d = gpu::ConvDimsFor(op, s0, *in_shapes[1]);
        // Few outputs with long chains: one block per (o, ci) whose threads stage the chains'
        // terms; with more pairs than a grid takes, one thread per output.
        if (gpu::ConvGradWeightByTerms(d)) {
          ConvGradWeightTermsKernel<<<static_cast<unsigned>(d.co * d.ci), kConvTermThreads, 0, stream_>>>(in[0], in[1], out[0], d);
          return Status::Ok();
        }
        constexpr int kSmallBlock = 64;
        const auto small_blocks = static_cast<unsigned>(std::min<i64>((n + kSmallBlock - 1) / kSmallBlock, kMaxBlocks));
        ConvGradWeightKernel<<<small_blocks, kSmallBlock, 0, stream_>>>(in[0], in[1], out[0], d, n);
        return Status::Ok();
      }
      case Op::kMaxPool2x2:
        if (n > 0) MaxPoolKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], out[0], out[1], s0[2], s0[3], n);
        return Status::Ok();
      case Op::kMaxPool2x2Grad:  // dX's shape [N, C, H, W] comes from attrs
        if (n > 0) MaxPoolGradKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], shapes[0][2], shapes[0][3], n);
        return Status::Ok();
      case Op::kSoftmaxCrossEntropy: {  // InferOutputShapes guarantees batch >= 1, classes >= 1
        const i64 batch = s0[0], classes = s0[1];
        POLNODE_ASSIGN_OR_RETURN(float* row_loss, buffers_[kScratchSlot].Reserve(batch));
        SoftmaxRowsKernel<<<BlocksFor(batch), kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[1], row_loss, batch, classes);
        MeanLossKernel<<<1, 1, 0, stream_>>>(row_loss, out[0], batch);
        return Status::Ok();
      }
      case Op::kSoftmaxCrossEntropyGrad:
        SoftmaxGradKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], s0[0], s0[1]);
        return Status::Ok();
      case Op::kSgdMomentum:
        if (n > 0)
          SgdMomentumKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], in[2], out[0], out[1], -attrs.lr,
                                                                     attrs.momentum, attrs.weight_decay, n);
        return Status::Ok();
      case Op::kAdamW:
        if (n > 0)
          AdamWKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], in[2], in[3], out[0], out[1], out[2],
                                                               gpu::AdamScalarsOf(attrs), n);
        return Status::Ok();
      case Op::kAdd:
        if (n > 0) AddKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], n);
        return Status::Ok();
      case Op::kTransposeHeads:
        if (n > 0) {
          const gpu::TransposeDims t = gpu::TransposeDimsOf(s0);
          TransposeHeadsKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], out[0], t, n);
        }
        return Status::Ok();
      case Op::kGelu:
        if (n > 0) GeluKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], out[0], n);
        return Status::Ok();
      case Op::kClipCoefficient:
        if (n > 0) ClipCoefficientKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], out[0], attrs.max_norm, n);
        return Status::Ok();
      case Op::kGeluGrad:
        if (n > 0) GeluGradKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], n);
        return Status::Ok();
      case Op::kLayerNorm: {  // in X, gamma, beta; out Y, Mean, Rstd
        const gpu::RowLayout l = gpu::RowLayoutOf(s0);
        if (l.rows == 0) return Status::Ok();
        LayerNormStatsKernel<<<BlocksFor(l.rows), kThreadsPerBlock, 0, stream_>>>(in[0], l, attrs.eps, out[1], out[2]);
        LayerNormKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], in[2], out[1], out[2], out[0], l, n);
        return Status::Ok();
      }
      case Op::kLayerNormGrad: {  // in X, gamma, Mean, Rstd, dY; out dX, dGamma, dBeta
        const gpu::RowLayout l = gpu::RowLayoutOf(s0);
        POLNODE_ASSIGN_OR_RETURN(float* ab, buffers_[kScratchSlot].Reserve(2 * l.rows));
        if (l.rows > 0) {
          LayerNormGradSumsKernel<<<BlocksFor(l.rows), kThreadsPerBlock, 0, stream_>>>(in[0], in[4], in[1], in[2],
                                                                                       in[3], l, ab);
          LayerNormGradInputKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[4], in[1], in[2], in[3], ab,
                                                                             out[0], l, n);
        }
        // Few outputs with long chains: small blocks spread them over more multiprocessors.
        constexpr int kSmallBlock = 64;
        const auto column_blocks = static_cast<unsigned>((l.channels + kSmallBlock - 1) / kSmallBlock);
        LayerNormGradParamsKernel<<<column_blocks, kSmallBlock, 0, stream_>>>(in[0], in[4], in[2], in[3], out[1],
                                                                              out[2], l);
        return Status::Ok();
      }
      case Op::kCausalSoftmax: {
        const i64 t = s0.back();
        if (n > 0) {
          CausalSoftmaxKernel<<<BlocksFor(n / t), kThreadsPerBlock, 0, stream_>>>(in[0], out[0], t, attrs.scale, n / t);
        }
        return Status::Ok();
      }
      case Op::kCausalSoftmaxGrad: {
        const i64 t = s0.back();
        if (n > 0) {
          CausalSoftmaxGradKernel<<<BlocksFor(n / t), kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], t,
                                                                                      attrs.scale, n / t);
        }
        return Status::Ok();
      }
      case Op::kEmbedding:
        if (n > 0) {
          EmbeddingKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[0], in[1], out[0], s0[1], n);
        }
        return Status::Ok();
      case Op::kEmbeddingGrad: {  // in ids, dY; out dW[V, C]
        const i64 vocab = shapes[0][0], channels = shapes[0][1];
        host_index_ = gpu::EmbeddingGradIndex(host_ids, NumElements(s0), vocab);
        // The i64 index in the float scratch buffer: device allocations are aligned far beyond 8.
        POLNODE_ASSIGN_OR_RETURN(float* scratch,
                                 buffers_[kScratchSlot].Reserve(2 * static_cast<i64>(host_index_.size())));
        auto* index = reinterpret_cast<i64*>(scratch);
        POLNODE_GPU_CHECK(
            gpuMemcpyAsync(index, host_index_.data(), host_index_.size() * sizeof(i64), gpuMemcpyHostToDevice, stream_),
            "copy of the embedding index to the device");
        if (n > 0) {
          EmbeddingGradKernel<<<blocks, kThreadsPerBlock, 0, stream_>>>(in[1], index, out[0], vocab, channels, n);
        }
        return Status::Ok();
      }
    }
    return Status::InvalidArgument("unknown operator " + std::to_string(static_cast<int>(op)));
  }

  Status Matmul(const MatmulOperands& m) {
    const int micro = gpu::MatmulMicroFor(m, multiprocessors_);
    const i64 blocks = micro == 4 ? gpu::MatmulBlocks<4>(m) : micro == 2 ? gpu::MatmulBlocks<2>(m) : gpu::MatmulBlocks<1>(m);
    if (blocks == 0) return Status::Ok();
    // 2^31 - 1 blocks of 256 outputs each: beyond any output that fits in device memory.
    if (blocks > (i64{1} << 31) - 1) {
      return Status::ResourceExhausted("a matrix product with " + std::to_string(m.batches) + " x " +
                                       std::to_string(m.rows) + " x " + std::to_string(m.cols) +
                                       " outputs exceeds one GPU grid");
    }
    const dim3 block(gpu::kTileThreads, gpu::kTileThreads);
    const auto grid = static_cast<unsigned>(blocks);
    if (micro == 4) {
      MatmulKernel<4><<<grid, block, 0, stream_>>>(m);
    } else if (micro == 2) {
      MatmulKernel<2><<<grid, block, 0, stream_>>>(m);
    } else {
      MatmulKernel<1><<<grid, block, 0, stream_>>>(m);
    }
    return Status::Ok();
  }

  gpuStream_t stream_;
  i64 multiprocessors_;
  std::vector<DeviceBuffer> buffers_;
  UploadStaging staging_;
  // kEmbeddingGrad's ids, downloaded by Enqueue for its host-built position index.
  std::vector<float> enqueued_ids_;
  // kEmbeddingGrad's position index, kept until the next Run so the asynchronous copy never reads
  // freed host memory.
  std::vector<i64> host_index_;
};

// Inputs per self-test operation (gpu_elements.h MakeSelfTestInputs).
constexpr i64 kSelfTestSize = 4096;

std::string BitsText(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", bits);
  return buf;
}

// "NVIDIA H100 80GB HBM3 (sm_90)" / "AMD Instinct MI210 (gfx90a:sramecc+:xnack-)", for messages.
std::string DeviceDescription(int device) {
  gpuDeviceProp_t prop{};
  if (gpuGetDeviceProperties(&prop, device) != gpuSuccess) {
    (void)gpuGetLastError();
    return "device " + std::to_string(device);
  }
#if defined(__HIPCC__)
  return std::string(prop.name) + " (" + prop.gcnArchName + ")";
#else
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
#endif
}

Status SelfTest(gpuStream_t stream, const std::string& device) {
  std::vector<float> a, b, c;
  gpu::MakeSelfTestInputs(kSelfTestSize, a, b, c);
  const i64 outputs = kSelfTestSize * gpu::kSelfTestOps;
  std::vector<float> got(static_cast<std::size_t>(outputs)), want(static_cast<std::size_t>(outputs));
  DeviceBuffer da, db, dc, dy;
  POLNODE_ASSIGN_OR_RETURN(float* pa, da.Reserve(kSelfTestSize));
  POLNODE_ASSIGN_OR_RETURN(float* pb, db.Reserve(kSelfTestSize));
  POLNODE_ASSIGN_OR_RETURN(float* pc, dc.Reserve(kSelfTestSize));
  POLNODE_ASSIGN_OR_RETURN(float* py, dy.Reserve(outputs));
  const std::size_t bytes = kSelfTestSize * sizeof(float);
  POLNODE_GPU_CHECK(gpuMemcpyAsync(pa, a.data(), bytes, gpuMemcpyHostToDevice, stream), "self-test copy");
  POLNODE_GPU_CHECK(gpuMemcpyAsync(pb, b.data(), bytes, gpuMemcpyHostToDevice, stream), "self-test copy");
  POLNODE_GPU_CHECK(gpuMemcpyAsync(pc, c.data(), bytes, gpuMemcpyHostToDevice, stream), "self-test copy");
  SelfTestKernel<<<BlocksFor(kSelfTestSize), kThreadsPerBlock, 0, stream>>>(pa, pb, pc, py, kSelfTestSize);
  gpuError_t err = gpuGetLastError();
  if (err != gpuSuccess) {
    return Status::Unavailable(std::string(POLNODE_GPU_RUNTIME_NAME) + " device " + device +
                               " cannot run this build's kernels (launch failed: " + gpuGetErrorString(err) +
                               "); rebuild with its architecture in CMAKE_CUDA_ARCHITECTURES / "
                               "POLNODE_HIP_ARCHITECTURES");
  }
  POLNODE_GPU_CHECK(gpuMemcpyAsync(got.data(), py, static_cast<std::size_t>(outputs) * sizeof(float),
                                   gpuMemcpyDeviceToHost, stream),
                    "self-test copy");
  POLNODE_GPU_CHECK(gpuStreamSynchronize(stream), "self-test");
  for (i64 i = 0; i < kSelfTestSize; ++i) gpu::SelfTestAt(a.data(), b.data(), c.data(), want.data(), i);
  for (i64 e = 0; e < outputs; ++e) {
    const float g = got[static_cast<std::size_t>(e)];
    const float w = want[static_cast<std::size_t>(e)];
    if (g != g && w != w) continue;  // NaN payloads differ between vendors; hashes read them alike
    if (std::memcmp(&g, &w, sizeof(float)) == 0) continue;
    const auto i = static_cast<std::size_t>(e / gpu::kSelfTestOps);
    return Status::Unavailable(std::string(POLNODE_GPU_RUNTIME_NAME) + " device " + device +
                               " failed the self-test: " + gpu::kSelfTestOpNames[e % gpu::kSelfTestOps] +
                               " of a = " + BitsText(a[i]) + ", b = " + BitsText(b[i]) + ", c = " + BitsText(c[i]) +
                               " gives " + BitsText(g) + " on the device and " + BitsText(w) +
                               " on the host, so its results would not be bit-exact");
  }
  return Status::Ok();
}

#if defined(__HIPCC__) && !defined(__HIP_DEVICE_COMPILE__)
#if !defined(POLNODE_HIP_TARGETS)
#error "POLNODE_HIP_TARGETS must name the --offload-arch targets, space-separated (kernels/gpu/gpu.cmake)"
#endif
#define POLNODE_STRINGIFY(...) #__VA_ARGS__
#define POLNODE_EXPAND_STRINGIFY(...) POLNODE_STRINGIFY(__VA_ARGS__)
// ROCm aborts the process at the first HIP call when a GPU has no code object in this build, so
// the GPUs' targets are checked from sysfs first (amd_targets.h).
Status CheckAmdTargetsBeforeHip() {
  Result<std::vector<std::string>> present = amd::GpuTargets(std::string(amd::kKfdNodesDir));
  if (!present.ok()) {
    return Status::Unavailable(std::string("no usable ") + POLNODE_GPU_RUNTIME_NAME + " device on this machine (" +
                               present.status().message() + ")");
  }
  const std::vector<std::string> compiled = amd::SplitTargets(POLNODE_EXPAND_STRINGIFY(POLNODE_HIP_TARGETS));
  return amd::CheckTargets(*present, compiled);
}
#endif

Result<std::unique_ptr<Backend>> Create() {
#if defined(__HIPCC__) && !defined(__HIP_DEVICE_COMPILE__)
  POLNODE_RETURN_IF_ERROR(CheckAmdTargetsBeforeHip());
#endif
  int count = 0;
  const gpuError_t err = gpuGetDeviceCount(&count);
  if (err != gpuSuccess || count == 0) {
    (void)gpuGetLastError();
    return Status::Unavailable(std::string("no usable ") + POLNODE_GPU_RUNTIME_NAME + " device on this machine" +
                               (err != gpuSuccess ? std::string(" (") + gpuGetErrorString(err) + ")" : std::string()));
  }
  POLNODE_GPU_CHECK(gpuSetDevice(0), "selecting device 0");
  gpuDeviceProp_t prop{};
  POLNODE_GPU_CHECK(gpuGetDeviceProperties(&prop, 0), "reading the device's properties");
  gpuStream_t stream = nullptr;
  POLNODE_GPU_CHECK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking), "stream creation");
  const Status self_test = SelfTest(stream, DeviceDescription(0));
  if (!self_test.ok()) {
    (void)gpuStreamDestroy(stream);
    return self_test;
  }
  return std::unique_ptr<Backend>(std::make_unique<GpuBackend>(stream, std::max(1, prop.multiProcessorCount)));
}

}  // namespace
}  // namespace POLNODE_GPU_NS

#if defined(__HIPCC__)
Result<std::unique_ptr<Backend>> MakeHipBackend() { return POLNODE_GPU_NS::Create(); }
#else
Result<std::unique_ptr<Backend>> MakeCudaBackend() { return POLNODE_GPU_NS::Create(); }
#endif

}  // namespace polnode::kernels
