// The check verifiers and whistleblowers run on a committed proof (verification_job.h), against
// real proofs of the tiny task made by solver::Prove and served over loopback HTTP: an honest proof
// is accepted after downloading only the checkpoints the replay needs, a cheat is rejected naming
// its segment, a forced round's reject commits to what the solver reveals (the honest end in exact
// mode, the perturbed elements in tolerant mode), data the solver does not serve makes the verdict
// unavailable (the solver's burden), a tolerant task the checker cannot judge is declined, and
// only the checker's own trouble is an error.
#include "polnode/roles/verification_job.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "pol_task_fixture.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using testing::KeyFromByte;
using testing::LoopbackFetchPolicy;
using testing::RawHash;
using testing::RawPubKey;

// forced_delta D of the tolerant tasks here (the default a submitter's tolerant task gets).
constexpr float kForcedDelta = 0x1p-10f;

class VerificationJobTest : public ::testing::Test {
 protected:
  VerificationJobTest()
      : data_(solver::testing::TinyDataset()), document_(solver::testing::TinyTask(data_)),
        cache_([this](const solver::TaskSpec& document) -> Result<solver::ImageDataset> {
          if (document.data_location != "synthetic") return Status::NotFound("no data at " + document.data_location);
          return data_;
        }),
        backend_(kernels::MakeReferenceBackend()) {}

  // The ledger's record of document_ with `proof` committed by solver_ and verifiers assigned.
  proto::Task TaskFor(const testing::TinyProof& proof) {
    proto::Task task;
    task.set_id(task_id_);
    Result<proto::TaskSpec> spec = solver::LedgerSpecFor(document_, data_, solver::TaskTerms{1000, 20, 40});
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    *task.mutable_spec() = *spec;
    if (spec->tolerant()) task.mutable_spec()->set_forced_delta(kForcedDelta);
    task.set_spec_uri(server_.AddDocument(document_));
    task.set_status(proto::TASK_VERIFYING);
    task.set_solver(RawPubKey(solver_));
    task.set_proof_root(RawHash(proof.manifest.merkle_root));
    task.set_proof_uri(server_.AddProof(proof.dir->path()));
    task.set_segment_beacon(RawHash(consensus::Sha256("beacon")));
    proto::VerifierSlot* slot = task.add_verifiers();
    slot->set_verifier(RawPubKey(verifier_));
    for (std::int64_t s : kSlotSegments) slot->add_segments(static_cast<std::uint64_t>(s));
    return task;
  }

  Result<ProofCheck> Check(const proto::Task& task, std::vector<std::int64_t> segments,
                           FetchPolicy fetch = LoopbackFetchPolicy()) {
    CheckRequest request;
    request.task = task;
    request.segments = std::move(segments);
    request.cache_dir = cache_dir_.path();
    request.fetch = std::move(fetch);
    request.data = &cache_;
    request.backend = backend_.get();
    return CheckCommittedProof(request);
  }

  static std::vector<std::int64_t> Replayed(const ProofCheck& check) {
    std::vector<std::int64_t> out;
    for (const verifier::SegmentEvidence& e : check.evidence) out.push_back(e.segment);
    return out;
  }

