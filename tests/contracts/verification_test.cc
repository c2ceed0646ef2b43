// Verifier assignment (stake-weighted), verdicts, overdue and absent verifiers and the fresh slots drawn
// beside overdue ones, and the challenges of the challenge window.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/queries.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

proto::StakeTx StakeMsg(proto::Role role, std::uint64_t amount) {
  proto::StakeTx stake;
  stake.set_role(role);
  stake.set_amount(amount);
  return stake;
}

TEST(SegmentBeacon, AssignsDistinctVerifiersWithTheirOwnSegmentsAndLocksThem) {
  TaskFlow flow;
  flow.RunToVerifying();
  const proto::Task task = flow.task();
  ASSERT_EQ(task.verifiers_size(), 2);
  // The beacon is drawn from the randomness of the block at commit height + delay.
  const Hash256 beacon =
      SegmentBeacon(Chain::RandomnessAt(task.commit_height() + 2), task.id(), task.proof_root(), "");
  EXPECT_EQ(task.segment_beacon(), std::string(beacon.begin(), beacon.end()));
  EXPECT_EQ(task.verification_round(), 1u);
  const std::vector<PubKey> assigned = flow.Assigned();
  EXPECT_NE(assigned[0], assigned[1]);
  for (int i = 0; i < task.verifiers_size(); ++i) {
    const proto::VerifierSlot& slot = task.verifiers(i);
    EXPECT_EQ(slot.lock(), 500u);
    const std::vector<std::uint64_t> want = DrawSegments(task.segment_beacon(), static_cast<std::uint32_t>(i), 10, 2);
    EXPECT_EQ(std::vector<std::uint64_t>(slot.segments().begin(), slot.segments().end()), want);
  }
  for (const PubKey& v : assigned) EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, v).locked(), 500u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, flow.Unassigned()).locked(), 0u);
  EXPECT_EQ(task.deadline(), task.commit_height() + 2 + 5);
  // The jackpot cut leaves the escrow only now that verification starts.
  EXPECT_EQ(task.escrow(), 9'800u);
  EXPECT_EQ(flow.chain.Jackpot(), 200u);
}

// Issue 15: selection ignored stake, so extra keys at the minimum stake were cheap Sybils. Picks
// follow stake (in whole locks), with replacement: a key is picked again while its stake covers
// another lock, never more often than it does.
TEST(StakeWeightedPicks, FollowStakeWithReplacementUpToEachCandidatesLocks) {
  const std::vector<std::uint64_t> capacities = {1, 3, 0, 1};
  std::map<std::size_t, int> first_pick;
  int repeated = 0;
  constexpr int kDraws = 20'000;
  for (int i = 0; i < kDraws; ++i) {
    const std::string beacon = std::string(reinterpret_cast<const char*>(&i), sizeof i);
    const std::vector<std::size_t> picks = StakeWeightedPicks(capacities, 3, beacon, 1, 0);
    ASSERT_EQ(picks.size(), 3u);
    std::map<std::size_t, std::uint64_t> count;
    for (std::size_t p : picks) ++count[p];
    for (const auto& [candidate, n] : count) EXPECT_LE(n, capacities[candidate]) << candidate;  // zero: never
    repeated += count[1] >= 2 ? 1 : 0;
    ++first_pick[picks[0]];
  }
  // Expected 4,000 / 12,000 / 4,000; a deviation of 300 is > 5 standard deviations.
  EXPECT_NEAR(first_pick[0], kDraws / 5, 300);
  EXPECT_NEAR(first_pick[1], kDraws * 3 / 5, 300);
  EXPECT_NEAR(first_pick[3], kDraws / 5, 300);
  // Candidate 1 holds 2 or 3 of the 3 slots with probability (C(3, 2) x 2 + 1) / C(5, 3) = 7/10.
  EXPECT_NEAR(repeated, kDraws * 7 / 10, 400);
  // More picks than locks: each lock once.
  EXPECT_EQ(StakeWeightedPicks(capacities, 9, "x", 1, 0).size(), 5u);
  EXPECT_TRUE(StakeWeightedPicks(std::vector<std::uint64_t>{0, 0}, 2, "x", 1, 0).empty());
}

