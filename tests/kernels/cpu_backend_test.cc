// The fast CPU backend against the scalar reference: identical bits for every operator, on
// ragged and larger shapes, at every instruction-set level this machine has and at 1, 2, 3 and 7
// threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gpu/conformance.h"
#include "kernels_test_util.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/cpu_backend.h"

namespace polnode::kernels {
namespace {

using testing::RandomLabels;
using testing::RandomTensor;
using testing::RunOp;

// Random values with the awkward ones mixed in: +-0, subnormals, and (where `with_nan`) NaN and
// infinities. Products skip NaN: its payload is not part of op.h's contract.
Tensor AwkwardTensor(const Shape& shape, std::uint32_t seed, bool with_nan) {
  Tensor t = RandomTensor(shape, seed);
  std::mt19937 gen(seed ^ 0x9E3779B9u);
  for (float& v : t.values()) {
    switch (gen() % 32) {
      case 0: v = 0.0f; break;
      case 1: v = -0.0f; break;
      case 2: v = 1e-39f * (v < 0 ? -1.0f : 1.0f); break;
      case 3: if (with_nan) v = std::numeric_limits<float>::quiet_NaN(); break;
      case 4: if (with_nan) v = -std::numeric_limits<float>::infinity(); break;
      default: break;
    }
  }
  return t;
}

struct Config {
  CpuIsa isa;
  int threads;
};

std::string ConfigName(const ::testing::TestParamInfo<Config>& info) {
  return std::string(CpuIsaName(info.param.isa)) + "_threads" + std::to_string(info.param.threads);
}

std::vector<Config> AllConfigs() {
  std::vector<Config> configs;
  for (CpuIsa isa : AvailableCpuIsas()) {
    for (int threads : {1, 2, 3, 7}) configs.push_back({isa, threads});
  }
  return configs;
}

class CpuBackendTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    auto backend = MakeCpuBackendForIsa(GetParam().isa, GetParam().threads);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    fast_ = std::move(backend).value();
  }

  // The reference outputs for (op, inputs, attrs), computed once per test program: every
  // (level, threads) configuration compares against the same reference run, which keeps the
  // slow scalar reference out of the 12-fold repetition.
  const Result<std::vector<Tensor>>& ReferenceOutputs(Op op, const std::vector<const Tensor*>& inputs,
                                                      const OpAttrs& attrs) {
    std::string key(OpName(op));
    std::uint64_t hash = 1469598103934665603ull;  // FNV-1a over the input bits and the attrs
    const auto mix = [&](const void* data, std::size_t bytes) {
      for (std::size_t i = 0; i < bytes; ++i) {
        hash = (hash ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
      }
    };
    for (const Tensor* t : inputs) {
      key += ShapeToString(t->shape());
      mix(t->data(), static_cast<std::size_t>(t->numel()) * sizeof(float));
    }
    for (float f : {attrs.lr, attrs.momentum, attrs.weight_decay, attrs.beta1, attrs.beta2,
                    attrs.eps, attrs.bias_correction1, attrs.bias_correction2, attrs.scale}) {
      mix(&f, sizeof f);
    }
    mix(&attrs.pool_input_h, sizeof attrs.pool_input_h);
    mix(&attrs.pool_input_w, sizeof attrs.pool_input_w);
    mix(&attrs.num_embeddings, sizeof attrs.num_embeddings);
    key += std::to_string(hash);
    static std::map<std::string, Result<std::vector<Tensor>>> cache;
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, RunOp(*reference_, op, attrs, inputs)).first;
    return it->second;
  }

