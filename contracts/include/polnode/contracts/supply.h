// The supply invariant: no token is created or destroyed after genesis. Every unit is in exactly
// one holding: an account balance, bonded stake (locked included), unbonding stake, a task's
// escrow, or the jackpot pool; fees move to the proposer's balance and slashes to a named
// recipient or the pool. AuditSupply sums every holding and compares with the genesis total.
#ifndef POLNODE_CONTRACTS_SUPPLY_H_
#define POLNODE_CONTRACTS_SUPPLY_H_

#include <cstdint>

#include "polnode/base/status.h"
#include "polnode/contracts/state_store.h"

namespace polnode::contracts {

struct SupplyReport {
  std::uint64_t genesis_supply = 0;  // fixed at InitChain
  std::uint64_t balances = 0;
  std::uint64_t bonded = 0;
  std::uint64_t unbonding = 0;
  std::uint64_t escrow = 0;
  std::uint64_t jackpot = 0;

  /// Sum of every holding (the audit checked it fits in uint64).
  std::uint64_t total() const { return balances + bonded + unbonding + escrow + jackpot; }
  /// Whether the holdings add up to the genesis supply.
  bool balanced() const { return total() == genesis_supply; }
};

/// Scans every account, stake and task record (O(state size): for tests, `verify-chain` and the
/// supply query, not for block execution). kCorruption if a record does not parse or the sum
/// overflows uint64 (which a balanced state cannot do).
[[nodiscard]] Result<SupplyReport> AuditSupply(const StateStore& state);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_SUPPLY_H_
