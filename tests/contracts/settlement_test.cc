// Reveal and settlement when the round is not a forced error, and the reveal deadline.
// Money of the 10,000-unit task: escrow 9,800 once verification starts (the 2% jackpot cut leaves
// it then), verifier fee budget 980 (490 per verifier slot), solver pay 8,820. Only verdicts that
// agree with the outcome are paid; every unpaid share goes back to the submitter.
#include <gtest/gtest.h>

#include "polnode/contracts/payloads.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

// Runs to the challenge window with the given verdicts (true = accept) from the assigned verifiers.
void RunToChallenge(TaskFlow& flow, bool first_accepts, bool second_accepts) {
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], first_accepts).code, StatusCode::kOk);
  ASSERT_EQ(flow.Verdict(assigned[1], second_accepts).code, StatusCode::kOk);
  ASSERT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
}

TEST(Settlement, AcceptedProofPaysSolverAndVerifiers) {
  TaskFlow flow;
  RunToChallenge(flow, true, true);
  flow.AdvancePastDeadline();
  const std::vector<PubKey> assigned = flow.Assigned();
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t v0 = flow.chain.Balance(assigned[0]);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  TxResult r = flow.Reveal(flow.proof_root);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(task.standing(), proto::PROOF_UPHELD);
  EXPECT_FALSE(task.forced_error());
  EXPECT_EQ(task.escrow(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1 + 8'820);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), v0 + 490);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter);  // 9,800 = 8,820 + 2 * 490: nothing left
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[1]).locked(), 0u);
}

// Review finding 6: accepters of a rejected proof were paid. Now the accepter's share is refunded.
TEST(Settlement, UndisputedRejectStandsAndOnlyTheRejecterIsPaid) {
  TaskFlow flow;
  RunToChallenge(flow, true, false);
  flow.AdvancePastDeadline();
  const std::vector<PubKey> assigned = flow.Assigned();
  const std::uint64_t accepter = flow.chain.Balance(assigned[0]);
  const std::uint64_t rejecter = flow.chain.Balance(assigned[1]);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_REJECTED);
  EXPECT_EQ(flow.task().standing(), proto::PROOF_UNPROVEN);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), accepter);  // not slashed either: it replayed other segments
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).bonded(), 500u);
  EXPECT_EQ(flow.chain.Balance(assigned[1]), rejecter + 490 + 1'000);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 8'820 + 490);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 0u);
}

TEST(Settlement, SlashedSolverStakeIsSplitAmongRejecters) {
  TaskFlow flow;
  RunToChallenge(flow, false, false);
  flow.AdvancePastDeadline();
  const std::vector<PubKey> assigned = flow.Assigned();
  const std::uint64_t first = flow.chain.Balance(assigned[0]);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), first + 490 + 500);
}

// Review finding 9: a slot that ended absent with fewer answers than verifiers_per_task leaves the
// verification short: the lone accept does not get the proof paid. Escrow refunded in full, the
// solver's lock released, the accepting verifier released unpaid.
TEST(Settlement, AShortVerificationIsNotPaid) {
  TaskFlow flow;
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // verdict deadline of the only round: assigned[1] absent, slashed
  ASSERT_TRUE(flow.task().verifiers(1).absent());
  flow.AdvancePastDeadline();  // challenge window closes
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t accepter = flow.chain.Balance(assigned[0]);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_UNVERIFIED);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 9'800);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1);  // the reveal's fee, nothing more
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 1'000u);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), accepter);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 0u);
}

// An absent slot whose fresh slot answered leaves enough voices: the proof is paid, and the fresh
// slot earns the fee share the absent one would have.
TEST(Settlement, AnAbsentSlotCoveredByAFreshSlotIsPaidAndItsShareRefunded) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  TaskFlow flow(params);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> first = flow.Assigned();
  const PubKey fresh = flow.Unassigned();
  ASSERT_EQ(flow.Verdict(first[0], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // first[1] overdue, fresh drawn
  ASSERT_EQ(flow.Verdict(fresh, true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // first[1] never answers: absent
  ASSERT_TRUE(flow.task().verifiers(1).absent());
  ASSERT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  flow.AdvancePastDeadline();  // challenge window closes
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t paid_fresh = flow.chain.Balance(fresh);
  const std::uint64_t paid_first = flow.chain.Balance(first[0]);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1 + 8'820);
  EXPECT_EQ(flow.chain.Balance(fresh), paid_fresh + 490);
  EXPECT_EQ(flow.chain.Balance(first[0]), paid_first + 490);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter);  // 8,820 + 2 x 490: the whole escrow
}

// An overdue slot's verdict counts for the outcome but earns no fee (waiting to see the others'
// verdicts gains nothing); its lock is released like any agreeing verdict's. The fresh slot beside
// it earns the fee share instead, so no more than verifiers_per_task shares are ever paid.
TEST(Settlement, AnOverdueVerdictCountsButEarnsNoFee) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  TaskFlow flow(params);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> first = flow.Assigned();
  const PubKey fresh = flow.Unassigned();
  ASSERT_EQ(flow.Verdict(first[0], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // first[1] overdue, fresh drawn
  ASSERT_EQ(flow.Verdict(fresh, true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Verdict(first[1], true).code, StatusCode::kOk);  // late
  ASSERT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  flow.AdvancePastDeadline();
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t late = flow.chain.Balance(first[1]);
  const std::uint64_t on_time = flow.chain.Balance(first[0]);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(flow.chain.Balance(first[1]), late);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, first[1]).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, first[1]).bonded(), 500u);
  EXPECT_EQ(flow.chain.Balance(first[0]), on_time + 490);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter);  // 8,820 + 2 x 490: the whole escrow
}

