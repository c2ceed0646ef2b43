// The exact edge-case semantics op.h spells out, on the reference backend (the fast CPU backend
// is held to the same bits by cpu_backend_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels_test_util.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/detmath.h"

namespace polnode::kernels {
namespace {

using testing::RunOp;

Tensor Values(Shape shape, std::vector<float> values) {
  auto t = Tensor::FromValues(std::move(shape), std::move(values));
  EXPECT_TRUE(t.ok());
  return t.ok() ? std::move(t).value() : Tensor();
}

std::uint32_t Bits(float x) { return det::FloatBits(x); }

class ReferenceSemanticsTest : public ::testing::Test {
 protected:
  std::vector<Tensor> Run(Op op, const std::vector<const Tensor*>& inputs, const OpAttrs& attrs = {}) {
    auto r = RunOp(*backend_, op, attrs, inputs);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<Tensor>{};
  }
  std::unique_ptr<Backend> backend_ = MakeReferenceBackend();
};

TEST_F(ReferenceSemanticsTest, ReluMapsNegativeZeroAndNanToPositiveZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Values({5}, {-0.0f, nan, -2.0f, 3.0f, 1e-40f});
  const Tensor y = Run(Op::kRelu, {&x})[0];
  EXPECT_EQ(Bits(y.data()[0]), Bits(0.0f));
  EXPECT_EQ(Bits(y.data()[1]), Bits(0.0f));
  EXPECT_EQ(Bits(y.data()[2]), Bits(0.0f));
  EXPECT_EQ(y.data()[3], 3.0f);
  EXPECT_EQ(y.data()[4], 1e-40f);  // subnormals pass through: no flush to zero
}

TEST_F(ReferenceSemanticsTest, MatmulChainStartsAtPositiveZero) {
  // A single product of -0: fma(-0 * 1) + (+0) = +0, not -0; K = 0 gives +0 too.
  const Tensor a = Values({1, 1}, {-0.0f}), b = Values({1, 1}, {1.0f});
  EXPECT_EQ(Bits(Run(Op::kMatmul, {&a, &b})[0].data()[0]), Bits(0.0f));
  const Tensor a0({2, 0}), b0({0, 3});
  const Tensor c0 = Run(Op::kMatmul, {&a0, &b0})[0];
  ASSERT_EQ(c0.shape(), (Shape{2, 3}));
  for (float v : c0.values()) EXPECT_EQ(Bits(v), Bits(0.0f));
}

TEST_F(ReferenceSemanticsTest, MatmulIsOneFmaChain) {
  // 1 + 2^-24 + (-1): an fma chain keeps the 2^-24 that separate multiply-then-add would lose.
  const float tiny = std::ldexp(1.0f, -24);
  const Tensor a = Values({1, 3}, {1.0f + std::ldexp(1.0f, -23), tiny, -1.0f});
  const Tensor b = Values({3, 1}, {1.0f + std::ldexp(1.0f, -23), 1.0f, 1.0f});
  float expect = 0.0f;
  for (int k = 0; k < 3; ++k) expect = std::fma(a.data()[k], b.data()[k], expect);
  EXPECT_EQ(Bits(Run(Op::kMatmul, {&a, &b})[0].data()[0]), Bits(expect));
}

TEST_F(ReferenceSemanticsTest, MaxPoolFirstTapWinsTiesAndNanNeverWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Two 2x2 windows in a 2x4 image: [5 5; 5 5] and [nan 1; 7 7].
  const Tensor x = Values({1, 1, 2, 4}, {5.0f, 5.0f, nan, 1.0f, 5.0f, 5.0f, 7.0f, 7.0f});
  const std::vector<Tensor> out = Run(Op::kMaxPool2x2, {&x});
  EXPECT_EQ(out[0].data()[0], 5.0f);
  EXPECT_EQ(out[1].data()[0], 0.0f);  // tap 0
  // The first tap is NaN; no later tap compares greater than NaN, so it stays.
  EXPECT_TRUE(std::isnan(out[0].data()[1]));
  EXPECT_EQ(out[1].data()[1], 0.0f);
}

TEST_F(ReferenceSemanticsTest, MaxPoolGradRoutesToTheChosenTapAndZeroesTheRest) {
  const Tensor arg = Values({1, 1, 1, 2}, {3.0f, 1.0f}), dy = Values({1, 1, 1, 2}, {2.0f, -4.0f});
  OpAttrs attrs;
  attrs.pool_input_h = 3;  // odd: the last row receives nothing
  attrs.pool_input_w = 5;
  const Tensor dx = Run(Op::kMaxPool2x2Grad, {&arg, &dy}, attrs)[0];
  ASSERT_EQ(dx.shape(), (Shape{1, 1, 3, 5}));
  std::vector<float> want(15, 0.0f);
  want[1 * 5 + 1] = 2.0f;   // window 0, tap 3 = (1, 1)
  want[0 * 5 + 3] = -4.0f;  // window 1, tap 1 = (0, 3)
  for (int e = 0; e < 15; ++e) EXPECT_EQ(dx.data()[e], want[static_cast<std::size_t>(e)]) << e;
}

TEST_F(ReferenceSemanticsTest, SoftmaxCrossEntropyIsStableForHugeLogits) {
  const Tensor z = Values({2, 3}, {1000.0f, 0.0f, -1000.0f, 50.0f, 50.0f, 50.0f});
  const Tensor labels = Values({2}, {1.0f, 2.0f});
  const std::vector<Tensor> out = Run(Op::kSoftmaxCrossEntropy, {&z, &labels});
  // Row 0: loss 1000 for the label-1 logit; row 1: log 3. Mean of the two.
  EXPECT_NEAR(out[0].data()[0], (1000.0 + std::log(3.0)) / 2, 1e-3);
  EXPECT_EQ(out[1].data()[0], 1.0f);
  EXPECT_EQ(out[1].data()[1], 0.0f);
  EXPECT_NEAR(out[1].data()[3], 1.0 / 3, 1e-7);
}

TEST_F(ReferenceSemanticsTest, SoftmaxCrossEntropyFollowsTheWrittenOrder) {
  const Tensor z = Values({1, 4}, {0.5f, -1.25f, 2.0f, 0.75f});
  const Tensor labels = Values({1}, {3.0f});
  const std::vector<Tensor> out = Run(Op::kSoftmaxCrossEntropy, {&z, &labels});
  const float mx = 2.0f;
  float e[4], s = 0.0f;
  for (int c = 0; c < 4; ++c) {
    e[c] = det::Exp(z.data()[c] - mx);
    s = s + e[c];
  }
  EXPECT_EQ(Bits(out[0].data()[0]), Bits(((mx + det::Log(s)) - z.data()[3]) / 1.0f));
  for (int c = 0; c < 4; ++c) EXPECT_EQ(Bits(out[1].data()[c]), Bits(e[c] / s));
}

TEST_F(ReferenceSemanticsTest, ConvPaddedTapsArePartOfTheChain) {
  // On a 1x1 image only the centre tap (kh = kw = 1) is real. Its product, -1e-60, rounds to -0,
  // and the padded taps after it (+0 * w) turn the chain back into +0 (-0 + +0 = +0): a backend
  // that skipped padded taps would return -0.
  const Tensor x = Values({1, 1, 1, 1}, {-1e-30f});
  Tensor w({1, 1, 3, 3});
  for (float& v : w.values()) v = 1e-30f;  // product -1e-60 rounds to -0
  const Tensor y = Run(Op::kConv2d3x3, {&x, &w})[0];
  float expect = 0.0f;
  for (int t = 0; t < 9; ++t) expect = std::fma(w.data()[t], t == 4 ? x.data()[0] : 0.0f, expect);
  EXPECT_EQ(Bits(y.data()[0]), Bits(expect));
}

TEST_F(ReferenceSemanticsTest, AddRoundsOnceAndCancelsToPositiveZero) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor a = Values({4}, {1.0f, -0.0f, 2.5f, inf}),
               b = Values({4}, {std::ldexp(1.0f, -24), -0.0f, -2.5f, -inf});
  const Tensor c = Run(Op::kAdd, {&a, &b})[0];
  EXPECT_EQ(c.data()[0], 1.0f);               // the tie rounds to even
  EXPECT_EQ(Bits(c.data()[1]), Bits(-0.0f));  // -0 + -0 = -0
  EXPECT_EQ(Bits(c.data()[2]), Bits(0.0f));   // x + -x = +0
  EXPECT_TRUE(std::isnan(c.data()[3]));       // inf + -inf
}

TEST_F(ReferenceSemanticsTest, TransposeHeadsMovesBitsUnchanged) {
  // X[1, 2, 3, 2]: element (a, b, d) holds a distinct pattern, NaN and -0 included.
  std::vector<float> x_values(12);
  for (int e = 0; e < 12; ++e) x_values[static_cast<std::size_t>(e)] = static_cast<float>(e) - 5.5f;
  x_values[3] = -0.0f;
  x_values[7] = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Values({1, 2, 3, 2}, x_values);
  const Tensor y = Run(Op::kTransposeHeads, {&x})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 3, 2, 2}));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int d = 0; d < 2; ++d)
        EXPECT_EQ(Bits(y.data()[(b * 2 + a) * 2 + d]), Bits(x.data()[(a * 3 + b) * 2 + d]));
  // Its own inverse.
  EXPECT_TRUE(Run(Op::kTransposeHeads, {&y})[0].BitwiseEqual(x));
}

