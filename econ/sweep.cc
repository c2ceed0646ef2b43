#include "polnode/econ/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <list>
#include <map>

namespace polnode::econ {
namespace {

constexpr StrategyInfo kStrategies[] = {
    {Strategy::kHonestSolver, "honest-solver", "solver", "trains every segment, defends its proof", true},
    {Strategy::kHonestVerifier, "honest-verifier", "verifier",
     "replays its segments and the final one, names failures with digests", true},
    {Strategy::kHonestWhistleblower, "honest-whistleblower", "whistleblower",
     "replays its covered segments (its draw and the final one) of every task, challenges failures", true},
    {Strategy::kVerifierLazyAccept, "verifier-lazy-accept", "verifier", "never replays, always accepts"},
    {Strategy::kVerifierLazyReject, "verifier-lazy-reject", "verifier", "never replays, always rejects"},
    {Strategy::kVerifierAbsent, "verifier-absent", "verifier", "never answers"},
    {Strategy::kVerifierFalseUnavailable, "verifier-false-unavailable", "verifier",
     "says unavailable without trying, replays once published"},
    {Strategy::kVerifierFinalOnly, "verifier-final-only", "verifier",
     "replays only the final segment (1 of Q + 1), judges on it alone"},
    {Strategy::kSolverFakeOne, "solver-fake-one", "solver", "skips one segment (never the final one)"},
    {Strategy::kSolverFakeQuarter, "solver-fake-quarter", "solver", "skips a quarter of the segments"},
    {Strategy::kSolverWithhold, "solver-withhold", "solver", "commits a random root, serves nothing"},
    {Strategy::kSolverForcedGarbage, "solver-forced-garbage", "solver",
     "trains nothing in forced rounds, reveals random states at the forced checkpoints"},
    {Strategy::kSolverSkipsForced, "solver-skips-forced", "solver",
     "in forced rounds skips the segment ending at its first forced checkpoint, makes up the state it reveals there"},
    {Strategy::kCollusion, "verifier-whistleblower-collusion", "verifier+whistleblower",
     "the verifier rejects and the whistleblower challenges an honest proof, neither replays"},
    {Strategy::kSelfDealing, "self-dealing", "submitter+solver+whistleblower",
     "posts and claims its own tasks, abandons unforced claims, its whistleblower key catches forced ones"},
    {Strategy::kSybilVerifier, "sybil-verifier", "verifier operator",
     "one verifier stake of 3 locks on 3 keys instead of one (both honest)"},
    {Strategy::kWhistleblowerNeverChecks, "whistleblower-never-checks", "whistleblower", "never replays or challenges"},
    {Strategy::kWhistleblowerChallengesAll, "whistleblower-challenges-all", "whistleblower",
     "challenges every proof without replaying"},
    {Strategy::kWhistleblowerCopycat, "whistleblower-copycat", "whistleblower",
     "never replays; copies public rejects' failed segments and digests among its covered ones"},
    {Strategy::kWhistleblowerReplaysNamed, "whistleblower-replays-named", "whistleblower",
     "replays only its covered segments that public rejects named, challenges failures"},
};

// Student t quantile 0.975 for 1..30 degrees of freedom; beyond, the normal's 1.96 is within 1.5%.
double T975(std::uint32_t dof) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return INFINITY;
  return dof <= 30 ? kTable[dof - 1] : 1.96;
}

double FeeOf(const proto::Params& params, std::uint64_t payment) {
  return static_cast<double>(payment) * (1.0 - params.jackpot_cut_bps() / 10'000.0) * params.verifier_fee_bps() /
         10'000.0 / params.verifiers_per_task();
}

}  // namespace

std::span<const StrategyInfo> AllStrategies() { return kStrategies; }

const StrategyInfo& InfoOf(Strategy strategy) {
  for (const StrategyInfo& info : kStrategies) {
    if (info.strategy == strategy) return info;
  }
  return kStrategies[0];  // unreachable: every enumerator is in the table
}

Result<Strategy> StrategyNamed(std::string_view name) {
  std::string names;
  for (const StrategyInfo& info : kStrategies) {
    if (info.name == name) return info.strategy;
    names += (names.empty() ? "" : ", ") + std::string(info.name);
  }
  return Status::InvalidArgument("unknown strategy '" + std::string(name) + "'; strategies: " + names);
}

Deviation DeviationOf(Strategy strategy, const SimConfig& config) {
  Deviation d;
  d.baseline = WorldSpec{};
  switch (strategy) {
    case Strategy::kHonestSolver:
      d.baseline.reset();
      d.parties = {Party::kSolver};
      break;
    case Strategy::kHonestVerifier:
      d.baseline.reset();
      d.parties = {Party::kVerifier};
      break;
    case Strategy::kHonestWhistleblower:
      d.baseline.reset();
      d.parties = {Party::kWhistleblower};
      break;
    case Strategy::kVerifierLazyAccept:
    case Strategy::kVerifierLazyReject:
    case Strategy::kVerifierAbsent:
    case Strategy::kVerifierFalseUnavailable:
    case Strategy::kVerifierFinalOnly: {
      static constexpr VerifierPlay kPlays[] = {VerifierPlay::kLazyAccept, VerifierPlay::kLazyReject, VerifierPlay::kAbsent,
                                                VerifierPlay::kFalseUnavailable, VerifierPlay::kFinalOnly};
      d.world.verifier = kPlays[static_cast<int>(strategy) - static_cast<int>(Strategy::kVerifierLazyAccept)];
      d.parties = {Party::kVerifier};
      break;
    }
    case Strategy::kSolverFakeOne:
      d.world.solver = SolverPlay::kFake;
      d.world.faked_segments = 1;
      d.parties = {Party::kSolver};
      break;
    case Strategy::kSolverFakeQuarter:
      d.world.solver = SolverPlay::kFake;
      d.world.faked_segments = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, config.segments / 4));
      d.parties = {Party::kSolver};
      break;
    case Strategy::kSolverWithhold:
      d.world.solver = SolverPlay::kWithhold;
      d.parties = {Party::kSolver};
      break;
    case Strategy::kSolverForcedGarbage:
      d.world.solver = SolverPlay::kForcedGarbage;
      d.parties = {Party::kSolver};
      break;
    case Strategy::kSolverSkipsForced:
      // One segment: each skipped one is caught on its own whenever a verdict or challenge covers
      // it, and its saving C / S is far below what a catch costs, so every further skip loses more.
      d.world.solver = SolverPlay::kSkipsForced;
      d.world.faked_segments = 1;
      d.parties = {Party::kSolver};
      break;
    case Strategy::kCollusion:
      d.world.verifier = VerifierPlay::kLazyReject;
      d.world.whistleblower = WhistleblowerPlay::kChallengesAll;
      d.parties = {Party::kVerifier, Party::kWhistleblower};
      break;
    case Strategy::kSelfDealing:
      d.world.self_dealing = true;
      d.baseline.reset();
      d.parties = {Party::kOwner};
      break;
    case Strategy::kSybilVerifier:
      d.world.operator_keys = 3;
      d.world.operator_locks = 3;
      d.baseline->operator_keys = 1;
      d.baseline->operator_locks = 3;
      d.parties = {Party::kOperator};
      break;
    case Strategy::kWhistleblowerNeverChecks:
      d.world.whistleblower = WhistleblowerPlay::kNeverChecks;
      d.parties = {Party::kWhistleblower};
      break;
    case Strategy::kWhistleblowerChallengesAll:
      d.world.whistleblower = WhistleblowerPlay::kChallengesAll;
      d.parties = {Party::kWhistleblower};
      break;
    case Strategy::kWhistleblowerCopycat:
      d.world.whistleblower = WhistleblowerPlay::kCopycat;
      d.parties = {Party::kWhistleblower};
      break;
    case Strategy::kWhistleblowerReplaysNamed:
      d.world.whistleblower = WhistleblowerPlay::kReplaysNamed;
      d.parties = {Party::kWhistleblower};
      break;
  }
  return d;
}

