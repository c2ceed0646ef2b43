// Goto/BLIS-style blocking: for each column block of C (nc wide) and each k block (kc deep), B's
// block is packed into nr-wide panels; for each row block (mc tall) A's block is packed into
// mr-tall panels; then the microkernel sweeps mr x nr tiles, B's panel staying in L1 while A's
// panels stream from L2. Partial tiles at the right and bottom edges run on a padded copy.
#include "gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace polnode::kernels {
namespace {

using std::int64_t;

// Block sizes: an mc x kc block of A (192 KiB) stays in L2 while the microkernel streams it, a
// kc x nr panel of B (64 KiB for AVX-512's nr = 32, 32 KiB for AVX2's 16) sits in L1 or close to
// it, and a kc x nc block of B in L2/L3. A deep kc means each C tile is loaded and stored once per
// 512 terms of its chains: 1024^3 ran at 0.93-0.96x OpenBLAS with kc = 256, mc = 192 and at
// 0.98-1.02x with these (sgemm_bench, AMD Zen 5). The chains are the same whatever the blocking.
constexpr int64_t kKc = 512;
constexpr int64_t kMcTarget = 96;
constexpr int64_t kNc = 3072;
constexpr int kMaxTile = 16 * 64;  // the largest mr * nr of any level
constexpr int kMaxMr = 16;         // the largest mr of any level
constexpr int kMaxNr = 64;         // the largest nr of any level

// Packing buffers, one set per thread and reused across calls (64-byte aligned starts).
struct PackBuffers {
  std::vector<float> a_storage, b_storage;
  float* a = nullptr;
  float* b = nullptr;
  void Reserve(int64_t a_floats, int64_t b_floats) {
    a = Aligned(a_storage, a_floats);
    b = Aligned(b_storage, b_floats);
  }
  static float* Aligned(std::vector<float>& storage, int64_t floats) {
    if (static_cast<int64_t>(storage.size()) < floats + 16) {
      storage.resize(static_cast<std::size_t>(floats + 16));
    }
    auto address = reinterpret_cast<std::uintptr_t>(storage.data());
    return storage.data() + ((64 - address % 64) % 64) / sizeof(float);
  }
};
thread_local PackBuffers tls_buffers;

#if defined(__SSE2__)
// dst[q * dst_stride + r] = src[r * src_stride + q] for r, q < 4: four runs of four contiguous
// floats transposed in SSE registers (x86-64's baseline), four values per load and store.
void Transpose4x4(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  __m128 r0 = _mm_loadu_ps(src);
  __m128 r1 = _mm_loadu_ps(src + src_stride);
  __m128 r2 = _mm_loadu_ps(src + 2 * src_stride);
  __m128 r3 = _mm_loadu_ps(src + 3 * src_stride);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(dst, r0);
  _mm_storeu_ps(dst + dst_stride, r1);
  _mm_storeu_ps(dst + 2 * dst_stride, r2);
  _mm_storeu_ps(dst + 3 * dst_stride, r3);
}
#endif

// One full panel of kMr rows of A starting at `origin` (kc columns) into panel[p * kMr + i].
// kMr is a compile-time constant so the row loop unrolls without per-row bounds checks; a
// transposed A (row_stride 1) has each panel column contiguous and is copied as a block; a
// row-major A (col_stride 1, the activations of most products) goes through 4 x 4 register
// transposes, which move four values per load and store instead of one. Only copies: the
// panel's values are A's, whichever way they came.
template <int kMr>
void PackAFullPanel(const MatrixView& a, const float* origin, int64_t kc, float* panel) {
  if (a.row_stride == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      std::memcpy(panel + p * kMr, origin + p * a.col_stride, kMr * sizeof(float));
    }
    return;
  }
  int64_t p0 = 0;
#if defined(__SSE2__)
  if (a.col_stride == 1) {
    constexpr int kBlockRows = kMr / 4 * 4;
    for (; p0 + 4 <= kc; p0 += 4) {
      for (int i = 0; i < kBlockRows; i += 4) {
        Transpose4x4(origin + i * a.row_stride + p0, a.row_stride, panel + p0 * kMr + i, kMr);
      }
      for (int i = kBlockRows; i < kMr; ++i) {
        for (int64_t p = p0; p < p0 + 4; ++p) panel[p * kMr + i] = origin[i * a.row_stride + p];
      }
    }
  }
#endif
  for (int64_t p = p0; p < kc; ++p) {
    const float* src = origin + p * a.col_stride;
    float* dst = panel + p * kMr;
    for (int i = 0; i < kMr; ++i) dst[i] = src[i * a.row_stride];
  }
}

