#include "staking.h"

#include <algorithm>
#include <string>

#include "accounts.h"
#include "checked_math.h"
#include "deadlines.h"
#include "keys.h"
#include "records.h"

namespace polnode::contracts {
namespace {

// Keeps the verifier set equal to the keys whose verifier stake has bonded > 0.
Status SyncVerifierSet(StateStore& state, std::string_view pubkey, std::uint64_t bonded) {
  POLNODE_ASSIGN_OR_RETURN(proto::VerifierSet set, LoadVerifierSet(state));
  auto* keys = set.mutable_pubkeys();
  auto it = std::lower_bound(keys->begin(), keys->end(), pubkey);
  const bool present = it != keys->end() && *it == pubkey;
  if (bonded > 0 && !present) {
    keys->Add(std::string(pubkey));
    std::sort(keys->begin(), keys->end());  // new key appended last; restore the order
  } else if (bonded == 0 && present) {
    keys->erase(it);
  } else {
    return Status::Ok();
  }
  StoreVerifierSet(state, set);
  return Status::Ok();
}

// bonded - locked. A record that locks more than it bonds was not written by this file.
Result<std::uint64_t> FreeOf(const proto::StakeRecord& stake) {
  if (stake.locked() > stake.bonded()) return Status::Corruption("stake record locks more than is bonded");
  return stake.bonded() - stake.locked();
}

// Stores the record and keeps the verifier set in step with it.
Status SaveStake(StateStore& state, proto::Role role, std::string_view pubkey, const proto::StakeRecord& stake) {
  StoreStake(state, role, pubkey, stake);
  if (role == proto::ROLE_VERIFIER) return SyncVerifierSet(state, pubkey, stake.bonded());
  return Status::Ok();
}

}  // namespace

std::uint64_t TaskLock(const proto::Params& params, proto::Role role, std::uint64_t payment) {
  std::uint64_t minimum = 0;
  std::uint32_t bps = 0;
  switch (role) {
    case proto::ROLE_SOLVER:
      minimum = params.min_stake_solver();
      bps = params.solver_lock_bps();
      break;
    case proto::ROLE_VERIFIER:
      minimum = params.min_stake_verifier();
      bps = params.verifier_lock_bps();
      break;
    case proto::ROLE_WHISTLEBLOWER:
      minimum = params.min_stake_whistleblower();
      bps = params.whistleblower_lock_bps();
      break;
    default:
      return 0;
  }
  return std::max(minimum, ScaleBpsSaturating(payment, bps));
}

Status ExecuteStake(ExecContext& ctx, std::string_view signer, const proto::StakeTx& tx) {
  POLNODE_RETURN_IF_ERROR(Debit(ctx.state, signer, tx.amount()));
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(ctx.state, tx.role(), signer));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t bonded, CheckedAdd(stake.bonded(), tx.amount(), "bonded stake"));
  stake.set_bonded(bonded);
  POLNODE_RETURN_IF_ERROR(SaveStake(ctx.state, tx.role(), signer, stake));
  ctx.Emit("stake", {{"account", ToHex(signer)},
                     {"role", std::string(RoleName(tx.role()))},
                     {"amount", std::to_string(tx.amount())}});
  return Status::Ok();
}

Status ExecuteUnstake(ExecContext& ctx, std::string_view signer, const proto::UnstakeTx& tx) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(ctx.state, tx.role(), signer));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t free, FreeOf(stake));
  if (free < tx.amount()) {
    return Status::FailedPrecondition("free " + std::string(RoleName(tx.role())) + " stake is " + std::to_string(free) +
                                      ", cannot unstake " + std::to_string(tx.amount()));
  }
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t unbonding, CheckedAdd(stake.unbonding(), tx.amount(), "unbonding stake"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t release_height,
                           CheckedAdd(ctx.block.height, ctx.params.unbonding_blocks(), "release height"));
  stake.set_bonded(stake.bonded() - tx.amount());
  stake.set_unbonding(unbonding);
  POLNODE_RETURN_IF_ERROR(SaveStake(ctx.state, tx.role(), signer, stake));
  proto::DueEntry entry;
  entry.set_kind(proto::DUE_UNBOND);
  entry.set_account(std::string(signer));
  entry.set_role(tx.role());
  entry.set_amount(tx.amount());
  POLNODE_RETURN_IF_ERROR(ScheduleDue(ctx.state, release_height, std::move(entry)));
  ctx.Emit("unstake", {{"account", ToHex(signer)},
                       {"role", std::string(RoleName(tx.role()))},
                       {"amount", std::to_string(tx.amount())},
                       {"release_height", std::to_string(release_height)}});
  return Status::Ok();
}

Status ReleaseUnbonded(ExecContext& ctx, std::string_view pubkey, proto::Role role, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(ctx.state, role, pubkey));
  if (stake.unbonding() < amount) return Status::Internal("unbonding stake below a scheduled release");
  stake.set_unbonding(stake.unbonding() - amount);
  POLNODE_RETURN_IF_ERROR(SaveStake(ctx.state, role, pubkey, stake));
  POLNODE_RETURN_IF_ERROR(Credit(ctx.state, pubkey, amount));
  ctx.Emit("unbonded",
           {{"account", ToHex(pubkey)}, {"role", std::string(RoleName(role))}, {"amount", std::to_string(amount)}});
  return Status::Ok();
}

Result<std::uint64_t> FreeStake(const StateStore& state, proto::Role role, std::string_view pubkey) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, role, pubkey));
  return FreeOf(stake);
}

Status LockStake(StateStore& state, proto::Role role, std::string_view pubkey, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, role, pubkey));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t free, FreeOf(stake));
  if (free < amount) {
    return Status::FailedPrecondition("free " + std::string(RoleName(role)) + " stake is " + std::to_string(free) +
                                      ", the task locks " + std::to_string(amount));
  }
  stake.set_locked(stake.locked() + amount);
  return SaveStake(state, role, pubkey, stake);
}

Status UnlockStake(StateStore& state, proto::Role role, std::string_view pubkey, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, role, pubkey));
  if (stake.locked() < amount) return Status::Internal("unlocking more stake than is locked");
  stake.set_locked(stake.locked() - amount);
  return SaveStake(state, role, pubkey, stake);
}

Status SlashLocked(StateStore& state, proto::Role role, std::string_view pubkey, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, role, pubkey));
  if (stake.locked() < amount || stake.bonded() < amount) return Status::Internal("slashing more stake than is locked");
  stake.set_locked(stake.locked() - amount);
  stake.set_bonded(stake.bonded() - amount);
  return SaveStake(state, role, pubkey, stake);
}

}  // namespace polnode::contracts
