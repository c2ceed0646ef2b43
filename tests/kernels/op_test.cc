// op.h's metadata: names, arity, AdamBiasCorrection, and InferOutputShapes with its error cases.
#include "polnode/kernels/op.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "polnode/kernels/validate_run.h"

namespace polnode::kernels {
namespace {

Result<std::vector<Shape>> Infer(Op op, const std::vector<const Tensor*>& inputs,
                                 const OpAttrs& attrs = {}) {
  return InferOutputShapes(op, attrs, inputs);
}

// Asserts an kInvalidArgument whose message contains `fragment`.
void ExpectError(const Result<std::vector<Shape>>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(OpTest, NamesRoundTripAndAreUnique) {
  std::vector<std::string> seen;
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const std::string name(OpName(op));
    for (const std::string& other : seen) EXPECT_NE(name, other);
    seen.push_back(name);
    auto parsed = OpFromName(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(*parsed, op);
    EXPECT_GE(NumInputs(op), 1);
    EXPECT_GE(NumOutputs(op), 1);
  }
  EXPECT_EQ(OpName(Op::kMatmul), "matmul");
  EXPECT_EQ(OpName(Op::kConv2d3x3GradInput), "conv2d_3x3_grad_input");
  EXPECT_EQ(OpFromName("no_such_op").status().code(), StatusCode::kInvalidArgument);
}

TEST(OpTest, ArityMatchesTheOperatorComments) {
  EXPECT_EQ(NumInputs(Op::kBiasGrad), 1);
  EXPECT_EQ(NumOutputs(Op::kMaxPool2x2), 2);
  EXPECT_EQ(NumOutputs(Op::kSoftmaxCrossEntropy), 2);
  EXPECT_EQ(NumInputs(Op::kSgdMomentum), 3);
  EXPECT_EQ(NumOutputs(Op::kSgdMomentum), 2);
  EXPECT_EQ(NumInputs(Op::kAdamW), 4);
  EXPECT_EQ(NumOutputs(Op::kAdamW), 3);
}

TEST(OpTest, AdamBiasCorrectionMatchesSquareAndMultiply) {
  EXPECT_EQ(AdamBiasCorrection(0.9f, 1), 1.0f - 0.9f);
  EXPECT_EQ(AdamBiasCorrection(0.9f, 2), 1.0f - 0.9f * 0.9f);
  // t = 5 = 0b101, most significant bit first: ((b)^2)^2 * b.
  const float b = 0.999f;
  EXPECT_EQ(AdamBiasCorrection(b, 5), 1.0f - ((b * b) * (b * b)) * b);
  for (std::int64_t t : {1, 7, 100, 1000, 123456}) {
    const double exact = 1.0 - std::pow(0.999, static_cast<double>(t));
    EXPECT_NEAR(AdamBiasCorrection(0.999f, t), exact, 1e-4 * exact + 1e-6) << t;
  }
}

// nanoGPT shakespeare_char's schedule: peak 1e-3, warm-up 100 steps, cosine decay to 1e-4 at
// step 2000. The expected bits are Python's float64 formula with libm's cos, rounded to float32
// (det::CosPi agrees with it to a few double ulp, far below a float's half ulp at these points).
TEST(OpTest, ScheduledLrFollowsWarmUpAndCosineDecayBitForBit) {
  OpAttrs a;
  a.lr = 1e-3f;
  a.min_lr = 1e-4f;
  a.lr_warmup_steps = 100;
  a.lr_decay_steps = 2000;
  const std::pair<std::int64_t, float> expected[] = {
      {0, 0x1.4c38dcp-17f},    {50, 0x1.08bd5p-11f},   {99, 0x1.038c6cp-10f},
      {100, 1e-3f},            {575, 0x1.c72f94p-11f}, {1050, 0x1.205bcp-11f},
      {1999, 0x1.a36ed8p-14f}, {2000, 1e-4f},          {2001, 1e-4f},
      {1000000, 1e-4f}};
  for (const auto& [t, lr] : expected) EXPECT_EQ(ScheduledLr(a, t), lr) << "step " << t;
  // Warm-up alone holds the peak after it; no schedule is the constant lr at every step.
  a.lr_decay_steps = 0;
  a.min_lr = 0.0f;
  EXPECT_EQ(ScheduledLr(a, 100), 1e-3f);
  EXPECT_EQ(ScheduledLr(a, 5000), 1e-3f);
  a.lr_warmup_steps = 0;
  for (std::int64_t t : {0, 1, 99, 100000}) EXPECT_EQ(ScheduledLr(a, t), 1e-3f);
  // Decay without warm-up starts at the peak.
  a.lr_decay_steps = 10;
  EXPECT_EQ(ScheduledLr(a, 0), 1e-3f);
  EXPECT_EQ(ScheduledLr(a, 10), 0.0f);
}

TEST(OpTest, InfersShapesForEveryOperator) {
  const Tensor a({5, 3}), b({3, 7}), c({5, 7}), bias7({7}), x4({2, 3, 6, 5}), bias3({3});
  const Tensor w({4, 3, 3, 3}), y4({2, 4, 6, 5}), pooled({2, 3, 3, 2}), labels({5});
  EXPECT_EQ(*Infer(Op::kMatmul, {&a, &b}), (std::vector<Shape>{{5, 7}}));
  EXPECT_EQ(*Infer(Op::kMatmulGradA, {&c, &b}), (std::vector<Shape>{{5, 3}}));
  EXPECT_EQ(*Infer(Op::kMatmulGradB, {&a, &c}), (std::vector<Shape>{{3, 7}}));
  EXPECT_EQ(*Infer(Op::kBiasAdd, {&c, &bias7}), (std::vector<Shape>{{5, 7}}));
  EXPECT_EQ(*Infer(Op::kBiasAdd, {&x4, &bias3}), (std::vector<Shape>{{2, 3, 6, 5}}));
  EXPECT_EQ(*Infer(Op::kBiasGrad, {&c}), (std::vector<Shape>{{7}}));
  EXPECT_EQ(*Infer(Op::kBiasGrad, {&x4}), (std::vector<Shape>{{3}}));
  EXPECT_EQ(*Infer(Op::kRelu, {&x4}), (std::vector<Shape>{{2, 3, 6, 5}}));
  EXPECT_EQ(*Infer(Op::kReluGrad, {&c, &c}), (std::vector<Shape>{{5, 7}}));
  EXPECT_EQ(*Infer(Op::kConv2d3x3, {&x4, &w}), (std::vector<Shape>{{2, 4, 6, 5}}));
  EXPECT_EQ(*Infer(Op::kConv2d3x3GradInput, {&y4, &w}), (std::vector<Shape>{{2, 3, 6, 5}}));
  EXPECT_EQ(*Infer(Op::kConv2d3x3GradWeight, {&x4, &y4}), (std::vector<Shape>{{4, 3, 3, 3}}));
  EXPECT_EQ(*Infer(Op::kMaxPool2x2, {&x4}), (std::vector<Shape>{{2, 3, 3, 2}, {2, 3, 3, 2}}));
  OpAttrs pool;
  pool.pool_input_h = 6;
  pool.pool_input_w = 5;
  EXPECT_EQ(*Infer(Op::kMaxPool2x2Grad, {&pooled, &pooled}, pool),
            (std::vector<Shape>{{2, 3, 6, 5}}));
  EXPECT_EQ(*Infer(Op::kSoftmaxCrossEntropy, {&c, &labels}), (std::vector<Shape>{{1}, {5, 7}}));
  EXPECT_EQ(*Infer(Op::kSoftmaxCrossEntropyGrad, {&c, &labels}), (std::vector<Shape>{{5, 7}}));
  EXPECT_EQ(*Infer(Op::kSgdMomentum, {&c, &c, &c}), (std::vector<Shape>{{5, 7}, {5, 7}}));
  EXPECT_EQ(*Infer(Op::kAdamW, {&c, &c, &c, &c}), (std::vector<Shape>{{5, 7}, {5, 7}, {5, 7}}));
  EXPECT_EQ(*Infer(Op::kAdd, {&x4, &x4}), (std::vector<Shape>{{2, 3, 6, 5}}));
  EXPECT_EQ(*Infer(Op::kTransposeHeads, {&x4}), (std::vector<Shape>{{2, 6, 3, 5}}));
  EXPECT_EQ(*Infer(Op::kGelu, {&c}), (std::vector<Shape>{{5, 7}}));
  EXPECT_EQ(*Infer(Op::kGeluGrad, {&c, &c}), (std::vector<Shape>{{5, 7}}));
  const Tensor x3({2, 6, 5}), rows({2, 6}), gamma5({5});
  EXPECT_EQ(*Infer(Op::kLayerNorm, {&x3, &gamma5, &gamma5}),
            (std::vector<Shape>{{2, 6, 5}, {2, 6}, {2, 6}}));
  EXPECT_EQ(*Infer(Op::kLayerNormGrad, {&x3, &gamma5, &rows, &rows, &x3}),
            (std::vector<Shape>{{2, 6, 5}, {5}, {5}}));
  const Tensor scores({2, 3, 4, 4});
  EXPECT_EQ(*Infer(Op::kCausalSoftmax, {&scores}), (std::vector<Shape>{{2, 3, 4, 4}}));
  EXPECT_EQ(*Infer(Op::kCausalSoftmaxGrad, {&scores, &scores}), (std::vector<Shape>{{2, 3, 4, 4}}));
  const Tensor q({2, 3, 4, 8}), k({2, 3, 4, 8}), s({2, 3, 4, 4}), v({2, 3, 4, 8});
  EXPECT_EQ(*Infer(Op::kBatchedMatmulGradA, {&q, &k}),
            (std::vector<Shape>{{2, 3, 4, 4}}));                                        // Q K^T
  EXPECT_EQ(*Infer(Op::kBatchedMatmul, {&s, &v}), (std::vector<Shape>{{2, 3, 4, 8}}));  // P V
  EXPECT_EQ(*Infer(Op::kBatchedMatmulGradB, {&s, &v}),
            (std::vector<Shape>{{2, 3, 4, 8}}));  // P^T dY
  auto ids = Tensor::FromValues({2, 3}, {0.0f, 4.0f, 2.0f, 2.0f, 1.0f, 0.0f});
  ASSERT_TRUE(ids.ok());
  const Tensor table({5, 7}), dy({2, 3, 7});
  EXPECT_EQ(*Infer(Op::kEmbedding, {&table, &*ids}), (std::vector<Shape>{{2, 3, 7}}));
  OpAttrs emb;
  emb.num_embeddings = 5;
  EXPECT_EQ(*Infer(Op::kEmbeddingGrad, {&*ids, &dy}, emb), (std::vector<Shape>{{5, 7}}));
}

TEST(OpTest, TransformerOperatorsKeepTheirEnumValuesAndNames) {
  // The numeric values are part of hashed graph descriptors: appended, never renumbered.
  EXPECT_EQ(static_cast<int>(Op::kAdamW), 15);
  EXPECT_EQ(static_cast<int>(Op::kAdd), 16);
  EXPECT_EQ(static_cast<int>(Op::kTransposeHeads), 17);
  EXPECT_EQ(static_cast<int>(Op::kGelu), 18);
  EXPECT_EQ(static_cast<int>(Op::kGeluGrad), 19);
  EXPECT_EQ(OpName(Op::kAdd), "add");
  EXPECT_EQ(OpName(Op::kTransposeHeads), "transpose_heads");
  EXPECT_EQ(OpName(Op::kGelu), "gelu");
  EXPECT_EQ(OpName(Op::kGeluGrad), "gelu_grad");
  EXPECT_EQ(static_cast<int>(Op::kLayerNorm), 20);
  EXPECT_EQ(static_cast<int>(Op::kLayerNormGrad), 21);
  EXPECT_EQ(static_cast<int>(Op::kCausalSoftmax), 22);
  EXPECT_EQ(static_cast<int>(Op::kCausalSoftmaxGrad), 23);
  EXPECT_EQ(OpName(Op::kLayerNorm), "layer_norm");
  EXPECT_EQ(OpName(Op::kLayerNormGrad), "layer_norm_grad");
  EXPECT_EQ(OpName(Op::kCausalSoftmax), "causal_softmax");
  EXPECT_EQ(OpName(Op::kCausalSoftmaxGrad), "causal_softmax_grad");
  EXPECT_EQ(static_cast<int>(Op::kBatchedMatmul), 24);
  EXPECT_EQ(static_cast<int>(Op::kBatchedMatmulGradA), 25);
  EXPECT_EQ(static_cast<int>(Op::kBatchedMatmulGradB), 26);
  EXPECT_EQ(static_cast<int>(Op::kEmbedding), 27);
  EXPECT_EQ(static_cast<int>(Op::kEmbeddingGrad), 28);
  EXPECT_EQ(static_cast<int>(Op::kClipCoefficient), 29);
  EXPECT_EQ(kNumOps, 30);
  EXPECT_EQ(OpName(Op::kBatchedMatmul), "batched_matmul");
  EXPECT_EQ(OpName(Op::kBatchedMatmulGradA), "batched_matmul_grad_a");
  EXPECT_EQ(OpName(Op::kBatchedMatmulGradB), "batched_matmul_grad_b");
  EXPECT_EQ(OpName(Op::kEmbedding), "embedding");
  EXPECT_EQ(OpName(Op::kEmbeddingGrad), "embedding_grad");
}

TEST(OpTest, RejectsMismatchedBatchedMatmulShapes) {
  const Tensor a({2, 3, 4, 5}), b({2, 3, 6, 7}), other_batch({3, 2, 5, 7}), m2({4, 5}),
      r3({6, 4, 5});
  ExpectError(Infer(Op::kBatchedMatmul, {&a, &b}), "inner dimensions differ (5 vs 6)");
  ExpectError(Infer(Op::kBatchedMatmul, {&a, &other_batch}), "the leading (batch) axes must match");
  ExpectError(Infer(Op::kBatchedMatmul, {&a, &r3}), "the leading (batch) axes must match");
  ExpectError(Infer(Op::kBatchedMatmul, {&m2, &m2}), "input 0 (A) is [4, 5], expected rank >= 3");
  ExpectError(Infer(Op::kBatchedMatmulGradA, {&a, &b}), "column counts differ (5 vs 7)");
  ExpectError(Infer(Op::kBatchedMatmulGradB, {&a, &b}), "row counts differ (4 vs 6)");
}

TEST(OpTest, RejectsBadEmbeddingIdsAndShapes) {
  const Tensor table({5, 7}), flat({35});
  for (float bad : {-1.0f, 5.0f, 0.5f, std::nanf("")}) {
    auto ids = Tensor::FromValues({3}, {0.0f, bad, 4.0f});
    ASSERT_TRUE(ids.ok());
    ExpectError(Infer(Op::kEmbedding, {&table, &*ids}), "input 1 (ids) element 1");
    OpAttrs attrs;
    attrs.num_embeddings = 5;
    const Tensor dy({3, 7});
    ExpectError(Infer(Op::kEmbeddingGrad, {&*ids, &dy}, attrs), "input 0 (ids) element 1");
  }
  auto ids = Tensor::FromValues({3}, {0.0f, 1.0f, 4.0f});
  ASSERT_TRUE(ids.ok());
  ExpectError(Infer(Op::kEmbedding, {&flat, &*ids}), "input 0 (W) is [35], expected rank 2");
  const Tensor dy({3, 7}), dy_wrong({4, 7});
  OpAttrs attrs;
  ExpectError(Infer(Op::kEmbeddingGrad, {&*ids, &dy}, attrs), "attrs.num_embeddings is 0");
  attrs.num_embeddings = 4;  // id 4 is now out of range
  ExpectError(Infer(Op::kEmbeddingGrad, {&*ids, &dy}, attrs), "expected an integer in [0, 4)");
  attrs.num_embeddings = 5;
  ExpectError(Infer(Op::kEmbeddingGrad, {&*ids, &dy_wrong}, attrs),
              "dY must be ids' shape followed by C");
}

TEST(OpTest, RejectsBadLayerNormShapes) {
  const Tensor x({4, 5}), v5({5}), v4({4}), rows4({4}), rows5({5}), x1({5}), empty_rows({4, 0});
  ExpectError(Infer(Op::kLayerNorm, {&x1, &v5, &v5}), "input 0 (X) is [5], expected rank >= 2");
  ExpectError(Infer(Op::kLayerNorm, {&empty_rows, &v5, &v5}), "1 <= C < 2^24");
  ExpectError(Infer(Op::kLayerNorm, {&x, &v4, &v5}),
              "input 1 (gamma) is [4], expected dimension 0 to be 5");
  ExpectError(Infer(Op::kLayerNorm, {&x, &v5, &v4}),
              "input 2 (beta) is [4], expected dimension 0 to be 5");
  ExpectError(Infer(Op::kLayerNormGrad, {&x, &v5, &rows5, &rows4, &x}),
              "input 2 (Mean) is [5], expected [4]");
  ExpectError(Infer(Op::kLayerNormGrad, {&x, &v5, &rows4, &rows5, &x}),
              "input 3 (Rstd) is [5], expected [4]");
  const Tensor dy({5, 4});
  ExpectError(Infer(Op::kLayerNormGrad, {&x, &v5, &rows4, &rows4, &dy}), "input 4 (dY) is [5, 4]");
}

TEST(OpTest, RejectsNonSquareOrEmptyScores) {
  const Tensor wide({2, 3, 4}), none({2, 0, 0}), v({4}), sq({3, 3}), other({2, 2});
  ExpectError(Infer(Op::kCausalSoftmax, {&wide}), "expected square score matrices [..., T, T]");
  ExpectError(Infer(Op::kCausalSoftmax, {&none}), "with T >= 1");
  ExpectError(Infer(Op::kCausalSoftmax, {&v}), "input 0 (S) is [4]");
  ExpectError(Infer(Op::kCausalSoftmaxGrad, {&sq, &other}), "input 1 (dP) is [2, 2]");
}

TEST(OpTest, RejectsBadElementwiseAndTransposeShapes) {
  const Tensor a({3, 4}), b({4, 3}), x3({2, 3, 4});
  ExpectError(Infer(Op::kAdd, {&a, &b}), "input 0 (A) is [3, 4] but input 1 (B) is [4, 3]");
  ExpectError(Infer(Op::kGeluGrad, {&a, &b}), "input 0 (X) is [3, 4] but input 1 (dY) is [4, 3]");
  ExpectError(Infer(Op::kTransposeHeads, {&x3}),
              "transpose_heads: input 0 (X) is [2, 3, 4], expected rank 4");
}

TEST(OpTest, RejectsWrongInputCountsNullsAndEmptyTensors) {
  const Tensor a({2, 2}), empty;
  ExpectError(Infer(Op::kMatmul, {&a}), "matmul takes 2 inputs, got 1");
  ExpectError(Infer(Op::kRelu, {nullptr}), "relu: input 0 is null");
  ExpectError(Infer(Op::kRelu, {&empty}), "rank 0");
}

TEST(OpTest, RejectsMismatchedMatmulShapes) {
  const Tensor a({5, 3}), b({4, 7}), v({3});
  ExpectError(Infer(Op::kMatmul, {&a, &b}), "inner dimensions differ (3 vs 4)");
  ExpectError(Infer(Op::kMatmul, {&v, &b}), "input 0 (A) is [3], expected rank 2");
  ExpectError(Infer(Op::kMatmulGradA, {&a, &b}), "column counts differ");
  ExpectError(Infer(Op::kMatmulGradB, {&a, &b}), "row counts differ");
}

TEST(OpTest, RejectsMismatchedBiasShapes) {
  const Tensor x({5, 7}), b({6}), x3({2, 3, 4}), x4({2, 3, 4, 4});
  ExpectError(Infer(Op::kBiasAdd, {&x, &b}), "the last dimension of X");
  ExpectError(Infer(Op::kBiasAdd, {&x4, &b}), "the channel dimension of X");
  ExpectError(Infer(Op::kBiasGrad, {&x3}), "expected rank 2 [M,N] or rank 4 [N,C,H,W]");
}

TEST(OpTest, RejectsMismatchedConvShapes) {
  const Tensor x({2, 3, 6, 5}), w5({4, 3, 5, 5}), w_ci({4, 2, 3, 3}), dy({2, 4, 6, 4});
  const Tensor w({4, 3, 3, 3});
  ExpectError(Infer(Op::kConv2d3x3, {&x, &w5}), "expected a [Co, Ci, 3, 3] kernel");
  ExpectError(Infer(Op::kConv2d3x3, {&x, &w_ci}), "the channel count Ci of X");
  ExpectError(Infer(Op::kConv2d3x3GradInput, {&x, &w}), "the channel count Co of dY");
  ExpectError(Infer(Op::kConv2d3x3GradWeight, {&x, &dy}), "N, H and W must match");
}

TEST(OpTest, RejectsBadPoolShapesAndTaps) {
  const Tensor x3({2, 3, 4}), pooled({1, 1, 2, 2}), other({1, 1, 2, 3});
  ExpectError(Infer(Op::kMaxPool2x2, {&x3}), "expected rank 4");
  OpAttrs attrs;
  attrs.pool_input_h = 5;  // 5 / 2 = 2: fine
  attrs.pool_input_w = 6;  // 6 / 2 = 3: not 2
  ExpectError(Infer(Op::kMaxPool2x2Grad, {&pooled, &pooled}, attrs), "do not pool to");
  attrs.pool_input_w = 4;
  ExpectError(Infer(Op::kMaxPool2x2Grad, {&pooled, &other}, attrs), "they must match");
  auto bad_arg = Tensor::FromValues({1, 1, 2, 2}, {0.0f, 1.0f, 4.0f, 3.0f});
  ASSERT_TRUE(bad_arg.ok());
  ExpectError(Infer(Op::kMaxPool2x2Grad, {&*bad_arg, &pooled}, attrs),
              "element 2 is 4.000000, expected an integer in [0, 4)");
}

TEST(OpTest, RejectsBadSoftmaxShapesAndLabels) {
  const Tensor z({3, 4}), labels2({2}), none({0, 4});
  ExpectError(Infer(Op::kSoftmaxCrossEntropy, {&z, &labels2}), "one label per row");
  ExpectError(Infer(Op::kSoftmaxCrossEntropy, {&none, &labels2}), "at least one row");
  for (float bad : {-1.0f, 4.0f, 1.5f, std::nanf("")}) {
    auto labels = Tensor::FromValues({3}, {0.0f, bad, 2.0f});
    ASSERT_TRUE(labels.ok());
    ExpectError(Infer(Op::kSoftmaxCrossEntropyGrad, {&z, &*labels}), "input 1 (labels) element 1");
  }
}

TEST(OpTest, RejectsMismatchedOptimizerShapes) {
  const Tensor w({3, 4}), g({4, 3});
  ExpectError(Infer(Op::kSgdMomentum, {&w, &g, &w}), "input 1 (G) is [4, 3]");
  ExpectError(Infer(Op::kAdamW, {&w, &w, &w, &g}), "input 3 (V) is [4, 3]");
}

TEST(ValidateRunTest, AllowsOnlyTheDocumentedAliasing) {
  Tensor w({3}), g({3}), v({3}), m({3});
  const OpAttrs attrs;
  std::vector<const Tensor*> sgd_in = {&w, &g, &v};
  std::vector<Tensor*> in_place = {&w, &v};
  EXPECT_TRUE(ValidateRun(Op::kSgdMomentum, attrs, sgd_in, in_place).ok());
  std::vector<Tensor*> swapped = {&v, &w};
  EXPECT_FALSE(ValidateRun(Op::kSgdMomentum, attrs, sgd_in, swapped).ok());
  std::vector<Tensor*> twice = {&m, &m};
  EXPECT_FALSE(ValidateRun(Op::kSgdMomentum, attrs, sgd_in, twice).ok());
  std::vector<const Tensor*> relu_in = {&w};
  std::vector<Tensor*> relu_out = {&w};
  auto r = ValidateRun(Op::kRelu, attrs, relu_in, relu_out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("same tensor as input 0"), std::string::npos);
  std::vector<Tensor*> too_many = {&m, &v};
  EXPECT_FALSE(ValidateRun(Op::kRelu, attrs, relu_in, too_many).ok());
  std::vector<Tensor*> null_out = {nullptr};
  EXPECT_FALSE(ValidateRun(Op::kRelu, attrs, relu_in, null_out).ok());
  std::vector<const Tensor*> add_in = {&w, &g};
  for (Tensor* target : {&w, &g}) {
    std::vector<Tensor*> add_out = {target};
    EXPECT_TRUE(ValidateRun(Op::kAdd, attrs, add_in, add_out).ok());
  }
}

}  // namespace
}  // namespace polnode::kernels