// Packs a full panel through PackAFullPanel when mr is one of the instruction sets' microkernel
// heights; false (nothing written) otherwise.
bool PackAFast(const MatrixView& a, const float* origin, int64_t kc, int mr, float* panel) {
  switch (mr) {
    case 4: PackAFullPanel<4>(a, origin, kc, panel); return true;
    case 6: PackAFullPanel<6>(a, origin, kc, panel); return true;
    case 12: PackAFullPanel<12>(a, origin, kc, panel); return true;
    default: return false;
  }
}

// A(i0.., p0..) as panels of mr rows: out[panel * mr * kc + p * mr + i]; rows past `rows` are 0.
// The writes run contiguously while the reads walk the mr rows side by side, so the rows'
// cache misses overlap instead of coming one row at a time.
void PackA(const MatrixView& a, int64_t i0, int64_t rows, int64_t p0, int64_t kc, int mr,
           float* out) {
  const float* row_start[kMaxMr];
  for (int64_t ip = 0; ip < rows; ip += mr) {
    float* panel = out + ip * kc;
    const int64_t live = std::min<int64_t>(mr, rows - ip);
    if (live == mr &&
        PackAFast(a, a.data + (i0 + ip) * a.row_stride + p0 * a.col_stride, kc, mr, panel)) {
      continue;
    }
    for (int64_t i = 0; i < live; ++i) {
      row_start[i] = a.data + (i0 + ip + i) * a.row_stride + p0 * a.col_stride;
    }
    for (int64_t p = 0; p < kc; ++p) {
      float* dst = panel + p * mr;
      const int64_t offset = p * a.col_stride;
      for (int64_t i = 0; i < live; ++i) dst[i] = row_start[i][offset];
      for (int64_t i = live; i < mr; ++i) dst[i] = 0.0f;
    }
  }
}

// B(p0.., j0..) as panels of nr columns: out[panel * nr * kc + p * nr + j]; columns past `cols`
// are 0.
void PackB(const MatrixView& b, int64_t p0, int64_t kc, int64_t j0, int64_t cols, int nr,
           float* out) {
  for (int64_t jp = 0; jp < cols; jp += nr) {
    float* panel = out + jp * kc;
    const int64_t live = std::min<int64_t>(nr, cols - jp);
    if (b.col_stride == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b.data + (p0 + p) * b.row_stride + j0 + jp;
        std::memcpy(panel + p * nr, src, static_cast<std::size_t>(live) * sizeof(float));
        for (int64_t j = live; j < nr; ++j) panel[p * nr + j] = 0.0f;
      }
      continue;
    }
    // Transposed source (columns contiguous): read the live columns side by side.
    const float* col_start[kMaxNr];
    for (int64_t j = 0; j < live; ++j) {
      col_start[j] = b.data + p0 * b.row_stride + (j0 + jp + j) * b.col_stride;
    }
    int64_t p_done = 0;
#if defined(__SSE2__)
    if (b.row_stride == 1 && live == nr && nr % 4 == 0) {
      // Four columns by four rows at a time, through register transposes.
      for (; p_done + 4 <= kc; p_done += 4) {
        for (int j = 0; j < nr; j += 4) {
          Transpose4x4(col_start[j] + p_done, b.col_stride, panel + p_done * nr + j, nr);
        }
      }
    }
#endif
    for (int64_t p = p_done; p < kc; ++p) {
      float* dst = panel + p * nr;
      const int64_t offset = p * b.row_stride;
      for (int64_t j = 0; j < live; ++j) dst[j] = col_start[j][offset];
      for (int64_t j = live; j < nr; ++j) dst[j] = 0.0f;
    }
  }
}

// Asks the cache for the C tile the next microkernel call will read and write, so its rows
// (one ldc apart, usually not in cache) arrive while the current tile computes.
void PrefetchTile(const float* c, int64_t ldc, int64_t rows, int nr) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int j = 0; j < nr; j += 16) __builtin_prefetch(c + i * ldc + j, 1, 3);
  }
}

// One tile at c (rows x cols live of mr x nr): direct when full, else through a padded copy.
void RunTile(const CpuKernels& kr, int64_t kc, const float* a, const float* b, float* c,
             int64_t ldc, int64_t rows, int64_t cols, bool load_c) {
  if (rows == kr.mr && cols == kr.nr) {
    kr.microkernel(kc, a, b, c, ldc, load_c);
    return;
  }
  alignas(64) float tile[kMaxTile];
  if (load_c) {
    for (int64_t i = 0; i < kr.mr; ++i) {
      for (int64_t j = 0; j < kr.nr; ++j) {
        tile[i * kr.nr + j] = (i < rows && j < cols) ? c[i * ldc + j] : 0.0f;
      }
    }
  }
  kr.microkernel(kc, a, b, tile, kr.nr, load_c);
  for (int64_t i = 0; i < rows; ++i) {
    std::memcpy(c + i * ldc, tile + i * kr.nr, static_cast<std::size_t>(cols) * sizeof(float));
  }
}