  // Runs `op` on both backends and asserts every output has the same bits; with kAnyNan, a NaN
  // matches any NaN (op.h leaves NaN payloads and signs open for the transformer operators: an
  // operation with several NaN operands returns one of them, and which one differs between fma
  // instructions and libm's fmaf, and with the operand order a compiler picks for a commutative
  // op).
  enum class Nans { kSameBits, kAnyNan };
  void ExpectSameBits(Op op, const std::vector<const Tensor*>& inputs, const OpAttrs& attrs = {},
                      Nans nans = Nans::kSameBits) {
    const Result<std::vector<Tensor>>& want = ReferenceOutputs(op, inputs, attrs);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    auto got = RunOp(*fast_, op, attrs, inputs);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (std::size_t o = 0; o < want->size(); ++o) {
      const Tensor& w = (*want)[o];
      const Tensor& g = (*got)[o];
      ASSERT_EQ(g.shape(), w.shape()) << OpName(op) << " output " << o;
      if (g.BitwiseEqual(w)) continue;
      for (std::int64_t e = 0; e < w.numel(); ++e) {
        if (nans == Nans::kAnyNan && std::isnan(g.data()[e]) && std::isnan(w.data()[e])) continue;
        ASSERT_EQ(std::memcmp(g.data() + e, w.data() + e, sizeof(float)), 0)
            << OpName(op) << " on " << ShapeToString(inputs[0]->shape()) << ", output " << o
            << " element " << e << ": fast " << g.data()[e] << " vs reference " << w.data()[e];
      }
    }
  }

  std::unique_ptr<Backend> reference_ = MakeReferenceBackend();
  std::unique_ptr<Backend> fast_;
};

TEST_P(CpuBackendTest, NameReportsTheLevel) {
  EXPECT_EQ(fast_->name(), "cpu-" + std::string(CpuIsaName(GetParam().isa)));
}

TEST_P(CpuBackendTest, MatmulAndGradients) {
  // Ragged sizes around the tile sizes, k beyond one cache block (256), n beyond one column
  // block (3072), m beyond one row block (192).
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {1, 1, 1}, {7, 17, 129}, {129, 7, 17}, {17, 129, 7}, {13, 0, 5},
      {33, 300, 65}, {3, 5, 3100}, {300, 513, 257}};
  std::uint32_t seed = 1;
  for (const auto& [m, k, n] : shapes) {
    const Tensor a = AwkwardTensor({m, k}, seed++, false), b = AwkwardTensor({k, n}, seed++, false);
    const Tensor dc = AwkwardTensor({m, n}, seed++, false);
    ExpectSameBits(Op::kMatmul, {&a, &b});
    ExpectSameBits(Op::kMatmulGradA, {&dc, &b});
    ExpectSameBits(Op::kMatmulGradB, {&a, &dc});
  }
}

TEST_P(CpuBackendTest, BiasAddAndGrad) {
  std::uint32_t seed = 100;
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 129}, Shape{300, 1000}, Shape{3, 17, 5, 7},
                             Shape{2, 5, 1, 33}, Shape{8, 16, 28, 28}}) {
    const Tensor x = AwkwardTensor(shape, seed++, true), b = AwkwardTensor({shape[1]}, seed++, true);
    ExpectSameBits(Op::kBiasAdd, {&x, &b});
    ExpectSameBits(Op::kBiasGrad, {&x});
  }
}

TEST_P(CpuBackendTest, ReluAndGrad) {
  std::uint32_t seed = 200;
  for (const Shape& shape : {Shape{1}, Shape{17}, Shape{7, 129}, Shape{70001}}) {
    const Tensor x = AwkwardTensor(shape, seed++, true), dy = AwkwardTensor(shape, seed++, true);
    ExpectSameBits(Op::kRelu, {&x});
    ExpectSameBits(Op::kReluGrad, {&x, &dy});
  }
}

TEST_P(CpuBackendTest, Conv2d3x3AndGradients) {
  struct ConvShape {
    std::int64_t batch, cin, cout, height, width;
  };
  std::uint32_t seed = 300;
  for (const ConvShape& s : {ConvShape{1, 1, 1, 1, 1}, ConvShape{2, 3, 4, 7, 5},
                             ConvShape{3, 5, 7, 17, 9}, ConvShape{9, 2, 3, 6, 6},
                             ConvShape{4, 16, 8, 14, 14},
                             // Rows of two registers and a tail at every level; one image, its
                             // rows split among the threads.
                             ConvShape{2, 3, 5, 11, 40}, ConvShape{1, 2, 6, 33, 40},
                             // dY channels-last in register transposes: 20 channels (a partial
                             // group at every level), 35 pixels (two 16-pixel blocks and a tail).
                             ConvShape{2, 2, 20, 5, 7}}) {
    const Tensor x = AwkwardTensor({s.batch, s.cin, s.height, s.width}, seed++, false);
    const Tensor w = AwkwardTensor({s.cout, s.cin, 3, 3}, seed++, false);
    const Tensor dy = AwkwardTensor({s.batch, s.cout, s.height, s.width}, seed++, false);
    ExpectSameBits(Op::kConv2d3x3, {&x, &w});
    ExpectSameBits(Op::kConv2d3x3GradInput, {&dy, &w});
    ExpectSameBits(Op::kConv2d3x3GradWeight, {&x, &dy});
  }
}

