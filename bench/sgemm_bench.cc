// sgemm_bench: polnode's fast CPU matmul against OpenBLAS's cblas_sgemm, both on one pinned
// core in the same run, in the three layouts training runs (A B forward, dC B^T and A^T dC
// backward), plus a bit-for-bit check of the fast path against the scalar reference.
//
//   sgemm_bench [--size N] [--reps R] [--python PATH]      (defaults: N = 1024, R = 10)
//
// With --python, PyTorch's matmul (torch.mm, one thread, the BLAS it was built with) is timed the
// same way in that interpreter on the same pinned core after the others, in the same layouts.
//
// Each repetition times both libraries back to back; the best time of each is reported, the
// usual estimate of what the code can do on a machine shared with other work. Times are process
// CPU time (every thread of the process, so a helper thread could not hide work), which does
// not count the time the scheduler gives the core to other processes; wall-clock numbers are
// printed too.
//
// Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not know AMD Zen 5 and picks its Haswell (AVX2)
// kernels there; run with OPENBLAS_CORETYPE=SkylakeX to compare against its AVX-512 kernels.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/kernels/tensor.h"

#if defined(POLNODE_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace {

using polnode::kernels::Backend;
using polnode::kernels::Op;
using polnode::kernels::OpAttrs;
using polnode::kernels::Tensor;

Tensor RandomMatrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  Tensor t({rows, cols});
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.values()) v = dist(gen);
  return t;
}

// Pins the process to the first CPU it may run on, so both libraries use the same single core.
int PinToOneCore() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0 ? cpu : -1;
  }
  return -1;
}

// Wall-clock and process CPU seconds of one timed call.
struct Timing {
  double wall = 1e30;
  double cpu = 1e30;
};

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs fn once and keeps the smaller of each time in `best`.
template <typename Fn>
void TimeBest(Timing& best, Fn&& fn) {
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  fn();
  const double cpu = CpuSeconds() - cpu_start;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  best.wall = std::min(best.wall, wall);
  best.cpu = std::min(best.cpu, cpu);
}

// c = the product `op` of square x and y: x y (kMatmul), x y^T (kMatmulGradA: dC B^T) or x^T y
// (kMatmulGradB: A^T dC).
bool RunProduct(Backend& backend, Op op, const Tensor& x, const Tensor& y, Tensor& c) {
  const Tensor* inputs[] = {&x, &y};
  Tensor* outputs[] = {&c};
  const polnode::Status s = backend.Run(op, OpAttrs{}, inputs, outputs);
  if (!s.ok()) std::fprintf(stderr, "%s failed: %s\n", std::string(polnode::kernels::OpName(op)).c_str(), s.ToString().c_str());
  return s.ok();
}

// The fast backend's matmul and both gradients against the reference on a ragged shape larger
// than every cache block.
bool BitwiseCheck(Backend& fast) {
  const std::int64_t m = 300, k = 513, n = 257;
  const Tensor a = RandomMatrix(m, k, 11), b = RandomMatrix(k, n, 12), dc = RandomMatrix(m, n, 13);
  std::unique_ptr<Backend> reference = polnode::kernels::MakeReferenceBackend();
  bool equal = true;
  for (Op op : {Op::kMatmul, Op::kMatmulGradA, Op::kMatmulGradB}) {
    const Tensor* in0 = op == Op::kMatmulGradA ? &dc : &a;
    const Tensor* in1 = op == Op::kMatmulGradB ? &dc : &b;
    const Tensor* inputs[] = {in0, in1};
    Tensor want, got;
    Tensor* want_out[] = {&want};
    Tensor* got_out[] = {&got};
    if (!reference->Run(op, OpAttrs{}, inputs, want_out).ok() ||
        !fast.Run(op, OpAttrs{}, inputs, got_out).ok()) {
      return false;
    }
    const bool same = got.BitwiseEqual(want);
    std::printf("bitwise check %-14s %lldx%lldx%lld: %s\n",
                std::string(polnode::kernels::OpName(op)).c_str(), static_cast<long long>(m),
                static_cast<long long>(k), static_cast<long long>(n),
                same ? "identical to reference" : "DIFFERS FROM REFERENCE");
    equal = equal && same;
  }
  return equal;
}

