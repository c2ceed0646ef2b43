// The fast CPU backend: op.h's operators with the bits of the reference backend, computed by
// the packed SGEMM (gemm.cc) for matrix products, by the per-instruction-set vector kernels
// (cpu_kernels_*.cc) for direct convolutions and element-wise work, and split over a persistent
// thread pool by output only.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu_kernels.h"
#include "gemm.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/cpu_backend.h"
#include "polnode/kernels/detmath.h"
#include "polnode/kernels/validate_run.h"
#include "thread_pool.h"

namespace polnode::kernels {
namespace {

using std::int64_t;

// Element-wise work below this many elements per thread is not worth a thread hand-off.
constexpr int64_t kElementwiseGrain = 1 << 14;
// Softmax and GELU cost an exp per element, so fewer elements already pay for a hand-off.
constexpr int64_t kExpGrain = 1 << 10;

// Scratch for the convolutions (zero-bordered planes; dY channels-last), one per thread, reused
// across calls.
thread_local std::vector<float> tls_columns;
thread_local std::vector<float> tls_transposed;

float* Scratch(std::vector<float>& storage, int64_t floats) {
  if (static_cast<int64_t>(storage.size()) < floats) storage.resize(static_cast<std::size_t>(floats));
  return storage.data();
}

// Copies `channels` h x w planes into zero-bordered ones ((h + 2) x (w + 2), cpu_kernels.h
// Conv3x3Direct) at `padded`, followed by the kConvReadSlack floats the kernels may read.
void PadPlanes(const float* planes, int64_t channels, int64_t height, int64_t width, float* padded) {
  const int64_t stride = width + 2, padded_plane = (height + 2) * stride;
  std::fill(padded, padded + channels * padded_plane + kConvReadSlack, 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t h = 0; h < height; ++h) {
      const float* row = planes + (c * height + h) * width;
      std::copy(row, row + width, padded + c * padded_plane + (h + 1) * stride + 1);
    }
  }
}

// The nine tap offsets of a zero-bordered plane with rows `width` + 2 long, in op.h's chain order:
// the forward taps Xpad[h+kh-1, w+kw-1] (flipped = false) or the input gradient's dYpad[h-kh+1,
// w-kw+1] (flipped = true), relative to output (h, w)'s top-left tap origin.
std::array<int64_t, 9> TapOffsets(int64_t width, bool flipped) {
  std::array<int64_t, 9> taps{};
  for (int64_t kh = 0; kh < 3; ++kh) {
    for (int64_t kw = 0; kw < 3; ++kw) {
      taps[static_cast<std::size_t>(kh * 3 + kw)] =
          flipped ? (2 - kh) * (width + 2) + (2 - kw) : kh * (width + 2) + kw;
    }
  }
  return taps;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(const CpuKernels& kernels, int threads) : kr_(kernels), pool_(threads) {}

  std::string name() const override { return "cpu-" + std::string(CpuIsaName(kr_.isa)); }
  int host_threads() const override { return pool_.size(); }
  void RunHostTasks(std::int64_t tasks, const std::function<void(std::int64_t)>& task) override {
    pool_.Run(tasks, task);
  }

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
      case Op::kBiasGrad: BiasGrad(in(0), out(0), nullptr); break;
      case Op::kRelu: Relu(in(0), out(0)); break;
      case Op::kReluGrad: ReluGrad(in(0), in(1), out(0)); break;
      case Op::kConv2d3x3: Conv(in(0), in(1), out(0)); break;
      case Op::kConv2d3x3GradInput: ConvGradInput(in(0), in(1), out(0)); break;
      case Op::kConv2d3x3GradWeight: ConvGradWeight(in(0), in(1), out(0)); break;
      case Op::kMaxPool2x2: MaxPool(in(0), out(0), out(1)); break;
      case Op::kMaxPool2x2Grad: MaxPoolGrad(in(0), in(1), out(0)); break;
      case Op::kSoftmaxCrossEntropy: SoftmaxCrossEntropy(in(0), in(1), out(0), out(1)); break;
      case Op::kSoftmaxCrossEntropyGrad: SoftmaxCrossEntropyGrad(in(0), in(1), out(0)); break;
      case Op::kSgdMomentum: Sgd(attrs, in(0), in(1), in(2), out(0), out(1)); break;
      case Op::kAdamW: AdamW(attrs, in(0), in(1), in(2), in(3), out(0), out(1), out(2)); break;
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
      case Op::kBatchedMatmul:
      case Op::kBatchedMatmulGradA:
      case Op::kBatchedMatmulGradB: BatchedMatmul(op, in(0), in(1), out(0)); break;
      case Op::kEmbedding: Embedding(in(0), in(1), out(0)); break;
      case Op::kEmbeddingGrad: EmbeddingGrad(in(0), in(1), out(0)); break;
      case Op::kClipCoefficient:  // one element in a step graph: nothing to vectorize
        for (int64_t e = 0; e < in(0).numel(); ++e) {
          out(0).data()[e] = det::ClipCoefficient(in(0).data()[e], attrs.max_norm);
        }
        break;
    }
    return Status::Ok();
  }

  Status EnqueueFused(Fusion fusion, std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) override {
    // Both pairs are two inputs and one output, then one output: other counts get the default's
    // error.
    if (inputs.size() != 2 || outputs.size() != 2) return Backend::EnqueueFused(fusion, inputs, outputs);
    const auto [first, second] = FusedOps(fusion);
    std::array<const Tensor*, 2> in{};
    Tensor* first_out = nullptr;
    const Tensor* between = nullptr;
    Tensor* second_out = nullptr;
    POLNODE_RETURN_IF_ERROR(HostOperands(first, OpAttrs{}, inputs, outputs.first(1), in, std::span(&first_out, 1)));
    const Buffer* const between_buffer[] = {outputs[0]};
    POLNODE_RETURN_IF_ERROR(
        HostOperands(second, OpAttrs{}, between_buffer, outputs.subspan(1), std::span(&between, 1), std::span(&second_out, 1)));
    switch (fusion) {
      case Fusion::kBiasAddRelu: BiasAdd(*in[0], *in[1], *first_out, second_out); break;
      case Fusion::kReluGradBiasGrad: {
        const ReluGradOf relu{*in[0], *in[1], *first_out};
        BiasGrad(*first_out, *second_out, &relu);
        break;
      }
    }
    return Status::Ok();
  }

 private:
  // Calls fn(begin, end) over [0, count) in at most pool-size contiguous chunks, each at least
  // `grain` long (aligned to 16 elements so vector bodies line up).
  template <typename Fn>
  void ParallelRange(int64_t count, int64_t grain, Fn&& fn) {
    const int64_t chunks = std::clamp<int64_t>(count / std::max<int64_t>(grain, 1), 1, pool_.size());
    if (chunks == 1) {
      fn(int64_t{0}, count);
      return;
    }
    pool_.Run(chunks, [&](int64_t t) {
      const int64_t begin = (count * t / chunks) / 16 * 16;
      const int64_t end = t + 1 == chunks ? count : (count * (t + 1) / chunks) / 16 * 16;
      fn(begin, end);
    });
  }

  void Matmul(const Tensor& a, const Tensor& b, Tensor& c) {
    const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    Gemm(kr_, {m, n, k, {a.data(), k, 1}, {b.data(), n, 1}, c.data(), n, false}, &pool_);
  }

  // dA[M,K] = dC[M,N] * B^T: the product's inner index is n.
  void MatmulGradA(const Tensor& dc, const Tensor& b, Tensor& da) {
    const int64_t m = dc.dim(0), n = dc.dim(1), k = b.dim(0);
    Gemm(kr_, {m, k, n, {dc.data(), n, 1}, {b.data(), 1, n}, da.data(), k, false}, &pool_);
  }

  // dB[K,N] = A^T * dC: the product's inner index is m.
  void MatmulGradB(const Tensor& a, const Tensor& dc, Tensor& db) {
    const int64_t m = a.dim(0), k = a.dim(1), n = dc.dim(1);
    Gemm(kr_, {k, n, m, {a.data(), 1, k}, {dc.data(), n, 1}, db.data(), n, false}, &pool_);
  }

  // Y = X + b; with `relu` (kBiasAddRelu), also R = ReLU(Y), each row or plane while it is in the
  // cache. X is read up, row by row, before R is written, so R may be X's storage.
  void BiasAdd(const Tensor& x, const Tensor& b, Tensor& y, Tensor* relu = nullptr) {
    if (x.rank() == 2) {
      const int64_t rows = x.dim(0), cols = x.dim(1);
      ParallelRange(rows, kElementwiseGrain / std::max<int64_t>(cols, 1) + 1,
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t r = r0; r < r1; ++r) {
                        kr_.add(x.data() + r * cols, b.data(), y.data() + r * cols, cols);
                        if (relu != nullptr) kr_.relu(y.data() + r * cols, relu->data() + r * cols, cols);
                      }
                    });
      return;
    }
    const int64_t channels = x.dim(1), plane = x.dim(2) * x.dim(3);
    ParallelRange(x.dim(0) * channels, kElementwiseGrain / std::max<int64_t>(plane, 1) + 1,
                  [&](int64_t p0, int64_t p1) {
                    for (int64_t p = p0; p < p1; ++p) {
                      kr_.add_scalar(x.data() + p * plane, b.data()[p % channels],
                                     y.data() + p * plane, plane);
                      if (relu != nullptr) kr_.relu(y.data() + p * plane, relu->data() + p * plane, plane);
                    }
                  });
  }

  // kReluGradBiasGrad's first operator, dx = ReluGrad(x, dy): the tensor its bias gradient sums.
  struct ReluGradOf {
    const Tensor& x;
    const Tensor& dy;
    Tensor& dx;
  };

  // db = BiasGrad(g). With `relu` (kReluGradBiasGrad; g is then relu->dx), each block of g (a row's
  // columns, a group of channel planes) is first written as ReluGrad(relu->x, relu->dy), then
  // summed while in cache.
  void BiasGrad(const Tensor& g, Tensor& db, const ReluGradOf* relu) {
    std::fill(db.values().begin(), db.values().end(), 0.0f);
    if (g.rank() == 2) {
      // Column sums taken row by row: each column's chain is m ascending, as in op.h.
      const int64_t rows = g.dim(0), cols = g.dim(1);
      ParallelRange(cols, 64, [&](int64_t c0, int64_t c1) {
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t offset = r * cols + c0;
          if (relu != nullptr) kr_.relu_grad(relu->x.data() + offset, relu->dy.data() + offset, relu->dx.data() + offset, c1 - c0);
          kr_.accumulate(g.data() + offset, db.data() + c0, c1 - c0);
        }
      });
      return;
    }
    // One chain per channel over (n, h, w). Channels are independent: each thread takes a run of
    // whole registers of them (conv_lanes channels, whose chains advance together in one register
    // per image; a register's transposes cost the same however few channels it holds).
    const int64_t batch = g.dim(0), channels = g.dim(1), plane = g.dim(2) * g.dim(3);
    const int64_t registers = (channels + kr_.conv_lanes - 1) / kr_.conv_lanes;
    const int64_t workers = std::min<int64_t>(pool_.size(), registers);
    if (relu != nullptr && workers < pool_.size()) {
      // Fewer registers than threads: the ReLU gradient runs on every thread first, and the sums
      // read it back, rather than leaving threads idle during it.
      ReluGrad(relu->x, relu->dy, relu->dx);
      relu = nullptr;
    }
    pool_.Run(workers, [&](int64_t t) {
      const int64_t c1 = std::min(channels, registers * (t + 1) / workers * kr_.conv_lanes);
      for (int64_t c = registers * t / workers * kr_.conv_lanes; c < c1; c += kr_.conv_lanes) {
        BiasGradPlanes args{nullptr, std::min<int64_t>(kr_.conv_lanes, c1 - c), plane, db.data() + c};
        for (int64_t n = 0; n < batch; ++n) {
          const int64_t offset = (n * channels + c) * plane;
          args.g = g.data() + offset;
          if (relu != nullptr) {
            args.relu_x = relu->x.data() + offset;
            args.relu_dy = relu->dy.data() + offset;
            args.relu_dx = relu->dx.data() + offset;
          }
          kr_.bias_grad_planes(args);
        }
      }
    });
  }

  void Relu(const Tensor& x, Tensor& y) {
    ParallelRange(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      kr_.relu(x.data() + b, y.data() + b, e - b);
    });
  }

  void ReluGrad(const Tensor& x, const Tensor& dy, Tensor& dx) {
    ParallelRange(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      kr_.relu_grad(x.data() + b, dy.data() + b, dx.data() + b, e - b);
    });
  }

  // Runs per_image(n, pool) for every image (or matrix of a batched product): images in parallel
  // (each on one thread) when there are enough of them, else one after another with the pool
  // passed down to the GEMM.
  template <typename Fn>
  void ForEachImage(int64_t batch, Fn&& per_image) {
    if (batch >= pool_.size() && pool_.size() > 1) {
      pool_.Run(pool_.size(), [&](int64_t t) {
        for (int64_t n = batch * t / pool_.size(); n < batch * (t + 1) / pool_.size(); ++n) {
          per_image(n, nullptr);
        }
      });
      return;
    }
    for (int64_t n = 0; n < batch; ++n) per_image(n, &pool_);
  }

  // Y[n, o] by direct convolution (cpu_kernels.h Conv3x3Direct): each output element's chain runs
  // over (ci, kh, kw) in op.h's order, padded taps reading the zero border.
  void Conv(const Tensor& x, const Tensor& w, Tensor& y) {
    const int64_t cin = x.dim(1), height = x.dim(2), width = x.dim(3), cout = w.dim(0);
    ConvDirect(x.data(), x.dim(0), cin, height, width, w.data(), cout, TapOffsets(width, false), y.data());
  }

  // dX[n, ci] as a direct convolution of dY[n] with the taps flipped and the weights read as
  // Wt[ci, o, kh, kw] = W[o, ci, kh, kw]: each chain runs over (o, kh, kw) in op.h's order.
  void ConvGradInput(const Tensor& dy, const Tensor& w, Tensor& dx) {
    const int64_t cout = dy.dim(1), height = dy.dim(2), width = dy.dim(3), cin = w.dim(1);
    std::vector<float> wt(static_cast<std::size_t>(cin * cout * 9));
    for (int64_t o = 0; o < cout; ++o) {
      for (int64_t ci = 0; ci < cin; ++ci) {
        for (int64_t t = 0; t < 9; ++t) wt[(ci * cout + o) * 9 + t] = w.data()[(o * cin + ci) * 9 + t];
      }
    }
    ConvDirect(dy.data(), dy.dim(0), cout, height, width, wt.data(), cin, TapOffsets(width, true), dx.data());
  }

  // `batch` images of `channels` planes in, `outputs` planes each out, through
  // CpuKernels::conv3x3_direct: images in parallel when there are enough, else each image's
  // rows split among the threads.
  void ConvDirect(const float* in, int64_t batch, int64_t channels, int64_t height, int64_t width,
                  const float* weights, int64_t outputs, const std::array<int64_t, 9>& taps, float* out) {
    const int64_t plane = height * width, padded_plane = (height + 2) * (width + 2);
    ForEachImage(batch, [&](int64_t n, ThreadPool* pool) {
      float* padded = Scratch(tls_columns, channels * padded_plane + kConvReadSlack);
      PadPlanes(in + n * channels * plane, channels, height, width, padded);
      const auto rows = [&](int64_t r0, int64_t r1) {
        kr_.conv3x3_direct({padded, padded_plane, channels, width, r0, r1 - r0, taps.data(), weights, outputs,
                            out + n * outputs * plane + r0 * width, plane});
      };
      if (pool == nullptr || height < pool->size()) {
        rows(0, height);
        return;
      }
      pool->Run(pool->size(), [&](int64_t t) { rows(height * t / pool->size(), height * (t + 1) / pool->size()); });
    });
  }

  // dW[o, ci, kh, kw]: one chain per weight over (n, h, w) ascending, continued image by image
  // (CpuKernels::conv3x3_weight_grad, vectorized over o with dY read channels-last); the input
  // channels are split among the threads, each of which pads its own channels of every image.
  void ConvGradWeight(const Tensor& x, const Tensor& dy, Tensor& dw) {
    const int64_t batch = x.dim(0), cin = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t cout = dy.dim(1), plane = height * width, padded_plane = (height + 2) * (width + 2);
    const int64_t lanes = kr_.conv_lanes;
    const int64_t padded_outputs = (cout + lanes - 1) / lanes * lanes;
    std::vector<float> acc(static_cast<std::size_t>(cin * 9 * padded_outputs), 0.0f);  // chains start at +0.0f
    const std::array<int64_t, 9> taps = TapOffsets(width, false);
    const int64_t workers = std::min<int64_t>(pool_.size(), cin);
    pool_.Run(workers, [&](int64_t t) {
      const int64_t c0 = cin * t / workers, c1 = cin * (t + 1) / workers;
      float* padded = Scratch(tls_columns, (c1 - c0) * padded_plane + kConvReadSlack);
      float* dy_t = Scratch(tls_transposed, plane * padded_outputs);
      for (int64_t n = 0; n < batch; ++n) {
        PadPlanes(x.data() + (n * cin + c0) * plane, c1 - c0, height, width, padded);
        kr_.channels_last(dy.data() + n * cout * plane, cout, plane, padded_outputs, dy_t);
        kr_.conv3x3_weight_grad({dy_t, padded_outputs, padded, padded_plane, c1 - c0, height, width, taps.data(),
                                 acc.data() + c0 * 9 * padded_outputs});
      }
    });
    for (int64_t o = 0; o < cout; ++o) {
      for (int64_t ci = 0; ci < cin; ++ci) {
        for (int64_t t = 0; t < 9; ++t) {
          dw.data()[(o * cin + ci) * 9 + t] = acc[static_cast<std::size_t>((ci * 9 + t) * padded_outputs + o)];
        }
      }
    }
  }

  void MaxPool(const Tensor& x, Tensor& y, Tensor& arg) {
    const int64_t height = x.dim(2), width = x.dim(3), out_h = y.dim(2), out_w = y.dim(3);
    ParallelRange(x.dim(0) * x.dim(1), 64, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        for (int64_t h = 0; h < out_h; ++h) {
          const float* top = x.data() + (p * height + 2 * h) * width;
          const int64_t out = (p * out_h + h) * out_w;
          kr_.max_pool_row(top, top + width, y.data() + out, arg.data() + out, out_w);
        }
      }
    });
  }

  // Each 2 x 2 window of dX written once: dY's value (its bits) at the window's tap, +0.0f at the
  // other three; a row or column no window covers (odd sizes) is +0.0f.
  void MaxPoolGrad(const Tensor& arg, const Tensor& dy, Tensor& dx) {
    const int64_t out_h = dy.dim(2), out_w = dy.dim(3), height = dx.dim(2), width = dx.dim(3);
    ParallelRange(dy.dim(0) * dy.dim(1), 64, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        float* plane = dx.data() + p * height * width;
        for (int64_t h = 0; h < out_h; ++h) {
          float* top = plane + 2 * h * width;
          float* bottom = top + width;
          const int64_t out = (p * out_h + h) * out_w;
          kr_.max_pool_grad_row(arg.data() + out, dy.data() + out, top, bottom, out_w);
          if (width % 2 != 0) top[width - 1] = bottom[width - 1] = 0.0f;
        }
        if (height % 2 != 0) std::fill(plane + (height - 1) * width, plane + height * width, 0.0f);
      }
    });
  }

  // Rows in parallel; the batch mean is then one chain over rows ascending, as in op.h.
  void SoftmaxCrossEntropy(const Tensor& z, const Tensor& labels, Tensor& loss, Tensor& p) {
    const int64_t rows = z.dim(0), classes = z.dim(1);
    std::vector<float> row_loss(static_cast<std::size_t>(rows));
    ParallelRange(rows, kExpGrain / classes + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t b = r0; b < r1; ++b) {
        const float* zr = z.data() + b * classes;
        float* pr = p.data() + b * classes;
        float mx = zr[0];
        for (int64_t c = 1; c < classes; ++c) mx = zr[c] > mx ? zr[c] : mx;
        // The exponentials through the kernel table (det::Exp lane by lane, the same bits), where
        // fma is an instruction rather than a call into libm; then the sum, one chain as before.
        kr_.exp_shifted(zr, mx, pr, classes);
        float s = 0.0f;
        for (int64_t c = 0; c < classes; ++c) s = s + pr[c];
        kr_.divide(pr, s, pr, classes);
        row_loss[static_cast<std::size_t>(b)] =
            (mx + det::Log(s)) - zr[static_cast<int64_t>(labels.data()[b])];
      }
    });
    float total = 0.0f;
    for (float v : row_loss) total = total + v;
    loss.data()[0] = total / static_cast<float>(rows);
  }

  // dZ = (P - onehot) / B: P / B everywhere (P - 0 is P exactly), then the label's element.
  void SoftmaxCrossEntropyGrad(const Tensor& p, const Tensor& labels, Tensor& dz) {
    const int64_t rows = p.dim(0), classes = p.dim(1);
    const auto batch = static_cast<float>(rows);
    ParallelRange(rows, kElementwiseGrain / classes + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t b = r0; b < r1; ++b) {
        kr_.divide(p.data() + b * classes, batch, dz.data() + b * classes, classes);
        const auto label = static_cast<int64_t>(labels.data()[b]);
        dz.data()[b * classes + label] = (p.data()[b * classes + label] - 1.0f) / batch;
      }
    });
  }

  void Sgd(const OpAttrs& attrs, const Tensor& w, const Tensor& g, const Tensor& v, Tensor& w_out,
           Tensor& v_out) {
    const SgdParams prm{attrs.lr, attrs.momentum, attrs.weight_decay};
    ParallelRange(w.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      kr_.sgd(prm, w.data() + b, g.data() + b, v.data() + b, w_out.data() + b, v_out.data() + b,
              e - b);
    });
  }

  void AdamW(const OpAttrs& attrs, const Tensor& w, const Tensor& g, const Tensor& m,
             const Tensor& v, Tensor& w_out, Tensor& m_out, Tensor& v_out) {
    const AdamParams prm{attrs.lr,          attrs.lr * attrs.weight_decay, attrs.beta1,
                         1.0f - attrs.beta1, attrs.beta2, 1.0f - attrs.beta2,
                         attrs.bias_correction1, attrs.bias_correction2, attrs.eps};
    ParallelRange(w.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      kr_.adamw(prm, w.data() + b, g.data() + b, m.data() + b, v.data() + b, w_out.data() + b,
                m_out.data() + b, v_out.data() + b, e - b);
    });
  }

  // Element-wise: C may alias A or B, and each element is read before it is written.
  void Add(const Tensor& a, const Tensor& b, Tensor& c) {
    ParallelRange(a.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      kr_.add(a.data() + begin, b.data() + begin, c.data() + begin, end - begin);
    });
  }

  // Y[n, b, a, :] = X[n, a, b, :]: one contiguous run of D floats per (n, b, a), written in
  // output order so each thread writes one contiguous slice.
  void TransposeHeads(const Tensor& x, Tensor& y) {
    const int64_t rows = x.dim(1), cols = x.dim(2), depth = x.dim(3);
    const int64_t runs = x.dim(0) * cols * rows;  // output runs, (n, b, a) row-major
    ParallelRange(runs, kElementwiseGrain / std::max<int64_t>(depth, 1) + 1,
                  [&](int64_t r0, int64_t r1) {
                    for (int64_t r = r0; r < r1; ++r) {
                      const int64_t a = r % rows, b = (r / rows) % cols, n = r / (rows * cols);
                      std::copy_n(x.data() + ((n * rows + a) * cols + b) * depth, depth,
                                  y.data() + r * depth);
                    }
                  });
  }

  void Gelu(const Tensor& x, Tensor& y) {
    ParallelRange(x.numel(), kExpGrain,
                  [&](int64_t b, int64_t e) { kr_.gelu(x.data() + b, y.data() + b, e - b); });
  }

  void GeluGrad(const Tensor& x, const Tensor& dy, Tensor& dx) {
    ParallelRange(x.numel(), kExpGrain, [&](int64_t b, int64_t e) {
      kr_.gelu_grad(x.data() + b, dy.data() + b, dx.data() + b, e - b);
    });
  }

  // Rows in parallel: each row's chains run on one thread (kr_.layer_norm_stats), then the row's
  // outputs are independent per element.
  void LayerNorm(const OpAttrs& attrs, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                 Tensor& y, Tensor& mean, Tensor& rstd) {
    const int64_t channels = x.shape().back(), rows = x.numel() / channels;
    ParallelRange(rows, kElementwiseGrain / channels + 1, [&](int64_t r0, int64_t r1) {
      kr_.layer_norm_stats(x.data() + r0 * channels, r1 - r0, channels, attrs.eps, mean.data() + r0,
                           rstd.data() + r0);
      for (int64_t r = r0; r < r1; ++r) {
        kr_.layer_norm_row(x.data() + r * channels, mean.data()[r], rstd.data()[r], gamma.data(),
                           beta.data(), y.data() + r * channels, channels);
      }
    });
  }

  // dX: rows in parallel, as the forward. dGamma and dBeta: one chain per column over all rows,
  // so the columns are split among threads and each thread walks every row in order.
  void LayerNormGrad(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                     const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
    const int64_t channels = x.shape().back(), rows = x.numel() / channels;
    std::vector<float> a(static_cast<std::size_t>(rows)), b(static_cast<std::size_t>(rows));
    ParallelRange(rows, kElementwiseGrain / channels + 1, [&](int64_t r0, int64_t r1) {
      const int64_t off = r0 * channels;
      kr_.layer_norm_grad_sums(x.data() + off, dy.data() + off, gamma.data(), mean.data() + r0,
                               rstd.data() + r0, r1 - r0, channels, a.data() + r0, b.data() + r0);
      for (int64_t r = r0; r < r1; ++r) {
        kr_.layer_norm_grad_row(x.data() + r * channels, dy.data() + r * channels, gamma.data(),
                                mean.data()[r], rstd.data()[r], a[static_cast<std::size_t>(r)],
                                b[static_cast<std::size_t>(r)], dx.data() + r * channels, channels);
      }
    });
    std::fill(dgamma.values().begin(), dgamma.values().end(), 0.0f);
    std::fill(dbeta.values().begin(), dbeta.values().end(), 0.0f);
    ParallelRange(channels, 64, [&](int64_t c0, int64_t c1) {
      for (int64_t r = 0; r < rows; ++r) {
        kr_.layer_norm_param_step(x.data() + r * channels + c0, dy.data() + r * channels + c0,
                                  mean.data()[r], rstd.data()[r], dgamma.data() + c0,
                                  dbeta.data() + c0, c1 - c0);
      }
    });
  }

  // Rows in parallel. Per row: z = S * scale into P, the strict-greater max, e = Exp(z - max) in
  // place, the sum as one chain, the division; masked entries +0.0f.
  void CausalSoftmax(const OpAttrs& attrs, const Tensor& s, Tensor& p) {
    const int64_t t = s.shape().back(), rows = s.numel() / t;
    ParallelRange(rows, kExpGrain / t + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t visible = r % t + 1;
        float* pr = p.data() + r * t;
        kr_.multiply(s.data() + r * t, attrs.scale, pr, visible);
        float mx = pr[0];
        for (int64_t j = 1; j < visible; ++j) mx = pr[j] > mx ? pr[j] : mx;
        kr_.exp_shifted(pr, mx, pr, visible);
        float sum = 0.0f;
        for (int64_t j = 0; j < visible; ++j) sum = sum + pr[j];
        kr_.divide(pr, sum, pr, visible);
        std::fill(pr + visible, pr + t, 0.0f);
      }
    });
  }

  void CausalSoftmaxGrad(const OpAttrs& attrs, const Tensor& p, const Tensor& dp, Tensor& ds) {
    const int64_t t = p.shape().back(), rows = p.numel() / t;
    ParallelRange(rows, kElementwiseGrain / t + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t visible = r % t + 1;
        const float* pr = p.data() + r * t;
        const float* dpr = dp.data() + r * t;
        float* dsr = ds.data() + r * t;
        kr_.softmax_grad_row(pr, dpr, kr_.dot_chain(pr, dpr, visible), attrs.scale, dsr, visible);
        std::fill(dsr + visible, dsr + t, 0.0f);
      }
    });
  }

  // One GEMM per matrix of the leading axes, with kMatmul's three layouts (op.h's chains per
  // matrix are exactly the 2-D operators').
  void BatchedMatmul(Op op, const Tensor& t0, const Tensor& t1, Tensor& out) {
    const int r = t0.rank();
    const int64_t rows0 = t0.dim(r - 2), cols0 = t0.dim(r - 1), rows1 = t1.dim(r - 2),
                  cols1 = t1.dim(r - 1);
    const int64_t size0 = rows0 * cols0, size1 = rows1 * cols1;
    const int64_t out_size = out.dim(r - 2) * out.dim(r - 1);
    int64_t matrices = 1;
    for (int axis = 0; axis < r - 2; ++axis) matrices *= t0.dim(axis);
    ForEachImage(matrices, [&](int64_t g, ThreadPool* pool) {
      const float* x = t0.data() + g * size0;
      const float* y = t1.data() + g * size1;
      float* c = out.data() + g * out_size;
      switch (op) {
        case Op::kBatchedMatmulGradA:  // dC[M,N] * B[K,N]^T: inner index n
          Gemm(kr_, {rows0, rows1, cols0, {x, cols0, 1}, {y, 1, cols1}, c, rows1, false}, pool);
          break;
        case Op::kBatchedMatmulGradB:  // A[M,K]^T * dC[M,N]: inner index m
          Gemm(kr_, {cols0, cols1, rows0, {x, 1, cols0}, {y, cols1, 1}, c, cols1, false}, pool);
          break;
        default:  // A[M,K] * B[K,N]
          Gemm(kr_, {rows0, cols1, cols0, {x, cols0, 1}, {y, cols1, 1}, c, cols1, false}, pool);
          break;
      }
    });
  }

  void Embedding(const Tensor& w, const Tensor& ids, Tensor& y) {
    const int64_t channels = w.dim(1);
    ParallelRange(ids.numel(), kElementwiseGrain / channels + 1, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const auto row = static_cast<int64_t>(ids.data()[n]);
        std::copy_n(w.data() + row * channels, channels, y.data() + n * channels);
      }
    });
  }

  // The table's rows are split among threads; each thread walks every position in order and adds
  // the ones whose id falls in its rows, so each dW[v, :] is one chain over positions ascending.
  void EmbeddingGrad(const Tensor& ids, const Tensor& dy, Tensor& dw) {
    const int64_t rows = dw.dim(0), channels = dw.dim(1);
    ParallelRange(rows, 1, [&](int64_t v0, int64_t v1) {
      std::fill(dw.data() + v0 * channels, dw.data() + v1 * channels, 0.0f);
      for (int64_t n = 0; n < ids.numel(); ++n) {
        const auto row = static_cast<int64_t>(ids.data()[n]);
        if (row >= v0 && row < v1)
          kr_.accumulate(dy.data() + n * channels, dw.data() + row * channels, channels);
      }
    });
  }

  const CpuKernels& kr_;
  ThreadPool pool_;
};

}  // namespace

Result<std::unique_ptr<Backend>> MakeCpuBackendForIsa(CpuIsa isa, int threads) {
  if (threads < 1) {
    return Status::InvalidArgument("the cpu backend needs threads >= 1, got " +
                                   std::to_string(threads));
  }
  const std::vector<CpuIsa> available = AvailableCpuIsas();
  if (std::find(available.begin(), available.end(), isa) == available.end()) {
    return Status::Unavailable("this machine cannot run the cpu backend's " +
                               std::string(CpuIsaName(isa)) + " kernels");
  }
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(GetCpuKernels(isa), threads));
}

std::unique_ptr<Backend> MakeCpuBackend(int threads) {
  return std::make_unique<CpuBackend>(GetCpuKernels(SelectedCpuIsa()), std::max(threads, 1));
}

}  // namespace polnode::kernels