TEST_P(CpuBackendTest, MaxPoolAndGrad) {
  std::uint32_t seed = 400;
  for (const Shape& shape : {Shape{1, 1, 1, 1}, Shape{2, 3, 7, 9}, Shape{3, 4, 16, 17},
                             Shape{16, 32, 28, 28}, Shape{2, 3, 10, 70}, Shape{1, 2, 7, 67}}) {
    // Values on a coarse grid so that windows have ties (the first tap must win).
    Tensor x = AwkwardTensor(shape, seed++, true);
    for (float& v : x.values()) v = std::isfinite(v) ? std::round(v * 2.0f) : v;
    OpAttrs attrs;
    attrs.pool_input_h = shape[2];
    attrs.pool_input_w = shape[3];
    auto pooled = RunOp(*reference_, Op::kMaxPool2x2, attrs, {&x});
    ASSERT_TRUE(pooled.ok());
    const Tensor dy = AwkwardTensor((*pooled)[0].shape(), seed++, true);
    ExpectSameBits(Op::kMaxPool2x2, {&x}, attrs);
    ExpectSameBits(Op::kMaxPool2x2Grad, {&(*pooled)[1], &dy}, attrs);
  }
}

TEST_P(CpuBackendTest, SoftmaxCrossEntropyAndGrad) {
  std::uint32_t seed = 500;
  for (const auto& [rows, classes] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 1}, {7, 10}, {129, 17}, {3000, 10}}) {
    const Tensor z = RandomTensor({rows, classes}, seed++, -20.0f, 20.0f);
    const Tensor labels = RandomLabels(rows, classes, seed++);
    ExpectSameBits(Op::kSoftmaxCrossEntropy, {&z, &labels});
    auto fwd = RunOp(*reference_, Op::kSoftmaxCrossEntropy, {}, {&z, &labels});
    ASSERT_TRUE(fwd.ok());
    ExpectSameBits(Op::kSoftmaxCrossEntropyGrad, {&(*fwd)[1], &labels});
  }
}

TEST_P(CpuBackendTest, Optimizers) {
  OpAttrs attrs;
  attrs.lr = 0.01f;
  attrs.momentum = 0.9f;
  attrs.weight_decay = 5e-4f;
  attrs.bias_correction1 = AdamBiasCorrection(attrs.beta1, 3);
  attrs.bias_correction2 = AdamBiasCorrection(attrs.beta2, 3);
  std::uint32_t seed = 600;
  for (std::int64_t size : {1, 17, 129, 70001}) {
    const Tensor w = AwkwardTensor({size}, seed++, true), g = AwkwardTensor({size}, seed++, true);
    const Tensor m = AwkwardTensor({size}, seed++, true);
    const Tensor v = RandomTensor({size}, seed++, 0.0f, 1.0f);
    ExpectSameBits(Op::kSgdMomentum, {&w, &g, &m}, attrs);
    ExpectSameBits(Op::kAdamW, {&w, &g, &m, &v}, attrs);
  }
}

TEST_P(CpuBackendTest, OptimizersInPlaceMatchOutOfPlace) {
  OpAttrs attrs;
  attrs.lr = 0.01f;
  attrs.weight_decay = 0.1f;
  const Tensor w0 = RandomTensor({1000}, 700), g = RandomTensor({1000}, 701);
  const Tensor m0 = RandomTensor({1000}, 702), v0 = RandomTensor({1000}, 703, 0.0f, 1.0f);
  auto want = RunOp(*reference_, Op::kAdamW, attrs, {&w0, &g, &m0, &v0});
  ASSERT_TRUE(want.ok());
  Tensor w = w0, m = m0, v = v0;
  std::vector<const Tensor*> inputs = {&w, &g, &m, &v};
  std::vector<Tensor*> outputs = {&w, &m, &v};
  ASSERT_TRUE(fast_->Run(Op::kAdamW, attrs, inputs, outputs).ok());
  EXPECT_TRUE(w.BitwiseEqual((*want)[0]));
  EXPECT_TRUE(m.BitwiseEqual((*want)[1]));
  EXPECT_TRUE(v.BitwiseEqual((*want)[2]));
}