double Payoff(const TaskRecord& record, std::span<const Party> parties, const Costs& costs, const SimConfig& config) {
  const double per_replayed = costs.verification / static_cast<double>(config.segments_per_verification + 1);
  const double per_trained = costs.training / static_cast<double>(config.segments);
  double payoff = 0;
  for (Party p : parties) {
    const PartyTask& t = record.of(p);
    payoff += static_cast<double>(t.money) - per_replayed * static_cast<double>(t.segments_replayed) -
              per_trained * static_cast<double>(t.segments_trained);
  }
  return payoff;
}

Interval BatchMeans(std::span<const double> values, std::uint32_t batches) {
  const std::size_t size = values.size() / batches;
  std::vector<double> means;
  for (std::uint32_t b = 0; b < batches; ++b) {
    double sum = 0;
    for (std::size_t i = 0; i < size; ++i) sum += values[b * size + i];
    means.push_back(sum / static_cast<double>(size));
  }
  double mean = 0;
  for (double m : means) mean += m;
  mean /= static_cast<double>(batches);
  double squares = 0;
  for (double m : means) squares += (m - mean) * (m - mean);
  const double variance = squares / static_cast<double>(batches - 1);
  return Interval{mean, T975(batches - 1) * std::sqrt(variance / static_cast<double>(batches))};
}

