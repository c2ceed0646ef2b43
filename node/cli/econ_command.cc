// `polnode econ`: the economic simulator's table (econ/README.md, DESIGN.md section 10). Every
// strategy's expected payoff per task against honest play, with its 95% interval, over payments
// and verification costs, from tasks run through the real contracts under the genesis defaults.
#include <charconv>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "polnode/cli/commands.h"
#include "polnode/rpc/json.h"
#include "polnode/contracts/genesis.h"
#include "polnode/econ/sweep.h"

namespace polnode::node {
namespace {

// The comma-separated items of `text`, without empty ones.
std::vector<std::string> Items(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (!item.empty()) items.emplace_back(item);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return items;
}

Result<std::vector<std::uint64_t>> Payments(std::string_view text) {
  std::vector<std::uint64_t> payments;
  for (const std::string& item : Items(text)) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size() || value == 0) {
      return Status::InvalidArgument("--payments: '" + item + "' is not a positive integer");
    }
    payments.push_back(value);
  }
  if (payments.empty()) return Status::InvalidArgument("--payments names no payment");
  return payments;
}

Result<std::vector<double>> CostFractions(std::string_view text) {
  std::vector<double> fractions;
  for (const std::string& item : Items(text)) {
    double value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size() || !(value >= 0 && value <= 1)) {
      return Status::InvalidArgument("--costs: '" + item + "' is not a fraction of the fee in [0, 1]");
    }
    fractions.push_back(value);
  }
  if (fractions.empty()) return Status::InvalidArgument("--costs names no cost");
  return fractions;
}

Result<econ::SweepConfig> ConfigFrom(const FlagSet& flags) {
  econ::SweepConfig config;
  config.params = contracts::DefaultParams();
  POLNODE_ASSIGN_OR_RETURN(config.payments, Payments(flags.Get("payments")));
  POLNODE_ASSIGN_OR_RETURN(config.cost_of_fee, CostFractions(flags.Get("costs")));
  for (const std::string& name : Items(flags.Get("strategies"))) {
    POLNODE_ASSIGN_OR_RETURN(econ::Strategy strategy, econ::StrategyNamed(name));
    config.strategies.push_back(strategy);
  }
  POLNODE_ASSIGN_OR_RETURN(std::int64_t tasks, flags.GetInt("tasks", 2, 1'000'000));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t warmup, flags.GetInt("warmup", 0, 1'000'000));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t batches, flags.GetInt("batches", 2, 30));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t seed, flags.GetInt("seed", 0, INT64_MAX));
  POLNODE_ASSIGN_OR_RETURN(double training, flags.GetDouble("training-share"));
  if (!(training >= 0 && training <= 1)) return Status::InvalidArgument("--training-share must be in [0, 1]");
  config.tasks = static_cast<std::uint64_t>(tasks);
  config.warmup_tasks = static_cast<std::uint64_t>(warmup);
  config.batches = static_cast<std::uint32_t>(batches);
  config.seed = static_cast<std::uint64_t>(seed);
  config.training_share = training;
  return config;
}

void WriteJson(std::ostream& out, const std::vector<econ::Row>& rows) {
  JsonWriter w;
  w.BeginObject().Key("rows").BeginArray();
  for (const econ::Row& row : rows) {
    const econ::StrategyInfo& info = econ::InfoOf(row.strategy);
    w.BeginObject()
        .Field("strategy", info.name)
        .Field("role", info.role)
        .Field("honest_role", info.honest)
        .Field("payment", row.payment)
        .Field("fee", row.fee)
        .Field("verification_cost", row.verification_cost)
        .Field("baseline_per_task", row.baseline_mean)
        .Field("payoff_per_task", row.payoff.mean)
        .Field("interval_low", row.payoff.low())
        .Field("interval_high", row.payoff.high())
        .Field("forced_tasks", row.forced_tasks)
        .EndObject();
  }
  w.EndArray().EndObject();
  out << w.str() << "\n";
}

}  // namespace

int RunEconCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags("polnode econ",
                "Run tasks through the real contracts with one actor deviating at a time and print each strategy's "
                "expected payoff per task against honest play (95% interval), under the genesis defaults. "
                "Payoffs of honest roles are against not playing. Costs: c per verification job (Q + 1 segments), "
                "training as a share of the solver's pay.");
  flags.Value("payments", "LIST", "task payments", "1000,10000,100000,1000000,10000000,100000000,1000000000");
  flags.Value("costs", "LIST", "verification costs as fractions of the verifier fee f", "0,0.5,1");
  flags.Value("strategies", "LIST", "strategies to run (default: all; names as in the table)");
  flags.Value("tasks", "N", "tasks per simulated world", "400");
  flags.Value("warmup", "N", "honest tasks that fill the jackpot before the worlds fork", "100");
  flags.Value("batches", "N", "batches for the confidence intervals", "20");
  flags.Value("seed", "N", "the seed of the block randomness and the solvers' secrets", "1");
  flags.Value("training-share", "X", "training cost as a share of the solver's pay", "0.9");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  Result<econ::SweepConfig> config = ConfigFrom(flags);
  if (!config.ok()) return ReportError(io, flags.command(), config.status());
  Result<std::vector<econ::Row>> rows = econ::RunSweep(*config, [&](std::string_view what) {
    if (!flags.json()) io.err << "  simulated " << what << "\n";
  });
  if (!rows.ok()) return ReportError(io, flags.command(), rows.status());
  if (flags.json()) {
    WriteJson(io.out, *rows);
  } else {
    io.out << econ::FormatTable(*rows);
  }
  return kExitOk;
}

}  // namespace polnode::node