// PyTorch's side: the interpreter at `python` times torch.mm in the three layouts on one thread
// (best of `reps` by process CPU time, after a warm-up) and prints its lines; it inherits the pin.
void TorchMatmul(const std::string& python, std::int64_t size, int reps) {
  const std::string script =
      "import time, torch\n"
      "torch.set_num_threads(1)\n"
      "n, reps = " + std::to_string(size) + ", " + std::to_string(reps) + "\n"
      "g = torch.Generator().manual_seed(1)\n"
      "a = torch.rand(n, n, generator=g) * 2 - 1\n"
      "b = torch.rand(n, n, generator=g) * 2 - 1\n"
      "for name, f in ((\"matmul\", lambda: a @ b), (\"matmul_grad_a\", lambda: a @ b.T), (\"matmul_grad_b\", lambda: a.T @ b)):\n"
      "    f()\n"
      "    best = 1e30\n"
      "    for _ in range(reps):\n"
      "        t = time.process_time(); f(); best = min(best, time.process_time() - t)\n"
      "    print(\"  %-14s PyTorch  %8.2f            (torch %s, MKL %s, 1 thread, by CPU time)\" % (name, 2 * n ** 3 / best * 1e-9,"
      " torch.__version__, torch.backends.mkl.is_available()))\n";
  const std::string command = python + " -c '" + script + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return;
  char line[512];
  while (std::fgets(line, sizeof line, pipe.get()) != nullptr) std::fputs(line, stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t size = 1024;
  int reps = 10;
  std::string python;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--size") == 0) size = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--python") == 0) python = argv[i + 1];
  }
  if (size < 1 || reps < 1) {
    std::fprintf(stderr, "usage: sgemm_bench [--size N] [--reps R]\n");
    return 2;
  }
  const int cpu = PinToOneCore();
  std::printf("pinned to cpu %d\n", cpu);
#if defined(POLNODE_HAVE_OPENBLAS)
  openblas_set_num_threads(1);
#endif
  std::unique_ptr<Backend> fast = polnode::kernels::MakeCpuBackend(1);
  std::printf("polnode backend: %s, 1 thread\n", fast->name().c_str());

  const Tensor a = RandomMatrix(size, size, 1), b = RandomMatrix(size, size, 2);
  const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) *
                       static_cast<double>(size);
  const auto gflops = [&](double seconds) { return flops / seconds * 1e-9; };
  std::printf("sgemm %lld^3, one core, best of %d (GFLOP/s by CPU time, by wall time)\n",
              static_cast<long long>(size), reps);
  // The plain product and the two transposed layouts the backward pass runs, each against
  // OpenBLAS on the same operands and layout.
  struct Layout {
    Op op;
    bool transpose_a, transpose_b;
  };
  for (const Layout layout : {Layout{Op::kMatmul, false, false}, Layout{Op::kMatmulGradA, false, true},
                              Layout{Op::kMatmulGradB, true, false}}) {
    Tensor ours;
    std::vector<float> theirs(static_cast<std::size_t>(size * size));
    Timing ours_time, theirs_time, discard;
    bool ok = true;
    for (int r = 0; r <= reps; ++r) {  // repetition 0 warms caches, page tables and thread pools
      TimeBest(r > 0 ? ours_time : discard, [&] { ok = ok && RunProduct(*fast, layout.op, a, b, ours); });
#if defined(POLNODE_HAVE_OPENBLAS)
      TimeBest(r > 0 ? theirs_time : discard, [&] {
        const int n = static_cast<int>(size);
        cblas_sgemm(CblasRowMajor, layout.transpose_a ? CblasTrans : CblasNoTrans,
                    layout.transpose_b ? CblasTrans : CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                    theirs.data(), n);
      });
#endif
    }
    if (!ok) return 1;
    const std::string name(polnode::kernels::OpName(layout.op));
    std::printf("  %-14s polnode  %8.2f  %8.2f\n", name.c_str(), gflops(ours_time.cpu), gflops(ours_time.wall));
#if defined(POLNODE_HAVE_OPENBLAS)
    std::printf("  %-14s OpenBLAS %8.2f  %8.2f   (OpenBLAS core: %s, A%s B%s)\n", "", gflops(theirs_time.cpu),
                gflops(theirs_time.wall), openblas_get_corename(), layout.transpose_a ? "^T" : "",
                layout.transpose_b ? "^T" : "");
    const double ratio = theirs_time.cpu / ours_time.cpu;
    std::printf("  %-14s ratio polnode / OpenBLAS: %.3f by CPU time, %.3f by wall time (target >= 0.95) %s\n", "",
                ratio, theirs_time.wall / ours_time.wall, ratio >= 0.95 ? "MET" : "MISSED");
    double max_diff = 0.0;
    for (std::int64_t e = 0; e < size * size; ++e) {
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(ours.data()[e]) - theirs[static_cast<std::size_t>(e)]));
    }
    std::printf("  %-14s max |polnode - OpenBLAS| = %.3g (different summation orders)\n", "", max_diff);
#else
    std::printf("  OpenBLAS: not found at configure time\n");
#endif
  }
  if (!python.empty()) TorchMatmul(python, size, reps);
  return BitwiseCheck(*fast) ? 0 : 1;
}
