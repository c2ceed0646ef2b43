// A forced round's falsified checkpoints (protocol v7, docs/protocol.md): in a round the solver's
// secret marks as forced, it must commit a proof that is wrong at its forced checkpoints
// (contracts beacon.h ForcedCheckpoints), so that a verifier who skips its segments is caught.
//
// The solver falsifies each forced checkpoint k right after training up to it, in the state's
// first tensor:
//   - exact mode flips the least significant bit of one element (drawn from H(secret, forced
//     seed, task id, k)): a hash comparison sees the smallest change. The flip is its own inverse.
//   - tolerant mode moves the few elements of one 64 x 64 block that
//     consensus::DrawPerturbation names by +-forced_delta (consensus::PerturbedValue): above the
//     replay error a verifier is held to, so a replay sees it, and below what a segment of training
//     moves an element, so nothing else does. A float addition is not invertible, so the hook
//     keeps the honest values of every forced checkpoint in a private directory (never under a
//     served proof directory: they would give the perturbation away) until the result proof is
//     written from them.
// The proof commits the falsified state's hash as leaf k and training goes on FROM it, so every
// segment replayed from a committed checkpoint reaches the honest (unfalsified) state at its end:
// the result proof, the committed proof with each forced leaf replaced by that honest state, is
// what the solver reveals and what the submitter gets.
#ifndef POLNODE_SOLVER_FORCED_ROUND_H_
#define POLNODE_SOLVER_FORCED_ROUND_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

/// What a forced round's falsifications derive from. Byte strings are raw (32 bytes on the ledger).
struct ForcedRound {
  std::string secret;
  std::string forced_seed;
  std::string task_id;
  ReproMode mode = ReproMode::kExact;
  /// The forced checkpoints, ascending, each in [1, checkpoint count - 1].
  std::vector<std::uint64_t> checkpoints;
  /// Tolerant mode: the task's TaskSpec.forced_delta (finite, > 0), by which each perturbed
  /// element moves. Unused in exact mode.
  float forced_delta = 0.0f;
  /// Tolerant mode: the private directory (created when missing) where ForcedCheckpointHook keeps
  /// the honest values of each forced checkpoint for WriteResultProof. It must not be under a
  /// proof directory that is served. Unused in exact mode.
  std::string honest_dir;

  /// Whether checkpoint `k` is among `checkpoints`.
  bool Forced(std::uint64_t k) const;
};

/// Exact mode: the index of the element of the first tensor (of `elements`, > 0) falsified at
/// checkpoint `k`: H("polnode/forced-falsify/v1", secret, seed, task id, k) mod elements.
std::uint64_t FalsifiedElement(const ForcedRound& round, std::uint64_t k, std::uint64_t elements);

/// Falsifies `state` as checkpoint `k` of `round` in place (see above). Exact mode: applied twice
/// it restores the state bit for bit. Tolerant mode: each element of
/// consensus::DrawPerturbation(secret, seed, task id, k, dims of the first tensor) becomes
/// consensus::PerturbedValue(honest, sign, forced_delta). kFailedPrecondition, with the state
/// unchanged, when the state has no first tensor or it is empty, or (tolerant) when a drawn
/// element cannot be visibly perturbed (consensus::PerturbationVisible: a NaN, an infinity, a
/// value too large for forced_delta to move, or a forced_delta that is not finite and positive).
[[nodiscard]] Status FalsifyCheckpoint(solver::TrainState& state, const ForcedRound& round, std::uint64_t k);

/// A ProveOptions::on_checkpoint hook for a task with checkpoint interval `interval` (> 0) that
/// falsifies the forced checkpoints of `round` (copied) and leaves the others alone. In tolerant
/// mode it first writes the drawn elements' honest values of forced checkpoint k (float32 LE, in
/// the perturbation's element order) atomically to a file of round.honest_dir, so they are on disk
/// before the falsified state is; a resumed training that reaches checkpoint k again writes the
/// same bytes. Errors: FalsifyCheckpoint's, kFailedPrecondition for a tolerant round without
/// honest_dir, the disk's.
std::function<Status(TrainState&)> ForcedCheckpointHook(ForcedRound round, std::int64_t interval);

/// Writes the result proof of the committed (falsified) proof in `committed_dir` to `result_dir`:
/// the same task file, losses and blobs except at the forced checkpoints, whose states are
/// restored (exact mode: falsified again; tolerant mode: the honest values the hook kept put back)
/// and stored, with their hashes in the manifest; re-rooted and signed with `key`. Idempotent (the
/// same bytes every time). Returns the result root. Errors: the committed proof's (OpenProofDir,
/// blobs, decoding), kOutOfRange for a forced checkpoint the proof lacks, FalsifyCheckpoint's;
/// tolerant mode: kInvalidArgument when round.honest_dir is empty or under either proof
/// directory, the honest values' file's (kNotFound when missing), kCorruption when they are not
/// what the committed state was perturbed from; the disk's.
[[nodiscard]] Result<consensus::Hash256> WriteResultProof(const std::string& committed_dir, const std::string& result_dir,
                                                          const ForcedRound& round, const consensus::SecretKey& key);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_FORCED_ROUND_H_
