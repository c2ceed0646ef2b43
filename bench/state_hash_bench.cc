// State hash cost per checkpoint on one thread: the block leaves of every tensor one at a time
// through OpenSSL (SHA extensions where the CPU has them) against the multi-buffer SHA-256 at
// each vector level this CPU runs (consensus/sha256_lanes.h), on the MLP states proof_bench
// measures (parameters and their momentum). The levels alternate within each repeat, so that
// load from other work falls on all of them alike; medians are printed with their ratio to
// OpenSSL, and whether every level gave solver::StateHash's bits. Run it pinned to one core
// (taskset -c 1) for stable numbers.
//
//   state_hash_bench [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "polnode/consensus/pinpoint.h"
#include "polnode/consensus/sha256_lanes.h"
#include "polnode/solver/train_state.h"
#include "step_case.h"

namespace {

using polnode::bench::Median;
using polnode::consensus::Hash256;
using polnode::consensus::Sha256Isa;
using polnode::solver::TrainState;

// An MLP's training state: per layer a [in, out] weight and an [out] bias, then the momentum of
// each, filled with normal values.
TrainState MlpState(const std::vector<std::int64_t>& widths, std::mt19937_64& rng) {
  TrainState state;
  state.step = 100;
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (const char* suffix : {"", ".velocity"}) {
    for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
      for (const polnode::kernels::Shape& shape :
           {polnode::kernels::Shape{widths[i], widths[i + 1]}, polnode::kernels::Shape{widths[i + 1]}}) {
        polnode::kernels::Tensor tensor(shape);
        for (float& v : tensor.values()) v = normal(rng);
        const std::string name = "fc" + std::to_string(i + 1) + (shape.size() == 2 ? ".w" : ".b") + suffix;
        state.tensors.push_back({name, std::move(tensor)});
      }
    }
  }
  return state;
}

// The state hash with every tensor's leaves computed at `isa`.
Hash256 StateHashAt(Sha256Isa isa, const TrainState& state) {
  std::vector<std::string> names;
  std::vector<Hash256> hashes;
  for (const polnode::solver::NamedTensor& nt : state.tensors) {
    names.push_back(nt.name);
    const std::span<const std::int64_t> dims = nt.tensor.shape();
    hashes.push_back(polnode::consensus::TensorHashFromBlockRoot(
        dims, polnode::consensus::BlockRootOf(polnode::consensus::TensorBlockLeavesAt(isa, dims, nt.tensor.values()))));
  }
  return polnode::consensus::StateHashFromTensorHashes(static_cast<std::uint64_t>(state.step), names, hashes);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
  }
  const std::span<const Sha256Isa> isas = polnode::consensus::AvailableSha256Isas();
  std::printf("state_hash_bench: one thread, %d alternating repeats, medians; levels:", repeats);
  for (Sha256Isa isa : isas) std::printf(" %s", std::string(polnode::consensus::Sha256IsaName(isa)).c_str());
  const std::string_view best = polnode::consensus::Sha256IsaName(polnode::consensus::BestSha256Isa());
  std::printf(" (the hashes use %s)\n", std::string(best).c_str());
  std::mt19937_64 rng(2026);
  for (const std::vector<std::int64_t>& widths :
       {std::vector<std::int64_t>{784, 256, 128, 10}, std::vector<std::int64_t>{784, 1024, 1024, 10}}) {
    const TrainState state = MlpState(widths, rng);
    double bytes = 0;
    for (const polnode::solver::NamedTensor& nt : state.tensors) bytes += 4.0 * static_cast<double>(nt.tensor.numel());
    const Hash256 expected = polnode::solver::StateHash(state);
    std::vector<std::vector<double>> millis(isas.size());
    std::vector<bool> same(isas.size(), true);
    for (int r = 0; r < repeats; ++r) {
      for (std::size_t k = 0; k < isas.size(); ++k) {
        const auto start = std::chrono::steady_clock::now();
        const Hash256 hash = StateHashAt(isas[k], state);
        const auto elapsed = std::chrono::steady_clock::now() - start;
        millis[k].push_back(std::chrono::duration<double, std::milli>(elapsed).count());
        same[k] = same[k] && hash == expected;
      }
    }
    std::string model = "mlp";
    for (std::size_t i = 0; i < widths.size(); ++i) model += (i == 0 ? " " : "-") + std::to_string(widths[i]);
    std::printf("%s, %zu tensors, %.2f MB\n", model.c_str(), state.tensors.size(), bytes / 1e6);
    const double openssl = Median(millis[0]);
    for (std::size_t k = 0; k < isas.size(); ++k) {
      const double ms = Median(millis[k]);
      std::printf("  %-8s state hash %7.3f ms  %6.2f GB/s  %5.2fx openssl  %s\n",
                  std::string(polnode::consensus::Sha256IsaName(isas[k])).c_str(), ms, bytes / ms / 1e6, openssl / ms,
                  same[k] ? "same bits as solver::StateHash" : "DIFFERENT bits from solver::StateHash");
    }
  }
  return 0;
}
