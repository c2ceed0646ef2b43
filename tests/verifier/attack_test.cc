// The published proof-of-learning spoofing attacks and simpler forgeries (issue 4's list), each
// built as a complete, internally consistent, signed proof. Each must be rejected whenever a
// forged segment is drawn, and forgeries that the manifest or initial-state checks catch must be
// rejected for every beacon.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "pol_fixture.h"

namespace polnode::verifier {
namespace {

using solver::TrainState;
using testing::Chain;
using testing::WrittenProof;

class AttackTest : public ::testing::Test {
 protected:
  AttackTest() : data_(solver::testing::TinyDataset()), task_(solver::testing::TinyTask(data_)),
                 honest_(testing::HonestChain(task_, data_)) {}

  std::int64_t segment_count() const { return task_.checkpoint_count() - 1; }

  // Every forged segment fails its own replay, and over many beacons a verdict rejects exactly
  // when it draws a forged segment (honest segments of a forged proof still replay fine).
  void ExpectCaughtWhenDrawn(const WrittenProof& proof, const std::set<std::int64_t>& forged) {
    auto backend = kernels::MakeBackend("cpu", 1);
    ASSERT_TRUE(backend.ok());
    Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
    ASSERT_TRUE(stepper.ok());
    ASSERT_TRUE(CheckManifestAgainstTask(proof.manifest, task_).ok());
    for (std::int64_t s = 0; s < segment_count(); ++s) {
      Result<SegmentEvidence> e = ReplaySegment(proof.manifest, *proof.store, *stepper, **backend, s, {});
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->ok, !forged.contains(s)) << "segment " << s << ": " << e->reason;
    }
    int drew_forged = 0;
    for (int i = 0; i < 40; ++i) {
      VerifyOptions options;
      options.beacon = testing::Beacon(i);
      options.segments = 2;
      Result<Verdict> v = VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      bool hit = false;
      for (const SegmentEvidence& e : v->segments) hit = hit || forged.contains(e.segment);
      drew_forged += hit ? 1 : 0;
      EXPECT_EQ(v->accept, !hit) << "beacon " << i << ": " << v->reason;
    }
    if (!forged.empty()) {
      EXPECT_GT(drew_forged, 0) << "no beacon drew a forged segment: the test would prove nothing";
    }
  }

  // Rejected for every beacon, with `reason_part` in the reason.
  void ExpectAlwaysRejected(const WrittenProof& proof, const std::string& reason_part) {
    auto backend = kernels::MakeBackend("cpu", 1);
    ASSERT_TRUE(backend.ok());
    for (int i = 0; i < 10; ++i) {
      VerifyOptions options;
      options.beacon = testing::Beacon(i);
      options.segments = 2;
      Result<Verdict> v = VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_FALSE(v->accept);
      EXPECT_NE(v->reason.find(reason_part), std::string::npos) << v->reason;
    }
  }

  std::set<std::int64_t> AllSegments() const {
    std::set<std::int64_t> all;
    for (std::int64_t s = 0; s < segment_count(); ++s) all.insert(s);
    return all;
  }

  // a + t * (b - a) elementwise, with b's layout and the given step counter.
  static TrainState Lerp(const TrainState& a, const TrainState& b, double t, std::int64_t step) {
    TrainState out = b;
    out.step = step;
    for (std::size_t i = 0; i < out.tensors.size(); ++i) {
      float* o = out.tensors[i].tensor.data();
      const float* x = a.tensors[i].tensor.data();
      const float* y = b.tensors[i].tensor.data();
      for (std::int64_t e = 0; e < out.tensors[i].tensor.numel(); ++e) {
        o[e] = static_cast<float>(x[e] + t * (static_cast<double>(y[e]) - x[e]));
      }
    }
    return out;
  }

