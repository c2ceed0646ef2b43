// kernels::TileKernel against the reference backend: for every operator and output, evaluating the
// output tile by tile (the game's 64 x 64 blocks and odd small rectangles) and each tile's chain in
// random unit ranges gives the reference's bits, and no evaluation reads an element outside what
// Reads declared for its range (the referee proves only those).
#include "polnode/kernels/tile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "kernels_test_util.h"

namespace polnode::kernels {
namespace {

using testing::RandomLabels;
using testing::RandomTensor;

// A source over a tensor that records reads outside the allowed elements.
class CheckedSource final : public TileSource {
 public:
  explicit CheckedSource(const Tensor& t) : t_(t), allowed_(static_cast<std::size_t>(t.numel()), false) {}
  void Allow(const std::vector<FlatRun>& runs) {
    std::fill(allowed_.begin(), allowed_.end(), false);
    for (const FlatRun& r : runs) {
      ASSERT_GE(r.begin, 0);
      ASSERT_LE(r.begin + r.length, t_.numel()) << "a declared run leaves the tensor";
      for (std::int64_t i = r.begin; i < r.begin + r.length; ++i) allowed_[static_cast<std::size_t>(i)] = true;
    }
  }
  float At(std::int64_t flat) const override {
    if (flat < 0 || flat >= t_.numel() || !allowed_[static_cast<std::size_t>(flat)]) ++violations_;
    if (flat < 0 || flat >= t_.numel()) return 0.0f;
    return t_.data()[flat];
  }
  int violations() const { return violations_; }

