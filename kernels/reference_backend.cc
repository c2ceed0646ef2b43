// The scalar reference backend: each operator is a literal transcription of its canonical
// evaluation order in op.h, one loop nest per operator, single-threaded, with every fma written
// as std::fma (the build has -ffp-contract=off, so no other product is fused). The ledger's
// referee runs this code; every other backend is tested against it bit for bit, so clarity wins
// over speed here.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "polnode/kernels/backend.h"
#include "polnode/kernels/detmath.h"
#include "polnode/kernels/validate_run.h"

namespace polnode::kernels {
namespace {

using std::int64_t;

// Xpad[n, c, h, w] for a [N, C, H, W] tensor with zero padding: +0.0f outside the image.
float PaddedAt(const Tensor& x, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  if (h < 0 || h >= height || w < 0 || w >= width) return 0.0f;
  return x.data()[((n * channels + c) * height + h) * width + w];
}

void Matmul(const Tensor& a, const Tensor& b, Tensor& c) {
  const int64_t m_size = a.dim(0), k_size = a.dim(1), n_size = b.dim(1);
  for (int64_t m = 0; m < m_size; ++m) {
    for (int64_t n = 0; n < n_size; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < k_size; ++k) {
        acc = std::fma(a.data()[m * k_size + k], b.data()[k * n_size + n], acc);
      }
      c.data()[m * n_size + n] = acc;
    }
  }
}

void MatmulGradA(const Tensor& dc, const Tensor& b, Tensor& da) {
  const int64_t m_size = dc.dim(0), n_size = dc.dim(1), k_size = b.dim(0);
  for (int64_t m = 0; m < m_size; ++m) {
    for (int64_t k = 0; k < k_size; ++k) {
      float acc = 0.0f;
      for (int64_t n = 0; n < n_size; ++n) {
        acc = std::fma(dc.data()[m * n_size + n], b.data()[k * n_size + n], acc);
      }
      da.data()[m * k_size + k] = acc;
    }
  }
}

void MatmulGradB(const Tensor& a, const Tensor& dc, Tensor& db) {
  const int64_t m_size = a.dim(0), k_size = a.dim(1), n_size = dc.dim(1);
  for (int64_t k = 0; k < k_size; ++k) {
    for (int64_t n = 0; n < n_size; ++n) {
      float acc = 0.0f;
      for (int64_t m = 0; m < m_size; ++m) {
        acc = std::fma(a.data()[m * k_size + k], dc.data()[m * n_size + n], acc);
      }
      db.data()[k * n_size + n] = acc;
    }
  }
}

// Views X as [outer, channels, inner]: [M, N] is [M, N, 1] and [N, C, H, W] is [N, C, H*W].
struct ChannelView {
  int64_t outer, channels, inner;
};
ChannelView ChannelsOf(const Tensor& x) {
  if (x.rank() == 2) return {x.dim(0), x.dim(1), 1};
  return {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)};
}

void BiasAdd(const Tensor& x, const Tensor& b, Tensor& y) {
  const ChannelView v = ChannelsOf(x);
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t c = 0; c < v.channels; ++c) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t e = (o * v.channels + c) * v.inner + i;
        y.data()[e] = x.data()[e] + b.data()[c];
      }
    }
  }
}

// db[c] = sum over (outer, inner) ascending: for 2-D that is m ascending, for 4-D (n, h, w).
void BiasGrad(const Tensor& dy, Tensor& db) {
  const ChannelView v = ChannelsOf(dy);
  for (int64_t c = 0; c < v.channels; ++c) {
    float acc = 0.0f;
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) acc = acc + dy.data()[(o * v.channels + c) * v.inner + i];
    }
    db.data()[c] = acc;
  }
}

void Relu(const Tensor& x, Tensor& y) {
  for (int64_t e = 0; e < x.numel(); ++e) y.data()[e] = x.data()[e] > 0.0f ? x.data()[e] : 0.0f;
}

void ReluGrad(const Tensor& x, const Tensor& dy, Tensor& dx) {
  for (int64_t e = 0; e < x.numel(); ++e) dx.data()[e] = x.data()[e] > 0.0f ? dy.data()[e] : 0.0f;
}