TEST_P(CpuBackendTest, AddAndTransposeHeads) {
  std::uint32_t seed = 800;
  for (const Shape& shape :
       {Shape{1, 1, 1, 1}, Shape{2, 3, 5, 7}, Shape{3, 17, 4, 9}, Shape{12, 64, 4, 32}}) {
    const Tensor a = AwkwardTensor(shape, seed++, true), b = AwkwardTensor(shape, seed++, true);
    ExpectSameBits(Op::kAdd, {&a, &b}, {}, Nans::kAnyNan);  // NaN + NaN: either payload
    ExpectSameBits(Op::kTransposeHeads, {&a});
  }
}

TEST_P(CpuBackendTest, AddInPlaceMatchesOutOfPlace) {
  const Tensor a0 = RandomTensor({1001}, 810), b0 = RandomTensor({1001}, 811);
  auto want = RunOp(*reference_, Op::kAdd, {}, {&a0, &b0});
  ASSERT_TRUE(want.ok());
  for (int target : {0, 1}) {
    Tensor a = a0, b = b0;
    std::vector<const Tensor*> inputs = {&a, &b};
    std::vector<Tensor*> outputs = {target == 0 ? &a : &b};
    ASSERT_TRUE(fast_->Run(Op::kAdd, {}, inputs, outputs).ok());
    EXPECT_TRUE(outputs[0]->BitwiseEqual((*want)[0])) << "in place over input " << target;
  }
}

