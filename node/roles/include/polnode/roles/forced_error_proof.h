// The solver's forced-error proof (DESIGN.md sections 1 and 7): in a round the solver's secret and
// the ledger's block randomness mark as forced, the solver must commit a proof it knows to be
// wrong, so that verifiers who accept without replaying are caught and lose their stake to the
// jackpot. It reveals the honest proof's root with its secret afterwards.
//
// The wrong proof is the honest one with its final checkpoint altered (exact mode: one weight's
// lowest mantissa bit flipped; tolerant mode: every weight of the first tensor moved by 1, beyond
// any profiled threshold), re-hashed, re-rooted and re-signed: the final segment is replayed by
// every verifier, so an honest verifier rejects it whatever segments it was drawn.
#ifndef POLNODE_ROLES_FORCED_ERROR_PROOF_H_
#define POLNODE_ROLES_FORCED_ERROR_PROOF_H_

#include <string>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"

namespace polnode::node {

/// Writes the forced-error variant of the complete proof in `honest_dir` to `out_dir` (manifest,
/// task file and blobs; idempotent: the same bytes every time) signed with `key`, and returns its
/// Merkle root. Errors: the honest proof cannot be read or decoded (its errors), the disk.
[[nodiscard]] Result<consensus::Hash256> MakeForcedErrorProof(const std::string& honest_dir, const std::string& out_dir,
                                                              const consensus::SecretKey& key);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_FORCED_ERROR_PROOF_H_
