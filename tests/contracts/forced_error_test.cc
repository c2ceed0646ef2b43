// Forced-error rounds (protocol v5; forced_error_rate = 1: every round is forced). The committed
// proof is falsified at random forced checkpoints (each with probability 1/2), the
// solver trains on from them and reveals, at every checkpoint a verdict or challenge covered, the
// committed and the result proof's hash. A verdict is right when it names exactly its covered
// segments that end at forced checkpoints, with digests of the honest hashes (or accepts when
// there are none), so replaying only the final segment does not pay. Money of the 10,000-unit
// task: escrow 9,800, verifier share 490, solver pay 8,820; the jackpot starts with the 200 cut
// and pays half of its pool.
//
// Which checkpoints are forced depends on the solver's secret; the slots' segments do not. Each
// test picks the first secret (and committed proof) whose forced checkpoints give the situation it
// is about (ForcedFlow), so every test is deterministic and checks what it says.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/queries.h"
#include "polnode/dispute.pb.h"
#include "forced_flow.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

using Segments = std::vector<std::uint64_t>;

proto::StakeTx WhistleblowerStake() {
  proto::StakeTx stake;
  stake.set_role(proto::ROLE_WHISTLEBLOWER);
  stake.set_amount(300);
  return stake;
}

bool Contains(const Segments& segments, std::uint64_t s) {
  return std::find(segments.begin(), segments.end(), s) != segments.end();
}

// The forced checkpoints the reveal shows, as the task records them.
Segments ShownForced(const TaskFlow& flow) {
  const Segments shown = RevealCheckpoints(flow.task());
  Segments forced;
  for (std::uint64_t k : flow.ForcedCheckpoints()) {
    if (Contains(shown, k)) forced.push_back(k);
  }
  return forced;
}

proto::DisputeGame GameOf(TaskFlow& flow, const PubKey& challenger) {
  Result<std::optional<std::string>> bytes =
      flow.chain.state().Get("game/" + consensus::ToHex(flow.task().id()) + "/" + consensus::ToHex(challenger));
  proto::DisputeGame game;
  EXPECT_TRUE(bytes.ok() && bytes->has_value() && game.ParseFromString(**bytes)) << "no game of that challenger";
  return game;
}

TEST(ForcedError, ARightRejectCatchesVouchesAndSharesTheJackpot) {
  // Slot 0 finds forced checkpoints; slot 1 accepts although it covered one.
  auto flow = ForcedFlow([](const TaskFlow& f) {
    return !f.ForcedEnds(f.SlotCovered(0)).empty() && !f.ForcedEnds(f.SlotCovered(1)).empty();
  });
  ASSERT_TRUE(flow);
  const PubKey diligent = flow->KeyOfSlot(0), lazy = flow->KeyOfSlot(1);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->SlotVerdict(1, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const std::uint64_t diligent_before = flow->chain.Balance(diligent);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  const std::uint64_t submitter = flow->chain.Balance(flow->submitter);
  TxResult r = flow->RevealForced();
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const proto::Task task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_TRUE(task.forced_error());
  EXPECT_TRUE(task.verifiers(0).vouched());
  EXPECT_FALSE(task.verifiers(1).vouched());
  // The result proof is the one delivered; the committed one is kept as forced_root.
  EXPECT_EQ(task.result_root(), flow->ResultRoot());
  EXPECT_EQ(task.proof_root(), task.result_root());
  EXPECT_EQ(task.forced_root(), flow->proof_root);
  // The shown forced checkpoints, each with the result proof's hash there.
  const Segments shown_forced = ShownForced(*flow);
  EXPECT_EQ(Segments(task.forced_checkpoints().begin(), task.forced_checkpoints().end()), shown_forced);
  ASSERT_EQ(task.honest_hashes_size(), static_cast<int>(shown_forced.size()));
  for (std::size_t i = 0; i < shown_forced.size(); ++i) {
    EXPECT_EQ(task.honest_hashes(static_cast<int>(i)), HashBytes(flow->ResultLeaves()[shown_forced[i]]));
  }
  // Fee 490 + half of the pool (200 + the lazy verifier's 500) = 350.
  EXPECT_EQ(flow->chain.Balance(diligent), diligent_before + 490 + 350);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, diligent).locked(), 0u);
  EXPECT_EQ(flow->chain.Jackpot(), 350u);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, lazy).bonded(), 0u);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1 + 8'820);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).locked(), 0u);
  EXPECT_EQ(flow->chain.Balance(flow->submitter), submitter + 490);
}

