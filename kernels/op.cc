// Operator names, arity, shape inference, Adam's bias correction and the learning-rate schedule
// (op.h).
#include "polnode/kernels/op.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <utility>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "polnode/kernels/detmath.h"

namespace polnode::kernels {
namespace {

struct OpInfo {
  Op op;
  std::string_view name;
  int inputs;
  int outputs;
};

// Indexed by the enum value; the static_assert below keeps it in step with op.h.
constexpr std::array<OpInfo, kNumOps> kOpInfo = {{
    {Op::kMatmul, "matmul", 2, 1},
    {Op::kMatmulGradA, "matmul_grad_a", 2, 1},
    {Op::kMatmulGradB, "matmul_grad_b", 2, 1},
    {Op::kBiasAdd, "bias_add", 2, 1},
    {Op::kBiasGrad, "bias_grad", 1, 1},
    {Op::kRelu, "relu", 1, 1},
    {Op::kReluGrad, "relu_grad", 2, 1},
    {Op::kConv2d3x3, "conv2d_3x3", 2, 1},
    {Op::kConv2d3x3GradInput, "conv2d_3x3_grad_input", 2, 1},
    {Op::kConv2d3x3GradWeight, "conv2d_3x3_grad_weight", 2, 1},
    {Op::kMaxPool2x2, "max_pool_2x2", 1, 2},
    {Op::kMaxPool2x2Grad, "max_pool_2x2_grad", 2, 1},
    {Op::kSoftmaxCrossEntropy, "softmax_cross_entropy", 2, 2},
    {Op::kSoftmaxCrossEntropyGrad, "softmax_cross_entropy_grad", 2, 1},
    {Op::kSgdMomentum, "sgd_momentum", 3, 2},
    {Op::kAdamW, "adamw", 4, 3},
    {Op::kAdd, "add", 2, 1},
    {Op::kTransposeHeads, "transpose_heads", 1, 1},
    {Op::kGelu, "gelu", 1, 1},
    {Op::kGeluGrad, "gelu_grad", 2, 1},
    {Op::kLayerNorm, "layer_norm", 3, 3},
    {Op::kLayerNormGrad, "layer_norm_grad", 5, 3},
    {Op::kCausalSoftmax, "causal_softmax", 1, 1},
    {Op::kCausalSoftmaxGrad, "causal_softmax_grad", 2, 1},
    {Op::kBatchedMatmul, "batched_matmul", 2, 1},
    {Op::kBatchedMatmulGradA, "batched_matmul_grad_a", 2, 1},
    {Op::kBatchedMatmulGradB, "batched_matmul_grad_b", 2, 1},
    {Op::kEmbedding, "embedding", 2, 1},
    {Op::kEmbeddingGrad, "embedding_grad", 2, 1},
    {Op::kClipCoefficient, "clip_coefficient", 1, 1},
}};

constexpr bool OpInfoIsIndexedByEnum() {
  for (int i = 0; i < kNumOps; ++i) {
    if (static_cast<int>(kOpInfo[static_cast<std::size_t>(i)].op) != i) return false;
  }
  return true;
}
static_assert(OpInfoIsIndexedByEnum(), "kOpInfo must list the operators in enum order");

const OpInfo& Info(Op op) { return kOpInfo[static_cast<std::size_t>(op)]; }

// Builds the error messages of one InferOutputShapes call, all prefixed by the operator name, and
// records which inputs hold indices (checked against their values only when there are values).
class ShapeChecker {
 public:
  ShapeChecker(Op op, std::span<const Shape* const> shapes, std::vector<IndexInput>* index_inputs)
      : op_(op), shapes_(shapes), index_inputs_(index_inputs) {}

  Status Error(const std::string& what) const {
    return Status::InvalidArgument(std::string(OpName(op_)) + ": " + what);
  }

  const Shape& shape(int i) const { return *shapes_[static_cast<std::size_t>(i)]; }

