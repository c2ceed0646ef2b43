// Stakes per role (solver, verifier, whistleblower): bonding from the balance, unbonding with a
// delay, locks held by tasks, and slashing. A stake record keeps `bonded` (locked included),
// `locked` and `unbonding`; only bonded - locked ("free") can be unbonded or locked again.
//
// The verifier set (the keys with verifier stake, sorted) is maintained here so that verifier
// assignment reads one record instead of scanning the store.
#ifndef POLNODE_CONTRACTS_STAKING_H_
#define POLNODE_CONTRACTS_STAKING_H_

#include <cstdint>
#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/locks.h"

namespace polnode::contracts {

/// stake: moves `amount` (> 0) from the signer's balance into its bonded stake for the role.
[[nodiscard]] Status ExecuteStake(ExecContext& ctx, std::string_view signer, const proto::StakeTx& tx);

/// unstake: moves `amount` (> 0) of free stake into unbonding; it returns to the balance at the
/// end of block height + params.unbonding_blocks. kFailedPrecondition if free stake is short.
[[nodiscard]] Status ExecuteUnstake(ExecContext& ctx, std::string_view signer, const proto::UnstakeTx& tx);

/// End of the unbonding delay: moves `amount` from unbonding back to the balance.
/// kInternal if the record holds less unbonding than scheduled (a bookkeeping bug).
[[nodiscard]] Status ReleaseUnbonded(ExecContext& ctx, std::string_view pubkey, proto::Role role, std::uint64_t amount);

/// Bonded minus locked stake of `pubkey` in `role`.
Result<std::uint64_t> FreeStake(const StateStore& state, proto::Role role, std::string_view pubkey);

/// Locks `amount` of free stake for a task. kFailedPrecondition if free stake is short.
[[nodiscard]] Status LockStake(StateStore& state, proto::Role role, std::string_view pubkey, std::uint64_t amount);

/// Releases a lock taken by LockStake. kInternal if less is locked (a bookkeeping bug).
[[nodiscard]] Status UnlockStake(StateStore& state, proto::Role role, std::string_view pubkey, std::uint64_t amount);

/// Destroys a lock: `amount` leaves both locked and bonded stake. The caller must credit it to
/// someone (the rules always name a recipient), which keeps the total supply constant.
/// kInternal if less is locked.
[[nodiscard]] Status SlashLocked(StateStore& state, proto::Role role, std::string_view pubkey, std::uint64_t amount);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_STAKING_H_