// The rows [m0, m1) and columns [n0, n1) of the product, on the calling thread.
void GemmBlock(const CpuKernels& kr, const GemmProblem& g, int64_t m0, int64_t m1, int64_t n0,
               int64_t n1) {
  if (g.k == 0) {
    if (!g.accumulate) {
      for (int64_t i = m0; i < m1; ++i) std::fill(g.c + i * g.ldc + n0, g.c + i * g.ldc + n1, 0.0f);
    }
    return;
  }
  const int64_t mc_max = std::max<int64_t>(kr.mr, kMcTarget / kr.mr * kr.mr);
  const int64_t nc_max = kNc / kr.nr * kr.nr;
  PackBuffers& buf = tls_buffers;
  buf.Reserve(mc_max * kKc, nc_max * kKc);
  for (int64_t jc = n0; jc < n1; jc += nc_max) {
    const int64_t nc = std::min(nc_max, n1 - jc);
    for (int64_t pc = 0; pc < g.k; pc += kKc) {
      const int64_t kc = std::min(kKc, g.k - pc);
      const bool load_c = g.accumulate || pc > 0;  // later k blocks continue the chains in C
      PackB(g.b, pc, kc, jc, nc, kr.nr, buf.b);
      for (int64_t ic = m0; ic < m1; ic += mc_max) {
        const int64_t mc = std::min(mc_max, m1 - ic);
        PackA(g.a, ic, mc, pc, kc, kr.mr, buf.a);
        for (int64_t jr = 0; jr < nc; jr += kr.nr) {
          for (int64_t ir = 0; ir < mc; ir += kr.mr) {
            PrefetchTile(g.c + (ic + ir + kr.mr) * g.ldc + jc + jr, g.ldc,
                         std::min<int64_t>(kr.mr, mc - ir - kr.mr), kr.nr);
            RunTile(kr, kc, buf.a + ir * kc, buf.b + jr * kc, g.c + (ic + ir) * g.ldc + jc + jr,
                    g.ldc, std::min<int64_t>(kr.mr, mc - ir), std::min<int64_t>(kr.nr, nc - jr),
                    load_c);
          }
        }
      }
    }
  }
}

}  // namespace

void Gemm(const CpuKernels& kernels, const GemmProblem& problem, ThreadPool* pool) {
  const int64_t m = problem.m, n = problem.n;
  if (m == 0 || n == 0) return;
  const int threads = pool == nullptr ? 1 : pool->size();
  // Split the output in whole microkernel tiles along the dimension whose split leaves the
  // busiest thread the least work: a batch of 128 rows is 11 tiles of 12 (6 and 5 on two threads)
  // but its 256 columns are 8 tiles of 32 (4 and 4).
  const int64_t row_units = (m + kernels.mr - 1) / kernels.mr;
  const int64_t col_units = (n + kernels.nr - 1) / kernels.nr;
  const auto busiest = [threads](int64_t units, int64_t unit_size, int64_t extent) {
    const int64_t tasks = std::min<int64_t>(threads, units);
    return std::min(extent, (units + tasks - 1) / tasks * unit_size);
  };
  const int64_t row_split_work = busiest(row_units, kernels.mr, m) * n;
  const int64_t col_split_work = m * busiest(col_units, kernels.nr, n);
  const bool split_rows =
      row_split_work != col_split_work ? row_split_work < col_split_work : row_units >= col_units;
  const int64_t units = split_rows ? row_units : col_units;
  const int64_t tasks = std::min<int64_t>(threads, units);
  if (tasks <= 1) {
    GemmBlock(kernels, problem, 0, m, 0, n);
    return;
  }
  pool->Run(tasks, [&](int64_t t) {
    const int64_t u0 = units * t / tasks, u1 = units * (t + 1) / tasks;
    if (split_rows) {
      GemmBlock(kernels, problem, u0 * kernels.mr, std::min(m, u1 * kernels.mr), 0, n);
    } else {
      GemmBlock(kernels, problem, 0, m, u0 * kernels.nr, std::min(n, u1 * kernels.nr));
    }
  });
}

}  // namespace polnode::kernels
