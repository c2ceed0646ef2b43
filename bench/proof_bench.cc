// Proof of learning costs, measured in one run (DESIGN.md section 9, issues 4 and 18), for each
// model family train_bench measures (bench/step_case.h's kModelCases: the two MLPs and the CNN on
// Fashion-MNIST, the GPT on tiny Shakespeare), each trained with its own optimizer, on real data:
//   - proof overhead: training with proof (checkpoint every k = 100 steps, hashed and written where
//     --checkpoint-work says) against plain training of the same task, both device-resident through
//     TaskStepper and ResidentTraining on the same backend (the path of `polnode train` and of
//     Prove, so the ratio measures the proof and nothing else), R alternating repeats. The goal's
//     measure is per segment: the median time of a segment of k steps with the proof (its
//     checkpoint handed over, the writer's work beside the next steps) over the median plain
//     segment, over all repeats' segments, so that a segment the scheduler gave to other work on a
//     shared machine drops out; the second plain run of each repeat against the first gives the
//     machine's noise on the same measure. Whole runs are printed beside it (ratio of the bests, median of
//     the paired ratios), split into the step loop and the wait for the last checkpoint (the one
//     write no step overlaps, once per proof);
//   - what one checkpoint costs on one thread: encoding, state hash (the blob's name too), durable
//     write;
//   - storage per proof (checkpoint blobs, uncompressed) and per checkpoint compressed with lz4
//     and zstd (levels 1 and 3, plain and with the bytes of each 4-byte word grouped), with
//     compression and decompression throughput: a report, the blob format stays uncompressed;
//   - verification compute: replaying Q segments (load checkpoint blob, re-hash it, k steps)
//     as a fraction of the training compute, beside the analytic probability that Q uniform
//     draws out of n segments hit at least one of f forged segments;
//   - the detection rate measured with the real verifier, on the small MLP only (its 180 segment
//     replays take seconds there, minutes for the GPT): one middle checkpoint of the proof is
//     forged (one weight moved by one ulp, blob re-stored, Merkle root recomputed, manifest
//     re-signed: the 2 segments touching it no longer replay), then VerifyProof runs with many
//     beacons; the share it rejects is printed beside the analytic probability for f = 2.
// A summary ends the run: per family the overhead per segment, judged against the goal of 2% at
// k = 100 (issue 18 item 3) as MET or MISSED, the whole runs' overheads, and the storage per
// checkpoint raw and with the best codec.
//
// Usage: proof_bench [--threads T] [--repeats R] [--steps S] [--seconds SEC] [--model SPEC] [--text FILE]
//                    [--checkpoint-work W] [--commit-interval MS]
//   T        CPU backend threads (default 1)
//   R        alternating repeats of plain training, proof, and plain training again (default 3)
//   S        steps per family, rounded down to whole segments of k = 100, at least 200 (default:
//            per family, as many segments as fit in SEC seconds of plain training, 2 to 10;
//            SEC default 2)
//   SPEC     only the families whose spec contains SPEC (e.g. gpt, cnn, mlp:784-1024)
//   FILE     the GPT's corpus (default tiny Shakespeare, bench/data/tinyshakespeare.txt.gz: the
//            spec's vocabulary is its 65 symbols). Needs Fashion-MNIST installed.
//   W        auto (default: solver::CheckpointWork::kAuto), writer (the writer thread), host (the
//            backend's threads), or both: host and writer alternating in every repeat, each with
//            its per-segment overhead (the whole runs' figures are the first's)
//   MS       how long a checkpoint may wait to be made durable with the ones after it
//            (solver::ProveOptions::commit_interval; default its default), or both: the default
//            and 0 (each checkpoint durable on its own), alternating like W's both (and crossed
//            with it)
// Under `chrt -f 10` (root) the run is ahead of other work on the machine; the header line names
// the scheduling policy the run had.
#include <sched.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#ifdef POLNODE_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef POLNODE_HAVE_LZ4
#include <lz4.h>
#endif

#include "polnode/consensus/keys.h"
#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/base/file_util.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"
#include "polnode/solver/trainer.h"
#include "polnode/verifier/replay.h"