  // "input 1 (B) is [3, 4]": names the input so a message points at the argument to fix.
  std::string Describe(int i, std::string_view role) const {
    return "input " + std::to_string(i) + " (" + std::string(role) + ") is " +
           ShapeToString(shape(i));
  }

  Status RequireRank(int i, std::string_view role, int rank) const {
    if (static_cast<int>(shape(i).size()) != rank) {
      return Error(Describe(i, role) + ", expected rank " + std::to_string(rank));
    }
    return Status::Ok();
  }

  Status RequireSameShape(int i, std::string_view role_i, int j, std::string_view role_j) const {
    if (shape(i) != shape(j)) {
      return Error(Describe(i, role_i) + " but " + Describe(j, role_j) + "; they must match");
    }
    return Status::Ok();
  }

  Status RequireDim(int i, std::string_view role, int axis, std::int64_t want,
                    std::string_view why) const {
    if (shape(i)[static_cast<std::size_t>(axis)] != want) {
      return Error(Describe(i, role) + ", expected dimension " + std::to_string(axis) + " to be " +
                   std::to_string(want) + " (" + std::string(why) + ")");
    }
    return Status::Ok();
  }

  // Class labels / pool taps / token ids: every value an exact integer in [0, limit). Recorded
  // here and checked against the values by InferOutputShapes, because a bad index would otherwise
  // make a backend read or write out of bounds.
  Status RequireIndices(int i, std::string_view role, std::int64_t limit) const {
    if (index_inputs_ != nullptr) index_inputs_->push_back({i, role, limit});
    return Status::Ok();
  }