  solver::ImageDataset data_;
  solver::TaskSpec task_;
  Chain honest_;
};

TEST_F(AttackTest, HonestProofIsAcceptedForEveryBeacon) {
  WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  ExpectCaughtWhenDrawn(proof, {});
}

// 1. Zhang et al.: checkpoints interpolated from the (real) initial weights to a stolen model.
TEST_F(AttackTest, InterpolatedCheckpointsTowardATargetModel) {
  const TrainState& w0 = honest_.checkpoints.front();
  const TrainState& stolen = honest_.checkpoints.back();
  std::vector<TrainState> forged;
  const std::int64_t n = segment_count();
  for (std::int64_t i = 0; i <= n; ++i) {
    forged.push_back(Lerp(w0, stolen, static_cast<double>(i) / static_cast<double>(n), i * task_.checkpoint_interval));
  }
  forged.front() = w0;  // keeps the initial-state check satisfied, as the attacker would
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, forged, honest_.loss_bits), AllSegments());
}

// 2. Fang et al.: "infinitesimal update", tiny steps away from a real initialisation.
TEST_F(AttackTest, InfinitesimalUpdates) {
  const TrainState& w0 = honest_.checkpoints.front();
  std::vector<TrainState> forged;
  for (std::int64_t i = 0; i <= segment_count(); ++i) {
    forged.push_back(Lerp(w0, honest_.checkpoints.back(), 1e-6 * static_cast<double>(i), i * task_.checkpoint_interval));
  }
  forged.front() = w0;
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, forged, honest_.loss_bits), AllSegments());
}

// 3. Fang et al.: "blindfold top-Q", honest early segments with large updates, then small forged
// updates that top-Q selection would never pick. Uniform selection does.
TEST_F(AttackTest, BlindfoldTopQ) {
  std::vector<TrainState> forged(honest_.checkpoints.begin(), honest_.checkpoints.begin() + 3);
  for (std::int64_t i = 3; i <= segment_count(); ++i) {
    forged.push_back(Lerp(honest_.checkpoints[2], honest_.checkpoints.back(), 1e-4 * static_cast<double>(i - 2),
                          i * task_.checkpoint_interval));
  }
  std::set<std::int64_t> bad;
  for (std::int64_t s = 2; s < segment_count(); ++s) bad.insert(s);
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, forged, honest_.loss_bits), bad);
}

// 4. A segment copied (checkpoint 5 repeats checkpoint 4, with or without fixing the step
// counter) or skipped (one checkpoint fewer).
TEST_F(AttackTest, CopiedSegment) {
  std::vector<TrainState> copied = honest_.checkpoints;
  copied[5] = copied[4];
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, copied, honest_.loss_bits), {4, 5});
  copied[5].step = 5 * task_.checkpoint_interval;
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, copied, honest_.loss_bits), {4, 5});
}

TEST_F(AttackTest, SkippedSegment) {
  std::vector<TrainState> skipped = honest_.checkpoints;
  skipped.erase(skipped.begin() + 5);
  ExpectAlwaysRejected(testing::WriteProof(task_, skipped, honest_.loss_bits), "checkpoints");
}

// 5. Data order altered: the same samples, visited in another order (the split reversed).
TEST_F(AttackTest, DataOrderAltered) {
  solver::ImageDataset reordered = data_;
  const std::int64_t n = reordered.train.count;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t j = n - 1 - i;
    std::copy_n(data_.train.pixels.begin() + j * 16, 16, reordered.train.pixels.begin() + i * 16);
    reordered.train.labels[static_cast<std::size_t>(i)] = data_.train.labels[static_cast<std::size_t>(j)];
  }
  const Chain other = testing::RunChain(task_, reordered, honest_.checkpoints.front());
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, other.checkpoints, other.loss_bits), AllSegments());
}

// 6. A hyperparameter altered: trained with half the learning rate, claimed under the real task.
TEST_F(AttackTest, LearningRateAltered) {
  solver::TaskSpec cheaper = task_;
  cheaper.optimizer.lr = task_.optimizer.lr / 2;
  const Chain other = testing::RunChain(cheaper, data_, honest_.checkpoints.front());
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, other.checkpoints, other.loss_bits), AllSegments());
}

// 7. One weight of one checkpoint moved by one ulp.
TEST_F(AttackTest, OneWeightOneUlp) {
  std::vector<TrainState> forged = honest_.checkpoints;
  float* w = forged[3].tensors[0].tensor.data();
  w[0] = std::nextafter(w[0], INFINITY);
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, forged, honest_.loss_bits), {2, 3});
}

