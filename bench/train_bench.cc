// Training steps per second of polnode against PyTorch (Debian's python3-torch, through
// /usr/bin/python3) on the same MLP, batch and optimizer, both on one pinned core, measured in
// the same run (DESIGN.md section 9). Issue 3's targets: >= 1.5x for 784-256-128-10 and >= 1.0x
// for 784-1024-1024-10, batch 128, SGD with momentum.
//
// Usage: train_bench [--cpu N] [--seconds S] [--repeats R] [--python PATH]
// The process pins itself to CPU N (default 0) with sched_setaffinity before measuring; the
// PyTorch peer is started from it and inherits the pin. Each side reports its best of R repeats
// of S seconds, which filters out interference from other work on a shared machine.
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/solver/init.h"
#include "polnode/solver/philox.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"

namespace {

using polnode::kernels::Tensor;
namespace solver = polnode::solver;

struct Options {
  int cpu = 0;
  double seconds = 2.0;
  int repeats = 3;
  std::string python = "/usr/bin/python3";
};

struct Case {
  const char* sizes;
  double target;
};

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--cpu") {
      o.cpu = std::atoi(argv[i + 1]);
    } else if (flag == "--seconds") {
      o.seconds = std::atof(argv[i + 1]);
    } else if (flag == "--repeats") {
      o.repeats = std::atoi(argv[i + 1]);
    } else if (flag == "--python") {
      o.python = argv[i + 1];
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o.seconds > 0.0 && o.repeats > 0;
}

bool PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// polnode's best steps/s over the repeats, on 8 fixed synthetic batches in rotation.
double OurStepsPerSecond(const std::string& sizes, std::int64_t batch, const Options& o) {
  auto model = solver::ParseModelSpec("mlp:" + sizes);
  solver::OptimizerConfig opt;  // sgd, lr 0.05, momentum 0.9 (the defaults)
  auto graph = solver::BuildTrainStepGraph(*model, opt, batch);
  auto runner = solver::StepRunner::Create(*graph);
  auto backend = polnode::kernels::MakeBackend("cpu", 1);
  if (!model.ok() || !graph.ok() || !runner.ok() || !backend.ok()) {
    std::fprintf(stderr, "train_bench: cannot set up %s\n", sizes.c_str());
    std::exit(1);
  }
  std::vector<Tensor> images, labels;
  for (std::uint32_t b = 0; b < 8; ++b) {
    Tensor x(graph->images_shape), y(graph->labels_shape);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      x.data()[i] = solver::UniformFloat(solver::RandomWord(1, solver::RandomPurpose::kSynthetic, b,
                                                            static_cast<std::uint64_t>(i)));
    }
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      y.data()[i] = static_cast<float>(
          solver::UniformIndex(solver::RandomU64(1, solver::RandomPurpose::kSynthetic, 100 + b,
                                                 static_cast<std::uint64_t>(i)),
                               static_cast<std::uint64_t>(model->num_outputs())));
    }
    images.push_back(std::move(x));
    labels.push_back(std::move(y));
  }
  solver::TrainState state = solver::InitialState(*model, opt.kind, 1);
  const auto step = [&](std::int64_t i) {
    const std::size_t k = static_cast<std::size_t>(i % 8);
    if (!runner->Step(state, images[k], labels[k], **backend).ok()) {
      std::fprintf(stderr, "train_bench: a step failed\n");
      std::exit(1);
    }
  };
  for (int i = 0; i < 20; ++i) step(i);
  double best = 0.0;
  for (int r = 0; r < o.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::int64_t steps = 0;
    double elapsed = 0.0;
    do {
      step(steps++);
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < o.seconds);
    best = std::max(best, static_cast<double>(steps) / elapsed);
  }
  return best;
}

// PyTorch's best steps/s, or a negative value (with a message) if the peer cannot run.
double TorchStepsPerSecond(const std::string& sizes, std::int64_t batch, const Options& o) {
  const std::filesystem::path script =
      std::filesystem::path(__FILE__).parent_path() / "torch_peer.py";
  const std::string command = o.python + " " + script.string() + " " + sizes + " " +
                              std::to_string(batch) + " " + std::to_string(o.seconds) + " " +
                              std::to_string(o.repeats);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return -1.0;
  double rate = -1.0;
  char line[256];
  while (std::fgets(line, sizeof line, pipe.get()) != nullptr) {
    if (std::sscanf(line, "steps_per_second %lf", &rate) == 1) break;
  }
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: train_bench [--cpu N] [--seconds S] [--repeats R] [--python PATH]\n");
    return 2;
  }
  if (!PinToCpu(o.cpu)) {
    std::fprintf(stderr, "train_bench: cannot pin to CPU %d\n", o.cpu);
    return 1;
  }
  auto backend = polnode::kernels::MakeBackend("cpu", 1);
  std::printf(
      "train_bench: MLP training steps/s, batch 128, SGD momentum 0.9, one thread pinned to "
      "CPU %d, best of %d x %.1f s; polnode backend %s\n",
      o.cpu, o.repeats, o.seconds, backend.ok() ? (*backend)->name().c_str() : "?");
  const Case cases[] = {{"784-256-128-10", 1.5}, {"784-1024-1024-10", 1.0}};
  for (const Case& c : cases) {
    const double ours = OurStepsPerSecond(c.sizes, 128, o);
    const double torch = TorchStepsPerSecond(c.sizes, 128, o);
    if (torch <= 0.0) {
      std::printf("mlp:%-18s polnode %8.1f steps/s   pytorch: unavailable (%s cannot run torch)\n",
                  c.sizes, ours, o.python.c_str());
      continue;
    }
    const double ratio = ours / torch;
    std::printf(
        "mlp:%-18s polnode %8.1f steps/s   pytorch %8.1f steps/s   ratio %.2fx (target >= %.1fx) "
        "%s\n",
        c.sizes, ours, torch, ratio, c.target, ratio >= c.target ? "met" : "MISSED");
  }
  return 0;  // benchmarks report; they never fail on a timing
}