// A forced round whose verification was short (a slot absent, one answer of two) leaves the result
// proof unpaid though a right reject vouched for it: the catcher still earns its fee and the
// jackpot, the solver's lock is released, the rest of the escrow refunded.
TEST(ForcedError, AShortVerificationLeavesAVouchedResultProofUnpaid) {
  auto flow = ForcedFlow([](const TaskFlow& f) { return !f.ForcedEnds(f.SlotCovered(0)).empty(); });
  ASSERT_TRUE(flow);
  const PubKey diligent = flow->KeyOfSlot(0);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  flow->AdvancePastDeadline();  // slot 1 absent (the only round): its 500 joins the pool
  ASSERT_TRUE(flow->task().verifiers(1).absent());
  flow->AdvancePastDeadline();  // challenge window closes
  const std::uint64_t diligent_before = flow->chain.Balance(diligent);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  const std::uint64_t submitter = flow->chain.Balance(flow->submitter);
  TxResult r = flow->RevealForced();
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const proto::Task task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_UNVERIFIED);
  EXPECT_TRUE(task.verifiers(0).vouched());
  // Fee 490 + half of the pool (200 + the absent verifier's 500) = 350.
  EXPECT_EQ(flow->chain.Balance(diligent), diligent_before + 490 + 350);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).locked(), 0u);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).bonded(), 1'000u);
  EXPECT_EQ(flow->chain.Balance(flow->submitter), submitter + 9'800 - 490);
}

// The solver may dispute any reject in the challenge window, before anyone knows the round was
// forced; a reject the reveal shows right is right by construction and plays no game.
TEST(ForcedError, ARightRejectPlaysNoGameEvenWhenTheSolverDisputedIt) {
  auto flow = ForcedFlow([](const TaskFlow& f) {
    return !f.ForcedEnds(f.SlotCovered(0)).empty() && !f.ForcedEnds(f.SlotCovered(1)).empty();
  });
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  ASSERT_EQ(flow->Dispute(flow->KeyOfSlot(0)).code, StatusCode::kOk);
  ASSERT_TRUE(flow->task().verifiers(0).disputed());
  flow->AdvancePastDeadline();
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  const proto::Task task = flow->task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_TRUE(task.verifiers(0).vouched());
  EXPECT_FALSE(task.verifiers(0).disputed());
  EXPECT_EQ(task.verifiers(0).game_result(), proto::GAME_RESULT_NONE);
}

// Issue 15's final-only verifier: it replays only the final segment (which every slot covers) and
// rejects it with the right digest. A middle segment of its own ends at a forced checkpoint too,
// so it did not name exactly the falsified checkpoints: no catch. Its reject then claims the
// result proof wrong, and with no wrong transition to show it loses its lock to the solver.
TEST(ForcedError, AFinalOnlyVerifierIsNoCatchAndLosesItsLock) {
  auto flow = ForcedFlow([](const TaskFlow& f) {
    const Segments ends = f.ForcedEnds(f.SlotCovered(0));
    return Contains(ends, f.FinalSegment()) && ends.size() >= 2;
  });
  ASSERT_TRUE(flow);
  const PubKey final_only = flow->KeyOfSlot(0), diligent = flow->KeyOfSlot(1);
  ASSERT_EQ(flow->SlotVerdict(0, proto::VERDICT_REJECT, {flow->FinalSegment()}).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const std::uint64_t final_only_before = flow->chain.Balance(final_only);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  proto::Task task = flow->task();
  ASSERT_EQ(task.status(), proto::TASK_DISPUTED);
  EXPECT_FALSE(task.verifiers(0).vouched());
  EXPECT_TRUE(task.verifiers(0).disputed());
  EXPECT_TRUE(task.verifiers(1).vouched());
  const proto::DisputeGame game = GameOf(*flow, final_only);
  EXPECT_EQ(game.proof_root(), flow->ResultRoot());  // the game is over the result proof
  EXPECT_EQ(game.start_root(), flow->proof_root);    // from the committed checkpoints
  // It never opens: it forfeits, and its lock goes to the solver, which is paid (slot 1 vouched).
  flow->chain.AdvanceTo(flow->chain.height() + 10);
  task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_EQ(task.verifiers(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(flow->chain.Balance(final_only), final_only_before);  // no fee, no jackpot
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, final_only).bonded(), 0u);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, diligent).locked(), 0u);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1 + 8'820 + 500);  // less the reveal's fee
}

