// Level 3 of the pinpoint game (DESIGN.md section 6): the ledger establishes the true value of the
// first leaf two parties dispute, from evidence checked against what both agreed on, and never
// more than one operator's work.
//
// The leaf kinds (dispute.proto's layout, S state tensors, N leaves, step t = the global step the
// state before the disputed step has completed):
//   d >= N         padding: the all-zero hash.
//   d < S          state tensor d of the agreed state before the step: the evidence lists all S
//                  tensor hashes and the state layout descriptor; they must give the agreed state
//                  hash (StateHashFromTensorHashes(t, names, hashes) == game.lo_hash).
//   d = S, S + 1   the batch's images / labels hash: the evidence gives both hashes and a Merkle
//                  proof of BatchLeaf(images, labels) at leaf t of the task's batch_root.
//   d = N - 1      the state after the step: the layout descriptor, and per state tensor the hash
//                  at its value leaf, each proven against an agreed subtree; the true value is
//                  StateHashFromTensorHashes(t + 1, names, hashes).
//   otherwise      output d - first_output_leaf of one operator node: its descriptor, proven
//                  against graph_root, and its input tensors, each hashing (in its source shape)
//                  to an earlier leaf proven against an agreed subtree. The ledger runs the
//                  operator with the CPU reference kernel and hashes the output.
// Agreed subtrees come from the descent transcript: for an earlier leaf j, the left child the
// game did not enter at height AgreedSubtreeHeight(j, d), equal in both parties' trees.
#ifndef POLNODE_CONTRACTS_REFEREE_H_
#define POLNODE_CONTRACTS_REFEREE_H_

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

/// Largest tensor (elements) the referee accepts as an operator input or output.
inline constexpr std::int64_t kMaxRefereeElements = std::int64_t{1} << 26;

/// The true value of leaf game.leaf() of the step game.first_step() + game.lo(), from `evidence`.
/// Precondition: the game is in GAME_REFEREE. kInvalidArgument naming the first check the evidence
/// fails (nothing is decided then); errors of the kernel itself are returned as they are.
[[nodiscard]] Result<consensus::Hash256> RefereeLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                                                     const proto::RefereeMove& evidence);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_REFEREE_H_