TEST_F(ReferenceSemanticsTest, GeluFollowsTheWrittenOrderAndSpecialCases) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Values({7}, {0.75f, -1.5f, -0.0f, inf, -inf, -20.0f, 1e30f});
  const Tensor y = Run(Op::kGelu, {&x})[0];
  for (int e = 0; e < 2; ++e) {
    const float v = x.data()[e];
    const float inner = det::kGeluBeta * std::fma(det::kGeluKappa, (v * v) * v, v);
    EXPECT_EQ(Bits(y.data()[e]), Bits((0.5f * v) * (1.0f + det::Tanh(inner))));
  }
  EXPECT_EQ(Bits(y.data()[2]), Bits(-0.0f));
  EXPECT_EQ(y.data()[3], inf);
  EXPECT_TRUE(std::isnan(y.data()[4]));
  EXPECT_EQ(Bits(y.data()[5]), Bits(-0.0f));
  EXPECT_EQ(y.data()[6], 1e30f);
  const Tensor dy = Values({7}, {1.0f, 2.0f, 3.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  const Tensor dx = Run(Op::kGeluGrad, {&x, &dy})[0];
  EXPECT_EQ(Bits(dx.data()[1]), Bits(det::GeluTanhGrad(-1.5f, 2.0f)));
  EXPECT_EQ(dx.data()[2], 1.5f);  // slope 1/2 at 0
  EXPECT_TRUE(std::isnan(dx.data()[3]));
  EXPECT_TRUE(std::isnan(dx.data()[4]));
  EXPECT_TRUE(std::isnan(dx.data()[6]));  // x * x overflows
}

TEST_F(ReferenceSemanticsTest, LayerNormFollowsTheWrittenOrder) {
  OpAttrs attrs;
  attrs.eps = 1e-5f;
  const Tensor x = Values({2, 3}, {0.1f, -2.3f, 7.25f, 3.0f, 3.0f, 3.0f});
  const Tensor gamma = Values({3}, {1.5f, -0.5f, 2.0f}), beta = Values({3}, {0.25f, 0.0f, -1.0f});
  const std::vector<Tensor> out = Run(Op::kLayerNorm, {&x, &gamma, &beta}, attrs);
  for (int r = 0; r < 2; ++r) {
    const float* xr = x.data() + 3 * r;
    const float mean = ((0.0f + xr[0]) + xr[1] + xr[2]) / 3.0f;
    float sq = 0.0f;
    for (int c = 0; c < 3; ++c) sq = std::fma(xr[c] - mean, xr[c] - mean, sq);
    const float rstd = 1.0f / std::sqrt(sq / 3.0f + attrs.eps);
    EXPECT_EQ(Bits(out[1].data()[r]), Bits(mean));
    EXPECT_EQ(Bits(out[2].data()[r]), Bits(rstd));
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(Bits(out[0].data()[3 * r + c]),
                Bits(std::fma((xr[c] - mean) * rstd, gamma.data()[c], beta.data()[c])));
    }
  }
  // The constant row: var = 0, so Y = fma(0 * rstd, gamma, beta) = beta.
  for (int c = 0; c < 3; ++c) EXPECT_EQ(Bits(out[0].data()[3 + c]), Bits(beta.data()[c]));
}