void Conv(const Tensor& x, const Tensor& w, Tensor& y) {
  const int64_t batch = x.dim(0), cin = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t cout = w.dim(0);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t o = 0; o < cout; ++o) {
      for (int64_t h = 0; h < height; ++h) {
        for (int64_t wi = 0; wi < width; ++wi) {
          float acc = 0.0f;
          for (int64_t ci = 0; ci < cin; ++ci) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                acc = std::fma(w.data()[((o * cin + ci) * 3 + kh) * 3 + kw],
                               PaddedAt(x, n, ci, h + kh - 1, wi + kw - 1), acc);
              }
            }
          }
          y.data()[((n * cout + o) * height + h) * width + wi] = acc;
        }
      }
    }
  }
}

void ConvGradInput(const Tensor& dy, const Tensor& w, Tensor& dx) {
  const int64_t batch = dy.dim(0), cout = dy.dim(1), height = dy.dim(2), width = dy.dim(3);
  const int64_t cin = w.dim(1);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t ci = 0; ci < cin; ++ci) {
      for (int64_t h = 0; h < height; ++h) {
        for (int64_t wi = 0; wi < width; ++wi) {
          float acc = 0.0f;
          for (int64_t o = 0; o < cout; ++o) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                acc = std::fma(w.data()[((o * cin + ci) * 3 + kh) * 3 + kw],
                               PaddedAt(dy, n, o, h - kh + 1, wi - kw + 1), acc);
              }
            }
          }
          dx.data()[((n * cin + ci) * height + h) * width + wi] = acc;
        }
      }
    }
  }
}

void ConvGradWeight(const Tensor& x, const Tensor& dy, Tensor& dw) {
  const int64_t batch = x.dim(0), cin = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t cout = dy.dim(1);
  for (int64_t o = 0; o < cout; ++o) {
    for (int64_t ci = 0; ci < cin; ++ci) {
      for (int64_t kh = 0; kh < 3; ++kh) {
        for (int64_t kw = 0; kw < 3; ++kw) {
          float acc = 0.0f;
          for (int64_t n = 0; n < batch; ++n) {
            for (int64_t h = 0; h < height; ++h) {
              for (int64_t wi = 0; wi < width; ++wi) {
                acc = std::fma(dy.data()[((n * cout + o) * height + h) * width + wi],
                               PaddedAt(x, n, ci, h + kh - 1, wi + kw - 1), acc);
              }
            }
          }
          dw.data()[((o * cin + ci) * 3 + kh) * 3 + kw] = acc;
        }
      }
    }
  }
}

void MaxPool(const Tensor& x, Tensor& y, Tensor& arg) {
  const int64_t planes = x.dim(0) * x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t out_h = y.dim(2), out_w = y.dim(3);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t h = 0; h < out_h; ++h) {
      for (int64_t w = 0; w < out_w; ++w) {
        float best = 0.0f;
        int tap_of_best = 0;
        for (int tap = 0; tap < 4; ++tap) {
          const int64_t ih = 2 * h + tap / 2, iw = 2 * w + tap % 2;
          const float v = x.data()[(p * height + ih) * width + iw];
          if (tap == 0 || v > best) {
            best = v;
            tap_of_best = tap;
          }
        }
        y.data()[(p * out_h + h) * out_w + w] = best;
        arg.data()[(p * out_h + h) * out_w + w] = static_cast<float>(tap_of_best);
      }
    }
  }
}

void MaxPoolGrad(const Tensor& arg, const Tensor& dy, Tensor& dx) {
  const int64_t planes = dy.dim(0) * dy.dim(1), out_h = dy.dim(2), out_w = dy.dim(3);
  const int64_t height = dx.dim(2), width = dx.dim(3);
  for (int64_t e = 0; e < dx.numel(); ++e) dx.data()[e] = 0.0f;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t h = 0; h < out_h; ++h) {
      for (int64_t w = 0; w < out_w; ++w) {
        const int64_t o = (p * out_h + h) * out_w + w;
        const int tap = static_cast<int>(arg.data()[o]);
        const int64_t ih = 2 * h + tap / 2, iw = 2 * w + tap % 2;
        dx.data()[(p * height + ih) * width + iw] = dy.data()[o];
      }
    }
  }
}

