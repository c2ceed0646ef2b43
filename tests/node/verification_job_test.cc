// The check verifiers and whistleblowers run on a committed proof (verification_job.h), against
// real proofs of the tiny task made by solver::Prove and served over loopback HTTP: an honest proof
// is accepted after downloading only the checkpoints the replay needs, a cheat is rejected naming
// its segment, and each kind of fault lands on the right side (a reject verdict for the task's
// parties, an error for the checker's own trouble).
#include "verification_job.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "pol_task_fixture.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"

namespace polnode::node {
namespace {

using testing::KeyOf;
using testing::RawHash;
using testing::RawKey;

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
    Result<proto::TaskSpec> spec = LedgerSpecFor(document_, data_, TaskTerms{1000, 20, 40});
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    *task.mutable_spec() = *spec;
    task.set_spec_uri(server_.AddDocument(document_));
    task.set_status(proto::TASK_VERIFYING);
    task.set_solver(RawKey(solver_));
    task.set_proof_root(RawHash(proof.manifest.merkle_root));
    task.set_proof_uri(server_.AddProof(proof.dir->path().string()));
    task.set_segment_beacon(RawHash(consensus::Sha256("beacon")));
    return task;
  }

  // The verifier's segments, before any proof exists (they depend on the beacon and key only).
  std::vector<std::int64_t> VerifierSegments() {
    proto::Task task;
    *task.mutable_spec() = *LedgerSpecFor(document_, data_, TaskTerms{1000, 20, 40});
    task.set_segment_beacon(RawHash(consensus::Sha256("beacon")));
    return AssignedSegments(task, RawKey(verifier_));
  }

  Result<ProofCheck> Check(const proto::Task& task, std::vector<std::int64_t> segments) {
    CheckRequest request;
    request.task = task;
    request.segments = std::move(segments);
    request.cache_dir = cache_dir_.path().string();
    request.data = &cache_;
    request.backend = backend_.get();
    return CheckCommittedProof(request);
  }

  static std::vector<std::int64_t> Replayed(const ProofCheck& check) {
    std::vector<std::int64_t> out;
    for (const verifier::SegmentEvidence& e : check.verdict.segments) out.push_back(e.segment);
    return out;
  }

  solver::ImageDataset data_;
  solver::TaskSpec document_;
  DataCache cache_;
  std::unique_ptr<kernels::Backend> backend_;
  consensus::SecretKey solver_ = KeyOf(0x51);
  consensus::SecretKey verifier_ = KeyOf(0x52);
  solver::testing::ScratchDir cache_dir_{"check-cache"};
  testing::TaskServer server_;
};

TEST_F(VerificationJobTest, AssignedSegmentsAreTheLedgersDraw) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(proof);
  const std::vector<std::uint64_t> drawn =
      contracts::DrawSegments(task.segment_beacon(), RawKey(verifier_), 8, 2);
  EXPECT_EQ(AssignedSegments(task, RawKey(verifier_)), std::vector<std::int64_t>(drawn.begin(), drawn.end()));
  EXPECT_EQ(AssignedSegments(task, RawKey(verifier_)).size(), 2u);
  task.clear_segment_beacon();
  EXPECT_TRUE(AssignedSegments(task, RawKey(verifier_)).empty());
}

TEST_F(VerificationJobTest, HonestProofIsAcceptedFetchingOnlyTheCheckpointsItReplays) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  const std::vector<std::int64_t> segments = AssignedSegments(task, RawKey(verifier_));
  Result<ProofCheck> check = Check(task, segments);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_TRUE(check->verdict.accept) << check->verdict.reason;
  std::vector<std::int64_t> expected = segments;
  if (std::find(expected.begin(), expected.end(), 7) == expected.end()) expected.push_back(7);
  EXPECT_EQ(Replayed(*check), expected);

  // Each replayed segment's two ends, the final segment's included, and nothing else.
  std::set<std::int64_t> needed = {7, 8};
  for (std::int64_t s : segments) needed.insert({s, s + 1});
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
  EXPECT_TRUE(check->verdict.accept);
  EXPECT_EQ(check->blobs_fetched, 0);
  EXPECT_EQ(server_.CountRequests("/blobs/"), static_cast<int>(needed.size()));
}