 private:
  const Tensor& t_;
  std::vector<bool> allowed_;
  mutable int violations_ = 0;
};

struct OpCase {
  std::string name;
  Op op;
  OpAttrs attrs;
  std::vector<Tensor> inputs;
};

std::uint32_t Bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Sprinkles special values (signed zeros, NaN, infinities) into a tensor.
void Sprinkle(Tensor& t, std::uint32_t seed) {
  std::mt19937 gen(seed);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (int i = 0; i < 6 && t.numel() > 0; ++i) t.data()[gen() % t.numel()] = specials[gen() % 5];
}

Tensor PoolArgs(const Shape& shape, std::uint32_t seed) {
  Tensor t(shape);
  std::mt19937 gen(seed);
  for (float& v : t.values()) v = static_cast<float>(gen() % 4);
  return t;
}

std::vector<OpCase> Cases() {
  std::vector<OpCase> cases;
  OpAttrs none;
  OpAttrs sgd;
  sgd.lr = 0.05f;
  sgd.momentum = 0.9f;
  sgd.weight_decay = 1e-4f;
  OpAttrs adam;
  adam.lr = 1e-3f;
  adam.weight_decay = 0.01f;
  adam.bias_correction1 = AdamBiasCorrection(0.9f, 3);
  adam.bias_correction2 = AdamBiasCorrection(0.999f, 3);
  auto add = [&](std::string name, Op op, OpAttrs attrs, std::vector<Tensor> in) {
    cases.push_back({std::move(name), op, attrs, std::move(in)});
  };
  add("matmul", Op::kMatmul, none, {RandomTensor({70, 130}, 1), RandomTensor({130, 67}, 2)});
  add("matmul_grad_a", Op::kMatmulGradA, none, {RandomTensor({70, 67}, 3), RandomTensor({130, 67}, 4)});
  add("matmul_grad_b", Op::kMatmulGradB, none, {RandomTensor({70, 130}, 5), RandomTensor({70, 67}, 6)});
  Tensor x2 = RandomTensor({70, 66}, 7);
  Sprinkle(x2, 8);
  add("bias_add_2d", Op::kBiasAdd, none, {x2, RandomTensor({66}, 9)});
  add("bias_add_4d", Op::kBiasAdd, none, {RandomTensor({3, 5, 9, 7}, 10), RandomTensor({5}, 11)});
  add("bias_grad_2d", Op::kBiasGrad, none, {RandomTensor({70, 130}, 12)});
  add("bias_grad_4d", Op::kBiasGrad, none, {RandomTensor({3, 70, 5, 6}, 13)});
  Tensor r = RandomTensor({3, 5, 70}, 14);
  Sprinkle(r, 15);
  add("relu", Op::kRelu, none, {r});
  add("relu_grad", Op::kReluGrad, none, {r, RandomTensor({3, 5, 70}, 16)});
  // The transformer's elementwise operators (residual adds, the GELU and its gradient).
  add("add", Op::kAdd, none, {r, RandomTensor({3, 5, 70}, 61)});
  add("gelu", Op::kGelu, none, {r});
  add("gelu_grad", Op::kGeluGrad, none, {r, RandomTensor({3, 5, 70}, 62)});
  // Gradient clipping's coefficient, over sums of squares on both sides of max_norm^2 (and the
  // special values: sqrt of a negative or NaN is NaN).
  OpAttrs clip;
  clip.max_norm = 0.5f;
  Tensor sums = RandomTensor({70, 66}, 64, 0.0f, 1.0f);
  Sprinkle(sums, 65);
  add("clip_coefficient", Op::kClipCoefficient, clip, {sums});
  // Its sum of squares and scaling are matrix products of a gradient's views.
  const Tensor grad = RandomTensor({1, 4000}, 66);
  Tensor grad_column = grad;
  EXPECT_TRUE(grad_column.Reshape({4000, 1}).ok());
  add("clip_squares", Op::kMatmul, none, {grad, grad_column});
  add("clip_scale", Op::kMatmul, none, {grad_column, RandomTensor({1, 1}, 67, 0.0f, 1.0f)});
  add("transpose_heads", Op::kTransposeHeads, none, {RandomTensor({2, 3, 40, 67}, 63)});
  OpAttrs layer_norm;
  layer_norm.eps = 1e-5f;
  add("layer_norm", Op::kLayerNorm, layer_norm,
      {RandomTensor({3, 50, 70}, 70), RandomTensor({70}, 71), RandomTensor({70}, 72)});
  {
    // The gradient reads the forward's Mean and Rstd: computed here by the reference.
    const Tensor x = RandomTensor({3, 50, 70}, 73), gamma = RandomTensor({70}, 74), beta = RandomTensor({70}, 75);
    std::unique_ptr<Backend> ref = MakeReferenceBackend();
    Result<std::vector<Tensor>> fwd = testing::RunOp(*ref, Op::kLayerNorm, layer_norm, {&x, &gamma, &beta});
    if (fwd.ok()) {
      add("layer_norm_grad", Op::kLayerNormGrad, layer_norm,
          {x, gamma, (*fwd)[1], (*fwd)[2], RandomTensor({3, 50, 70}, 76)});
    } else {
      ADD_FAILURE() << fwd.status().ToString();
    }
  }
  // Attention's batched products over [B, H] (several matrices per 64-row tile, and tiles that
  // straddle two matrices).
  add("batched_matmul", Op::kBatchedMatmul, none, {RandomTensor({2, 3, 40, 9}, 64), RandomTensor({2, 3, 9, 70}, 65)});
  add("batched_matmul_grad_a", Op::kBatchedMatmulGradA, none,
      {RandomTensor({2, 3, 40, 70}, 66), RandomTensor({2, 3, 9, 70}, 67)});
  add("batched_matmul_grad_b", Op::kBatchedMatmulGradB, none,
      {RandomTensor({2, 3, 40, 9}, 68), RandomTensor({2, 3, 40, 70}, 69)});
  // The masked softmax over [B, H, T, T] (T < 64: several matrices per tile) and over a
  // [G, T, T] whose T = 70 spans two block columns; its gradient reads the forward's P.
  OpAttrs scaled;
  scaled.scale = 0.35355338f;
  Tensor scores = RandomTensor({2, 3, 40, 40}, 80, -4.0f, 4.0f);
  Sprinkle(scores, 81);  // specials above the diagonal are never read; below they poison their row
  add("causal_softmax", Op::kCausalSoftmax, scaled, {scores});
  add("causal_softmax_wide", Op::kCausalSoftmax, scaled, {RandomTensor({2, 70, 70}, 82, -4.0f, 4.0f)});
  {
    const Tensor s = RandomTensor({2, 3, 40, 40}, 83, -4.0f, 4.0f);
    std::unique_ptr<Backend> ref = MakeReferenceBackend();
    Result<std::vector<Tensor>> fwd = testing::RunOp(*ref, Op::kCausalSoftmax, scaled, {&s});
    if (fwd.ok()) {
      add("causal_softmax_grad", Op::kCausalSoftmaxGrad, scaled, {(*fwd)[0], RandomTensor({2, 3, 40, 40}, 84)});
    } else {
      ADD_FAILURE() << fwd.status().ToString();
    }
  }
  // Token embeddings: a 70-row table (two block rows) read at ids [3, 50], and the scatter-add
  // gradient back into it.
  Tensor ids = RandomLabels(150, 70, 85);
  EXPECT_TRUE(ids.Reshape({3, 50}).ok());
  add("embedding", Op::kEmbedding, none, {RandomTensor({70, 67}, 86), ids});
  OpAttrs table;
  table.num_embeddings = 70;
  add("embedding_grad", Op::kEmbeddingGrad, table, {ids, RandomTensor({3, 50, 67}, 87)});
  add("conv", Op::kConv2d3x3, none, {RandomTensor({2, 3, 9, 67}, 17), RandomTensor({5, 3, 3, 3}, 18)});
  add("conv_small", Op::kConv2d3x3, none, {RandomTensor({4, 2, 7, 5}, 19), RandomTensor({9, 2, 3, 3}, 20)});
  add("conv_grad_input", Op::kConv2d3x3GradInput, none, {RandomTensor({2, 5, 9, 67}, 21), RandomTensor({5, 3, 3, 3}, 22)});
  add("conv_grad_weight", Op::kConv2d3x3GradWeight, none, {RandomTensor({3, 4, 7, 6}, 23), RandomTensor({3, 30, 7, 6}, 24)});
  Tensor p = RandomTensor({2, 3, 9, 133}, 25);
  Sprinkle(p, 26);
  add("max_pool", Op::kMaxPool2x2, none, {p});
  OpAttrs pool;
  pool.pool_input_h = 9;
  pool.pool_input_w = 133;
  add("max_pool_grad", Op::kMaxPool2x2Grad, pool, {PoolArgs({2, 3, 4, 66}, 27), RandomTensor({2, 3, 4, 66}, 28)});
  add("softmax_xent", Op::kSoftmaxCrossEntropy, none, {RandomTensor({70, 13}, 29, -4.0f, 4.0f), RandomLabels(70, 13, 30)});
  add("softmax_xent_wide", Op::kSoftmaxCrossEntropy, none, {RandomTensor({5, 140}, 31, -4.0f, 4.0f), RandomLabels(5, 140, 32)});
  add("softmax_xent_grad", Op::kSoftmaxCrossEntropyGrad, none, {RandomTensor({70, 13}, 33, 0.0f, 1.0f), RandomLabels(70, 13, 34)});
  add("sgd", Op::kSgdMomentum, sgd, {RandomTensor({70, 65}, 35), RandomTensor({70, 65}, 36), RandomTensor({70, 65}, 37)});
  add("adamw", Op::kAdamW, adam,
      {RandomTensor({130}, 38), RandomTensor({130}, 39), RandomTensor({130}, 40), RandomTensor({130}, 41, 0.0f, 1.0f)});
  return cases;
}

// The rectangles of a partition of a rows x cols view into tiles of tr x tc.
std::vector<GridRect> Partition(std::int64_t rows, std::int64_t cols, std::int64_t tr, std::int64_t tc) {
  std::vector<GridRect> tiles;
  for (std::int64_t r = 0; r < rows; r += tr) {
    for (std::int64_t c = 0; c < cols; c += tc) tiles.push_back({r, std::min(r + tr, rows), c, std::min(c + tc, cols)});
  }
  return tiles;
}


// The reads a tile declares for input `input`: Reads, or, for an input read at the positions an
// index input names, ReadsGiven over the index tensor, each of whose runs lies inside Reads' bound.
std::vector<FlatRun> Declared(const TileKernel& kernel, const GridRect& tile, int input, std::int64_t lo,
                              std::int64_t hi, const std::vector<Tensor>& inputs) {
  const std::vector<FlatRun> bound = kernel.Reads(tile, input, lo, hi);
  const int index = kernel.IndexInputOf(input);
  if (index < 0) return bound;
  const TensorSource ids(inputs[static_cast<std::size_t>(index)]);
  Result<std::vector<FlatRun>> exact = kernel.ReadsGiven(tile, input, lo, hi, ids);
  EXPECT_TRUE(exact.ok()) << exact.status().ToString();
  if (!exact.ok()) return bound;
  std::vector<bool> in_bound(static_cast<std::size_t>(NumElements(kernel.input_shapes()[static_cast<std::size_t>(input)])));
  for (const FlatRun& r : bound) {
    for (std::int64_t e = r.begin; e < r.begin + r.length; ++e) in_bound[static_cast<std::size_t>(e)] = true;
  }
  for (const FlatRun& r : *exact) {
    for (std::int64_t e = r.begin; e < r.begin + r.length; ++e) EXPECT_TRUE(in_bound[static_cast<std::size_t>(e)]);
  }
  return *exact;
}

TEST(TileKernelTest, EveryOperatorTileByTileAndUnitByUnitGivesTheReferenceBits) {
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  std::mt19937_64 rng(7);
  for (OpCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::vector<const Tensor*> in;
    std::vector<Shape> shapes;
    for (const Tensor& t : c.inputs) {
      in.push_back(&t);
      shapes.push_back(t.shape());
    }
    Result<std::vector<Tensor>> want = testing::RunOp(*reference, c.op, c.attrs, in);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    std::vector<CheckedSource> sources;
    sources.reserve(c.inputs.size());
    for (const Tensor& t : c.inputs) sources.emplace_back(t);
    std::vector<const TileSource*> src;
    for (const CheckedSource& s : sources) src.push_back(&s);
    for (int o = 0; o < NumOutputs(c.op); ++o) {
      SCOPED_TRACE("output " + std::to_string(o));
      Result<TileKernel> kernel = TileKernel::Create(c.op, c.attrs, shapes, o);
      ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
      const Tensor& expected = (*want)[static_cast<std::size_t>(o)];
      ASSERT_EQ(kernel->output_shape(), expected.shape());
      const BlockGrid grid = kernel->grid();
      std::vector<std::vector<GridRect>> tilings;
      std::vector<GridRect> blocks;
      for (std::uint64_t b = 0; b < grid.block_count(); ++b) blocks.push_back(grid.BlockRect(b));
      tilings.push_back(blocks);
      tilings.push_back(Partition(grid.rows(), grid.cols(), 3, 5));
      tilings.push_back(Partition(grid.rows(), grid.cols(), 1, grid.cols()));
      for (const std::vector<GridRect>& tiling : tilings) {
        Tensor got(expected.shape());
        for (const GridRect& tile : tiling) {
          // Random cut points along the chain, including empty ranges.
          std::vector<std::int64_t> cuts = {0, kernel->units()};
          for (int i = 0; i < 3 && kernel->units() > 0; ++i) {
            cuts.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(kernel->units() + 1)));
          }
          std::sort(cuts.begin(), cuts.end());
          std::vector<float> state = kernel->Init(tile);
          ASSERT_EQ(static_cast<std::int64_t>(state.size()), kernel->StateSize(tile));
          for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
            for (std::size_t k = 0; k < sources.size(); ++k) {
              sources[k].Allow(Declared(*kernel, tile, static_cast<int>(k), cuts[i], cuts[i + 1], c.inputs));
            }
            ASSERT_TRUE(kernel->Advance(tile, src, cuts[i], cuts[i + 1], state).ok());
            EXPECT_GT(kernel->Work(tile, cuts[i], cuts[i + 1]) + 1, 0);
          }
          // The finish reads are declared with the last range.
          const std::int64_t last_lo = cuts.size() >= 2 ? cuts[cuts.size() - 2] : 0;
          for (std::size_t k = 0; k < sources.size(); ++k) {
            sources[k].Allow(Declared(*kernel, tile, static_cast<int>(k), last_lo, kernel->units(), c.inputs));
          }
          Result<std::vector<float>> values = kernel->Finish(tile, src, state);
          ASSERT_TRUE(values.ok()) << values.status().ToString();
          ASSERT_EQ(static_cast<std::int64_t>(values->size()), tile.elements());
          std::size_t i = 0;
          for (std::int64_t r = tile.row_begin; r < tile.row_end; ++r) {
            for (std::int64_t col = tile.col_begin; col < tile.col_end; ++col) got.data()[r * grid.cols() + col] = (*values)[i++];
          }
        }
        for (std::int64_t e = 0; e < expected.numel(); ++e) {
          ASSERT_EQ(Bits(got.data()[e]), Bits(expected.data()[e])) << "element " << e;
        }
      }
      for (const CheckedSource& s : sources) EXPECT_EQ(s.violations(), 0) << "a read outside the declared runs";
    }
  }
}

