// The strategies the simulator compares with honest play, how a payoff is costed, the confidence
// interval of its mean, and the sweep over payments and verification costs that `polnode econ`
// prints.
//
// A strategy's payoff per task is what it does to its parties' balances and stakes (simulator.h),
// less its work: c / (Q + 1) per replayed segment, where c is the verification cost of one
// verifier's job (its Q segments and the final one), and C / S per trained segment, where C is the
// training cost of the whole task. A deviation is compared with the honest play of the same
// parties in a world that differs only in that play, task by task (the worlds share their
// randomness, simulator.h): the table gives the mean of (deviation - honest) per task with a 95%
// confidence interval from batch means, which absorb the correlation the shared jackpot puts
// between consecutive tasks. Strategies without an honest counterpart (self-dealing, the honest
// roles themselves) are compared with not playing at all (payoff 0).
#ifndef POLNODE_ECON_SWEEP_H_
#define POLNODE_ECON_SWEEP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/econ/simulator.h"

namespace polnode::econ {

enum class Strategy : std::uint8_t {
  kHonestSolver,
  kHonestVerifier,
  kHonestWhistleblower,
  kVerifierLazyAccept,
  kVerifierLazyReject,
  kVerifierAbsent,
  kVerifierFalseUnavailable,
  kVerifierFinalOnly,
  kSolverFakeOne,
  kSolverFakeQuarter,
  kSolverWithhold,
  kSolverForcedGarbage,
  kCollusion,
  kSelfDealing,
  kSybilVerifier,
  kWhistleblowerNeverChecks,
  kWhistleblowerChallengesAll,
  kWhistleblowerCopycat,
  kSolverSkipsForced,
  kWhistleblowerReplaysNamed,
};

struct StrategyInfo {
  Strategy strategy;
  std::string_view name;     // e.g. "verifier-lazy-accept"
  std::string_view role;     // whose payoff: "verifier", "solver", "verifier+whistleblower", ...
  std::string_view summary;  // one line
  bool honest = false;       // an honest role's own payoff (must be >= 0), not a deviation
};

/// Every strategy, honest roles first.
std::span<const StrategyInfo> AllStrategies();
const StrategyInfo& InfoOf(Strategy strategy);
/// The strategy named `name`; kInvalidArgument listing the names when there is none.
[[nodiscard]] Result<Strategy> StrategyNamed(std::string_view name);

/// What a strategy changes: the world it plays in, the parties whose payoff counts, and the world
/// of its honest counterpart (nullopt: not playing, payoff 0).
struct Deviation {
  WorldSpec world;
  std::optional<WorldSpec> baseline;
  std::vector<Party> parties;
};
Deviation DeviationOf(Strategy strategy, const SimConfig& config);

/// The costs of work: c for one verification job (Q + 1 segments), C for training a whole task.
struct Costs {
  double verification = 0;
  double training = 0;
};

/// The payoff of `parties` in one task (see the file comment).
double Payoff(const TaskRecord& record, std::span<const Party> parties, const Costs& costs, const SimConfig& config);

/// A mean with the half width of its 95% confidence interval.
struct Interval {
  double mean = 0;
  double half_width = 0;
  double low() const { return mean - half_width; }
  double high() const { return mean + half_width; }
};

/// The mean of `values` and its 95% interval by batch means: the values (in task order) are cut
/// into `batches` consecutive batches of equal size (a remainder at the end is dropped) and the
/// batch means are treated as independent (Student t with batches - 1 degrees of freedom).
/// Precondition: 2 <= batches <= values.size().
Interval BatchMeans(std::span<const double> values, std::uint32_t batches);

/// One line of the table.
struct Row {
  Strategy strategy;
  std::uint64_t payment = 0;
  double fee = 0;                // f: payment * (1 - cut) * fee_bps / 10000 / verifiers_per_task
  double cost_of_fee = 0;        // c / f
  double verification_cost = 0;  // c
  Interval payoff;               // (deviation - honest) per task, or the payoff itself vs not playing
  double baseline_mean = 0;      // the honest counterpart's mean payoff per task (0 vs not playing)
  std::uint64_t forced_tasks = 0;  // forced rounds among the deviation world's tasks
};

struct SweepConfig {
  proto::Params params;
  std::vector<std::uint64_t> payments;
  std::vector<double> cost_of_fee;     // verification costs as fractions of f
  double training_share = 0.9;         // C as a share of the solver's pay
  std::vector<Strategy> strategies;    // empty: all
  std::uint64_t warmup_tasks = 100;
  std::uint64_t tasks = 400;
  std::uint32_t batches = 20;
  std::uint64_t seed = 1;
  bool tolerant = false;  // SimConfig::tolerant
};

/// Runs every strategy at every payment (one warm chain per payment, one world per strategy and
/// its baseline) and costs each world at every verification cost. Rows in strategy, payment, cost
/// order. `progress`, when set, is called after each world with a short description.
[[nodiscard]] Result<std::vector<Row>> RunSweep(const SweepConfig& config,
                                                const std::function<void(std::string_view)>& progress = {});

/// The rows as a fixed-width text table, one line per row: the baseline's payoff per task (the honest
/// counterpart's, or 0 for not playing), the mean payoff minus the baseline's, its 95% interval, and a
/// verdict: "loses" when the whole interval is below zero, "GAINS" when above, "zero?" when it holds
/// zero; for honest roles "ok" when the interval is not below zero, "LOSES" when it is below.
std::string FormatTable(std::span<const Row> rows);

}  // namespace polnode::econ

#endif  // POLNODE_ECON_SWEEP_H_