 private:
  Op op_;
  std::span<const Shape* const> shapes_;
  std::vector<IndexInput>* index_inputs_;
};

Result<std::vector<Shape>> InferMatmul(Op op, const ShapeChecker& c) {
  POLNODE_RETURN_IF_ERROR(c.RequireRank(0, op == Op::kMatmulGradA ? "dC" : "A", 2));
  POLNODE_RETURN_IF_ERROR(c.RequireRank(1, op == Op::kMatmulGradB ? "dC" : "B", 2));
  const Shape& s0 = c.shape(0);
  const Shape& s1 = c.shape(1);
  switch (op) {
    case Op::kMatmul:  // A[M,K], B[K,N] -> C[M,N]
      if (s0[1] != s1[0]) {
        return c.Error(c.Describe(0, "A") + " and " + c.Describe(1, "B") +
                       ": the inner dimensions differ (" + std::to_string(s0[1]) + " vs " +
                       std::to_string(s1[0]) + ")");
      }
      return std::vector<Shape>{{s0[0], s1[1]}};
    case Op::kMatmulGradA:  // dC[M,N], B[K,N] -> dA[M,K]
      if (s0[1] != s1[1]) {
        return c.Error(c.Describe(0, "dC") + " and " + c.Describe(1, "B") +
                       ": their column counts differ (" + std::to_string(s0[1]) + " vs " +
                       std::to_string(s1[1]) + ")");
      }
      return std::vector<Shape>{{s0[0], s1[0]}};
    default:  // kMatmulGradB: A[M,K], dC[M,N] -> dB[K,N]
      if (s0[0] != s1[0]) {
        return c.Error(c.Describe(0, "A") + " and " + c.Describe(1, "dC") +
                       ": their row counts differ (" + std::to_string(s0[0]) + " vs " +
                       std::to_string(s1[0]) + ")");
      }
      return std::vector<Shape>{{s0[1], s1[1]}};
  }
}

Result<std::vector<Shape>> InferBias(Op op, const ShapeChecker& c) {
  const Shape& x = c.shape(0);
  const std::string_view role = op == Op::kBiasAdd ? "X" : "dY";
  if (x.size() != 2 && x.size() != 4) {
    return c.Error(c.Describe(0, role) + ", expected rank 2 [M,N] or rank 4 [N,C,H,W]");
  }
  const std::int64_t channels = x[1];  // the last axis of [M,N], the channel axis of [N,C,H,W]
  if (op == Op::kBiasGrad) return std::vector<Shape>{{channels}};
  POLNODE_RETURN_IF_ERROR(c.RequireRank(1, "b", 1));
  POLNODE_RETURN_IF_ERROR(
      c.RequireDim(1, "b", 0, channels,
                   x.size() == 2 ? "the last dimension of X" : "the channel dimension of X"));
  return std::vector<Shape>{x};
}

Status RequireConvWeight(const ShapeChecker& c, int i) {
  POLNODE_RETURN_IF_ERROR(c.RequireRank(i, "W", 4));
  if (c.shape(i)[2] != 3 || c.shape(i)[3] != 3) {
    return c.Error(c.Describe(i, "W") + ", expected a [Co, Ci, 3, 3] kernel");
  }
  return Status::Ok();
}

Result<std::vector<Shape>> InferConv(Op op, const ShapeChecker& c) {
  switch (op) {
    case Op::kConv2d3x3: {  // X[N,Ci,H,W], W[Co,Ci,3,3] -> Y[N,Co,H,W]
      POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "X", 4));
      POLNODE_RETURN_IF_ERROR(RequireConvWeight(c, 1));
      const Shape& x = c.shape(0);
      POLNODE_RETURN_IF_ERROR(c.RequireDim(1, "W", 1, x[1], "the channel count Ci of X"));
      return std::vector<Shape>{{x[0], c.shape(1)[0], x[2], x[3]}};
    }
    case Op::kConv2d3x3GradInput: {  // dY[N,Co,H,W], W[Co,Ci,3,3] -> dX[N,Ci,H,W]
      POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "dY", 4));
      POLNODE_RETURN_IF_ERROR(RequireConvWeight(c, 1));
      const Shape& dy = c.shape(0);
      POLNODE_RETURN_IF_ERROR(c.RequireDim(1, "W", 0, dy[1], "the channel count Co of dY"));
      return std::vector<Shape>{{dy[0], c.shape(1)[1], dy[2], dy[3]}};
    }
    default: {  // kConv2d3x3GradWeight: X[N,Ci,H,W], dY[N,Co,H,W] -> dW[Co,Ci,3,3]
      POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "X", 4));
      POLNODE_RETURN_IF_ERROR(c.RequireRank(1, "dY", 4));
      const Shape& x = c.shape(0);
      const Shape& dy = c.shape(1);
      if (x[0] != dy[0] || x[2] != dy[2] || x[3] != dy[3]) {
        return c.Error(c.Describe(0, "X") + " but " + c.Describe(1, "dY") +
                       "; N, H and W must match");
      }
      return std::vector<Shape>{{dy[1], x[1], 3, 3}};
    }
  }
}

Result<std::vector<Shape>> InferPool(Op op, const OpAttrs& attrs, const ShapeChecker& c) {
  if (op == Op::kMaxPool2x2) {
    POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "X", 4));
    const Shape& x = c.shape(0);
    Shape y = {x[0], x[1], x[2] / 2, x[3] / 2};
    return std::vector<Shape>{y, y};
  }
  POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "Arg", 4));
  POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "Arg", 1, "dY"));
  const Shape& dy = c.shape(1);
  const std::int64_t h = attrs.pool_input_h;
  const std::int64_t w = attrs.pool_input_w;
  if (h < 0 || w < 0 || h / 2 != dy[2] || w / 2 != dy[3]) {
    return c.Error("attrs.pool_input_h/w = " + std::to_string(h) + "x" + std::to_string(w) +
                   " do not pool to " + c.Describe(1, "dY") +
                   " (expected H/2 and W/2, rounded down, to equal dY's last two dimensions)");
  }
  POLNODE_RETURN_IF_ERROR(c.RequireIndices(0, "Arg", 4));
  return std::vector<Shape>{{dy[0], dy[1], h, w}};
}

