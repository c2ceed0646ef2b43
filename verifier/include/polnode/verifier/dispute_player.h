// One party's play of a pinpoint dispute game (DESIGN.md section 6): given the ledger's record of
// a game, the move this party posts next. Role daemons call NextMove whenever they poll the
// ledger; the rules it follows are contracts/dispute_game.h's, the answers PinpointResponder's.
//
// Everything a move depends on is read from the record (phase, round, segment, lo / hi, the
// current tree node, the disputed leaf, the block-tree node and tile inside an operator's output,
// the tile's chain range) and from the committed proof, so a daemon that restarts
// builds a new player and carries on where the ledger stands. What a player keeps between calls
// is cache only: the result of the challenger's search for a wrong segment, and one responder
// (the segment being played, rebuilt from its checkpoint when missing).
//
// NextMove returns the same move until the ledger records it: the caller must not post again
// while its earlier move for the same (task, verifier, round) is still pending.
#ifndef POLNODE_VERIFIER_DISPUTE_PLAYER_H_
#define POLNODE_VERIFIER_DISPUTE_PLAYER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/train_state.h"
#include "polnode/verifier/pinpoint.h"

namespace polnode::verifier {

/// Loads checkpoint `checkpoint` (the state after checkpoint * k steps) of the committed proof.
using CheckpointLoader = std::function<Result<solver::TrainState>(std::uint64_t checkpoint)>;

struct PlayerContext {
  /// The task as the party replays it, its data set (already checked with CheckTaskData) and the
  /// backend replays run on. All three must outlive the player.
  const solver::TaskSpec* task = nullptr;
  const solver::ImageDataset* data = nullptr;
  kernels::Backend* backend = nullptr;
  /// This party's 32-byte x-only public key, raw, as the game record names it.
  std::string key;
  /// The checkpoint (state) hashes of the proof on trial, checkpoint 0 first: their Merkle root is
  /// the game's proof_root (the committed root, or after a forced round's reveal the result one:
  /// the committed hashes with the forced checkpoints restored). A segment's END is judged
  /// against these.
  std::vector<consensus::Hash256> checkpoint_hashes;
  /// The committed proof's checkpoint hashes, whose root is the game's start_root, when they
  /// differ from checkpoint_hashes (a forced round: the solver trained on from the falsified
  /// checkpoints it committed, so a segment STARTS from the committed state); empty otherwise.
  /// Same length as checkpoint_hashes.
  std::vector<consensus::Hash256> start_hashes;
  /// The committed proof's checkpoint states (from the solver's blobs); each loaded state is
  /// checked against the start hashes (start_hashes, or checkpoint_hashes when that is empty).
  CheckpointLoader load_checkpoint;
  /// Challenger only, when the solver's server is down and the ledger holds what the opening
  /// needs (contracts' publication.h and the forced reveal's RevealedCheckpoints): the Merkle
  /// proofs (consensus::SerializeMerkleProof) the ledger checked. start_proofs: checkpoint -> the
  /// proof of its start hash against the game's start root (a published checkpoint: the committed
  /// proof); end_proofs: checkpoint -> the proof of its checkpoint_hashes entry against the game's
  /// proof root (the published checkpoints again, or after a forced round's reveal the revealed
  /// result proofs). The hashes of checkpoints without a proof are zeros, which nobody can know:
  /// only a segment with a start proof at its start and an end proof at its end is replayed.
  /// Both maps empty (the whole proof is known) or both non-empty.
  std::map<std::uint64_t, std::string> start_proofs;
  std::map<std::uint64_t, std::string> end_proofs;
  /// Challenger only: segments to replay first when looking for a wrong one (those a verifier's
  /// or whistleblower's own check already found wrong), in order; the rest follow in order.
  std::vector<std::uint64_t> suspect_segments;
  /// A cheating party (tests, a devnet cheater) replays with a tamper, so that its answers stay
  /// consistent with its cheat.
  ResponderOptions responder_options;
};

class DisputePlayer {
 public:
  /// kInvalidArgument unless task, data, backend and load_checkpoint are set, the key has 32
  /// bytes, there are task->checkpoint_count() checkpoint hashes (and as many start hashes, or
  /// none), every suspect segment is below the proof's segment count, and start and end proofs are
  /// both given or both not and name checkpoints of the proof.
  static Result<DisputePlayer> Create(PlayerContext context);