#include "step_case.h"

namespace {

namespace solver = polnode::solver;
using polnode::Result;
using polnode::bench::Median;
using polnode::bench::ModelCase;
using Clock = std::chrono::steady_clock;

// The GPT's default corpus: tiny Shakespeare where the workspace keeps it, beside the repository.
constexpr const char* kDefaultText = POLNODE_BENCH_DIR "/data/tinyshakespeare.txt.gz";
// The one family whose detection rate is measured.
constexpr const char* kDetectionModel = "mlp:784-256-128-10";

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// CPU seconds of every thread of this process so far.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

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
  POLNODE_ASSIGN_OR_RETURN(solver::StoredState stored, store.GetState(manifest.checkpoint_blobs[index]));
  solver::TrainState& state = stored.state;
  float& weight = state.tensors.front().tensor.data()[0];
  weight = std::bit_cast<float>(std::bit_cast<std::uint32_t>(weight) + 1u);
  manifest.checkpoint_hashes[index] = solver::StateHash(state);
  manifest.checkpoint_blobs[index] = manifest.checkpoint_hashes[index];
  POLNODE_RETURN_IF_ERROR(store.PutNamed(manifest.checkpoint_blobs[index], solver::EncodeState(state)));
  manifest.merkle_root = polnode::consensus::MerkleRoot(manifest.checkpoint_hashes);
  POLNODE_RETURN_IF_ERROR(solver::SignManifest(manifest, key));
  return manifest;
}

// Records when the last step ended (seconds since Prove's start) and how long each segment of
// `interval` steps took, checkpoint hand-over included.
struct SegmentTimes : solver::ProgressSink {
  explicit SegmentTimes(std::int64_t k, std::vector<double>& out) : interval(k), segments(out) {}
  void OnStep(const solver::StepProgress& p) override {
    seconds = p.elapsed_seconds;
    if (p.step % interval != 0) return;
    segments.push_back(seconds - segment_start);
    segment_start = seconds;
  }
  std::int64_t interval;
  std::vector<double>& segments;
  double seconds = 0.0;
  double segment_start = 0.0;
};

// Best of `n` wall-clock runs of `f`, in milliseconds.
double BestMs(int n, const std::function<void()>& f) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    const Clock::time_point start = Clock::now();
    f();
    best = std::min(best, 1e3 * Seconds(start));
  }
  return best;
}

// Groups byte j of every 4-byte word together (j = 0..3), the trailing bytes last: float
// mantissa low bytes, which look random, stop interleaving with sign and exponent bytes.
std::vector<std::uint8_t> Shuffle4(const std::vector<std::uint8_t>& in) {
  std::vector<std::uint8_t> out(in.size());
  const std::size_t words = in.size() / 4;
  for (std::size_t j = 0; j < 4; ++j) {
    for (std::size_t w = 0; w < words; ++w) out[j * words + w] = in[4 * w + j];
  }
  std::memcpy(out.data() + 4 * words, in.data() + 4 * words, in.size() - 4 * words);
  return out;
}

std::vector<std::uint8_t> Unshuffle4(const std::vector<std::uint8_t>& in) {
  std::vector<std::uint8_t> out(in.size());
  const std::size_t words = in.size() / 4;
  for (std::size_t j = 0; j < 4; ++j) {
    for (std::size_t w = 0; w < words; ++w) out[4 * w + j] = in[j * words + w];
  }
  std::memcpy(out.data() + 4 * words, in.data() + 4 * words, in.size() - 4 * words);
  return out;
}

struct Codec {
  std::string name;
  bool shuffle = false;
  // Returns the compressed size, or 0 on failure.
  std::function<std::size_t(const std::vector<std::uint8_t>&, std::vector<std::uint8_t>&)> compress;
  // Returns false unless `out` (sized to the original) was filled exactly.
  std::function<bool(const std::vector<std::uint8_t>&, std::vector<std::uint8_t>&)> decompress;
};

