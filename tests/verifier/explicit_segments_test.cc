// VerifyOptions::explicit_segments: a verifier replays exactly the segments the ledger assigned it
// (in the given order), plus the final one, whatever the beacon would have drawn; bad lists are
// the caller's error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "pol_fixture.h"
#include "polnode/verifier/segments.h"

namespace polnode::verifier {
namespace {

class ExplicitSegmentsTest : public ::testing::Test {
 protected:
  ExplicitSegmentsTest()
      : data_(solver::testing::TinyDataset()), task_(solver::testing::TinyTask(data_)),
        honest_(testing::HonestChain(task_, data_)) {}

  // The honest proof with checkpoint 4's state nudged: segments 3 (into it) and 4 (out of it)
  // fail, every other segment replays fine.
  testing::WrittenProof ForgedAtCheckpoint4() const {
    std::vector<solver::TrainState> forged = honest_.checkpoints;
    float* w = forged[4].tensors[0].tensor.data();
    w[0] = std::nextafter(w[0], INFINITY) * 1.5f;
    return testing::WriteProof(task_, forged, honest_.loss_bits);
  }

  Result<Verdict> Verify(const testing::WrittenProof& proof, std::vector<std::int64_t> segments) const {
    auto backend = kernels::MakeBackend("reference", 1);
    EXPECT_TRUE(backend.ok());
    VerifyOptions options;
    options.explicit_segments = std::move(segments);
    return VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
  }

  static std::vector<std::int64_t> Replayed(const Verdict& v) {
    std::vector<std::int64_t> out;
    for (const SegmentEvidence& e : v.segments) out.push_back(e.segment);
    return out;
  }

  solver::ImageDataset data_;
  solver::TaskSpec task_;
  testing::Chain honest_;
};

TEST_F(ExplicitSegmentsTest, ReplaysExactlyTheGivenSegmentsInOrderPlusTheFinalOne) {
  const testing::WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  Result<Verdict> v = Verify(proof, {5, 1});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->accept) << v->reason;
  EXPECT_EQ(v->drawn, 2);
  EXPECT_EQ(Replayed(*v), (std::vector<std::int64_t>{5, 1, 7}));
  // The final segment is not replayed twice when it is in the list.
  v = Verify(proof, {7, 0, 2});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Replayed(*v), (std::vector<std::int64_t>{7, 0, 2}));
  EXPECT_TRUE(v->final_segment_ok);
}

TEST_F(ExplicitSegmentsTest, TheVerdictDependsOnlyOnTheGivenSegments) {
  const testing::WrittenProof proof = ForgedAtCheckpoint4();
  // A list that misses the forged segments accepts, for any beacon.
  Result<Verdict> v = Verify(proof, {0, 5});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->accept) << v->reason;
  // One that holds them rejects, naming the first forged one in list order.
  v = Verify(proof, {4, 1, 3});
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->accept);
  EXPECT_EQ(v->reason.rfind("segment 4: ", 0), 0u) << v->reason;
  EXPECT_EQ(Replayed(*v), (std::vector<std::int64_t>{4, 1, 3, 7}));
  EXPECT_FALSE(v->segments[0].ok);
  EXPECT_TRUE(v->segments[1].ok);
  EXPECT_FALSE(v->segments[2].ok);
  EXPECT_TRUE(v->segments[3].ok);
}

TEST_F(ExplicitSegmentsTest, AnEmptyListKeepsTheBeaconDraw) {
  const testing::WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  auto backend = kernels::MakeBackend("reference", 1);
  ASSERT_TRUE(backend.ok());
  VerifyOptions options;
  options.beacon = testing::Beacon(3);
  Result<Verdict> v = VerifyProof(task_, data_, proof.manifest, *proof.store, **backend, options);
  ASSERT_TRUE(v.ok());
  Result<std::vector<std::int64_t>> drawn = SelectSegments(options.beacon, 8, task_.segments_per_check);
  ASSERT_TRUE(drawn.ok());
  std::vector<std::int64_t> expected = *drawn;
  if (std::find(expected.begin(), expected.end(), 7) == expected.end()) expected.push_back(7);
  EXPECT_EQ(Replayed(*v), expected);
  EXPECT_EQ(v->drawn, task_.segments_per_check);
}

TEST_F(ExplicitSegmentsTest, OutOfRangeOrRepeatedSegmentsAreTheCallersError) {
  const testing::WrittenProof proof = testing::WriteProof(task_, honest_.checkpoints, honest_.loss_bits);
  for (const std::vector<std::int64_t>& bad :
       {std::vector<std::int64_t>{8}, std::vector<std::int64_t>{-1, 2}, std::vector<std::int64_t>{2, 3, 2}}) {
    Result<Verdict> v = Verify(proof, bad);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << v.status().ToString();
  }
}

}  // namespace
}  // namespace polnode::verifier