  // A tolerant forced round of document_ proved for real: at each checkpoint k of `deltas`, right
  // after training up to it, the drawn elements of the first tensor (consensus::DrawPerturbation)
  // are moved by +-deltas[k] (consensus::PerturbedValue), the proof commits that state and
  // training goes on from it, as the solver does. `drawn` gets each checkpoint's perturbation.
  testing::TinyProof ProvePerturbed(const std::map<std::uint64_t, float>& deltas,
                                    std::map<std::uint64_t, consensus::Perturbation>& drawn) {
    testing::TinyProof proof;
    proof.dir = std::make_unique<polnode::testing::TempDir>("perturbed-proof");
    std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
    solver::ProveOptions options;
    options.out_dir = proof.dir->path();
    options.key = &solver_;
    const std::int64_t interval = document_.checkpoint_interval;
    options.on_checkpoint = [&](solver::TrainState& state) -> Status {
      const std::uint64_t k = static_cast<std::uint64_t>(state.step / interval);
      const auto delta = deltas.find(k);
      if (delta == deltas.end()) return Status::Ok();
      kernels::Tensor& first = state.tensors[0].tensor;
      const consensus::Perturbation p = consensus::DrawPerturbation(secret_, forced_seed_, task_id_, k, first.shape());
      for (const consensus::PerturbedElement& e : p.elements) {
        const float honest = first.data()[e.flat];
        first.data()[e.flat] = consensus::PerturbedValue(honest, e.sign, delta->second);
        EXPECT_TRUE(consensus::PerturbationVisible(honest, first.data()[e.flat], delta->second)) << "checkpoint " << k;
      }
      drawn[k] = p;
      return Status::Ok();
    };
    Result<solver::ProveResult> result = solver::Prove(document_, data_, *backend, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    if (result.ok()) proof.manifest = result->manifest;
    return proof;
  }

  // The segments the ledger drew for verifier_ (the tiny task has 8; 7 is the final one).
  static constexpr std::array<std::int64_t, 2> kSlotSegments = {2, 5};

  solver::ImageDataset data_;
  solver::TaskSpec document_;
  DataCache cache_;
  std::unique_ptr<kernels::Backend> backend_;
  consensus::SecretKey solver_ = KeyFromByte(0x51);
  consensus::SecretKey verifier_ = KeyFromByte(0x52);
  polnode::testing::TempDir cache_dir_{"check-cache"};
  testing::TaskServer server_;
  // What a forced round of TaskFor's task derives its perturbations from (raw bytes).
  const std::string secret_ = std::string(32, '\x21');
  const std::string forced_seed_ = std::string(32, '\x22');
  const std::string task_id_ = RawHash(consensus::Sha256("task"));
};

TEST_F(VerificationJobTest, SlotSegmentsAreTheLedgersDraw) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(proof);
  EXPECT_EQ(SlotsOf(task, RawPubKey(verifier_)), std::vector<std::uint32_t>{0});
  EXPECT_TRUE(SlotsOf(task, RawPubKey(solver_)).empty());
  EXPECT_EQ(SlotSegments(task.verifiers(0)), std::vector<std::int64_t>(kSlotSegments.begin(), kSlotSegments.end()));
  // A key drawn for a second slot holds both; one replay covers the union of their segments.
  proto::VerifierSlot* second = task.add_verifiers();
  second->set_verifier(RawPubKey(verifier_));
  for (std::uint64_t s : {1, 5}) second->add_segments(s);
  EXPECT_EQ(SlotsOf(task, RawPubKey(verifier_)), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(SegmentsOfSlots(task, {0, 1}), (std::vector<std::int64_t>{1, 2, 5}));
  EXPECT_EQ(SegmentsOfSlots(task, {1}), (std::vector<std::int64_t>{1, 5}));
}

TEST_F(VerificationJobTest, HonestProofIsAcceptedFetchingOnlyTheCheckpointsItReplays) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  const std::vector<std::int64_t> segments = SlotSegments(task.verifiers(0));
  Result<ProofCheck> check = Check(task, segments);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->data_fault, "");
  EXPECT_EQ(Replayed(*check), (std::vector<std::int64_t>{2, 5, 7}));
  Result<SegmentsVerdict> verdict = VerdictOn(*check, segments);
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_ACCEPT) << verdict->reason;
  EXPECT_TRUE(verdict->failed_segments.empty());
  // An accept commits to no end state: only failed segments carry digests.
  EXPECT_TRUE(verdict->failed_ends.empty());
  const proto::VerdictTx tx = VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("report"));
  EXPECT_EQ(tx.verdict(), proto::VERDICT_ACCEPT);
  EXPECT_EQ(tx.segment_digests_size(), 0);
  EXPECT_EQ(tx.failed_segments_size(), 0);

  // Each replayed segment's two ends, the final segment's included, and nothing else.
  const std::set<std::int64_t> needed = {2, 3, 5, 6, 7, 8};
  EXPECT_EQ(check->blobs_fetched, static_cast<std::int64_t>(needed.size()));
  EXPECT_EQ(server_.CountRequests("/blobs/"), static_cast<int>(needed.size()));
  for (std::int64_t i : needed) {
    EXPECT_EQ(server_.CountRequests("/blobs/" + consensus::ToHex(proof.manifest.checkpoint_blobs[i])), 1)
        << "checkpoint " << i;
  }
  EXPECT_EQ(server_.CountRequests("/manifest"), 1);
  EXPECT_EQ(server_.CountRequests("/v1/specs/"), 1);

  // A second check finds every checkpoint in its cache.
  check = Check(task, segments);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(VerdictOn(*check, segments)->verdict, proto::VERDICT_ACCEPT);
  EXPECT_EQ(check->blobs_fetched, 0);
  EXPECT_EQ(server_.CountRequests("/blobs/"), static_cast<int>(needed.size()));
}