std::vector<Codec> Codecs() {
  std::vector<Codec> codecs;
#ifdef POLNODE_HAVE_LZ4
  codecs.push_back({"lz4", false,
                    [](const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out) -> std::size_t {
                      out.resize(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
                      const int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                                                         reinterpret_cast<char*>(out.data()), static_cast<int>(in.size()),
                                                         static_cast<int>(out.size()));
                      out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
                      return out.size();
                    },
                    [](const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out) {
                      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                                                        reinterpret_cast<char*>(out.data()), static_cast<int>(in.size()),
                                                        static_cast<int>(out.size()));
                      return n >= 0 && static_cast<std::size_t>(n) == out.size();
                    }});
#endif
#ifdef POLNODE_HAVE_ZSTD
  for (bool shuffle : {false, true}) {
    for (int level : {1, 3}) {
      codecs.push_back({std::string(shuffle ? "shuffle4+" : "") + "zstd-" + std::to_string(level), shuffle,
                        [level](const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out) -> std::size_t {
                          out.resize(ZSTD_compressBound(in.size()));
                          const std::size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);
                          out.resize(ZSTD_isError(n) ? 0 : n);
                          return out.size();
                        },
                        [](const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out) {
                          const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
                          return !ZSTD_isError(n) && n == out.size();
                        }});
    }
  }
#endif
  return codecs;
}

struct Options {
  int threads = 1;
  int repeats = 3;
  std::int64_t steps = 0;  // 0: per family, as many hundreds as fit in `seconds`
  double seconds = 2.0;
  std::string model;  // run the families whose spec contains this (all when empty)
  std::string text = kDefaultText;
  // Where checkpoints are hashed and written, and how long a checkpoint may wait to be made
  // durable with the ones after it (< 0: ProveOptions' default): each repeat proves once per
  // pair of them, alternating.
  std::vector<solver::CheckpointWork> works = {solver::CheckpointWork::kAuto};
  std::vector<int> commit_intervals_ms = {-1};
};

const char* WorkName(solver::CheckpointWork work) {
  switch (work) {
    case solver::CheckpointWork::kAuto: return "auto";
    case solver::CheckpointWork::kWriterThread: return "writer thread";
    case solver::CheckpointWork::kHostThreads: return "host threads";
  }
  return "?";
}

// One way of proving that a run compares with plain training.
struct ProofVariant {
  solver::CheckpointWork work;
  int commit_interval_ms;  // < 0: ProveOptions' default
};

// The variant's name, its work resolved for `backend`: "host threads" or "writer thread", then
// the commit interval unless it is the default ("each checkpoint durable" for zero).
std::string VariantName(const ProofVariant& v, const polnode::kernels::Backend& backend) {
  std::string name = WorkName(solver::ResolveCheckpointWork(v.work, backend));
  if (v.commit_interval_ms == 0) name += ", each checkpoint durable";
  else if (v.commit_interval_ms > 0) name += ", batches of " + std::to_string(v.commit_interval_ms) + " ms";
  return name;
}

std::vector<ProofVariant> Variants(const Options& o) {
  std::vector<ProofVariant> variants;
  for (const solver::CheckpointWork work : o.works) {
    for (const int ms : o.commit_intervals_ms) variants.push_back({work, ms});
  }
  return variants;
}

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") o.threads = std::atoi(argv[i + 1]);
    else if (flag == "--repeats") o.repeats = std::atoi(argv[i + 1]);
    else if (flag == "--steps") o.steps = std::atoll(argv[i + 1]);
    else if (flag == "--seconds") o.seconds = std::atof(argv[i + 1]);
    else if (flag == "--model") o.model = argv[i + 1];
    else if (flag == "--text") o.text = argv[i + 1];
    else if (flag == "--checkpoint-work") {
      const std::string work = argv[i + 1];
      if (work == "auto") o.works = {solver::CheckpointWork::kAuto};
      else if (work == "writer") o.works = {solver::CheckpointWork::kWriterThread};
      else if (work == "host") o.works = {solver::CheckpointWork::kHostThreads};
      else if (work == "both") o.works = {solver::CheckpointWork::kHostThreads, solver::CheckpointWork::kWriterThread};
      else return false;
    }
    else if (flag == "--commit-interval") {
      const std::string ms = argv[i + 1];
      if (ms == "both") o.commit_intervals_ms = {-1, 0};
      else if (!ms.empty() && ms.find_first_not_of("0123456789") == std::string::npos) {
        o.commit_intervals_ms = {std::atoi(ms.c_str())};
      }
      else return false;
    }
    else return false;
  }
  return argc % 2 == 1 && o.threads >= 1 && o.repeats >= 1 && o.steps >= 0 && o.seconds > 0.0;
}