// A reject that is not exactly right: one segment too many or too few, a wrong digest, or a digest
// copied from another party (digests are keyed). None is a catch; each plays a game over the
// result proof and, not opening it, pays its lock to the solver.
TEST(ForcedError, ARejectThatIsNotExactlyRightIsNoCatch) {
  struct Case {
    const char* name;
    std::function<bool(const TaskFlow&)> want;  // beyond a forced checkpoint in slot 0's covered segments
    std::function<void(const TaskFlow&, Segments&, std::vector<std::string>&)> mutate;
  };
  const auto extra_segment = [](const TaskFlow& f) {
    const Segments covered = f.SlotCovered(0), ends = f.ForcedEnds(covered);
    for (std::uint64_t s : covered) {
      if (!Contains(ends, s)) return s;
    }
    return f.Segments();  // none: the case's `want` rules this out
  };
  const Case cases[] = {
      {"extra segment",
       [&](const TaskFlow& f) { return extra_segment(f) < f.Segments(); },
       [&](const TaskFlow& f, Segments& failed, std::vector<std::string>& digests) {
         const std::uint64_t extra = extra_segment(f);
         failed.insert(std::upper_bound(failed.begin(), failed.end(), extra), extra);
         digests.clear();
         for (std::uint64_t s : failed) digests.push_back(f.ReplayDigest(f.KeyOfSlot(0), s));
       }},
      {"missing segment", [](const TaskFlow& f) { return f.ForcedEnds(f.SlotCovered(0)).size() >= 2; },
       [](const TaskFlow&, Segments& failed, std::vector<std::string>& digests) {
         failed.erase(failed.begin());
         digests.erase(digests.begin());
       }},
      {"wrong digest", [](const TaskFlow&) { return true; },
       [](const TaskFlow&, Segments&, std::vector<std::string>& digests) { digests.back() = Bytes32(0x99); }},
      {"digest copied from another key", [](const TaskFlow&) { return true; },
       [](const TaskFlow& f, Segments& failed, std::vector<std::string>& digests) {
         digests.back() = f.ReplayDigest(f.KeyOfSlot(1), failed.back());
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto flow = ForcedFlow([&](const TaskFlow& f) { return !f.ForcedEnds(f.SlotCovered(0)).empty() && c.want(f); });
    ASSERT_TRUE(flow);
    Segments failed = flow->ForcedEnds(flow->SlotCovered(0));
    std::vector<std::string> digests;
    for (std::uint64_t s : failed) digests.push_back(flow->ReplayDigest(flow->KeyOfSlot(0), s));
    c.mutate(*flow, failed, digests);
    ASSERT_EQ(flow->SlotVerdictWith(0, proto::VERDICT_REJECT, failed, digests).code, StatusCode::kOk);
    ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
    flow->AdvancePastDeadline();
    const std::uint64_t solver = flow->chain.Balance(flow->solver);
    ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
    EXPECT_FALSE(flow->task().verifiers(0).vouched());
    EXPECT_TRUE(flow->task().verifiers(0).disputed());
    EXPECT_TRUE(flow->task().verifiers(1).vouched());
    flow->chain.AdvanceTo(flow->chain.height() + 10);
    EXPECT_EQ(flow->task().outcome(), proto::OUTCOME_FORCED_ERROR);
    EXPECT_EQ(flow->task().verifiers(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
    EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, flow->KeyOfSlot(0)).bonded(), 0u);
    EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1 + 8'820 + 500);  // less the reveal's fee
  }
}

TEST(ForcedError, AnAcceptCoveringNoForcedCheckpointIsPaidAndVouches) {
  auto flow = ForcedFlow([](const TaskFlow& f) {
    return f.ForcedEnds(f.SlotCovered(0)).empty() && !f.ForcedEnds(f.SlotCovered(1)).empty();
  });
  ASSERT_TRUE(flow);
  const PubKey accepter = flow->KeyOfSlot(0), lazy = flow->KeyOfSlot(1);
  ASSERT_EQ(flow->SlotVerdict(0, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  ASSERT_EQ(flow->SlotVerdict(1, proto::VERDICT_ACCEPT).code, StatusCode::kOk);  // covered a forced one
  flow->AdvancePastDeadline();
  const std::uint64_t accepter_before = flow->chain.Balance(accepter);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  const proto::Task task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);  // the right accept vouched
  EXPECT_TRUE(task.verifiers(0).vouched());
  EXPECT_FALSE(task.verifiers(1).vouched());
  EXPECT_EQ(flow->chain.Balance(accepter), accepter_before + 490);  // its fee; no jackpot share
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, accepter).locked(), 0u);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, accepter).bonded(), 500u);
  // The wrong accept's lock joins the pool; nobody caught anything, so nothing is paid out.
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, lazy).bonded(), 0u);
  EXPECT_EQ(flow->chain.Jackpot(), 700u);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1 + 8'820);
}

