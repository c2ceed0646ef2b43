// Every gradient operator of the reference backend against central finite differences of the
// forward operator, computed entirely in double precision from the same float inputs.
//
// For a forward F and fixed random weights R, J(X) = sum_i R_i F(X)_i; its gradient with respect
// to X is what the backward operator returns when fed dY = R. The forwards below are double
// reimplementations of op.h (also checked against the float forward operator), so the finite
// differences carry no float rounding. Every forward here is piecewise linear except softmax
// cross-entropy, and the inputs keep kinks (ReLU at 0, max-pool ties) far from the step, so the
// differences are exact up to double rounding; the tolerance covers the float analytic gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "kernels_test_util.h"
#include "polnode/kernels/backend.h"

namespace polnode::kernels {
namespace {

using testing::RandomLabels;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToDouble;
using Values = std::vector<double>;
using Forward = std::function<Values(const std::vector<Values>&)>;

// Relative to max(1, |value|): float analytic gradients of sums of a few hundred terms of size
// ~1 are good to ~1e-6, double finite differences to ~1e-10.
constexpr double kGradTolerance = 2e-5;
constexpr double kStep = 1e-3;

double Dot(const Values& a, const Values& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// Asserts that `analytic` (float, from a backward operator) is dJ/dinputs[wrt] by central
// differences of J = <weights, forward(inputs)>.
void ExpectGradientMatches(const Forward& forward, std::vector<Values> inputs, std::size_t wrt,
                           const Values& weights, const Tensor& analytic, const char* what) {
  ASSERT_EQ(analytic.numel(), static_cast<std::int64_t>(inputs[wrt].size())) << what;
  for (std::size_t e = 0; e < inputs[wrt].size(); ++e) {
    const double saved = inputs[wrt][e];
    inputs[wrt][e] = saved + kStep;
    const double up = Dot(weights, forward(inputs));
    inputs[wrt][e] = saved - kStep;
    const double down = Dot(weights, forward(inputs));
    inputs[wrt][e] = saved;
    const double numeric = (up - down) / (2 * kStep);
    const double got = analytic.data()[e];
    ASSERT_LE(std::fabs(got - numeric), kGradTolerance * std::max(1.0, std::fabs(numeric)))
        << what << " element " << e << ": analytic " << got << ", finite difference " << numeric;
  }
}

// Asserts that the float forward operator agrees with the double forward.
void ExpectForwardMatches(const Tensor& got, const Values& want, const char* what) {
  ASSERT_EQ(got.numel(), static_cast<std::int64_t>(want.size())) << what;
  for (std::size_t e = 0; e < want.size(); ++e) {
    ASSERT_LE(std::fabs(got.data()[e] - want[e]), kGradTolerance * std::max(1.0, std::fabs(want[e])))
        << what << " element " << e;
  }
}

// ---- double-precision forwards (op.h semantics) ----

Values MatmulD(const Values& a, const Values& b, int m, int k, int n) {
  Values c(static_cast<std::size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

Values ConvD(const Values& x, const Values& w, int batch, int cin, int cout, int h, int wd) {
  Values y(static_cast<std::size_t>(batch * cout * h * wd), 0.0);
  for (int n = 0; n < batch; ++n)
    for (int o = 0; o < cout; ++o)
      for (int i = 0; i < h; ++i)
        for (int j = 0; j < wd; ++j) {
          double acc = 0.0;
          for (int c = 0; c < cin; ++c)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw) {
                const int ih = i + kh - 1, iw = j + kw - 1;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                acc += w[((o * cin + c) * 3 + kh) * 3 + kw] * x[((n * cin + c) * h + ih) * wd + iw];
              }
          y[((n * cout + o) * h + i) * wd + j] = acc;
        }
  return y;
}

Values MaxPoolD(const Values& x, int planes, int h, int w) {
  Values y;
  for (int p = 0; p < planes; ++p)
    for (int i = 0; i < h / 2; ++i)
      for (int j = 0; j < w / 2; ++j) {
        double best = x[(p * h + 2 * i) * w + 2 * j];
        for (int tap = 1; tap < 4; ++tap)
          best = std::max(best, x[(p * h + 2 * i + tap / 2) * w + 2 * j + tap % 2]);
        y.push_back(best);
      }
  return y;
}

// Mean softmax cross-entropy of logits [rows, classes].
double SoftmaxCeD(const Values& z, const Tensor& labels, int rows, int classes) {
  double total = 0.0;
  for (int b = 0; b < rows; ++b) {
    const double mx = *std::max_element(z.begin() + b * classes, z.begin() + (b + 1) * classes);
    double s = 0.0;
    for (int c = 0; c < classes; ++c) s += std::exp(z[b * classes + c] - mx);
    total += mx + std::log(s) - z[b * classes + static_cast<int>(labels.data()[b])];
  }
  return total / rows;
}

class GradientTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = MakeReferenceBackend();
  OpAttrs attrs_;

  std::vector<Tensor> Run(Op op, const std::vector<const Tensor*>& inputs) {
    auto r = RunOp(*backend_, op, attrs_, inputs);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<Tensor>{};
  }
};

TEST_F(GradientTest, Matmul) {
  const int m = 5, k = 7, n = 4;
  const Tensor a = RandomTensor({m, k}, 1), b = RandomTensor({k, n}, 2);
  const Tensor r = RandomTensor({m, n}, 3);
  const Forward f = [&](const std::vector<Values>& in) { return MatmulD(in[0], in[1], m, k, n); };
  ExpectForwardMatches(Run(Op::kMatmul, {&a, &b})[0], f({ToDouble(a), ToDouble(b)}), "C");
  ExpectGradientMatches(f, {ToDouble(a), ToDouble(b)}, 0, ToDouble(r),
                        Run(Op::kMatmulGradA, {&r, &b})[0], "dA");
  ExpectGradientMatches(f, {ToDouble(a), ToDouble(b)}, 1, ToDouble(r),
                        Run(Op::kMatmulGradB, {&a, &r})[0], "dB");
}

TEST_F(GradientTest, BiasAdd2dAnd4d) {
  for (const Shape& shape : {Shape{6, 5}, Shape{2, 3, 4, 5}}) {
    const Tensor x = RandomTensor(shape, 4), b = RandomTensor({shape[1]}, 5);
    const Tensor r = RandomTensor(shape, 6);
    const std::int64_t inner = shape.size() == 2 ? 1 : shape[2] * shape[3];
    const Forward f = [&](const std::vector<Values>& in) {
      Values y = in[0];
      for (std::size_t e = 0; e < y.size(); ++e) y[e] += in[1][(e / inner) % shape[1]];
      return y;
    };
    ExpectForwardMatches(Run(Op::kBiasAdd, {&x, &b})[0], f({ToDouble(x), ToDouble(b)}), "Y");
    ExpectGradientMatches(f, {ToDouble(x), ToDouble(b)}, 1, ToDouble(r),
                          Run(Op::kBiasGrad, {&r})[0], "db");
  }
}

TEST_F(GradientTest, Relu) {
  // Values in +-[0.1, 1]: no element is within a finite-difference step of the kink at 0.
  Tensor x = RandomTensor({7, 9}, 7, 0.1f, 1.0f);
  std::mt19937 gen(8);
  for (float& v : x.values()) v = (gen() % 2) ? v : -v;
  const Tensor r = RandomTensor({7, 9}, 9);
  const Forward f = [](const std::vector<Values>& in) {
    Values y = in[0];
    for (double& v : y) v = std::max(v, 0.0);
    return y;
  };
  ExpectForwardMatches(Run(Op::kRelu, {&x})[0], f({ToDouble(x)}), "Y");
  ExpectGradientMatches(f, {ToDouble(x)}, 0, ToDouble(r), Run(Op::kReluGrad, {&x, &r})[0], "dX");
}

TEST_F(GradientTest, Conv2d3x3) {
  const int batch = 2, cin = 3, cout = 4, h = 5, w = 6;
  const Tensor x = RandomTensor({batch, cin, h, w}, 10), wt = RandomTensor({cout, cin, 3, 3}, 11);
  const Tensor r = RandomTensor({batch, cout, h, w}, 12);
  const Forward f = [&](const std::vector<Values>& in) {
    return ConvD(in[0], in[1], batch, cin, cout, h, w);
  };
  ExpectForwardMatches(Run(Op::kConv2d3x3, {&x, &wt})[0], f({ToDouble(x), ToDouble(wt)}), "Y");
  ExpectGradientMatches(f, {ToDouble(x), ToDouble(wt)}, 0, ToDouble(r),
                        Run(Op::kConv2d3x3GradInput, {&r, &wt})[0], "dX");
  ExpectGradientMatches(f, {ToDouble(x), ToDouble(wt)}, 1, ToDouble(r),
                        Run(Op::kConv2d3x3GradWeight, {&x, &r})[0], "dW");
}

TEST_F(GradientTest, MaxPool2x2WithOddSizes) {
  const int planes = 2 * 3, h = 5, w = 7;  // the last row and column are dropped
  // Distinct values 0.01 apart: no window has two taps within a finite-difference step.
  Tensor x({2, 3, h, w});
  std::vector<float> values(static_cast<std::size_t>(x.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i) - 1.0f;
  std::shuffle(values.begin(), values.end(), std::mt19937(13));
  std::copy(values.begin(), values.end(), x.data());
  const Tensor r = RandomTensor({2, 3, h / 2, w / 2}, 14);
  const Forward f = [&](const std::vector<Values>& in) { return MaxPoolD(in[0], planes, h, w); };
  std::vector<Tensor> pooled = Run(Op::kMaxPool2x2, {&x});
  ExpectForwardMatches(pooled[0], f({ToDouble(x)}), "Y");
  attrs_.pool_input_h = h;
  attrs_.pool_input_w = w;
  ExpectGradientMatches(f, {ToDouble(x)}, 0, ToDouble(r),
                        Run(Op::kMaxPool2x2Grad, {&pooled[1], &r})[0], "dX");
}

TEST_F(GradientTest, SoftmaxCrossEntropy) {
  const int rows = 6, classes = 10;
  const Tensor z = RandomTensor({rows, classes}, 15, -3.0f, 3.0f);
  const Tensor labels = RandomLabels(rows, classes, 16);
  const Forward f = [&](const std::vector<Values>& in) {
    return Values{SoftmaxCeD(in[0], labels, rows, classes)};
  };
  std::vector<Tensor> fwd = Run(Op::kSoftmaxCrossEntropy, {&z, &labels});
  ExpectForwardMatches(fwd[0], f({ToDouble(z)}), "loss");
  ExpectGradientMatches(f, {ToDouble(z)}, 0, {1.0},
                        Run(Op::kSoftmaxCrossEntropyGrad, {&fwd[1], &labels})[0], "dZ");
  // P is the softmax: rows sum to 1.
  for (int b = 0; b < rows; ++b) {
    double s = 0.0;
    for (int c = 0; c < classes; ++c) s += fwd[1].data()[b * classes + c];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST_F(GradientTest, GeluTanh) {
  // Values over [-5, 5], where GELU bends; it is smooth, so central differences are exact to
  // O(step^2) = 1e-6 relative.
  const Tensor x = RandomTensor({9, 13}, 30, -5.0f, 5.0f);
  const Tensor r = RandomTensor({9, 13}, 31);
  const double beta = std::sqrt(2.0 / 3.14159265358979323846);
  const Forward f = [&](const std::vector<Values>& in) {
    Values y = in[0];
    for (double& v : y) v = 0.5 * v * (1.0 + std::tanh(beta * (v + 0.044715 * v * v * v)));
    return y;
  };
  ExpectForwardMatches(Run(Op::kGelu, {&x})[0], f({ToDouble(x)}), "Y");
  ExpectGradientMatches(f, {ToDouble(x)}, 0, ToDouble(r), Run(Op::kGeluGrad, {&x, &r})[0], "dX");
}

TEST_F(GradientTest, AddAndTransposeHeads) {
  // Both are linear and exact: the gradient of add is dC for each addend, and transpose_heads is
  // its own adjoint (its gradient is the transpose of dY back).
  const Tensor a = RandomTensor({2, 3, 4, 5}, 32), b = RandomTensor({2, 3, 4, 5}, 33);
  const Tensor r = RandomTensor({2, 4, 3, 5}, 34);
  const Forward transpose = [](const std::vector<Values>& in) {
    Values y(in[0].size());
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          for (int d = 0; d < 5; ++d)
            y[((n * 4 + j) * 3 + i) * 5 + d] = in[0][((n * 3 + i) * 4 + j) * 5 + d];
    return y;
  };
  ExpectForwardMatches(Run(Op::kTransposeHeads, {&a})[0], transpose({ToDouble(a)}), "Y");
  ExpectGradientMatches(transpose, {ToDouble(a)}, 0, ToDouble(r), Run(Op::kTransposeHeads, {&r})[0],
                        "dX");
  const Forward add = [](const std::vector<Values>& in) {
    Values y = in[0];
    for (std::size_t e = 0; e < y.size(); ++e) y[e] += in[1][e];
    return y;
  };
  ExpectForwardMatches(Run(Op::kAdd, {&a, &b})[0], add({ToDouble(a), ToDouble(b)}), "C");
}

TEST_F(GradientTest, LayerNorm) {
  const int rows = 6, channels = 7;
  attrs_.eps = 1e-5f;
  const Tensor x = RandomTensor({2, 3, channels}, 40, -2.0f, 2.0f);
  const Tensor gamma = RandomTensor({channels}, 41), beta = RandomTensor({channels}, 42);
  const Tensor r = RandomTensor({2, 3, channels}, 43);
  const double eps = attrs_.eps;
  const Forward f = [&](const std::vector<Values>& in) {
    Values y(in[0].size());
    for (int row = 0; row < rows; ++row) {
      double mean = 0.0, var = 0.0;
      for (int c = 0; c < channels; ++c) mean += in[0][row * channels + c] / channels;
      for (int c = 0; c < channels; ++c)
        var += std::pow(in[0][row * channels + c] - mean, 2) / channels;
      for (int c = 0; c < channels; ++c) {
        y[row * channels + c] =
            (in[0][row * channels + c] - mean) / std::sqrt(var + eps) * in[1][c] + in[2][c];
      }
    }
    return y;
  };
  const std::vector<Values> in = {ToDouble(x), ToDouble(gamma), ToDouble(beta)};
  const std::vector<Tensor> fwd = Run(Op::kLayerNorm, {&x, &gamma, &beta});
  ExpectForwardMatches(fwd[0], f(in), "Y");
  const std::vector<Tensor> grads = Run(Op::kLayerNormGrad, {&x, &gamma, &fwd[1], &fwd[2], &r});
  ExpectGradientMatches(f, in, 0, ToDouble(r), grads[0], "dX");
  ExpectGradientMatches(f, in, 1, ToDouble(r), grads[1], "dGamma");
  ExpectGradientMatches(f, in, 2, ToDouble(r), grads[2], "dBeta");
}

TEST_F(GradientTest, CausalSoftmaxWithScale) {
  const int mats = 3, t = 5;
  attrs_.scale = 0.4f;
  const Tensor s = RandomTensor({mats, t, t}, 44, -3.0f, 3.0f);
  const Tensor r = RandomTensor({mats, t, t}, 45);
  const double scale = attrs_.scale;
  const Forward f = [&](const std::vector<Values>& in) {
    Values p(in[0].size(), 0.0);
    for (int row = 0; row < mats * t; ++row) {
      const int i = row % t;
      double mx = -1e300, sum = 0.0;
      for (int j = 0; j <= i; ++j) mx = std::max(mx, in[0][row * t + j] * scale);
      for (int j = 0; j <= i; ++j) sum += std::exp(in[0][row * t + j] * scale - mx);
      for (int j = 0; j <= i; ++j) p[row * t + j] = std::exp(in[0][row * t + j] * scale - mx) / sum;
    }
    return p;
  };
  const std::vector<Tensor> fwd = Run(Op::kCausalSoftmax, {&s});
  ExpectForwardMatches(fwd[0], f({ToDouble(s)}), "P");
  ExpectGradientMatches(f, {ToDouble(s)}, 0, ToDouble(r),
                        Run(Op::kCausalSoftmaxGrad, {&fwd[0], &r})[0], "dS");
}

TEST_F(GradientTest, BatchedMatmul) {
  const int g = 6, m = 4, k = 5, n = 3;  // [2, 3] batches
  const Tensor a = RandomTensor({2, 3, m, k}, 50), b = RandomTensor({2, 3, k, n}, 51);
  const Tensor r = RandomTensor({2, 3, m, n}, 52);
  const Forward f = [&](const std::vector<Values>& in) {
    Values c;
    for (int i = 0; i < g; ++i) {
      const Values ci =
          MatmulD(Values(in[0].begin() + i * m * k, in[0].begin() + (i + 1) * m * k),
                  Values(in[1].begin() + i * k * n, in[1].begin() + (i + 1) * k * n), m, k, n);
      c.insert(c.end(), ci.begin(), ci.end());
    }
    return c;
  };
  const std::vector<Values> in = {ToDouble(a), ToDouble(b)};
  ExpectForwardMatches(Run(Op::kBatchedMatmul, {&a, &b})[0], f(in), "C");
  ExpectGradientMatches(f, in, 0, ToDouble(r), Run(Op::kBatchedMatmulGradA, {&r, &b})[0], "dA");
  ExpectGradientMatches(f, in, 1, ToDouble(r), Run(Op::kBatchedMatmulGradB, {&a, &r})[0], "dB");
}

TEST_F(GradientTest, Embedding) {
  const int vocab = 6, channels = 4, positions = 15;  // repeats, and rows no id names
  const Tensor w = RandomTensor({vocab, channels}, 53);
  const Tensor ids = RandomLabels(positions, vocab - 1, 54);
  const Tensor r = RandomTensor({positions, channels}, 55);
  const Forward f = [&](const std::vector<Values>& in) {
    Values y;
    for (int p = 0; p < positions; ++p) {
      const auto row = static_cast<int>(ids.data()[p]);
      y.insert(y.end(), in[0].begin() + row * channels, in[0].begin() + (row + 1) * channels);
    }
    return y;
  };
  ExpectForwardMatches(Run(Op::kEmbedding, {&w, &ids})[0], f({ToDouble(w)}), "Y");
  attrs_.num_embeddings = vocab;
  ExpectGradientMatches(f, {ToDouble(w)}, 0, ToDouble(r), Run(Op::kEmbeddingGrad, {&ids, &r})[0],
                        "dW");
}

TEST_F(GradientTest, SgdMomentumMatchesDoubleFormula) {
  const Tensor w = RandomTensor({33}, 17), g = RandomTensor({33}, 18), v = RandomTensor({33}, 19);
  attrs_.lr = 0.05f;
  attrs_.momentum = 0.9f;
  attrs_.weight_decay = 1e-3f;
  std::vector<Tensor> out = Run(Op::kSgdMomentum, {&w, &g, &v});
  for (int e = 0; e < 33; ++e) {
    const double d = static_cast<double>(g.data()[e]) + double{attrs_.weight_decay} * w.data()[e];
    const double v_new = double{attrs_.momentum} * v.data()[e] + d;
    const double w_new = w.data()[e] - double{attrs_.lr} * v_new;
    EXPECT_NEAR(out[1].data()[e], v_new, 1e-6 * std::max(1.0, std::fabs(v_new))) << e;
    EXPECT_NEAR(out[0].data()[e], w_new, 1e-6 * std::max(1.0, std::fabs(w_new))) << e;
  }
}

TEST_F(GradientTest, AdamWMatchesDoubleFormulaOverSteps) {
  Tensor w = RandomTensor({40}, 20), m({40}), v({40});
  attrs_.lr = 1e-2f;
  attrs_.weight_decay = 0.1f;
  Values wd = ToDouble(w), md(40, 0.0), vd(40, 0.0);
  for (int t = 1; t <= 5; ++t) {
    const Tensor g = RandomTensor({40}, 100 + static_cast<std::uint32_t>(t));
    attrs_.bias_correction1 = AdamBiasCorrection(attrs_.beta1, t);
    attrs_.bias_correction2 = AdamBiasCorrection(attrs_.beta2, t);
    std::vector<Tensor*> in_place = {&w, &m, &v};
    std::vector<const Tensor*> inputs = {&w, &g, &m, &v};
    ASSERT_TRUE(backend_->Run(Op::kAdamW, attrs_, inputs, in_place).ok());
    const double b1 = attrs_.beta1, b2 = attrs_.beta2, lr = attrs_.lr;
    for (int e = 0; e < 40; ++e) {
      const double ge = g.data()[e];
      wd[e] -= lr * double{attrs_.weight_decay} * wd[e];
      md[e] = b1 * md[e] + (1 - b1) * ge;
      vd[e] = b2 * vd[e] + (1 - b2) * ge * ge;
      const double mhat = md[e] / (1 - std::pow(b1, t)), vhat = vd[e] / (1 - std::pow(b2, t));
      wd[e] -= lr * mhat / (std::sqrt(vhat) + double{attrs_.eps});
      ASSERT_NEAR(m.data()[e], md[e], 1e-6) << "step " << t << " element " << e;
      ASSERT_NEAR(v.data()[e], vd[e], 1e-6) << "step " << t << " element " << e;
      ASSERT_NEAR(w.data()[e], wd[e], 1e-5) << "step " << t << " element " << e;
    }
  }
}

}  // namespace
}  // namespace polnode::kernels
