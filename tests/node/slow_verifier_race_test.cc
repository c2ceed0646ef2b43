// Issue 16 item 8: under load, DevnetE2eTest.RolesKilledMidTaskAndALedgerOutageAreRiddenOut saw the
// cheating solver's task ACCEPTED. The chain counts its windows in blocks, and `polnode ledger` made
// a block every 100 ms of wall time whatever the roles were doing. The devnet's honest verifier
// replays on one thread beside two solvers training on every thread (and, that day, other work on
// the two cores), so its replay could outlast the verify window (600 blocks: 60 s) while the lazy
// verifier's accept was in at once. Its slots went absent; the replacement slots are drawn among keys
// that were absent from none of the task's slots, which in the devnet leaves the lazy verifier
// alone, so it took them and accepted again; with no reject the challenge window (150 blocks: 15 s)
// opened, the whistleblower's one-thread replay outlasted that too, and the cheat was accepted.
//
// This reproduces that ordering on a ManualClock: one block per 100 ms of clock time (the ledger's
// timer) against honest replays that take 70 s of it, and shows the devnet's pacing (no block while
// a replay runs, devnet.cc PaceBlocks) turning the same work into a rejection. Nothing here depends
// on how fast this machine is: the clock moves only when the test says.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "polnode/base/clock.h"
#include "polnode/contracts/payloads.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

using namespace std::chrono_literals;

constexpr Clock::Duration kBlockInterval = 100ms;
// An honest replay on the loaded machine: longer than the verify window's 600 blocks of 100 ms.
constexpr Clock::Duration kHonestReplay = 70s;

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
  proto::Task task;        // once the solver revealed: settled
  int honest_verdicts = 0;  // posted in time
  int lazy_verdicts = 0;
};

// One task whose proof is a cheat (every replay of its final segment fails), verified by
// verifiers[0], lazy (it accepts as soon as it holds a slot), and verifiers[1] and [2], honest (a
// slot's reject is ready kHonestReplay of clock time after the slot is drawn). No whistleblower
// challenges: its replay, slower still, never ends within the challenge window. Then the solver
// reveals and the task settles.
TaskRun RunCheatedTask(Pacing pacing) {
  ManualClock clock;
  TaskFlow flow(DevnetParams());
  flow.RunToVerifying();
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
      const Clock::TimePoint done = replay_done.try_emplace(i, clock.Now() + kHonestReplay).first->second;
      if (clock.Now() < done) {
        replaying = true;
        continue;
      }
      EXPECT_EQ(flow.SlotVerdict(i, proto::VERDICT_REJECT, {flow.FinalSegment()}).code, StatusCode::kOk);
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
  return run;
}

TEST(SlowVerifierRaceTest, ABlockTimerLetsSlowHonestReplaysTurnALazyAcceptIntoAnAcceptedCheat) {
  const TaskRun run = RunCheatedTask(Pacing::kTimer);
  EXPECT_EQ(run.honest_verdicts, 0) << "every honest replay outlasted its verify window";
  EXPECT_GE(run.lazy_verdicts, 1);
  int absent = 0;
  for (const proto::VerifierSlot& slot : run.task.verifiers()) {
    if (slot.absent()) {
      ++absent;
      continue;
    }
    EXPECT_EQ(slot.verdict(), proto::VERDICT_ACCEPT) << "only the lazy verifier's accepts count";
  }
  EXPECT_GE(absent, 1);
  EXPECT_EQ(run.task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(run.task.outcome(), proto::OUTCOME_ACCEPTED) << "the cheat was paid for";
}

TEST(SlowVerifierRaceTest, HoldingBlocksWhileAReplayRunsRejectsTheSameCheat) {
  const TaskRun run = RunCheatedTask(Pacing::kRolesCaughtUp);
  EXPECT_GE(run.honest_verdicts, 1);
  for (const proto::VerifierSlot& slot : run.task.verifiers()) EXPECT_FALSE(slot.absent());
  EXPECT_EQ(run.task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(run.task.outcome(), proto::OUTCOME_REJECTED);
}

}  // namespace
}  // namespace polnode::contracts::testing