TEST(ForcedError, AnAcceptCoveringAForcedCheckpointIsSlashedToTheJackpot) {
  // Slot 0's forced checkpoint is in the middle, so an accept that replayed the final segment
  // and found it fine still accepted a falsified checkpoint.
  auto flow = ForcedFlow([](const TaskFlow& f) {
    const Segments ends = f.ForcedEnds(f.SlotCovered(0));
    return !ends.empty() && !Contains(ends, f.FinalSegment());
  });
  ASSERT_TRUE(flow);
  const PubKey accepter = flow->KeyOfSlot(0);
  ASSERT_EQ(flow->SlotVerdict(0, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const std::uint64_t accepter_before = flow->chain.Balance(accepter);
  const std::uint64_t jackpot = flow->chain.Jackpot();
  const bool catcher = flow->task().verifiers(1).verdict() == proto::VERDICT_REJECT;
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  const proto::Task task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_FALSE(task.verifiers(0).vouched());
  EXPECT_TRUE(task.verifiers(1).vouched());
  EXPECT_EQ(flow->chain.Balance(accepter), accepter_before);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, accepter).bonded(), 0u);
  // Its 500 joins the pool; a catching slot 1 takes half of it.
  const std::uint64_t pool = jackpot + 500;
  EXPECT_EQ(flow->chain.Jackpot(), catcher ? pool - pool / 2 : pool);
}

// Issue 15's copycat whistleblower: rejects are public in the challenge window, so a whistleblower
// could name the segments a reject named without replaying. A challenge covers segments the ledger
// draws for its key, and catches only when it names exactly those of them that end at forced
// checkpoints (with the honest digests, which here each copycat is granted). The whistleblower's
// own segments hold a forced checkpoint the reject did not name: no catch, a game, its lock lost.
// The outsider's hold exactly what it copied: a catch.
TEST(ForcedError, ACopycatChallengeCatchesOnlyWhenItsOwnSegmentsNeedExactlyWhatItCopied) {
  // What `challenger` copies from slot 0's reject: the named segments among its own covered ones.
  const auto copied = [](const TaskFlow& f, const PubKey& challenger) {
    const Segments named = f.ForcedEnds(f.SlotCovered(0)), covered = f.ChallengeCovered(challenger);
    Segments picked;
    for (std::uint64_t s : named) {
      if (Contains(covered, s)) picked.push_back(s);
    }
    return picked;
  };
  auto flow = ForcedFlow([&](const TaskFlow& f) {
    const Segments wb = copied(f, f.whistleblower), out = copied(f, f.outsider);
    return !wb.empty() && wb != f.ForcedEnds(f.ChallengeCovered(f.whistleblower)) && !out.empty() &&
           out == f.ForcedEnds(f.ChallengeCovered(f.outsider));
  });
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->chain.Run(flow->outsider, payload::kStake, WhistleblowerStake()).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);  // the public reject
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  const bool slot1_catches = flow->task().verifiers(1).verdict() == proto::VERDICT_REJECT;
  for (const PubKey& copycat : {flow->whistleblower, flow->outsider}) {
    const Segments failed = copied(*flow, copycat);
    std::vector<std::string> digests;
    for (std::uint64_t s : failed) digests.push_back(flow->ReplayDigest(copycat, s));
    ASSERT_EQ(flow->ChallengeWith(copycat, failed, digests).code, StatusCode::kOk);
  }
  flow->AdvancePastDeadline();
  const std::uint64_t wb = flow->chain.Balance(flow->whistleblower);
  const std::uint64_t outsider = flow->chain.Balance(flow->outsider);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  proto::Task task = flow->task();
  ASSERT_EQ(task.status(), proto::TASK_DISPUTED);
  EXPECT_FALSE(task.challenges(0).caught());
  EXPECT_TRUE(task.challenges(1).caught());
  EXPECT_FALSE(GameOf(*flow, flow->whistleblower).challenger_is_verifier());
  flow->chain.AdvanceTo(flow->chain.height() + 10);
  task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_EQ(task.challenges(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  // Catchers: slot 0, the outsider, and slot 1 when it rejected; half of the 200 pool.
  const std::uint64_t share = 100 / (slot1_catches ? 3 : 2);
  EXPECT_EQ(flow->chain.Balance(flow->outsider), outsider + share);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_WHISTLEBLOWER, flow->outsider).locked(), 0u);
  EXPECT_EQ(flow->chain.Balance(flow->whistleblower), wb);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_WHISTLEBLOWER, flow->whistleblower).bonded(), 0u);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1 + 8'820 + 300);  // less the reveal's fee
}