Result<std::vector<Shape>> InferSoftmax(Op op, const ShapeChecker& c) {
  const std::string_view role = op == Op::kSoftmaxCrossEntropy ? "Z" : "P";
  POLNODE_RETURN_IF_ERROR(c.RequireRank(0, role, 2));
  POLNODE_RETURN_IF_ERROR(c.RequireRank(1, "labels", 1));
  const Shape& z = c.shape(0);
  if (z[0] < 1 || z[1] < 1) {
    return c.Error(c.Describe(0, role) + ", expected at least one row and one class");
  }
  POLNODE_RETURN_IF_ERROR(c.RequireDim(1, "labels", 0, z[0], "one label per row"));
  POLNODE_RETURN_IF_ERROR(c.RequireIndices(1, "labels", z[1]));
  if (op == Op::kSoftmaxCrossEntropy) return std::vector<Shape>{{1}, z};
  return std::vector<Shape>{z};
}

// X[..., C] -> the shape of its per-row statistics, X's shape without the last axis.
Shape RowsShape(const Shape& x) { return Shape(x.begin(), x.end() - 1); }

Result<std::vector<Shape>> InferLayerNorm(Op op, const ShapeChecker& c) {
  const Shape& x = c.shape(0);
  if (x.size() < 2) return c.Error(c.Describe(0, "X") + ", expected rank >= 2 [..., C]");
  const std::int64_t channels = x.back();
  if (channels < 1 || channels >= (std::int64_t{1} << 24)) {
    return c.Error(
        c.Describe(0, "X") +
        ", expected a last axis C with 1 <= C < 2^24 (C divides sums as an exact float)");
  }
  POLNODE_RETURN_IF_ERROR(c.RequireRank(1, "gamma", 1));
  POLNODE_RETURN_IF_ERROR(c.RequireDim(1, "gamma", 0, channels, "the last dimension of X"));
  if (op == Op::kLayerNorm) {
    POLNODE_RETURN_IF_ERROR(c.RequireRank(2, "beta", 1));
    POLNODE_RETURN_IF_ERROR(c.RequireDim(2, "beta", 0, channels, "the last dimension of X"));
    return std::vector<Shape>{x, RowsShape(x), RowsShape(x)};
  }
  for (const auto& [i, role] : {std::pair<int, std::string_view>{2, "Mean"}, {3, "Rstd"}}) {
    if (c.shape(i) != RowsShape(x)) {
      return c.Error(c.Describe(i, role) + ", expected " + ShapeToString(RowsShape(x)) +
                     " (X's shape without its last axis)");
    }
  }
  POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "X", 4, "dY"));
  return std::vector<Shape>{x, {channels}, {channels}};
}

Result<std::vector<Shape>> InferCausalSoftmax(Op op, const ShapeChecker& c) {
  const std::string_view role = op == Op::kCausalSoftmax ? "S" : "P";
  const Shape& s = c.shape(0);
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2] || s.back() < 1) {
    return c.Error(c.Describe(0, role) +
                   ", expected square score matrices [..., T, T] with T >= 1");
  }
  if (op == Op::kCausalSoftmaxGrad) POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "P", 1, "dP"));
  return std::vector<Shape>{s};
}