// Issue 15's Sybil verifier (econ/README.md): without replacement one key held at most one slot,
// so the same stake on three keys held more slots than on one. Now three locks on one key and one
// lock on each of three neighbouring keys hold exactly the same slots, beacon by beacon.
TEST(StakeWeightedPicks, SplittingStakeOverKeysBuysNoSlot) {
  const std::vector<std::uint64_t> one_key = {3, 2, 1};
  const std::vector<std::uint64_t> three_keys = {1, 1, 1, 2, 1};
  double slots = 0;
  constexpr int kDraws = 5'000;
  for (int i = 0; i < kDraws; ++i) {
    const std::string beacon = "sybil" + std::to_string(i);
    const std::vector<std::size_t> a = StakeWeightedPicks(one_key, 3, beacon, 1, 0);
    const std::vector<std::size_t> b = StakeWeightedPicks(three_keys, 3, beacon, 1, 0);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      // The split keys are candidates 0..2 of `three_keys`; the others move up by two.
      EXPECT_EQ(a[k] == 0, b[k] <= 2) << beacon;
      if (a[k] != 0) {
        EXPECT_EQ(b[k], a[k] + 2) << beacon;
      }
      slots += a[k] == 0 ? 1 : 0;
    }
  }
  // Expected slots of the 3-lock stake: 3 x 3 / 6.
  EXPECT_NEAR(slots / kDraws, 1.5, 0.05);
}

