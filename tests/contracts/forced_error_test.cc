// Forced-error rounds (forced_error_rate = 1: every round is forced). The committed proof is the
// honest one with a deliberately wrong final checkpoint, so accepting it is provably lazy; the
// solver shows the honest proof at the reveal and is paid only when a verifier that caught the
// error reached the same honest final state (its final digest), and the honest proof survives any
// claim against it. Money of the 10,000-unit task: escrow 9,800, verifier share 490, solver pay
// 8,820; the jackpot starts with the 200 cut.
#include <gtest/gtest.h>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"
#include "polnode/dispute.pb.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

proto::Params ForcedParams() {
  proto::Params params = TestParams();
  params.set_forced_error_rate(1);
  return params;
}

const std::string kHonestFinal = Bytes32(0xF1);

// A flow whose committed proof has 11 checkpoints (10 segments), the last one the forced error.
void Prepare(TaskFlow& flow) {
  std::vector<Hash256> leaves(11);
  for (std::size_t i = 0; i < leaves.size(); ++i) leaves[i].fill(static_cast<std::uint8_t>(0x40 + i));
  leaves[0].fill(0xD5);  // the spec's initial state
  flow.SetCheckpoints(leaves);
  flow.replay_final = kHonestFinal;
}

TEST(ForcedError, DiligentVerifierVouchesEarnsTheJackpotAndTheSolverIsPaid) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], false).code, StatusCode::kOk);  // diligent: the final segment fails
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);   // lazy
  flow.AdvancePastDeadline();
  const std::uint64_t diligent = flow.chain.Balance(assigned[0]);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  TxResult r = flow.RevealForced(kHonestFinal);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const proto::Task task = flow.task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_TRUE(task.forced_error());
  EXPECT_TRUE(task.verifiers(0).vouched());
  EXPECT_EQ(task.result_root(), flow.RootWithFinal(kHonestFinal));
  EXPECT_EQ(task.proof_root(), task.result_root());  // the honest proof is the one delivered
  EXPECT_EQ(task.forced_root(), flow.proof_root);
  // Fee 490 + half of the pool (200 + the lazy verifier's 500) = 350.
  EXPECT_EQ(flow.chain.Balance(assigned[0]), diligent + 490 + 350);
  EXPECT_EQ(flow.chain.Jackpot(), 350u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[1]).bonded(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1 + 8'820);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 490);
}

TEST(ForcedError, WhistleblowerCatchesLazyVerifiersButNobodyVouchesForTheHonestProof) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);  // both lazy
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Challenge(flow.whistleblower).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const std::uint64_t wb = flow.chain.Balance(flow.whistleblower);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  ASSERT_EQ(flow.RevealForced(kHonestFinal).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  // No verifier replayed the final segment, so nothing shows the honest proof is honest.
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_UNVERIFIED);
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  // Its replay reached the honest final state: a catch.
  EXPECT_TRUE(task.challenges(0).caught());
  // The lazy verifiers' 1,000 joins the pool (1,200); half of it goes to the only catcher.
  EXPECT_EQ(flow.chain.Balance(flow.whistleblower), wb + 600);
  EXPECT_EQ(flow.chain.Jackpot(), 600u);
  for (const PubKey& v : assigned) EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, v).bonded(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).locked(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1);  // the reveal's fee; not paid, lock released
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 1'000u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 9'800);
}

