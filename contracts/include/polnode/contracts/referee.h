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
//   otherwise      output game.output() of one operator node, ruled tile by tile (RefereeTile):
//                  the game has descended to one block of the output (the tile) and, where its
//                  chain is long, to units [chain_lo, chain_hi) of the tile's chain (ruling.h).
//                  The evidence gives, per operator input, the input's block root (which with the
//                  source dims must hash to the input's earlier leaf, proven against an agreed
//                  subtree), the blocks the box reads (ruling.h BoxBlocks; for an input read
//                  where token ids point, ExactBoxBlocks from the ids' proven blocks) and their
//                  multiproof;
//                  and, when chain_lo > 0, the chain state after chain_lo units (its hash must be
//                  the agreed chain_lo_hash). The ledger advances the state through the box's
//                  units with the reference tile kernel (kernels/tile.h) and names the state
//                  after chain_hi units by its chain hash, or, when chain_hi is the chain's end,
//                  the tile by its block leaf hash.
// Agreed subtrees come from the descent transcript: for an earlier leaf j, the left child the
// game did not enter at height AgreedSubtreeHeight(j, d), equal in both parties' trees.
#ifndef POLNODE_CONTRACTS_REFEREE_H_
#define POLNODE_CONTRACTS_REFEREE_H_

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/ruling.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

/// The true value of leaf game.leaf() of the step game.first_step() + game.lo(), from `evidence`,
/// for every leaf but an operator's output. Precondition: the game is in GAME_REFEREE without a
/// node descriptor. kInvalidArgument naming the first check the evidence fails (nothing is decided
/// then).
[[nodiscard]] Result<consensus::Hash256> RefereeLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                                                     const proto::RefereeMove& evidence);

/// The true value at the end of the disputed box of an operator output's tile: the chain hash of
/// the tile's state after game.chain_hi() units, or its block leaf hash when that is the chain's
/// end (the all-zero hash for a padding block). Precondition: the game is in GAME_REFEREE with the
/// node descriptor set. kInvalidArgument naming the first check the evidence fails; errors of the
/// tile kernel are returned as they are.
[[nodiscard]] Result<consensus::Hash256> RefereeTile(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                                                     const proto::RefereeMove& evidence);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_REFEREE_H_
