// The rules of a forced round (protocol v7, docs/protocol.md): which checkpoints the solver's reveal
// must show, and whether a verdict or a whistleblower's challenge was right about the falsified
// checkpoints. Pure functions of the task record, so solvers, verifiers, auditors and the econ
// simulator compute exactly what the ledger computes.
#ifndef POLNODE_CONTRACTS_FORCED_H_
#define POLNODE_CONTRACTS_FORCED_H_

#include <cstdint>
#include <vector>

#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// The checkpoints a forced round's RevealTx must show, ascending and distinct: the end (segment
/// + 1) of every segment covered by a live verdict (a slot that is not absent and gave accept or
/// reject: its drawn segments plus the final one) or by a challenge (Challenge.segments), every
/// segment a challenge named as failed, and the final checkpoint. Precondition: `task` has its
/// segment beacon and verifier slots (the reveal phase).
std::vector<std::uint64_t> RevealCheckpoints(const proto::Task& task);

/// Whether a live slot's verdict was right in a forced round whose forced checkpoints are
/// `task.forced_checkpoints()`: an accept whose covered segments end at no forced checkpoint, or a
/// reject whose failed segments are exactly its covered segments that end at forced checkpoints,
/// each with the digest SegmentDigest(slot key, segment, end), end being the honest hash there
/// (`task.honest_hashes()`, exact mode) or the hash of the indices the solver perturbed there
/// (`task.perturbed_index_hashes()`, tolerant mode: consensus/forced_perturbation.h).
bool VerdictRight(const proto::Task& task, const proto::VerifierSlot& slot);

/// The same test for a whistleblower's challenge (over Challenge.segments). An accept has no
/// counterpart: a challenge always names at least one failed segment.
bool ChallengeCaught(const proto::Task& task, const proto::Challenge& challenge);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_FORCED_H_