// The batched products: the last two axes are each matrix, the leading axes (rank >= 3) must
// match; the per-matrix check is InferMatmul's, on the matrices' shapes.
Result<std::vector<Shape>> InferBatchedMatmul(Op op, const ShapeChecker& c) {
  const std::string_view role0 = op == Op::kBatchedMatmulGradA ? "dC" : "A";
  const std::string_view role1 = op == Op::kBatchedMatmulGradB ? "dC" : "B";
  const Shape& s0 = c.shape(0);
  const Shape& s1 = c.shape(1);
  if (s0.size() < 3)
    return c.Error(c.Describe(0, role0) + ", expected rank >= 3 [..., rows, cols]");
  if (s1.size() != s0.size() || !std::equal(s0.begin(), s0.end() - 2, s1.begin())) {
    return c.Error(c.Describe(0, role0) + " but " + c.Describe(1, role1) +
                   "; the leading (batch) axes must match");
  }
  const std::int64_t m0 = s0[s0.size() - 2], n0 = s0.back(), m1 = s1[s1.size() - 2], n1 = s1.back();
  Shape out(s0.begin(), s0.end() - 2);
  switch (op) {
    case Op::kBatchedMatmul:  // A[.., M, K], B[.., K, N] -> C[.., M, N]
      if (n0 != m1) {
        return c.Error(c.Describe(0, "A") + " and " + c.Describe(1, "B") +
                       ": the inner dimensions differ (" + std::to_string(n0) + " vs " +
                       std::to_string(m1) + ")");
      }
      out.insert(out.end(), {m0, n1});
      break;
    case Op::kBatchedMatmulGradA:  // dC[.., M, N], B[.., K, N] -> dA[.., M, K]
      if (n0 != n1) {
        return c.Error(c.Describe(0, "dC") + " and " + c.Describe(1, "B") +
                       ": their column counts differ (" + std::to_string(n0) + " vs " +
                       std::to_string(n1) + ")");
      }
      out.insert(out.end(), {m0, m1});
      break;
    default:  // kBatchedMatmulGradB: A[.., M, K], dC[.., M, N] -> dB[.., K, N]
      if (m0 != m1) {
        return c.Error(c.Describe(0, "A") + " and " + c.Describe(1, "dC") +
                       ": their row counts differ (" + std::to_string(m0) + " vs " +
                       std::to_string(m1) + ")");
      }
      out.insert(out.end(), {n0, n1});
      break;
  }
  return std::vector<Shape>{out};
}

Result<std::vector<Shape>> InferEmbedding(Op op, const OpAttrs& attrs, const ShapeChecker& c) {
  if (op == Op::kEmbedding) {  // W[V, C], ids[...] -> Y[..., C]
    POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "W", 2));
    POLNODE_RETURN_IF_ERROR(c.RequireIndices(1, "ids", c.shape(0)[0]));
    Shape y = c.shape(1);
    y.push_back(c.shape(0)[1]);
    return std::vector<Shape>{y};
  }
  // ids[...], dY[..., C] -> dW[V, C]
  const Shape& ids = c.shape(0);
  const Shape& dy = c.shape(1);
  if (dy.size() != ids.size() + 1 || !std::equal(ids.begin(), ids.end(), dy.begin())) {
    return c.Error(c.Describe(1, "dY") + " but " + c.Describe(0, "ids") +
                   "; dY must be ids' shape followed by C");
  }
  if (attrs.num_embeddings < 1) {
    return c.Error("attrs.num_embeddings is " + std::to_string(attrs.num_embeddings) +
                   ", expected the table's row count V >= 1");
  }
  POLNODE_RETURN_IF_ERROR(c.RequireIndices(0, "ids", attrs.num_embeddings));
  return std::vector<Shape>{{attrs.num_embeddings, dy.back()}};
}

}  // namespace

std::string_view OpName(Op op) {
  const auto index = static_cast<std::size_t>(op);
  return index < kOpInfo.size() ? kOpInfo[index].name : std::string_view("unknown_op");
}

Result<Op> OpFromName(std::string_view name) {
  for (const OpInfo& info : kOpInfo) {
    if (info.name == name) return info.op;
  }
  return Status::InvalidArgument("unknown operator name \"" + std::string(name) + "\"");
}

float AdamBiasCorrection(float beta, std::int64_t t) {
  float power = 1.0f;
  for (int bit = 62; bit >= 0; --bit) {
    power = power * power;
    if ((t >> bit) & 1) power = power * beta;
  }
  return 1.0f - power;
}