// GELU runs det::Tanh (and through it det::Exp) lane by lane: a sweep through every region of both
// formulas (tiny, polynomial, exponential, saturated, x^3 overflowing), every float of the
// neighbourhoods where the formulas switch, special values, and ragged lengths for the tails.
TEST_P(CpuBackendTest, GeluAndGradOverSweeps) {
  std::vector<float> values;
  for (float x = -30.0f; x <= 30.0f; x += 0.00390625f) values.push_back(x);  // 2^-8 steps
  // Where tanh's argument crosses 2^-12, 1 and 10: inner = beta * (x + kappa x^3) ~ 0.8 x.
  for (const float centre : {3.06e-4f, 1.1f, 1.22f, 6.2f, 9.0f, 11.8f}) {
    float x = centre;
    for (int i = 0; i < 3000; ++i) x = std::nextafter(x, 0.0f);
    for (int i = 0; i < 6000; ++i) {
      values.push_back(x);
      values.push_back(-x);
      x = std::nextafter(x, 100.0f);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (const float special : {0.0f, -0.0f, 1e-40f, -1e-40f, 1e-30f, 1e15f, -1e15f, 1e20f, -1e20f,
                              3e38f, -3e38f, inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
    values.push_back(special);
  }
  for (std::int64_t length : {std::int64_t{1}, std::int64_t{7}, std::int64_t{33},
                              static_cast<std::int64_t>(values.size())}) {
    auto x = Tensor::FromValues({length}, std::vector<float>(values.end() - length, values.end()));
    ASSERT_TRUE(x.ok());
    const Tensor dy = AwkwardTensor({length}, static_cast<std::uint32_t>(900 + length), true);
    ExpectSameBits(Op::kGelu, {&*x});
    ExpectSameBits(Op::kGeluGrad, {&*x, &dy}, {}, Nans::kAnyNan);
  }
}

TEST_P(CpuBackendTest, LayerNormAndGrad) {
  OpAttrs attrs;
  attrs.eps = 1e-5f;
  std::uint32_t seed = 1000;
  // Rows below, at and beyond the interleaved block of 8, ragged widths, rank 3, and GPT's size.
  for (const Shape& shape : {Shape{1, 1}, Shape{3, 7}, Shape{8, 17}, Shape{13, 129},
                             Shape{2, 9, 33}, Shape{768, 128}, Shape{1000, 5}}) {
    for (bool with_nan : {false, true}) {
      Tensor x = AwkwardTensor(shape, seed++, with_nan);
      if (shape[0] > 2) {  // a constant row: var = 0, rstd = 1/sqrt(eps)
        std::fill(x.data() + shape.back(), x.data() + 2 * shape.back(), 0.375f);
      }
      const Tensor gamma = AwkwardTensor({shape.back()}, seed++, false);
      const Tensor beta = AwkwardTensor({shape.back()}, seed++, false);
      const Tensor dy = AwkwardTensor(shape, seed++, with_nan);
      const Nans nans = with_nan ? Nans::kAnyNan : Nans::kSameBits;
      ExpectSameBits(Op::kLayerNorm, {&x, &gamma, &beta}, attrs, nans);
      auto fwd = RunOp(*reference_, Op::kLayerNorm, attrs, {&x, &gamma, &beta});
      ASSERT_TRUE(fwd.ok());
      ExpectSameBits(Op::kLayerNormGrad, {&x, &gamma, &(*fwd)[1], &(*fwd)[2], &dy}, attrs, nans);
    }
  }
}

TEST_P(CpuBackendTest, CausalSoftmaxAndGrad) {
  OpAttrs scaled;
  scaled.scale = 0.125f;
  OpAttrs odd;
  odd.scale = 0.176776692f;
  std::uint32_t seed = 1100;
  // T = 1, T below, at and beyond the vector widths (8, 16), the GPT configuration's 64.
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 7}, Shape{2, 3, 16, 16}, Shape{3, 17, 17},
                             Shape{1, 2, 33, 33}, Shape{12, 4, 64, 64}}) {
    for (const OpAttrs& attrs : {OpAttrs{}, scaled, odd}) {
      Tensor s = RandomTensor(shape, seed++, -30.0f, 30.0f);
      const Tensor awkward = AwkwardTensor(shape, seed++, true);
      // Some rows with NaN/-inf/zeros, and a far-off block where det::Exp's results are subnormal.
      for (std::int64_t e = 0; e < s.numel(); e += 5) s.data()[e] = awkward.data()[e];
      for (std::int64_t e = 1; e < s.numel(); e += 11)
        s.data()[e] = -95.0f + static_cast<float>(e % 7);
      ExpectSameBits(Op::kCausalSoftmax, {&s}, attrs, Nans::kAnyNan);
      auto fwd = RunOp(*reference_, Op::kCausalSoftmax, attrs, {&s});
      ASSERT_TRUE(fwd.ok());
      const Tensor dp = AwkwardTensor(shape, seed++, true);
      ExpectSameBits(Op::kCausalSoftmaxGrad, {&(*fwd)[0], &dp}, attrs, Nans::kAnyNan);
    }
  }
}

TEST_P(CpuBackendTest, BatchedMatmulAndGradients) {
  struct Dims {
    Shape batch;
    std::int64_t m, k, n;
  };
  std::uint32_t seed = 1200;
  // Fewer matrices than threads (the pool goes to each GEMM), more (matrices spread over threads),
  // ragged sizes, an empty chain, rank 3 and 5, and the GPT configuration's attention products.
  for (const Dims& d :
       {Dims{{1}, 1, 1, 1}, Dims{{2, 3}, 7, 17, 5}, Dims{{1, 2}, 65, 33, 63}, Dims{{3}, 4, 0, 5},
        Dims{{12, 4}, 64, 32, 64}, Dims{{2, 2, 2}, 9, 300, 13}}) {
    Shape a = d.batch, b = d.batch, c = d.batch;
    a.insert(a.end(), {d.m, d.k});
    b.insert(b.end(), {d.k, d.n});
    c.insert(c.end(), {d.m, d.n});
    const Tensor ta = AwkwardTensor(a, seed++, false), tb = AwkwardTensor(b, seed++, false);
    const Tensor tc = AwkwardTensor(c, seed++, false);
    ExpectSameBits(Op::kBatchedMatmul, {&ta, &tb});
    ExpectSameBits(Op::kBatchedMatmulGradA, {&tc, &tb});
    ExpectSameBits(Op::kBatchedMatmulGradB, {&ta, &tc});
  }
}

