// The prover's progress file as polnode wrote it before the versioned archive
// (solver/prove_progress.h), for the tests and the fuzz seeds that check it is still read.
#ifndef POLNODE_TESTING_LEGACY_PROGRESS_H_
#define POLNODE_TESTING_LEGACY_PROGRESS_H_

#include <cstdint>
#include <vector>

#include "polnode/solver/prove_progress.h"

namespace polnode::solver::testing {

/// `progress` in the hand-written encoding: String "polnode/pol-progress/v2", Fixed task id,
/// U64 n, n x (Fixed state hash, Fixed blob hash), U64 m, m x U32 loss bits.
std::vector<std::uint8_t> LegacyProgressBytes(const ProveProgress& progress);

}  // namespace polnode::solver::testing

#endif  // POLNODE_TESTING_LEGACY_PROGRESS_H_
