// The GPU check's in-process training comparison (kernels/gpu/train_check.h) on the backends CI
// has: the CPU backend against the reference agrees step for step, and a backend one bit off in
// one operator is caught at the step where it first matters.
#include "gpu/train_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "polnode/kernels/backend.h"

namespace polnode::kernels::train_check {
namespace {

Spec SmallMlp() {
  Spec s;
  s.model = Model::kMlp;
  s.batch = 8;
  s.side = 6;
  s.hidden1 = 16;
  s.hidden2 = 12;
  s.classes = 5;
  return s;
}

Spec SmallCnn() {
  Spec s;
  s.model = Model::kCnn;
  s.batch = 4;
  s.side = 8;
  s.hidden1 = 3;
  s.hidden2 = 4;
  s.classes = 5;
  return s;
}

TEST(TrainCheckTest, CpuBackendTrainsLikeTheReference) {
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  std::unique_ptr<Backend> cpu = MakeCpuBackend(2);
  for (const Spec& spec : {SmallMlp(), SmallCnn()}) {
    Result<Outcome> outcome = CompareTraining(*cpu, *reference, spec, 12);
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_EQ(outcome->first_difference, 0) << Describe(spec) << ": " << outcome->detail;
    EXPECT_EQ(outcome->candidate_digest, outcome->reference_digest) << Describe(spec);
    // It trained: the loss moved (the eight synthetic batches repeat, so it falls).
    EXPECT_LT(outcome->last_loss, outcome->first_loss) << Describe(spec);
  }
}

// The reference with one bit flipped in the largest element of one weight gradient from the third
// step on (the top mantissa bit, so the optimizer cannot round it away).
class LateOneBitOffBackend final : public Backend {
 public:
  explicit LateOneBitOffBackend(Op op) : op_(op) {}
  std::string name() const override { return "late-one-bit-off"; }
  Status Run(Op op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::span<Tensor* const> outputs) override {
    POLNODE_RETURN_IF_ERROR(inner_->Run(op, attrs, inputs, outputs));
    if (op == op_ && ++calls_ > 2 * kCallsPerStep) {
      std::span<float> values = outputs[0]->values();
      float& v = *std::max_element(values.begin(), values.end(),
                                   [](float a, float b) { return std::fabs(a) < std::fabs(b); });
      std::uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      bits ^= 1u << 22;
      std::memcpy(&v, &bits, sizeof bits);
    }
    return Status::Ok();
  }

 private:
  static constexpr int kCallsPerStep = 3;  // three weight gradients per MLP step
  Op op_;
  int calls_ = 0;
  std::unique_ptr<Backend> inner_ = MakeReferenceBackend();
};

TEST(TrainCheckTest, FindsTheStepWhereOneBitGoesWrong) {
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  LateOneBitOffBackend broken(Op::kMatmulGradB);
  Result<Outcome> outcome = CompareTraining(broken, *reference, SmallMlp(), 10);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->first_difference, 3);
  EXPECT_NE(outcome->detail.find("element"), std::string::npos) << outcome->detail;
  EXPECT_NE(outcome->candidate_digest, outcome->reference_digest);
}

TEST(TrainCheckTest, RefusesBadSpecsAndStepCounts) {
  std::unique_ptr<Backend> a = MakeReferenceBackend();
  std::unique_ptr<Backend> b = MakeReferenceBackend();
  Spec odd = SmallCnn();
  odd.side = 6;
  EXPECT_EQ(CompareTraining(*a, *b, odd, 1).status().code(), StatusCode::kInvalidArgument);
  Spec empty = SmallMlp();
  empty.hidden1 = 0;
  EXPECT_EQ(CompareTraining(*a, *b, empty, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CompareTraining(*a, *b, SmallMlp(), 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::kernels::train_check
