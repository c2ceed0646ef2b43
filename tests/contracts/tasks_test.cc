// Task submission, cancellation, claims, proof commitments and their deadlines.
#include <gtest/gtest.h>

#include "polnode/consensus/merkle.h"
#include "polnode/contracts/payloads.h"
#include "task_flow.h"

namespace polnode::contracts::testing {
namespace {

proto::CancelTaskTx CancelMsg(const std::string& task_id) {
  proto::CancelTaskTx msg;
  msg.set_task_id(task_id);
  return msg;
}

// Issue 15 finding 7: the jackpot cut was kept on tasks that never ran. It now stays in escrow
// until verification starts (verification_test.cc), so an unclaimed task is refunded in full.
TEST(SubmitTask, EscrowsThePaymentAndRecordsTheJackpotCut) {
  TaskFlow flow;
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  flow.Submit(10'000);
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_OPEN);
  EXPECT_EQ(task.escrow(), 10'000u);
  EXPECT_EQ(task.jackpot_cut(), 200u);  // 2%
  EXPECT_EQ(flow.chain.Jackpot(), 0u);
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
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before - 1 + 10'000);
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
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before + 10'000);
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

TEST(ClaimTask, TheSubmitterCannotSolveItsOwnTask) {
  TaskFlow flow;
  proto::StakeTx stake;
  stake.set_role(proto::ROLE_SOLVER);
  stake.set_amount(1'000);
  ASSERT_EQ(flow.chain.Run(flow.submitter, payload::kStake, stake).code, StatusCode::kOk);
  flow.Submit();
  proto::ClaimTaskTx msg;
  msg.set_task_id(flow.task_id);
  msg.set_secret_commitment(Bytes32(1));
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kClaimTask, msg).code, StatusCode::kPermissionDenied);
}

// Issue 15: locks were fixed while payments grow, so large tasks made cheating pay.
TEST(ClaimTask, TheLockGrowsWithThePayment) {
  proto::Params params = TestParams();
  params.set_solver_lock_bps(2'000);  // 20% of the payment, at least min_stake_solver
  TaskFlow flow(params);
  proto::StakeTx stake;
  stake.set_role(proto::ROLE_SOLVER);
  stake.set_amount(5'000);
  ASSERT_EQ(flow.chain.Run(flow.solver, payload::kStake, stake).code, StatusCode::kOk);
  flow.Submit(30'000);
  flow.Claim();
  EXPECT_EQ(flow.task().solver_lock(), 6'000u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 6'000u);
  TaskFlow small(params);
  small.Submit(1'000);
  small.Claim();
  EXPECT_EQ(small.task().solver_lock(), 1'000u);  // the minimum
}

// Review finding 8: nothing bound a proof to the solver that trained it, so a second task with the
// same document could be paid for a copied root. A document is now trained once.
TEST(SubmitTask, ADocumentIsTrainedOnce) {
  TaskFlow flow;
  flow.Submit(10'000);
  const std::string first = flow.task_id;
  const proto::SubmitTaskTx same = TaskSubmission(10'000);
  TxResult r = flow.chain.Run(flow.outsider, payload::kSubmitTask, same);
  EXPECT_EQ(r.code, StatusCode::kAlreadyExists) << r.log;
  // Once the first task closes without a proof, the document may be posted again.
  ASSERT_EQ(flow.chain.Run(flow.submitter, payload::kCancelTask, CancelMsg(first)).code, StatusCode::kOk);
  EXPECT_EQ(flow.chain.Run(flow.outsider, payload::kSubmitTask, same).code, StatusCode::kOk);
}

// Review finding 7: steps = 2^64 - 1 with k = 1 was accepted and the segment count wrapped.
TEST(SubmitTask, SizesAreBoundedSoNoCountWraps) {
  TaskFlow flow;
  proto::SubmitTaskTx huge = TaskSubmission(1'000);
  huge.mutable_spec()->set_total_steps(UINT64_MAX);
  huge.mutable_spec()->set_checkpoint_interval(1);
  EXPECT_EQ(flow.chain.Run(flow.submitter, payload::kSubmitTask, huge).code, StatusCode::kInvalidArgument);
  proto::Params params = TestParams();
  params.set_max_segments(5);
  TaskFlow bounded(params);
  proto::SubmitTaskTx many = TaskSubmission(1'000);  // 10 segments
  EXPECT_EQ(bounded.chain.Run(bounded.submitter, payload::kSubmitTask, many).code, StatusCode::kInvalidArgument);
  many.mutable_spec()->set_checkpoint_interval(200);  // 5 segments
  EXPECT_EQ(bounded.chain.Run(bounded.submitter, payload::kSubmitTask, many).code, StatusCode::kOk);
}

// A proof must start from the state the task fixes; the ledger checks checkpoint 0 at the
// commitment, since a dispute game can only show a transition wrong, not a wrong starting point.
TEST(CommitProof, CheckpointZeroMustBeTheTasksInitialState) {
  TaskFlow flow;
  flow.Submit();
  flow.Claim();
  flow.chain.AdvanceTo(flow.task().claim_height() + flow.chain.params().beacon_delay());
  std::vector<Hash256> forged = flow.checkpoints;
  forged[0].fill(0x01);  // another starting point
  const std::vector<std::uint8_t> proof = consensus::SerializeMerkleProof(*consensus::MerkleTree(forged).Prove(0));
  proto::CommitProofTx msg;
  msg.set_task_id(flow.task_id);
  msg.set_proof_root(HashBytes(consensus::MerkleRoot(forged)));
  msg.set_proof_uri("http://solver.local/proof");
  msg.set_initial_proof(std::string(proof.begin(), proof.end()));
  TxResult r = flow.chain.Run(flow.solver, payload::kCommitProof, msg);
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument) << r.log;
  msg.clear_initial_proof();
  EXPECT_EQ(flow.chain.Run(flow.solver, payload::kCommitProof, msg).code, StatusCode::kInvalidArgument);
  flow.Commit();  // the real one
  EXPECT_EQ(flow.task().status(), proto::TASK_COMMITTED);
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

// Issue 15 finding 1: an abandoned claim's lock went to the submitter, who may be the solver under
// a second key. It now goes to the jackpot; the submitter gets its payment back in full.
TEST(CommitDeadline, SilentSolverIsSlashedToTheJackpot) {
  TaskFlow flow;
  flow.Submit(10'000);
  flow.Claim();
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  flow.chain.AdvanceTo(flow.task().deadline());
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CANCELLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_NO_COMMIT);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before + 10'000);
  EXPECT_EQ(flow.chain.Jackpot(), 1'000u);
  const proto::StakeRecord stake = flow.chain.Stake(proto::ROLE_SOLVER, flow.solver);
  EXPECT_EQ(stake.bonded(), 0u);
  EXPECT_EQ(stake.locked(), 0u);
}

}  // namespace
}  // namespace polnode::contracts::testing