// An overdue reject of a cheat stands like one in time: undisputed, the proof is unproven, and the
// late verifier shares the solver's lock though it earns no fee.
TEST(Settlement, AnOverdueRejectStandsAndSharesTheSolversLock) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  TaskFlow flow(params);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> first = flow.Assigned();
  const PubKey fresh = flow.Unassigned();
  ASSERT_EQ(flow.Verdict(first[0], true).code, StatusCode::kOk);  // lazy
  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.Verdict(first[1], false).code, StatusCode::kOk);  // late reject
  ASSERT_EQ(flow.Verdict(fresh, false).code, StatusCode::kOk);
  ASSERT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  flow.AdvancePastDeadline();  // the solver disputes nothing
  const std::uint64_t late = flow.chain.Balance(first[1]);
  const std::uint64_t on_time = flow.chain.Balance(fresh);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_REJECTED);
  EXPECT_EQ(flow.chain.Balance(first[1]), late + 500);          // half the solver's 1,000 lock
  EXPECT_EQ(flow.chain.Balance(fresh), on_time + 490 + 500);    // fee and half the lock
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 0u);
}

// A whistleblower's challenge holds everything until its game is decided; a challenger that never
// opens forfeits, and its lock goes to the solver that stood ready to defend.
TEST(Settlement, ChallengeHoldsEverythingUntilItsGameAndAForfeitingChallengerPaysTheSolver) {
  TaskFlow flow;
  RunToChallenge(flow, true, true);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Challenge(flow.whistleblower).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_DISPUTED);
  EXPECT_EQ(task.escrow(), 9'800u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 1'000u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 500u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).locked(), 300u);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  flow.chain.AdvanceTo(flow.chain.height() + 20);
  EXPECT_EQ(flow.task().status(), proto::TASK_SETTLED);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(flow.task().challenges(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).bonded(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver + 8'820 + 300);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
}

TEST(Reveal, RejectsWrongSecretWrongRootWrongTimeAndWrongSigner) {
  TaskFlow flow;
  RunToChallenge(flow, true, true);
  EXPECT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kFailedPrecondition);  // challenge window open
  flow.AdvancePastDeadline();
  // All in one block: the reveal window is only 3 blocks long.
  proto::RevealTx wrong_root;
  wrong_root.set_task_id(flow.task_id);
  wrong_root.set_secret(flow.secret);
  wrong_root.set_result_root(Bytes32(0xBB));  // not forced: must equal the committed root
  proto::RevealTx wrong_secret = wrong_root;
  wrong_secret.set_secret(Bytes32(0x01));
  wrong_secret.set_result_root(flow.proof_root);
  proto::RevealTx by_outsider = wrong_secret;
  by_outsider.set_secret(flow.secret);
  proto::RevealTx forced_fields = by_outsider;  // not forced: no checkpoints to show
  proto::RevealedLeaf* leaf = forced_fields.add_leaves();
  leaf->set_checkpoint(flow.Segments());
  leaf->set_committed_hash(HashBytes(flow.checkpoints.back()));
  leaf->set_result_hash(HashBytes(flow.checkpoints.back()));
  BlockResult result = flow.chain.Block({flow.chain.Tx(flow.solver, payload::kReveal, wrong_root),
                                         flow.chain.Tx(flow.solver, payload::kReveal, wrong_secret),
                                         flow.chain.Tx(flow.outsider, payload::kReveal, by_outsider),
                                         flow.chain.Tx(flow.solver, payload::kReveal, forced_fields)});
  ASSERT_EQ(result.tx_results.size(), 4u);
  EXPECT_EQ(result.tx_results[0].code, StatusCode::kInvalidArgument);
  EXPECT_EQ(result.tx_results[1].code, StatusCode::kInvalidArgument);
  EXPECT_EQ(result.tx_results[2].code, StatusCode::kPermissionDenied);
  EXPECT_EQ(result.tx_results[3].code, StatusCode::kInvalidArgument);
  EXPECT_EQ(flow.task().status(), proto::TASK_REVEALING);
}

// Review finding 6: a caught solver that withheld its reveal had every verdict paid and left the
// whistleblower nothing. Now its proof is unproven: the lock goes to those who said it was wrong.
TEST(RevealDeadline, SilentSolverLeavesItsProofUnprovenAndPaysTheRightParties) {
  TaskFlow flow;
  RunToChallenge(flow, true, false);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Challenge(flow.whistleblower).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // challenge window closes
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t accepter = flow.chain.Balance(assigned[0]);
  const std::uint64_t rejecter = flow.chain.Balance(assigned[1]);
  const std::uint64_t wb = flow.chain.Balance(flow.whistleblower);
  flow.AdvancePastDeadline();  // reveal deadline
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_NO_REVEAL);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 8'820 + 490);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), accepter);
  EXPECT_EQ(flow.chain.Balance(assigned[1]), rejecter + 490 + 500);
  EXPECT_EQ(flow.chain.Balance(flow.whistleblower), wb + 500);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).bonded(), 300u);
}

}  // namespace
}  // namespace polnode::contracts::testing