void SoftmaxCrossEntropy(const Tensor& z, const Tensor& labels, Tensor& loss, Tensor& p) {
  const int64_t rows = z.dim(0), classes = z.dim(1);
  float total = 0.0f;
  for (int64_t b = 0; b < rows; ++b) {
    const float* zr = z.data() + b * classes;
    float* pr = p.data() + b * classes;
    float mx = zr[0];
    for (int64_t c = 1; c < classes; ++c) {
      if (zr[c] > mx) mx = zr[c];
    }
    float s = 0.0f;
    for (int64_t c = 0; c < classes; ++c) {
      pr[c] = det::Exp(zr[c] - mx);  // e[c], divided by s below
      s = s + pr[c];
    }
    for (int64_t c = 0; c < classes; ++c) pr[c] = pr[c] / s;
    const auto label = static_cast<int64_t>(labels.data()[b]);
    const float row_loss = (mx + det::Log(s)) - zr[label];
    total = total + row_loss;
  }
  loss.data()[0] = total / static_cast<float>(rows);
}

void SoftmaxCrossEntropyGrad(const Tensor& p, const Tensor& labels, Tensor& dz) {
  const int64_t rows = p.dim(0), classes = p.dim(1);
  const auto batch = static_cast<float>(rows);
  for (int64_t b = 0; b < rows; ++b) {
    const auto label = static_cast<int64_t>(labels.data()[b]);
    for (int64_t c = 0; c < classes; ++c) {
      const float target = c == label ? 1.0f : 0.0f;
      dz.data()[b * classes + c] = (p.data()[b * classes + c] - target) / batch;
    }
  }
}

// Reads every input element before writing, so the in-place aliasing op.h allows is safe.
void SgdMomentum(const OpAttrs& attrs, const Tensor& w, const Tensor& g, const Tensor& v,
                 Tensor& w_out, Tensor& v_out) {
  for (int64_t e = 0; e < w.numel(); ++e) {
    const float we = w.data()[e], ge = g.data()[e], ve = v.data()[e];
    const float d = std::fma(attrs.weight_decay, we, ge);
    const float v_new = std::fma(attrs.momentum, ve, d);
    w_out.data()[e] = std::fma(-attrs.lr, v_new, we);
    v_out.data()[e] = v_new;
  }
}

void AdamW(const OpAttrs& attrs, const Tensor& w, const Tensor& g, const Tensor& m,
           const Tensor& v, Tensor& w_out, Tensor& m_out, Tensor& v_out) {
  const float lr_wd = attrs.lr * attrs.weight_decay;
  const float one_minus_beta1 = 1.0f - attrs.beta1;
  const float one_minus_beta2 = 1.0f - attrs.beta2;
  for (int64_t e = 0; e < w.numel(); ++e) {
    const float we = w.data()[e], ge = g.data()[e], me = m.data()[e], ve = v.data()[e];
    const float w1 = std::fma(-lr_wd, we, we);
    const float m_new = std::fma(attrs.beta1, me, one_minus_beta1 * ge);
    const float v_new = std::fma(attrs.beta2, ve, (one_minus_beta2 * ge) * ge);
    const float mhat = m_new / attrs.bias_correction1;
    const float vhat = v_new / attrs.bias_correction2;
    w_out.data()[e] = w1 - attrs.lr * (mhat / (std::sqrt(vhat) + attrs.eps));
    m_out.data()[e] = m_new;
    v_out.data()[e] = v_new;
  }
}

// Reads A[e] and B[e] before writing C[e], so C may alias either addend.
void Add(const Tensor& a, const Tensor& b, Tensor& c) {
  for (int64_t e = 0; e < a.numel(); ++e) c.data()[e] = a.data()[e] + b.data()[e];
}

void TransposeHeads(const Tensor& x, Tensor& y) {
  const int64_t outer = x.dim(0), rows = x.dim(1), cols = x.dim(2), depth = x.dim(3);
  for (int64_t n = 0; n < outer; ++n) {
    for (int64_t a = 0; a < rows; ++a) {
      for (int64_t b = 0; b < cols; ++b) {
        for (int64_t d = 0; d < depth; ++d) {
          y.data()[((n * cols + b) * rows + a) * depth + d] =
              x.data()[((n * rows + a) * cols + b) * depth + d];
        }
      }
    }
  }
}