TEST(ForcedError, AWhistleblowerCatchesLazyVerifiersButNobodyVouches) {
  auto flow = ForcedFlow([](const TaskFlow& f) {
    return !f.ForcedEnds(f.SlotCovered(0)).empty() && !f.ForcedEnds(f.SlotCovered(1)).empty() &&
           !f.ForcedEnds(f.ChallengeCovered(f.whistleblower)).empty();
  });
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->SlotVerdict(0, proto::VERDICT_ACCEPT).code, StatusCode::kOk);  // both lazy
  ASSERT_EQ(flow->SlotVerdict(1, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentChallenge(flow->whistleblower).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const std::uint64_t wb = flow->chain.Balance(flow->whistleblower);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  const std::uint64_t submitter = flow->chain.Balance(flow->submitter);
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  const proto::Task task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_UNVERIFIED);
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_TRUE(task.challenges(0).caught());
  // The lazy verifiers' 1,000 joins the pool (1,200); half of it goes to the only catcher.
  EXPECT_EQ(flow->chain.Balance(flow->whistleblower), wb + 600);
  EXPECT_EQ(flow->chain.Jackpot(), 600u);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_WHISTLEBLOWER, flow->whistleblower).locked(), 0u);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver - 1);  // the reveal's fee; not paid, lock released
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).locked(), 0u);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).bonded(), 1'000u);
  EXPECT_EQ(flow->chain.Balance(flow->submitter), submitter + 9'800);
}

// Review finding 4: a solver that knew its round was forced committed garbage and revealed random
// "honest" hashes. The verifiers' digests do not match them, so their rejects are claims against
// the result proof, which the solver must win in a game; unanswered, nobody vouched: no pay.
TEST(ForcedError, GarbageAndRandomHonestHashesEarnNothing) {
  auto flow = ForcedFlow([](const TaskFlow& f) {
    return !f.ForcedEnds(f.SlotCovered(0)).empty() && !f.ForcedEnds(f.SlotCovered(1)).empty();
  });
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const std::uint64_t jackpot = flow->chain.Jackpot();
  flow->honest_fill = 0x70;  // not what any replay reached
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  proto::Task task = flow->task();
  ASSERT_EQ(task.status(), proto::TASK_DISPUTED);
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    EXPECT_FALSE(slot.vouched());
    EXPECT_TRUE(slot.disputed());
  }
  flow->chain.AdvanceTo(flow->chain.height() + 30);
  task = flow->task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_UNVERIFIED);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver + 2 * 500);  // the forfeiting challengers' locks, no pay
  EXPECT_EQ(flow->chain.Jackpot(), jackpot);                       // no catcher, nothing paid out
}

