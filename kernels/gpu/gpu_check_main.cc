// polnode_gpu_check: the GPU-versus-reference bitwise check as one program, for GPU machines
// that lack GoogleTest or the node's other dependencies (scripts/gpu-check.sh builds it alone).
// For every GPU backend compiled in and every operator it prints one PASS/FAIL line, with the
// first failing case's details, and a time per operator for the GPU and the reference. With
// --train N it then trains an MLP (784-256-128-10, SGD) and a CNN (c8-p-c16-p-10 on 28x28, AdamW)
// for N steps on synthetic data on the GPU and on the CPU backend (bit-identical to the reference,
// which CI checks), comparing the state after every step (kernels/gpu/train_check.h), and prints
// each run's state digest and steps/s.
//
// Usage: polnode_gpu_check [--backend cuda|hip] [--seed N] [--train STEPS]
// Exit status: 0 all operators (and training runs) bit-identical on every available backend;
// 1 some differ; 2 no GPU backend could run (not compiled, or no device: the reason is printed).
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
#include "gpu/train_check.h"
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

// Trains the MLP and the CNN for `steps` steps on `gpu` and on the CPU backend; returns the number
// of runs that differ or fail.
int CheckTraining(const std::string& label, Backend& gpu, std::int64_t steps) {
  namespace tc = polnode::kernels::train_check;
  std::unique_ptr<Backend> cpu = polnode::kernels::MakeCpuBackend(4);
  tc::Spec mlp;  // the defaults: 784-256-128-10, batch 128
  tc::Spec cnn;
  cnn.model = tc::Model::kCnn;
  cnn.hidden1 = 8;
  cnn.hidden2 = 16;
  int failed = 0;
  for (const tc::Spec& spec : {mlp, cnn}) {
    const polnode::Result<tc::Outcome> outcome = tc::CompareTraining(gpu, *cpu, spec, steps);
    const std::string what = tc::Describe(spec);
    if (!outcome.ok()) {
      std::printf("FAIL %-5s train %s: %s\n", label.c_str(), what.c_str(), outcome.status().ToString().c_str());
      ++failed;
    } else if (outcome->first_difference != 0) {
      std::printf("FAIL %-5s train %s: the states differ after step %lld: %s\n", label.c_str(), what.c_str(),
                  static_cast<long long>(outcome->first_difference), outcome->detail.c_str());
      ++failed;
    } else {
      std::printf("PASS %-5s train %s: %lld steps, identical state (digest %016llx), loss %.4f -> %.4f, "
                  "%s %.1f steps/s, cpu x4 %.1f steps/s\n",
                  label.c_str(), what.c_str(), static_cast<long long>(steps),
                  static_cast<unsigned long long>(outcome->candidate_digest), static_cast<double>(outcome->first_loss),
                  static_cast<double>(outcome->last_loss), label.c_str(),
                  static_cast<double>(steps) / outcome->candidate_seconds,
                  static_cast<double>(steps) / outcome->reference_seconds);
    }
    std::fflush(stdout);
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  std::uint64_t seed = 20240601;
  long long train_steps = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--train") == 0 && i + 1 < argc && std::atoll(argv[i + 1]) > 0) {
      train_steps = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--backend cuda|hip] [--seed N] [--train STEPS]\n", argv[0]);
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
    // The same battery through device buffers (Enqueue): what ResidentTraining runs on.
    std::unique_ptr<Backend> through = polnode::kernels::conformance::ThroughBuffers(**gpu);
    failed_ops += CheckBackend(c.name + "/buf", *through, seed);
    if (train_steps > 0) failed_ops += CheckTraining(c.name, **gpu, train_steps);
  }
  if (ran == 0) {
    std::fprintf(stderr, "no GPU backend could run on this machine%s\n",
                 only.empty() ? "" : (" (asked for '" + only + "')").c_str());
    return 2;
  }
  std::printf("%s: %d operator(s) or training run(s) differ from the reference\n", failed_ops == 0 ? "ALL PASS" : "FAILED",
              failed_ops);
  return failed_ops == 0 ? 0 : 1;
}