// A task whose two slots the first verifier holds: its 2,000 of stake covers two locks of 1,000
// (10% of 10,000), the others' 500 none.
struct TwoSlotFlow {
  TwoSlotFlow() : flow([] {
          proto::Params params = TestParams();
          params.set_verifier_lock_bps(1'000);
          return params;
        }()) {
    EXPECT_EQ(flow.chain.Run(big, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, 1'500)).code, StatusCode::kOk);
    flow.RunToVerifying(10'000);
  }
  TaskFlow flow;
  const PubKey big = flow.verifiers[0];
};

// A key whose stake covers several locks holds several slots of one task: one lock and one draw of
// segments per slot, one verdict per slot, and a fee per slot whose verdict agrees.
TEST(SegmentBeacon, AKeyDrawnTwiceHoldsTwoSlotsEachWithItsLockSegmentsVerdictAndFee) {
  TwoSlotFlow two;
  TaskFlow& flow = two.flow;
  proto::Task task = flow.task();
  ASSERT_EQ(task.verifiers_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(task.verifiers(i).verifier(), Raw(two.big));
    EXPECT_EQ(task.verifiers(i).lock(), 1'000u);
    const std::vector<std::uint64_t> want = DrawSegments(task.segment_beacon(), static_cast<std::uint32_t>(i), 10, 2);
    EXPECT_EQ(std::vector<std::uint64_t>(task.verifiers(i).segments().begin(), task.verifiers(i).segments().end()), want);
  }
  EXPECT_NE(std::vector<std::uint64_t>(task.verifiers(0).segments().begin(), task.verifiers(0).segments().end()),
            std::vector<std::uint64_t>(task.verifiers(1).segments().begin(), task.verifiers(1).segments().end()));
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, two.big).locked(), 2'000u);

  const std::uint64_t balance = flow.chain.Balance(two.big);
  ASSERT_EQ(flow.SlotVerdict(0, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  EXPECT_EQ(flow.SlotVerdict(0, proto::VERDICT_ACCEPT).code, StatusCode::kAlreadyExists);
  // Slot 1 still waits for its own verdict; no other key may give it, and no slot past the last.
  EXPECT_EQ(flow.task().status(), proto::TASK_VERIFYING);
  proto::VerdictTx other;
  other.set_task_id(flow.task_id);
  other.set_slot(1);
  other.set_verdict(proto::VERDICT_ACCEPT);
  other.set_report_hash(Bytes32(0xCC));
  EXPECT_EQ(flow.chain.Run(flow.verifiers[1], payload::kVerdict, other).code, StatusCode::kPermissionDenied);
  other.set_slot(2);
  EXPECT_EQ(flow.chain.Run(two.big, payload::kVerdict, other).code, StatusCode::kPermissionDenied);
  ASSERT_EQ(flow.SlotVerdict(1, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);

  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  task = flow.task();
  ASSERT_EQ(task.outcome(), proto::OUTCOME_ACCEPTED);
  // Escrow 9,800 after the 2% cut, fee budget 980: 490 per slot, both slots its; 4 txs' fees.
  EXPECT_EQ(flow.chain.Balance(two.big), balance + 2 * 490 - 4);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, two.big).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, two.big).bonded(), 2'000u);
}

// The solver disputes reject verdicts slot by slot; a key that holds two disputed rejects plays one
// game for both, and the game's result settles each slot: a challenger that cannot open loses
// both locks to the solver.
TEST(Dispute, TheSolverDisputesSlotBySlotAndOneGameSettlesEachOfAKeysSlots) {
  TwoSlotFlow two;
  TaskFlow& flow = two.flow;
  ASSERT_EQ(flow.SlotVerdict(0, proto::VERDICT_REJECT, {flow.FinalSegment()}).code, StatusCode::kOk);
  ASSERT_EQ(flow.SlotVerdict(1, proto::VERDICT_REJECT, {flow.FinalSegment()}).code, StatusCode::kOk);
  ASSERT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  // All in one block: the challenge window is only 4 blocks long.
  const auto dispute = [&](const PubKey& verifier, std::uint32_t slot) {
    proto::DisputeTx msg;
    msg.set_task_id(flow.task_id);
    msg.set_verifier(Raw(verifier));
    msg.set_slot(slot);
    return flow.chain.Tx(flow.solver, payload::kDispute, msg);
  };
  const BlockResult result = flow.chain.Block({
      dispute(two.big, 0),
      dispute(flow.verifiers[1], 1),  // the slot is not that key's
      dispute(two.big, 2),            // no such slot
      dispute(two.big, 1),
      dispute(two.big, 1),            // again
  });
  const StatusCode want[] = {StatusCode::kOk, StatusCode::kNotFound, StatusCode::kNotFound, StatusCode::kOk,
                             StatusCode::kAlreadyExists};
  ASSERT_EQ(result.tx_results.size(), std::size(want));
  for (std::size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(result.tx_results[i].code, want[i]) << "tx " << i << ": " << result.tx_results[i].log;
  }
  EXPECT_TRUE(flow.task().verifiers(0).disputed());
  EXPECT_TRUE(flow.task().verifiers(1).disputed());
  flow.AdvancePastDeadline();
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  ASSERT_EQ(flow.task().status(), proto::TASK_DISPUTED);
  Result<TaskGames> games = QueryGames(flow.chain.state(), flow.task_id);
  ASSERT_TRUE(games.ok());
  ASSERT_EQ(games->games.size(), 1u);
  EXPECT_EQ(games->games[0].challenger().key(), Raw(two.big));
  flow.chain.AdvanceTo(games->games[0].deadline());  // the challenger never opens
  const proto::Task task = flow.task();
  ASSERT_EQ(task.outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(task.verifiers(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(task.verifiers(1).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, two.big).bonded(), 0u);
  // The solver's pay (9,800 - 980) and both slots' locks; the reveal's fee.
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver + 8'820 + 2 * 1'000 - 1);
  EXPECT_EQ(QueryGames(flow.chain.state(), flow.task_id)->games.size(), 1u);
}

// Issue 15 finding 5: the producer knows its own future randomness (a VRF), so a solver it colludes
// with could time its commitment to dodge the segments it faked. A submitter's seed, revealed only
// after the proof is committed, makes the beacon unknown to both until then.
TEST(SegmentBeacon, WaitsForTheSubmittersSeedAndMixesItIn) {
  TaskFlow flow;
  flow.seed = Bytes32(0x5D);
  flow.Submit();
  flow.Claim();
  EXPECT_EQ(flow.RevealSeed(*flow.seed).code, StatusCode::kFailedPrecondition);  // before the commitment
  flow.Commit();
  const std::uint64_t commit = flow.task().commit_height();
  flow.chain.AdvanceTo(commit + 2);  // the usual beacon height passes without a seed
  ASSERT_EQ(flow.task().status(), proto::TASK_COMMITTED);
  EXPECT_EQ(flow.chain.Run(flow.outsider, payload::kRevealSeed, [&] {
    proto::SeedRevealTx m;
    m.set_task_id(flow.task_id);
    m.set_seed(*flow.seed);
    return m;
  }()).code, StatusCode::kPermissionDenied);
  EXPECT_EQ(flow.RevealSeed(Bytes32(0x01)).code, StatusCode::kInvalidArgument);
  ASSERT_EQ(flow.RevealSeed(*flow.seed).code, StatusCode::kOk);
  EXPECT_EQ(flow.RevealSeed(*flow.seed).code, StatusCode::kAlreadyExists);
  const std::uint64_t revealed = flow.chain.height() - 1;  // the duplicate took a block
  flow.chain.AdvanceTo(revealed + 1);
  const proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_VERIFYING);
  EXPECT_EQ(task.segment_beacon(),
            HashBytes(SegmentBeacon(Chain::RandomnessAt(revealed + 1), task.id(), task.proof_root(), *flow.seed)));
}

TEST(SegmentBeacon, AnUnrevealedSeedPaysTheSolverUnverified) {
  TaskFlow flow;
  flow.seed = Bytes32(0x5D);
  flow.Submit(10'000);
  flow.Claim();
  flow.Commit();
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  flow.chain.AdvanceTo(flow.task().commit_height() + 6);
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_NO_SEED);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver + 8'820);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 980);
  EXPECT_EQ(flow.chain.Jackpot(), 200u);
  TaskFlow plain;  // no commitment: nothing to reveal
  plain.Submit();
  plain.Claim();
  plain.Commit();
  EXPECT_EQ(plain.RevealSeed(Bytes32(0x5D)).code, StatusCode::kFailedPrecondition);
}

TEST(SegmentBeacon, SolverAndSubmitterAreNeverTheirOwnVerifiers) {
  TaskFlow flow;
  flow.chain.Block({flow.chain.Tx(flow.solver, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, 500)),
                    flow.chain.Tx(flow.submitter, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, 500))});
  flow.RunToVerifying();
  for (const PubKey& v : flow.Assigned()) {
    EXPECT_NE(v, flow.solver);
    EXPECT_NE(v, flow.submitter);
  }
}

TEST(SegmentBeacon, WithoutEligibleVerifiersTheTaskIsCancelledWithAFullRefund) {
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
  EXPECT_EQ(flow.chain.Balance(flow.submitter), before + 10'000);  // the jackpot cut too
  EXPECT_EQ(flow.chain.Jackpot(), 0u);
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
  EXPECT_EQ(task.verifiers(1).failed_segments(0), flow.FinalSegment());
  EXPECT_EQ(task.verifiers(0).segment_digests_size(), 0);  // an accept carries no digests
  ASSERT_EQ(task.verifiers(1).segment_digests_size(), 1);
  EXPECT_EQ(task.verifiers(1).segment_digests(0), flow.ReplayDigest(assigned[1], flow.FinalSegment()));
}

TEST(Verdict, OnlyAssignedVerifiersOnceEachWithWellFormedFields) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  const proto::VerifierSlot slot = flow.task().verifiers(0);
  std::uint64_t undrawn = 0;
  while (undrawn == flow.FinalSegment() ||
         std::find(slot.segments().begin(), slot.segments().end(), undrawn) != slot.segments().end()) {
    ++undrawn;
  }
  // All in one block: the verify window is only 5 blocks long.
  // Exact mode: one digest per failed segment, unless `digests` says otherwise.
  const auto verdict = [&](const PubKey& verifier, proto::Verdict v, std::vector<std::uint64_t> failed,
                           std::optional<std::vector<std::string>> digests = std::nullopt) {
    proto::VerdictTx msg;
    msg.set_task_id(flow.task_id);
    msg.set_verdict(v);
    msg.set_report_hash(Bytes32(0xCC));
    for (std::uint64_t f : failed) msg.add_failed_segments(f);
    if (!digests) {
      digests.emplace();
      for (std::uint64_t f : failed) digests->push_back(flow.ReplayDigest(verifier, f));
    }
    for (const std::string& d : *digests) msg.add_segment_digests(d);
    return flow.chain.Tx(verifier, payload::kVerdict, msg);
  };
  const std::string digest = flow.ReplayDigest(assigned[0], flow.FinalSegment());
  const BlockResult result = flow.chain.Block({
      verdict(flow.Unassigned(), proto::VERDICT_ACCEPT, {}),                                  // not assigned
      verdict(assigned[0], proto::VERDICT_REJECT, {}),                                        // names no segment
      verdict(assigned[0], proto::VERDICT_REJECT, {undrawn}),                                 // not its segment
      verdict(assigned[0], proto::VERDICT_REJECT, {flow.FinalSegment(), slot.segments(0)}),   // not ascending
      verdict(assigned[0], proto::VERDICT_REJECT, {flow.FinalSegment()}, {{}}),               // no digest
      verdict(assigned[0], proto::VERDICT_REJECT, {flow.FinalSegment()}, {{digest, digest}}), // one too many
      verdict(assigned[0], proto::VERDICT_REJECT, {flow.FinalSegment()}, {{digest.substr(1)}}),  // 31 bytes
      verdict(assigned[0], proto::VERDICT_ACCEPT, {slot.segments(0)}),                        // accept names none
      verdict(assigned[0], proto::VERDICT_ACCEPT, {}, {{digest}}),                            // nor digests
      verdict(assigned[0], proto::VERDICT_NONE, {}),                                          // no verdict
      verdict(assigned[0], proto::VERDICT_UNAVAILABLE, {}, {{digest}}),                       // with a digest
      verdict(assigned[0], proto::VERDICT_REJECT, {slot.segments(0), flow.FinalSegment()}),  // good
      verdict(assigned[0], proto::VERDICT_ACCEPT, {}),                                        // again
  });
  const StatusCode want[] = {StatusCode::kPermissionDenied, StatusCode::kInvalidArgument, StatusCode::kInvalidArgument,
                             StatusCode::kInvalidArgument,  StatusCode::kInvalidArgument, StatusCode::kInvalidArgument,
                             StatusCode::kInvalidArgument,  StatusCode::kInvalidArgument, StatusCode::kInvalidArgument,
                             StatusCode::kInvalidArgument,  StatusCode::kInvalidArgument, StatusCode::kOk,
                             StatusCode::kAlreadyExists};
  ASSERT_EQ(result.tx_results.size(), std::size(want));
  for (std::size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(result.tx_results[i].code, want[i]) << "tx " << i << ": " << result.tx_results[i].log;
  }
  EXPECT_EQ(flow.task().verifiers(0).verdict(), proto::VERDICT_REJECT);
}

TEST(VerdictDeadline, AbsentVerifierIsSlashedToTheJackpot) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  const std::uint64_t jackpot = flow.chain.Jackpot();
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  EXPECT_TRUE(flow.task().verifiers(1).absent());
  EXPECT_EQ(flow.chain.Jackpot(), jackpot + 500);
  const proto::StakeRecord absent = flow.chain.Stake(proto::ROLE_VERIFIER, assigned[1]);
  EXPECT_EQ(absent.bonded(), 0u);
  EXPECT_EQ(absent.locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 500u);
}

// Review finding 9 (a slow honest verifier turned into an accepted cheat): at a deadline with a
// round left, a slow verifier's slot becomes overdue, not absent: it keeps its lock and may still
// answer, and a fresh key (one holding no slot of the task) is drawn beside it, so neither a lone
// lazy accept nor the verifier's slowness decides the task.
TEST(VerdictDeadline, ASlowVerifierIsOverdueAndMayStillAnswerBesideAFreshSlot) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  TaskFlow flow(params);
  flow.RunToVerifying();
  const std::vector<PubKey> first = flow.Assigned();
  const PubKey fresh = flow.Unassigned();
  ASSERT_EQ(flow.Verdict(first[0], true).code, StatusCode::kOk);  // the lazy accept
  const std::uint64_t jackpot = flow.chain.Jackpot();
  flow.AdvancePastDeadline();  // first[1] is slow: overdue
  proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_VERIFYING);
  EXPECT_EQ(task.verification_round(), 2u);
  ASSERT_EQ(task.verifiers_size(), 3);
  EXPECT_TRUE(task.verifiers(1).overdue());
  EXPECT_FALSE(task.verifiers(1).absent());
  EXPECT_FALSE(task.verifiers(0).overdue());
  EXPECT_EQ(task.verifiers(2).verifier(), Raw(fresh));
  EXPECT_FALSE(task.verifiers(2).overdue());
  EXPECT_EQ(task.verifiers(2).segments_size(), 2);
  EXPECT_EQ(flow.chain.Jackpot(), jackpot);  // nothing slashed yet
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, first[1]).locked(), 500u);
  // The slow verifier's reject is in late; verification waits for the fresh slot too.
  ASSERT_EQ(flow.Verdict(first[1], false).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().status(), proto::TASK_VERIFYING);
  ASSERT_EQ(flow.Verdict(fresh, false).code, StatusCode::kOk);
  task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_EQ(task.verifiers(1).verdict(), proto::VERDICT_REJECT);
  for (const proto::VerifierSlot& slot : task.verifiers()) EXPECT_FALSE(slot.absent());
}

