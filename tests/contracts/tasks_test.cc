// Task submission, cancellation, claims, proof commitments and their deadlines.
#include <gtest/gtest.h>

#include "polnode/contracts/payloads.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

proto::CancelTaskTx CancelMsg(const std::string& task_id) {
  proto::CancelTaskTx msg;
  msg.set_task_id(task_id);
  return msg;
}

TEST(SubmitTask, EscrowsPaymentMinusJackpotCut) {
  TaskFlow flow;
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  flow.Submit(10'000);
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_OPEN);
  EXPECT_EQ(task.escrow(), 9'800u);  // 2% cut
  EXPECT_EQ(flow.chain.Jackpot(), 200u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before - 10'000 - 1);
  EXPECT_EQ(task.deadline(), task.submit_height() + 10);
  EXPECT_EQ(task.seq(), 0u);
  EXPECT_EQ(flow.chain.TaskIdAt(0), flow.task_id);
}

TEST(SubmitTask, RejectsWindowsBeyondParamsAndShortTrainingWindow) {
  TaskFlow flow;
  proto::SubmitTaskTx too_long = TaskSubmission(100);
  too_long.mutable_spec()->set_claim_window(101);
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kSubmitTask, too_long).code, StatusCode::kInvalidArgument);
  proto::SubmitTaskTx too_short = TaskSubmission(100);
  too_short.mutable_spec()->set_training_window(2);  // == beacon delay: no block to commit in
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kSubmitTask, too_short).code, StatusCode::kInvalidArgument);
  EXPECT_EQ(flow.chain.Jackpot(), 0u);
}

TEST(SubmitTask, RejectsInconsistentSpec) {
  TaskFlow flow;
  proto::SubmitTaskTx msg = TaskSubmission(100);
  msg.mutable_spec()->set_total_steps(1050);  // not a multiple of k = 100
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kSubmitTask, msg).code, StatusCode::kInvalidArgument);
  msg = TaskSubmission(100);
  msg.mutable_spec()->set_segments_per_verification(11);  // only 10 segments
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kSubmitTask, msg).code, StatusCode::kInvalidArgument);
  msg = TaskSubmission(100);
  msg.set_spec_uri("http://bad\n");
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kSubmitTask, msg).code, StatusCode::kInvalidArgument);
}

TEST(SubmitTask, PaymentBeyondBalanceFails) {
  TaskFlow flow;
  TxResult r = flow.chain.Run(flow.submitter, payload::kSubmitTask, TaskSubmission(kFunds));
  EXPECT_EQ(r.code, StatusCode::kFailedPrecondition);
  EXPECT_TRUE(r.fee_charged);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), kFunds - 1);
}

TEST(CancelTask, SubmitterGetsEscrowBack) {
  TaskFlow flow;
  flow.Submit(10'000);
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  TxResult r = flow.chain.Run(flow.submitter, payload::kCancelTask, CancelMsg(flow.task_id));
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before - 1 + 9'800);
  EXPECT_EQ(flow.task().status(), proto::TASK_CANCELLED);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_CANCELLED_BY_SUBMITTER);
  EXPECT_EQ(flow.task().escrow(), 0u);
}

TEST(CancelTask, OnlySubmitterAndOnlyWhileOpen) {
  TaskFlow flow;
  flow.Submit();
  EXPECT_EQ(flow.chain.Run(flow.outsider, payload::kCancelTask, CancelMsg(flow.task_id)).code,
            StatusCode::kPermissionDenied);
  flow.Claim();
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kCancelTask, CancelMsg(flow.task_id)).code,
            StatusCode::kFailedPrecondition);
}

TEST(ClaimDeadline, UnclaimedTaskIsRefunded) {
  TaskFlow flow;
  flow.Submit(10'000);
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  flow.chain.AdvanceTo(flow.task().deadline() - 1);
  EXPECT_EQ(flow.task().status(), proto::TASK_OPEN);
  flow.chain.AdvanceTo(flow.task().deadline());
  EXPECT_EQ(flow.task().status(), proto::TASK_CANCELLED);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_UNCLAIMED);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before + 9'800);
}

TEST(ClaimTask, LocksSolverStakeAndSchedulesSeed) {
  TaskFlow flow;
  flow.Submit();
  flow.Claim();
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CLAIMED);
  EXPECT_EQ(task.deadline(), task.claim_height() + 20);
  EXPECT_TRUE(task.forced_seed().empty());
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 1'000u);
  flow.chain.AdvanceTo(task.claim_height() + 2);
  EXPECT_EQ(flow.task().forced_seed().size(), 32u);
}

TEST(ClaimTask, NeedsFreeSolverStakeAndAnOpenTask) {
  TaskFlow flow;
  flow.Submit();
  proto::ClaimTaskTx msg;
  msg.set_task_id(flow.task_id);
  msg.set_secret_commitment(Bytes32(1));
  EXPECT_EQ(flow.chain.Run(flow.outsider, payload::kClaimTask, msg).code, StatusCode::kFailedPrecondition);
  flow.Claim();
  EXPECT_EQ(flow.chain.Run(flow.solver, payload::kClaimTask, msg).code, StatusCode::kFailedPrecondition);
}

TEST(CommitProof, WaitsForTheForcedErrorSeed) {
  TaskFlow flow;
  flow.Submit();
  flow.Claim();
  proto::CommitProofTx msg;
  msg.set_task_id(flow.task_id);
  msg.set_proof_root(Bytes32(0xAA));
  msg.set_proof_uri("http://solver.local/proof");
  EXPECT_EQ(flow.chain.Run(flow.solver, payload::kCommitProof, msg).code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(flow.chain.Run(flow.outsider, payload::kCommitProof, msg).code, StatusCode::kPermissionDenied);
  flow.Commit();
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_COMMITTED);
  EXPECT_EQ(task.proof_root(), flow.proof_root);
  EXPECT_EQ(task.deadline(), task.commit_height() + 2);
  EXPECT_TRUE(task.segment_beacon().empty());
}

TEST(CommitDeadline, SilentSolverIsSlashedToSubmitter) {
  TaskFlow flow;
  flow.Submit(10'000);
  flow.Claim();
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  flow.chain.AdvanceTo(flow.task().deadline());
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CANCELLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_NO_COMMIT);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before + 9'800 + 1'000);
  const proto::StakeRecord stake = flow.chain.Stake(proto::ROLE_SOLVER, flow.solver);
  EXPECT_EQ(stake.bonded(), 0u);
  EXPECT_EQ(stake.locked(), 0u);
}

}  // namespace
}  // namespace polnode::contracts::testing
