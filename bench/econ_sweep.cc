// The full economic sweep (DESIGN.md section 10, econ/README.md): every strategy of
// polnode/econ/sweep.h at payments 10^3..10^9 and verification costs 0, f/2 and f, under the
// genesis defaults, through the real contracts state machine. Prints the table `polnode econ`
// prints, then the simulator's own speed (simulated tasks and blocks per second of this run).
//
//   econ_sweep [TASKS [WARMUP [tolerant]]]   (defaults 400 and 100 tasks per world; "tolerant" runs
//   tolerant-mode tasks, whose forced rounds perturb their forced checkpoints by +-forced_delta)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "polnode/contracts/genesis.h"
#include "polnode/econ/sweep.h"

int main(int argc, char** argv) {
  using namespace polnode::econ;
  SweepConfig config;
  config.params = polnode::contracts::DefaultParams();
  config.payments = {1'000, 10'000, 100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};
  config.cost_of_fee = {0.0, 0.5, 1.0};
  if (argc > 1) config.tasks = std::strtoull(argv[1], nullptr, 10);
  if (argc > 2) config.warmup_tasks = std::strtoull(argv[2], nullptr, 10);
  if (argc > 3) {
    if (std::string(argv[3]) != "tolerant") {
      std::fprintf(stderr, "econ_sweep: the third argument can only be 'tolerant'\n");
      return 2;
    }
    config.tolerant = true;
  }
  std::size_t worlds = 0;
  const auto start = std::chrono::steady_clock::now();
  polnode::Result<std::vector<Row>> rows =
      RunSweep(config, [&](std::string_view what) {
        ++worlds;
        std::fprintf(stderr, "  %.*s\n", static_cast<int>(what.size()), what.data());
      });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!rows.ok()) {
    std::fprintf(stderr, "econ_sweep: %s\n", rows.status().ToString().c_str());
    return 1;
  }
  std::fputs(FormatTable(*rows).c_str(), stdout);
  std::printf("\n%zu strategy runs (%llu tasks each after %llu warm-up tasks) in %.1f s\n", worlds,
              static_cast<unsigned long long>(config.tasks), static_cast<unsigned long long>(config.warmup_tasks),
              seconds);
  return 0;
}
