// The GPU kernels' arithmetic on the CPU. kernels/gpu/gpu_elements.h holds what every GPU thread
// computes (per-element chains, the matrix-product tile phases, the bias-gradient chunks); here it
// runs on the host, thread by thread and block by block as gpu_backend.cu launches it, and must
// match the scalar reference bit for bit on every conformance case. CI has no GPU, so this is
// where a wrong index, a reordered chain or a tile-edge slip in the GPU code is caught first;
// gpu_backend_test.cc then checks the real device wherever there is one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/conformance.h"
#include "gpu/gpu_elements.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/validate_run.h"

namespace polnode::kernels {
namespace {

using gpu::i64;

// Emulates MatmulKernel<Micro>: for each block, the staging phase of all its threads, the barrier,
// the step phase of all its threads, the barrier, ... then every thread's store. Barriers separate
// the phases on the GPU, so running each phase for all threads in turn is the same computation.
template <int Micro>
void TwinMatmul(const gpu::MatmulOperands& all) {
  using Tiling = gpu::MatmulTiling<Micro>;
  constexpr int kThreads = gpu::kTileThreads * gpu::kTileThreads;
  std::vector<float> xs(Tiling::kStage);
  std::vector<float> ys(Tiling::kStage);
  struct ThreadChains {
    float v[Micro][Micro];
  };
  std::vector<ThreadChains> acc(kThreads);
  for (i64 block = 0; block < gpu::MatmulBlocks<Micro>(all); ++block) {
    i64 tile = 0;
    const gpu::MatmulOperands m = gpu::MatmulOfBlock<Micro>(all, block, &tile);
    i64 i0 = 0;
    i64 j0 = 0;
    gpu::MatmulTileOrigin<Micro>(m, tile, &i0, &j0);
    for (ThreadChains& a : acc)
      for (auto& row : a.v)
        for (float& v : row) v = 0.0f;
    for (i64 p0 = 0; p0 < m.depth; p0 += Tiling::kDepth) {
      for (int e = 0; e < Tiling::kStageElements; ++e) {
        gpu::MatmulStage<Micro>(m, i0, j0, p0, e, xs.data(), ys.data());
      }
      for (int tid = 0; tid < kThreads; ++tid) {
        gpu::MatmulSteps<Micro>(xs.data(), ys.data(), tid % gpu::kTileThreads, tid / gpu::kTileThreads,
                                gpu::MatmulTileDepth<Micro>(m, p0), acc[static_cast<std::size_t>(tid)].v);
      }
    }
    for (int tid = 0; tid < kThreads; ++tid) {
      gpu::MatmulStore<Micro>(m, i0, j0, tid % gpu::kTileThreads, tid / gpu::kTileThreads,
                              acc[static_cast<std::size_t>(tid)].v);
    }
  }
}

// The product with the tile size `micro` (4, 2 or 1), as the GPU backend dispatches it.
void TwinMatmulWith(int micro, const gpu::MatmulOperands& m) {
  if (micro == 4) {
    TwinMatmul<4>(m);
  } else if (micro == 2) {
    TwinMatmul<2>(m);
  } else {
    TwinMatmul<1>(m);
  }
}

// Emulates BiasGradKernel: per channel, chunks of kSumChunk terms staged, then added in order.
void TwinBiasGrad(const float* dy, float* db, gpu::ChannelLayout l) {
  std::vector<float> chunk(gpu::kSumChunk);
  const i64 total = l.outer * l.inner;
  for (i64 c = 0; c < l.channels; ++c) {
    float acc = 0.0f;
    for (i64 s0 = 0; s0 < total; s0 += gpu::kSumChunk) {
      const int len = static_cast<int>(std::min<i64>(gpu::kSumChunk, total - s0));
      for (int t = 0; t < len; ++t) chunk[static_cast<std::size_t>(t)] = gpu::BiasGradTerm(dy, c, s0 + t, l);
      acc = gpu::SumChain(chunk.data(), len, acc);
    }
    db[c] = acc;
  }
}

// Emulates the conv weight gradient as gpu_backend.cu launches it: per (o, ci) block, each
// stage's terms written, then the nine taps' steps over them (the device overlaps writing the next
// stage with these steps; a barrier orders them, so the values are these); the per-thread kernel
// for more pairs than the by-terms kernel takes.
void TwinConvGradWeight(const float* x, const float* dy, float* dw, gpu::ConvDims d) {
  if (!gpu::ConvGradWeightByTerms(d)) {
    for (i64 e = 0; e < d.co * d.ci * 9; ++e) dw[e] = gpu::ConvGradWeightAt(x, dy, d, e);
    return;
  }
  std::vector<float> stage(static_cast<std::size_t>(gpu::kConvTermFloats));
  const i64 chunks = (d.n * d.h * d.w + gpu::kConvTermChunk - 1) / gpu::kConvTermChunk;
  for (i64 o = 0; o < d.co; ++o) {
    for (i64 ci = 0; ci < d.ci; ++ci) {
      float acc[9] = {};
      for (i64 c = 0; c < chunks; ++c) {
        const int count = gpu::ConvTermCount(d, c);
        ASSERT_GT(count, 0);
        ASSERT_LE(count, gpu::kConvTermChunk);
        for (int k = 0; k < count; ++k) gpu::ConvTermStage(x, dy, d, o, ci, c * gpu::kConvTermChunk, k, stage.data());
        for (int tap = 0; tap < 9; ++tap) acc[tap] = gpu::ConvTermSteps(stage.data(), tap, count, acc[tap]);
      }
      for (int tap = 0; tap < 9; ++tap) dw[(o * d.ci + ci) * 9 + tap] = acc[tap];
    }
  }
}

// A Backend that runs the GPU backend's Run on the host: inputs copied into "device" buffers,
// every kernel emulated over its elements, outputs copied back.
class GpuTwinBackend final : public Backend {
 public:
  // `matmul_micro`: the matrix products' tile size (gpu_elements.h MatmulTiling), or 0 for the one
  // an H100 (132 multiprocessors) would take.
  explicit GpuTwinBackend(int matmul_micro) : matmul_micro_(matmul_micro) {}
  std::string name() const override { return "gpu-twin"; }