TEST_F(ReferenceSemanticsTest, LayerNormRowWithNanOrInfinityIsNan) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x =
      Values({3, 2}, {1.0f, inf, std::numeric_limits<float>::quiet_NaN(), 2.0f, 1.0f, 3.0f});
  const Tensor gamma = Values({2}, {1.0f, 1.0f}), beta = Values({2}, {0.0f, 0.0f});
  const std::vector<Tensor> out = Run(Op::kLayerNorm, {&x, &gamma, &beta});
  EXPECT_EQ(out[1].data()[0], inf);  // the sum divided by C
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(std::isnan(out[2].data()[r])) << r;
    EXPECT_TRUE(std::isnan(out[0].data()[2 * r]) && std::isnan(out[0].data()[2 * r + 1])) << r;
  }
  EXPECT_EQ(out[0].data()[4], -out[0].data()[5]);  // the finite row is untouched by its neighbours
}

TEST_F(ReferenceSemanticsTest, CausalSoftmaxMasksExactlyAndScalesFirst) {
  OpAttrs attrs;
  attrs.scale = 0.3f;
  const Tensor s = Values({1, 3, 3}, {2.0f, 99.0f, -99.0f, 0.5f, -1.25f, 1e30f, 1.0f, 3.0f, -2.0f});
  const Tensor p = Run(Op::kCausalSoftmax, {&s}, attrs)[0];
  // Row 0: only key 0 is visible.
  EXPECT_EQ(p.data()[0], 1.0f);
  EXPECT_EQ(Bits(p.data()[1]), Bits(0.0f));
  EXPECT_EQ(Bits(p.data()[2]), Bits(0.0f));
  EXPECT_EQ(Bits(p.data()[5]), Bits(0.0f));  // 1e30 past the diagonal changes nothing
  // Row 2 in the written order: z = S * scale, max, e = Exp(z - max), sum ascending, divide.
  float z[3], e[3], sum = 0.0f;
  for (int j = 0; j < 3; ++j) z[j] = s.data()[6 + j] * attrs.scale;
  const float mx = std::max(std::max(z[0], z[1]), z[2]);
  for (int j = 0; j < 3; ++j) {
    e[j] = det::Exp(z[j] - mx);
    sum = sum + e[j];
  }
  for (int j = 0; j < 3; ++j) EXPECT_EQ(Bits(p.data()[6 + j]), Bits(e[j] / sum)) << j;
}

