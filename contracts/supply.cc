#include "polnode/contracts/supply.h"

#include <string>

#include "checked_math.h"
#include "keys.h"
#include "records.h"

namespace polnode::contracts {
namespace {

// Adds `amount` to `sum`, remembering the first failure; Scan visitors cannot return a Status.
void Accumulate(std::uint64_t& sum, std::uint64_t amount, Status& failure) {
  if (!failure.ok()) return;
  auto next = CheckedAdd(sum, amount, "audited supply");
  if (next.ok()) {
    sum = *next;
  } else {
    failure = Status::Corruption(next.status().message());
  }
}

// Scans `prefix`, decodes each value as Message and accumulates what `amount_of` returns.
template <typename Message, typename AmountOf>
Status SumRecords(const StateStore& state, std::string_view prefix, AmountOf amount_of) {
  Status failure;
  POLNODE_RETURN_IF_ERROR(state.Scan(prefix, [&](std::string_view key, std::string_view value) {
    Message message;
    failure = DecodeRecord(value, key, message);
    if (failure.ok()) amount_of(message, failure);
    return failure.ok();
  }));
  return failure;
}

}  // namespace

Result<SupplyReport> AuditSupply(const StateStore& state) {
  SupplyReport report;
  POLNODE_ASSIGN_OR_RETURN(report.genesis_supply, LoadU64(state, kSupplyKey));
  POLNODE_RETURN_IF_ERROR(SumRecords<proto::Account>(
      state, kAccountPrefix, [&](const proto::Account& a, Status& f) { Accumulate(report.balances, a.balance(), f); }));
  POLNODE_RETURN_IF_ERROR(
      SumRecords<proto::StakeRecord>(state, kStakePrefix, [&](const proto::StakeRecord& s, Status& f) {
        Accumulate(report.bonded, s.bonded(), f);
        Accumulate(report.unbonding, s.unbonding(), f);
      }));
  POLNODE_RETURN_IF_ERROR(SumRecords<proto::Task>(
      state, kTaskPrefix, [&](const proto::Task& t, Status& f) { Accumulate(report.escrow, t.escrow(), f); }));
  POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, LoadJackpot(state));
  report.jackpot = jackpot.pool();
  Status total;
  std::uint64_t sum = 0;
  for (std::uint64_t part : {report.balances, report.bonded, report.unbonding, report.escrow, report.jackpot}) {
    Accumulate(sum, part, total);
  }
  POLNODE_RETURN_IF_ERROR(total);
  return report;
}

}  // namespace polnode::contracts
