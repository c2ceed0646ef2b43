// Where a training step's time goes, operator by operator, on any backend (issue 19). Trains the
// model families of bench/train_bench (step_case.h kModelCases, with their optimizers) through
// device-resident training (solver::ResidentTraining) on a fixed synthetic batch, first as
// training runs (steps/s), then with the backend synchronized after every enqueued operator, so
// that each operator's wall time (its launch and its execution) is its own: per operator kind its
// time per step and share, and the slowest single operators by output shape. The synchronization
// slows the step down (the profile's total is above the plain step time); the shares are what it
// is for. A fused pair (kernels::Fusion) is timed as one kind, "first+second".
//
//   step_profile BACKEND [STEPS] [THREADS] [MODEL]    e.g. step_profile cuda 50, step_profile cpu 5 1 cnn
// MODEL keeps the cases whose spec contains it (mlp, cnn, gpt).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "polnode/solver/init.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/resident_training.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"

#include "step_case.h"

namespace {

using polnode::Result;
using polnode::Status;
namespace kernels = polnode::kernels;
namespace solver = polnode::solver;
using Clock = std::chrono::steady_clock;

// Forwards every call to `inner`; while timing, waits for each enqueued operator and adds its wall
// time to the operator's kind and to its (kind, output shape).
class TimedBackend final : public kernels::Backend {
 public:
  explicit TimedBackend(kernels::Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  Status Run(kernels::Op op, const kernels::OpAttrs& attrs, std::span<const kernels::Tensor* const> inputs,
             std::span<kernels::Tensor* const> outputs) override {
    return inner_.Run(op, attrs, inputs, outputs);
  }
  Result<std::unique_ptr<kernels::Buffer>> Allocate(const kernels::Shape& shape) override {
    return inner_.Allocate(shape);
  }
  Status Upload(std::span<const float> values, kernels::Buffer& to) override { return inner_.Upload(values, to); }
  Status Download(const kernels::Buffer& from, std::span<float> to) override { return inner_.Download(from, to); }
  Status Synchronize() override { return inner_.Synchronize(); }
  Status Enqueue(kernels::Op op, const kernels::OpAttrs& attrs, std::span<const kernels::Buffer* const> inputs,
                 std::span<kernels::Buffer* const> outputs) override {
    if (!timing) return inner_.Enqueue(op, attrs, inputs, outputs);
    return Timed(std::string(kernels::OpName(op)), outputs, [&] { return inner_.Enqueue(op, attrs, inputs, outputs); });
  }
  // A fused pair is timed as one kind, "first+second".
  Status EnqueueFused(kernels::Fusion fusion, std::span<const kernels::Buffer* const> inputs,
                      std::span<kernels::Buffer* const> outputs) override {
    if (!timing) return inner_.EnqueueFused(fusion, inputs, outputs);
    const std::array<kernels::Op, 2> ops = kernels::FusedOps(fusion);
    return Timed(std::string(kernels::OpName(ops[0])) + "+" + std::string(kernels::OpName(ops[1])), outputs,
                 [&] { return inner_.EnqueueFused(fusion, inputs, outputs); });
  }

  bool timing = false;
  std::map<std::string, std::pair<double, int>> by_kind;  // seconds, calls
  std::map<std::string, double> by_node;                  // seconds

 private:
  // Runs `enqueue`, waits for it, and adds its wall time to `kind` and to (kind, output 0's shape).
  template <typename Enqueue>
  Status Timed(const std::string& kind, std::span<kernels::Buffer* const> outputs, Enqueue&& enqueue) {
    const Clock::time_point start = Clock::now();
    Status status = enqueue();
    if (status.ok()) status = inner_.Synchronize();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    by_kind[kind].first += seconds;
    ++by_kind[kind].second;
    by_node[kind + " -> " + kernels::ShapeToString(outputs[0]->shape())] += seconds;
    return status;
  }

  kernels::Backend& inner_;
};

using polnode::bench::FillBatch;
using Case = polnode::bench::ModelCase;

Status Profile(const Case& c, kernels::Backend& backend, int steps) {
  POLNODE_ASSIGN_OR_RETURN(const solver::ModelSpec model, solver::ParseModelSpec(c.spec));
  const solver::OptimizerConfig optimizer = polnode::bench::CaseOptimizer(model);
  POLNODE_ASSIGN_OR_RETURN(const solver::StepGraph graph, solver::BuildTrainStepGraph(model, optimizer, c.batch));
  POLNODE_ASSIGN_OR_RETURN(const solver::StepRunner runner, solver::StepRunner::Create(graph));
  kernels::Tensor images, labels;
  FillBatch(graph, images, labels);
  TimedBackend timed(backend);
  POLNODE_ASSIGN_OR_RETURN(solver::ResidentTraining run,
                           solver::ResidentTraining::Start(runner, timed, solver::InitialState(model, optimizer.kind, 1)));
  for (int s = 0; s < 5; ++s) POLNODE_RETURN_IF_ERROR(run.Step(images, labels).status());  // warm-up
  const Clock::time_point start = Clock::now();
  for (int s = 0; s < steps; ++s) POLNODE_RETURN_IF_ERROR(run.Step(images, labels).status());
  const double plain = std::chrono::duration<double>(Clock::now() - start).count() / steps;
  timed.timing = true;
  for (int s = 0; s < steps; ++s) POLNODE_RETURN_IF_ERROR(run.Step(images, labels).status());
  double total = 0.0;
  for (const auto& [kind, entry] : timed.by_kind) total += entry.first;
  std::printf("\n%s, %s, batch %lld on %s: %zu operators per step, %.1f steps/s (%.3f ms per step); "
              "synchronized per operator %.3f ms\n",
              c.spec, std::string(solver::OptimizerName(optimizer.kind)).c_str(), static_cast<long long>(c.batch),
              backend.name().c_str(), graph.nodes.size(), 1.0 / plain, plain * 1e3, total / steps * 1e3);
  std::vector<std::pair<double, std::string>> kinds;
  for (const auto& [kind, entry] : timed.by_kind) kinds.emplace_back(entry.first, kind);
  std::sort(kinds.rbegin(), kinds.rend());
  std::printf("  %-28s %10s %7s %6s\n", "operator", "ms/step", "share", "calls");
  for (const auto& [seconds, kind] : kinds) {
    std::printf("  %-28s %10.4f %6.1f%% %6d\n", kind.c_str(), seconds / steps * 1e3, 100.0 * seconds / total,
                timed.by_kind[kind].second / steps);
  }
  std::vector<std::pair<double, std::string>> nodes;
  for (const auto& [node, seconds] : timed.by_node) nodes.emplace_back(seconds, node);
  std::sort(nodes.rbegin(), nodes.rend());
  std::printf("  slowest (operator -> first output), ms/step over all its calls:\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(nodes.size(), 10); ++i) {
    std::printf("    %8.4f  %s\n", nodes[i].first / steps * 1e3, nodes[i].second.c_str());
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: step_profile BACKEND [STEPS] [THREADS] [MODEL]\n");
    return 2;
  }
  const int steps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  const int threads = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(argv[1], threads);
  if (!backend.ok()) {
    std::fprintf(stderr, "step_profile: %s\n", backend.status().ToString().c_str());
    return 1;
  }
  const std::string only = argc > 4 ? argv[4] : "";
  for (const Case& c : polnode::bench::kModelCases) {
    if (std::string(c.spec).find(only) == std::string::npos) continue;
    const Status status = Profile(c, **backend, steps);
    if (!status.ok()) {
      std::fprintf(stderr, "step_profile: %s: %s\n", c.spec, status.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