TEST(ForcedError, TheJackpotPayoutIsCappedByThePayment) {
  proto::Params params = ForcedParams();
  params.set_jackpot_payout_cap_bps(100);  // 1% of the payment
  auto flow = ForcedFlow(
      [](const TaskFlow& f) {
        return !f.ForcedEnds(f.SlotCovered(0)).empty() && !f.ForcedEnds(f.SlotCovered(1)).empty();
      },
      params);
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->SlotVerdict(1, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const std::uint64_t diligent = flow->chain.Balance(flow->KeyOfSlot(0));
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  EXPECT_EQ(flow->chain.Balance(flow->KeyOfSlot(0)), diligent + 490 + 100);
  EXPECT_EQ(flow->chain.Jackpot(), 700u - 100u);
}

// The reveal shows exactly forced.h RevealCheckpoints, ascending, each hash pair proven against
// both roots, different exactly at the forced checkpoints. Anything else is refused and changes
// nothing; the right reveal then settles.
TEST(ForcedError, TheRevealMustShowExactlyTheNeededCheckpoints) {
  // A forced and a non-forced checkpoint among the shown ones, and one checkpoint not shown.
  auto flow = ForcedFlow([](const TaskFlow& f) {
    const Segments ends0 = f.ForcedEnds(f.SlotCovered(0)), ends1 = f.ForcedEnds(f.SlotCovered(1));
    return !ends0.empty() && ends0.size() < f.SlotCovered(0).size() && !ends1.empty();
  });
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const Segments shown = RevealCheckpoints(flow->task());
  ASSERT_GE(shown.size(), 2u);
  const Segments forced = flow->ForcedCheckpoints();
  const auto first_where = [&](bool is_forced) {
    for (std::uint64_t k : shown) {
      if (Contains(forced, k) == is_forced) return k;
    }
    return std::uint64_t{0};
  };
  const std::uint64_t forced_k = first_where(true), plain_k = first_where(false);
  ASSERT_NE(forced_k, 0u);
  ASSERT_NE(plain_k, 0u);
  std::uint64_t unshown = 1;
  while (Contains(shown, unshown)) ++unshown;
  ASSERT_LT(unshown, flow->Segments());

  Segments missing = shown;
  missing.erase(missing.begin());
  Segments extra = shown;
  extra.insert(std::upper_bound(extra.begin(), extra.end(), unshown), unshown);
  proto::RevealTx unsorted = flow->ForcedReveal();
  unsorted.mutable_leaves()->SwapElements(0, 1);
  proto::RevealTx wrong_committed_proof = flow->ForcedReveal();
  wrong_committed_proof.mutable_leaves(0)->set_committed_proof(wrong_committed_proof.leaves(1).committed_proof());
  proto::RevealTx wrong_result_proof = flow->ForcedReveal();
  wrong_result_proof.mutable_leaves(0)->set_result_proof(wrong_result_proof.leaves(1).result_proof());
  proto::RevealTx wrong_result_root = flow->ForcedReveal();
  wrong_result_root.set_result_root(flow->proof_root);
  // A result proof equal to the committed one at a forced checkpoint, and one that differs at a
  // checkpoint that is not forced (each proven against its own result root).
  std::vector<Hash256> unforced = flow->ResultLeaves();
  unforced[forced_k] = flow->checkpoints[forced_k];
  std::vector<Hash256> changed = flow->ResultLeaves();
  changed[plain_k].fill(0x33);
  proto::RevealTx no_pieces = flow->ForcedReveal();
  no_pieces.clear_leaves();

  const std::vector<proto::RevealTx> bad = {
      flow->ForcedReveal(missing),         flow->ForcedReveal(extra),
      unsorted,                            wrong_committed_proof,
      wrong_result_proof,                  wrong_result_root,
      flow->ForcedRevealOver(unforced, shown), flow->ForcedRevealOver(changed, shown),
      no_pieces,
  };
  const std::string before = flow->task().SerializeAsString();
  std::vector<VerifiedTx> txs;
  for (const proto::RevealTx& msg : bad) txs.push_back(flow->chain.Tx(flow->solver, payload::kReveal, msg));
  const BlockResult result = flow->chain.Block(txs);
  ASSERT_EQ(result.tx_results.size(), bad.size());
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(result.tx_results[i].code, StatusCode::kInvalidArgument) << "reveal " << i << ": " << result.tx_results[i].log;
  }
  EXPECT_EQ(flow->task().SerializeAsString(), before);
  TxResult r = flow->RevealForced();
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  EXPECT_EQ(flow->task().outcome(), proto::OUTCOME_FORCED_ERROR);
}