float ScheduledLr(const OpAttrs& attrs, std::int64_t t) {
  const std::int64_t warmup = attrs.lr_warmup_steps, decay = attrs.lr_decay_steps;
  if (warmup == 0 && decay == 0) return attrs.lr;
  // The counts are converted before any arithmetic, so no integer can overflow whatever a
  // descriptor holds; within the validated ranges (below 2^41) every conversion and every sum and
  // difference of them is exact.
  const double step = static_cast<double>(t), w = static_cast<double>(warmup),
               d = static_cast<double>(decay), peak = attrs.lr;
  if (t < warmup) return static_cast<float>(peak * (step + 1.0) / (w + 1.0));
  if (decay == 0) return attrs.lr;
  if (t > decay) return attrs.min_lr;
  const double c = 0.5 * (1.0 + det::CosPi((step - w) / (d - w)));
  const double floor = attrs.min_lr;
  return static_cast<float>(floor + c * (peak - floor));
}

int NumInputs(Op op) { return static_cast<std::size_t>(op) < kOpInfo.size() ? Info(op).inputs : 0; }

int NumOutputs(Op op) {
  return static_cast<std::size_t>(op) < kOpInfo.size() ? Info(op).outputs : 0;
}

namespace {

// Whether x is an integer in [0, bound), without branches or integer conversions so that a loop
// of it vectorizes: below 2^23, adding 2^23 rounds x to an integer (the float spacing there is
// 1), which subtracting it gives back exactly when x was one; from 2^23 on every float is an
// integer. NaN fails the range comparisons.
inline bool IsIndexValue(float x, float bound) {
  constexpr float kTwo23 = 8388608.0f;
  return (x >= 0.0f) & (x < bound) & ((x >= kTwo23) | ((x + kTwo23) - kTwo23 == x));
}

}  // namespace

Status CheckIndexValues(Op op, const IndexInput& index, std::span<const float> values) {
  const float bound = static_cast<float>(index.bound);
  // Training checks every index input of every step (a pool's taps: a CNN step has 300,000), so
  // the common case, all valid, runs as one branch-free pass; only a failure looks for the first
  // bad element to name it. The vector form computes IsIndexValue's expression lane by lane.
  bool all_valid = true;
  std::size_t next = 0;
#if defined(__SSE2__)
  // Four at a time with x86-64's baseline vectors (GCC does not vectorize the scalar form).
  const __m128 zero = _mm_setzero_ps(), limit = _mm_set1_ps(bound), two23 = _mm_set1_ps(8388608.0f);
  __m128 valid = _mm_castsi128_ps(_mm_set1_epi32(-1));
  for (; next + 4 <= values.size(); next += 4) {
    const __m128 x = _mm_loadu_ps(values.data() + next);
    const __m128 integral = _mm_or_ps(_mm_cmpge_ps(x, two23), _mm_cmpeq_ps(_mm_sub_ps(_mm_add_ps(x, two23), two23), x));
    valid = _mm_and_ps(valid, _mm_and_ps(_mm_and_ps(_mm_cmpge_ps(x, zero), _mm_cmplt_ps(x, limit)), integral));
  }
  all_valid = _mm_movemask_ps(valid) == 0xF;
#endif
  for (; next < values.size(); ++next) all_valid &= IsIndexValue(values[next], bound);
  if (all_valid) return Status::Ok();
  for (std::size_t e = 0; e < values.size(); ++e) {
    const float x = values[e];
    if (!IsIndexValue(x, bound)) {
      return Status::InvalidArgument(std::string(OpName(op)) + ": input " + std::to_string(index.input) + " (" +
                                     std::string(index.role) + ") element " + std::to_string(e) + " is " +
                                     std::to_string(x) + ", expected an integer in [0, " +
                                     std::to_string(index.bound) + ")");
    }
  }
  return Status::Ok();
}

Result<std::vector<Shape>> InferOutputShapes(Op op, const OpAttrs& attrs,
                                             std::span<const Tensor* const> inputs) {
  std::vector<const Shape*> shapes(inputs.size(), nullptr);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) shapes[i] = &inputs[i]->shape();  // a null one is named below
  }
  std::vector<IndexInput> index_inputs;
  POLNODE_ASSIGN_OR_RETURN(std::vector<Shape> outputs, InferOutputShapesOf(op, attrs, shapes, &index_inputs));
  for (const IndexInput& index : index_inputs) {
    POLNODE_RETURN_IF_ERROR(CheckIndexValues(op, index, inputs[static_cast<std::size_t>(index.input)]->values()));
  }
  return outputs;
}