// A tolerant-mode task is judged by distances against thresholds the checker profiles from the
// task alone; every backend here trains bit for bit alike, so they are 0, the honest proof passes
// and a cheat still fails. A tolerant reject commits to no end state (there is no bitwise one to
// vouch for) but to the elements its replay found beyond forced_delta / 2. Exact-mode checks
// compare hashes and carry no thresholds.
TEST_F(VerificationJobTest, TolerantModeIsJudgedByThresholdsProfiledFromTheTask) {
  document_.mode = solver::ReproMode::kTolerant;
  const testing::TinyProof honest = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(honest);
  Result<ProofCheck> check = Check(task, {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {2});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_ACCEPT) << verdict->reason;
  EXPECT_TRUE(verdict->failed_ends.empty());
  ASSERT_TRUE(check->thresholds.has_value());
  EXPECT_EQ(check->thresholds->l1, 0.0);
  EXPECT_EQ(check->thresholds->linf, 0.0);
  EXPECT_EQ(check->thresholds->cosine, 0.0);
  EXPECT_EQ(check->forced_delta, kForcedDelta);
  for (const verifier::SegmentEvidence& e : check->evidence) {
    EXPECT_TRUE(e.have_distances) << e.segment;
    EXPECT_TRUE(e.beyond_limit.empty()) << e.segment;
  }
  EXPECT_EQ(VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("a")).segment_digests_size(), 0);

  const testing::TinyProof cheat = testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{13, 3, 0, 22});
  task = TaskFor(cheat);
  check = Check(task, {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  verdict = VerdictOn(*check, {2});
  EXPECT_EQ(verdict->verdict, proto::VERDICT_REJECT);
  EXPECT_EQ(verdict->failed_segments, std::vector<std::uint64_t>{2});
  const verifier::SegmentEvidence& failed = check->evidence[0];
  ASSERT_EQ(failed.segment, 2);
  // The flipped bit lives on through the rest of the segment's training: its end is off by more
  // than D / 2 somewhere, and those elements are what the reject commits to.
  EXPECT_FALSE(failed.beyond_limit.empty());
  const consensus::Hash256 end = consensus::PerturbedIndicesHash(failed.beyond_limit);
  EXPECT_EQ(verdict->failed_ends, std::vector<consensus::Hash256>{end});
  const proto::VerdictTx reject = VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("r"));
  EXPECT_EQ(reject.failed_segments_size(), 1);
  ASSERT_EQ(reject.segment_digests_size(), 1);
  EXPECT_EQ(reject.segment_digests(0), RawHash(contracts::SegmentDigest(RawPubKey(verifier_), 2, RawHash(end))));

  document_.mode = solver::ReproMode::kExact;
  check = Check(TaskFor(testing::ProveTiny(document_, data_, solver_, std::nullopt)), {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->thresholds.has_value());
}

TEST_F(VerificationJobTest, CheatIsRejectedNamingItsSegmentAndOtherSegmentsStillPass) {
  // A flip in segment 2 that does not live on (a forward-pass value): only segment 2 replays wrong.
  constexpr std::int64_t kForged = 2, kOther = 5;
  const testing::TinyProof proof =
      testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{kForged * 5 + 2, 3, 0, 22});
  const proto::Task task = TaskFor(proof);
  Result<ProofCheck> check = Check(task, {kForged, kOther});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {kForged, kOther});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_REJECT);
  EXPECT_EQ(verdict->reason.rfind("segment " + std::to_string(kForged) + ": ", 0), 0u) << verdict->reason;
  for (const verifier::SegmentEvidence& e : check->evidence) {
    EXPECT_TRUE(e.available) << e.segment;
    EXPECT_EQ(e.ok, e.segment != kForged) << "segment " << e.segment << ": " << e.reason;
  }
  EXPECT_EQ(verdict->failed_segments, std::vector<std::uint64_t>{kForged});
  const proto::VerdictTx tx = VerdictTxFor(task.id(), 3, RawPubKey(verifier_), *verdict, consensus::Sha256("report"));
  EXPECT_EQ(tx.slot(), 3u);  // the slot it answers
  EXPECT_EQ(tx.verdict(), proto::VERDICT_REJECT);
  ASSERT_EQ(tx.failed_segments_size(), 1);
  EXPECT_EQ(tx.failed_segments(0), static_cast<std::uint64_t>(kForged));
  // The reject commits to the end its replay of the failed segment reached, keyed by its key and
  // the segment.
  const verifier::SegmentEvidence& forged = check->evidence[0];
  ASSERT_EQ(forged.segment, kForged);
  ASSERT_EQ(verdict->failed_ends, std::vector<consensus::Hash256>{forged.recomputed});
  ASSERT_EQ(tx.segment_digests_size(), 1);
  EXPECT_EQ(tx.segment_digests(0), RawHash(contracts::SegmentDigest(RawPubKey(verifier_), kForged, RawHash(forged.recomputed))));
  // Read per verifier, as a whistleblower does: a verifier that drew only the honest segment
  // (and the final one) was right to accept.
  Result<SegmentsVerdict> on_other = VerdictOn(*check, {kOther});
  ASSERT_TRUE(on_other.ok());
  EXPECT_EQ(on_other->verdict, proto::VERDICT_ACCEPT) << on_other->reason;
  // A segment the check did not replay cannot be judged from it.
  EXPECT_EQ(VerdictOn(*check, {0}).status().code(), StatusCode::kInternal);
}

