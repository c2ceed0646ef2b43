// Task specs: the TOML form, the protobuf form, validation, and the task id.
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "polnode/consensus/hex.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver {
namespace {

constexpr std::string_view kToml = R"(# a task
model = "mlp:784-64-10"   # the model
data = "fashion-mnist"
dataset_hash = "38d6d7e03e97342ea8c436c657cc3511156956bebf1551d93a26b82e876e6dc6"
optimizer = "sgd"
lr = 0.05
momentum = 0.9
batch = 64
steps = 300
checkpoint_interval = 50
seed = 7
mode = "exact"
segments = 2
)";

TEST(ProofTaskSpecTest, ParsesTheTomlForm) {
  Result<TaskSpec> t = ParseTaskToml(kToml);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->model, "mlp:784-64-10");
  EXPECT_EQ(t->optimizer.lr, 0.05f);
  EXPECT_EQ(t->optimizer.momentum, 0.9f);
  EXPECT_EQ(t->batch, 64);
  EXPECT_EQ(t->checkpoint_interval, 50);
  EXPECT_EQ(t->checkpoint_count(), 7);
  EXPECT_EQ(t->seed, 7u);
  EXPECT_EQ(t->segments_per_check, 2);
  EXPECT_EQ(t->mode, ReproMode::kExact);
  EXPECT_EQ(consensus::ToHex(t->dataset_hash), "38d6d7e03e97342ea8c436c657cc3511156956bebf1551d93a26b82e876e6dc6");
}

// A task that names its optimizer but no rate trains at that optimizer's default, the one
// `polnode train --optimizer` uses (DefaultLearningRate), not at the SGD default.
TEST(ProofTaskSpecTest, ATaskWithoutARateGetsItsOptimizersDefault) {
  std::string adam(kToml);
  adam.replace(adam.find("optimizer = \"sgd\""), 17, "optimizer = \"adam\"");
  adam.replace(adam.find("lr = 0.05\n"), 10, "");
  Result<TaskSpec> t = ParseTaskToml(adam);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->optimizer.kind, OptimizerKind::kAdam);
  EXPECT_EQ(t->optimizer.lr, 0.001f);
  EXPECT_EQ(t->optimizer.lr, DefaultLearningRate(OptimizerKind::kAdam));
  std::string sgd(kToml);
  sgd.replace(sgd.find("lr = 0.05\n"), 10, "");
  t = ParseTaskToml(sgd);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->optimizer.lr, 0.05f);
  EXPECT_EQ(OptimizerConfig().lr, DefaultLearningRate(OptimizerKind::kSgd));
}

