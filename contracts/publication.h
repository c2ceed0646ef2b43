// Data availability is the solver's burden (DESIGN.md section 6). A verifier that cannot get the
// proof's data posts an unavailable verdict; the verdict stands unless the solver publishes, on the
// ledger and within params.publish_window blocks, every checkpoint those verifiers need: for each
// unavailable slot the start and end checkpoints of its segments and of the final segment.
//
// A checkpoint is published with one header (every state tensor's name, shape and tensor hash, and
// the Merkle proof that the state hash they give is the committed leaf) and then its elements in
// chunks of payload::kPublishChunkElements floats, each chunk one transaction that fits the
// envelope limit. A tensor counts once all its chunks are stored and they hash to its header's hash; a
// checkpoint counts once all its tensors do. When nothing is left to publish, the unavailable
// verifiers replay from the ledger (verification.h ReopenVerification). A solver that lets the
// window pass is not paid and loses its lock (settlement.h SettleUnavailable).
//
// The published data stays in the state until the task's records are pruned, so verifiers and
// auditors can read it from any ledger node. With each checkpoint the ledger keeps its state hash
// and the Merkle proof it checked against the committed root: a dispute game's opening move needs
// exactly those (dispute_game.h), so a challenger can open and play a game about a solver whose
// server stays down after publishing. Pruning drops them with the rest.
#ifndef POLNODE_CONTRACTS_PUBLICATION_H_
#define POLNODE_CONTRACTS_PUBLICATION_H_

#include <cstdint>
#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/payloads.h"

namespace polnode::contracts {

/// Moves a task whose verification ended with unavailable verdicts to TASK_PUBLISHING with the
/// checkpoints still to publish, or straight back to verifying when they are all published
/// already. Stores the task.
[[nodiscard]] Status EnterPublishing(ExecContext& ctx, proto::Task& task);

/// task/publish: a header or chunk of a required checkpoint, from the task's solver while the task
/// is publishing. kPermissionDenied for anyone else, kFailedPrecondition outside TASK_PUBLISHING or
/// for a checkpoint not required, kAlreadyExists for a second header or a chunk of a verified
/// tensor, kInvalidArgument for a header that does not prove the committed checkpoint, a chunk of
/// the wrong size, or a chunk completing a tensor whose chunks do not hash to its header's hash
/// (nothing of that transaction is kept; earlier chunks may be sent again to replace bad ones).
[[nodiscard]] Status ExecutePublish(ExecContext& ctx, std::string_view signer, const proto::PublishTx& msg);

/// DUE_PUBLISH_DEADLINE: the publication is incomplete; the unavailable verdicts stand.
[[nodiscard]] Status OnPublishDeadline(ExecContext& ctx, proto::Task& task);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_PUBLICATION_H_
