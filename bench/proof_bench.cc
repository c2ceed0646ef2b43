// Proof of learning costs, measured in one run (DESIGN.md section 9, issue 4):
//   - proof overhead: training with proof (checkpoint every k = 100 steps, blobs written by the
//     writer thread) against plain training of the same task, both through TaskStepper on the
//     same backend; best of R alternating repeats, which filters out a shared machine's noise;
//   - storage per proof (checkpoint blobs, uncompressed);
//   - verification compute: replaying Q segments (load checkpoint blob, re-hash it, k steps)
//     as a fraction of the training compute, beside the analytic probability that Q uniform
//     draws out of n segments hit at least one of f forged segments;
//   - the detection rate measured with the real verifier: one middle checkpoint of the proof is
//     forged (one weight moved by one ulp, blob re-stored, Merkle root recomputed, manifest
//     re-signed: the 2 segments touching it no longer replay), then VerifyProof runs with many
//     beacons; the share it rejects is printed beside the analytic probability for f = 2.
//
// Usage: proof_bench [--threads T] [--repeats R] [--steps S]   (needs Fashion-MNIST installed)
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "polnode/consensus/keys.h"
#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"
#include "polnode/verifier/replay.h"

namespace {

namespace solver = polnode::solver;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// 1 - C(n - f, q) / C(n, q): the chance that q distinct uniform segments include a forged one.
double DetectionProbability(std::int64_t n, std::int64_t forged, std::int64_t q) {
  double miss = 1.0;
  for (std::int64_t i = 0; i < q; ++i) miss *= static_cast<double>(n - forged - i) / static_cast<double>(n - i);
  return 1.0 - std::max(0.0, miss);
}

// Forges checkpoint `index` of `manifest` in `store` (its first weight moved by one ulp) and
// returns the re-rooted, re-signed manifest: a proof that is wrong in exactly the two segments
// that start or end at that checkpoint, and consistent everywhere else.
polnode::Result<solver::ProofManifest> ForgeCheckpoint(solver::ProofManifest manifest, solver::BlobStore& store,
                                                       std::size_t index, const polnode::consensus::SecretKey& key) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, store.Get(manifest.checkpoint_blobs[index]));
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState state, solver::DecodeState(bytes));
  float& weight = state.tensors.front().tensor.data()[0];
  weight = std::bit_cast<float>(std::bit_cast<std::uint32_t>(weight) + 1u);
  POLNODE_ASSIGN_OR_RETURN(manifest.checkpoint_blobs[index], store.Put(solver::EncodeState(state)));
  manifest.checkpoint_hashes[index] = solver::StateHash(state);
  manifest.merkle_root = polnode::consensus::MerkleRoot(manifest.checkpoint_hashes);
  POLNODE_RETURN_IF_ERROR(solver::SignManifest(manifest, key));
  return manifest;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, repeats = 3;
  std::int64_t steps = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") threads = std::atoi(argv[i + 1]);
    else if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (flag == "--steps") steps = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: proof_bench [--threads T] [--repeats R] [--steps S]\n");
      return 2;
    }
  }
  auto data = solver::LoadImageDataset("fashion-mnist");
  if (!data.ok()) {
    std::fprintf(stderr, "proof_bench: %s\n", data.status().ToString().c_str());
    return 1;
  }
  solver::TaskSpec task;
  task.model = "mlp:784-256-128-10";
  task.data_location = "fashion-mnist";
  task.dataset_hash = solver::DatasetContentHash(*data);
  task.batch = 128;
  task.steps = (steps / 100) * 100;
  task.checkpoint_interval = 100;
  task.segments_per_check = 1;  // the loop below sets Q per measurement
  task.seed = 1;
  auto backend = polnode::kernels::MakeBackend("cpu", threads);
  if (!backend.ok() || task.steps < 100) return 1;

  auto key = polnode::consensus::SecretKey::Generate();
  if (!key.ok()) return 1;
  const std::string dir = (std::filesystem::temp_directory_path() / "polnode-proof-bench").string();
  double best_plain = 1e30, best_proof = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto stepper = solver::TaskStepper::Create(task, *data);
    if (!stepper.ok()) return 1;
    solver::TrainState state = stepper->Initial();
    const Clock::time_point start = Clock::now();
    while (state.step < task.steps) {
      if (!stepper->Step(state, **backend).ok()) return 1;
    }
    best_plain = std::min(best_plain, Seconds(start));
    std::filesystem::remove_all(dir);
    solver::ProveOptions options;
    options.out_dir = dir;
    options.key = &*key;
    auto proved = solver::Prove(task, *data, **backend, options);
    if (!proved.ok()) {
      std::fprintf(stderr, "proof_bench: %s\n", proved.status().ToString().c_str());
      return 1;
    }
    best_proof = std::min(best_proof, proved->train_seconds);
  }
  std::uintmax_t storage = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/blobs")) storage += entry.file_size();

  // Replay the first Q segments from their blobs, as a verifier does.
  auto manifest_bytes = polnode::ReadWholeFile(dir + "/manifest.pb", solver::kMaxManifestBytes);
  auto manifest = manifest_bytes.ok() ? solver::DecodeManifest(*manifest_bytes) : manifest_bytes.status();
  auto store = solver::BlobStore::Open(dir + "/blobs");
  auto stepper = solver::TaskStepper::Create(task, *data);
  if (!manifest.ok() || !store.ok() || !stepper.ok()) return 1;
  const std::int64_t n = task.checkpoint_count() - 1;
  std::printf("proof_bench: %s batch %lld, %lld steps, k=%lld, cpu backend, %d threads\n", task.model.c_str(),
              static_cast<long long>(task.batch), static_cast<long long>(task.steps),
              static_cast<long long>(task.checkpoint_interval), threads);
  std::printf("proof overhead       plain %.3f s, with proof %.3f s: ratio %.3f (%+.1f%%)\n", best_plain, best_proof,
              best_proof / best_plain, 100.0 * (best_proof / best_plain - 1.0));
  std::printf("storage              %.2f MB for %lld checkpoints (%.2f MB each, uncompressed)\n", storage / 1e6,
              static_cast<long long>(n + 1), storage / 1e6 / static_cast<double>(n + 1));
  for (std::int64_t q : {std::int64_t{1}, std::int64_t{2}}) {
    if (q > n) break;
    const Clock::time_point start = Clock::now();
    for (std::int64_t s = 0; s < q; ++s) {
      auto bytes = store->Get(manifest->checkpoint_blobs[static_cast<std::size_t>(s)]);
      auto state = bytes.ok() ? solver::DecodeState(*bytes) : bytes.status();
      if (!state.ok()) return 1;
      for (std::int64_t t = 0; t < task.checkpoint_interval; ++t) {
        if (!stepper->Step(*state, **backend).ok()) return 1;
      }
    }
    const double replay = Seconds(start);
    std::printf("verification Q=%lld    replay %.3f s = %.3f of training; detection probability with 1 forged "
                "segment of %lld: %.3f\n",
                static_cast<long long>(q), replay, replay / best_plain, static_cast<long long>(n),
                DetectionProbability(n, 1, q));
  }

  // Measured detection: the real verifier against a proof forged in two middle segments.
  constexpr int kBeacons = 60;
  auto forged = ForgeCheckpoint(*manifest, *store, static_cast<std::size_t>(n / 2), *key);
  if (!forged.ok() || n < 4) return 1;
  for (std::int64_t q : {std::int64_t{1}, std::int64_t{2}}) {
    int rejected = 0;
    for (int b = 0; b < kBeacons; ++b) {
      polnode::verifier::VerifyOptions options;
      options.beacon = polnode::consensus::Sha256("proof_bench beacon " + std::to_string(b));
      options.segments = q;
      auto verdict = polnode::verifier::VerifyProof(task, *data, *forged, *store, **backend, options);
      if (!verdict.ok()) {
        std::fprintf(stderr, "proof_bench: %s\n", verdict.status().ToString().c_str());
        return 1;
      }
      rejected += verdict->accept ? 0 : 1;
    }
    std::printf("detection Q=%lld       forged 2 of %lld segments: rejected %d of %d beacons (%.3f), analytic %.3f\n",
                static_cast<long long>(q), static_cast<long long>(n), rejected, kBeacons,
                static_cast<double>(rejected) / kBeacons, DetectionProbability(n, 2, q));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