TEST_F(ReferenceSemanticsTest, CausalSoftmaxNanAndInfinityRules) {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  // Rows (visible prefix): [1, +inf], [-inf, -inf, -inf], [1, nan, 2, 5] and [-inf, 0, ...].
  const Tensor s = Values({4, 4}, {9.0f, 9.0f, 9.0f, 9.0f,  //
                                   1.0f, inf, 9.0f, 9.0f,   //
                                   -inf, -inf, -inf, 9.0f,  //
                                   -inf, nan, 2.0f, 5.0f});
  const Tensor p = Run(Op::kCausalSoftmax, {&s})[0];
  EXPECT_TRUE(std::isnan(p.data()[4]) && std::isnan(p.data()[5]));
  EXPECT_EQ(Bits(p.data()[6]), Bits(0.0f));
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(p.data()[8 + j])) << j;
  EXPECT_EQ(Bits(p.data()[11]), Bits(0.0f));
  for (int j = 0; j < 4; ++j) EXPECT_TRUE(std::isnan(p.data()[12 + j])) << j;
  // A -inf among finite scores is a plain zero weight.
  const Tensor s2 = Values({2, 2}, {0.0f, 0.0f, -inf, 0.0f});
  const Tensor p2 = Run(Op::kCausalSoftmax, {&s2})[0];
  EXPECT_EQ(Bits(p2.data()[2]), Bits(0.0f));
  EXPECT_EQ(p2.data()[3], 1.0f);
}

TEST_F(ReferenceSemanticsTest, CausalSoftmaxGradNeverReadsMaskedEntries) {
  OpAttrs attrs;
  attrs.scale = 0.5f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor p = Values({2, 2}, {1.0f, 0.0f, 0.25f, 0.75f});
  const Tensor dp = Values({2, 2}, {3.0f, nan, -1.0f, 2.0f});
  const Tensor ds = Run(Op::kCausalSoftmaxGrad, {&p, &dp}, attrs)[0];
  EXPECT_EQ(ds.data()[0], (1.0f * (3.0f - 3.0f)) * 0.5f);
  EXPECT_EQ(Bits(ds.data()[1]), Bits(0.0f));
  const float dot = std::fma(0.75f, 2.0f, std::fma(0.25f, -1.0f, 0.0f));
  EXPECT_EQ(Bits(ds.data()[2]), Bits((0.25f * (-1.0f - dot)) * 0.5f));
  EXPECT_EQ(Bits(ds.data()[3]), Bits((0.75f * (2.0f - dot)) * 0.5f));
}

