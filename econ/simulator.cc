#include "polnode/econ/simulator.h"

#include <algorithm>

#include "polnode/contracts/genesis.h"
#include "world.h"

namespace polnode::econ {
namespace {

// Every actor's genesis balance: enough for thousands of the largest tasks and their locks.
constexpr std::uint64_t kGenesisBalance = 1'000'000'000'000'000;

// floor(amount * bps / 10000), saturating: amount = q * 10000 + r gives q * bps + r * bps / 10000.
std::uint64_t Bps(std::uint64_t amount, std::uint32_t bps) {
  std::uint64_t whole = 0;
  if (__builtin_mul_overflow(amount / 10'000, std::uint64_t{bps}, &whole)) return UINT64_MAX;
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(whole, amount % 10'000 * bps / 10'000, &sum)) return UINT64_MAX;
  return sum;
}

}  // namespace

TaskMoney MoneyOf(const proto::Params& params, std::uint64_t payment) {
  // The same arithmetic as contracts/settlement.cc (ComputeShares) and staking.cc (TaskLock); the
  // simulator checks every lock the contracts take against these.
  TaskMoney money;
  money.escrow = payment - Bps(payment, params.jackpot_cut_bps());
  const std::uint64_t fee_budget = Bps(money.escrow, params.verifier_fee_bps());
  money.verifier_fee = fee_budget / std::max<std::uint32_t>(1, params.verifiers_per_task());
  money.solver_pay = money.escrow - fee_budget;
  money.solver_lock = std::max(params.min_stake_solver(), Bps(payment, params.solver_lock_bps()));
  money.verifier_lock = std::max(params.min_stake_verifier(), Bps(payment, params.verifier_lock_bps()));
  money.whistleblower_lock = std::max(params.min_stake_whistleblower(), Bps(payment, params.whistleblower_lock_bps()));
  return money;
}

struct Simulator::State {
  SimConfig config;
  SimChain chain;
};

Simulator::Simulator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;
Simulator::~Simulator() = default;

const SimConfig& Simulator::config() const { return state_->config; }

Result<Simulator> Simulator::Create(const SimConfig& config) {
  POLNODE_RETURN_IF_ERROR(contracts::ValidateParams(config.params));
  if (config.checkpoint_interval < 2) return Status::InvalidArgument("checkpoint_interval must be at least 2");
  if (config.segments < 2 || config.segments_per_verification < 1 ||
      config.segments_per_verification > config.segments) {
    return Status::InvalidArgument("need 2 or more segments and 1..segments segments per verification");
  }
  if (config.payment == 0) return Status::InvalidArgument("payment must be positive");
  // Simulated values lie below 4096 (a float's spacing there is 2^-12) and two simulated states
  // differ by at least 1/16 wherever they differ (proof_model.cc StateValues): from 2^-12 on, a
  // perturbation moves every value by at least D / 2 (the reveal must show it visible), and below
  // 1/8 every difference of two states exceeds D / 2, as the model's replays assume.
  if (config.tolerant && !(config.forced_delta >= 1.0f / 4096.0f && config.forced_delta < 1.0f / 8.0f)) {
    return Status::InvalidArgument("a tolerant simulation's forced_delta must be in [2^-12, 2^-3)");
  }
  const Cast cast(config.params.verifiers_per_task(), kMaxOperatorKeys);
  POLNODE_ASSIGN_OR_RETURN(SimChain chain, SimChain::Create(config.params, cast.All(), kGenesisBalance, config.seed));
  World warmup(std::move(chain), config, WorldSpec{});
  for (std::uint64_t i = 0; i < config.warmup_tasks; ++i) {
    POLNODE_RETURN_IF_ERROR(warmup.RunTask(i).status().WithContext("warm-up task " + std::to_string(i)));
  }
  return Simulator(std::make_unique<State>(State{config, std::move(warmup).TakeChain()}));
}

Result<std::vector<TaskRecord>> Simulator::Run(const WorldSpec& spec) const {
  if (spec.operator_keys > kMaxOperatorKeys || (spec.operator_keys > 0 && spec.operator_locks < spec.operator_keys)) {
    return Status::InvalidArgument("the operator has 1..8 keys and at least one lock per key");
  }
  World world(state_->chain, state_->config, spec);
  std::vector<TaskRecord> records;
  records.reserve(state_->config.tasks);
  for (std::uint64_t i = 0; i < state_->config.tasks; ++i) {
    const std::uint64_t index = state_->config.warmup_tasks + i;
    POLNODE_ASSIGN_OR_RETURN(TaskRecord record, world.RunTask(index));
    records.push_back(record);
  }
  return records;
}

}  // namespace polnode::econ