// Issue 15's copycat whistleblower (econ/README.md): verdicts are public in the challenge window and
// in an honest world only forced rounds draw rejects, so challenging whenever a verifier rejected
// caught every forced error without a replay. A challenge now commits to the final state its
// replay reached, and only one that reached the honest final state is a catch; one without claims
// the honest proof is wrong too, plays a game over it, cannot open it, and pays the solver its lock.
TEST(ForcedError, OnlyAChallengeThatReachedTheHonestFinalStateCatches) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  const PubKey replayer = flow.outsider;
  ASSERT_EQ(flow.chain.Run(replayer, payload::kStake, [] {
    proto::StakeTx stake;
    stake.set_role(proto::ROLE_WHISTLEBLOWER);
    stake.set_amount(300);
    return stake;
  }()).code, StatusCode::kOk);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], false).code, StatusCode::kOk);  // diligent: vouches
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);   // lazy
  // The copycat saw the reject and offers the committed proof's own final checkpoint; the other
  // whistleblower replayed the final segment.
  const std::string committed_final = HashBytes(flow.checkpoints.back());
  ASSERT_EQ(flow.ChallengeReaching(flow.whistleblower, committed_final).code, StatusCode::kOk);
  ASSERT_EQ(flow.ChallengeReaching(replayer, kHonestFinal).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const std::uint64_t copycat = flow.chain.Balance(flow.whistleblower);
  const std::uint64_t catcher = flow.chain.Balance(replayer);
  const std::uint64_t diligent = flow.chain.Balance(assigned[0]);
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  ASSERT_EQ(flow.RevealForced(kHonestFinal).code, StatusCode::kOk);
  proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_DISPUTED);
  EXPECT_FALSE(task.challenges(0).caught());
  EXPECT_TRUE(task.challenges(1).caught());
  Result<std::optional<std::string>> bytes =
      flow.chain.state().Get("game/" + consensus::ToHex(task.id()) + "/" + consensus::ToHex(flow.whistleblower));
  ASSERT_TRUE(bytes.ok() && bytes->has_value());
  proto::DisputeGame game;
  ASSERT_TRUE(game.ParseFromString(**bytes));
  EXPECT_EQ(game.proof_root(), flow.RootWithFinal(kHonestFinal));  // the game is over the honest proof
  EXPECT_FALSE(game.challenger_is_verifier());
  // With nothing wrong to show, the copycat never opens and forfeits.
  flow.chain.AdvanceTo(flow.chain.height() + 10);
  task = flow.task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_EQ(task.challenges(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(task.challenges(1).game_result(), proto::GAME_RESULT_NONE);
  // Catchers: the diligent verifier and the replaying whistleblower share half of the pool (200
  // cut + the lazy verifier's 500): 175 each. The copycat's 300 goes to the solver.
  EXPECT_EQ(flow.chain.Balance(assigned[0]), diligent + 490 + 175);
  EXPECT_EQ(flow.chain.Balance(replayer), catcher + 175);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, replayer).locked(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.whistleblower), copycat);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).bonded(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1 + 8'820 + 300);
  EXPECT_EQ(flow.chain.Jackpot(), 350u);
}

// Tolerant tasks have no exact final state to commit to (verdicts give 32 zero bytes): any digest
// catches, as any rejecting verifier's vouches.
TEST(ForcedError, InATolerantTaskAnyChallengeCatches) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  flow.spec = TaskSubmission(10'000).spec();
  flow.spec->set_tolerant(true);
  flow.spec->set_initial_state_hash(HashBytes(flow.checkpoints[0]));
  flow.RunToVerifying(10'000);
  for (const PubKey& v : flow.Assigned()) ASSERT_EQ(flow.Verdict(v, true).code, StatusCode::kOk);
  ASSERT_EQ(flow.ChallengeReaching(flow.whistleblower, std::string(32, '\0')).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.RevealForced(kHonestFinal).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  EXPECT_TRUE(task.challenges(0).caught());
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
}

// Review finding 4: a solver that knew its round was forced committed garbage, revealed a random
// "honest" root and was paid in full. Now the verifiers' digests do not reach that root's final
// state, so their rejects are claims against it, which the solver must win in a game.
TEST(ForcedError, GarbageAndARandomHonestRootEarnNothing) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  for (const PubKey& v : assigned) ASSERT_EQ(flow.Verdict(v, false).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const std::uint64_t jackpot = flow.chain.Jackpot();
  ASSERT_EQ(flow.RevealForced(Bytes32(0x77)).code, StatusCode::kOk);  // not what any replay reached
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_DISPUTED);
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    EXPECT_FALSE(slot.vouched());
    EXPECT_TRUE(slot.disputed());
  }
  // Even when every challenger stays silent (and forfeits), nobody vouched: no pay.
  flow.chain.AdvanceTo(flow.chain.height() + 30);
  task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_UNVERIFIED);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver + 2 * 500);  // the forfeiting challengers' locks, no pay
  EXPECT_EQ(flow.chain.Jackpot(), jackpot);                      // no catcher, nothing paid out
}