// A checkpoint whose weights make the replay diverge is a rejection, not a verifier error.
TEST_F(AttackTest, NonFiniteWeightsAreRejectedNotErrors) {
  std::vector<TrainState> forged = honest_.checkpoints;
  for (std::int64_t e = 0; e < forged[3].tensors[0].tensor.numel(); ++e) forged[3].tensors[0].tensor.data()[e] = NAN;
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, forged, honest_.loss_bits), {2, 3});
}

// 8. A blob whose bytes do not match its name (checkpoint 4's file holds checkpoint 3's bytes).
TEST_F(AttackTest, BlobBytesDoNotMatchName) {
  WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  const std::vector<std::uint8_t> other = solver::EncodeState(honest_.checkpoints[3]);
  std::ofstream(proof.store->PathOf(proof.manifest.checkpoint_blobs[4]), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(other.data()), static_cast<std::streamsize>(other.size()));
  ExpectCaughtWhenDrawn(proof, {3, 4});
}

// 8b. Blobs served intact (their bytes hash to their blob names) that do not hold the state the
// manifest's state hash names: the state hash is what the Merkle root and the ledger commit to,
// so a mismatch is a rejection like a wrong blob.
TEST_F(AttackTest, BlobIntactButStateHashWrong) {
  // (a) The state hash of checkpoint 4 altered (re-rooted and re-signed), its blob honest.
  WrittenProof wrong_hash = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  wrong_hash.manifest.checkpoint_hashes[4][0] ^= 1;
  wrong_hash.manifest.merkle_root = consensus::MerkleRoot(wrong_hash.manifest.checkpoint_hashes);
  ASSERT_TRUE(solver::SignManifest(wrong_hash.manifest, testing::ForgerKey()).ok());
  ExpectCaughtWhenDrawn(wrong_hash, {3, 4});

  // (b) The state hash of checkpoint 4 honest, but its blob name points at another valid state
  // (one weight moved by one ulp), stored intact under its own content hash. Replaying segment 3
  // reproduces the claimed state hash exactly, so only the blob check can catch it.
  WrittenProof swapped = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  TrainState other = honest_.checkpoints[4];
  other.tensors[0].tensor.data()[0] = std::nextafter(other.tensors[0].tensor.data()[0], INFINITY);
  Result<consensus::Hash256> other_blob = swapped.store->Put(solver::EncodeState(other));
  ASSERT_TRUE(other_blob.ok());
  swapped.manifest.checkpoint_blobs[4] = *other_blob;
  ASSERT_TRUE(solver::SignManifest(swapped.manifest, testing::ForgerKey()).ok());
  ASSERT_TRUE(CheckManifestAgainstTask(swapped.manifest, task_).ok());
  ExpectCaughtWhenDrawn(swapped, {3, 4});

  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
  ASSERT_TRUE(stepper.ok());
  for (const WrittenProof* proof : {&wrong_hash, &swapped}) {
    Result<SegmentEvidence> e = ReplaySegment(proof->manifest, *proof->store, *stepper, **backend, 4, {});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_FALSE(e->ok);
    EXPECT_FALSE(e->replayed);
    EXPECT_NE(e->reason.find("state hash"), std::string::npos) << e->reason;
  }
  // Segment 3 of the swapped proof would replay to exactly the claimed state hash, and still fails:
  // its end checkpoint's blob does not hold the leaf the root commits to, so the proof's data is
  // not available (the verifier says so instead of replaying against an unusable end).
  Result<SegmentEvidence> e3 = ReplaySegment(swapped.manifest, *swapped.store, *stepper, **backend, 3, {});
  ASSERT_TRUE(e3.ok()) << e3.status().ToString();
  EXPECT_FALSE(e3->available);
  EXPECT_FALSE(e3->replayed);
  EXPECT_FALSE(e3->ok);
  EXPECT_NE(e3->reason.find("state hash"), std::string::npos) << e3->reason;
}

// 8c. A manifest with one blob hash too few (re-signed) is rejected by the manifest checks.
TEST_F(AttackTest, MissingBlobHashIsRejected) {
  WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  proof.manifest.checkpoint_blobs.pop_back();
  ASSERT_TRUE(solver::SignManifest(proof.manifest, testing::ForgerKey()).ok());
  ExpectAlwaysRejected(proof, "blob hashes");
}

