// Forced-error rounds (forced_error_rate = 1: every round is forced). The committed proof is
// deliberately wrong, so accepting it is provably lazy. Money of the 10,000-unit task: escrow
// 9,800, verifier share 490, solver pay 8,820; the jackpot starts with the 200 cut.
#include <gtest/gtest.h>

#include "polnode/contracts/beacon.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

proto::Params ForcedParams() {
  proto::Params params = TestParams();
  params.set_forced_error_rate(1);
  return params;
}

const std::string kHonestRoot = Bytes32(0xBB);

TEST(ForcedError, WhistleblowerCatchesALazyVerifierAndWinsTheJackpot) {
  TaskFlow flow(ForcedParams());
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);  // both lazy: accept
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Dispute(flow.whistleblower, assigned[0]).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const std::uint64_t whistleblower = flow.chain.Balance(flow.whistleblower);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t lazy = flow.chain.Balance(assigned[1]);
  ASSERT_EQ(flow.chain.Jackpot(), 200u);

  TxResult r = flow.Reveal(kHonestRoot);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const proto::Task task = flow.task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_TRUE(task.forced_error());
  EXPECT_EQ(task.result_root(), kHonestRoot);
  // Caught verifier's 500 goes to the whistleblower; the undisputed lazy one's 500 to the pool
  // (200 + 500 = 700), of which 50% (350) is paid to the single catcher.
  EXPECT_EQ(flow.chain.Balance(flow.whistleblower), whistleblower + 500 + 350);
  EXPECT_EQ(flow.chain.Jackpot(), 350u);
  EXPECT_EQ(flow.chain.Balance(assigned[1]), lazy);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).bonded(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[1]).bonded(), 0u);
  const proto::StakeRecord wb = flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower);
  EXPECT_EQ(wb.locked(), 0u);
  EXPECT_EQ(wb.bonded(), 300u);
  // The solver followed the rules: paid, lock released. Unearned verifier shares are refunded.
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1 + 8'820);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 980);
}

TEST(ForcedError, LazyVerifierIsSlashedEvenWhenNobodyDisputes) {
  TaskFlow flow(ForcedParams());
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.Reveal(kHonestRoot).code, StatusCode::kOk);
  EXPECT_EQ(flow.chain.Jackpot(), 200u + 1'000u);  // no catcher: nothing paid out
  for (const PubKey& v : assigned) EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, v).bonded(), 0u);
}

TEST(ForcedError, DiligentVerifierEarnsJackpotAndWrongWhistleblowerPays) {
  TaskFlow flow(ForcedParams());
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], false).code, StatusCode::kOk);               // diligent: rejects
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);                // lazy
  ASSERT_EQ(flow.Dispute(flow.whistleblower, assigned[0]).code, StatusCode::kOk);  // wrong dispute
  flow.AdvancePastDeadline();
  const std::uint64_t diligent = flow.chain.Balance(assigned[0]);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  ASSERT_EQ(flow.Reveal(kHonestRoot).code, StatusCode::kOk);
  // Fee 490 + the whistleblower's 300 + half of the pool (200 + 500 lazy slash) = 350.
  EXPECT_EQ(flow.chain.Balance(assigned[0]), diligent + 490 + 300 + 350);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).bonded(), 500u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).bonded(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 490);
}

TEST(ForcedError, RevealMustNameADifferentHonestProof) {
  TaskFlow flow(ForcedParams());
  flow.RunToVerifying();
  for (const PubKey& v : flow.Assigned()) ASSERT_EQ(flow.Verdict(v, false).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kInvalidArgument);
  EXPECT_EQ(flow.task().status(), proto::TASK_REVEALING);
}

TEST(ForcedError, FlagFollowsSecretAndDrawnSeed) {
  proto::Params params = TestParams();
  params.set_forced_error_rate(3);
  TaskFlow flow(params);
  flow.RunToVerifying();
  for (const PubKey& v : flow.Assigned()) ASSERT_EQ(flow.Verdict(v, true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const proto::Task before = flow.task();
  const bool forced = IsForcedError(flow.secret, before.forced_seed(), before.id(), 3);
  ASSERT_EQ(flow.Reveal(forced ? kHonestRoot : flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().forced_error(), forced);
  EXPECT_EQ(flow.task().outcome(), forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_ACCEPTED);
}

}  // namespace
}  // namespace polnode::contracts::testing