Result<std::vector<Row>> RunSweep(const SweepConfig& config, const std::function<void(std::string_view)>& progress) {
  if (config.batches < 2 || config.tasks < config.batches) {
    return Status::InvalidArgument("need at least 2 batches and a task per batch");
  }
  std::vector<Strategy> strategies = config.strategies;
  if (strategies.empty()) {
    for (const StrategyInfo& info : kStrategies) strategies.push_back(info.strategy);
  }
  // Rows are produced per payment; collect them per strategy to order the table by strategy.
  std::map<Strategy, std::vector<Row>> by_strategy;
  for (std::uint64_t payment : config.payments) {
    SimConfig sim;
    sim.params = config.params;
    sim.payment = payment;
    sim.warmup_tasks = config.warmup_tasks;
    sim.tasks = config.tasks;
    sim.seed = config.seed;
    sim.tolerant = config.tolerant;
    POLNODE_ASSIGN_OR_RETURN(Simulator simulator, Simulator::Create(sim));
    const TaskMoney money = MoneyOf(config.params, payment);
    const double fee = FeeOf(config.params, payment);
    // Worlds already run at this payment, by their spec (the honest world serves most strategies).
    // A list, so the records handed out stay where they are while more worlds are added.
    std::list<std::pair<WorldSpec, std::vector<TaskRecord>>> runs;
    auto run_of = [&](const WorldSpec& spec) -> Result<const std::vector<TaskRecord>*> {
      for (const auto& [s, records] : runs) {
        if (s == spec) return &records;
      }
      POLNODE_ASSIGN_OR_RETURN(std::vector<TaskRecord> records, simulator.Run(spec));
      runs.emplace_back(spec, std::move(records));
      return &runs.back().second;
    };
    for (Strategy strategy : strategies) {
      const Deviation deviation = DeviationOf(strategy, sim);
      POLNODE_ASSIGN_OR_RETURN(const std::vector<TaskRecord>* played, run_of(deviation.world));
      const std::vector<TaskRecord>* baseline = nullptr;
      if (deviation.baseline) {
        POLNODE_ASSIGN_OR_RETURN(baseline, run_of(*deviation.baseline));
      }
      std::uint64_t forced = 0;
      for (const TaskRecord& r : *played) forced += r.forced ? 1 : 0;
      for (double fraction : config.cost_of_fee) {
        const Costs costs{fraction * fee, config.training_share * static_cast<double>(money.solver_pay)};
        std::vector<double> diffs;
        double baseline_sum = 0;
        for (std::size_t i = 0; i < played->size(); ++i) {
          const double base = baseline ? Payoff((*baseline)[i], deviation.parties, costs, sim) : 0.0;
          baseline_sum += base;
          diffs.push_back(Payoff((*played)[i], deviation.parties, costs, sim) - base);
        }
        Row row{strategy, payment, fee, fraction, costs.verification, BatchMeans(diffs, config.batches),
                baseline_sum / static_cast<double>(played->size()), forced};
        by_strategy[strategy].push_back(row);
      }
      if (progress) progress(std::string(InfoOf(strategy).name) + " at payment " + std::to_string(payment));
    }
  }
  std::vector<Row> rows;
  for (Strategy strategy : strategies) {
    for (const Row& row : by_strategy[strategy]) rows.push_back(row);
  }
  return rows;
}

std::string FormatTable(std::span<const Row> rows) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-33s %-30s %11s %6s %12s %14s %28s  %s\n", "strategy", "role", "payment", "c/f",
                "baseline", "minus baseline", "95% interval", "verdict");
  out += line;
  for (const Row& row : rows) {
    const StrategyInfo& info = InfoOf(row.strategy);
    const char* verdict = info.honest ? (row.payoff.low() >= 0 ? "ok" : row.payoff.high() < 0 ? "LOSES" : "zero?")
                                      : (row.payoff.high() < 0 ? "loses" : row.payoff.low() > 0 ? "GAINS" : "zero?");
    char interval[64];
    std::snprintf(interval, sizeof interval, "[%.4g, %.4g]", row.payoff.low(), row.payoff.high());
    std::snprintf(line, sizeof line, "%-33s %-30s %11llu %6.2f %12.5g %14.5g %28s  %s\n", std::string(info.name).c_str(),
                  std::string(info.role).c_str(), static_cast<unsigned long long>(row.payment), row.cost_of_fee,
                  row.baseline_mean, row.payoff.mean, interval, verdict);
    out += line;
  }
  return out;
}

}  // namespace polnode::econ