// 9. A manifest whose Merkle root does not match its hashes (re-signed, so only the root is off).
TEST_F(AttackTest, MerkleRootDoesNotMatchHashes) {
  WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  std::swap(proof.manifest.checkpoint_hashes[2], proof.manifest.checkpoint_hashes[3]);
  ASSERT_TRUE(solver::SignManifest(proof.manifest, testing::ForgerKey()).ok());
  ExpectAlwaysRejected(proof, "Merkle root");
  // A tampered signature is caught as well.
  WrittenProof signed_proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  signed_proof.manifest.signature[10] ^= 1;
  ExpectAlwaysRejected(signed_proof, "signature");
}

// 10. Initial weights not from the task seed: an honest run from another seed's initialisation
// replays consistently segment by segment, so only the initial-state check can catch it.
TEST_F(AttackTest, InitialWeightsNotFromTaskSeed) {
  solver::TaskSpec other_seed = task_;
  other_seed.seed = task_.seed + 1;
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(other_seed, data_);
  ASSERT_TRUE(stepper.ok());
  const Chain other = testing::RunChain(task_, data_, stepper->Initial());
  ExpectAlwaysRejected(testing::WriteProof(task_, other.checkpoints, other.loss_bits), "initial state");
}

// 11. The task's Q is a floor the caller cannot lower: with options.segments = 1, a verifier of a
// task that demands every segment replays all of them and catches a single forged segment for
// every beacon; with the tiny task (Q = 2) it still replays two.
TEST_F(AttackTest, TaskSegmentsPerCheckIsTheMinimumReplayed) {
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  std::vector<TrainState> forged = honest_.checkpoints;
  float* w = forged[3].tensors[0].tensor.data();
  w[0] = std::nextafter(w[0], INFINITY);
  solver::TaskSpec all = task_;
  all.segments_per_check = segment_count();
  const WrittenProof proof = testing::WriteProof(all, forged, honest_.loss_bits);
  const WrittenProof tiny = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  for (int i = 0; i < 10; ++i) {
    VerifyOptions options;
    options.beacon = testing::Beacon(i);
    options.segments = 1;
    Result<Verdict> v = VerifyProof(all, data_, proof.manifest, *proof.store, **backend, options);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->drawn, segment_count());
    EXPECT_EQ(v->segments.size(), static_cast<std::size_t>(segment_count()));
    EXPECT_FALSE(v->accept);
    EXPECT_NE(v->reason.find("segment"), std::string::npos) << v->reason;
    Result<Verdict> t = VerifyProof(task_, data_, tiny.manifest, *tiny.store, **backend, options);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE(t->accept) << t->reason;
    EXPECT_EQ(t->drawn, task_.segments_per_check);
    // The drawn ones, plus the final segment when the beacon did not draw it.
    EXPECT_GE(t->segments.size(), static_cast<std::size_t>(task_.segments_per_check));
    EXPECT_LE(t->segments.size(), static_cast<std::size_t>(task_.segments_per_check + 1));
  }
  // Asking for more than exist replays each segment once.
  VerifyOptions many;
  many.segments = 1000;
  Result<Verdict> v = VerifyProof(task_, data_, tiny.manifest, *tiny.store, **backend, many);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->segments.size(), static_cast<std::size_t>(segment_count()));
  EXPECT_TRUE(v->accept) << v->reason;
}

// 12. An honest proof with its signature stripped binds no solver: rejected for every beacon.
TEST_F(AttackTest, UnsignedManifestIsRejected) {
  WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  proof.manifest.is_signed = false;
  proof.manifest.solver_pubkey = {};
  proof.manifest.signature = {};
  ExpectAlwaysRejected(proof, "not signed");
  Result<Verdict> v = [&] {
    auto backend = kernels::MakeBackend("cpu", 1);
    return VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, VerifyOptions{});
  }();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->manifest_ok);
  EXPECT_FALSE(v->is_signed);
}

