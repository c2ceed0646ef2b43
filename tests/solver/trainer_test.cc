#include "polnode/consensus/hex.h"
#include "polnode/solver/trainer.h"

#include <gtest/gtest.h>

#include "polnode/solver/philox.h"

namespace polnode::solver {
namespace {

// A learnable toy problem: 4x4 images of noise, label 1 when the left half is brighter than the
// right half.
ImageSplit ToySplit(std::int64_t count, std::uint32_t stream) {
  ImageSplit s;
  s.count = count;
  s.rows = 4;
  s.cols = 4;
  for (std::int64_t i = 0; i < count; ++i) {
    int left = 0, right = 0;
    for (int p = 0; p < 16; ++p) {
      const auto v = static_cast<std::uint8_t>(
          RandomWord(5, RandomPurpose::kSynthetic, stream, static_cast<std::uint64_t>(i * 16 + p)) &
          0xFF);
      s.pixels.push_back(v);
      (p % 4 < 2 ? left : right) += v;
    }
    s.labels.push_back(left > right ? 1 : 0);
  }
  return s;
}

ImageDataset ToyData() {
  ImageDataset d;
  d.train = ToySplit(512, 1);
  d.test = ToySplit(100, 2);
  d.num_classes = 2;
  return d;
}

std::unique_ptr<kernels::Backend> Cpu(int threads) {
  Result<std::unique_ptr<kernels::Backend>> b = kernels::MakeBackend("cpu", threads);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return std::move(b).value();
}

class RecordingSink : public ProgressSink {
 public:
  void OnStep(const StepProgress& p) override { seen.push_back(p); }
  std::vector<StepProgress> seen;
};

TEST(TrainerTest, LearnsAToyProblemAndReportsEveryStep) {
  TrainConfig c;
  c.model = "mlp:16-16-2";
  c.steps = 300;
  c.batch = 32;
  c.optimizer.lr = 0.1f;
  c.loss_window = 50;
  c.eval_batch = 32;  // 100 test samples: three full batches and a remainder of four
  auto backend = Cpu(1);
  RecordingSink sink;
  Result<TrainSummary> s = TrainOnData(c, ToyData(), *backend, &sink);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps, 300);
  EXPECT_EQ(s->steps_per_epoch, 16);
  ASSERT_EQ(sink.seen.size(), 300u);
  EXPECT_EQ(sink.seen[0].step, 1);
  EXPECT_EQ(sink.seen[299].step, 300);
  EXPECT_EQ(sink.seen[299].total, 300);
  EXPECT_EQ(sink.seen[16].epoch, 1);
  EXPECT_EQ(s->step_losses.size(), 300u);
  EXPECT_EQ(s->step_losses[7], sink.seen[7].loss);
  double tail = 0.0;
  for (int t = 250; t < 300; ++t) tail += s->step_losses[static_cast<std::size_t>(t)];
  EXPECT_DOUBLE_EQ(s->train_loss, tail / 50.0);
  EXPECT_LT(s->train_loss, 0.5 * s->step_losses[0]);
  ASSERT_TRUE(s->test.has_value());
  EXPECT_EQ(s->test->total, 100);
  EXPECT_GE(s->test->accuracy(), 0.85);
  EXPECT_EQ(s->state.step, 300);
  EXPECT_EQ(s->state_hash, StateHash(s->state));
  EXPECT_EQ(s->state_hash_hex, consensus::ToHex(s->state_hash));
  EXPECT_GT(s->steps_per_second, 0.0);
}

TEST(TrainerTest, EpochsMeanFullEpochsWithThePartialBatchDropped) {
  TrainConfig c;
  c.model = "mlp:16-2";
  c.epochs = 2;
  c.batch = 100;  // 512 samples: 5 steps per epoch, 12 samples unused
  c.evaluate = false;
  auto backend = Cpu(1);
  Result<TrainSummary> s = TrainOnData(c, ToyData(), *backend, nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps, 10);
  EXPECT_FALSE(s->test.has_value());
}

TEST(TrainerTest, EvaluateCountsArgmaxMatches) {
  TrainConfig c;
  c.model = "mlp:16-2";
  c.steps = 1;
  c.batch = 8;
  c.evaluate = false;
  auto backend = Cpu(1);
  Result<TrainSummary> s = TrainOnData(c, ToyData(), *backend, nullptr);
  ASSERT_TRUE(s.ok());
  const ImageSplit test = ToySplit(100, 2);
  Result<ModelSpec> m = ParseModelSpec(c.model);
  ASSERT_TRUE(m.ok());
  // The same count whatever the evaluation batch: it only changes how passes are cut.
  Result<EvalResult> whole = Evaluate(*m, s->state, test, *backend, 100);
  Result<EvalResult> pieces = Evaluate(*m, s->state, test, *backend, 7);
  ASSERT_TRUE(whole.ok() && pieces.ok());
  EXPECT_EQ(whole->correct, pieces->correct);
  EXPECT_EQ(whole->total, 100);
}

TEST(TrainerTest, RejectsConfigsThatDoNotFitTheData) {
  auto backend = Cpu(1);
  const ImageDataset data = ToyData();
  const auto code = [&](TrainConfig c) {
    return TrainOnData(c, data, *backend, nullptr).status().code();
  };
  TrainConfig c;
  c.steps = 1;
  c.model = "mlp:784-10";  // toy images have 16 pixels
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.model = "mlp:16-1";  // two classes
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.model = "cnn:i1x4x4-c2-2";
  c.batch = 513;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.batch = 0;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.batch = 4;
  c.steps = 0;
  c.epochs = 0;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.epochs = 1;
  c.optimizer.momentum = 1.5f;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.optimizer.momentum = 0.9f;
  c.model = "bogus";
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
}

TEST(TrainerTest, DivergenceIsReportedNotHidden) {
  TrainConfig c;
  c.model = "mlp:16-16-2";
  c.steps = 50;
  c.batch = 16;
  c.optimizer.lr = 1e30f;
  auto backend = Cpu(1);
  Result<TrainSummary> s = TrainOnData(c, ToyData(), *backend, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("diverged"), std::string::npos);
}

TEST(TrainerTest, MissingDataDirectoryIsNotFound) {
  TrainConfig c;
  c.data = "/nonexistent/polnode-data";
  auto backend = Cpu(1);
  EXPECT_EQ(Train(c, *backend, nullptr).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace polnode::solver
