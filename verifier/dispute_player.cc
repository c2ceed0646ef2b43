#include "polnode/verifier/dispute_player.h"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

namespace polnode::verifier {
namespace {

using MaybeMove = std::optional<proto::DisputeMoveTx>;

std::string HashBytes(const consensus::Hash256& h) { return std::string(h.begin(), h.end()); }

std::string ProofBytes(const consensus::MerkleProof& proof) {
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(proof);
  return std::string(bytes.begin(), bytes.end());
}

// A move for `game`'s current round, without its body.
proto::DisputeMoveTx MoveFor(const proto::DisputeGame& game) {
  proto::DisputeMoveTx move;
  move.set_task_id(game.task_id());
  move.set_challenger(game.challenger().key());
  move.set_round(game.round());
  return move;
}

}  // namespace

DisputePlayer::DisputePlayer(PlayerContext context, consensus::MerkleTree checkpoints, consensus::MerkleTree starts)
    : context_(std::move(context)), checkpoints_(std::move(checkpoints)), starts_(std::move(starts)) {}

Result<DisputePlayer> DisputePlayer::Create(PlayerContext context) {
  if (context.task == nullptr || context.data == nullptr || context.backend == nullptr || !context.load_checkpoint) {
    return Status::InvalidArgument("a dispute player needs a task, its data set, a backend and a checkpoint loader");
  }
  if (context.key.size() != 32) return Status::InvalidArgument("a party's key has 32 bytes");
  const std::int64_t k = context.task->checkpoint_interval;
  if (k < 1 || context.task->steps < k ||
      context.checkpoint_hashes.size() != static_cast<std::size_t>(context.task->checkpoint_count())) {
    return Status::InvalidArgument("the proof has " + std::to_string(context.checkpoint_hashes.size()) +
                                   " checkpoint hashes, the task needs steps / k + 1");
  }
  if (!context.start_hashes.empty() && context.start_hashes.size() != context.checkpoint_hashes.size()) {
    return Status::InvalidArgument("the proof has " + std::to_string(context.start_hashes.size()) + " start hashes for " +
                                   std::to_string(context.checkpoint_hashes.size()) + " checkpoints");
  }
  const std::uint64_t segments = context.checkpoint_hashes.size() - 1;
  for (std::uint64_t s : context.suspect_segments) {
    if (s >= segments) {
      return Status::InvalidArgument("suspect segment " + std::to_string(s) + " is outside the proof's " +
                                     std::to_string(segments) + " segments");
    }
  }
  if (context.start_proofs.empty() != context.end_proofs.empty()) {
    return Status::InvalidArgument("a player from the ledger's data needs start and end proofs");
  }
  for (const auto* proofs : {&context.start_proofs, &context.end_proofs}) {
    if (!proofs->empty() && proofs->rbegin()->first > segments) {
      return Status::InvalidArgument("a proof names checkpoint " + std::to_string(proofs->rbegin()->first) +
                                     " of a proof with " + std::to_string(segments) + " segments");
    }
  }
  consensus::MerkleTree checkpoints(context.checkpoint_hashes);
  consensus::MerkleTree starts(context.start_hashes.empty() ? context.checkpoint_hashes : context.start_hashes);
  return DisputePlayer(std::move(context), std::move(checkpoints), std::move(starts));
}

Status DisputePlayer::CheckKnownProofs(const std::string& raw_root, const std::map<std::uint64_t, std::string>& proofs,
                                       bool starts, std::string_view root_name) const {
  if (raw_root.size() != sizeof(consensus::Hash256)) {
    return Status::FailedPrecondition("the game's " + std::string(root_name) + " is not 32 bytes");
  }
  consensus::Hash256 root{};
  std::copy(raw_root.begin(), raw_root.end(), root.begin());
  for (const auto& [checkpoint, raw] : proofs) {
    const consensus::Hash256& hash = starts ? StartHash(checkpoint) : context_.checkpoint_hashes[checkpoint];
    Result<consensus::MerkleProof> proof =
        consensus::ParseMerkleProof(std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
    if (!proof.ok() || proof->leaf_index != checkpoint || !consensus::VerifyMerkleProof(root, hash, *proof).ok()) {
      return Status::FailedPrecondition("checkpoint " + std::to_string(checkpoint) + " as the ledger holds it is not " +
                                        "proven against the game's " + std::string(root_name));
    }
  }
  return Status::Ok();
}

Status DisputePlayer::CheckTask(const proto::Task& task, const proto::DisputeGame& game) const {
  if (!context_.end_proofs.empty()) {
    // Only some checkpoints are known: each must be proven against the game's roots.
    const std::string& start_root = game.start_root().empty() ? game.proof_root() : game.start_root();
    POLNODE_RETURN_IF_ERROR(CheckKnownProofs(start_root, context_.start_proofs, true, "start root"));
    POLNODE_RETURN_IF_ERROR(CheckKnownProofs(game.proof_root(), context_.end_proofs, false, "proof root"));
  } else if (game.proof_root() != HashBytes(checkpoints_.root())) {
    return Status::FailedPrecondition("the game is over another proof than this player's");
  } else if (!game.start_root().empty() && game.start_root() != HashBytes(starts_.root())) {
    // A game without a start root starts its segments from the proof on trial.
    return Status::FailedPrecondition("the game's segments start from another proof than this player's");
  }
  if (task.spec().total_steps() != static_cast<std::uint64_t>(context_.task->steps) ||
      task.spec().checkpoint_interval() != static_cast<std::uint64_t>(context_.task->checkpoint_interval)) {
    return Status::FailedPrecondition("the ledger's task has other steps or checkpoint interval than this player's");
  }
  return Status::Ok();
}

Result<PinpointResponder*> DisputePlayer::ResponderFor(const proto::Task& task, std::uint64_t segment) {
  if (segment >= segments()) {
    return Status::FailedPrecondition("the proof has no segment " + std::to_string(segment));
  }
  if (responder_ && responder_segment_ == segment) return &*responder_;
  // The old responder goes first, so that no more than one segment's states are ever held.
  responder_.reset();
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState start, context_.load_checkpoint(segment));
  if (solver::StateHash(start) != StartHash(segment)) {
    return Status::Corruption("checkpoint " + std::to_string(segment) +
                              " as loaded does not hash to the proof's checkpoint hash");
  }
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder responder,
                           PinpointResponder::Create(*context_.task, *context_.data, *context_.backend,
                                                     std::move(start), context_.responder_options));
  // Moves built on another step graph than the ledger's would all be refused.
  if (task.spec().graph_root() != HashBytes(responder.graph_root()) ||
      task.spec().step_leaf_count() != responder.layout().leaf_count()) {
    return Status::FailedPrecondition("the ledger's task commits to another step graph than this player's task");
  }
  responder_.emplace(std::move(responder));
  responder_segment_ = segment;
  return &*responder_;
}

