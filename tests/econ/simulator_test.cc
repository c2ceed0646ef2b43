// The simulator drives the real contracts: the money each party sees per task is exactly what
// settlement.h prescribes, each deviation reaches the outcome the rules give it, worlds forked from
// one warm chain share their forced rounds, and the interval arithmetic is right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "polnode/contracts/genesis.h"
#include "polnode/econ/simulator.h"
#include "polnode/econ/sweep.h"

namespace polnode::econ {
namespace {

SimConfig Config(std::uint64_t payment, std::uint64_t tasks) {
  SimConfig config;
  config.params = contracts::DefaultParams();
  config.payment = payment;
  config.warmup_tasks = 1;  // it carries everyone's first stake, so measured tasks start staked
  config.tasks = tasks;
  config.seed = 3;
  return config;
}

Result<std::vector<TaskRecord>> RunWorld(const SimConfig& config, const WorldSpec& spec) {
  POLNODE_ASSIGN_OR_RETURN(Simulator simulator, Simulator::Create(config));
  return simulator.Run(spec);
}

// Transaction fees (1 each) a party pays in an honest task that is not forced: the solver claims,
// commits and reveals; a verifier posts its verdict; the submitter posts the task.
TEST(Simulator, AnHonestTaskMovesExactlyTheSettlementAmounts) {
  const SimConfig config = Config(100'000, 40);
  const TaskMoney money = MoneyOf(config.params, config.payment);
  ASSERT_EQ(money.escrow, 93'000u);       // 7% cut
  ASSERT_EQ(money.verifier_fee, 930u);    // 3% of the escrow over 3 verifiers
  ASSERT_EQ(money.solver_pay, 90'210u);
  Result<std::vector<TaskRecord>> run = RunWorld(config, WorldSpec{});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::size_t forced = 0;
  std::size_t caught_by_verifier = 0;
  std::size_t caught_by_whistleblower = 0;
  for (const TaskRecord& r : *run) {
    EXPECT_EQ(r.of(Party::kSolver).money, static_cast<std::int64_t>(money.solver_pay) - 3);
    EXPECT_EQ(r.of(Party::kSolver).segments_trained, config.segments);
    if (r.forced) {
      // The reveal passed (its leaves differ exactly at the forced checkpoints) and a slot vouched.
      ++forced;
      EXPECT_EQ(r.outcome, proto::OUTCOME_FORCED_ERROR);
      // A verifier whose covered segments end at no forced checkpoint accepts, rightly, and earns
      // its fee; one whose do names exactly those and earns its fee and a jackpot share.
      EXPECT_GE(r.of(Party::kVerifier).money, static_cast<std::int64_t>(money.verifier_fee) - 1);
      caught_by_verifier += r.of(Party::kVerifier).money > static_cast<std::int64_t>(money.verifier_fee) - 1 ? 1 : 0;
      // The whistleblower challenges only when its covered segments fail, and then catches.
      EXPECT_GE(r.of(Party::kWhistleblower).money, 0);
      caught_by_whistleblower += r.of(Party::kWhistleblower).money > 0 ? 1 : 0;
      continue;
    }
    EXPECT_EQ(r.outcome, proto::OUTCOME_ACCEPTED);
    EXPECT_EQ(r.of(Party::kVerifier).money, static_cast<std::int64_t>(money.verifier_fee) - 1);
    EXPECT_EQ(r.of(Party::kOtherVerifiers).money, 2 * (static_cast<std::int64_t>(money.verifier_fee) - 1));
    EXPECT_EQ(r.of(Party::kWhistleblower).money, 0);
    // The submitter pays the payment less the indivisible rest of the fee budget, and its fee.
    EXPECT_EQ(r.of(Party::kSubmitter).money,
              -static_cast<std::int64_t>(config.payment - (money.escrow - money.solver_pay - 3 * money.verifier_fee)) - 1);
    // A verifier replays its Q segments and the final one (Q + 1, or Q when its draw holds the final).
    EXPECT_GE(r.of(Party::kVerifier).segments_replayed, config.segments_per_verification);
    EXPECT_LE(r.of(Party::kVerifier).segments_replayed, config.segments_per_verification + 1u);
  }
  EXPECT_GT(forced, 0u);  // forced rounds happen 1 in 5 at the defaults
  EXPECT_GT(caught_by_verifier, 0u);
  EXPECT_GT(caught_by_whistleblower, 0u);
}

TEST(Simulator, DeviationsReachTheOutcomesTheRulesGiveThem) {
  const SimConfig config = Config(10'000, 30);
  const TaskMoney money = MoneyOf(config.params, config.payment);
  WorldSpec withhold;
  withhold.solver = SolverPlay::kWithhold;
  Result<std::vector<TaskRecord>> run = RunWorld(config, withhold);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (const TaskRecord& r : *run) {
    EXPECT_EQ(r.outcome, proto::OUTCOME_UNAVAILABLE);
    // The lock is lost, then staked again (one fee); the claim and the commit cost a fee each.
    EXPECT_EQ(r.of(Party::kSolver).money, -static_cast<std::int64_t>(money.solver_lock) - 3);
    EXPECT_EQ(r.of(Party::kSolver).segments_trained, 0u);
  }

  WorldSpec lazy_reject;
  lazy_reject.verifier = VerifierPlay::kLazyReject;
  run = RunWorld(config, lazy_reject);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (const TaskRecord& r : *run) {
    // The solver defends its proof; the lazy rejecter cannot open its game and forfeits its lock.
    EXPECT_EQ(r.outcome, r.forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_ACCEPTED);
    EXPECT_EQ(r.of(Party::kVerifier).money, -static_cast<std::int64_t>(money.verifier_lock) - 2);
    EXPECT_EQ(r.of(Party::kVerifier).segments_replayed, 0u);
  }

  WorldSpec fake;
  fake.solver = SolverPlay::kFake;
  fake.faked_segments = 4;
  run = RunWorld(config, fake);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const auto rejected = std::count_if(run->begin(), run->end(), [](const TaskRecord& r) {
    return r.outcome == proto::OUTCOME_REJECTED;
  });
  EXPECT_GT(rejected, 20);  // 3 verifiers and the whistleblower each draw 2 of 16 segments
  for (const TaskRecord& r : *run) {
    if (r.outcome == proto::OUTCOME_REJECTED) {
      EXPECT_LE(r.of(Party::kSolver).money, -static_cast<std::int64_t>(money.solver_lock));
    }
  }

  WorldSpec self_dealing;
  self_dealing.self_dealing = true;
  run = RunWorld(config, self_dealing);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (const TaskRecord& r : *run) {
    EXPECT_EQ(r.outcome, r.forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_NO_COMMIT);
    if (!r.forced) {
      EXPECT_LE(r.of(Party::kOwner).money, -static_cast<std::int64_t>(money.solver_lock));
    }
  }
}

TEST(Simulator, PublicationReopensTheFalselyUnavailableSlot) {
  const SimConfig config = Config(10'000, 10);
  WorldSpec spec;
  spec.verifier = VerifierPlay::kFalseUnavailable;
  Result<std::vector<TaskRecord>> run = RunWorld(config, spec);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const TaskMoney money = MoneyOf(config.params, config.payment);
  for (const TaskRecord& r : *run) {
    EXPECT_EQ(r.outcome, r.forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_ACCEPTED);
    // After the solver published, the verifier replayed from the ledger and was paid like an
    // honest one, less the fee of its needless first verdict.
    EXPECT_GE(r.of(Party::kVerifier).segments_replayed, config.segments_per_verification);
    if (!r.forced) {
      EXPECT_EQ(r.of(Party::kVerifier).money, static_cast<std::int64_t>(money.verifier_fee) - 2);
    }
  }
}

TEST(Simulator, WorldsForkedFromOneChainShareTheirForcedRounds) {
  SimConfig config = Config(10'000, 60);
  config.warmup_tasks = 5;
  Result<Simulator> simulator = Simulator::Create(config);
  ASSERT_TRUE(simulator.ok()) << simulator.status().ToString();
  WorldSpec lazy;
  lazy.verifier = VerifierPlay::kLazyAccept;
  Result<std::vector<TaskRecord>> honest = simulator->Run(WorldSpec{});
  Result<std::vector<TaskRecord>> deviating = simulator->Run(lazy);
  ASSERT_TRUE(honest.ok() && deviating.ok());
  std::size_t forced = 0;
  std::size_t slashed = 0;
  for (std::size_t i = 0; i < honest->size(); ++i) {
    EXPECT_EQ((*honest)[i].forced, (*deviating)[i].forced) << "task " << i;
    forced += (*honest)[i].forced ? 1 : 0;
    // Accepting a forced error costs the lock: in a forced round an accept is right only when none
    // of its covered segments ends at a forced checkpoint, where the honest verifier accepts too.
    // Otherwise the lazy verifier is paid like the honest one.
    const std::int64_t paid = (*deviating)[i].of(Party::kVerifier).money;
    if ((*deviating)[i].forced && paid < 0) {
      ++slashed;
    } else {
      EXPECT_EQ(paid, (*honest)[i].of(Party::kVerifier).money) << "task " << i;
    }
  }
  EXPECT_GT(forced, 0u);
  EXPECT_GT(slashed, 0u);
  // A run is a pure function of the config: the same world again gives the same records.
  Result<std::vector<TaskRecord>> again = simulator->Run(WorldSpec{});
  ASSERT_TRUE(again.ok());
  for (std::size_t i = 0; i < honest->size(); ++i) {
    EXPECT_EQ((*again)[i].of(Party::kWhistleblower).money, (*honest)[i].of(Party::kWhistleblower).money);
    EXPECT_EQ((*again)[i].jackpot_after, (*honest)[i].jackpot_after);
  }
}

// Tolerant mode (TaskSpec.tolerant, protocol v7): forced checkpoints are drawn as in exact mode
// (each with probability 1/2, middle ones included), each perturbed by +-D in a few elements of one
// block, and the reveal proves every shown one with a PerturbationProof the contracts check (a
// forced outcome means they passed). A reject or challenge catches only by naming exactly its
// covered segments that end at forced checkpoints, each with the digest of the elements its replay
// found beyond D / 2, keyed by its own key.
TEST(Simulator, TolerantForcedRoundsPerturbMiddleCheckpointsAndCatchOnlyWithDigests) {
  SimConfig config = Config(10'000, 40);
  config.tolerant = true;
  const TaskMoney money = MoneyOf(config.params, config.payment);
  const auto fee = static_cast<std::int64_t>(money.verifier_fee);
  Result<std::vector<TaskRecord>> run = RunWorld(config, WorldSpec{});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::size_t forced = 0;
  std::size_t with_middle = 0;     // a shown forced checkpoint before the final one
  std::size_t final_unforced = 0;  // replaying the final segment alone finds nothing there
  std::size_t caught_by_verifier = 0;
  std::size_t caught_by_whistleblower = 0;
  for (const TaskRecord& r : *run) {
    if (!r.forced) {
      EXPECT_EQ(r.outcome, proto::OUTCOME_ACCEPTED);
      EXPECT_TRUE(r.forced_checkpoints.empty());
      EXPECT_EQ(r.of(Party::kVerifier).money, fee - 1);
      continue;
    }
    ++forced;
    EXPECT_EQ(r.outcome, proto::OUTCOME_FORCED_ERROR);
    // The reveal shows the final checkpoint and every covered segment's end: the final one is
    // among the shown forced ones exactly when it is forced.
    const std::vector<std::uint64_t>& shown = r.forced_checkpoints;
    with_middle += !shown.empty() && shown.front() < config.segments ? 1 : 0;
    final_unforced += shown.empty() || shown.back() != config.segments ? 1 : 0;
    // Every honest verdict is right: an accept of covered segments that end at no forced
    // checkpoint, or a reject naming those that do with the digests of their perturbed indices.
    EXPECT_GE(r.of(Party::kVerifier).money, fee - 1);
    EXPECT_GE(r.of(Party::kOtherVerifiers).money, 2 * (fee - 1));
    EXPECT_GE(r.of(Party::kWhistleblower).money, 0);
    caught_by_verifier += r.of(Party::kVerifier).money > fee - 1 ? 1 : 0;
    caught_by_whistleblower += r.of(Party::kWhistleblower).money > 0 ? 1 : 0;
  }
  EXPECT_GT(forced, 0u);
  EXPECT_GT(with_middle, 0u);
  EXPECT_GT(final_unforced, 0u);
  EXPECT_GT(caught_by_verifier, 0u);
  EXPECT_GT(caught_by_whistleblower, 0u);

  // A reject without a replay (the final segment, the committed state standing in for the replayed
  // one: no element beyond D / 2) is never right, not even in a forced round whose final checkpoint
  // is the only forced one it covers: its digest is of no indices, not of the perturbed ones.
  WorldSpec lazy_reject;
  lazy_reject.verifier = VerifierPlay::kLazyReject;
  run = RunWorld(config, lazy_reject);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (const TaskRecord& r : *run) {
    EXPECT_EQ(r.outcome, r.forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_ACCEPTED);
    EXPECT_EQ(r.of(Party::kVerifier).money, -static_cast<std::int64_t>(money.verifier_lock) - 2);
  }

  // A whistleblower that copies the public rejects' segments and digests never catches (a digest
  // is keyed by its party) and loses its lock whenever it challenges.
  WorldSpec copycat;
  copycat.whistleblower = WhistleblowerPlay::kCopycat;
  run = RunWorld(config, copycat);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::size_t copied = 0;
  for (const TaskRecord& r : *run) {
    EXPECT_LE(r.of(Party::kWhistleblower).money, 0);
    if (r.of(Party::kWhistleblower).money < 0) {
      ++copied;
      EXPECT_LE(r.of(Party::kWhistleblower).money, -static_cast<std::int64_t>(money.whistleblower_lock));
    }
  }
  EXPECT_GT(copied, 0u);
}

TEST(Simulator, RejectsConfigsItCannotRun) {
  SimConfig config = Config(1'000, 1);
  config.checkpoint_interval = 1;
  EXPECT_EQ(Simulator::Create(config).status().code(), StatusCode::kInvalidArgument);
  config = Config(1'000, 1);
  config.segments_per_verification = 17;
  EXPECT_EQ(Simulator::Create(config).status().code(), StatusCode::kInvalidArgument);
  config = Config(1'000, 1);
  config.params.set_verify_window(0);
  EXPECT_EQ(Simulator::Create(config).status().code(), StatusCode::kInvalidArgument);
  // A perturbation a replay could not tell from another state's values, or one that vanishes in
  // rounding, is no tolerant forced round the model can run.
  config = Config(1'000, 1);
  config.tolerant = true;
  config.forced_delta = 0.125f;
  EXPECT_EQ(Simulator::Create(config).status().code(), StatusCode::kInvalidArgument);
  config.forced_delta = 1.0f / 8192.0f;
  EXPECT_EQ(Simulator::Create(config).status().code(), StatusCode::kInvalidArgument);
  config.forced_delta = 1.0f / 4096.0f;
  EXPECT_TRUE(Simulator::Create(config).ok());
}

TEST(Payoff, CostsReplaysPerSegmentAndTrainingPerSegment) {
  SimConfig config;  // S = 16, Q = 2: a job is 3 segments
  TaskRecord record;
  record.parties[static_cast<std::size_t>(Party::kVerifier)] = {100, 3, 0};
  record.parties[static_cast<std::size_t>(Party::kSolver)] = {1'000, 0, 8};
  const std::vector<Party> verifier = {Party::kVerifier};
  const std::vector<Party> both = {Party::kVerifier, Party::kSolver};
  EXPECT_DOUBLE_EQ(Payoff(record, verifier, Costs{30, 0}, config), 70.0);
  EXPECT_DOUBLE_EQ(Payoff(record, both, Costs{30, 320}, config), 70.0 + 1'000 - 160);
}

TEST(BatchMeans, IsTheStudentIntervalOfTheBatchMeans) {
  std::vector<double> values(41);
  std::iota(values.begin(), values.end(), 1.0);  // the 41st value is dropped: 4 batches of 10
  const Interval interval = BatchMeans(values, 4);
  // Batch means 5.5, 15.5, 25.5, 35.5: mean 20.5, standard deviation sqrt(500 / 3).
  EXPECT_DOUBLE_EQ(interval.mean, 20.5);
  EXPECT_NEAR(interval.half_width, 3.182 * std::sqrt(500.0 / 3.0) / 2.0, 1e-9);
  const std::vector<double> constant(20, -1.0);
  EXPECT_EQ(BatchMeans(constant, 20).half_width, 0.0);
  EXPECT_LT(BatchMeans(constant, 20).high(), 0.0);
}

TEST(Strategies, EveryNameRoundTrips) {
  for (const StrategyInfo& info : AllStrategies()) {
    Result<Strategy> named = StrategyNamed(info.name);
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(*named, info.strategy);
    EXPECT_EQ(InfoOf(info.strategy).name, info.name);
  }
  EXPECT_EQ(StrategyNamed("verifier-lazy").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::econ
