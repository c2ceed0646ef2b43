// The transformer operators against PyTorch (Debian's python3-torch through /usr/bin/python3):
// forward and backward of each (and the AdamW update against torch.optim.AdamW), on random inputs at the GPT configuration's sizes, computed by
// polnode's reference backend (every other backend has its bits, cpu_backend_test.cc and
// gpu_twin_test.cc) and by tests/kernels/torch_ops.py with autograd.
//
// What is compared, per output tensor: the normwise relative difference
//   max_e |ours_e - torch_e| / max_e |torch_e|
// against PyTorch in float32, which must be at most 1e-5 (the two sides sum and round in different
// orders, so bits differ; element-wise relative differences are meaningless where a value cancels
// to nearly zero, e.g. GELU far left or a LayerNorm output near beta). Pure data movement and
// single roundings (embedding's gather, transpose_heads, add) must match PyTorch bit for bit. For
// context the test also prints both sides' distance to PyTorch's float64 evaluation of the same
// inputs.
//
// PyTorch is required: without python3 and torch the test fails (it does not skip).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels_test_util.h"
#include "polnode/kernels/backend.h"

namespace polnode::kernels {
namespace {

using testing::RandomLabels;
using testing::RandomTensor;
using testing::RunOp;

constexpr const char* kPython = "/usr/bin/python3";
constexpr double kMaxRelative = 1e-5;

template <typename T>
std::vector<T> ReadRaw(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(f),
                                std::istreambuf_iterator<char>()};
  std::vector<T> out(bytes.size() / sizeof(T));
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(out.size() * sizeof(T)),
            reinterpret_cast<char*>(out.data()));
  return out;
}

// max |a - b| / max |b| (0 when b is all zeros and a equals it).
template <typename A, typename B>
double NormwiseRelative(const std::vector<A>& a, const std::vector<B>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// One of our outputs, named as torch_ops.py names it.
struct Output {
  std::string name;
  Tensor value;
  bool exact = false;  // data movement or one rounding per element: bits must match PyTorch's
};

// One operator's inputs, attributes and our outputs.
struct Case {
  std::string name;
  std::string op;  // torch_ops.py's dispatch key
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::map<std::string, float> attrs;
  std::vector<Output> outputs;
};

class TorchOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string probe = std::string(kPython) + " -c 'import torch, numpy' >/dev/null 2>&1";
    ASSERT_EQ(std::system(probe.c_str()), 0)
        << kPython
        << " cannot import torch and numpy; install python3-torch (scripts/install-deps.sh does)";
    dir_ = std::filesystem::temp_directory_path() /
           ("polnode_torch_ops_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(std::filesystem::create_directories(dir_));
  }

  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::vector<Tensor> Run(Op op, const std::vector<const Tensor*>& inputs,
                          const OpAttrs& attrs = {}) {
    auto r = RunOp(*reference_, op, attrs, inputs);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<Tensor>{};
  }

  // Writes every case, runs torch_ops.py once, and compares each output.
  void CompareWithTorch(const std::vector<Case>& cases) {
    std::ofstream manifest(dir_ / "manifest.txt");
    for (const Case& c : cases) {
      manifest << "case " << c.name << " " << c.op << "\n";
      for (const auto& [name, t] : c.inputs) {
        std::ofstream f(dir_ / (c.name + "." + name + ".bin"), std::ios::binary);
        f.write(reinterpret_cast<const char*>(t.data()),
                static_cast<std::streamsize>(t.numel() * sizeof(float)));
        manifest << "tensor " << name;
        for (std::int64_t d : t.shape()) manifest << " " << d;
        manifest << "\n";
      }
      for (const auto& [key, value] : c.attrs) {
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));  // the float exactly
        manifest << "attr " << key << " " << text << "\n";
      }
    }
    manifest.close();
    const std::string script = std::string(POLNODE_SOURCE_DIR) + "/tests/kernels/torch_ops.py";
    const std::string command = std::string(kPython) + " " + script + " " + dir_.string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;

    for (const Case& c : cases) {
      for (const Output& out : c.outputs) {
        const Tensor& ours = out.value;
        const std::string base = c.name + "." + out.name;
        const std::vector<float> torch32 = ReadRaw<float>(dir_ / (base + ".torch.bin"));
        const std::vector<double> torch64 = ReadRaw<double>(dir_ / (base + ".f64.bin"));
        ASSERT_EQ(static_cast<std::int64_t>(torch32.size()), ours.numel()) << base;
        ASSERT_EQ(static_cast<std::int64_t>(torch64.size()), ours.numel()) << base;
        const std::vector<float> mine(ours.values().begin(), ours.values().end());
        const double vs_torch = NormwiseRelative(mine, torch32);
        std::printf("%-24s %-7s vs torch float32 %.2e | vs float64: ours %.2e, torch %.2e\n",
                    c.name.c_str(), out.name.c_str(), vs_torch, NormwiseRelative(mine, torch64),
                    NormwiseRelative(torch32, torch64));
        if (out.exact) {
          EXPECT_TRUE(
              std::equal(mine.begin(), mine.end(), torch32.begin(),
                         [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }))
              << base << " must match PyTorch bit for bit";
        }
        EXPECT_LE(vs_torch, kMaxRelative) << base;
      }
    }
  }

  std::filesystem::path dir_;
  std::unique_ptr<Backend> reference_ = MakeReferenceBackend();
};