TEST_P(CpuBackendTest, EmbeddingAndGrad) {
  struct Dims {
    std::int64_t vocab, channels;
    Shape ids;
  };
  std::uint32_t seed = 1300;
  // Tables with fewer rows than threads, many repeats per row, rows no id names, GPT's sizes.
  for (const Dims& d : {Dims{1, 1, {1}}, Dims{3, 17, {40}}, Dims{5, 33, {2, 9}},
                        Dims{65, 128, {12, 64}}, Dims{1000, 7, {64}}}) {
    const Tensor w = AwkwardTensor({d.vocab, d.channels}, seed++, true);
    const Tensor ids = RandomLabels(NumElements(d.ids), d.vocab, seed++);
    Tensor shaped_ids = ids;
    ASSERT_TRUE(shaped_ids.Reshape(d.ids).ok());
    Shape dy_shape = d.ids;
    dy_shape.push_back(d.channels);
    const Tensor dy = AwkwardTensor(dy_shape, seed++, true);
    OpAttrs attrs;
    attrs.num_embeddings = d.vocab;
    ExpectSameBits(Op::kEmbedding, {&w, &shaped_ids});
    ExpectSameBits(Op::kEmbeddingGrad, {&shaped_ids, &dy}, attrs, Nans::kAnyNan);
  }
}

// A fused pair (backend.h Fusion) on buffers gives the reference's bits of its two operators run
// one after the other, for 2-D and 4-D shapes around the register widths (channel groups of 8 and
// 16, planes that are no multiple of 16), also when R is written over X (which the step graph's
// memory plan may do: X is dead after the bias addition).
TEST_P(CpuBackendTest, FusedPairsGiveTheBitsOfTheirTwoOperators) {
  std::uint32_t seed = 900;
  const auto download = [&](const Buffer& buffer) {
    Tensor t(buffer.shape());
    EXPECT_TRUE(fast_->Download(buffer, t.values()).ok());
    return t;
  };
  const auto allocate = [&](const Shape& shape) {
    Result<std::unique_ptr<Buffer>> buffer = fast_->Allocate(shape);
    EXPECT_TRUE(buffer.ok());
    return std::move(buffer).value();
  };
  const auto upload = [&](const Tensor& t) {
    std::unique_ptr<Buffer> buffer = allocate(t.shape());
    EXPECT_TRUE(fast_->Upload(t.values(), *buffer).ok());
    return buffer;
  };
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 129}, Shape{128, 256}, Shape{300, 1000}, Shape{3, 17, 5, 7},
                             Shape{2, 5, 1, 33}, Shape{4, 8, 28, 28}, Shape{3, 16, 14, 14}, Shape{2, 33, 3, 3}}) {
    SCOPED_TRACE(ShapeToString(shape));
    const Tensor x = AwkwardTensor(shape, seed++, true), b = AwkwardTensor({shape[1]}, seed++, true);
    const Tensor dy = AwkwardTensor(shape, seed++, true);
    const Result<std::vector<Tensor>>& y = ReferenceOutputs(Op::kBiasAdd, {&x, &b}, {});
    ASSERT_TRUE(y.ok());
    const Result<std::vector<Tensor>>& r = ReferenceOutputs(Op::kRelu, {&(*y)[0]}, {});
    const Result<std::vector<Tensor>>& dx = ReferenceOutputs(Op::kReluGrad, {&x, &dy}, {});
    ASSERT_TRUE(r.ok() && dx.ok());
    const Result<std::vector<Tensor>>& db = ReferenceOutputs(Op::kBiasGrad, {&(*dx)[0]}, {});
    ASSERT_TRUE(db.ok());

    for (const bool over_x : {false, true}) {
      std::unique_ptr<Buffer> bx = upload(x), bb = upload(b), by = allocate(shape);
      std::unique_ptr<Buffer> br = over_x ? nullptr : allocate(shape);
      const Buffer* in[] = {bx.get(), bb.get()};
      Buffer* out[] = {by.get(), over_x ? bx.get() : br.get()};
      ASSERT_TRUE(fast_->EnqueueFused(Fusion::kBiasAddRelu, in, out).ok());
      EXPECT_TRUE(download(*by).BitwiseEqual((*y)[0]));
      EXPECT_TRUE(download(*out[1]).BitwiseEqual((*r)[0])) << (over_x ? "R over X" : "R apart");
    }
    std::unique_ptr<Buffer> bx = upload(x), bdy = upload(dy), bdx = allocate(shape);
    std::unique_ptr<Buffer> bdb = allocate({shape[1]});
    const Buffer* in[] = {bx.get(), bdy.get()};
    Buffer* out[] = {bdx.get(), bdb.get()};
    ASSERT_TRUE(fast_->EnqueueFused(Fusion::kReluGradBiasGrad, in, out).ok());
    EXPECT_TRUE(download(*bdx).BitwiseEqual((*dx)[0]));
    EXPECT_TRUE(download(*bdb).BitwiseEqual((*db)[0]));
  }
}