TEST(TileKernelTest, RefusesWhatBreaksTheContract) {
  OpAttrs none;
  EXPECT_FALSE(TileKernel::Create(Op::kMatmul, none, {{3, 4}, {5, 2}}, 0).ok());
  EXPECT_FALSE(TileKernel::Create(Op::kMatmul, none, {{3, 4}, {4, 2}}, 1).ok());
  EXPECT_FALSE(TileKernel::Create(Op::kConv2d3x3, none, {{1, 2, 4, 4}, {3, 2, 2, 3}}, 0).ok());
  EXPECT_FALSE(TileKernel::Create(static_cast<Op>(kNumOps), none, {{1}}, 0).ok());
  Result<TileKernel> k = TileKernel::Create(Op::kMatmul, none, {{3, 4}, {4, 2}}, 0);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->units(), 4);
  const Tensor a = RandomTensor({3, 4}, 1), b = RandomTensor({4, 2}, 2);
  TensorSource sa(a), sb(b);
  const TileSource* src[] = {&sa, &sb};
  std::vector<float> state = k->Init({0, 3, 0, 2});
  EXPECT_FALSE(k->Advance({0, 4, 0, 2}, src, 0, 1, state).ok());  // outside the output
  EXPECT_FALSE(k->Advance({0, 3, 0, 2}, src, 2, 5, state).ok());  // beyond the chain
  EXPECT_FALSE(k->Advance({0, 3, 0, 2}, src, 3, 2, state).ok());
  std::vector<float> short_state(2);
  EXPECT_FALSE(k->Advance({0, 3, 0, 2}, src, 0, 1, short_state).ok());
  EXPECT_TRUE(k->Reads({0, 4, 0, 2}, 0, 0, 1).empty());
  // An index input out of range is refused where the tile reads it.
  Tensor labels = RandomLabels(4, 3, 3);
  labels.data()[2] = 3.0f;
  const Tensor z = RandomTensor({4, 3}, 4);
  Result<TileKernel> loss = TileKernel::Create(Op::kSoftmaxCrossEntropy, none, {{4, 3}, {4}}, 0);
  ASSERT_TRUE(loss.ok());
  TensorSource sz(z), sl(labels);
  const TileSource* lsrc[] = {&sz, &sl};
  std::vector<float> total = loss->Init({0, 1, 0, 1});
  EXPECT_TRUE(loss->Advance({0, 1, 0, 1}, lsrc, 0, 2, total).ok());
  EXPECT_FALSE(loss->Advance({0, 1, 0, 1}, lsrc, 2, 3, total).ok());
  // A token id outside the table is refused where the reads are listed and where it is read.
  Tensor bad_ids = RandomLabels(4, 5, 5);
  bad_ids.data()[1] = 5.0f;
  const Tensor w = RandomTensor({5, 3}, 6);
  Result<TileKernel> gather = TileKernel::Create(Op::kEmbedding, none, {{5, 3}, {4}}, 0);
  ASSERT_TRUE(gather.ok());
  TensorSource sw(w), sids(bad_ids);
  const TileSource* gsrc[] = {&sw, &sids};
  EXPECT_EQ(gather->IndexInputOf(0), 1);
  EXPECT_EQ(gather->IndexInputOf(1), -1);
  EXPECT_FALSE(gather->ReadsGiven({0, 4, 0, 3}, 0, 0, 0, sids).ok());
  EXPECT_TRUE(gather->ReadsGiven({0, 1, 0, 3}, 0, 0, 0, sids).ok());
  EXPECT_FALSE(gather->Compute({0, 4, 0, 3}, gsrc).ok());
  EXPECT_FALSE(TileKernel::Create(Op::kEmbeddingGrad, none, {{4}, {4, 3}}, 0).ok()) << "num_embeddings unset";
  EXPECT_FALSE(TileKernel::Create(Op::kCausalSoftmax, none, {{2, 3, 4}}, 0).ok()) << "non-square scores";
}

}  // namespace
}  // namespace polnode::kernels
