// Issue 16 item 8: under load, DevnetE2eTest.RolesKilledMidTaskAndALedgerOutageAreRiddenOut saw the
// cheating solver's task ACCEPTED. The chain counts its windows in blocks, and `polnode ledger` made
// a block every 100 ms of wall time whatever the roles were doing. The devnet's honest verifier
// replays on one thread beside two solvers training on every thread (and, that day, other work on
// the two cores), so its replay could outlast the verify window (600 blocks: 60 s) while the lazy
// verifier's accept was in at once. Its slots went absent; the replacement slots were drawn among
// keys that were absent from none of the task's slots, which in the devnet left the lazy verifier
// alone, so it took them and accepted again; with no reject the challenge window (150 blocks: 15 s)
// opened, the whistleblower's one-thread replay outlasted that too, and the cheat was accepted.
//
// The rule now (contracts/verification.h): a slot without a verdict at a deadline with rounds left
// is overdue, not absent: it may still answer one more window, and its verdict counts; the fresh
// slot drawn beside it goes only to a key holding no slot of the task; and a verification that
// ends with a slot absent and fewer answers than slots is short, so its proof is not paid.
//
// This replays that ordering on a ManualClock: one block per 100 ms of clock time (the ledger's
// timer) against honest replays that take 70 s of it (one window and a bit), and 200 s (past every
// window), and the devnet's pacing (no block while a replay runs, devnet.cc PaceBlocks). Nothing
// here depends on how fast this machine is: the clock moves only when the test says.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>

#include "polnode/base/clock.h"
#include "polnode/contracts/payloads.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

using namespace std::chrono_literals;

constexpr Clock::Duration kBlockInterval = 100ms;
// An honest replay on the loaded machine: longer than the verify window's 600 blocks of 100 ms,
// shorter than two of them.
constexpr Clock::Duration kHonestReplay = 70s;
// An honest replay that outlasts every window the three verification rounds give.
constexpr Clock::Duration kHopelessReplay = 200s;

// The devnet's windows (devnet.cc SetUp) and the genesis default of three verification rounds.
proto::Params DevnetParams() {
  proto::Params p = TestParams();
  p.set_verify_window(600);
  p.set_challenge_window(150);
  p.set_max_verification_rounds(3);
  return p;
}

// How the chain's blocks are paced against the verifiers' work.
enum class Pacing {
  kTimer,          // `polnode ledger`: a block every interval, whatever runs
  kRolesCaughtUp,  // the devnet: a block every interval, but none while a replay runs
};

struct TaskRun {
  proto::Task task;           // once the solver revealed: settled
  int honest_verdicts = 0;    // posted while the slot still counted
  int lazy_verdicts = 0;
  std::int64_t solver_gain = 0;  // the change of the solver's balance and bonded stake, verification to settlement
};