void Gelu(const Tensor& x, Tensor& y) {
  for (int64_t e = 0; e < x.numel(); ++e) y.data()[e] = det::GeluTanh(x.data()[e]);
}

void ClipCoefficient(const OpAttrs& attrs, const Tensor& s, Tensor& c) {
  for (int64_t e = 0; e < s.numel(); ++e) c.data()[e] = det::ClipCoefficient(s.data()[e], attrs.max_norm);
}

void GeluGrad(const Tensor& x, const Tensor& dy, Tensor& dx) {
  for (int64_t e = 0; e < x.numel(); ++e)
    dx.data()[e] = det::GeluTanhGrad(x.data()[e], dy.data()[e]);
}

void LayerNorm(const OpAttrs& attrs, const Tensor& x, const Tensor& gamma, const Tensor& beta,
               Tensor& y, Tensor& mean_out, Tensor& rstd_out) {
  const int64_t channels = x.shape().back(), rows = x.numel() / channels;
  const auto cf = static_cast<float>(channels);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * channels;
    float sum = 0.0f;
    for (int64_t c = 0; c < channels; ++c) sum = sum + xr[c];
    const float mean = sum / cf;
    float sq = 0.0f;
    for (int64_t c = 0; c < channels; ++c) sq = std::fma(xr[c] - mean, xr[c] - mean, sq);
    const float rstd = 1.0f / std::sqrt(sq / cf + attrs.eps);
    for (int64_t c = 0; c < channels; ++c) {
      y.data()[r * channels + c] = std::fma((xr[c] - mean) * rstd, gamma.data()[c], beta.data()[c]);
    }
    mean_out.data()[r] = mean;
    rstd_out.data()[r] = rstd;
  }
}

void LayerNormGrad(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                   const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const int64_t channels = x.shape().back(), rows = x.numel() / channels;
  const auto cf = static_cast<float>(channels);
  const auto xhat = [&](int64_t r, int64_t c) {
    return (x.data()[r * channels + c] - mean.data()[r]) * rstd.data()[r];
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy.data() + r * channels;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const float g = dyr[c] * gamma.data()[c];
      sum_g = sum_g + g;
      sum_gx = std::fma(g, xhat(r, c), sum_gx);
    }
    const float a = sum_g / cf, b = sum_gx / cf;
    for (int64_t c = 0; c < channels; ++c) {
      const float g = dyr[c] * gamma.data()[c];
      dx.data()[r * channels + c] = rstd.data()[r] * std::fma(-xhat(r, c), b, g - a);
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    float acc_gamma = 0.0f, acc_beta = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      acc_gamma = std::fma(dy.data()[r * channels + c], xhat(r, c), acc_gamma);
      acc_beta = acc_beta + dy.data()[r * channels + c];
    }
    dgamma.data()[c] = acc_gamma;
    dbeta.data()[c] = acc_beta;
  }
}

void CausalSoftmax(const OpAttrs& attrs, const Tensor& s, Tensor& p) {
  const int64_t t = s.shape().back(), rows = s.numel() / t;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % t;  // the query position: keys 0..i are visible
    const float* sr = s.data() + r * t;
    float* pr = p.data() + r * t;
    float mx = sr[0] * attrs.scale;
    for (int64_t j = 1; j <= i; ++j) {
      if (sr[j] * attrs.scale > mx) mx = sr[j] * attrs.scale;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j <= i; ++j) {
      pr[j] = det::Exp(sr[j] * attrs.scale - mx);  // e_j, divided by the sum below
      sum = sum + pr[j];
    }
    for (int64_t j = 0; j <= i; ++j) pr[j] = pr[j] / sum;
    for (int64_t j = i + 1; j < t; ++j) pr[j] = 0.0f;
  }
}

