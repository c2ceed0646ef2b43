// Balances, the jackpot pool, transfers, and the ante every transaction passes before its payload
// runs (chain id, nonce, fee).
#ifndef POLNODE_CONTRACTS_ACCOUNTS_H_
#define POLNODE_CONTRACTS_ACCOUNTS_H_

#include <cstdint>
#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/state_store.h"

namespace polnode::contracts {

/// The signer of `tx` as raw key bytes, the form the records use.
std::string_view SignerBytes(const VerifiedTx& tx);

/// Adds `amount` to the balance of `pubkey`. kOutOfRange if the balance would overflow.
[[nodiscard]] Status Credit(StateStore& state, std::string_view pubkey, std::uint64_t amount);

/// Takes `amount` from the balance of `pubkey`. kFailedPrecondition if the balance is short;
/// nothing is written then.
[[nodiscard]] Status Debit(StateStore& state, std::string_view pubkey, std::uint64_t amount);

/// Adds `amount` to the forced-error jackpot pool. kOutOfRange on overflow.
[[nodiscard]] Status AddToJackpot(StateStore& state, std::uint64_t amount);

/// Read-only ante for block execution: chain id equals the genesis chain id, nonce equals the
/// signer's next nonce (and is not the last uint64, which could not advance), balance covers
/// params.tx_fee. kInvalidArgument for a foreign chain, kFailedPrecondition for a wrong or
/// exhausted nonce or a short balance.
[[nodiscard]] Status CheckAnte(const VerifiedTx& tx, const StateStore& state, const proto::Params& params,
                               std::string_view chain_id);

/// Applies a passed ante: moves params.tx_fee from the signer to `proposer` and advances the
/// signer's nonce. Precondition: CheckAnte passed on the same state.
[[nodiscard]] Status ChargeAnte(const VerifiedTx& tx, StateStore& state, const proto::Params& params,
                                const PubKey& proposer);

/// transfer: moves `amount` (> 0) from the signer to `to`.
[[nodiscard]] Status ExecuteTransfer(ExecContext& ctx, std::string_view signer, const proto::TransferTx& tx);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_ACCOUNTS_H_
