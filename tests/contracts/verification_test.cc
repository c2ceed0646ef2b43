// Segment beacon and verifier assignment, verdicts, the verdict deadline and disputes.
#include <gtest/gtest.h>

#include <algorithm>

#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

TEST(SegmentBeacon, AssignsLowestScoringEligibleVerifiersAndLocksThem) {
  TaskFlow flow;
  flow.RunToVerifying();
  const proto::Task task = flow.task();
  ASSERT_EQ(task.verifiers_size(), 2);
  // The beacon is drawn from the randomness of the block at commit height + delay.
  const Hash256 beacon = SegmentBeacon(Chain::RandomnessAt(task.commit_height() + 2), task.id(), task.proof_root());
  EXPECT_EQ(task.segment_beacon(), std::string(beacon.begin(), beacon.end()));
  std::vector<std::pair<Hash256, PubKey>> scored;
  for (const PubKey& v : flow.verifiers) scored.emplace_back(AssignmentScore(task.segment_beacon(), Raw(v)), v);
  std::sort(scored.begin(), scored.end());
  const std::vector<PubKey> assigned = flow.Assigned();
  EXPECT_EQ(assigned[0], scored[0].second);
  EXPECT_EQ(assigned[1], scored[1].second);
  for (const PubKey& v : assigned) EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, v).locked(), 500u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, flow.Unassigned()).locked(), 0u);
  EXPECT_EQ(task.deadline(), task.commit_height() + 2 + 5);
}

TEST(SegmentBeacon, SolverAndSubmitterAreNeverTheirOwnVerifiers) {
  TaskFlow flow;
  proto::StakeTx stake;
  stake.set_role(proto::ROLE_VERIFIER);
  stake.set_amount(500);
  flow.chain.Block(
      {flow.chain.Tx(flow.solver, payload::kStake, stake), flow.chain.Tx(flow.submitter, payload::kStake, stake)});
  flow.RunToVerifying();
  for (const PubKey& v : flow.Assigned()) {
    EXPECT_NE(v, flow.solver);
    EXPECT_NE(v, flow.submitter);
  }
}

TEST(SegmentBeacon, WithoutEligibleVerifiersTheTaskIsCancelledWithRefunds) {
  TaskFlow flow;
  proto::UnstakeTx unstake;
  unstake.set_role(proto::ROLE_VERIFIER);
  unstake.set_amount(500);
  std::vector<VerifiedTx> txs;
  for (const PubKey& v : flow.verifiers) txs.push_back(flow.chain.Tx(v, payload::kUnstake, unstake));
  flow.chain.Block(txs);
  flow.Submit(10'000);
  flow.Claim();
  flow.Commit();
  const std::uint64_t before = flow.chain.Balance(flow.submitter);
  flow.AwaitAssignment();
  EXPECT_EQ(flow.task().status(), proto::TASK_CANCELLED);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_NO_VERIFIERS);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before + 9'800);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
}

TEST(Verdict, LastVerdictOpensTheChallengeWindow) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().status(), proto::TASK_VERIFYING);
  ASSERT_EQ(flow.Verdict(assigned[1], false).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_EQ(task.deadline(), flow.chain.height() + 4);
  EXPECT_EQ(task.verifiers(0).verdict(), proto::VERDICT_ACCEPT);
  EXPECT_EQ(task.verifiers(1).verdict(), proto::VERDICT_REJECT);
}

TEST(Verdict, OnlyAssignedVerifiersOnceEach) {
  TaskFlow flow;
  flow.RunToVerifying();
  EXPECT_EQ(flow.Verdict(flow.Unassigned(), true).code, StatusCode::kPermissionDenied);
  ASSERT_EQ(flow.Verdict(flow.Assigned()[0], true).code, StatusCode::kOk);
  EXPECT_EQ(flow.Verdict(flow.Assigned()[0], false).code, StatusCode::kAlreadyExists);
  EXPECT_EQ(flow.task().verifiers(0).verdict(), proto::VERDICT_ACCEPT);
}

TEST(VerdictDeadline, AbsentVerifierIsSlashedToTheJackpot) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  const std::uint64_t jackpot = flow.chain.Jackpot();
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  EXPECT_EQ(flow.chain.Jackpot(), jackpot + 500);
  const proto::StakeRecord absent = flow.chain.Stake(proto::ROLE_VERIFIER, assigned[1]);
  EXPECT_EQ(absent.bonded(), 0u);
  EXPECT_EQ(absent.locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 500u);
}

TEST(VerdictDeadline, NoVerdictAtAllCancelsWithRefunds) {
  TaskFlow flow;
  flow.RunToVerifying(10'000);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t jackpot = flow.chain.Jackpot();
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.task().status(), proto::TASK_CANCELLED);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_UNVERIFIED);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 9'800);
  EXPECT_EQ(flow.chain.Jackpot(), jackpot + 1'000);  // both absent verifiers
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 1'000u);
}

TEST(Dispute, WhistleblowerLocksStakeAndOneDisputePerVerdict) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  EXPECT_EQ(flow.Dispute(flow.whistleblower, assigned[0]).code, StatusCode::kFailedPrecondition);  // not yet
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Dispute(flow.whistleblower, assigned[0]).code, StatusCode::kOk);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).locked(), 300u);
  EXPECT_EQ(flow.task().verifiers(0).disputer(), Raw(flow.whistleblower));
  // All in one block: the challenge window is only 4 blocks long.
  const auto dispute = [&flow](const PubKey& disputer, const PubKey& verifier) {
    proto::DisputeTx msg;
    msg.set_task_id(flow.task_id);
    msg.set_verifier(Raw(verifier));
    return flow.chain.Tx(disputer, payload::kDispute, msg);
  };
  BlockResult result = flow.chain.Block({
      dispute(flow.outsider, assigned[0]),        // already disputed
      dispute(flow.outsider, assigned[1]),        // the outsider has no whistleblower stake
      dispute(assigned[1], assigned[1]),          // own verdict
      dispute(flow.whistleblower, flow.outsider)  // not a verifier of the task
  });
  ASSERT_EQ(result.tx_results.size(), 4u);
  EXPECT_EQ(result.tx_results[0].code, StatusCode::kAlreadyExists);
  EXPECT_EQ(result.tx_results[1].code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(result.tx_results[2].code, StatusCode::kInvalidArgument);
  EXPECT_EQ(result.tx_results[3].code, StatusCode::kNotFound);
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
}

TEST(Dispute, SolverMayDisputeOnlyRejections) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Verdict(assigned[1], false).code, StatusCode::kOk);
  EXPECT_EQ(flow.Dispute(flow.solver, assigned[0]).code, StatusCode::kFailedPrecondition);
  ASSERT_EQ(flow.Dispute(flow.solver, assigned[1]).code, StatusCode::kOk);
  EXPECT_TRUE(flow.task().verifiers(1).disputer_is_solver());
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 1'000u);
}

TEST(Dispute, AnAbsentVerifierHasNothingToDispute) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.Dispute(flow.whistleblower, assigned[1]).code, StatusCode::kFailedPrecondition);
}

TEST(ChallengeEnd, OpensTheRevealWindow) {
  TaskFlow flow;
  flow.RunToVerifying();
  for (const PubKey& v : flow.Assigned()) ASSERT_EQ(flow.Verdict(v, true).code, StatusCode::kOk);
  const std::uint64_t end = flow.task().deadline();
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.task().status(), proto::TASK_REVEALING);
  EXPECT_EQ(flow.task().deadline(), end + 3);
}

}  // namespace
}  // namespace polnode::contracts::testing
