// The stakes a task locks, as the ledger computes them: role daemons use the same rule to know
// whether their free stake suffices before they send a transaction that locks some.
#ifndef POLNODE_CONTRACTS_LOCKS_H_
#define POLNODE_CONTRACTS_LOCKS_H_

#include <cstdint>

#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// The stake a task paying `payment` locks from a participant in `role`:
/// max(min_stake_<role>, payment * <role>_lock_bps / 10000), saturating at 2^64 - 1. Locks grow
/// with the payment they are exposed to, so larger tasks do not make cheating or laziness pay.
/// A role without stake (ROLE_UNSPECIFIED and others) locks 0.
std::uint64_t TaskLock(const proto::Params& params, proto::Role role, std::uint64_t payment);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_LOCKS_H_
