// Auditing a dispute game (DESIGN.md section 6, "dispute replay"): re-execute every recorded move
// of a game against the task it was played on (every level: steps, graph, the descent inside an
// operator's output and its tile's chain), including the referee's tile of the operator on the CPU
// reference kernel, and compare what that decides with what the ledger recorded.
#ifndef POLNODE_CONTRACTS_DISPUTE_AUDIT_H_
#define POLNODE_CONTRACTS_DISPUTE_AUDIT_H_

#include <optional>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

struct GameAudit {
  /// The game as re-executed from its recorded moves (and, if it ended by timeout, the timeout
  /// rule applied to where the moves left it).
  proto::DisputeGame replayed;
  bool decided = false;  // the re-execution reached a decision
  proto::GameResult result = proto::GAME_RESULT_NONE;  // ... and this one
  std::string ruling;
  /// The operator whose output the game descended into (block tree, chain, referee's tile), when
  /// the disputed leaf is an operator's output.
  std::optional<proto::PinpointNode> node;
  /// Every way the re-execution differs from the ledger's record; empty when they agree.
  std::vector<std::string> differences;
};

/// Re-executes `recorded` (a game of `task`, read from a ledger) from its start. `params` are the
/// chain's (for the move window). Errors only for a record that cannot be audited at all (no claim
/// of the task matches it); a move that fails on re-execution is a difference, not an error.
[[nodiscard]] Result<GameAudit> AuditGame(const proto::Params& params, const proto::Task& task,
                                          const proto::DisputeGame& recorded);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_DISPUTE_AUDIT_H_