Result<std::optional<DisputePlayer::Opening>> DisputePlayer::FindOpening(const proto::Task& task) {
  if (searched_) return opening_;
  std::vector<std::uint64_t> order;
  for (std::uint64_t s : context_.suspect_segments) {
    if (std::find(order.begin(), order.end(), s) == order.end()) order.push_back(s);
  }
  for (std::uint64_t s = 0; s < segments(); ++s) {
    if (std::find(order.begin(), order.end(), s) == order.end()) order.push_back(s);
  }
  std::optional<Opening> found;
  const auto& starts = context_.start_proofs;
  const auto& ends = context_.end_proofs;
  for (std::uint64_t s : order) {
    if (!ends.empty() && (!starts.contains(s) || !ends.contains(s + 1))) continue;
    POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, ResponderFor(task, s));
    POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 end, responder->StateHashAt(context_.task->checkpoint_interval));
    if (end != context_.checkpoint_hashes[s + 1]) {
      found = Opening{s, end};
      break;
    }
  }
  // Only a finished search is remembered: after an error the next call searches again.
  searched_ = true;
  opening_ = found;
  return found;
}

Result<std::optional<proto::DisputeMoveTx>> DisputePlayer::OpenMove(const proto::Task& task,
                                                                    const proto::DisputeGame& game) {
  POLNODE_ASSIGN_OR_RETURN(std::optional<Opening> opening, FindOpening(task));
  if (!opening) return MaybeMove();
  const std::uint64_t s = opening->segment;
  proto::DisputeMoveTx move = MoveFor(game);
  proto::OpenMove* open = move.mutable_open();
  open->set_segment(s);
  open->set_start_hash(HashBytes(StartHash(s)));
  open->set_end_hash(HashBytes(context_.checkpoint_hashes[s + 1]));
  if (context_.end_proofs.empty()) {
    POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof start_proof, starts_.Prove(s));
    POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof end_proof, checkpoints_.Prove(s + 1));
    open->set_start_proof(ProofBytes(start_proof));
    open->set_end_proof(ProofBytes(end_proof));
  } else {
    // FindOpening replays only segments whose both ends the ledger proves.
    open->set_start_proof(context_.start_proofs.at(s));
    open->set_end_proof(context_.end_proofs.at(s + 1));
  }
  open->set_claimed_end_hash(HashBytes(opening->claimed_end));
  return MaybeMove(std::move(move));
}