// In a forced round the committed proof is falsified at the forced checkpoints and the solver
// trained on from them: a covered segment fails exactly when it ends at a forced checkpoint (one
// that merely starts at one replays to the committed end), and the reject commits to the honest
// end of each, the result proof's hash there, which the solver reveals later.
TEST_F(VerificationJobTest, ForcedRoundRejectNamesExactlyTheCoveredSegmentsEndingAtForcedCheckpoints) {
  solver::ForcedRound round;
  round.secret = std::string(32, '\x21');
  round.forced_seed = std::string(32, '\x22');
  round.task_id = RawHash(consensus::Sha256("task"));
  round.checkpoints = {3, 5, 8};  // segments 2, 4 and 7 end falsified; 5 starts from a falsified state
  const testing::ForcedTinyProof proof = testing::ProveTinyForced(document_, data_, solver_, round);
  proto::Task task = TaskFor(proof.committed);
  Result<ProofCheck> check = Check(task, {2, 5});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {2, 5});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_REJECT);
  EXPECT_EQ(verdict->failed_segments, (std::vector<std::uint64_t>{2, 7}));
  EXPECT_EQ(verdict->failed_ends,
            (std::vector<consensus::Hash256>{proof.result.manifest.checkpoint_hashes[3], proof.result.manifest.checkpoint_hashes[8]}));
  const proto::VerdictTx tx = VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("report"));
  ASSERT_EQ(tx.failed_segments_size(), 2);
  ASSERT_EQ(tx.segment_digests_size(), 2);
  for (int j = 0; j < 2; ++j) {
    const std::uint64_t s = tx.failed_segments(j);
    EXPECT_EQ(tx.segment_digests(j), RawHash(contracts::SegmentDigest(RawPubKey(verifier_), s,
                                                                      RawHash(proof.result.manifest.checkpoint_hashes[s + 1]))))
        << "segment " << s;
  }
  // A verifier covering only segment 5 (and the final one) names the final one alone.
  verdict = VerdictOn(*check, {5});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->failed_segments, std::vector<std::uint64_t>{7});
}