TEST_P(CpuBackendTest, RejectsBadShapesWithTheReferenceMessage) {
  const Tensor a({3, 4}), b({5, 6});
  Tensor c({2, 2});
  const Tensor before = c;
  std::vector<const Tensor*> inputs = {&a, &b};
  std::vector<Tensor*> outputs = {&c};
  const Status fast = fast_->Run(Op::kMatmul, {}, inputs, outputs);
  const Status ref = reference_->Run(Op::kMatmul, {}, inputs, outputs);
  EXPECT_EQ(fast.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fast, ref);
  EXPECT_TRUE(c.BitwiseEqual(before));  // outputs untouched on error
}

INSTANTIATE_TEST_SUITE_P(AllLevelsAndThreads, CpuBackendTest, ::testing::ValuesIn(AllConfigs()),
                         ConfigName);

// NaN, infinities, signed zeros, subnormals and +-FLT_MAX through every operator at each level this
// machine has, the NaNs with other payloads than the reference's: the same bits wherever either
// side is not NaN, NaN exactly where the reference has NaN (the conformance variants every GPU
// backend must pass too), so every hash agrees (consensus/pinpoint.h).
class CpuSpecialValuesTest : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(CpuSpecialValuesTest, EveryOperatorAgreesWithTheReferenceUpToNanPayloads) {
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  Result<std::unique_ptr<Backend>> fast = MakeCpuBackendForIsa(GetParam(), 3);
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const std::vector<conformance::CaseResult> results =
        conformance::CheckOp(**fast, *reference, op, 20261127, conformance::CaseSet::kSpecialValues);
    ASSERT_FALSE(results.empty()) << OpName(op);
    for (const conformance::CaseResult& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  }
}

INSTANTIATE_TEST_SUITE_P(AllLevels, CpuSpecialValuesTest, ::testing::ValuesIn(AvailableCpuIsas()),
                         [](const ::testing::TestParamInfo<CpuIsa>& isa_info) {
                           return std::string(CpuIsaName(isa_info.param));
                         });

TEST(CpuIsaTest, EnvironmentVariableLowersTheLevel) {
  const CpuIsa best = AvailableCpuIsas().back();
  for (CpuIsa isa : AvailableCpuIsas()) {
    ASSERT_EQ(setenv("POLNODE_CPU_ISA", std::string(CpuIsaName(isa)).c_str(), 1), 0);
    EXPECT_EQ(SelectedCpuIsa(), isa);
    EXPECT_EQ(MakeCpuBackend(2)->name(), "cpu-" + std::string(CpuIsaName(isa)));
  }
  ASSERT_EQ(setenv("POLNODE_CPU_ISA", "no-such-level", 1), 0);
  EXPECT_EQ(SelectedCpuIsa(), best);
  ASSERT_EQ(unsetenv("POLNODE_CPU_ISA"), 0);
  EXPECT_EQ(SelectedCpuIsa(), best);
}