TEST_F(ReferenceSemanticsTest, BatchedMatmulIsTheTwoDimensionalProductPerMatrix) {
  // Two [2, 3] x [3, 2] products side by side, each against kMatmul on its own matrices.
  std::vector<float> av(12), bv(12);
  for (int e = 0; e < 12; ++e) {
    av[static_cast<std::size_t>(e)] = 0.1f * static_cast<float>(e) - 0.55f;
    bv[static_cast<std::size_t>(e)] = 1.0f / static_cast<float>(e + 3);
  }
  const Tensor a = Values({2, 2, 3}, av), b = Values({2, 3, 2}, bv);
  const Tensor c = Run(Op::kBatchedMatmul, {&a, &b})[0];
  ASSERT_EQ(c.shape(), (Shape{2, 2, 2}));
  for (int g = 0; g < 2; ++g) {
    const Tensor ag =
        Values({2, 3}, std::vector<float>(av.begin() + 6 * g, av.begin() + 6 * g + 6));
    const Tensor bg =
        Values({3, 2}, std::vector<float>(bv.begin() + 6 * g, bv.begin() + 6 * g + 6));
    const Tensor cg = Run(Op::kMatmul, {&ag, &bg})[0];
    for (int e = 0; e < 4; ++e)
      EXPECT_EQ(Bits(c.data()[4 * g + e]), Bits(cg.data()[e])) << g << " " << e;
  }
}

TEST_F(ReferenceSemanticsTest, EmbeddingCopiesRowsBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor w = Values({3, 2}, {1.5f, -0.0f, nan, 2.0f, -3.0f, 1e-40f});
  const Tensor ids = Values({2, 2}, {2.0f, 0.0f, 0.0f, 1.0f});
  const Tensor y = Run(Op::kEmbedding, {&w, &ids})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 2, 2}));
  for (int n = 0; n < 4; ++n) {
    const auto row = static_cast<int>(ids.data()[n]);
    for (int c = 0; c < 2; ++c)
      EXPECT_EQ(Bits(y.data()[2 * n + c]), Bits(w.data()[2 * row + c])) << n;
  }
}

TEST_F(ReferenceSemanticsTest, EmbeddingGradAddsPositionsInAscendingOrder) {
  // Row 1 gets 1, then 2^-24 twice: in this order each small term ties and rounds away (1 stays 1),
  // in any order that adds the small terms first they would make 1 + 2^-23. Row 0 gets -0 once
  // (+0.0f + -0 = +0); row 2 is never named and stays +0.
  const float tiny = std::ldexp(1.0f, -24);
  const Tensor ids = Values({4}, {1.0f, 1.0f, 0.0f, 1.0f});
  const Tensor dy = Values({4, 1}, {1.0f, tiny, -0.0f, tiny});
  OpAttrs attrs;
  attrs.num_embeddings = 3;
  const Tensor dw = Run(Op::kEmbeddingGrad, {&ids, &dy}, attrs)[0];
  ASSERT_EQ(dw.shape(), (Shape{3, 1}));
  EXPECT_EQ(Bits(dw.data()[0]), Bits(0.0f));
  EXPECT_EQ(dw.data()[1], 1.0f);
  EXPECT_EQ(Bits(dw.data()[2]), Bits(0.0f));
  // The other order really differs: (tiny + tiny) + 1 = 1 + 2^-23.
  EXPECT_NE((tiny + tiny) + 1.0f, 1.0f);
}

TEST_F(ReferenceSemanticsTest, RejectsAliasingAndLeavesOutputsUntouched) {
  Tensor x = Values({2}, {1.0f, -1.0f});
  std::vector<const Tensor*> in = {&x};
  std::vector<Tensor*> out = {&x};
  EXPECT_EQ(backend_->Run(Op::kRelu, {}, in, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(x.data()[1], -1.0f);
}

}  // namespace
}  // namespace polnode::kernels
