#include "polnode/contracts/dispute_audit.h"

#include <vector>

#include "dispute_game.h"
#include "exec_context.h"
#include "keys.h"
#include "polnode/contracts/state_store.h"

namespace polnode::contracts {
namespace {

// Compares one field of the replayed and recorded games, noting a difference.
template <typename T>
void Compare(std::vector<std::string>& differences, std::string_view field, const T& replayed, const T& recorded) {
  if (replayed == recorded) return;
  if constexpr (std::is_same_v<T, std::string>) {
    differences.push_back(std::string(field) + ": re-executed " + ToHex(replayed) + ", the ledger has " +
                          ToHex(recorded));
  } else {
    differences.push_back(std::string(field) + ": re-executed " + std::to_string(replayed) + ", the ledger has " +
                          std::to_string(recorded));
  }
}

}  // namespace

Result<GameAudit> AuditGame(const proto::Params& params, const proto::Task& task, const proto::DisputeGame& recorded) {
  const std::string& challenger = recorded.challenger().key();
  bool known = false;
  for (const proto::VerifierSlot& s : task.verifiers()) known |= recorded.challenger_is_verifier() && s.verifier() == challenger;
  for (const proto::Challenge& c : task.challenges()) known |= !recorded.challenger_is_verifier() && c.challenger() == challenger;
  if (!known || recorded.task_id() != task.id()) {
    return Status::InvalidArgument("the game names no claim of this task");
  }
  if (recorded.pruned()) {
    return Status::FailedPrecondition("the game's moves were pruned after the audit window (task settled at height " +
                                      std::to_string(task.settle_height()) + "); replay it from an archive node");
  }
  // A scratch store: the game's deadlines are scheduled into it and thrown away.
  MemoryStateStore scratch;
  std::vector<Event> events;
  BlockContext block;
  block.height = recorded.opened_height();
  ExecContext ctx{block, params, scratch, events};
  GameAudit audit;
  POLNODE_ASSIGN_OR_RETURN(audit.replayed,
                           NewGame(ctx, task, challenger, recorded.challenger_is_verifier(), recorded.proof_root(),
                                   recorded.start_root()));
  for (int i = 0; i < recorded.moves_size() && !audit.decided; ++i) {
    const proto::MoveRecord& record = recorded.moves(i);
    block.height = record.height();
    proto::DisputeMoveTx msg;
    if (!msg.ParseFromString(record.payload())) {
      audit.differences.push_back("move " + std::to_string(i) + " does not parse as a DisputeMoveTx");
      continue;
    }
    Result<MoveEffect> effect = ApplyMove(ctx, task, audit.replayed, record.signer(), record.payload(), msg);
    if (!effect.ok()) {
      audit.differences.push_back("move " + std::to_string(i) + " (height " + std::to_string(record.height()) +
                                  ") was accepted by the ledger but fails here: " + effect.status().ToString());
      continue;
    }
    if (effect->ruled) {
      audit.decided = true;
      audit.result = effect->result;
      audit.ruling = effect->ruling;
    }
  }
  if (!audit.decided && recorded.phase() == proto::GAME_RESOLVED) {
    // No move decided it, so a deadline did: apply the timeout rule where the moves left the game.
    const MoveEffect timeout = TimeoutEffect(audit.replayed);
    audit.decided = true;
    audit.result = timeout.result;
    audit.ruling = timeout.ruling;
  }
  // The operator whose output the game descended into (its tiles and chain).
  proto::PinpointDescriptor descriptor;
  if (!audit.replayed.node_descriptor().empty() && descriptor.ParseFromString(audit.replayed.node_descriptor()) &&
      descriptor.has_node()) {
    audit.node = descriptor.node();
  }
  std::vector<std::string>& d = audit.differences;
  Compare(d, "segment", audit.replayed.segment(), recorded.segment());
  Compare(d, "lo", audit.replayed.lo(), recorded.lo());
  Compare(d, "hi", audit.replayed.hi(), recorded.hi());
  Compare(d, "leaf", audit.replayed.leaf(), recorded.leaf());
  Compare(d, "node descriptor", audit.replayed.node_descriptor(), recorded.node_descriptor());
  Compare(d, "output", audit.replayed.output(), recorded.output());
  Compare(d, "tile", audit.replayed.tile(), recorded.tile());
  Compare(d, "chain lo", audit.replayed.chain_lo(), recorded.chain_lo());
  Compare(d, "chain hi", audit.replayed.chain_hi(), recorded.chain_hi());
  Compare(d, "true leaf", audit.replayed.true_leaf(), recorded.true_leaf());
  if (recorded.phase() == proto::GAME_RESOLVED) {
    const proto::GameResult recorded_result = GameResultOf(recorded);
    if (audit.result != recorded_result) {
      d.push_back("result: re-executed " + proto::GameResult_Name(audit.result) + ", the ledger has " +
                  proto::GameResult_Name(recorded_result));
    }
    if (audit.ruling != recorded.ruling()) {
      d.push_back("ruling: re-executed \"" + audit.ruling + "\", the ledger has \"" + recorded.ruling() + "\"");
    }
  } else if (audit.decided) {
    d.push_back("the re-execution decided the game, the ledger has it still running");
  }
  return audit;
}

}  // namespace polnode::contracts
