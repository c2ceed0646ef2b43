#include "dispute_game.h"

#include <algorithm>
#include <string>
#include <vector>

#include "checked_math.h"
#include "deadlines.h"
#include "keys.h"
#include "move_fields.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/ruling.h"
#include "records.h"
#include "polnode/contracts/referee.h"
#include "settlement.h"
#include "staking.h"
#include "task_ops.h"

namespace polnode::contracts {
namespace {

using consensus::Hash256;

// The claim a game decides: the disputed reject slots of one verifier key, or a whistleblower's
// challenge. A key drawn for several slots of a task plays one game for all its disputed rejects
// (the game is between the key and the solver over the same proof), and its result is each
// slot's result, so every slot is paid or slashed on its own.
struct Claim {
  std::vector<proto::VerifierSlot*> slots;
  proto::Challenge* challenge = nullptr;
  explicit operator bool() const { return !slots.empty() || challenge != nullptr; }
  const std::string& key() const { return !slots.empty() ? slots.front()->verifier() : challenge->challenger(); }
  proto::GameResult result() const { return !slots.empty() ? slots.front()->game_result() : challenge->game_result(); }
  void set_result(proto::GameResult r) const {
    for (proto::VerifierSlot* slot : slots) slot->set_game_result(r);
    if (challenge != nullptr) challenge->set_game_result(r);
  }
};

// Every claim the solver must defend its proof against, in play order: disputed rejects in slot
// order (a key's at its first disputed slot), then whistleblower challenges that are not catches
// (all of them in a round that was not forced) in arrival order.
std::vector<Claim> Claims(proto::Task& task) {
  std::vector<Claim> claims;
  for (proto::VerifierSlot& slot : *task.mutable_verifiers()) {
    if (slot.absent() || slot.verdict() != proto::VERDICT_REJECT || !slot.disputed()) continue;
    auto same_key = std::find_if(claims.begin(), claims.end(), [&](const Claim& c) { return c.key() == slot.verifier(); });
    if (same_key != claims.end()) {
      same_key->slots.push_back(&slot);
    } else {
      claims.push_back({{&slot}, nullptr});
    }
  }
  for (proto::Challenge& challenge : *task.mutable_challenges()) {
    if (!challenge.caught()) claims.push_back({{}, &challenge});
  }
  return claims;
}

Claim FindClaim(proto::Task& task, std::string_view challenger) {
  for (const Claim& claim : Claims(task)) {
    if (claim.key() == challenger) return claim;
  }
  return {};
}

// Opens the next round: a new deadline (scheduled once per height) and no moves yet.
Status NextRound(ExecContext& ctx, proto::DisputeGame& game) {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t deadline,
                           CheckedAdd(ctx.block.height, ctx.params.dispute_move_window(), "game deadline"));
  game.set_round(game.round() + 1);
  game.mutable_challenger()->set_moved(false);
  game.mutable_defender()->set_moved(false);
  if (deadline != game.deadline()) {
    POLNODE_RETURN_IF_ERROR(ScheduleTaskDue(ctx.state, deadline, proto::DUE_GAME_DEADLINE, game.task_id()));
  }
  game.set_deadline(deadline);
  return Status::Ok();
}

// Records how a game ended in the game, its claim and the proof's standing; then the next game
// starts or the task settles. No stake moves here: settlement.h pays out once, by the outcome.
Status Resolve(ExecContext& ctx, proto::Task& task, proto::DisputeGame& game, const MoveEffect& effect) {
  const Claim claim = FindClaim(task, game.challenger().key());
  if (!claim) return Status::Corruption("a dispute game names no claim of its task");
  claim.set_result(effect.result);
  if (effect.result == proto::GAME_CHALLENGER_WON) {
    task.set_standing(proto::PROOF_DISPROVEN);
    task.set_disproven_segment(game.segment());
    task.set_disprover(game.challenger().key());
  } else if (effect.result == proto::GAME_DEFENDER_FORFEIT || effect.result == proto::GAME_BOTH_FORFEIT) {
    task.set_standing(proto::PROOF_UNPROVEN);
  }
  SetGameResult(game, effect.result);
  game.set_phase(proto::GAME_RESOLVED);
  game.set_ruling(effect.ruling);
  game.set_resolved_height(ctx.block.height);
  game.set_deadline(0);
  StoreGame(ctx.state, game);
  ctx.Emit("game_resolved", {{"task", ToHex(task.id())},
                             {"challenger", ToHex(game.challenger().key())},
                             {"result", proto::GameResult_Name(effect.result)},
                             {"ruling", game.ruling()}});
  return StartGamesOrSettle(ctx, task);
}

Status ExecuteOpen(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game, const proto::OpenMove& open) {
  const std::uint64_t k = task.spec().checkpoint_interval();
  const std::uint64_t segments = task.spec().total_steps() / k;
  if (open.segment() >= segments) return Status::InvalidArgument("the proof has no segment " + std::to_string(open.segment()));
  POLNODE_ASSIGN_OR_RETURN(Hash256 start_root, HashField(game.start_root(), "start_root"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 end_root, HashField(game.proof_root(), "proof_root"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 start, HashField(open.start_hash(), "start_hash"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 end, HashField(open.end_hash(), "end_hash"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 claimed, HashField(open.claimed_end_hash(), "claimed_end_hash"));
  if (claimed == end) return Status::InvalidArgument("claimed_end_hash equals the proof's: nothing is disputed");
  // The segment starts where the solver trained on from (start_root: the committed proof, with a
  // forced round's falsified checkpoints) and ends where the proof on trial says (proof_root).
  const std::pair<const std::string*, std::uint64_t> checks[] = {{&open.start_proof(), open.segment()},
                                                                 {&open.end_proof(), open.segment() + 1}};
  const Hash256* leaves[] = {&start, &end};
  const Hash256* roots[] = {&start_root, &end_root};
  for (int i = 0; i < 2; ++i) {
    Result<consensus::MerkleProof> proof = ProofField(*checks[i].first, "proof");
    if (!proof.ok() || proof->leaf_index != checks[i].second || proof->leaf_count != segments + 1 ||
        !consensus::VerifyMerkleProof(*roots[i], *leaves[i], *proof).ok()) {
      return Status::InvalidArgument(i == 0 ? "start_proof does not prove that checkpoint against the game's start_root"
                                            : "end_proof does not prove that checkpoint against the game's proof_root");
    }
  }
  game.set_segment(open.segment());
  game.set_first_step(open.segment() * k);
  game.set_lo(0);
  game.set_hi(k);
  game.set_lo_hash(open.start_hash());
  game.mutable_defender()->set_hi_hash(open.end_hash());
  game.mutable_challenger()->set_hi_hash(open.claimed_end_hash());
  if (k == 1) {
    game.set_phase(proto::GAME_GRAPH);
    game.set_depth(consensus::GameTreeDepth(task.spec().step_leaf_count()));
    game.set_level(game.depth());
    game.set_node_index(0);
  } else {
    game.set_phase(proto::GAME_STEPS);
  }
  return NextRound(ctx, game);
}

// Records `side`'s level-1 hash; once both moved, narrows the range.
Status ExecuteStep(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game, proto::GameSide& side,
                   const proto::StepMove& move) {
  POLNODE_RETURN_IF_ERROR(HashField(move.state_hash(), "state_hash").status());
  side.set_hash(move.state_hash());
  side.set_moved(true);
  if (!game.challenger().moved() || !game.defender().moved()) return Status::Ok();
  const std::uint64_t mid = game.lo() + (game.hi() - game.lo()) / 2;
  if (game.challenger().hash() == game.defender().hash()) {
    game.set_lo(mid);
    game.set_lo_hash(game.challenger().hash());
  } else {
    game.set_hi(mid);
    game.mutable_challenger()->set_hi_hash(game.challenger().hash());
    game.mutable_defender()->set_hi_hash(game.defender().hash());
  }
  if (game.hi() - game.lo() == 1) {
    game.set_phase(proto::GAME_GRAPH);
    game.set_depth(consensus::GameTreeDepth(task.spec().step_leaf_count()));
    game.set_level(game.depth());
    game.set_node_index(0);
  }
  return NextRound(ctx, game);
}

// Records `side`'s children; once both moved, descends one level.
Status ExecuteGraph(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game, proto::GameSide& side,
                    const proto::GraphMove& move) {
  POLNODE_ASSIGN_OR_RETURN(Hash256 left, HashField(move.left(), "left"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 right, HashField(move.right(), "right"));
  const Hash256 node = consensus::MerkleNodeHash(left, right);
  if (game.level() == game.depth()) {
    // The first round: the children define the party's root, which must hold its level-1 claim
    // for the state after the step as the last leaf.
    if (move.last_leaf_siblings_size() != static_cast<int>(game.depth())) {
      return Status::InvalidArgument("the first graph move must prove the last leaf with " +
                                     std::to_string(game.depth()) + " siblings");
    }
    POLNODE_ASSIGN_OR_RETURN(std::vector<Hash256> siblings, SiblingsField(move.last_leaf_siblings()));
    POLNODE_ASSIGN_OR_RETURN(Hash256 claim, HashField(side.hi_hash(), "level-1 claim"));
    if (consensus::ClimbGameTree(claim, task.spec().step_leaf_count() - 1, siblings) != node) {
      return Status::InvalidArgument("the tree's last leaf is not the party's claimed state after the step");
    }
  } else {
    if (move.last_leaf_siblings_size() != 0) return Status::InvalidArgument("only the first graph move proves the last leaf");
    if (ToBytes(node) != side.hash()) return Status::InvalidArgument("the children do not hash to the party's current node");
  }
  side.set_left(move.left());
  side.set_right(move.right());
  side.set_moved(true);
  if (!game.challenger().moved() || !game.defender().moved()) return Status::Ok();
  proto::GraphRound* round = game.add_graph_rounds();
  round->set_challenger_left(game.challenger().left());
  round->set_challenger_right(game.challenger().right());
  round->set_defender_left(game.defender().left());
  round->set_defender_right(game.defender().right());
  const bool go_left = game.challenger().left() != game.defender().left();
  round->set_went_left(go_left);
  for (proto::GameSide* s : {game.mutable_challenger(), game.mutable_defender()}) {
    s->set_hash(go_left ? s->left() : s->right());
  }
  game.set_node_index(2 * game.node_index() + (go_left ? 0 : 1));
  game.set_level(game.level() - 1);
  if (game.level() == 0) {
    game.set_leaf(game.node_index());
    // An operator's output is ruled tile by tile: first the descent inside it.
    const std::uint64_t s = task.spec().state_tensor_count();
    const std::uint64_t n = task.spec().step_leaf_count();
    const bool node_output = game.leaf() >= s + 2 && game.leaf() + 1 < n;
    game.set_phase(node_output ? proto::GAME_TILES : proto::GAME_REFEREE);
  }
  return NextRound(ctx, game);
}

// The disputed tile's chain is set up once the descent inside the output reaches a block: the
// referee rules at once when the whole chain fits one ruling (or there is none, or the block is
// padding), else the chain bisection starts.
void EnterChain(const ExecContext& ctx, proto::DisputeGame& game, const kernels::TileKernel& kernel,
                const proto::PinpointNode& node) {
  for (proto::GameSide* side : {game.mutable_challenger(), game.mutable_defender()}) {
    side->set_chain_hi_hash(side->tile_hash());
  }
  game.set_chain_lo(0);
  game.clear_chain_lo_hash();
  if (game.tile() >= kernel.grid().block_count()) {
    game.set_chain_units(0);
    game.set_chain_hi(0);
    game.set_phase(proto::GAME_REFEREE);
    return;
  }
  const std::uint64_t units = static_cast<std::uint64_t>(kernel.units());
  game.set_chain_units(units);
  game.set_chain_hi(units);
  const bool fits = units <= 1 || BoxFits(kernel, node, {game.tile(), 0, units}, RulingBudgetOf(ctx.params));
  game.set_phase(fits ? proto::GAME_REFEREE : proto::GAME_CHAIN);
}

// The node descriptor of a first tile move, proven against the graph root and writing the
// disputed leaf.
Result<proto::PinpointNode> TileDescriptor(const proto::Task& task, const proto::DisputeGame& game,
                                           const proto::TileMove& move) {
  proto::PinpointDescriptor descriptor;
  if (!descriptor.ParseFromString(move.node_descriptor()) || EncodeRecord(descriptor) != move.node_descriptor() ||
      !descriptor.has_node()) {
    return Status::InvalidArgument("node_descriptor is not a canonical operator node descriptor");
  }
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, ProofField(move.node_descriptor_proof(), "node_descriptor_proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(task.spec().graph_root(), "graph_root"));
  if (proof.leaf_index + 1 >= proof.leaf_count ||
      !consensus::VerifyMerkleProof(root, consensus::Sha256(move.node_descriptor()), proof).ok()) {
    return Status::InvalidArgument("node_descriptor is not an operator node of the task's graph");
  }
  const proto::PinpointNode& node = descriptor.node();
  if (game.leaf() < node.first_output_leaf() ||
      game.leaf() - node.first_output_leaf() >= static_cast<std::uint64_t>(node.outputs_size())) {
    return Status::InvalidArgument("the descriptor's node does not write the disputed leaf");
  }
  return node;
}

// Records `side`'s block-tree children (and in the first round its block root); once both moved,
// descends one level; at a block, sets up the tile's chain.
Status ExecuteTile(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game, proto::GameSide& side,
                   const proto::TileMove& move) {
  const bool first = side.block_root().empty();
  const std::uint64_t step = game.first_step() + game.lo();
  if (first) {
    POLNODE_ASSIGN_OR_RETURN(proto::PinpointNode node, TileDescriptor(task, game, move));
    if (!game.node_descriptor().empty() && game.node_descriptor() != move.node_descriptor()) {
      // Only a broken graph has two; the first one posted stands.
      return Status::InvalidArgument("the other party's descriptor for this leaf stands");
    }
    const std::uint32_t output = static_cast<std::uint32_t>(game.leaf() - node.first_output_leaf());
    Result<kernels::TileKernel> kernel = TileKernelOf(node, output, step);
    if (!kernel.ok()) return Status::InvalidArgument("the disputed node cannot be refereed: " + kernel.status().message());
    POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(move.block_root(), "block_root"));
    POLNODE_ASSIGN_OR_RETURN(Hash256 claim, HashField(side.hash(), "the party's leaf"));
    if (consensus::TensorHashFromBlockRoot(kernel->output_shape(), root) != claim) {
      return Status::InvalidArgument("block_root with the output's dims does not give the party's leaf");
    }
    const std::uint32_t depth = consensus::GameTreeDepth(kernel->grid().block_count());
    if (depth == 0) {
      if (!move.left().empty() || !move.right().empty()) {
        return Status::InvalidArgument("a one-block output has no children to reveal");
      }
    } else {
      POLNODE_ASSIGN_OR_RETURN(Hash256 left, HashField(move.left(), "left"));
      POLNODE_ASSIGN_OR_RETURN(Hash256 right, HashField(move.right(), "right"));
      if (consensus::MerkleNodeHash(left, right) != root) {
        return Status::InvalidArgument("the children do not hash to the party's block root");
      }
    }
    if (game.node_descriptor().empty()) {
      game.set_node_descriptor(move.node_descriptor());
      game.set_output(output);
      game.set_tile_depth(depth);
      game.set_tile_level(depth);
      game.set_tile(0);
    }
    side.set_block_root(move.block_root());
    side.set_tile_hash(move.block_root());
  } else {
    if (!move.node_descriptor().empty() || !move.node_descriptor_proof().empty() || !move.block_root().empty()) {
      return Status::InvalidArgument("only the first tile move gives the descriptor and the block root");
    }
    POLNODE_ASSIGN_OR_RETURN(Hash256 left, HashField(move.left(), "left"));
    POLNODE_ASSIGN_OR_RETURN(Hash256 right, HashField(move.right(), "right"));
    if (ToBytes(consensus::MerkleNodeHash(left, right)) != side.tile_hash()) {
      return Status::InvalidArgument("the children do not hash to the party's current block-tree node");
    }
  }
  side.set_tile_left(move.left());
  side.set_tile_right(move.right());
  side.set_moved(true);
  if (!game.challenger().moved() || !game.defender().moved()) return Status::Ok();
  if (game.tile_level() > 0) {
    const bool go_left = game.challenger().tile_left() != game.defender().tile_left();
    for (proto::GameSide* s : {game.mutable_challenger(), game.mutable_defender()}) {
      s->set_tile_hash(go_left ? s->tile_left() : s->tile_right());
    }
    game.set_tile(2 * game.tile() + (go_left ? 0 : 1));
    game.set_tile_level(game.tile_level() - 1);
  }
  if (game.tile_level() == 0) {
    proto::PinpointDescriptor descriptor;
    if (!descriptor.ParseFromString(game.node_descriptor())) return Status::Internal("the game's descriptor does not parse");
    POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel, TileKernelOf(descriptor.node(), game.output(), step));
    EnterChain(ctx, game, kernel, descriptor.node());
  }
  return NextRound(ctx, game);
}

// Records `side`'s chain state hash at the midpoint; once both moved, narrows the range, and stops
// where the range fits one ruling or is one unit.
Status ExecuteChain(ExecContext& ctx, proto::DisputeGame& game, proto::GameSide& side, const proto::ChainMove& move) {
  POLNODE_RETURN_IF_ERROR(HashField(move.state_hash(), "state_hash").status());
  side.set_chain_hash(move.state_hash());
  side.set_moved(true);
  if (!game.challenger().moved() || !game.defender().moved()) return Status::Ok();
  const std::uint64_t mid = game.chain_lo() + (game.chain_hi() - game.chain_lo()) / 2;
  if (game.challenger().chain_hash() == game.defender().chain_hash()) {
    game.set_chain_lo(mid);
    game.set_chain_lo_hash(game.challenger().chain_hash());
  } else {
    game.set_chain_hi(mid);
    for (proto::GameSide* s : {game.mutable_challenger(), game.mutable_defender()}) s->set_chain_hi_hash(s->chain_hash());
  }
  proto::PinpointDescriptor descriptor;
  if (!descriptor.ParseFromString(game.node_descriptor())) return Status::Internal("the game's descriptor does not parse");
  POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel,
                           TileKernelOf(descriptor.node(), game.output(), game.first_step() + game.lo()));
  const TileBox box{game.tile(), game.chain_lo(), game.chain_hi()};
  if (box.hi - box.lo <= 1 || BoxFits(kernel, descriptor.node(), box, RulingBudgetOf(ctx.params))) {
    game.set_phase(proto::GAME_REFEREE);
  }
  return NextRound(ctx, game);
}

Result<MoveEffect> ExecuteReferee(const proto::Task& task, proto::DisputeGame& game, const proto::RefereeMove& move) {
  const bool tile = !game.node_descriptor().empty();
  POLNODE_ASSIGN_OR_RETURN(Hash256 truth, tile ? RefereeTile(task.spec(), game, move) : RefereeLeaf(task.spec(), game, move));
  game.set_true_leaf(ToBytes(truth));
  // A tile ruling names the state at the end of the disputed box; a leaf ruling, the leaf.
  const std::string& defender_claim = tile ? game.defender().chain_hi_hash() : game.defender().hash();
  const std::string& challenger_claim = tile ? game.challenger().chain_hi_hash() : game.challenger().hash();
  const bool defender_right = game.true_leaf() == defender_claim;
  const bool challenger_right = game.true_leaf() == challenger_claim;
  MoveEffect effect;
  effect.ruled = true;
  effect.result = defender_right ? proto::GAME_DEFENDER_WON : proto::GAME_CHALLENGER_WON;
  std::string where = "leaf " + std::to_string(game.leaf()) + " of step " + std::to_string(game.first_step() + game.lo());
  if (tile) {
    where += ", block " + std::to_string(game.tile()) + " of output " + std::to_string(game.output());
    if (game.chain_units() > 0) {
      where += ", units [" + std::to_string(game.chain_lo()) + ", " + std::to_string(game.chain_hi()) + ") of " +
               std::to_string(game.chain_units());
    }
  }
  effect.ruling = where + ": the referee computed " + consensus::ToHex(truth) + ", " +
                  (defender_right ? "the defender's" : challenger_right ? "the challenger's" : "neither party's") +
                  " value";
  return effect;
}

// The running game of `task` that `challenger` plays; kFailedPrecondition when none runs.
Result<proto::DisputeGame> RunningGame(const ExecContext& ctx, const proto::Task& task, std::string_view challenger) {
  if (task.status() != proto::TASK_DISPUTED) return Status::FailedPrecondition("the task is not in a dispute game");
  POLNODE_ASSIGN_OR_RETURN(proto::DisputeGame game, LoadGame(ctx.state, task.id(), challenger));
  if (game.phase() == proto::GAME_RESOLVED) return Status::FailedPrecondition("that dispute game is already decided");
  return game;
}

}  // namespace

Result<proto::DisputeGame> NewGame(ExecContext& ctx, const proto::Task& task, std::string_view challenger,
                                   bool challenger_is_verifier, std::string_view proof_root,
                                   std::string_view start_root) {
  proto::DisputeGame game;
  game.set_task_id(task.id());
  game.mutable_challenger()->set_key(std::string(challenger));
  game.mutable_defender()->set_key(task.solver());
  game.set_challenger_is_verifier(challenger_is_verifier);
  game.set_proof_root(std::string(proof_root));
  game.set_start_root(std::string(start_root));
  game.set_phase(proto::GAME_OPENING);
  game.set_opened_height(ctx.block.height);
  game.set_round(0);
  POLNODE_RETURN_IF_ERROR(NextRound(ctx, game));
  return game;
}

void SetGameResult(proto::DisputeGame& game, proto::GameResult result) {
  const bool challenger_won = result == proto::GAME_CHALLENGER_WON || result == proto::GAME_DEFENDER_FORFEIT;
  game.set_challenger_won(challenger_won);
  game.set_forfeit(result == proto::GAME_CHALLENGER_FORFEIT || result == proto::GAME_DEFENDER_FORFEIT ||
                   result == proto::GAME_BOTH_FORFEIT);
  game.set_both_forfeited(result == proto::GAME_BOTH_FORFEIT);
  if (result == proto::GAME_BOTH_FORFEIT) {
    game.clear_winner();
    game.clear_loser();
    return;
  }
  game.set_winner(challenger_won ? game.challenger().key() : game.defender().key());
  game.set_loser(challenger_won ? game.defender().key() : game.challenger().key());
}

proto::GameResult GameResultOf(const proto::DisputeGame& game) {
  if (game.phase() != proto::GAME_RESOLVED) return proto::GAME_RESULT_NONE;
  if (game.both_forfeited()) return proto::GAME_BOTH_FORFEIT;
  if (game.forfeit()) return game.challenger_won() ? proto::GAME_DEFENDER_FORFEIT : proto::GAME_CHALLENGER_FORFEIT;
  return game.challenger_won() ? proto::GAME_CHALLENGER_WON : proto::GAME_DEFENDER_WON;
}

Status StartGamesOrSettle(ExecContext& ctx, proto::Task& task) {
  const std::vector<Claim> claims = Claims(task);
  const bool fallen = task.standing() == proto::PROOF_DISPROVEN || task.standing() == proto::PROOF_UNPROVEN;
  for (const Claim& claim : claims) {
    if (claim.result() != proto::GAME_RESULT_NONE) continue;
    if (fallen) {
      // The proof already fell: the claim is right without a game.
      claim.set_result(proto::GAME_NOT_PLAYED);
      continue;
    }
    if (task.status() != proto::TASK_DISPUTED) {
      task.set_status(proto::TASK_DISPUTED);
      task.set_deadline(0);
      ctx.Emit("task_disputed", {{"task", ToHex(task.id())}});
    }
    POLNODE_ASSIGN_OR_RETURN(proto::DisputeGame game,
                             NewGame(ctx, task, claim.key(), !claim.slots.empty(), task.proof_root(),
                                     task.forced_root().empty() ? task.proof_root() : task.forced_root()));
    StoreGame(ctx.state, game);
    StoreTask(ctx.state, task);
    ctx.Emit("game_started", {{"task", ToHex(task.id())},
                              {"challenger", ToHex(game.challenger().key())},
                              {"defender", ToHex(game.defender().key())}});
    return Status::Ok();
  }
  return SettleAfterGames(ctx, task);
}

Result<MoveEffect> ApplyMove(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game,
                             std::string_view signer, std::string_view payload, const proto::DisputeMoveTx& msg) {
  if (msg.round() != game.round()) {
    return Status::FailedPrecondition("the game is at round " + std::to_string(game.round()) + ", not " +
                                      std::to_string(msg.round()));
  }
  const bool is_challenger = signer == game.challenger().key();
  const bool is_defender = signer == game.defender().key();
  proto::GameSide* side = is_challenger ? game.mutable_challenger() : game.mutable_defender();
  if (msg.has_referee()) {
    // Evidence is checked on its own merits, so anyone may post it.
    if (game.phase() != proto::GAME_REFEREE) return Status::FailedPrecondition("the game is not at the referee");
  } else {
    if (!is_challenger && !is_defender) return Status::PermissionDenied("the signer is not a party to this game");
    if (side->moved()) return Status::AlreadyExists("this party already moved in this round");
  }
  proto::MoveRecord* record = game.add_moves();
  record->set_height(ctx.block.height);
  record->set_signer(std::string(signer));
  record->set_payload(std::string(payload));
  switch (msg.move_case()) {
    case proto::DisputeMoveTx::kOpen:
      if (game.phase() != proto::GAME_OPENING) return Status::FailedPrecondition("the game is not opening");
      if (!is_challenger) return Status::PermissionDenied("only the challenger opens the game");
      POLNODE_RETURN_IF_ERROR(ExecuteOpen(ctx, task, game, msg.open()));
      return MoveEffect{};
    case proto::DisputeMoveTx::kStep:
      if (game.phase() != proto::GAME_STEPS) return Status::FailedPrecondition("the game is not bisecting steps");
      POLNODE_RETURN_IF_ERROR(ExecuteStep(ctx, task, game, *side, msg.step()));
      return MoveEffect{};
    case proto::DisputeMoveTx::kGraph:
      if (game.phase() != proto::GAME_GRAPH) return Status::FailedPrecondition("the game is not descending the graph");
      POLNODE_RETURN_IF_ERROR(ExecuteGraph(ctx, task, game, *side, msg.graph()));
      return MoveEffect{};
    case proto::DisputeMoveTx::kTile:
      if (game.phase() != proto::GAME_TILES) return Status::FailedPrecondition("the game is not descending an operator's output");
      POLNODE_RETURN_IF_ERROR(ExecuteTile(ctx, task, game, *side, msg.tile()));
      return MoveEffect{};
    case proto::DisputeMoveTx::kChain:
      if (game.phase() != proto::GAME_CHAIN) return Status::FailedPrecondition("the game is not bisecting a tile's chain");
      POLNODE_RETURN_IF_ERROR(ExecuteChain(ctx, game, *side, msg.chain()));
      return MoveEffect{};
    case proto::DisputeMoveTx::kReferee:
      return ExecuteReferee(task, game, msg.referee());
    default:
      return Status::InvalidArgument("the move is empty");
  }
}

MoveEffect TimeoutEffect(const proto::DisputeGame& game) {
  MoveEffect effect;
  effect.ruled = true;
  const bool challenger_moved = game.challenger().moved();
  const bool defender_moved = game.defender().moved();
  switch (game.phase()) {
    case proto::GAME_OPENING:
      effect.result = proto::GAME_CHALLENGER_FORFEIT;
      effect.ruling = "timeout: the challenger did not open the game";
      break;
    case proto::GAME_REFEREE:
      // The referee's inputs are the solver's data, which defends its own proof; the challenger
      // may post them too (a wrong proof then loses at the referee), but it owes nothing here.
      effect.result = proto::GAME_DEFENDER_FORFEIT;
      effect.ruling = "timeout: nobody posted the referee's evidence, which the solver owes";
      break;
    default:
      if (!challenger_moved && !defender_moved) {
        effect.result = proto::GAME_BOTH_FORFEIT;
        effect.ruling = "timeout: neither party moved in round " + std::to_string(game.round());
      } else {
        effect.result = challenger_moved ? proto::GAME_DEFENDER_FORFEIT : proto::GAME_CHALLENGER_FORFEIT;
        effect.ruling = std::string("timeout: the ") + (challenger_moved ? "solver" : "challenger") + " missed round " +
                        std::to_string(game.round());
      }
  }
  return effect;
}

Status ExecuteDisputeMove(ExecContext& ctx, std::string_view signer, std::string_view payload,
                          const proto::DisputeMoveTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  POLNODE_ASSIGN_OR_RETURN(proto::DisputeGame game, RunningGame(ctx, task, msg.challenger()));
  POLNODE_ASSIGN_OR_RETURN(MoveEffect effect, ApplyMove(ctx, task, game, signer, payload, msg));
  if (effect.ruled) return Resolve(ctx, task, game, effect);
  ctx.Emit("game_move", {{"task", ToHex(task.id())},
                         {"challenger", ToHex(game.challenger().key())},
                         {"signer", ToHex(signer)},
                         {"round", std::to_string(msg.round())}});
  StoreGame(ctx.state, game);
  return Status::Ok();
}

Status OnGameDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_DISPUTED) return Status::Ok();
  for (const Claim& claim : Claims(task)) {
    if (claim.result() != proto::GAME_RESULT_NONE) continue;
    POLNODE_ASSIGN_OR_RETURN(proto::DisputeGame game, LoadGame(ctx.state, task.id(), claim.key()));
    if (game.phase() == proto::GAME_RESOLVED || game.deadline() != ctx.block.height) return Status::Ok();
    return Resolve(ctx, task, game, TimeoutEffect(game));
  }
  return Status::Ok();
}

}  // namespace polnode::contracts
