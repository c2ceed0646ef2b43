// The check verifiers and whistleblowers run on a committed proof (verification_job.h), against
// real proofs of the tiny task made by solver::Prove and served over loopback HTTP: an honest proof
// is accepted after downloading only the checkpoints the replay needs, a cheat is rejected naming
// its segment, data the solver does not serve makes the verdict unavailable (the solver's burden),
// and only the checker's own trouble is an error.
#include "polnode/roles/verification_job.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>

#include "pol_task_fixture.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using testing::KeyFromByte;
using testing::LoopbackFetchPolicy;
using testing::RawHash;
using testing::RawPubKey;

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
    task.set_id(RawHash(consensus::Sha256("task")));
    Result<proto::TaskSpec> spec = solver::LedgerSpecFor(document_, data_, solver::TaskTerms{1000, 20, 40});
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    *task.mutable_spec() = *spec;
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
// and a cheat still fails. Tolerant verdicts commit to no end state (there is no bitwise one to
// vouch for), not even a reject. Exact-mode checks compare hashes and carry no thresholds.
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
  for (const verifier::SegmentEvidence& e : check->evidence) EXPECT_TRUE(e.have_distances) << e.segment;

  const testing::TinyProof cheat = testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{13, 3, 0, 22});
  task = TaskFor(cheat);
  check = Check(task, {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  verdict = VerdictOn(*check, {2});
  EXPECT_EQ(verdict->verdict, proto::VERDICT_REJECT);
  EXPECT_EQ(verdict->failed_segments, std::vector<std::uint64_t>{2});
  EXPECT_TRUE(verdict->failed_ends.empty());
  const proto::VerdictTx reject = VerdictTxFor(task.id(), 0, RawPubKey(verifier_), *verdict, consensus::Sha256("r"));
  EXPECT_EQ(reject.failed_segments_size(), 1);
  EXPECT_EQ(reject.segment_digests_size(), 0);

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
