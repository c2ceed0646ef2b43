// contracts/forced.h on hand-built task records: which checkpoints a forced round's reveal shows,
// and when a verdict or challenge is right about the forced checkpoints.
#include <gtest/gtest.h>

#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
namespace {

using Segments = std::vector<std::uint64_t>;

// A 10-segment exact-mode task whose reveal showed forced checkpoints 3 and 10 (honest hashes 32
// bytes of 0x13 and 0x1A).
proto::Task RevealedTask() {
  proto::Task task;
  *task.mutable_spec() = TaskSubmission(10'000).spec();
  task.add_forced_checkpoints(3);
  task.add_forced_checkpoints(10);
  task.add_honest_hashes(Bytes32(0x13));
  task.add_honest_hashes(Bytes32(0x1A));
  return task;
}

proto::VerifierSlot Slot(std::uint8_t key, Segments drawn, proto::Verdict verdict, Segments failed = {}) {
  proto::VerifierSlot slot;
  slot.set_verifier(Bytes32(key));
  slot.set_verdict(verdict);
  for (std::uint64_t s : drawn) slot.add_segments(s);
  for (std::uint64_t s : failed) slot.add_failed_segments(s);
  return slot;
}

// The digest of the honest hash at the end of `segment` (checkpoint segment + 1) by `key`.
std::string Digest(std::uint8_t key, std::uint64_t segment) {
  const std::string honest = Bytes32(static_cast<std::uint8_t>(0x10 + segment + 1));
  return HashBytes(SegmentDigest(Bytes32(key), segment, honest));
}

TEST(ForcedRules, TheRevealShowsTheEndsOfLiveCoveredAndChallengedSegmentsAndTheFinal) {
  proto::Task task = RevealedTask();
  *task.add_verifiers() = Slot(1, {0, 4}, proto::VERDICT_ACCEPT);
  *task.add_verifiers() = Slot(2, {2, 6}, proto::VERDICT_REJECT, {2});
  proto::VerifierSlot absent = Slot(3, {7}, proto::VERDICT_ACCEPT);
  absent.set_absent(true);  // gave no verdict in its window: covers nothing
  *task.add_verifiers() = absent;
  *task.add_verifiers() = Slot(4, {8}, proto::VERDICT_UNAVAILABLE);  // replayed nothing
  *task.add_verifiers() = Slot(5, {1}, proto::VERDICT_NONE);
  proto::Challenge* challenge = task.add_challenges();
  challenge->add_segments(3);
  challenge->add_segments(9);
  challenge->add_failed_segments(9);
  EXPECT_EQ(RevealCheckpoints(task), (Segments{1, 3, 4, 5, 7, 10}));
}

TEST(ForcedRules, AVerdictIsRightWhenItNamesExactlyTheCoveredSegmentsEndingAtForcedCheckpoints) {
  const proto::Task task = RevealedTask();  // forced: 3 (end of segment 2) and 10 (of segment 9)
  // Covered {2, 5, 9}: the right reject names 2 and 9 with their honest digests.
  proto::VerifierSlot right = Slot(1, {2, 5}, proto::VERDICT_REJECT, {2, 9});
  right.add_segment_digests(Digest(1, 2));
  right.add_segment_digests(Digest(1, 9));
  EXPECT_TRUE(VerdictRight(task, right));
  // The final-only verifier: right about the final segment, silent about segment 2.
  proto::VerifierSlot final_only = Slot(1, {2, 5}, proto::VERDICT_REJECT, {9});
  final_only.add_segment_digests(Digest(1, 9));
  EXPECT_FALSE(VerdictRight(task, final_only));
  proto::VerifierSlot extra = Slot(1, {2, 5}, proto::VERDICT_REJECT, {2, 5, 9});
  for (std::uint64_t s : {2, 5, 9}) extra.add_segment_digests(Digest(1, s));
  EXPECT_FALSE(VerdictRight(task, extra));
  proto::VerifierSlot copied = right;  // slot 2's digest of segment 2
  copied.set_segment_digests(0, Digest(2, 2));
  EXPECT_FALSE(VerdictRight(task, copied));
  proto::VerifierSlot moved = right;  // the digest of segment 9's end given for segment 2
  moved.set_segment_digests(0, HashBytes(SegmentDigest(Bytes32(1), 2, Bytes32(0x1A))));
  EXPECT_FALSE(VerdictRight(task, moved));
  proto::VerifierSlot undigested = right;
  undigested.clear_segment_digests();
  EXPECT_FALSE(VerdictRight(task, undigested));
  // Accepts: right only when no covered segment ends at a forced checkpoint, which the final
  // segment does here.
  EXPECT_FALSE(VerdictRight(task, Slot(1, {0, 4}, proto::VERDICT_ACCEPT)));
  proto::Task final_not_forced = task;
  final_not_forced.mutable_forced_checkpoints()->RemoveLast();
  final_not_forced.mutable_honest_hashes()->RemoveLast();
  EXPECT_TRUE(VerdictRight(final_not_forced, Slot(1, {0, 4}, proto::VERDICT_ACCEPT)));
  EXPECT_FALSE(VerdictRight(final_not_forced, Slot(1, {2, 4}, proto::VERDICT_ACCEPT)));
  // Unavailable verdicts and absent slots vouch for nothing.
  EXPECT_FALSE(VerdictRight(final_not_forced, Slot(1, {0, 4}, proto::VERDICT_UNAVAILABLE)));
  proto::VerifierSlot absent = Slot(1, {0, 4}, proto::VERDICT_ACCEPT);
  absent.set_absent(true);
  EXPECT_FALSE(VerdictRight(final_not_forced, absent));
}

TEST(ForcedRules, AChallengeIsCaughtByTheSameTestOverItsCoveredSegments) {
  const proto::Task task = RevealedTask();
  proto::Challenge challenge;
  challenge.set_challenger(Bytes32(6));
  for (std::uint64_t s : {2, 7, 9}) challenge.add_segments(s);
  challenge.add_failed_segments(2);
  challenge.add_failed_segments(9);
  challenge.add_segment_digests(Digest(6, 2));
  challenge.add_segment_digests(Digest(6, 9));
  EXPECT_TRUE(ChallengeCaught(task, challenge));
  proto::Challenge copycat = challenge;  // named only the final segment a reject named
  copycat.clear_failed_segments();
  copycat.clear_segment_digests();
  copycat.add_failed_segments(9);
  copycat.add_segment_digests(Digest(6, 9));
  EXPECT_FALSE(ChallengeCaught(task, copycat));
  proto::Challenge empty = challenge;
  empty.clear_failed_segments();
  empty.clear_segment_digests();
  EXPECT_FALSE(ChallengeCaught(task, empty));
}

TEST(ForcedRules, TolerantRejectsCommitToThePerturbedIndicesNotToTheHonestHash) {
  proto::Task task = RevealedTask();  // forced: 3 (end of segment 2) and 10 (of segment 9)
  task.mutable_spec()->set_tolerant(true);
  task.add_perturbed_index_hashes(Bytes32(0x23));
  task.add_perturbed_index_hashes(Bytes32(0x2A));
  const auto indices_digest = [](std::uint8_t key, std::uint64_t segment) {
    return HashBytes(SegmentDigest(Bytes32(key), segment, Bytes32(static_cast<std::uint8_t>(0x20 + segment + 1))));
  };
  proto::VerifierSlot right = Slot(1, {2, 5}, proto::VERDICT_REJECT, {2, 9});
  right.add_segment_digests(indices_digest(1, 2));
  right.add_segment_digests(indices_digest(1, 9));
  EXPECT_TRUE(VerdictRight(task, right));
  // The honest hash's digest is what an exact replay reports; a tolerant one cannot, and a copy of
  // the exact rule catches nothing here.
  proto::VerifierSlot exact_style = Slot(1, {2, 5}, proto::VERDICT_REJECT, {2, 9});
  exact_style.add_segment_digests(Digest(1, 2));
  exact_style.add_segment_digests(Digest(1, 9));
  EXPECT_FALSE(VerdictRight(task, exact_style));
  // Naming the right segments is no longer enough: without digests (the rule before v7) it is wrong.
  EXPECT_FALSE(VerdictRight(task, Slot(1, {2, 5}, proto::VERDICT_REJECT, {2, 9})));
  // A verifier that replayed only the final segment names 9 alone and misses segment 2's perturbation.
  proto::VerifierSlot final_only = Slot(1, {2, 5}, proto::VERDICT_REJECT, {9});
  final_only.add_segment_digests(indices_digest(1, 9));
  EXPECT_FALSE(VerdictRight(task, final_only));
  EXPECT_FALSE(VerdictRight(task, Slot(1, {2, 5}, proto::VERDICT_ACCEPT)));
}

TEST(ForcedRules, BothModesForceEachCheckpointWithProbabilityOneHalf) {
  // The same draw in both modes: tolerant rounds force middle checkpoints too (protocol v7).
  std::uint64_t forced = 0, middle = 0;
  for (int i = 0; i < 200; ++i) {
    const Segments draw = ForcedCheckpoints("secret", "seed", "task" + std::to_string(i), 10);
    ASSERT_FALSE(draw.empty());
    forced += draw.size();
    for (std::uint64_t k : draw) middle += k < 10 ? 1 : 0;
  }
  // 200 rounds x 10 checkpoints x 1/2 = 1,000 expected (+1/512 per round for the fallback).
  EXPECT_GT(forced, 900u);
  EXPECT_LT(forced, 1100u);
  EXPECT_GT(middle, 800u);
}

}  // namespace
}  // namespace polnode::contracts::testing