  Status Run(Op op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::span<Tensor* const> outputs) override {
    POLNODE_ASSIGN_OR_RETURN(std::vector<Shape> shapes, ValidateRun(op, attrs, inputs, outputs));
    std::vector<std::vector<float>> dev_in;
    for (const Tensor* t : inputs) dev_in.emplace_back(t->values().begin(), t->values().end());
    std::vector<std::vector<float>> dev_out;
    for (const Shape& s : shapes) dev_out.emplace_back(static_cast<std::size_t>(NumElements(s)));
    const auto in = [&](int i) { return dev_in[static_cast<std::size_t>(i)].data(); };
    const auto out = [&](int o) { return dev_out[static_cast<std::size_t>(o)].data(); };
    const i64 n = NumElements(shapes[0]);

    switch (op) {
      case Op::kMatmul:
      case Op::kMatmulGradA:
      case Op::kMatmulGradB:
      case Op::kBatchedMatmul:
      case Op::kBatchedMatmulGradA:
      case Op::kBatchedMatmulGradB: {
        gpu::MatmulOperands m = gpu::MatmulOperandsFor(op, inputs[0]->shape(), inputs[1]->shape());
        m.x = in(0);
        m.y = in(1);
        m.out = out(0);
        TwinMatmulWith(matmul_micro_ != 0 ? matmul_micro_ : gpu::MatmulMicroFor(m, 132), m);
        break;
      }
      case Op::kBiasAdd: {
        const gpu::ChannelLayout l = gpu::ChannelLayoutOf(inputs[0]->shape());
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::BiasAddAt(in(0), in(1), e, l);
        break;
      }
      case Op::kBiasGrad:
        TwinBiasGrad(in(0), out(0), gpu::ChannelLayoutOf(inputs[0]->shape()));
        break;
      case Op::kRelu:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::ReluAt(in(0)[e]);
        break;
      case Op::kReluGrad:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::ReluGradAt(in(0)[e], in(1)[e]);
        break;
      case Op::kConv2d3x3:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::ConvAt(in(0), in(1), gpu::ConvDimsFor(op, inputs[0]->shape(), inputs[1]->shape()), e);
        break;
      case Op::kConv2d3x3GradInput:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::ConvGradInputAt(in(0), in(1), gpu::ConvDimsFor(op, inputs[0]->shape(), inputs[1]->shape()), e);
        break;
      case Op::kConv2d3x3GradWeight:
        TwinConvGradWeight(in(0), in(1), out(0), gpu::ConvDimsFor(op, inputs[0]->shape(), inputs[1]->shape()));
        break;
      case Op::kMaxPool2x2:
        for (i64 e = 0; e < n; ++e) gpu::MaxPoolAt(in(0), out(0), out(1), inputs[0]->dim(2), inputs[0]->dim(3), e);
        break;
      case Op::kMaxPool2x2Grad:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::MaxPoolGradAt(in(0), in(1), shapes[0][2], shapes[0][3], e);
        break;
      case Op::kSoftmaxCrossEntropy: {
        const i64 batch = inputs[0]->dim(0), classes = inputs[0]->dim(1);
        std::vector<float> row_loss(static_cast<std::size_t>(batch));
        for (i64 b = 0; b < batch; ++b) row_loss[static_cast<std::size_t>(b)] = gpu::SoftmaxRow(in(0), in(1), out(1), classes, b);
        out(0)[0] = gpu::MeanLoss(row_loss.data(), batch);
        break;
      }
      case Op::kSoftmaxCrossEntropyGrad:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::SoftmaxGradAt(in(0), in(1), inputs[0]->dim(0), inputs[0]->dim(1), e);
        break;
      case Op::kSgdMomentum:
        for (i64 e = 0; e < n; ++e) {
          gpu::SgdMomentumAt(in(0), in(1), in(2), out(0), out(1), -attrs.lr, attrs.momentum, attrs.weight_decay, e);
        }
        break;
      case Op::kAdamW: {
        const gpu::AdamScalars s = gpu::AdamScalarsOf(attrs);
        for (i64 e = 0; e < n; ++e) gpu::AdamWAt(in(0), in(1), in(2), in(3), out(0), out(1), out(2), s, e);
        break;
      }
      case Op::kAdd:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::AddAt(in(0), in(1), e);
        break;
      case Op::kTransposeHeads: {
        const gpu::TransposeDims t = gpu::TransposeDimsOf(inputs[0]->shape());
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::TransposeHeadsAt(in(0), t, e);
        break;
      }
      case Op::kGelu:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::GeluAt(in(0)[e]);
        break;
      case Op::kGeluGrad:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::GeluGradAt(in(0)[e], in(1)[e]);
        break;
      case Op::kClipCoefficient:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::ClipCoefficientAt(in(0)[e], attrs.max_norm);
        break;
      case Op::kLayerNorm: {  // the stats kernel, then the element kernel
        const gpu::RowLayout l = gpu::RowLayoutOf(inputs[0]->shape());
        for (i64 r = 0; r < l.rows; ++r) gpu::LayerNormStatsRow(in(0), l, attrs.eps, r, out(1), out(2));
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::LayerNormAt(in(0), in(1), in(2), out(1), out(2), l, e);
        break;
      }
      case Op::kLayerNormGrad: {
        const gpu::RowLayout l = gpu::RowLayoutOf(inputs[0]->shape());
        std::vector<float> ab(static_cast<std::size_t>(2 * l.rows));
        for (i64 r = 0; r < l.rows; ++r) gpu::LayerNormGradSumsRow(in(0), in(4), in(1), in(2), in(3), l, r, ab.data());
        for (i64 e = 0; e < n; ++e) {
          out(0)[e] = gpu::LayerNormGradInputAt(in(0), in(4), in(1), in(2), in(3), ab.data(), l, e);
        }
        for (i64 c = 0; c < l.channels; ++c) {
          gpu::LayerNormGradParamsAt(in(0), in(4), in(2), in(3), l, c, out(1), out(2));
        }
        break;
      }
      case Op::kCausalSoftmax: {
        const i64 t = inputs[0]->shape().back();
        for (i64 r = 0; r < n / t; ++r) gpu::CausalSoftmaxRow(in(0), out(0), t, attrs.scale, r);
        break;
      }
      case Op::kCausalSoftmaxGrad: {
        const i64 t = inputs[0]->shape().back();
        for (i64 r = 0; r < n / t; ++r) gpu::CausalSoftmaxGradRow(in(0), in(1), out(0), t, attrs.scale, r);
        break;
      }
      case Op::kEmbedding:
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::EmbeddingAt(in(0), in(1), inputs[0]->dim(1), e);
        break;
      case Op::kEmbeddingGrad: {
        const i64 vocab = shapes[0][0], channels = shapes[0][1];
        const std::vector<i64> index = gpu::EmbeddingGradIndex(in(0), inputs[0]->numel(), vocab);
        for (i64 e = 0; e < n; ++e) out(0)[e] = gpu::EmbeddingGradAt(in(1), index.data(), vocab, channels, e);
        break;
      }
    }
    for (std::size_t o = 0; o < shapes.size(); ++o) {
      outputs[o]->Resize(shapes[o]);
      std::copy(dev_out[o].begin(), dev_out[o].end(), outputs[o]->values().begin());
    }
    return Status::Ok();
  }