TEST(ForcedError, AVerifierThatMissesTheHonestFinalPlaysAGameOverTheHonestProof) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], false).code, StatusCode::kOk);
  flow.replay_final = Bytes32(0x55);  // a replay that went elsewhere
  ASSERT_EQ(flow.Verdict(assigned[1], false).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.RevealForced(kHonestFinal).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_DISPUTED);
  EXPECT_TRUE(task.verifiers(0).vouched());
  EXPECT_TRUE(task.verifiers(1).disputed());
  Result<std::optional<std::string>> bytes =
      flow.chain.state().Get("game/" + consensus::ToHex(task.id()) + "/" + consensus::ToHex(assigned[1]));
  ASSERT_TRUE(bytes.ok() && bytes->has_value());
  proto::DisputeGame game;
  ASSERT_TRUE(game.ParseFromString(**bytes));
  EXPECT_EQ(game.proof_root(), flow.RootWithFinal(kHonestFinal));
  EXPECT_EQ(game.defender().key(), Raw(flow.solver));
  // The challenger never opens: it forfeits to the solver, which is paid (vouched by assigned[0]).
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  flow.chain.AdvanceTo(flow.chain.height() + 10);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_EQ(flow.task().verifiers(1).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver + 8'820 + 500);
}

TEST(ForcedError, TheJackpotPayoutIsCappedByThePayment) {
  proto::Params params = ForcedParams();
  params.set_jackpot_payout_cap_bps(100);  // 1% of the payment
  TaskFlow flow(params);
  Prepare(flow);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], false).code, StatusCode::kOk);
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const std::uint64_t diligent = flow.chain.Balance(assigned[0]);
  ASSERT_EQ(flow.RevealForced(kHonestFinal).code, StatusCode::kOk);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), diligent + 490 + 100);
  EXPECT_EQ(flow.chain.Jackpot(), 700u - 100u);
}

TEST(ForcedError, TheHonestProofMustBeTheCommittedOneWithOnlyItsFinalCheckpointReplaced) {
  TaskFlow flow(ForcedParams());
  Prepare(flow);
  flow.RunToVerifying();
  for (const PubKey& v : flow.Assigned()) ASSERT_EQ(flow.Verdict(v, false).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  // All in one block: the reveal window is only 3 blocks long.
  proto::RevealTx missing;  // the forced fields are missing
  missing.set_task_id(flow.task_id);
  missing.set_secret(flow.secret);
  missing.set_result_root(flow.proof_root);
  proto::RevealTx same = missing;  // the "honest" final is the committed one
  same.set_committed_final(HashBytes(flow.checkpoints.back()));
  same.set_honest_final(HashBytes(flow.checkpoints.back()));
  const std::vector<std::uint8_t> path =
      consensus::SerializeMerkleProof(*consensus::MerkleTree(flow.checkpoints).Prove(flow.checkpoints.size() - 1));
  same.set_final_proof(std::string(path.begin(), path.end()));
  proto::RevealTx other_root = same;  // not the committed proof with a new final leaf
  other_root.set_honest_final(kHonestFinal);
  other_root.set_result_root(Bytes32(0xBB));
  proto::RevealTx wrong_path = other_root;  // the path of another leaf
  wrong_path.set_result_root(flow.RootWithFinal(kHonestFinal));
  const std::vector<std::uint8_t> leaf0 = consensus::SerializeMerkleProof(*consensus::MerkleTree(flow.checkpoints).Prove(0));
  wrong_path.set_final_proof(std::string(leaf0.begin(), leaf0.end()));
  const BlockResult result = flow.chain.Block({flow.chain.Tx(flow.solver, payload::kReveal, missing),
                                               flow.chain.Tx(flow.solver, payload::kReveal, same),
                                               flow.chain.Tx(flow.solver, payload::kReveal, other_root),
                                               flow.chain.Tx(flow.solver, payload::kReveal, wrong_path)});
  for (const TxResult& r : result.tx_results) EXPECT_EQ(r.code, StatusCode::kInvalidArgument) << r.log;
  EXPECT_EQ(flow.task().status(), proto::TASK_REVEALING);
}

TEST(ForcedError, FlagFollowsSecretAndDrawnSeed) {
  proto::Params params = TestParams();
  params.set_forced_error_rate(3);
  TaskFlow flow(params);
  Prepare(flow);
  flow.RunToVerifying();
  const proto::Task before = flow.task();
  const bool forced = IsForcedError(flow.secret, before.forced_seed(), before.id(), 3);
  for (const PubKey& v : flow.Assigned()) ASSERT_EQ(flow.Verdict(v, !forced).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ((forced ? flow.RevealForced(kHonestFinal) : flow.Reveal(flow.proof_root)).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().forced_error(), forced);
  EXPECT_EQ(flow.task().outcome(), forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_ACCEPTED);
}

}  // namespace
}  // namespace polnode::contracts::testing