// A fresh slot goes only to a key that holds no slot of the task: here both staked keys hold one
// (and have a lock's worth free), the third has too little stake, so none is drawn. The overdue
// slot may still answer until the next deadline; silent then, it is absent and slashed.
TEST(VerdictDeadline, FreshSlotsGoOnlyToKeysHoldingNoSlotAndAnOverdueSlotIsAbsentAtTheNextDeadline) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  params.set_verifier_lock_bps(1'000);  // a lock of 1,000 on 10,000: the third verifier's 500 covers none
  TaskFlow flow(params);
  const PubKey a = flow.verifiers[0];
  const PubKey b = flow.verifiers[1];
  for (const PubKey& v : {a, b}) {
    ASSERT_EQ(flow.chain.Run(v, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, 500)).code, StatusCode::kOk);
  }
  flow.RunToVerifying(10'000);
  ASSERT_EQ(flow.task().verifiers_size(), 2);
  // Both hold one slot; both stake another lock, so by stake alone either could take a new slot.
  for (const PubKey& v : {a, b}) {
    ASSERT_EQ(flow.chain.Run(v, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, 1'000)).code, StatusCode::kOk);
  }
  ASSERT_EQ(flow.Verdict(a, true).code, StatusCode::kOk);
  const int b_slot = flow.task().verifiers(0).verifier() == Raw(b) ? 0 : 1;
  ASSERT_EQ(flow.task().verifiers(b_slot).verifier(), Raw(b));
  flow.AdvancePastDeadline();  // b is overdue
  proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_VERIFYING);
  EXPECT_EQ(task.verification_round(), 2u);
  EXPECT_EQ(task.verifiers_size(), 2);  // a answered already: it is no second voice
  EXPECT_TRUE(task.verifiers(b_slot).overdue());
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, a).locked(), 1'000u);
  const std::uint64_t jackpot = flow.chain.Jackpot();
  flow.AdvancePastDeadline();  // still nothing from b
  task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_TRUE(task.verifiers(b_slot).absent());
  EXPECT_EQ(flow.chain.Jackpot(), jackpot + 1'000);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, b).locked(), 0u);
}

// Fresh slots go to at most one slot per key: two overdue slots and one key without a slot, whose
// stake covers two locks, give one fresh slot, not two (a lazy key with stake must not become
// every voice of a task whose verifiers are slow).
TEST(VerdictDeadline, FreshSlotsGoToAtMostOneSlotPerKey) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  TaskFlow flow(params);
  flow.RunToVerifying();
  const PubKey fresh = flow.Unassigned();
  ASSERT_EQ(flow.chain.Run(fresh, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, 500)).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // neither slot answers: both overdue
  const proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_VERIFYING);
  EXPECT_TRUE(task.verifiers(0).overdue());
  EXPECT_TRUE(task.verifiers(1).overdue());
  ASSERT_EQ(task.verifiers_size(), 3);
  EXPECT_EQ(task.verifiers(2).verifier(), Raw(fresh));
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, fresh).locked(), 500u);
}