// A game in a forced round is over the result proof: the disputed segment starts at the committed
// proof's checkpoint (the solver trained on from its falsified state) and ends at the result
// proof's. The opening must prove each against its own root, and an auditor replaying the game
// reaches the ledger's decision.
TEST(ForcedError, GamesInAForcedRoundOpenAgainstBothRoots) {
  // Slot 0 found a forced checkpoint; two consecutive forced checkpoints j, j + 1 give a segment
  // whose both ends differ between the proofs.
  const auto consecutive = [](const TaskFlow& f) {
    const Segments forced = f.ForcedCheckpoints();
    for (std::uint64_t k : forced) {
      if (Contains(forced, k + 1)) return k;
    }
    return std::uint64_t{0};
  };
  auto flow = ForcedFlow([&](const TaskFlow& f) { return !f.ForcedEnds(f.SlotCovered(0)).empty() && consecutive(f) != 0; });
  ASSERT_TRUE(flow);
  const PubKey challenger = flow->KeyOfSlot(0);
  Segments failed = flow->ForcedEnds(flow->SlotCovered(0));
  std::vector<std::string> digests(failed.size(), Bytes32(0x99));  // wrong: it plays a game
  ASSERT_EQ(flow->SlotVerdictWith(0, proto::VERDICT_REJECT, failed, digests).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  ASSERT_EQ(flow->task().status(), proto::TASK_DISPUTED);
  proto::DisputeGame game = GameOf(*flow, challenger);
  EXPECT_EQ(game.start_root(), flow->task().forced_root());
  EXPECT_EQ(game.proof_root(), flow->task().proof_root());
  EXPECT_NE(game.start_root(), game.proof_root());

  const std::uint64_t j = consecutive(*flow);
  const std::vector<Hash256> result = flow->ResultLeaves();
  const consensus::MerkleTree committed_tree(flow->checkpoints), result_tree(result);
  const auto proof_of = [](const consensus::MerkleTree& tree, std::uint64_t i) {
    const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*tree.Prove(i));
    return std::string(bytes.begin(), bytes.end());
  };
  const auto open = [&](const Hash256& start, const std::string& start_proof, const Hash256& end,
                        const std::string& end_proof) {
    proto::DisputeMoveTx msg;
    msg.set_task_id(flow->task_id);
    msg.set_challenger(Raw(challenger));
    msg.set_round(game.round());
    proto::OpenMove* move = msg.mutable_open();
    move->set_segment(j);
    move->set_start_hash(HashBytes(start));
    move->set_start_proof(start_proof);
    move->set_end_hash(HashBytes(end));
    move->set_end_proof(end_proof);
    move->set_claimed_end_hash(Bytes32(0x77));
    return flow->chain.Tx(challenger, payload::kDisputeMove, msg);
  };
  const BlockResult opened = flow->chain.Block({
      // The start from the result proof, or the end from the committed one: refused.
      open(result[j], proof_of(result_tree, j), result[j + 1], proof_of(result_tree, j + 1)),
      open(flow->checkpoints[j], proof_of(committed_tree, j), flow->checkpoints[j + 1],
           proof_of(committed_tree, j + 1)),
      // The start from the committed proof, the end from the result proof.
      open(flow->checkpoints[j], proof_of(committed_tree, j), result[j + 1], proof_of(result_tree, j + 1)),
  });
  ASSERT_EQ(opened.tx_results.size(), 3u);
  EXPECT_EQ(opened.tx_results[0].code, StatusCode::kInvalidArgument) << opened.tx_results[0].log;
  EXPECT_EQ(opened.tx_results[1].code, StatusCode::kInvalidArgument) << opened.tx_results[1].log;
  ASSERT_EQ(opened.tx_results[2].code, StatusCode::kOk) << opened.tx_results[2].log;
  game = GameOf(*flow, challenger);
  EXPECT_EQ(game.phase(), proto::GAME_STEPS);
  EXPECT_EQ(game.segment(), j);
  EXPECT_EQ(game.lo_hash(), HashBytes(flow->checkpoints[j]));
  EXPECT_EQ(game.defender().hi_hash(), HashBytes(result[j + 1]));

  // The solver answers the first bisection round; the challenger does not, and forfeits.
  proto::DisputeMoveTx step;
  step.set_task_id(flow->task_id);
  step.set_challenger(Raw(challenger));
  step.set_round(game.round());
  step.mutable_step()->set_state_hash(Bytes32(0x55));
  ASSERT_EQ(flow->chain.Run(flow->solver, payload::kDisputeMove, step).code, StatusCode::kOk);
  const std::uint64_t solver = flow->chain.Balance(flow->solver);
  flow->chain.AdvanceTo(flow->chain.height() + 10);
  const proto::Task task = flow->task();
  EXPECT_EQ(task.verifiers(0).game_result(), proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(task.standing(), proto::PROOF_UPHELD);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_EQ(flow->chain.Balance(flow->solver), solver + 8'820 + 500);
  // The auditor re-executes the game from its record, with both roots, to the same decision.
  game = GameOf(*flow, challenger);
  Result<GameAudit> audit = AuditGame(flow->chain.params(), task, game);
  ASSERT_TRUE(audit.ok()) << audit.status().ToString();
  EXPECT_TRUE(audit->differences.empty());
  EXPECT_TRUE(audit->decided);
  EXPECT_EQ(audit->result, proto::GAME_CHALLENGER_FORFEIT);
  EXPECT_EQ(audit->replayed.start_root(), game.start_root());
}

// The ledger keeps the reveal's leaves as it checked them: every shown checkpoint's result hash
// proves against the result root (a game's end) and its committed hash against forced_root. With
// them and the committed proof's start, a challenger opens a game over the result proof from the
// ledger's records alone. After the audit window the record is pruned with the task.
TEST(ForcedError, TheLedgerKeepsTheRevealsProofsForGamesUntilThePrune) {
  auto flow = ForcedFlow([](const TaskFlow& f) { return !f.ForcedEnds(f.SlotCovered(0)).empty(); });
  ASSERT_TRUE(flow);
  const PubKey challenger = flow->KeyOfSlot(0);
  const Segments failed = flow->ForcedEnds(flow->SlotCovered(0));
  std::vector<std::string> digests(failed.size(), Bytes32(0x99));  // wrong: it plays a game
  ASSERT_EQ(flow->SlotVerdictWith(0, proto::VERDICT_REJECT, failed, digests).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  EXPECT_EQ(QueryRevealed(flow->chain.state(), flow->task_id).status().code(), StatusCode::kNotFound);
  const Segments shown = RevealCheckpoints(flow->task());
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  ASSERT_EQ(flow->task().status(), proto::TASK_DISPUTED);

  Result<proto::RevealedCheckpoints> revealed = QueryRevealed(flow->chain.state(), flow->task_id);
  ASSERT_TRUE(revealed.ok()) << revealed.status().ToString();
  ASSERT_EQ(revealed->leaves_size(), static_cast<int>(shown.size()));
  const std::vector<Hash256> result = flow->ResultLeaves();
  const auto root_of = [](const std::string& raw) {
    Hash256 root{};
    std::copy(raw.begin(), raw.end(), root.begin());
    return root;
  };
  const auto proves = [](const Hash256& root, const std::string& hash, const std::string& raw_proof) {
    Result<consensus::MerkleProof> proof = consensus::ParseMerkleProof(
        std::span(reinterpret_cast<const std::uint8_t*>(raw_proof.data()), raw_proof.size()));
    Hash256 leaf{};
    std::copy(hash.begin(), hash.end(), leaf.begin());
    return proof.ok() && consensus::VerifyMerkleProof(root, leaf, *proof).ok();
  };
  const Hash256 result_root = root_of(flow->task().proof_root());
  const Hash256 forced_root = root_of(flow->task().forced_root());
  for (int i = 0; i < revealed->leaves_size(); ++i) {
    const proto::RevealedLeaf& leaf = revealed->leaves(i);
    EXPECT_EQ(leaf.checkpoint(), shown[static_cast<std::size_t>(i)]);
    EXPECT_EQ(leaf.result_hash(), HashBytes(result[leaf.checkpoint()]));
    EXPECT_TRUE(proves(result_root, leaf.result_hash(), leaf.result_proof())) << leaf.checkpoint();
    EXPECT_TRUE(proves(forced_root, leaf.committed_hash(), leaf.committed_proof())) << leaf.checkpoint();
  }

  // The game over a segment the reject named, its end taken from the ledger's record.
  const std::uint64_t s = failed.front();
  const auto end = std::find_if(revealed->leaves().begin(), revealed->leaves().end(),
                                [&](const proto::RevealedLeaf& leaf) { return leaf.checkpoint() == s + 1; });
  ASSERT_NE(end, revealed->leaves().end());
  const consensus::MerkleTree committed_tree(flow->checkpoints);
  const std::vector<std::uint8_t> start_proof = consensus::SerializeMerkleProof(*committed_tree.Prove(s));
  proto::DisputeGame game = GameOf(*flow, challenger);
  proto::DisputeMoveTx open;
  open.set_task_id(flow->task_id);
  open.set_challenger(Raw(challenger));
  open.set_round(game.round());
  proto::OpenMove* move = open.mutable_open();
  move->set_segment(s);
  move->set_start_hash(HashBytes(flow->checkpoints[s]));
  move->set_start_proof(std::string(start_proof.begin(), start_proof.end()));
  move->set_end_hash(end->result_hash());
  move->set_end_proof(end->result_proof());
  move->set_claimed_end_hash(Bytes32(0x77));
  const TxResult opened = flow->chain.Run(challenger, payload::kDisputeMove, open);
  ASSERT_EQ(opened.code, StatusCode::kOk) << opened.log;
  EXPECT_EQ(GameOf(*flow, challenger).phase(), proto::GAME_STEPS);

  // Nobody moves again: the game times out, the task settles, and the audit window passes.
  flow->chain.AdvanceTo(flow->chain.height() + 10);
  ASSERT_EQ(flow->task().status(), proto::TASK_SETTLED);
  EXPECT_TRUE(QueryRevealed(flow->chain.state(), flow->task_id).ok());
  flow->chain.AdvanceTo(flow->task().settle_height() + flow->chain.params().audit_window());
  EXPECT_TRUE(flow->task().pruned());
  EXPECT_EQ(QueryRevealed(flow->chain.state(), flow->task_id).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(flow->chain.state().Get("reveal/" + consensus::ToHex(flow->task_id))->has_value());
}

TEST(ForcedError, FlagFollowsSecretAndDrawnSeed) {
  proto::Params params = TestParams();
  params.set_forced_error_rate(3);
  TaskFlow flow(params);
  flow.RunToVerifying();
  const proto::Task before = flow.task();
  const bool forced = IsForcedError(flow.secret, before.forced_seed(), before.id(), 3);
  EXPECT_EQ(flow.Forced(), forced);
  for (std::uint32_t slot = 0; slot < 2; ++slot) ASSERT_EQ(flow.DiligentVerdict(slot).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ((forced ? flow.RevealForced() : flow.Reveal(flow.proof_root)).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().forced_error(), forced);
  EXPECT_EQ(flow.task().outcome(), forced ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_ACCEPTED);
}

}  // namespace
}  // namespace polnode::contracts::testing