// Pixel bytes to training floats (the data loader's conversion): every level, every byte value,
// vector bodies and scalar tails alike, have the bits of the expression evaluated in float.
TEST(CpuIsaTest, NormalizedPixelsHaveTheScalarExpressionsBits) {
  std::vector<std::uint8_t> pixels(256 + 37);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>((i * 97 + 13) % 256);
  const std::pair<float, float> normalizations[] = {{0.0f, 1.0f}, {0.2860402f, 0.3530239f}, {-1.5f, 3e-3f},
                                                    {0.5f, 7.0f}};
  for (const auto& [mean, stddev] : normalizations) {
    std::vector<float> want(pixels.size());
    for (std::size_t i = 0; i < pixels.size(); ++i) want[i] = (static_cast<float>(pixels[i]) / 255.0f - mean) / stddev;
    for (CpuIsa isa : AvailableCpuIsas()) {
      // Every length up to three registers and the whole buffer, from an odd start too.
      for (std::size_t start : {std::size_t{0}, std::size_t{5}}) {
        for (std::size_t count :
             {std::size_t{1}, std::size_t{7}, std::size_t{16}, std::size_t{47}, pixels.size() - start}) {
          std::vector<float> got(count, -1.0f);
          NormalizePixels(isa, std::span<const std::uint8_t>(pixels.data() + start, count), mean, stddev, got.data());
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[start + i]))
                << CpuIsaName(isa) << " mean " << mean << " stddev " << stddev << " start " << start
                << " element " << i;
          }
        }
      }
    }
    std::vector<float> selected(pixels.size());
    NormalizePixels(pixels, mean, stddev, selected.data());
    EXPECT_EQ(std::memcmp(selected.data(), want.data(), want.size() * sizeof(float)), 0);
  }
}

TEST(CpuIsaTest, FactoryChecksArguments) {
  EXPECT_EQ(MakeCpuBackendForIsa(CpuIsa::kScalar, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(MakeCpuBackendForIsa(CpuIsa::kScalar, 1).ok());
}

// Host tasks (a checkpoint's hashing and write between steps) run on the backend's own threads:
// every index once, the caller and a worker at the same time.
TEST(BackendHostTasksTest, EveryIndexRunsOnceOnTheBackendsThreads) {
  auto reference = MakeBackend("reference", 1);
  auto cpu = MakeBackend("cpu", 2);
  ASSERT_TRUE(reference.ok() && cpu.ok());
  EXPECT_EQ((*reference)->host_threads(), 1);
  EXPECT_EQ((*cpu)->host_threads(), 2);
  for (Backend* backend : {reference->get(), cpu->get()}) {
    std::vector<std::atomic<int>> runs(1000);
    backend->RunHostTasks(static_cast<std::int64_t>(runs.size()), [&](std::int64_t i) { ++runs[static_cast<std::size_t>(i)]; });
    for (std::size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << backend->name() << " task " << i;
  }
  // Each of two tasks waits until both have started: only two threads running at once finish.
  std::mutex mu;
  std::condition_variable both_started;
  int started = 0;
  (*cpu)->RunHostTasks(2, [&](std::int64_t) {
    std::unique_lock lock(mu);
    ++started;
    both_started.notify_all();
    // Bounded only so that a pool that ran tasks one after another fails instead of hanging.
    EXPECT_TRUE(both_started.wait_for(lock, std::chrono::minutes(2), [&] { return started == 2; }));
  });
  EXPECT_EQ(started, 2);
}

TEST(BackendRegistryTest, MakesBackendsByName) {
  auto reference = MakeBackend("reference", 1);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ((*reference)->name(), "reference");
  auto cpu = MakeBackend("cpu", 3);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->name().rfind("cpu-", 0), 0u);
  EXPECT_EQ(MakeBackend("tpu", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeBackend("cpu", 0).status().code(), StatusCode::kInvalidArgument);
  const std::vector<std::string> compiled = CompiledBackends();
  ASSERT_GE(compiled.size(), 2u);
  EXPECT_EQ(compiled[0], "reference");
  EXPECT_EQ(compiled[1], "cpu");
  for (const char* gpu : {"cuda", "hip"}) {
    if (std::find(compiled.begin(), compiled.end(), gpu) != compiled.end()) continue;
    auto r = MakeBackend(gpu, 1);
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << gpu;
  }
}

}  // namespace
}  // namespace polnode::kernels