// A tolerant forced round (protocol v7): the solver perturbed a few elements of each forced
// checkpoint by +-D and trained on from there. A covered segment fails exactly when it ends at a
// forced checkpoint, and the reject commits to the perturbed elements (consensus::
// PerturbedIndicesHash), which the ledger compares with the perturbation the reveal proves: the
// verdict and a whistleblower's challenge built from the same check are right by contracts/forced.h.
TEST_F(VerificationJobTest, TolerantForcedRoundRejectCommitsToExactlyThePerturbedElementsOfEachForcedEnd) {
  document_.mode = solver::ReproMode::kTolerant;
  std::map<std::uint64_t, consensus::Perturbation> drawn;
  // Segments 2, 4 and 7 end perturbed; 5 starts from a perturbed state.
  const testing::TinyProof proof = ProvePerturbed({{3, kForcedDelta}, {5, kForcedDelta}, {8, kForcedDelta}}, drawn);
  ASSERT_EQ(drawn.size(), 3u);
  proto::Task task = TaskFor(proof);
  ASSERT_EQ(task.id(), task_id_);
  Result<ProofCheck> check = Check(task, {2, 5});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  ASSERT_EQ(Replayed(*check), (std::vector<std::int64_t>{2, 5, 7}));
  const auto perturbed = [&](std::uint64_t k) { return consensus::PerturbedIndices(drawn.at(k)); };
  const auto indices_hash = [&](std::uint64_t k) { return consensus::PerturbedIndicesHash(perturbed(k)); };
  EXPECT_EQ(check->evidence[0].beyond_limit, perturbed(3));
  EXPECT_TRUE(check->evidence[1].ok) << check->evidence[1].reason;
  EXPECT_TRUE(check->evidence[1].beyond_limit.empty());
  EXPECT_EQ(check->evidence[2].beyond_limit, perturbed(8));

  Result<SegmentsVerdict> verdict = VerdictOn(*check, {2, 5});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_REJECT);
  EXPECT_EQ(verdict->failed_segments, (std::vector<std::uint64_t>{2, 7}));
  EXPECT_EQ(verdict->failed_ends, (std::vector<consensus::Hash256>{indices_hash(3), indices_hash(8)}));
  const proto::VerdictTx tx = VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("report"));
  ASSERT_EQ(tx.failed_segments_size(), 2);
  ASSERT_EQ(tx.segment_digests_size(), 2);
  for (int j = 0; j < 2; ++j) {
    const std::uint64_t s = tx.failed_segments(j);
    EXPECT_EQ(tx.segment_digests(j), RawHash(contracts::SegmentDigest(RawPubKey(verifier_), s, RawHash(indices_hash(s + 1)))))
        << "segment " << s;
  }

  // The ledger's view after the reveal: the forced checkpoints and their perturbed indices.
  for (const auto& [k, p] : drawn) {
    task.add_forced_checkpoints(k);
    task.add_perturbed_index_hashes(RawHash(indices_hash(k)));
  }
  proto::VerifierSlot& slot = *task.mutable_verifiers(0);
  slot.set_verdict(tx.verdict());
  *slot.mutable_failed_segments() = tx.failed_segments();
  *slot.mutable_segment_digests() = tx.segment_digests();
  EXPECT_TRUE(contracts::VerdictRight(task, slot));
  // A whistleblower's challenge from the same check, over its own covered segments.
  const consensus::SecretKey whistleblower = KeyFromByte(0x53);
  const std::vector<std::int64_t> covered = {2, 5, 7};
  Result<SegmentsVerdict> mine = VerdictOn(*check, covered);
  ASSERT_TRUE(mine.ok());
  proto::Challenge challenge;
  challenge.set_challenger(RawPubKey(whistleblower));
  for (std::int64_t s : covered) challenge.add_segments(static_cast<std::uint64_t>(s));
  for (std::uint64_t s : mine->failed_segments) challenge.add_failed_segments(s);
  for (std::string& digest : SegmentDigestsOf(RawPubKey(whistleblower), *mine)) challenge.add_segment_digests(std::move(digest));
  EXPECT_TRUE(contracts::ChallengeCaught(task, challenge));
  // The same failed segments with the verifier's digests are no catch for the whistleblower.
  *challenge.mutable_segment_digests() = tx.segment_digests();
  EXPECT_FALSE(contracts::ChallengeCaught(task, challenge));
}