// A tolerant-mode task is judged by distances against thresholds the checker profiles from the
// task alone; every backend here trains bit for bit alike, so they are 0, the honest proof passes
// and a cheat still fails. Exact-mode checks compare hashes and carry no thresholds.
TEST_F(VerificationJobTest, TolerantModeIsJudgedByThresholdsProfiledFromTheTask) {
  document_.mode = solver::ReproMode::kTolerant;
  const testing::TinyProof honest = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(honest);
  Result<ProofCheck> check = Check(task, {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_TRUE(check->verdict.accept) << check->verdict.reason;
  ASSERT_TRUE(check->thresholds.has_value());
  EXPECT_EQ(check->thresholds->l1, 0.0);
  EXPECT_EQ(check->thresholds->linf, 0.0);
  EXPECT_EQ(check->thresholds->cosine, 0.0);
  for (const verifier::SegmentEvidence& e : check->verdict.segments) EXPECT_TRUE(e.have_distances) << e.segment;

  const testing::TinyProof cheat = testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{13, 3, 0, 22});
  task = TaskFor(cheat);
  check = Check(task, {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->verdict.accept);

  document_.mode = solver::ReproMode::kExact;
  check = Check(TaskFor(testing::ProveTiny(document_, data_, solver_, std::nullopt)), {2});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->thresholds.has_value());
}

TEST_F(VerificationJobTest, CheatIsRejectedNamingItsSegmentAndOtherSegmentsStillPass) {
  const std::vector<std::int64_t> segments = VerifierSegments();
  ASSERT_EQ(segments.size(), 2u);
  // Forge inside a drawn segment that is not the final one (with two drawn, one is not).
  const std::int64_t forged = segments[0] != 7 ? segments[0] : segments[1];
  const std::int64_t other = forged == segments[0] ? segments[1] : segments[0];
  const testing::TinyProof proof =
      testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{forged * 5 + 2, 3, 0, 22});
  const proto::Task task = TaskFor(proof);
  Result<ProofCheck> check = Check(task, segments);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->verdict.accept);
  EXPECT_NE(check->verdict.reason.find("segment " + std::to_string(forged) + ": "), std::string::npos)
      << check->verdict.reason;
  for (const verifier::SegmentEvidence& e : check->verdict.segments) {
    EXPECT_EQ(e.ok, e.segment != forged) << "segment " << e.segment << ": " << e.reason;
  }
  // Read per verifier, as a whistleblower does: a verifier that drew only the honest segment
  // (and the final one) was right to accept.
  Result<SegmentsVerdict> on_forged = VerdictOn(*check, {forged});
  ASSERT_TRUE(on_forged.ok());
  EXPECT_FALSE(on_forged->accept);
  EXPECT_EQ(on_forged->reason.rfind("segment " + std::to_string(forged) + ": ", 0), 0u) << on_forged->reason;
  EXPECT_TRUE(on_forged->provable) << "a dispute game can pinpoint a segment that replays elsewhere";
  Result<SegmentsVerdict> on_other = VerdictOn(*check, {other});
  ASSERT_TRUE(on_other.ok());
  EXPECT_TRUE(on_other->accept) << on_other->reason;
  // A segment the check did not replay cannot be judged from it.
  std::int64_t unreplayed = 0;
  while (unreplayed == forged || unreplayed == other) ++unreplayed;
  EXPECT_EQ(VerdictOn(*check, {unreplayed}).status().code(), StatusCode::kInternal);
}

TEST_F(VerificationJobTest, ManifestSignedByAnotherKeyIsRejectedWithoutDownloadingCheckpoints) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, KeyOf(0x66), std::nullopt);
  const proto::Task task = TaskFor(proof);  // the ledger names solver_ as the solver
  Result<ProofCheck> check = Check(task, {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->verdict.accept);
  EXPECT_NE(check->verdict.reason.find("signed by solver key"), std::string::npos) << check->verdict.reason;
  EXPECT_EQ(server_.CountRequests("/blobs/"), 0);
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {0});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->reason, check->verdict.reason);
  EXPECT_FALSE(verdict->provable) << "no game can show a wrong signer";
}

TEST_F(VerificationJobTest, DocumentThatDoesNotBindIsRejectedBeforeTheProofIsFetched) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(proof);
  task.mutable_spec()->set_batch_root(std::string(32, '\0'));
  Result<ProofCheck> check = Check(task, {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->verdict.accept);
  EXPECT_EQ(check->verdict.reason.rfind("task document: ", 0), 0u) << check->verdict.reason;
  EXPECT_NE(check->verdict.reason.find("batch_root"), std::string::npos) << check->verdict.reason;
  EXPECT_EQ(server_.CountRequests("/manifest"), 0);
  Result<BoundTask> bound = BindTask(task, cache_);
  EXPECT_EQ(bound.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(VerificationJobTest, MissingCheckpointFailsItsSegmentAfterRetries) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  const proto::Task task = TaskFor(proof);
  // The solver stops serving the final checkpoint.
  const std::string blob = consensus::ToHex(proof.manifest.checkpoint_blobs[8]);
  ASSERT_TRUE(std::filesystem::remove(proof.dir->File("blobs/" + blob)));
  Result<ProofCheck> check = Check(task, {0, 1});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->verdict.accept);
  EXPECT_EQ(check->verdict.reason.rfind("segment 7: ", 0), 0u) << check->verdict.reason;
  EXPECT_EQ(server_.CountRequests("/blobs/" + blob), 3);
  // The replay itself reached the claimed state: no dispute game could show this segment wrong.
  Result<SegmentsVerdict> verdict = VerdictOn(*check, {0, 1});
  ASSERT_TRUE(verdict.ok());
  EXPECT_FALSE(verdict->accept);
  EXPECT_FALSE(verdict->provable);
}

TEST_F(VerificationJobTest, UnreachableServersAreTheCheckersErrorNotAVerdict) {
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  proto::Task task = TaskFor(proof);
  proto::Task no_proof = task;
  no_proof.set_proof_uri("http://127.0.0.1:1/v1/proofs/" + consensus::ToHex(proof.manifest.merkle_root));
  EXPECT_EQ(Check(no_proof, {0}).status().code(), StatusCode::kUnavailable);
  proto::Task no_document = task;
  no_document.set_spec_uri("http://127.0.0.1:1/v1/specs/" + consensus::ToHex(solver::TaskId(document_)));
  EXPECT_EQ(Check(no_document, {0}).status().code(), StatusCode::kUnavailable);
  // A data set this checker cannot load is its own trouble too.
  solver::TaskSpec elsewhere = document_;
  elsewhere.data_location = "not-here";
  EXPECT_EQ(cache_.Get(elsewhere).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace polnode::node