Result<std::vector<Shape>> InferOutputShapesOf(Op op, const OpAttrs& attrs, std::span<const Shape* const> inputs,
                                               std::vector<IndexInput>* index_inputs) {
  if (static_cast<int>(op) >= kNumOps) {
    return Status::InvalidArgument("unknown operator " + std::to_string(static_cast<int>(op)));
  }
  const std::string name(OpName(op));
  if (static_cast<int>(inputs.size()) != NumInputs(op)) {
    return Status::InvalidArgument(name + " takes " + std::to_string(NumInputs(op)) +
                                   " inputs, got " + std::to_string(inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      return Status::InvalidArgument(name + ": input " + std::to_string(i) + " is null");
    }
    if (inputs[i]->empty()) {
      return Status::InvalidArgument(name + ": input " + std::to_string(i) +
                                     " is an empty tensor (rank 0); a scalar has shape [1]");
    }
  }
  const ShapeChecker c(op, inputs, index_inputs);
  switch (op) {
    case Op::kMatmul:
    case Op::kMatmulGradA:
    case Op::kMatmulGradB:
      return InferMatmul(op, c);
    case Op::kBiasAdd:
    case Op::kBiasGrad:
      return InferBias(op, c);
    case Op::kRelu:
      return std::vector<Shape>{c.shape(0)};
    case Op::kReluGrad:
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "X", 1, "dY"));
      return std::vector<Shape>{c.shape(0)};
    case Op::kConv2d3x3:
    case Op::kConv2d3x3GradInput:
    case Op::kConv2d3x3GradWeight:
      return InferConv(op, c);
    case Op::kMaxPool2x2:
    case Op::kMaxPool2x2Grad:
      return InferPool(op, attrs, c);
    case Op::kSoftmaxCrossEntropy:
    case Op::kSoftmaxCrossEntropyGrad:
      return InferSoftmax(op, c);
    case Op::kSgdMomentum:
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "W", 1, "G"));
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "W", 2, "V"));
      return std::vector<Shape>{c.shape(0), c.shape(0)};
    case Op::kAdamW:
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "W", 1, "G"));
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "W", 2, "M"));
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "W", 3, "V"));
      return std::vector<Shape>{c.shape(0), c.shape(0), c.shape(0)};
    case Op::kAdd:
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "A", 1, "B"));
      return std::vector<Shape>{c.shape(0)};
    case Op::kTransposeHeads: {
      POLNODE_RETURN_IF_ERROR(c.RequireRank(0, "X", 4));
      const Shape& x = c.shape(0);
      return std::vector<Shape>{{x[0], x[2], x[1], x[3]}};
    }
    case Op::kGelu:
    case Op::kClipCoefficient: return std::vector<Shape>{c.shape(0)};
    case Op::kGeluGrad:
      POLNODE_RETURN_IF_ERROR(c.RequireSameShape(0, "X", 1, "dY"));
      return std::vector<Shape>{c.shape(0)};
    case Op::kLayerNorm:
    case Op::kLayerNormGrad: return InferLayerNorm(op, c);
    case Op::kCausalSoftmax:
    case Op::kCausalSoftmaxGrad: return InferCausalSoftmax(op, c);
    case Op::kBatchedMatmul:
    case Op::kBatchedMatmulGradA:
    case Op::kBatchedMatmulGradB: return InferBatchedMatmul(op, c);
    case Op::kEmbedding:
    case Op::kEmbeddingGrad: return InferEmbedding(op, attrs, c);
  }
  return Status::InvalidArgument("unknown operator " + std::to_string(static_cast<int>(op)));
}

}  // namespace polnode::kernels