 private:
  int matmul_micro_;
};

bool IsMatrixProduct(Op op) {
  return op == Op::kMatmul || op == Op::kMatmulGradA || op == Op::kMatmulGradB || op == Op::kBatchedMatmul ||
         op == Op::kBatchedMatmulGradA || op == Op::kBatchedMatmulGradB;
}

class GpuTwinTest : public ::testing::TestWithParam<int> {};

TEST_P(GpuTwinTest, MatchesReferenceBitForBit) {
  const Op op = static_cast<Op>(GetParam());
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  // A product runs with every tile size (the device picks one by its size); 0: the H100's pick.
  const std::vector<int> micros = IsMatrixProduct(op) ? std::vector<int>{0, 1, 2, 4} : std::vector<int>{0};
  for (int micro : micros) {
    GpuTwinBackend twin(micro);
    const std::vector<conformance::CaseResult> results = conformance::CheckOp(twin, *reference, op, 20240601);
    ASSERT_FALSE(results.empty());
    for (const conformance::CaseResult& r : results) {
      EXPECT_TRUE(r.passed) << "tile micro " << micro << ", " << r.name << ": " << r.detail;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuTwinTest, ::testing::Range(0, kNumOps),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(OpName(static_cast<Op>(param_info.param)));
                         });

// The device self-test's inputs must be able to fail a device that breaks a rule: on the host, an
// fma split into a rounded product and a sum, a division or product whose subnormal result is
// flushed to zero, a ReLU that passes -0.0 or NaN, each gives other bits somewhere.
TEST(GpuSelfTestTest, InputsCatchASplitFmaFlushedSubnormalsAndALeakyRelu) {
  constexpr i64 kN = 4096;
  std::vector<float> a, b, c;
  gpu::MakeSelfTestInputs(kN, a, b, c);
  std::vector<float> y(kN * gpu::kSelfTestOps);
  for (i64 i = 0; i < kN; ++i) gpu::SelfTestAt(a.data(), b.data(), c.data(), y.data(), i);
  const auto at = [&](i64 i, int op) { return y[static_cast<std::size_t>(i * gpu::kSelfTestOps + op)]; };
  const auto bits = [](float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
  };
  int split_fma_differs = 0, subnormal_quotients = 0, subnormal_products = 0, relu_of_negative_zero = 0,
      relu_of_nan = 0, sqrt_of_negative = 0, exp_overflows = 0;
  for (i64 i = 0; i < kN; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const float split = a[k] * b[k] + c[k];
    if (bits(split) != bits(at(i, 0)) && !(split != split && at(i, 0) != at(i, 0))) ++split_fma_differs;
    if (std::fpclassify(at(i, 1)) == FP_SUBNORMAL) ++subnormal_quotients;
    if (std::fpclassify(at(i, 4)) == FP_SUBNORMAL) ++subnormal_products;
    if (bits(a[k]) == 0x80000000u) {
      EXPECT_EQ(bits(at(i, 3)), 0u);  // ReLU(-0.0) = +0.0
      ++relu_of_negative_zero;
    }
    if (a[k] != a[k]) {
      EXPECT_EQ(bits(at(i, 3)), 0u);  // ReLU(NaN) = +0.0
      ++relu_of_nan;
    }
    if (a[k] < 0.0f && at(i, 2) != at(i, 2)) ++sqrt_of_negative;
    if (std::isinf(at(i, 5)) && std::isfinite(a[k])) ++exp_overflows;
  }
  EXPECT_GT(split_fma_differs, 1000);
  EXPECT_GT(subnormal_quotients, 0);
  EXPECT_GT(subnormal_products, 0);
  EXPECT_GT(relu_of_negative_zero, 0);
  EXPECT_GT(relu_of_nan, 0);
  EXPECT_GT(sqrt_of_negative, 0);
  EXPECT_GT(exp_overflows, 0);
}

// The tile emulation must cover what the GPU grid covers: a product whose tiles are all partial
// (65 x 65 outputs: four 64 x 64 tiles, three of them ragged, or 9 or 25 smaller ones) with a
// depth that ends mid p-tile.
TEST(GpuTwinTest, RaggedTilesCoverEveryOutput) {
  constexpr i64 kM = 65, kK = 17, kN = 65;
  std::vector<float> a(kM * kK, 1.0f), b(kK * kN, 1.0f), c(kM * kN, -1.0f);
  gpu::MatmulOperands m{a.data(), kK, 1, b.data(), kN, 1, c.data(), kM, kN, kK};
  EXPECT_EQ(gpu::MatmulBlocks<4>(m), 4);
  EXPECT_EQ(gpu::MatmulBlocks<2>(m), 9);
  EXPECT_EQ(gpu::MatmulBlocks<1>(m), 25);
  for (int micro : {4, 2, 1}) {
    std::fill(c.begin(), c.end(), -1.0f);
    TwinMatmulWith(micro, m);
    for (float v : c) ASSERT_EQ(v, static_cast<float>(kK)) << "tile micro " << micro;
  }
}

// Small outputs take small tiles so their blocks reach every multiprocessor; large ones keep the
// 64 x 64 tiles that reuse each staged value four times.
TEST(GpuTwinTest, TileSizeFillsTheDevice) {
  const auto product = [](i64 rows, i64 cols) {
    gpu::MatmulOperands m{};
    m.rows = rows;
    m.cols = cols;
    m.depth = 768;
    return m;
  };
  EXPECT_EQ(gpu::MatmulMicroFor(product(128, 128), 132), 1);   // 64 blocks of 16 x 16
  EXPECT_EQ(gpu::MatmulMicroFor(product(768, 512), 132), 2);   // 384 of 32 x 32 (96 of 64 x 64)
  EXPECT_EQ(gpu::MatmulMicroFor(product(4096, 4096), 132), 4);
  EXPECT_EQ(gpu::MatmulMicroFor(product(128, 256), 1), 4);
}

}  // namespace
}  // namespace polnode::kernels