TEST_F(TorchOpsTest, TransformerOperatorsAgreeWithPyTorch) {
  std::vector<Case> cases;
  std::uint32_t seed = 7000;

  {  // GELU over [-6, 6] (both tanh formulas, and the far left where it cancels).
    const Tensor x = RandomTensor({64, 512}, seed++, -6.0f, 6.0f),
                 dy = RandomTensor({64, 512}, seed++);
    cases.push_back({"gelu",
                     "gelu",
                     {{"X", x}, {"dY", dy}},
                     {},
                     {{"Y", Run(Op::kGelu, {&x})[0]}, {"dX", Run(Op::kGeluGrad, {&x, &dy})[0]}}});
  }
  {  // LayerNorm of GPT activations [B*T, C] with an offset mean, eps 1e-5.
    Tensor x = RandomTensor({768, 128}, seed++, -3.0f, 3.0f);
    for (float& v : x.values()) v = v + 0.5f;
    const Tensor gamma = RandomTensor({128}, seed++, 0.5f, 1.5f),
                 beta = RandomTensor({128}, seed++, -0.5f, 0.5f);
    const Tensor dy = RandomTensor({768, 128}, seed++);
    OpAttrs attrs;
    attrs.eps = 1e-5f;
    const std::vector<Tensor> fwd = Run(Op::kLayerNorm, {&x, &gamma, &beta}, attrs);
    const std::vector<Tensor> bwd =
        Run(Op::kLayerNormGrad, {&x, &gamma, &fwd[1], &fwd[2], &dy}, attrs);
    cases.push_back({"layer_norm",
                     "layer_norm",
                     {{"X", x}, {"gamma", gamma}, {"beta", beta}, {"dY", dy}},
                     {{"eps", attrs.eps}},
                     {{"Y", fwd[0]},
                      {"Mean", fwd[1]},
                      {"Rstd", fwd[2]},
                      {"dX", bwd[0]},
                      {"dGamma", bwd[1]},
                      {"dBeta", bwd[2]}}});
  }
  // Causal softmax of [B, H, T, T] scores: attention's 1/sqrt(D) with D = 32, and scale 1 on wider
  // scores.
  for (const auto& [label, scale, range] :
       {std::tuple<const char*, float, float>{"causal_softmax_scaled", 0.176776692f, 10.0f},
        {"causal_softmax_unscaled", 1.0f, 20.0f}}) {
    const Tensor s = RandomTensor({2, 4, 64, 64}, seed++, -range, range),
                 dp = RandomTensor({2, 4, 64, 64}, seed++);
    OpAttrs attrs;
    attrs.scale = scale;
    const Tensor p = Run(Op::kCausalSoftmax, {&s}, attrs)[0];
    cases.push_back({label,
                     "causal_softmax",
                     {{"S", s}, {"dP", dp}},
                     {{"scale", scale}},
                     {{"P", p}, {"dS", Run(Op::kCausalSoftmaxGrad, {&p, &dp}, attrs)[0]}}});
  }
  {  // Attention's products: Q K^T as kBatchedMatmulGradA(Q, K), P V, and their gradients.
    const Tensor a = RandomTensor({12, 4, 64, 32}, seed++),
                 b = RandomTensor({12, 4, 32, 64}, seed++);
    const Tensor dc = RandomTensor({12, 4, 64, 64}, seed++);
    cases.push_back({"batched_matmul",
                     "batched_matmul",
                     {{"A", a}, {"B", b}, {"dC", dc}},
                     {},
                     {{"C", Run(Op::kBatchedMatmul, {&a, &b})[0]},
                      {"dA", Run(Op::kBatchedMatmulGradA, {&dc, &b})[0]},
                      {"dB", Run(Op::kBatchedMatmulGradB, {&a, &dc})[0]}}});
  }
  {  // Token embedding: a 65-symbol table of width 128, a [12, 64] batch of ids.
    const Tensor w = RandomTensor({65, 128}, seed++);
    Tensor ids = RandomLabels(12 * 64, 65, seed++);
    ASSERT_TRUE(ids.Reshape({12, 64}).ok());
    const Tensor dy = RandomTensor({12, 64, 128}, seed++);
    OpAttrs attrs;
    attrs.num_embeddings = 65;
    cases.push_back({"embedding",
                     "embedding",
                     {{"W", w}, {"ids", ids}, {"dY", dy}},
                     {},
                     {{"Y", Run(Op::kEmbedding, {&w, &ids})[0], true},
                      {"dW", Run(Op::kEmbeddingGrad, {&ids, &dy}, attrs)[0]}}});
  }
  {  // Head split [B, T, H, D] -> [B, H, T, D]; its gradient is the transpose back.
    const Tensor x = RandomTensor({12, 64, 4, 32}, seed++),
                 dy = RandomTensor({12, 4, 64, 32}, seed++);
    cases.push_back({"transpose_heads",
                     "transpose_heads",
                     {{"X", x}, {"dY", dy}},
                     {},
                     {{"Y", Run(Op::kTransposeHeads, {&x})[0], true},
                      {"dX", Run(Op::kTransposeHeads, {&dy})[0], true}}});
  }
  {  // The residual add.
    const Tensor a = RandomTensor({768, 128}, seed++), b = RandomTensor({768, 128}, seed++);
    cases.push_back(
        {"add", "add", {{"A", a}, {"B", b}}, {}, {{"C", Run(Op::kAdd, {&a, &b})[0], true}}});
  }
  {  // The existing softmax cross-entropy at GPT's [B*T, V]: the mean over every position.
    const Tensor z = RandomTensor({768, 65}, seed++, -5.0f, 5.0f);
    const Tensor labels = RandomLabels(768, 65, seed++);
    const std::vector<Tensor> fwd = Run(Op::kSoftmaxCrossEntropy, {&z, &labels});
    cases.push_back(
        {"softmax_cross_entropy",
         "softmax_cross_entropy",
         {{"Z", z}, {"labels", labels}},
         {},
         {{"loss", fwd[0]}, {"dZ", Run(Op::kSoftmaxCrossEntropyGrad, {&fwd[1], &labels})[0]}}});
  }
  {  // The projections' plain matmul [B*T, C] x [C, 4C] and its gradients.
    const Tensor a = RandomTensor({768, 128}, seed++), b = RandomTensor({128, 512}, seed++);
    const Tensor dc = RandomTensor({768, 512}, seed++);
    cases.push_back({"matmul",
                     "matmul",
                     {{"A", a}, {"B", b}, {"dC", dc}},
                     {},
                     {{"C", Run(Op::kMatmul, {&a, &b})[0]},
                      {"dA", Run(Op::kMatmulGradA, {&dc, &b})[0]},
                      {"dB", Run(Op::kMatmulGradB, {&a, &dc})[0]}}});
  }
  {  // The position embedding's add over the [B, T * C] view, and its gradient (a column sum).
    const Tensor x = RandomTensor({12, 64 * 128}, seed++), b = RandomTensor({64 * 128}, seed++);
    const Tensor dy = RandomTensor({12, 64 * 128}, seed++);
    cases.push_back({"bias_add",
                     "bias_add",
                     {{"X", x}, {"b", b}, {"dY", dy}},
                     {},
                     {{"Y", Run(Op::kBiasAdd, {&x, &b})[0], true},
                      {"db", Run(Op::kBiasGrad, {&dy})[0]}}});
  }
  {  // AdamW at step 7 with a scheduled lr and weight decay; the weights are the size of one
     // update, so the comparison sees the update itself, not just the weights it moves.
    const Tensor w = RandomTensor({128, 512}, seed++, -2e-3f, 2e-3f),
                 g = RandomTensor({128, 512}, seed++),
                 m = RandomTensor({128, 512}, seed++, -0.1f, 0.1f),
                 v = RandomTensor({128, 512}, seed++, 0.0f, 0.01f);
    OpAttrs attrs;
    attrs.lr = 7.3e-4f;
    attrs.weight_decay = 0.1f;
    attrs.beta1 = 0.9f;
    attrs.beta2 = 0.99f;
    attrs.eps = 1e-8f;
    constexpr std::int64_t kStep = 7;
    attrs.bias_correction1 = AdamBiasCorrection(attrs.beta1, kStep);
    attrs.bias_correction2 = AdamBiasCorrection(attrs.beta2, kStep);
    const std::vector<Tensor> out = Run(Op::kAdamW, {&w, &g, &m, &v}, attrs);
    cases.push_back({"adamw",
                     "adamw",
                     {{"W", w}, {"G", g}, {"M", m}, {"V", v}},
                     {{"lr", attrs.lr},
                      {"weight_decay", attrs.weight_decay},
                      {"beta1", attrs.beta1},
                      {"beta2", attrs.beta2},
                      {"eps", attrs.eps},
                      {"step", static_cast<float>(kStep)}},
                     {{"W", out[0]}, {"M", out[1]}, {"V", out[2]}}});
  }
  {  // Gradient-norm clipping as the step graph composes it: each gradient's sum of squares as
     // a [1, N] x [N, 1] product, their sum, the coefficient, and each gradient times it.
    const Tensor g0 = RandomTensor({128, 512}, seed++), g1 = RandomTensor({65, 128}, seed++);
    OpAttrs attrs;
    attrs.max_norm = 1.0f;
    const auto view = [](const Tensor& t, Shape shape) {
      Tensor v = t;
      EXPECT_TRUE(v.Reshape(std::move(shape)).ok());
      return v;
    };
    const Tensor r0 = view(g0, {1, g0.numel()}), c0 = view(g0, {g0.numel(), 1});
    const Tensor r1 = view(g1, {1, g1.numel()}), c1 = view(g1, {g1.numel(), 1});
    const Tensor s0 = Run(Op::kMatmul, {&r0, &c0})[0], s1 = Run(Op::kMatmul, {&r1, &c1})[0];
    const Tensor total = Run(Op::kAdd, {&s0, &s1})[0];
    const Tensor coefficient = Run(Op::kClipCoefficient, {&total}, attrs)[0];
    EXPECT_LT(coefficient.data()[0], 1.0f);  // the norm (about 170) is far above 1: it clips
    cases.push_back({"clip_grad_norm",
                     "clip_grad_norm",
                     {{"G0", g0}, {"G1", g1}},
                     {{"max_norm", attrs.max_norm}},
                     {{"G0", view(Run(Op::kMatmul, {&c0, &coefficient})[0], g0.shape())},
                      {"G1", view(Run(Op::kMatmul, {&c1, &coefficient})[0], g1.shape())}}});
  }
  CompareWithTorch(cases);
}

}  // namespace
}  // namespace polnode::kernels