// What one family's run concludes, for the summary.
struct Verdict {
  std::string spec;
  // Per entry of Options::works (resolved): the median proof segment over the median plain
  // segment, the goal's measure.
  std::vector<std::pair<std::string, double>> segment_ratios;
  double noise_ratio = 0.0;  // the same for a second plain run: the noise floor
  double last_write_ms = 0.0;
  double median_ratio = 0.0;
  double best_ratio = 0.0;
  double checkpoint_mb = 0.0;
  double smallest_mb = 0.0;  // the best codec's size per checkpoint (raw when none is built in)
  std::string smallest_codec = "raw";
};

// Steps that see about `seconds` of plain training on `backend`, in whole segments of k = 100,
// 200 to 1000: timed over 20 resident steps after 10 of warm-up.
Result<std::int64_t> CalibratedSteps(solver::TaskSpec task, const solver::ImageDataset& data,
                                     polnode::kernels::Backend& backend, double seconds) {
  task.steps = 1000;
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  solver::TrainState state = stepper.Initial();
  POLNODE_ASSIGN_OR_RETURN(solver::ResidentTraining run, stepper.StartResident(state, backend));
  Clock::time_point start;
  for (int i = 0; i < 30; ++i) {
    if (i == 10) start = Clock::now();
    POLNODE_RETURN_IF_ERROR(stepper.Step(run).status());
  }
  const double step_seconds = Seconds(start) / 20.0;
  const auto segments = static_cast<std::int64_t>(seconds / (100.0 * step_seconds));
  return 100 * std::clamp<std::int64_t>(segments, 2, 10);
}