TEST(ProofTaskSpecTest, RejectsMalformedToml) {
  const std::string base(kToml);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return ParseTaskToml(s).status();
  };
  EXPECT_EQ(with("lr = 0.05", "lr = \"fast\"").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with("lr = 0.05", "lr = 0.05x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with("lr = 0.05", "colour = 3").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with("lr = 0.05", "batch = 3").code(), StatusCode::kInvalidArgument);          // repeated
  EXPECT_EQ(with("steps = 300", "steps = 301").code(), StatusCode::kInvalidArgument);      // not a multiple of k
  EXPECT_EQ(with("seed = 7", "").code(), StatusCode::kInvalidArgument);                    // required
  EXPECT_EQ(with("mode = \"exact\"", "mode = \"sloppy\"").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with("model = \"mlp:784-64-10\"", "model = \"mlp:784-64-10").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with("segments = 2", "segments = 7").code(), StatusCode::kInvalidArgument);    // only 6 segments
  EXPECT_EQ(with("lr = 0.05", "lr 0.05").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with("lr = 0.05", "lr = -1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTaskToml(std::string(kMaxTaskBytes + 1, '#')).status().code(), StatusCode::kResourceExhausted);
}

TEST(ProofTaskSpecTest, ProtobufFormRoundTripsAndMalformedBytesAreErrors) {
  Result<TaskSpec> t = ParseTaskToml(kToml);
  ASSERT_TRUE(t.ok());
  const std::string wire = EncodeTaskProto(*t);
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size());
  Result<TaskSpec> back = DecodeTaskProto(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(TaskId(*back), TaskId(*t));
  EXPECT_EQ(EncodeTaskProto(*back), wire);
  EXPECT_FALSE(DecodeTaskProto(bytes.first(bytes.size() - 3)).ok());
  const std::uint8_t garbage[] = {0xff, 0xff, 0xff};
  EXPECT_EQ(DecodeTaskProto(garbage).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(DecodeTaskProto({}).ok());  // empty: no model, no hash
}

TEST(ProofTaskSpecTest, TaskIdCoversEveryHyperparameterButNotTheDataLocation) {
  Result<TaskSpec> t = ParseTaskToml(kToml);
  ASSERT_TRUE(t.ok());
  const consensus::Hash256 id = TaskId(*t);
  TaskSpec moved = *t;
  moved.data_location = "/elsewhere";
  EXPECT_EQ(TaskId(moved), id);
  TaskSpec other = *t;
  other.optimizer.lr = 0.04f;
  EXPECT_NE(TaskId(other), id);
  other = *t;
  other.seed = 8;
  EXPECT_NE(TaskId(other), id);
  other = *t;
  other.checkpoint_interval = 100;
  EXPECT_NE(TaskId(other), id);
  other = *t;
  other.mode = ReproMode::kTolerant;
  EXPECT_NE(TaskId(other), id);
}

// nanoGPT's schedule in a task: it parses, survives the protobuf form, and every one of its fields
// is part of the id; a task without one keeps the id of the constant-lr encoding.
TEST(ProofTaskSpecTest, LearningRateScheduleIsPartOfTheTaskAndItsId) {
  std::string toml(kToml);
  toml += "warmup_steps = 10\nlr_decay_steps = 300\nmin_lr = 0.005\n";
  Result<TaskSpec> t = ParseTaskToml(toml);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->optimizer.warmup_steps, 10);
  EXPECT_EQ(t->optimizer.decay_steps, 300);
  EXPECT_EQ(t->optimizer.min_lr, 0.005f);
  const std::string wire = EncodeTaskProto(*t);
  Result<TaskSpec> back = DecodeTaskProto(
      std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->optimizer.decay_steps, 300);
  EXPECT_EQ(TaskId(*back), TaskId(*t));

  Result<TaskSpec> constant = ParseTaskToml(kToml);
  ASSERT_TRUE(constant.ok());
  const consensus::Hash256 id = TaskId(*t);
  EXPECT_NE(id, TaskId(*constant));
  TaskSpec other = *t;
  other.optimizer.warmup_steps = 11;
  EXPECT_NE(TaskId(other), id);
  other = *t;
  other.optimizer.decay_steps = 299;
  EXPECT_NE(TaskId(other), id);
  other = *t;
  other.optimizer.min_lr = 0.004f;
  EXPECT_NE(TaskId(other), id);
  other = *t;
  other.optimizer.warmup_steps = 0;
  other.optimizer.decay_steps = 0;
  other.optimizer.min_lr = 0.0f;
  EXPECT_EQ(TaskId(other), TaskId(*constant));
  other.optimizer.grad_clip = 1.0f;
  EXPECT_NE(TaskId(other), TaskId(*constant));
  Result<TaskSpec> clipped = ParseTaskToml(std::string(kToml) + "grad_clip = 1.0\n");
  ASSERT_TRUE(clipped.ok()) << clipped.status().ToString();
  EXPECT_EQ(TaskId(*clipped), TaskId(other));
  EXPECT_NE(ParseTaskToml(std::string(kToml) + "grad_clip = -1\n").status().message().find("grad_clip"),
            std::string::npos);
}

TEST(ProofTaskSpecTest, RefusesABadScheduleNamingIt) {
  const auto error = [](const std::string& extra) {
    return ParseTaskToml(std::string(kToml) + extra).status();
  };
  Status s = error("warmup_steps = 300\nlr_decay_steps = 200\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lr_decay_steps (200) must be 0 (no decay) or greater than warmup_steps (300)"),
            std::string::npos)
      << s.ToString();
  s = error("lr_decay_steps = 300\nmin_lr = 0.5\n");  // above lr = 0.05
  EXPECT_NE(s.message().find("min_lr must be finite and in [0, lr]"), std::string::npos) << s.ToString();
  s = error("min_lr = 0.01\n");
  EXPECT_NE(s.message().find("min_lr needs lr_decay_steps > 0"), std::string::npos) << s.ToString();
  s = error("warmup_steps = -5\n");
  EXPECT_NE(s.message().find("warmup_steps must be in [0, 2^40]"), std::string::npos) << s.ToString();
  EXPECT_EQ(error("warmup_steps = 1.5\n").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::solver