// A perturbation below D / 2 is no forced round a replay can name: under this machine's thresholds
// of 0 the segment still fails on its distances, but names no element, so its digest is of the
// empty set (the profile-level acceptance of such a change is tests/verifier/forced_replay_test).
TEST_F(VerificationJobTest, TolerantPerturbationBelowHalfTheDeltaNamesNoElement) {
  document_.mode = solver::ReproMode::kTolerant;
  std::map<std::uint64_t, consensus::Perturbation> drawn;
  const testing::TinyProof proof = ProvePerturbed({{3, kForcedDelta / 4}}, drawn);
  const proto::Task task = TaskFor(proof);
  Result<ProofCheck> check = Check(task, {2, 5});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  ASSERT_EQ(check->evidence[0].segment, 2);
  EXPECT_FALSE(check->evidence[0].ok);
  EXPECT_EQ(check->evidence[0].reason, "replay distance exceeds the profiled thresholds");
  EXPECT_GT(check->evidence[0].distances.linf, 0.0);
  EXPECT_LE(check->evidence[0].distances.linf, static_cast<double>(kForcedDelta) / 2);
  EXPECT_TRUE(check->evidence[0].beyond_limit.empty());
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {2, 5});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->failed_segments, std::vector<std::uint64_t>{2});
  EXPECT_EQ(verdict->failed_ends, std::vector<consensus::Hash256>{consensus::PerturbedIndicesHash({})});
  EXPECT_NE(verdict->failed_ends[0], consensus::PerturbedIndicesHash(consensus::PerturbedIndices(drawn.at(3))));
}

