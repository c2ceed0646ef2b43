// Host <-> backend traffic of one training step (issue 19): what a device backend copies when
// every operator goes through Backend::Run (each call uploads every input and downloads every
// output) against device-resident training (solver/resident_training.h: the batch up, the loss
// down). Counts, not timings: the Run column is counted from the calls a step makes, the resident
// one is what ResidentTraining asked the backend to move (Backend::transfers), here on the CPU
// backend, whose buffers are host memory but whose calls are the ones a GPU would serve.
//
//   transfer_bench            the MLP, CNN and GPT of the training benchmarks, batch 128 / 8
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/solver/init.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/resident_training.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"

#include "step_case.h"

namespace {

using polnode::Status;
namespace kernels = polnode::kernels;
namespace solver = polnode::solver;

// Counts what a per-operator device backend would copy for each Run, then runs the call on the
// wrapped backend.
class RunCopyCounter final : public kernels::Backend {
 public:
  explicit RunCopyCounter(kernels::Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  Status Run(kernels::Op op, const kernels::OpAttrs& attrs, std::span<const kernels::Tensor* const> inputs,
             std::span<kernels::Tensor* const> outputs) override {
    ++calls;
    for (const kernels::Tensor* t : inputs) {
      if (t->numel() == 0) continue;
      ++copies;
      bytes += t->numel() * 4;
    }
    const Status status = inner_.Run(op, attrs, inputs, outputs);
    for (const kernels::Tensor* t : outputs) {
      if (t->numel() == 0) continue;
      ++copies;
      bytes += t->numel() * 4;
    }
    return status;
  }
  std::int64_t calls = 0, copies = 0, bytes = 0;

 private:
  kernels::Backend& inner_;
};

using polnode::bench::FillBatch;
using Case = polnode::bench::StepCase;

}  // namespace

int main() {
  const Case cases[] = {{"mlp:784-256-128-10", solver::OptimizerKind::kSgd, 128},
                        {"cnn:c8-p-c16-p-f64-10", solver::OptimizerKind::kAdam, 128},
                        {"gpt:layers=4,heads=4,width=128,context=64,vocab=65", solver::OptimizerKind::kAdam, 8}};
  std::printf("%-44s %7s | %-28s | %-28s\n", "model (batch)", "nodes", "per-operator Run: calls copies MB",
              "resident: uploads downloads MB");
  for (const Case& c : cases) {
    polnode::Result<solver::ModelSpec> model = solver::ParseModelSpec(c.spec);
    solver::OptimizerConfig optimizer;
    optimizer.kind = c.optimizer;
    polnode::Result<solver::StepGraph> graph = model.ok() ? solver::BuildTrainStepGraph(*model, optimizer, c.batch)
                                                          : polnode::Result<solver::StepGraph>(model.status());
    if (!graph.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.spec, graph.status().ToString().c_str());
      return 1;
    }
    polnode::Result<solver::StepRunner> runner = solver::StepRunner::Create(*graph);
    if (!runner.ok()) return 1;
    const solver::TrainState initial = solver::InitialState(*model, c.optimizer, 1);
    kernels::Tensor images, labels;
    FillBatch(*graph, images, labels);

    std::unique_ptr<kernels::Backend> cpu = kernels::MakeCpuBackend(2);
    RunCopyCounter counter(*cpu);
    solver::TrainState state = initial;
    if (!runner->Step(state, images, labels, counter).ok()) return 1;

    polnode::Result<solver::ResidentTraining> run = solver::ResidentTraining::Start(*runner, *cpu, initial);
    if (!run.ok()) return 1;
    const kernels::TransferCounts before = cpu->transfers();
    if (!run->Step(images, labels).ok()) return 1;
    const kernels::TransferCounts after = cpu->transfers();
    const std::string label = std::string(c.spec) + " (" + std::to_string(c.batch) + ")";
    std::printf("%-44s %7zu | %5lld %6lld %12.2f    | %5lld %9lld %12.3f\n", label.c_str(), graph->nodes.size(),
                static_cast<long long>(counter.calls), static_cast<long long>(counter.copies),
                static_cast<double>(counter.bytes) / 1e6, static_cast<long long>(after.uploads - before.uploads),
                static_cast<long long>(after.downloads - before.downloads),
                static_cast<double>(after.upload_bytes - before.upload_bytes + after.download_bytes - before.download_bytes) /
                    1e6);
  }
  return 0;
}