// 13. A valid signature by someone other than the expected solver is rejected; by the expected
// solver it is accepted.
TEST_F(AttackTest, SolverKeyMustMatchWhenGiven) {
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  const WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  std::array<std::uint8_t, 32> other_bytes{};
  other_bytes.fill(0x44);
  const std::array<std::uint8_t, 32> other = consensus::SecretKey::FromBytes(other_bytes)->PublicKey().bytes();
  VerifyOptions options;
  options.beacon = testing::Beacon(1);
  options.solver_pubkey = other;
  Result<Verdict> wrong = VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  EXPECT_FALSE(wrong->accept);
  EXPECT_NE(wrong->reason.find("expected"), std::string::npos) << wrong->reason;
  options.solver_pubkey = testing::ForgerKey().PublicKey().bytes();
  Result<Verdict> right = VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_TRUE(right->accept) << right->reason;
}

// 14. A checkpoint that decodes, is correctly hashed, in the Merkle root and signed, but has a
// renamed tensor or a wrong shape: the segments touching it are rejections, not verifier errors
// (ExpectCaughtWhenDrawn asserts ReplaySegment and VerifyProof return ok).
TEST_F(AttackTest, CheckpointWithAnotherTensorLayoutIsRejectedNotAnError) {
  std::vector<TrainState> renamed = honest_.checkpoints;
  // Same length: a longer name would make the blob larger than any checkpoint of the task, which
  // the size check refuses before the layout is looked at.
  renamed[3].tensors[0].name.back() = 'X';
  const WrittenProof r = testing::WriteProof(task_, renamed, honest_.loss_bits);
  ExpectCaughtWhenDrawn(r, {2, 3});

  std::vector<TrainState> reshaped = honest_.checkpoints;
  kernels::Shape shape = reshaped[3].tensors[1].tensor.shape();
  shape.push_back(1);
  reshaped[3].tensors[1].tensor = kernels::Tensor(shape);
  ExpectCaughtWhenDrawn(testing::WriteProof(task_, reshaped, honest_.loss_bits), {2, 3});

  // The reason names the layout, for the segment that starts from the forged checkpoint.
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
  ASSERT_TRUE(stepper.ok());
  Result<SegmentEvidence> e = ReplaySegment(r.manifest, *r.store, *stepper, **backend, 3, {});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->ok);
  EXPECT_FALSE(e->replayed);
  EXPECT_NE(e->reason.find("the task's state has"), std::string::npos) << e->reason;
}

// 15. The final checkpoint swapped for another model (a later-trained one, re-hashed, re-rooted and
// re-signed): only the final segment is forged, and it is replayed for every beacon, drawn or not.
TEST_F(AttackTest, SwappedFinalCheckpointIsAlwaysCaught) {
  solver::TaskSpec longer = task_;
  longer.steps = task_.steps + task_.checkpoint_interval;
  const Chain more = testing::RunChain(longer, data_, honest_.checkpoints.front());
  std::vector<TrainState> forged = honest_.checkpoints;
  forged.back() = more.checkpoints.back();
  forged.back().step = honest_.checkpoints.back().step;
  const WrittenProof proof = testing::WriteProof(task_, forged, honest_.loss_bits);
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  const std::int64_t final_segment = segment_count() - 1;
  int undrawn = 0;
  for (int i = 0; i < 20; ++i) {
    VerifyOptions options;
    options.beacon = testing::Beacon(i);
    Result<Verdict> v = VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_FALSE(v->accept);
    EXPECT_FALSE(v->final_segment_ok);
    ASSERT_FALSE(v->segments.empty());
    EXPECT_NE(v->reason.find("segment " + std::to_string(final_segment)), std::string::npos) << v->reason;
    const bool drawn = std::any_of(v->segments.begin(), v->segments.begin() + v->drawn,
                                   [&](const SegmentEvidence& e) { return e.segment == final_segment; });
    if (!drawn) {
      ++undrawn;
      EXPECT_EQ(v->segments.size(), static_cast<std::size_t>(v->drawn + 1));
      EXPECT_EQ(v->segments.back().segment, final_segment);
    }
  }
  EXPECT_GT(undrawn, 0) << "every beacon drew the final segment: the test would prove nothing";
  // The honest proof passes it.
  const WrittenProof honest = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  VerifyOptions options;
  Result<Verdict> ok = VerifyProof(task_, data_, honest.manifest, *honest.store, **backend, options);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->accept) << ok->reason;
  EXPECT_TRUE(ok->final_segment_ok);
}

}  // namespace
}  // namespace polnode::verifier
