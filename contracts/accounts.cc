#include "accounts.h"

#include <limits>
#include <string>

#include "checked_math.h"
#include "keys.h"
#include "records.h"

namespace polnode::contracts {

std::string_view SignerBytes(const VerifiedTx& tx) {
  return {reinterpret_cast<const char*>(tx.signer.data()), tx.signer.size()};
}

Status Credit(StateStore& state, std::string_view pubkey, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, LoadAccount(state, pubkey));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t balance, CheckedAdd(account.balance(), amount, "balance"));
  account.set_balance(balance);
  StoreAccount(state, pubkey, account);
  return Status::Ok();
}

Status Debit(StateStore& state, std::string_view pubkey, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, LoadAccount(state, pubkey));
  if (account.balance() < amount) {
    return Status::FailedPrecondition("insufficient balance: have " + std::to_string(account.balance()) + ", need " +
                                      std::to_string(amount));
  }
  account.set_balance(account.balance() - amount);
  StoreAccount(state, pubkey, account);
  return Status::Ok();
}

Status AddToJackpot(StateStore& state, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, LoadJackpot(state));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t pool, CheckedAdd(jackpot.pool(), amount, "jackpot pool"));
  jackpot.set_pool(pool);
  StoreJackpot(state, jackpot);
  return Status::Ok();
}

Status CheckAnte(const VerifiedTx& tx, const StateStore& state, const proto::Params& params,
                 std::string_view chain_id) {
  if (tx.chain_id != chain_id) {
    return Status::InvalidArgument("wrong chain id '" + tx.chain_id + "', this chain is '" + std::string(chain_id) +
                                   "'");
  }
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, LoadAccount(state, SignerBytes(tx)));
  if (account.nonce() == std::numeric_limits<std::uint64_t>::max()) {
    // The nonce could not advance past this transaction, so it could be replayed forever.
    return Status::FailedPrecondition("the account's nonce space is exhausted");
  }
  if (tx.nonce != account.nonce()) {
    return Status::FailedPrecondition("wrong nonce " + std::to_string(tx.nonce) + ", expected " +
                                      std::to_string(account.nonce()));
  }
  if (account.balance() < params.tx_fee()) {
    return Status::FailedPrecondition("balance " + std::to_string(account.balance()) + " cannot pay the fee " +
                                      std::to_string(params.tx_fee()));
  }
  return Status::Ok();
}

Status ChargeAnte(const VerifiedTx& tx, StateStore& state, const proto::Params& params, const PubKey& proposer) {
  const std::string_view signer = SignerBytes(tx);
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, LoadAccount(state, signer));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t nonce, CheckedAdd(account.nonce(), 1, "nonce"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t balance, CheckedSub(account.balance(), params.tx_fee(), "balance"));
  account.set_nonce(nonce);
  account.set_balance(balance);
  StoreAccount(state, signer, account);
  const std::string_view proposer_bytes(reinterpret_cast<const char*>(proposer.data()), proposer.size());
  return Credit(state, proposer_bytes, params.tx_fee());
}

Status ExecuteTransfer(ExecContext& ctx, std::string_view signer, const proto::TransferTx& tx) {
  POLNODE_RETURN_IF_ERROR(Debit(ctx.state, signer, tx.amount()));
  POLNODE_RETURN_IF_ERROR(Credit(ctx.state, tx.to(), tx.amount()));
  ctx.Emit("transfer", {{"from", ToHex(signer)}, {"to", ToHex(tx.to())}, {"amount", std::to_string(tx.amount())}});
  return Status::Ok();
}

}  // namespace polnode::contracts