// One task verified by verifiers[0], lazy (it accepts as soon as it holds a slot), and
// verifiers[1] and [2], honest: a slot's verdict is ready `replay` of clock time after the slot is
// first seen; a reject of the final segment when `cheat` (the proof's final segment is wrong),
// else an accept. No whistleblower challenges: its replay, slower still, never ends within the
// challenge window. Then the solver reveals and the task settles.
TaskRun RunTask(Pacing pacing, bool cheat, Clock::Duration replay) {
  ManualClock clock;
  TaskFlow flow(DevnetParams());
  flow.RunToVerifying();
  const auto solver_worth = [&flow] {
    return static_cast<std::int64_t>(flow.chain.Balance(flow.solver) +
                                     flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded());
  };
  const std::int64_t solver_before = solver_worth();
  const std::string lazy = Raw(flow.verifiers[0]);
  std::map<std::uint32_t, Clock::TimePoint> replay_done;  // by honest slot: when its replay ends
  TaskRun run;
  while (flow.task().status() == proto::TASK_VERIFYING) {
    const proto::Task task = flow.task();
    bool posted = false;
    bool replaying = false;
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(task.verifiers_size()) && !posted; ++i) {
      const proto::VerifierSlot& slot = task.verifiers(static_cast<int>(i));
      if (slot.absent() || slot.verdict() != proto::VERDICT_NONE) continue;
      if (slot.verifier() == lazy) {
        EXPECT_EQ(flow.SlotVerdict(i, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
        ++run.lazy_verdicts;
        posted = true;
        continue;
      }
      const Clock::TimePoint done = replay_done.try_emplace(i, clock.Now() + replay).first->second;
      if (clock.Now() < done) {
        replaying = true;
        continue;
      }
      const TxResult verdict = cheat ? flow.SlotVerdict(i, proto::VERDICT_REJECT, {flow.FinalSegment()})
                                     : flow.SlotVerdict(i, proto::VERDICT_ACCEPT);
      EXPECT_EQ(verdict.code, StatusCode::kOk);
      ++run.honest_verdicts;
      posted = true;
    }
    // A verdict went in (it may have ended the round): every slot is looked at again before time moves.
    if (posted) continue;
    clock.Advance(kBlockInterval);
    if (pacing == Pacing::kTimer || !replaying) flow.chain.AdvanceTo(flow.chain.height() + 1);
  }
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  flow.AdvancePastDeadline();  // nobody challenges in time
  EXPECT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  run.task = flow.task();
  run.solver_gain = solver_worth() - solver_before;
  return run;
}

int Count(const proto::Task& task, bool (*pred)(const proto::VerifierSlot&)) {
  return static_cast<int>(std::count_if(task.verifiers().begin(), task.verifiers().end(), pred));
}

TEST(SlowVerifierRaceTest, UnderABlockTimerTheSlowHonestRejectsStillArriveAndTheCheatIsRejected) {
  const TaskRun run = RunTask(Pacing::kTimer, /*cheat=*/true, kHonestReplay);
  EXPECT_GE(run.honest_verdicts, 1) << "the overdue slots' rejects count";
  EXPECT_GE(Count(run.task, [](const proto::VerifierSlot& s) { return s.overdue(); }), 1)
      << "every honest replay outlasted its first verify window";
  EXPECT_EQ(Count(run.task, [](const proto::VerifierSlot& s) { return s.absent(); }), 0);
  EXPECT_EQ(run.task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(run.task.outcome(), proto::OUTCOME_REJECTED);
  EXPECT_LT(run.solver_gain, -1) << "the cheat loses its lock";
}

TEST(SlowVerifierRaceTest, UnderABlockTimerTheSameSlowReplaysGetAnHonestSolverPaid) {
  const TaskRun run = RunTask(Pacing::kTimer, /*cheat=*/false, kHonestReplay);
  EXPECT_GE(run.honest_verdicts, 1);
  EXPECT_EQ(Count(run.task, [](const proto::VerifierSlot& s) { return s.absent(); }), 0);
  EXPECT_EQ(run.task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(run.task.outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_GT(run.solver_gain, 0);
}

// Honest replays slower than every window: no honest verdict counts, and the lazy accepts alone are
// too few voices. The cheat is not paid (nor would an honest proof be: nobody checked it).
TEST(SlowVerifierRaceTest, ReplaysThatOutlastEveryWindowLeaveTheCheatUnpaid) {
  const TaskRun run = RunTask(Pacing::kTimer, /*cheat=*/true, kHopelessReplay);
  EXPECT_EQ(run.honest_verdicts, 0);
  EXPECT_GE(run.lazy_verdicts, 1);
  EXPECT_GE(Count(run.task, [](const proto::VerifierSlot& s) { return s.absent(); }), 1);
  EXPECT_EQ(run.task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(run.task.outcome(), proto::OUTCOME_UNVERIFIED);
  EXPECT_EQ(run.solver_gain, -1) << "only the reveal's fee: no pay, the lock released";
}

TEST(SlowVerifierRaceTest, HoldingBlocksWhileAReplayRunsRejectsTheSameCheat) {
  const TaskRun run = RunTask(Pacing::kRolesCaughtUp, /*cheat=*/true, kHonestReplay);
  EXPECT_GE(run.honest_verdicts, 1);
  for (const proto::VerifierSlot& slot : run.task.verifiers()) {
    EXPECT_FALSE(slot.absent());
    EXPECT_FALSE(slot.overdue());
  }
  EXPECT_EQ(run.task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(run.task.outcome(), proto::OUTCOME_REJECTED);
}

}  // namespace
}  // namespace polnode::contracts::testing