void CausalSoftmaxGrad(const OpAttrs& attrs, const Tensor& p, const Tensor& dp, Tensor& ds) {
  const int64_t t = p.shape().back(), rows = p.numel() / t;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % t;
    const float* pr = p.data() + r * t;
    const float* dpr = dp.data() + r * t;
    float dot = 0.0f;
    for (int64_t j = 0; j <= i; ++j) dot = std::fma(pr[j], dpr[j], dot);
    for (int64_t j = 0; j <= i; ++j) ds.data()[r * t + j] = (pr[j] * (dpr[j] - dot)) * attrs.scale;
    for (int64_t j = i + 1; j < t; ++j) ds.data()[r * t + j] = 0.0f;
  }
}

// The batched products: the same loop nests as Matmul, MatmulGradA and MatmulGradB, once per matrix
// of the leading axes.
struct Batched {
  int64_t count, rows0, cols0, rows1, cols1;  // matrices; the last two axes of each input
};
Batched BatchedOf(const Tensor& t0, const Tensor& t1) {
  const int r = t0.rank();
  int64_t count = 1;
  for (int axis = 0; axis < r - 2; ++axis) count *= t0.dim(axis);
  return {count, t0.dim(r - 2), t0.dim(r - 1), t1.dim(r - 2), t1.dim(r - 1)};
}

void BatchedMatmul(const Tensor& a, const Tensor& b, Tensor& c) {
  const Batched g = BatchedOf(a, b);
  const int64_t m_size = g.rows0, k_size = g.cols0, n_size = g.cols1;
  for (int64_t i = 0; i < g.count; ++i) {
    const float* ai = a.data() + i * m_size * k_size;
    const float* bi = b.data() + i * k_size * n_size;
    float* ci = c.data() + i * m_size * n_size;
    for (int64_t m = 0; m < m_size; ++m) {
      for (int64_t n = 0; n < n_size; ++n) {
        float acc = 0.0f;
        for (int64_t k = 0; k < k_size; ++k)
          acc = std::fma(ai[m * k_size + k], bi[k * n_size + n], acc);
        ci[m * n_size + n] = acc;
      }
    }
  }
}

void BatchedMatmulGradA(const Tensor& dc, const Tensor& b, Tensor& da) {
  const Batched g = BatchedOf(dc, b);
  const int64_t m_size = g.rows0, n_size = g.cols0, k_size = g.rows1;
  for (int64_t i = 0; i < g.count; ++i) {
    const float* dci = dc.data() + i * m_size * n_size;
    const float* bi = b.data() + i * k_size * n_size;
    float* dai = da.data() + i * m_size * k_size;
    for (int64_t m = 0; m < m_size; ++m) {
      for (int64_t k = 0; k < k_size; ++k) {
        float acc = 0.0f;
        for (int64_t n = 0; n < n_size; ++n)
          acc = std::fma(dci[m * n_size + n], bi[k * n_size + n], acc);
        dai[m * k_size + k] = acc;
      }
    }
  }
}

void BatchedMatmulGradB(const Tensor& a, const Tensor& dc, Tensor& db) {
  const Batched g = BatchedOf(a, dc);
  const int64_t m_size = g.rows0, k_size = g.cols0, n_size = g.cols1;
  for (int64_t i = 0; i < g.count; ++i) {
    const float* ai = a.data() + i * m_size * k_size;
    const float* dci = dc.data() + i * m_size * n_size;
    float* dbi = db.data() + i * k_size * n_size;
    for (int64_t k = 0; k < k_size; ++k) {
      for (int64_t n = 0; n < n_size; ++n) {
        float acc = 0.0f;
        for (int64_t m = 0; m < m_size; ++m)
          acc = std::fma(ai[m * k_size + k], dci[m * n_size + n], acc);
        dbi[k * n_size + n] = acc;
      }
    }
  }
}

void Embedding(const Tensor& w, const Tensor& ids, Tensor& y) {
  const int64_t channels = w.dim(1);
  for (int64_t n = 0; n < ids.numel(); ++n) {
    const auto row = static_cast<int64_t>(ids.data()[n]);
    for (int64_t c = 0; c < channels; ++c)
      y.data()[n * channels + c] = w.data()[row * channels + c];
  }
}

