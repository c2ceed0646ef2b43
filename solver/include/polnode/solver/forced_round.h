// A forced round's falsified checkpoints (protocol v5, docs/protocol.md): in a round the solver's
// secret marks as forced, it must commit a proof that is wrong at its forced checkpoints
// (contracts beacon.h ForcedCheckpoints), so that a verifier who skips its segments is caught.
//
// The solver falsifies each forced checkpoint k right after training up to it: exact mode flips
// the least significant bit of one element of the state's first tensor (the element drawn from
// H(secret, forced seed, task id, k)), tolerant mode flips the sign of every element of it (a
// one-bit change passes the profiled distance thresholds). The proof commits the falsified
// state's hash as leaf k and training goes on FROM it, so every segment replayed from a
// committed checkpoint reaches the honest (unfalsified) state at its end: the result proof, the
// committed proof with each forced leaf replaced by that honest state, is what the solver reveals
// and what the submitter gets. Both falsifications are their own inverse, so the honest states
// follow from the committed ones and need not be kept during training.
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

  /// Whether checkpoint `k` is among `checkpoints`.
  bool Forced(std::uint64_t k) const;
};

/// Exact mode: the index of the element of the first tensor (of `elements`, > 0) falsified at
/// checkpoint `k`: H("polnode/forced-falsify/v1", secret, seed, task id, k) mod elements.
std::uint64_t FalsifiedElement(const ForcedRound& round, std::uint64_t k, std::uint64_t elements);

/// Falsifies `state` as checkpoint `k` of `round` in place (see above); applied twice it restores
/// the state bit for bit. kFailedPrecondition when the state has no first tensor or it is empty.
[[nodiscard]] Status FalsifyCheckpoint(solver::TrainState& state, const ForcedRound& round, std::uint64_t k);

/// A ProveOptions::on_checkpoint hook for a task with checkpoint interval `interval` (> 0) that
/// falsifies the forced checkpoints of `round` (copied) and leaves the others alone.
std::function<Status(TrainState&)> ForcedCheckpointHook(ForcedRound round, std::int64_t interval);

/// Writes the result proof of the committed (falsified) proof in `committed_dir` to `result_dir`:
/// the same task file, losses and blobs except at the forced checkpoints, whose states are
/// falsified again (which restores them) and stored, with their hashes in the manifest; re-rooted
/// and signed with `key`. Idempotent (the same bytes every time). Returns the result root.
/// Errors: the committed proof's (OpenProofDir, blobs, decoding), kOutOfRange for a forced
/// checkpoint the proof lacks, FalsifyCheckpoint's, the disk's.
[[nodiscard]] Result<consensus::Hash256> WriteResultProof(const std::string& committed_dir, const std::string& result_dir,
                                                          const ForcedRound& round, const consensus::SecretKey& key);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_FORCED_ROUND_H_