Result<PinpointResponder*> DisputePlayer::GameResponder(const proto::Task& task, const proto::DisputeGame& game) {
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, ResponderFor(task, game.segment()));
  if (game.first_step() != static_cast<std::uint64_t>(responder->first_step()) || game.lo() >= game.hi() ||
      game.hi() > static_cast<std::uint64_t>(context_.task->checkpoint_interval)) {
    return Status::FailedPrecondition("the game's step range does not lie in segment " +
                                      std::to_string(game.segment()) + " of the proof");
  }
  return responder;
}

Result<proto::DisputeMoveTx> DisputePlayer::StepMove(const proto::Task& task, const proto::DisputeGame& game) {
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, GameResponder(task, game));
  const std::uint64_t mid = game.lo() + (game.hi() - game.lo()) / 2;
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 hash, responder->StateHashAt(static_cast<std::int64_t>(mid)));
  proto::DisputeMoveTx move = MoveFor(game);
  move.mutable_step()->set_state_hash(HashBytes(hash));
  return move;
}

Result<proto::DisputeMoveTx> DisputePlayer::GraphMove(const proto::Task& task, const proto::DisputeGame& game,
                                                      const proto::GameSide& side) {
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, GameResponder(task, game));
  POLNODE_ASSIGN_OR_RETURN(StepLeaves step, responder->LeavesOfStep(static_cast<std::int64_t>(game.lo())));
  const bool first_round = game.level() == game.depth();
  // The ledger holds the party to what it posted: its level-1 claim for the state after the step
  // (first round), then the node it revealed. A replay that disagrees is a fault here, and
  // posting it would only be refused.
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 mine, first_round ? Result<consensus::Hash256>(step.leaves.back())
                                                                 : step.tree.Node(game.level(), game.node_index()));
  if (HashBytes(mine) != (first_round ? side.hi_hash() : side.hash())) {
    return Status::FailedPrecondition("this party's replay of step " + std::to_string(game.first_step() + game.lo()) +
                                      " contradicts what it posted earlier in the game");
  }
  POLNODE_ASSIGN_OR_RETURN(proto::GraphMove graph,
                           AnswerGraphMove(step.tree, game.level(), game.node_index(), first_round));
  proto::DisputeMoveTx move = MoveFor(game);
  *move.mutable_graph() = std::move(graph);
  return move;
}

Result<proto::DisputeMoveTx> DisputePlayer::TileMove(const proto::Task& task, const proto::DisputeGame& game,
                                                     const proto::GameSide& side) {
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, GameResponder(task, game));
  const std::int64_t steps = static_cast<std::int64_t>(game.lo());
  POLNODE_ASSIGN_OR_RETURN(const consensus::TensorBlockTree* blocks, responder->OutputBlocks(steps, game.leaf()));
  const bool first_round = side.block_root().empty();
  // As in the graph descent, the ledger holds the party to what it posted: its leaf, then the
  // block-tree node it revealed.
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 mine, first_round ? Result<consensus::Hash256>(blocks->tensor_hash())
                                                                 : blocks->tree()->Node(game.tile_level(), game.tile()));
  if (HashBytes(mine) != (first_round ? side.hash() : side.tile_hash())) {
    return Status::FailedPrecondition("this party's output of leaf " + std::to_string(game.leaf()) +
                                      " contradicts what it posted earlier in the game");
  }
  const std::uint32_t level = first_round ? blocks->tree()->depth() : game.tile_level();
  POLNODE_ASSIGN_OR_RETURN(proto::TileMove tile,
                           responder->AnswerTileMove(steps, game.leaf(), level, first_round ? 0 : game.tile(), first_round));
  proto::DisputeMoveTx move = MoveFor(game);
  *move.mutable_tile() = std::move(tile);
  return move;
}