// The last round gives no grace: a slot without a verdict at its deadline is absent at once.
TEST(VerdictDeadline, TheLastRoundsDeadlineMakesSilentSlotsAbsent) {
  proto::Params params = TestParams();
  params.set_max_verification_rounds(2);
  TaskFlow flow(params);
  flow.RunToVerifying();
  const std::vector<PubKey> first = flow.Assigned();
  const PubKey fresh = flow.Unassigned();
  ASSERT_EQ(flow.Verdict(first[0], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();  // first[1] overdue, fresh drawn in round 2 (the last)
  ASSERT_EQ(flow.task().verifiers_size(), 3);
  flow.AdvancePastDeadline();  // neither answers
  const proto::Task task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_TRUE(task.verifiers(1).absent());
  EXPECT_TRUE(task.verifiers(2).absent());
  EXPECT_FALSE(task.verifiers(2).overdue());
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, fresh).locked(), 0u);
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

TEST(Dispute, WhistleblowerChallengesTheProofOnceAndLocksStake) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  EXPECT_EQ(flow.Challenge(flow.whistleblower).code, StatusCode::kFailedPrecondition);  // not yet
  ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Challenge(flow.whistleblower).code, StatusCode::kOk);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, flow.whistleblower).locked(), 300u);
  ASSERT_EQ(flow.task().challenges_size(), 1);
  EXPECT_EQ(flow.task().challenges(0).challenger(), Raw(flow.whistleblower));
  EXPECT_EQ(flow.task().challenges(0).lock(), 300u);
  // The ledger drew the segments the challenge covers, which include the final one it named.
  const proto::Challenge recorded = flow.task().challenges(0);
  const std::vector<std::uint64_t> covered = flow.ChallengeCovered(flow.whistleblower);
  EXPECT_EQ(std::vector<std::uint64_t>(recorded.segments().begin(), recorded.segments().end()), covered);
  EXPECT_EQ(covered.back(), flow.FinalSegment());
  EXPECT_EQ(covered.size(), 3u);  // q = 2 drawn, plus the final one
  ASSERT_EQ(recorded.failed_segments_size(), 1);
  EXPECT_EQ(recorded.failed_segments(0), flow.FinalSegment());
  ASSERT_EQ(recorded.segment_digests_size(), 1);
  EXPECT_EQ(recorded.segment_digests(0), flow.ReplayDigest(flow.whistleblower, flow.FinalSegment()));
  // The outsider's covered segments, and one that is not among them.
  ASSERT_EQ(flow.chain.Run(flow.outsider, payload::kStake, [] {
    proto::StakeTx stake;
    stake.set_role(proto::ROLE_WHISTLEBLOWER);
    stake.set_amount(300);
    return stake;
  }()).code, StatusCode::kOk);
  const std::vector<std::uint64_t> outsider_covered = flow.ChallengeCovered(flow.outsider);
  std::uint64_t uncovered = 0;
  while (std::find(outsider_covered.begin(), outsider_covered.end(), uncovered) != outsider_covered.end()) ++uncovered;
  // All in one block: the challenge window is only 4 blocks long.
  proto::DisputeTx challenge;
  challenge.set_task_id(flow.task_id);
  challenge.add_failed_segments(flow.FinalSegment());
  challenge.add_segment_digests(Bytes32(0x33));
  proto::DisputeTx undigested = challenge;
  undigested.clear_segment_digests();
  proto::DisputeTx unnamed = challenge;
  unnamed.clear_failed_segments();
  unnamed.clear_segment_digests();
  proto::DisputeTx not_covered = challenge;
  not_covered.clear_failed_segments();
  not_covered.add_failed_segments(uncovered);
  proto::DisputeTx descending = challenge;
  descending.clear_failed_segments();
  descending.add_failed_segments(flow.FinalSegment());
  descending.add_failed_segments(outsider_covered.front());
  descending.add_segment_digests(Bytes32(0x34));
  proto::DisputeTx named = challenge;
  named.set_verifier(Raw(assigned[0]));
  proto::DisputeTx dispute = named;  // the solver's dispute names the verdict and nothing else
  dispute.clear_failed_segments();
  dispute.clear_segment_digests();
  BlockResult result = flow.chain.Block({
      flow.chain.Tx(flow.whistleblower, payload::kDispute, challenge),  // again
      flow.chain.Tx(flow.Unassigned(), payload::kDispute, challenge),   // no whistleblower stake
      flow.chain.Tx(assigned[1], payload::kDispute, challenge),         // a verifier of the task
      flow.chain.Tx(flow.submitter, payload::kDispute, challenge),      // the submitter
      flow.chain.Tx(flow.outsider, payload::kDispute, named),           // names a verdict
      flow.chain.Tx(flow.outsider, payload::kDispute, undigested),      // no digest
      flow.chain.Tx(flow.outsider, payload::kDispute, unnamed),         // names no segment
      flow.chain.Tx(flow.outsider, payload::kDispute, not_covered),     // not one of its covered segments
      flow.chain.Tx(flow.outsider, payload::kDispute, descending),      // not ascending
      flow.chain.Tx(flow.solver, payload::kDispute, named),             // a dispute with segments and digests
      flow.chain.Tx(flow.outsider, payload::kDispute, dispute),         // not the solver
  });
  const StatusCode want[] = {StatusCode::kAlreadyExists,   StatusCode::kFailedPrecondition,
                             StatusCode::kPermissionDenied, StatusCode::kPermissionDenied,
                             StatusCode::kInvalidArgument,  StatusCode::kInvalidArgument,
                             StatusCode::kInvalidArgument,  StatusCode::kInvalidArgument,
                             StatusCode::kInvalidArgument,  StatusCode::kInvalidArgument,
                             StatusCode::kInvalidArgument};
  ASSERT_EQ(result.tx_results.size(), std::size(want));
  for (std::size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(result.tx_results[i].code, want[i]) << "tx " << i << ": " << result.tx_results[i].log;
  }
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
}

TEST(Dispute, SolverMayDisputeOnlyRejections) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  ASSERT_EQ(flow.Verdict(assigned[1], false).code, StatusCode::kOk);
  EXPECT_EQ(flow.Dispute(assigned[0]).code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(flow.Dispute(flow.outsider).code, StatusCode::kNotFound);
  ASSERT_EQ(flow.Dispute(assigned[1]).code, StatusCode::kOk);
  EXPECT_EQ(flow.Dispute(assigned[1]).code, StatusCode::kAlreadyExists);
  EXPECT_TRUE(flow.task().verifiers(1).disputed());
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).locked(), 1'000u);
}

TEST(Dispute, AnAbsentVerifierHasNothingToDispute) {
  TaskFlow flow;
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  EXPECT_EQ(flow.Dispute(assigned[1]).code, StatusCode::kNotFound);
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