// A tolerant task whose forced_delta is unusable is declined before anything is fetched or
// replayed; so is one whose profiled replay error is not below D / 4 (CheckForcedDeltaFits, which
// the check applies to its profile: this machine's backends profile 0, so that case is shown on
// the function).
TEST_F(VerificationJobTest, ATolerantTaskTheCheckerCannotJudgeIsDeclined) {
  document_.mode = solver::ReproMode::kTolerant;
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  const float bad[] = {0.0f, -kForcedDelta, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (float delta : bad) {
    proto::Task declined = task;
    declined.mutable_spec()->set_forced_delta(delta);
    Result<ProofCheck> check = Check(declined, {2});
    EXPECT_EQ(check.status().code(), StatusCode::kFailedPrecondition) << delta;
    EXPECT_EQ(check.status().message().rfind("declined: the tolerant task's forced_delta ", 0), 0u) << check.status().ToString();
  }
  EXPECT_TRUE(server_.Requests().empty());

  const double quarter = static_cast<double>(kForcedDelta) / 4;
  verifier::Thresholds profiled;
  profiled.linf = quarter;
  const Status too_loose = CheckForcedDeltaFits(kForcedDelta, profiled);
  EXPECT_EQ(too_loose.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(too_loose.message(),
            "declined: the profiled replay error (linf threshold 0.000244140625) is not below forced_delta / 4 = "
            "0.000244140625 (forced_delta 0.0009765625), so a forced round's perturbation cannot be told from replay "
            "noise here");
  profiled.linf = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(CheckForcedDeltaFits(kForcedDelta, profiled).code(), StatusCode::kFailedPrecondition);
  profiled.linf = std::nextafter(quarter, 0.0);
  EXPECT_TRUE(CheckForcedDeltaFits(kForcedDelta, profiled).ok());
  EXPECT_EQ(CheckForcedDeltaFits(0.0f, verifier::Thresholds{}).code(), StatusCode::kFailedPrecondition);

  // The same task with a usable D is judged as usual.
  Result<ProofCheck> check = Check(task, {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(VerdictOn(*check, {2})->verdict, proto::VERDICT_ACCEPT);
}

TEST_F(VerificationJobTest, ManifestSignedByAnotherKeyMakesTheDataUnavailableWithoutDownloads) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, KeyFromByte(0x66), std::nullopt);
  const proto::Task task = TaskFor(proof);  // the ledger names solver_ as the solver
  Result<ProofCheck> check = Check(task, {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_NE(check->data_fault.find("not signed by the task's solver"), std::string::npos) << check->data_fault;
  EXPECT_EQ(server_.CountRequests("/blobs/"), 0);
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {0});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_UNAVAILABLE);
  EXPECT_NE(verdict->reason.find("neither served nor published"), std::string::npos) << verdict->reason;
  const proto::VerdictTx tx = VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("report"));
  EXPECT_EQ(tx.segment_digests_size(), 0) << "an unavailable verdict commits to no end state";
}

TEST_F(VerificationJobTest, DocumentThatDoesNotBindMakesTheDataUnavailableBeforeTheProofIsFetched) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(proof);
  task.mutable_spec()->set_batch_root(std::string(32, '\0'));
  Result<ProofCheck> check = Check(task, {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->data_fault.rfind("task document: ", 0), 0u) << check->data_fault;
  EXPECT_NE(check->data_fault.find("batch_root"), std::string::npos) << check->data_fault;
  EXPECT_EQ(VerdictOn(*check, {0, 1})->verdict, proto::VERDICT_UNAVAILABLE);
  EXPECT_EQ(server_.CountRequests("/manifest"), 0);
  Result<BoundTask> bound = BindTask(LoopbackFetchPolicy(), task, cache_);
  EXPECT_EQ(bound.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(VerificationJobTest, MissingCheckpointMakesItsSegmentUnavailableAfterRetries) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  // The solver stops serving the final checkpoint.
  const std::string blob = consensus::ToHex(proof.manifest.checkpoint_blobs[8]);
  ASSERT_TRUE(std::filesystem::remove(proof.dir->File("blobs/" + blob)));
  Result<ProofCheck> check = Check(task, {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(server_.CountRequests("/blobs/" + blob), 3);
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {0, 1});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->verdict, proto::VERDICT_UNAVAILABLE);
  EXPECT_EQ(verdict->reason.rfind("segment 7: ", 0), 0u) << verdict->reason;
  // A segment that did fail outranks one that could not be checked: a wrong transition is shown.
  const testing::TinyProof cheat = testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{2, 3, 0, 22});
  const std::string cheat_blob = consensus::ToHex(cheat.manifest.checkpoint_blobs[8]);
  ASSERT_TRUE(std::filesystem::remove(cheat.dir->File("blobs/" + cheat_blob)));
  check = Check(TaskFor(cheat), {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  verdict = VerdictOn(*check, {0, 1});
  EXPECT_EQ(verdict->verdict, proto::VERDICT_REJECT);
  EXPECT_EQ(verdict->failed_segments, std::vector<std::uint64_t>{0});
}

// A daemon that stops while its check sleeps between two fetch attempts is not held up by that
// pause: destroying the BackgroundCheck wakes it and no further attempt is made, and the clock
// never moved.
TEST_F(VerificationJobTest, AStoppedCheckEndsItsRetryPauseWithoutTheClockMoving) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  const std::string blob = consensus::ToHex(proof.manifest.checkpoint_blobs[8]);
  ASSERT_TRUE(std::filesystem::remove(proof.dir->File("blobs/" + blob)));
  ManualClock clock;
  const Clock::TimePoint start = clock.Now();
  CheckRequest request;
  request.task = task;
  request.segments = {0};
  request.cache_dir = cache_dir_.path();
  request.fetch = LoopbackFetchPolicy();
  request.data = &cache_;
  request.backend = backend_.get();
  request.clock = &clock;
  auto check = std::make_unique<BackgroundCheck>(std::move(request));
  clock.AwaitWaiters(1);  // the pause after the first refused download of checkpoint 8
  EXPECT_FALSE(check->ready());
  check.reset();
  EXPECT_EQ(server_.CountRequests("/blobs/" + blob), 1);
  EXPECT_EQ(clock.waiters(), 0u);
  EXPECT_EQ(clock.Now(), start);
}

TEST_F(VerificationJobTest, AnUnreachableProofServerIsUnavailableDataAndAnUnreachableDocumentAnError) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(proof);
  proto::Task no_proof = task;
  no_proof.set_proof_uri("http://127.0.0.1:1/v1/proofs/" + consensus::ToHex(proof.manifest.merkle_root));
  Result<ProofCheck> check = Check(no_proof, {0});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->data_fault.rfind("manifest: ", 0), 0u) << check->data_fault;
  EXPECT_EQ(VerdictOn(*check, {0})->verdict, proto::VERDICT_UNAVAILABLE);
  proto::Task no_document = task;
  no_document.set_spec_uri("http://127.0.0.1:1/v1/specs/" + consensus::ToHex(solver::TaskId(document_)));
  EXPECT_EQ(Check(no_document, {0}).status().code(), StatusCode::kUnavailable);
  // A data set this checker cannot load is its own trouble too.
  solver::TaskSpec elsewhere = document_;
  elsewhere.data_location = "not-here";
  EXPECT_EQ(cache_.Get(elsewhere).status().code(), StatusCode::kNotFound);
}