Result<proto::DisputeMoveTx> DisputePlayer::ChainMove(const proto::Task& task, const proto::DisputeGame& game) {
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, GameResponder(task, game));
  const std::uint64_t mid = game.chain_lo() + (game.chain_hi() - game.chain_lo()) / 2;
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 hash,
                           responder->ChainStateHashAt(static_cast<std::int64_t>(game.lo()), game.leaf(), game.tile(),
                                                       static_cast<std::int64_t>(mid)));
  proto::DisputeMoveTx move = MoveFor(game);
  move.mutable_chain()->set_state_hash(HashBytes(hash));
  return move;
}

Result<proto::DisputeMoveTx> DisputePlayer::RefereeMove(const proto::Task& task, const proto::DisputeGame& game) {
  POLNODE_ASSIGN_OR_RETURN(PinpointResponder * responder, GameResponder(task, game));
  const std::int64_t steps = static_cast<std::int64_t>(game.lo());
  POLNODE_ASSIGN_OR_RETURN(proto::RefereeMove evidence,
                           game.node_descriptor().empty()
                               ? responder->RefereeEvidence(steps, game.leaf())
                               : responder->TileEvidence(steps, game.leaf(), game.tile(),
                                                         static_cast<std::int64_t>(game.chain_lo()),
                                                         static_cast<std::int64_t>(game.chain_hi())));
  proto::DisputeMoveTx move = MoveFor(game);
  *move.mutable_referee() = std::move(evidence);
  return move;
}

Result<std::optional<proto::DisputeMoveTx>> DisputePlayer::NextMove(const proto::Task& task,
                                                                    const proto::DisputeGame& game) {
  if (game.task_id() != task.id()) return Status::InvalidArgument("the game is not over this task");
  if (game.phase() == proto::GAME_RESOLVED) return MaybeMove();
  const bool is_challenger = game.challenger().key() == context_.key;
  if (!is_challenger && game.defender().key() != context_.key) return MaybeMove();
  POLNODE_RETURN_IF_ERROR(CheckTask(task, game));
  const proto::GameSide& side = is_challenger ? game.challenger() : game.defender();
  switch (game.phase()) {
    case proto::GAME_OPENING:
      if (!is_challenger) return MaybeMove();
      return OpenMove(task, game);
    case proto::GAME_STEPS: {
      if (side.moved()) return MaybeMove();
      POLNODE_ASSIGN_OR_RETURN(proto::DisputeMoveTx move, StepMove(task, game));
      return MaybeMove(std::move(move));
    }
    case proto::GAME_GRAPH: {
      if (side.moved()) return MaybeMove();
      POLNODE_ASSIGN_OR_RETURN(proto::DisputeMoveTx move, GraphMove(task, game, side));
      return MaybeMove(std::move(move));
    }
    case proto::GAME_TILES: {
      if (side.moved()) return MaybeMove();
      POLNODE_ASSIGN_OR_RETURN(proto::DisputeMoveTx move, TileMove(task, game, side));
      return MaybeMove(std::move(move));
    }
    case proto::GAME_CHAIN: {
      if (side.moved()) return MaybeMove();
      POLNODE_ASSIGN_OR_RETURN(proto::DisputeMoveTx move, ChainMove(task, game));
      return MaybeMove(std::move(move));
    }
    case proto::GAME_REFEREE: {
      POLNODE_ASSIGN_OR_RETURN(proto::DisputeMoveTx move, RefereeMove(task, game));
      return MaybeMove(std::move(move));
    }
    default:
      return Status::InvalidArgument("the game record names an unknown phase");
  }
}

}  // namespace polnode::verifier
