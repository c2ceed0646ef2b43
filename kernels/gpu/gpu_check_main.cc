// polnode_gpu_check: the GPU-versus-reference bitwise check as one program, for GPU machines
// that lack GoogleTest or the node's other dependencies (scripts/gpu-check.sh builds it alone).
// For every GPU backend compiled in and every operator it prints one PASS/FAIL line, with the
// first failing case's details, and a time per operator for the GPU and the reference.
//
// Usage: polnode_gpu_check [--backend cuda|hip] [--seed N]
// Exit status: 0 all operators bit-identical on every available backend; 1 some differ;
// 2 no GPU backend could run (not compiled, or no device: the reason is printed).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpu/conformance.h"
#include "gpu/gpu_backend.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"

namespace {

using polnode::Result;
using polnode::kernels::Backend;
using polnode::kernels::Op;

struct Candidate {
  std::string name;
  Result<std::unique_ptr<Backend>> (*make)();
};

std::vector<Candidate> CompiledGpuBackends() {
  std::vector<Candidate> all;
#if defined(POLNODE_HAVE_CUDA)
  all.push_back({"cuda", &polnode::kernels::MakeCudaBackend});
#endif
#if defined(POLNODE_HAVE_HIP)
  all.push_back({"hip", &polnode::kernels::MakeHipBackend});
#endif
  return all;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Runs every operator's cases on `gpu` against the reference; returns the number of failing ops.
int CheckBackend(const std::string& label, Backend& gpu, std::uint64_t seed) {
  std::unique_ptr<Backend> reference = polnode::kernels::MakeReferenceBackend();
  int failed_ops = 0;
  for (int i = 0; i < polnode::kernels::kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<polnode::kernels::conformance::CaseResult> results =
        polnode::kernels::conformance::CheckOp(gpu, *reference, op, seed);
    const double secs = Seconds(start);
    int failed = 0;
    const polnode::kernels::conformance::CaseResult* first = nullptr;
    for (const auto& r : results) {
      if (!r.passed) {
        ++failed;
        if (first == nullptr) first = &r;
      }
    }
    const std::string op_name(polnode::kernels::OpName(op));
    std::printf("%-4s %-5s %-28s %3zu cases  %7.3f s\n", failed == 0 ? "PASS" : "FAIL", label.c_str(),
                op_name.c_str(), results.size(), secs);
    if (first != nullptr) {
      std::printf("       %d case(s) differ; first: %s: %s\n", failed, first->name.c_str(), first->detail.c_str());
      ++failed_ops;
    }
    std::fflush(stdout);
  }
  return failed_ops;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  std::uint64_t seed = 20240601;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--backend cuda|hip] [--seed N]\n", argv[0]);
      return 2;
    }
  }

  const std::vector<Candidate> compiled = CompiledGpuBackends();
  if (compiled.empty()) {
    std::fprintf(stderr,
                 "no GPU backend in this build: configure found neither nvcc nor hipcc (see the CMake warnings), "
                 "or POLNODE_CUDA/POLNODE_HIP were OFF\n");
    return 2;
  }
  int ran = 0;
  int failed_ops = 0;
  for (const Candidate& c : compiled) {
    if (!only.empty() && only != c.name) continue;
    Result<std::unique_ptr<Backend>> gpu = c.make();
    if (!gpu.ok()) {
      std::printf("SKIP %-5s %s\n", c.name.c_str(), gpu.status().ToString().c_str());
      continue;
    }
    ++ran;
    failed_ops += CheckBackend(c.name, **gpu, seed);
  }
  if (ran == 0) {
    std::fprintf(stderr, "no GPU backend could run on this machine%s\n",
                 only.empty() ? "" : (" (asked for '" + only + "')").c_str());
    return 2;
  }
  std::printf("%s: %d operator(s) differ from the reference\n", failed_ops == 0 ? "ALL PASS" : "FAILED", failed_ops);
  return failed_ops == 0 ? 0 : 1;
}