  /// The move this party should post now in `game` (the ledger's record of a game over `task`),
  /// or std::nullopt when it has nothing to post: the game is resolved, the key is not a party,
  /// the party already moved this round, it is the defender while the game opens, or (the
  /// challenger) its replay finds no segment of the proof wrong. At the referee both parties
  /// post the evidence; the ledger decides on the first and refuses the second.
  /// Errors: kInvalidArgument when `game` is not a game of `task` or names an unknown phase;
  /// kFailedPrecondition when the ledger's task is not the one this player replays (the game's proof root,
  /// steps, k, graph root or leaf count differ), when the record names a segment or step the
  /// proof lacks, or when the party's replay contradicts a claim it posted earlier (a
  /// nondeterministic backend or a tamper that does not match the cheat); kCorruption when a
  /// loaded checkpoint does not hash to the proof's; errors of load_checkpoint and of the replay.
  Result<std::optional<proto::DisputeMoveTx>> NextMove(const proto::Task& task, const proto::DisputeGame& game);

 private:
  // The challenger's opening: the first wrong segment and its replayed end.
  struct Opening {
    std::uint64_t segment = 0;
    consensus::Hash256 claimed_end{};
  };

  DisputePlayer(PlayerContext context, consensus::MerkleTree checkpoints, consensus::MerkleTree starts);
  // The committed hash segment `s` starts from.
  const consensus::Hash256& StartHash(std::uint64_t s) const {
    return context_.start_hashes.empty() ? context_.checkpoint_hashes[s] : context_.start_hashes[s];
  }
  [[nodiscard]] Status CheckTask(const proto::Task& task, const proto::DisputeGame& game) const;
  // Each of `proofs` proves its checkpoint's start hash (`starts`) or checkpoint hash against
  // `raw_root`, the game's root named `root_name`.
  [[nodiscard]] Status CheckKnownProofs(const std::string& raw_root, const std::map<std::uint64_t, std::string>& proofs,
                                        bool starts, std::string_view root_name) const;
  // The responder for `segment`, built from its checkpoint unless it is the cached one.
  Result<PinpointResponder*> ResponderFor(const proto::Task& task, std::uint64_t segment);
  // The first wrong segment (suspects first), or nullopt when the replay finds none; searched
  // once per player.
  Result<std::optional<Opening>> FindOpening(const proto::Task& task);
  Result<std::optional<proto::DisputeMoveTx>> OpenMove(const proto::Task& task, const proto::DisputeGame& game);
  Result<proto::DisputeMoveTx> StepMove(const proto::Task& task, const proto::DisputeGame& game);
  Result<proto::DisputeMoveTx> GraphMove(const proto::Task& task, const proto::DisputeGame& game,
                                         const proto::GameSide& side);
  Result<proto::DisputeMoveTx> TileMove(const proto::Task& task, const proto::DisputeGame& game,
                                        const proto::GameSide& side);
  Result<proto::DisputeMoveTx> ChainMove(const proto::Task& task, const proto::DisputeGame& game);
  Result<proto::DisputeMoveTx> RefereeMove(const proto::Task& task, const proto::DisputeGame& game);
  // The responder of the game's segment, with the game's step range checked against it.
  Result<PinpointResponder*> GameResponder(const proto::Task& task, const proto::DisputeGame& game);

  std::uint64_t segments() const { return context_.checkpoint_hashes.size() - 1; }

  PlayerContext context_;
  consensus::MerkleTree checkpoints_;  // over checkpoint_hashes, for the opening's end proof
  consensus::MerkleTree starts_;       // over the start hashes, for the opening's start proof
  bool searched_ = false;
  std::optional<Opening> opening_;
  std::optional<PinpointResponder> responder_;
  std::uint64_t responder_segment_ = 0;
};

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_DISPUTE_PLAYER_H_