TEST_F(VerificationJobTest, AUriTheFetchPolicyRefusesIsTheTasksUnavailableDataAndIsNeverAsked) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  // The default policy refuses loopback: the document is refused like a malformed spec_uri (the
  // task's fault, not a retry), so every segment is unavailable, and the server sees nothing.
  Result<ProofCheck> check = Check(task, {0}, FetchPolicy());
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->data_fault.rfind("task document: ", 0), 0u) << check->data_fault;
  EXPECT_NE(check->data_fault.find("fetch policy"), std::string::npos) << check->data_fault;
  EXPECT_EQ(VerdictOn(*check, {0})->verdict, proto::VERDICT_UNAVAILABLE);
  EXPECT_EQ(server_.CountRequests("/v1/"), 0);
  EXPECT_EQ(BindTask(FetchPolicy(), task, cache_).status().code(), StatusCode::kFailedPrecondition);
  // A proof URI pointing at the cloud metadata address: the manifest is refused before any
  // connection, as unusable as one that is never served.
  proto::Task metadata = task;
  metadata.set_proof_uri("http://169.254.169.254/v1/proofs/" + consensus::ToHex(proof.manifest.merkle_root));
  check = Check(metadata, {0});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->data_fault.rfind("manifest: ", 0), 0u) << check->data_fault;
  EXPECT_NE(check->data_fault.find("169.254.169.254 (private)"), std::string::npos) << check->data_fault;
  EXPECT_EQ(VerdictOn(*check, {0})->verdict, proto::VERDICT_UNAVAILABLE);
}

}  // namespace
}  // namespace polnode::node
