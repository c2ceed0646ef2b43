// DisputeDuty: a role daemon's part in the dispute games of one task (DESIGN.md section 6). Every
// pass reads the task's games from the ledger and, in each unresolved game where this role's key
// is the challenger or the defender, posts the move verifier::DisputePlayer computes for the
// current round. Moves are duties named by task, game and round, so a restarted daemon never
// posts one twice; the player itself rebuilds everything from the ledger's record and the proof.
#ifndef POLNODE_ROLES_DISPUTE_DUTY_H_
#define POLNODE_ROLES_DISPUTE_DUTY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/kernels/backend.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_spec.h"
#include "polnode/rpc/ledger_client.h"

namespace polnode::verifier {
class DisputePlayer;
}

namespace polnode::node {

/// Who plays and with what.
struct DisputeParty {
  solver::TaskSpec document;                 // the task document, checked against the ledger's task
  const solver::ImageDataset* data = nullptr;  // outlives the duty
  kernels::Backend* backend = nullptr;         // outlives the duty
  /// A cheating party (the devnet's cheater) replays with its tamper, so its answers stay
  /// consistent with the proof it committed.
  std::optional<solver::TamperSpec> tamper;
  /// The challenger looks for the first wrong segment among these first (its own replayed ones).
  std::vector<std::uint64_t> suspect_segments;
  /// Where the committed proof's blobs are fetched to (a blob cache; created on need).
  std::string cache_dir;
  /// Reads checkpoints the solver published on the ledger, for those its server does not hand
  /// over (outlives the duty; null: the server only).
  const LedgerClient* ledger = nullptr;
};

/// The party a role daemon plays as: the task's `document` and `data`, `backend`, and from `ctx`
/// the daemon's blob cache (home/cache) and its ledger. The caller adds its suspects or tamper.
DisputeParty DaemonParty(const RoleContext& ctx, solver::TaskSpec document, const solver::ImageDataset* data,
                         kernels::Backend* backend);

class DisputeDuty {
 public:
  explicit DisputeDuty(DisputeParty party);
  ~DisputeDuty();
  DisputeDuty(DisputeDuty&&) noexcept;
  DisputeDuty& operator=(DisputeDuty&&) noexcept;

  /// One pass over `task`'s games (GET /v1/tasks/{id}/games): posts this party's next move in each
  /// unresolved game it plays, as duty "move-<task 16 hex>-<challenger 16 hex>-<round>". The
  /// committed proof's manifest and blobs are fetched from task.proof_uri on first need and checked
  /// against the game's start_root (segments start from its checkpoints); after a forced round's
  /// reveal the games' proof_root is the result proof's, whose manifest (the ends of segments) is
  /// fetched from the same server (ResultProofUri). A challenger whose proof server does not
  /// answer plays from the checkpoints the solver published on the ledger instead (their state
  /// hashes, Merkle proofs and states: contracts' publication.h), over the segments whose both ends
  /// are published; after a forced round's reveal a segment starts at a published checkpoint and
  /// ends at one the reveal showed (its result hash and proof, kept by the ledger). The defender
  /// plays only from the server. Returns the number of moves sent in this pass. kUnavailable when
  /// the ledger cannot be reached, kFailedPrecondition when the proof server cannot and the ledger
  /// holds nothing to play from.
  [[nodiscard]] Result<int> Poll(RoleContext& ctx, const proto::Task& task);

 private:
  struct State;
  // Builds the player for the proof on trial in `task`.
  [[nodiscard]] Status Prepare(RoleContext& ctx, const proto::Task& task, const proto::DisputeGame& game);
  // Builds the challenger's player from the ledger's published checkpoints of `task`, and when the
  // game is over a forced round's result proof (`forced`), from the reveal's result proofs too.
  [[nodiscard]] Status PrepareFromLedger(RoleContext& ctx, const proto::Task& task, const proto::DisputeGame& game,
                                         bool forced);
  std::unique_ptr<State> state_;
};

}  // namespace polnode::node

#endif  // POLNODE_ROLES_DISPUTE_DUTY_H_