// Positions in ascending order, each added to its id's row: every dW[v, c] is one chain over the
// positions holding v, in order, from +0.0f.
void EmbeddingGrad(const Tensor& ids, const Tensor& dy, Tensor& dw) {
  const int64_t channels = dw.dim(1);
  for (int64_t e = 0; e < dw.numel(); ++e) dw.data()[e] = 0.0f;
  for (int64_t n = 0; n < ids.numel(); ++n) {
    const auto row = static_cast<int64_t>(ids.data()[n]);
    for (int64_t c = 0; c < channels; ++c) {
      dw.data()[row * channels + c] = dw.data()[row * channels + c] + dy.data()[n * channels + c];
    }
  }
}

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "reference"; }
  // Computes on the calling thread, so the default RunHostTasks (that thread, in order) fits.
  int host_threads() const override { return 1; }

  Status Run(Op op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::span<Tensor* const> outputs) override {
    POLNODE_RETURN_IF_ERROR(ValidateAndResizeOutputs(op, attrs, inputs, outputs));
    const auto in = [&](int i) -> const Tensor& { return *inputs[static_cast<std::size_t>(i)]; };
    const auto out = [&](int i) -> Tensor& { return *outputs[static_cast<std::size_t>(i)]; };
    switch (op) {
      case Op::kMatmul: Matmul(in(0), in(1), out(0)); break;
      case Op::kMatmulGradA: MatmulGradA(in(0), in(1), out(0)); break;
      case Op::kMatmulGradB: MatmulGradB(in(0), in(1), out(0)); break;
      case Op::kBiasAdd: BiasAdd(in(0), in(1), out(0)); break;
      case Op::kBiasGrad: BiasGrad(in(0), out(0)); break;
      case Op::kRelu: Relu(in(0), out(0)); break;
      case Op::kReluGrad: ReluGrad(in(0), in(1), out(0)); break;
      case Op::kConv2d3x3: Conv(in(0), in(1), out(0)); break;
      case Op::kConv2d3x3GradInput: ConvGradInput(in(0), in(1), out(0)); break;
      case Op::kConv2d3x3GradWeight: ConvGradWeight(in(0), in(1), out(0)); break;
      case Op::kMaxPool2x2: MaxPool(in(0), out(0), out(1)); break;
      case Op::kMaxPool2x2Grad: MaxPoolGrad(in(0), in(1), out(0)); break;
      case Op::kSoftmaxCrossEntropy: SoftmaxCrossEntropy(in(0), in(1), out(0), out(1)); break;
      case Op::kSoftmaxCrossEntropyGrad: SoftmaxCrossEntropyGrad(in(0), in(1), out(0)); break;
      case Op::kSgdMomentum: SgdMomentum(attrs, in(0), in(1), in(2), out(0), out(1)); break;
      case Op::kAdamW:
        AdamW(attrs, in(0), in(1), in(2), in(3), out(0), out(1), out(2));
        break;
      case Op::kAdd: Add(in(0), in(1), out(0)); break;
      case Op::kTransposeHeads: TransposeHeads(in(0), out(0)); break;
      case Op::kGelu: Gelu(in(0), out(0)); break;
      case Op::kGeluGrad: GeluGrad(in(0), in(1), out(0)); break;
      case Op::kLayerNorm: LayerNorm(attrs, in(0), in(1), in(2), out(0), out(1), out(2)); break;
      case Op::kLayerNormGrad:
        LayerNormGrad(in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2));
        break;
      case Op::kCausalSoftmax: CausalSoftmax(attrs, in(0), out(0)); break;
      case Op::kCausalSoftmaxGrad: CausalSoftmaxGrad(attrs, in(0), in(1), out(0)); break;
      case Op::kBatchedMatmul: BatchedMatmul(in(0), in(1), out(0)); break;
      case Op::kBatchedMatmulGradA: BatchedMatmulGradA(in(0), in(1), out(0)); break;
      case Op::kBatchedMatmulGradB: BatchedMatmulGradB(in(0), in(1), out(0)); break;
      case Op::kEmbedding: Embedding(in(0), in(1), out(0)); break;
      case Op::kEmbeddingGrad: EmbeddingGrad(in(0), in(1), out(0)); break;
      case Op::kClipCoefficient: ClipCoefficient(attrs, in(0), out(0)); break;
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Backend> MakeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace polnode::kernels
