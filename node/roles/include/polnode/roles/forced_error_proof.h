// The solver's forced-error proof (DESIGN.md sections 1 and 7): in a round the solver's secret and
// the ledger's block randomness mark as forced, the solver must commit a proof it knows to be
// wrong, so that verifiers who accept without replaying are caught and lose their stake to the
// jackpot. It reveals the honest proof's root with its secret afterwards.
//
// The wrong proof is the honest one with its final checkpoint and its hidden checkpoints
// (contracts beacon.h HiddenCheckpoints, drawn from the solver's secret) altered (exact mode: one
// weight's lowest mantissa bit flipped; tolerant mode: every weight of the first tensor moved by 1,
// beyond any profiled threshold), re-hashed, re-rooted and re-signed: the final segment is replayed
// by every verifier, so an honest verifier rejects it whatever segments it was drawn, and names the
// drawn segments that end at or start from a hidden checkpoint as well, which a verifier that
// replays only the final segment cannot.
#ifndef POLNODE_ROLES_FORCED_ERROR_PROOF_H_
#define POLNODE_ROLES_FORCED_ERROR_PROOF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"

namespace polnode::node {

/// Writes the forced-error variant of the complete proof in `honest_dir` to `out_dir` (manifest,
/// task file and blobs, the honest blobs among them; idempotent: the same bytes every time), with
/// its final checkpoint and the checkpoints `hidden` altered, signed with `key`, and returns its
/// Merkle root. Errors: the honest proof cannot be read or decoded (its errors), a hidden
/// checkpoint out of range (kInvalidArgument), the disk.
[[nodiscard]] Result<consensus::Hash256> MakeForcedErrorProof(const std::string& honest_dir, const std::string& out_dir,
                                                              const std::vector<std::uint64_t>& hidden,
                                                              const consensus::SecretKey& key);

/// The forced-round fields of the RevealTx (contracts settlement.h) for the honest proof in
/// `honest_dir` and its forced-error variant in `forced_dir` (MakeForcedErrorProof with `hidden`):
/// each hidden checkpoint's committed and honest hashes on its path in the committed proof with
/// the ones before it restored, the committed and honest final hashes and the final leaf's path in
/// the honest proof. Errors: either proof cannot be read, the two disagree in their length.
[[nodiscard]] Status FillForcedReveal(const std::string& honest_dir, const std::string& forced_dir,
                                      const std::vector<std::uint64_t>& hidden, proto::RevealTx& reveal);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_FORCED_ERROR_PROOF_H_