// Proof overhead, the writer's costs per checkpoint, storage, compression and replay of one
// family; with `detection`, the measured detection rate too (60 beacons x Q = 1, 2 verifications:
// 180 segment replays, which only the small MLP does in seconds).
Result<Verdict> BenchFamily(const ModelCase& c, const solver::ImageDataset& data, const std::string& location,
                            const Options& o, polnode::kernels::Backend& backend,
                            const polnode::consensus::SecretKey& key, bool detection) {
  solver::TaskSpec task;
  task.model = c.spec;
  task.data_location = location;
  task.dataset_hash = solver::DatasetContentHash(data);
  POLNODE_ASSIGN_OR_RETURN(const solver::ModelSpec model, solver::ModelForData(c.spec, data));
  task.optimizer = polnode::bench::CaseOptimizer(model);
  task.batch = c.batch;
  task.checkpoint_interval = 100;
  task.segments_per_check = 1;  // the loops below set Q per measurement
  task.seed = 1;
  if (o.steps > 0) {
    task.steps = std::max<std::int64_t>(200, (o.steps / 100) * 100);
  } else {
    POLNODE_ASSIGN_OR_RETURN(task.steps, CalibratedSteps(task, data, backend, o.seconds));
  }

  const std::string dir = (std::filesystem::temp_directory_path() / "polnode-proof-bench").string();
  double best_plain = 1e30, best_proof = 1e30, best_proof_loop = 0.0;
  // CPU time of the same runs (all threads; best of R): what the proof costs in work, which a
  // machine with no idle core pays in wall time.
  double best_plain_cpu = 1e30, best_proof_cpu = 1e30;
  // Each repeat's proof time over its own plain time: adjacent runs share the machine's load, so
  // the median of these ratios is a second, load-tolerant estimate beside the ratio of the bests.
  std::vector<double> paired;
  std::vector<double> last_writes;  // each proof's wait for its last checkpoint
  // Every segment's time (k steps, and with the proof the checkpoint handed over at its end and the
  // writer's work beside it), over all repeats: a segment that the scheduler interrupted for other
  // work on the machine is slow for reasons that are neither side's, and the medians leave it out.
  // The whole-run figures are those of the first variant; segments are kept for each.
  const std::vector<ProofVariant> variants = Variants(o);
  // A second plain run closes each repeat: plain against plain measures what this machine's noise
  // alone moves the per-segment median, the floor under any overhead printed beside it.
  std::vector<double> plain_segments, second_plain_segments;
  std::vector<std::vector<double>> proof_segments(variants.size());
  // Plain training as `polnode train` runs it: the state stays in the backend's buffers and
  // comes back once, at the end. Prove checks the data set's hash before its clock starts; so
  // does this, so both runs start with the data equally warm in the caches. Returns the run's
  // wall seconds; `cpu_seconds` gets its CPU seconds.
  const auto train_plain = [&](std::vector<double>& segments, double& cpu_seconds) -> Result<double> {
    POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
    POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(task, data));
    solver::TrainState state = stepper.Initial();
    const Clock::time_point start = Clock::now();
    const double cpu_start = ProcessCpuSeconds();
    POLNODE_ASSIGN_OR_RETURN(solver::ResidentTraining run, stepper.StartResident(state, backend));
    Clock::time_point segment_start = start;
    while (run.step() < task.steps) {
      POLNODE_RETURN_IF_ERROR(stepper.Step(run).status());
      if (run.step() % task.checkpoint_interval == 0) {
        segments.push_back(Seconds(segment_start));
        segment_start = Clock::now();
      }
    }
    POLNODE_RETURN_IF_ERROR(run.DownloadState(state));
    cpu_seconds = ProcessCpuSeconds() - cpu_start;
    return Seconds(start);
  };
  for (int r = 0; r < o.repeats; ++r) {
    double plain_cpu = 0.0;
    POLNODE_ASSIGN_OR_RETURN(const double plain_seconds, train_plain(plain_segments, plain_cpu));
    best_plain = std::min(best_plain, plain_seconds);
    best_plain_cpu = std::min(best_plain_cpu, plain_cpu);
    for (std::size_t w = 0; w < variants.size(); ++w) {
      std::filesystem::remove_all(dir);
      solver::ProveOptions options;
      options.out_dir = dir;
      options.key = &key;
      options.checkpoint_work = variants[w].work;
      if (variants[w].commit_interval_ms >= 0) {
        options.commit_interval = std::chrono::milliseconds(variants[w].commit_interval_ms);
      }
      SegmentTimes times(task.checkpoint_interval, proof_segments[w]);
      options.sink = &times;
      // From just before the first step to the moment the last checkpoint is durable.
      double proof_cpu_start = 0.0, proof_cpu_end = 0.0;
      options.on_start = [&](std::int64_t) { proof_cpu_start = ProcessCpuSeconds(); };
      options.on_checkpoint_saved = [&](std::int64_t step) {
        if (step == task.steps) proof_cpu_end = ProcessCpuSeconds();
      };
      POLNODE_ASSIGN_OR_RETURN(const solver::ProveResult proved, solver::Prove(task, data, backend, options));
      if (w > 0) continue;
      if (proved.train_seconds < best_proof) {
        best_proof = proved.train_seconds;
        best_proof_loop = times.seconds;
      }
      last_writes.push_back(proved.train_seconds - times.seconds);
      best_proof_cpu = std::min(best_proof_cpu, proof_cpu_end - proof_cpu_start);
      paired.push_back(proved.train_seconds / plain_seconds);
    }
    double second_cpu = 0.0;
    POLNODE_RETURN_IF_ERROR(train_plain(second_plain_segments, second_cpu).status());
  }
  std::uintmax_t storage = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/blobs")) storage += entry.file_size();

  POLNODE_ASSIGN_OR_RETURN(const std::vector<std::uint8_t> manifest_bytes,
                           polnode::ReadWholeFile(dir + "/manifest.pb", solver::kMaxManifestBytes));
  POLNODE_ASSIGN_OR_RETURN(const solver::ProofManifest manifest, solver::DecodeManifest(manifest_bytes));
  POLNODE_ASSIGN_OR_RETURN(solver::BlobStore store, solver::BlobStore::Open(dir + "/blobs"));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  const std::int64_t n = task.checkpoint_count() - 1;
  Verdict verdict;
  verdict.spec = c.spec;
  std::printf("\n%s batch %lld, %lld steps, k=%lld, cpu backend, %d threads; checkpoints hashed and written on the "
              "%s\n", task.model.c_str(), static_cast<long long>(task.batch), static_cast<long long>(task.steps),
              static_cast<long long>(task.checkpoint_interval), o.threads,
              VariantName(variants.front(), backend).c_str());
  verdict.best_ratio = best_proof / best_plain;
  std::printf("proof overhead       plain %.3f s, with proof %.3f s: ratio %.3f (%+.1f%%)\n", best_plain, best_proof,
              verdict.best_ratio, 100.0 * (verdict.best_ratio - 1.0));
  std::printf("                     of the proof's time: step loop %.3f s (%+.1f%% on plain), last checkpoint's "
              "write %.1f ms after the last step\n",
              best_proof_loop, 100.0 * (best_proof_loop / best_plain - 1.0), 1e3 * (best_proof - best_proof_loop));
  std::sort(paired.begin(), paired.end());
  verdict.median_ratio = Median(paired);
  std::printf("                     median of the %zu paired ratios %.3f (%+.1f%%), range %+.1f%% .. %+.1f%%\n",
              paired.size(), verdict.median_ratio, 100.0 * (verdict.median_ratio - 1.0), 100.0 * (paired.front() - 1.0),
              100.0 * (paired.back() - 1.0));
  const double plain_segment = Median(plain_segments);
  verdict.last_write_ms = 1e3 * Median(last_writes);
  for (std::size_t w = 0; w < variants.size(); ++w) {
    const double proof_segment = Median(proof_segments[w]);
    const std::string name = VariantName(variants[w], backend);
    verdict.segment_ratios.emplace_back(name, proof_segment / plain_segment);
    std::printf("per segment          %s: median of %zu segments of k = %lld steps: plain %.1f ms, with proof %.1f "
                "ms: %+.1f%% (the overhead at k = %lld)\n",
                name.c_str(), proof_segments[w].size(), static_cast<long long>(task.checkpoint_interval),
                1e3 * plain_segment, 1e3 * proof_segment, 100.0 * (proof_segment / plain_segment - 1.0),
                static_cast<long long>(task.checkpoint_interval));
  }
  verdict.noise_ratio = Median(second_plain_segments) / plain_segment;
  std::printf("per segment          plain against plain (the second plain run of each repeat against the first: "
              "this machine's noise): %+.1f%%\n",
              100.0 * (verdict.noise_ratio - 1.0));
  std::printf("                     beside it, once per proof, the last checkpoint's write: median %.1f ms\n",
              verdict.last_write_ms);
  std::printf("proof CPU time       plain %.3f s, with proof %.3f s: ratio %.3f (%+.1f%%), all threads\n", best_plain_cpu,
              best_proof_cpu, best_proof_cpu / best_plain_cpu, 100.0 * (best_proof_cpu / best_plain_cpu - 1.0));

  // One checkpoint's work, timed alone on this thread (best of 5), on the proof's last state.
  {
    POLNODE_ASSIGN_OR_RETURN(const solver::StoredState last, store.GetState(manifest.checkpoint_blobs.back()));
    const solver::TrainState& state = last.state;
    std::vector<std::uint8_t> encoded;
    polnode::consensus::Hash256 sink{};
    const double encode_ms = BestMs(5, [&] { solver::EncodeStateInto(state, encoded); });
    const double state_hash_ms = BestMs(5, [&] { sink = solver::StateHash(state); });
    const std::string scratch = dir + "/scratch";
    int writes = 0;
    polnode::Status wrote;
    const double write_ms = BestMs(5, [&] {
      if (wrote.ok()) wrote = polnode::WriteFileAtomically(scratch + std::to_string(writes++), encoded);
    });
    POLNODE_RETURN_IF_ERROR(wrote);
    if (sink == polnode::consensus::Hash256{}) return polnode::Status::Internal("a zero hash");
    std::printf("per checkpoint       encode %.2f ms, state hash (the blob's name too) %.2f ms, durable write "
                "(write, fsync, rename, directory fsync) %.2f ms, for %.2f MB, on one thread\n",
                encode_ms, state_hash_ms, write_ms, static_cast<double>(encoded.size()) / 1e6);
    for (int i = 0; i < writes; ++i) std::filesystem::remove(scratch + std::to_string(i));
  }

  verdict.checkpoint_mb = storage / 1e6 / static_cast<double>(n + 1);
  verdict.smallest_mb = verdict.checkpoint_mb;
  std::printf("storage              %.2f MB for %lld checkpoints (%.2f MB each, uncompressed)\n", storage / 1e6,
              static_cast<long long>(n + 1), verdict.checkpoint_mb);
  // Every checkpoint blob of the proof through each codec, round trip checked; throughput in
  // uncompressed MB per second of one thread.
  {
    std::vector<std::vector<std::uint8_t>> blobs;
    for (const polnode::consensus::Hash256& hash : manifest.checkpoint_blobs) {
      POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, store.Get(hash));
      blobs.push_back(std::move(bytes));
    }
    double raw = 0.0;
    for (const auto& b : blobs) raw += static_cast<double>(b.size());
    for (const Codec& codec : Codecs()) {
      double packed = 0.0, compress_s = 0.0, decompress_s = 0.0;
      std::vector<std::uint8_t> out, back;
      for (const auto& blob : blobs) {
        Clock::time_point start = Clock::now();
        const std::vector<std::uint8_t> in = codec.shuffle ? Shuffle4(blob) : blob;
        const std::size_t size = codec.compress(in, out);
        compress_s += Seconds(start);
        if (size == 0) return polnode::Status::Internal(codec.name + " failed to compress a checkpoint");
        packed += static_cast<double>(size);
        back.assign(blob.size(), 0);
        start = Clock::now();
        const bool ok = codec.decompress(out, back);
        if (codec.shuffle) back = Unshuffle4(back);
        decompress_s += Seconds(start);
        if (!ok || back != blob) return polnode::Status::Internal(codec.name + " does not round-trip a checkpoint");
      }
      const double each_mb = packed / 1e6 / static_cast<double>(blobs.size());
      std::printf("compressed %-16s %.2f MB each (%.1f%% of raw), compress %.0f MB/s, decompress %.0f MB/s\n",
                  codec.name.c_str(), each_mb, 100.0 * packed / raw, raw / 1e6 / compress_s, raw / 1e6 / decompress_s);
      if (each_mb < verdict.smallest_mb) {
        verdict.smallest_mb = each_mb;
        verdict.smallest_codec = codec.name;
      }
    }
  }
  // Replay the first Q segments from their blobs, as a verifier does.
  for (std::int64_t q : {std::int64_t{1}, std::int64_t{2}}) {
    if (q > n) break;
    const Clock::time_point start = Clock::now();
    for (std::int64_t s = 0; s < q; ++s) {
      POLNODE_ASSIGN_OR_RETURN(solver::StoredState stored,
                               store.GetState(manifest.checkpoint_blobs[static_cast<std::size_t>(s)]));
      solver::TrainState& state = stored.state;
      for (std::int64_t t = 0; t < task.checkpoint_interval; ++t) {
        POLNODE_RETURN_IF_ERROR(stepper.Step(state, backend).status());
      }
    }
    const double replay = Seconds(start);
    std::printf("verification Q=%lld    replay %.3f s = %.3f of training; detection probability with 1 forged "
                "segment of %lld: %.3f\n",
                static_cast<long long>(q), replay, replay / best_plain, static_cast<long long>(n),
                DetectionProbability(n, 1, q));
  }

  // Measured detection: the real verifier against a proof forged in two middle segments.
  if (detection && n >= 4) {
    constexpr int kBeacons = 60;
    POLNODE_ASSIGN_OR_RETURN(const solver::ProofManifest forged,
                             ForgeCheckpoint(manifest, store, static_cast<std::size_t>(n / 2), key));
    for (std::int64_t q : {std::int64_t{1}, std::int64_t{2}}) {
      int rejected = 0;
      for (int b = 0; b < kBeacons; ++b) {
        polnode::verifier::VerifyOptions options;
        options.beacon = polnode::consensus::Sha256("proof_bench beacon " + std::to_string(b));
        options.segments = q;
        POLNODE_ASSIGN_OR_RETURN(const polnode::verifier::Verdict checked,
                                 polnode::verifier::VerifyProof(task, data, forged, store, backend, options));
        rejected += checked.accept ? 0 : 1;
      }
      std::printf("detection Q=%lld       forged 2 of %lld segments: rejected %d of %d beacons (%.3f), analytic %.3f\n",
                  static_cast<long long>(q), static_cast<long long>(n), rejected, kBeacons,
                  static_cast<double>(rejected) / kBeacons, DetectionProbability(n, 2, q));
    }
  }
  std::filesystem::remove_all(dir);
  return verdict;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::fprintf(stderr, "usage: proof_bench [--threads T] [--repeats R] [--steps S] [--seconds SEC] [--model SPEC] "
                         "[--text FILE] [--checkpoint-work auto|writer|host|both] [--commit-interval MS|both]\n");
    return 2;
  }
  auto backend = polnode::kernels::MakeBackend("cpu", o.threads);
  auto key = polnode::consensus::SecretKey::Generate();
  if (!backend.ok() || !key.ok()) return 1;
  const int policy = sched_getscheduler(0);
  std::printf("proof_bench: proof overhead at k = 100 (goal <= 2%%), %d threads, per-segment medians over %d "
              "alternating repeats, scheduled %s; measured detection on %s only\n",
              o.threads, o.repeats,
              policy == SCHED_FIFO ? "SCHED_FIFO" : policy == SCHED_RR ? "SCHED_RR" : "SCHED_OTHER",
              kDetectionModel);
  std::vector<Verdict> verdicts;
  // Data sets by location, loaded once: the three image models share Fashion-MNIST.
  std::map<std::string, solver::ImageDataset> datasets;
  for (const ModelCase& c : polnode::bench::kModelCases) {
    const std::string spec = c.spec;
    if (spec.find(o.model) == std::string::npos) continue;
    const std::string location = solver::IsGptSpec(spec) ? o.text : "fashion-mnist";
    auto cached = datasets.find(location);
    if (cached == datasets.end()) {
      auto data = solver::LoadDatasetFor(spec, location);
      if (!data.ok()) {
        std::printf("\n%s skipped: %s (--text names the corpus)\n", c.spec, data.status().ToString().c_str());
        continue;
      }
      cached = datasets.emplace(location, std::move(*data)).first;
    }
    auto verdict = BenchFamily(c, cached->second, location, o, **backend, *key, spec == kDetectionModel);
    if (!verdict.ok()) {
      std::fprintf(stderr, "proof_bench: %s: %s\n", c.spec, verdict.status().ToString().c_str());
      return 1;
    }
    verdicts.push_back(std::move(*verdict));
  }
  std::printf("\nsummary, %d threads: the overhead at k = 100 is the median segment's (judged as printed, to "
              "0.1%%); whole runs (median of paired ratios, ratio of bests) add the last checkpoint's write once\n",
              o.threads);
  for (const Verdict& v : verdicts) {
    for (const auto& [name, ratio] : v.segment_ratios) {
      const double overhead = std::round(1000.0 * (ratio - 1.0)) / 10.0;
      std::printf("%-26s %-37s per segment %+5.1f%% (goal <= 2%%) %-6s (plain vs plain %+5.1f%%) | whole run median "
                  "%+5.1f%% best-of %+5.1f%%, last write %5.1f ms | checkpoint %6.2f MB, %s %6.2f MB\n",
                  v.spec.c_str(), name.c_str(), overhead, overhead <= 2.0 ? "MET" : "MISSED",
                  100.0 * (v.noise_ratio - 1.0),
                  100.0 * (v.median_ratio - 1.0), 100.0 * (v.best_ratio - 1.0), v.last_write_ms, v.checkpoint_mb,
                  v.smallest_codec.c_str(), v.smallest_mb);
    }
  }
  return 0;  // benchmarks report; they never fail on a timing
}
