// TileKernel: each operator's canonical order (op.h, reference_backend.cc) split into tiles and
// chain units. Every loop below is the reference kernel's loop restricted to the tile's elements
// and to a range of its chain, with the accumulator carried in the state between ranges, so that
// any split gives the reference's bits; tests/kernels/tile_test.cc checks that bit for bit for
// every operator and output, and that nothing is read outside Reads.
#include "polnode/kernels/tile.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "polnode/kernels/backend.h"
#include "polnode/kernels/detmath.h"

namespace polnode::kernels {
namespace {

using std::int64_t;

Status Bad(Op op, const std::string& why) {
  return Status::InvalidArgument("tile of " + std::string(OpName(op)) + ": " + why);
}

// Checks an index input's value the way op.cc's RequireIndices does.
Status CheckIndex(Op op, float x, int64_t limit) {
  if (!(x >= 0.0f && x < static_cast<float>(limit)) || static_cast<float>(static_cast<int64_t>(x)) != x) {
    return Bad(op, "an index input holds " + std::to_string(x) + ", expected an integer in [0, " +
                       std::to_string(limit) + ")");
  }
  return Status::Ok();
}

// The input shapes' checks of op.h's contract and the output shapes (as InferOutputShapes, from
// shapes alone: index values are checked where a tile reads them).
Result<std::vector<Shape>> OutputShapes(Op op, const OpAttrs& attrs, const std::vector<Shape>& in) {
  if (static_cast<int>(in.size()) != NumInputs(op)) return Bad(op, "wrong number of inputs");
  for (const Shape& s : in) {
    if (s.empty()) return Bad(op, "an input has rank 0");
    for (int64_t d : s) {
      if (d < 0) return Bad(op, "an input has a negative dimension");
    }
  }
  auto rank = [&](int i, std::size_t r) { return in[static_cast<std::size_t>(i)].size() == r; };
  const auto& s = in;
  switch (op) {
    case Op::kMatmul:
      if (!rank(0, 2) || !rank(1, 2) || s[0][1] != s[1][0]) return Bad(op, "expected A[M,K], B[K,N]");
      return std::vector<Shape>{{s[0][0], s[1][1]}};
    case Op::kMatmulGradA:
      if (!rank(0, 2) || !rank(1, 2) || s[0][1] != s[1][1]) return Bad(op, "expected dC[M,N], B[K,N]");
      return std::vector<Shape>{{s[0][0], s[1][0]}};
    case Op::kMatmulGradB:
      if (!rank(0, 2) || !rank(1, 2) || s[0][0] != s[1][0]) return Bad(op, "expected A[M,K], dC[M,N]");
      return std::vector<Shape>{{s[0][1], s[1][1]}};
    case Op::kBiasAdd:
      if ((!rank(0, 2) && !rank(0, 4)) || !rank(1, 1) || s[1][0] != s[0][1]) return Bad(op, "expected X, b[C]");
      return std::vector<Shape>{s[0]};
    case Op::kBiasGrad:
      if (!rank(0, 2) && !rank(0, 4)) return Bad(op, "expected dY of rank 2 or 4");
      return std::vector<Shape>{{s[0][1]}};
    case Op::kRelu:
      return std::vector<Shape>{s[0]};
    case Op::kReluGrad:
      if (s[0] != s[1]) return Bad(op, "X and dY differ in shape");
      return std::vector<Shape>{s[0]};
    case Op::kConv2d3x3:
      if (!rank(0, 4) || !rank(1, 4) || s[1][2] != 3 || s[1][3] != 3 || s[1][1] != s[0][1]) {
        return Bad(op, "expected X[N,Ci,H,W], W[Co,Ci,3,3]");
      }
      return std::vector<Shape>{{s[0][0], s[1][0], s[0][2], s[0][3]}};
    case Op::kConv2d3x3GradInput:
      if (!rank(0, 4) || !rank(1, 4) || s[1][2] != 3 || s[1][3] != 3 || s[1][0] != s[0][1]) {
        return Bad(op, "expected dY[N,Co,H,W], W[Co,Ci,3,3]");
      }
      return std::vector<Shape>{{s[0][0], s[1][1], s[0][2], s[0][3]}};
    case Op::kConv2d3x3GradWeight:
      if (!rank(0, 4) || !rank(1, 4) || s[0][0] != s[1][0] || s[0][2] != s[1][2] || s[0][3] != s[1][3]) {
        return Bad(op, "expected X[N,Ci,H,W], dY[N,Co,H,W]");
      }
      return std::vector<Shape>{{s[1][1], s[0][1], 3, 3}};
    case Op::kMaxPool2x2: {
      if (!rank(0, 4)) return Bad(op, "expected X[N,C,H,W]");
      const Shape y = {s[0][0], s[0][1], s[0][2] / 2, s[0][3] / 2};
      return std::vector<Shape>{y, y};
    }
    case Op::kMaxPool2x2Grad: {
      if (!rank(0, 4) || s[0] != s[1]) return Bad(op, "expected Arg and dY of one shape [N,C,H/2,W/2]");
      const int64_t h = attrs.pool_input_h, w = attrs.pool_input_w;
      if (h < 0 || w < 0 || h / 2 != s[1][2] || w / 2 != s[1][3]) return Bad(op, "pool_input_h/w do not pool to dY");
      return std::vector<Shape>{{s[1][0], s[1][1], h, w}};
    }
    case Op::kSoftmaxCrossEntropy:
    case Op::kSoftmaxCrossEntropyGrad:
      if (!rank(0, 2) || !rank(1, 1) || s[0][0] < 1 || s[0][1] < 1 || s[1][0] != s[0][0]) {
        return Bad(op, "expected Z[B,C] with B, C >= 1 and labels[B]");
      }
      if (op == Op::kSoftmaxCrossEntropy) return std::vector<Shape>{{1}, s[0]};
      return std::vector<Shape>{s[0]};
    case Op::kSgdMomentum:
      if (s[0] != s[1] || s[0] != s[2]) return Bad(op, "W, G, V differ in shape");
      return std::vector<Shape>{s[0], s[0]};
    case Op::kAdamW:
      if (s[0] != s[1] || s[0] != s[2] || s[0] != s[3]) return Bad(op, "W, G, M, V differ in shape");
      return std::vector<Shape>{s[0], s[0], s[0]};
    case Op::kGelu:
    case Op::kClipCoefficient:
      return std::vector<Shape>{s[0]};
    case Op::kAdd:
    case Op::kGeluGrad:
      if (s[0] != s[1]) return Bad(op, "the two inputs differ in shape");
      return std::vector<Shape>{s[0]};
    case Op::kTransposeHeads:
      if (!rank(0, 4)) return Bad(op, "expected X[N,A,B,D]");
      return std::vector<Shape>{{s[0][0], s[0][2], s[0][1], s[0][3]}};
    case Op::kBatchedMatmul:
    case Op::kBatchedMatmulGradA:
    case Op::kBatchedMatmulGradB: {
      const std::size_t r = s[0].size();
      if (r < 3 || s[1].size() != r || !std::equal(s[0].begin(), s[0].end() - 2, s[1].begin())) {
        return Bad(op, "expected two tensors of rank >= 3 with the same leading axes");
      }
      const int64_t a0 = s[0][r - 2], a1 = s[0][r - 1], b0 = s[1][r - 2], b1 = s[1][r - 1];
      Shape out(s[0].begin(), s[0].end() - 2);
      if (op == Op::kBatchedMatmul) {  // A[.., M, K], B[.., K, N]
        if (a1 != b0) return Bad(op, "expected A[..,M,K], B[..,K,N]");
        out.insert(out.end(), {a0, b1});
      } else if (op == Op::kBatchedMatmulGradA) {  // dC[.., M, N], B[.., K, N]
        if (a1 != b1) return Bad(op, "expected dC[..,M,N], B[..,K,N]");
        out.insert(out.end(), {a0, b0});
      } else {  // A[.., M, K], dC[.., M, N]
        if (a0 != b0) return Bad(op, "expected A[..,M,K], dC[..,M,N]");
        out.insert(out.end(), {a1, b1});
      }
      return std::vector<Shape>{out};
    }
    case Op::kLayerNorm: {
      if (s[0].size() < 2 || !rank(1, 1) || !rank(2, 1) || s[1][0] != s[0].back() || s[2][0] != s[0].back()) {
        return Bad(op, "expected X[..., C], gamma[C], beta[C]");
      }
      const Shape rows(s[0].begin(), s[0].end() - 1);
      return std::vector<Shape>{s[0], rows, rows};
    }
    case Op::kLayerNormGrad: {  // X[..., C], gamma[C], Mean, Rstd, dY
      const Shape rows(s[0].begin(), s[0].end() - 1);
      if (s[0].size() < 2 || !rank(1, 1) || s[1][0] != s[0].back() || s[2] != rows || s[3] != rows || s[4] != s[0]) {
        return Bad(op, "expected X[..., C], gamma[C], Mean, Rstd, dY");
      }
      return std::vector<Shape>{s[0], {s[0].back()}, {s[0].back()}};
    }
    case Op::kCausalSoftmax:
    case Op::kCausalSoftmaxGrad: {
      const Shape& x = s[0];
      if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2] || x.back() < 1) {
        return Bad(op, "expected square score matrices [..., T, T] with T >= 1");
      }
      if (op == Op::kCausalSoftmaxGrad && s[1] != s[0]) return Bad(op, "P and dP differ in shape");
      return std::vector<Shape>{x};
    }
    case Op::kEmbedding: {  // W[V, C], ids[...] -> Y[..., C]
      if (!rank(0, 2) || s[0][0] < 1) return Bad(op, "expected a table W[V, C] with V >= 1, and ids");
      Shape y = s[1];
      y.push_back(s[0][1]);
      return std::vector<Shape>{y};
    }
    case Op::kEmbeddingGrad: {  // ids[...], dY[..., C] -> dW[V, C]
      if (s[1].size() != s[0].size() + 1 || !std::equal(s[0].begin(), s[0].end(), s[1].begin())) {
        return Bad(op, "expected ids[...] and dY[..., C]");
      }
      if (attrs.num_embeddings < 1) return Bad(op, "num_embeddings must be the table's row count V >= 1");
      return std::vector<Shape>{{attrs.num_embeddings, s[1].back()}};
    }
  }
  return Bad(op, "unknown operator");
}

// The sizes of a batched product's matrices, from its input shapes: the product C = A B is
// [M, K] x [K, N]; for kBatchedMatmulGradA (dC[M, N], B[K, N]) and kBatchedMatmulGradB (A[M, K],
// dC[M, N]) the same letters name the forward product's sizes.
struct BatchedDims {
  int64_t m = 0, k = 0, n = 0;
};
BatchedDims BatchedDimsOf(Op op, const std::vector<Shape>& s) {
  const std::size_t r = s[0].size();
  if (op == Op::kBatchedMatmul) return {s[0][r - 2], s[0][r - 1], s[1][r - 1]};
  if (op == Op::kBatchedMatmulGradA) return {s[0][r - 2], s[1][r - 2], s[0][r - 1]};
  return {s[0][r - 2], s[0][r - 1], s[1][r - 1]};
}

// kLayerNorm: the rows of X a tile of output `output` needs, in the tile's order: Y's tile rows
// (output 0), or, for Mean and Rstd (one value per row of X), the rows its elements name.
std::vector<int64_t> LayerNormRows(const GridRect& tile, int output, int64_t out_cols) {
  std::vector<int64_t> rows;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    if (output == 0) {
      rows.push_back(r);
      continue;
    }
    for (int64_t c = tile.col_begin; c < tile.col_end; ++c) rows.push_back(r * out_cols + c);
  }
  return rows;
}

// kTransposeHeads: the input row (of X[N, A, B, D] as [N*A*B, D]) that output row r (of
// Y[N, B, A, D] as [N*B*A, D]) copies: r = (n*B + b)*A + a reads row (n*A + a)*B + b.
int64_t TransposedRow(const Shape& x, int64_t r) {
  const int64_t a_size = x[1], b_size = x[2];
  const int64_t n = r / (b_size * a_size), b = (r / a_size) % b_size, a = r % a_size;
  return (n * a_size + a) * b_size + b;
}

// Runs of `length` elements starting at each of the tile's rows of a tensor with the output's view.
std::vector<FlatRun> TileRows(const GridRect& tile, int64_t cols) {
  std::vector<FlatRun> runs;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) runs.push_back({r * cols + tile.col_begin, tile.cols()});
  return runs;
}

// The distinct values of f(row) over the tile's rows, ascending.
template <typename F>
std::vector<int64_t> DistinctOfRows(const GridRect& tile, F f) {
  std::vector<int64_t> v;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) v.push_back(f(r));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Rows h-1..h+1 (clipped) of plane `plane` of an [.., H, W] tensor, columns [c0 - 1, c1 + 1) clipped.
void AddHalo(std::vector<FlatRun>& runs, int64_t plane, int64_t h, int64_t height, int64_t width, int64_t c0,
             int64_t c1) {
  const int64_t w0 = std::max<int64_t>(c0 - 1, 0), w1 = std::min(c1 + 1, width);
  for (int64_t ih = h - 1; ih <= h + 1; ++ih) {
    if (ih >= 0 && ih < height && w1 > w0) runs.push_back({(plane * height + ih) * width + w0, w1 - w0});
  }
}

// Gathers the tile's elements of a tensor with the output's view into a 1-D tensor.
Tensor Gather(const TileSource& src, const GridRect& tile, int64_t cols) {
  Tensor t({tile.elements()});
  int64_t i = 0;
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    for (int64_t c = tile.col_begin; c < tile.col_end; ++c) t.data()[i++] = src.At(r * cols + c);
  }
  return t;
}

// Runs the reference kernel on tile-sized tensors and returns output `output`'s values.
Result<std::vector<float>> RunReference(Op op, const OpAttrs& attrs, std::vector<Tensor> inputs, int output) {
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  std::vector<Tensor> outs(static_cast<std::size_t>(NumOutputs(op)));
  std::vector<Tensor*> out;
  for (Tensor& t : outs) out.push_back(&t);
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  POLNODE_RETURN_IF_ERROR(reference->Run(op, attrs, in, out));
  const Tensor& result = outs[static_cast<std::size_t>(output)];
  return std::vector<float>(result.values().begin(), result.values().end());
}

// Matrix-product units are processed in chunks, so that the gathered operands stay small.
constexpr int64_t kChunk = 512;

}  // namespace

Result<TileKernel> TileKernel::Create(Op op, const OpAttrs& attrs, std::vector<Shape> input_shapes, int output) {
  if (static_cast<int>(op) >= kNumOps) return Status::InvalidArgument("unknown operator " + std::to_string(static_cast<int>(op)));
  POLNODE_ASSIGN_OR_RETURN(std::vector<Shape> outputs, OutputShapes(op, attrs, input_shapes));
  if (output < 0 || output >= static_cast<int>(outputs.size())) return Bad(op, "no output " + std::to_string(output));
  TileKernel k;
  k.op_ = op;
  k.attrs_ = attrs;
  k.inputs_ = std::move(input_shapes);
  k.output_ = output;
  k.output_shape_ = outputs[static_cast<std::size_t>(output)];
  const std::vector<Shape>& s = k.inputs_;
  switch (op) {
    case Op::kMatmul: k.units_ = s[0][1]; break;
    case Op::kMatmulGradA: k.units_ = s[0][1]; break;
    case Op::kMatmulGradB: k.units_ = s[0][0]; break;
    case Op::kBiasGrad: k.units_ = s[0].size() == 2 ? s[0][0] : s[0][0] * s[0][2]; break;
    case Op::kConv2d3x3: k.units_ = s[0][1]; break;
    case Op::kConv2d3x3GradInput: k.units_ = s[0][1]; break;
    case Op::kConv2d3x3GradWeight: k.units_ = s[0][0] * s[0][2]; break;
    case Op::kSoftmaxCrossEntropy: k.units_ = output == 0 ? s[0][0] : 2 * s[0][1]; break;
    // The chain runs over the contracted axis: K, N, M of the last two axes (BatchedDims).
    case Op::kBatchedMatmul: k.units_ = s[0][s[0].size() - 1]; break;
    case Op::kBatchedMatmulGradA: k.units_ = s[0][s[0].size() - 1]; break;
    case Op::kBatchedMatmulGradB: k.units_ = s[0][s[0].size() - 2]; break;
    case Op::kLayerNormGrad: k.units_ = output == 0 ? 0 : NumElements(s[2]); break;
    // One unit per position (ids in row-major order): the scatter-add's chain over positions.
    case Op::kEmbeddingGrad: k.units_ = NumElements(s[0]); break;
    default: k.units_ = 0;
  }
  return k;
}

bool TileKernel::Inside(const GridRect& tile) const {
  const BlockGrid g = grid();
  return tile.row_begin >= 0 && tile.row_end <= g.rows() && tile.row_begin < tile.row_end && tile.col_begin >= 0 &&
         tile.col_end <= g.cols() && tile.col_begin < tile.col_end;
}

Status TileKernel::CheckTile(const GridRect& tile, std::size_t inputs) const {
  if (!Inside(tile)) return Bad(op_, "the tile lies outside the output");
  if (inputs != inputs_.size()) return Bad(op_, "wrong number of input sources");
  return Status::Ok();
}

std::int64_t TileKernel::StateSize(const GridRect& tile) const {
  if (units_ == 0) return 0;
  if (op_ == Op::kSoftmaxCrossEntropy) return output_ == 0 ? 1 : 2 * tile.rows();
  return tile.elements();
}

std::int64_t TileKernel::Work(const GridRect& tile, std::int64_t lo, std::int64_t hi) const {
  const int64_t n = hi - lo;
  const int64_t e = tile.elements();
  const std::vector<Shape>& s = inputs_;
  switch (op_) {
    case Op::kMatmul:
    case Op::kMatmulGradA:
    case Op::kMatmulGradB: return e * n;
    case Op::kBiasGrad: return e * n * (s[0].size() == 2 ? 1 : s[0][3]);
    case Op::kConv2d3x3:
    case Op::kConv2d3x3GradInput: return e * n * 9;
    case Op::kConv2d3x3GradWeight: return e * n * s[0][3];
    case Op::kBatchedMatmul:
    case Op::kBatchedMatmulGradA:
    case Op::kBatchedMatmulGradB: return e * n;
    case Op::kLayerNorm:
      return static_cast<int64_t>(LayerNormRows(tile, output_, grid().cols()).size()) * 3 * s[0].back();
    case Op::kLayerNormGrad:
      return output_ == 0 ? tile.rows() * 4 * s[0].back() : e * n * 2;
    case Op::kSoftmaxCrossEntropy:
      if (output_ == 0) return n * 3 * s[0][1] + 1;
      return tile.rows() * n + (hi == units_ ? e : 0);
    case Op::kCausalSoftmax: return tile.rows() * 3 * s[0].back() + e;
    case Op::kCausalSoftmaxGrad: return tile.rows() * 2 * s[0].back() + e;
    case Op::kEmbedding: return e;
    case Op::kEmbeddingGrad: return n * (tile.cols() + 1);  // a compare per position, adds where it hits
    default: return e * static_cast<int64_t>(s.size());
  }
}

std::vector<FlatRun> TileKernel::Reads(const GridRect& tile, int input, std::int64_t lo, std::int64_t hi) const {
  std::vector<FlatRun> runs;
  if (!Inside(tile) || lo < 0 || hi < lo || hi > units_ || input < 0 || input >= static_cast<int>(inputs_.size())) {
    return runs;
  }
  const std::vector<Shape>& s = inputs_;
  const bool finish = hi == units_;
  const int64_t out_cols = grid().cols();
  switch (op_) {
    case Op::kMatmul: {  // A[M,K], B[K,N]
      if (hi <= lo) break;
      if (input == 0) {
        for (int64_t m = tile.row_begin; m < tile.row_end; ++m) runs.push_back({m * s[0][1] + lo, hi - lo});
      } else {
        for (int64_t k = lo; k < hi; ++k) runs.push_back({k * s[1][1] + tile.col_begin, tile.cols()});
      }
      break;
    }
    case Op::kMatmulGradA: {  // dC[M,N], B[K,N] -> dA[M,K]
      if (hi <= lo) break;
      const int64_t n_size = s[0][1];
      if (input == 0) {
        for (int64_t m = tile.row_begin; m < tile.row_end; ++m) runs.push_back({m * n_size + lo, hi - lo});
      } else {
        for (int64_t k = tile.col_begin; k < tile.col_end; ++k) runs.push_back({k * n_size + lo, hi - lo});
      }
      break;
    }
    case Op::kMatmulGradB: {  // A[M,K], dC[M,N] -> dB[K,N]
      for (int64_t m = lo; m < hi; ++m) {
        if (input == 0) {
          runs.push_back({m * s[0][1] + tile.row_begin, tile.rows()});
        } else {
          runs.push_back({m * s[1][1] + tile.col_begin, tile.cols()});
        }
      }
      break;
    }
    case Op::kBiasAdd: {
      if (input == 0) return TileRows(tile, out_cols);
      if (s[0].size() == 2) return {{tile.col_begin, tile.cols()}};
      const int64_t channels = s[0][1], height = s[0][2];
      for (int64_t c : DistinctOfRows(tile, [&](int64_t r) { return (r / height) % channels; })) runs.push_back({c, 1});
      break;
    }
    case Op::kBiasGrad: {
      if (s[0].size() == 2) {
        for (int64_t m = lo; m < hi; ++m) runs.push_back({m * s[0][1] + tile.col_begin, tile.cols()});
      } else {
        const int64_t channels = s[0][1], height = s[0][2], width = s[0][3];
        for (int64_t u = lo; u < hi; ++u) {
          const int64_t n = u / height, h = u % height;
          for (int64_t c = tile.col_begin; c < tile.col_end; ++c) runs.push_back({((n * channels + c) * height + h) * width, width});
        }
      }
      break;
    }
    case Op::kConv2d3x3: {  // X[N,Ci,H,W], W[Co,Ci,3,3] -> Y[N,Co,H,W]
      if (hi <= lo) break;
      const int64_t ci_size = s[0][1], height = s[0][2], width = s[0][3], co_size = s[1][0];
      if (input == 1) {
        for (int64_t o : DistinctOfRows(tile, [&](int64_t r) { return (r / height) % co_size; })) {
          runs.push_back({(o * ci_size + lo) * 9, (hi - lo) * 9});
        }
      } else {
        // Rows r = (n * Co + o) * H + h: the distinct (n, h) pairs, as n * H + h.
        for (int64_t nh : DistinctOfRows(tile, [&](int64_t r) { return (r / (height * co_size)) * height + r % height; })) {
          const int64_t n = nh / height, h = nh % height;
          for (int64_t ci = lo; ci < hi; ++ci) AddHalo(runs, n * ci_size + ci, h, height, width, tile.col_begin, tile.col_end);
        }
      }
      break;
    }
    case Op::kConv2d3x3GradInput: {  // dY[N,Co,H,W], W[Co,Ci,3,3] -> dX[N,Ci,H,W]
      if (hi <= lo) break;
      const int64_t co_size = s[0][1], height = s[0][2], width = s[0][3], ci_size = s[1][1];
      if (input == 1) {
        const std::vector<int64_t> cis = DistinctOfRows(tile, [&](int64_t r) { return (r / height) % ci_size; });
        for (int64_t o = lo; o < hi; ++o) {
          for (int64_t ci : cis) runs.push_back({(o * ci_size + ci) * 9, 9});
        }
      } else {
        for (int64_t nh : DistinctOfRows(tile, [&](int64_t r) { return (r / (height * ci_size)) * height + r % height; })) {
          const int64_t n = nh / height, h = nh % height;
          for (int64_t o = lo; o < hi; ++o) AddHalo(runs, n * co_size + o, h, height, width, tile.col_begin, tile.col_end);
        }
      }
      break;
    }
    case Op::kConv2d3x3GradWeight: {  // X[N,Ci,H,W], dY[N,Co,H,W] -> dW[Co,Ci,3,3] (view [Co*Ci*3, 3])
      const int64_t ci_size = s[0][1], height = s[0][2], width = s[0][3], co_size = s[1][1];
      if (input == 1) {
        const std::vector<int64_t> os = DistinctOfRows(tile, [&](int64_t r) { return r / (3 * ci_size); });
        for (int64_t u = lo; u < hi; ++u) {
          const int64_t n = u / height, h = u % height;
          for (int64_t o : os) runs.push_back({((n * co_size + o) * height + h) * width, width});
        }
      } else {
        // Rows r = (o * Ci + ci) * 3 + kh read X row h + kh - 1 of channel ci.
        const std::vector<int64_t> ci_kh = DistinctOfRows(tile, [&](int64_t r) { return r % (3 * ci_size); });
        for (int64_t u = lo; u < hi; ++u) {
          const int64_t n = u / height, h = u % height;
          for (int64_t v : ci_kh) {
            const int64_t ci = v / 3, ih = h + v % 3 - 1;
            if (ih >= 0 && ih < height) runs.push_back({((n * ci_size + ci) * height + ih) * width, width});
          }
        }
      }
      break;
    }
    case Op::kMaxPool2x2: {
      const int64_t height = s[0][2], width = s[0][3], out_h = height / 2;
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t p = r / out_h, oh = r % out_h;
        for (int64_t ih = 2 * oh; ih < 2 * oh + 2; ++ih) {
          runs.push_back({(p * height + ih) * width + 2 * tile.col_begin, 2 * tile.cols()});
        }
      }
      break;
    }
    case Op::kMaxPool2x2Grad: {  // Arg, dY [N,C,OH,OW] -> dX [N,C,H,W]
      const int64_t out_h = s[1][2], out_w = s[1][3], height = attrs_.pool_input_h;
      const int64_t w_end = std::min(tile.col_end, 2 * out_w);
      if (tile.col_begin >= w_end) break;
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t p = r / height, h = r % height;
        if (h >= 2 * out_h) continue;
        const int64_t ow0 = tile.col_begin / 2, ow1 = (w_end - 1) / 2;
        runs.push_back({(p * out_h + h / 2) * out_w + ow0, ow1 - ow0 + 1});
      }
      break;
    }
    case Op::kSoftmaxCrossEntropy: {
      const int64_t classes = s[0][1];
      if (output_ == 0) {
        if (hi <= lo) break;
        if (input == 0) return {{lo * classes, (hi - lo) * classes}};
        return {{lo, hi - lo}};
      }
      if (input == 1) break;
      for (int64_t b = tile.row_begin; b < tile.row_end; ++b) {
        const int64_t max_end = std::min(hi, classes);
        if (lo < max_end) runs.push_back({b * classes + lo, max_end - lo});
        const int64_t sum_begin = std::max(lo, classes) - classes, sum_end = hi - classes;
        if (sum_end > sum_begin) runs.push_back({b * classes + sum_begin, sum_end - sum_begin});
        if (finish) runs.push_back({b * classes + tile.col_begin, tile.cols()});
      }
      break;
    }
    case Op::kSoftmaxCrossEntropyGrad:
      if (input == 0) return TileRows(tile, out_cols);
      return {{tile.row_begin, tile.rows()}};
    case Op::kRelu:
    case Op::kReluGrad:
    case Op::kSgdMomentum:
    case Op::kAdamW:
    case Op::kAdd:
    case Op::kGelu:
    case Op::kGeluGrad:
    case Op::kClipCoefficient:
      return TileRows(tile, out_cols);
    case Op::kTransposeHeads:  // Y[n,b,a,:] = X[n,a,b,:]: each output row is one input row
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        runs.push_back({TransposedRow(s[0], r) * s[0][3] + tile.col_begin, tile.cols()});
      }
      break;
    case Op::kLayerNorm: {  // whole rows of X; gamma and beta at the tile's columns (output 0)
      const int64_t c = s[0].back();
      if (input == 0) {
        for (int64_t row : LayerNormRows(tile, output_, out_cols)) runs.push_back({row * c, c});
      } else if (output_ == 0) {
        runs.push_back({tile.col_begin, tile.cols()});
      }
      break;
    }
    case Op::kBatchedMatmul:
    case Op::kBatchedMatmulGradA:
    case Op::kBatchedMatmulGradB: {
      if (hi <= lo) break;
      const BatchedDims d = BatchedDimsOf(op_, s);
      // Output row r is row r % rows_per of matrix g = r / rows_per.
      const int64_t rows_per = op_ == Op::kBatchedMatmulGradB ? d.k : d.m;
      for (int64_t g = tile.row_begin / rows_per; g * rows_per < tile.row_end; ++g) {
        const int64_t r0 = std::max(tile.row_begin, g * rows_per), r1 = std::min(tile.row_end, (g + 1) * rows_per);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t row = r - g * rows_per;
          if (op_ == Op::kBatchedMatmul && input == 0) runs.push_back({(g * d.m + row) * d.k + lo, hi - lo});
          if (op_ == Op::kBatchedMatmulGradA && input == 0) runs.push_back({(g * d.m + row) * d.n + lo, hi - lo});
        }
        if (op_ == Op::kBatchedMatmul && input == 1) {
          for (int64_t k = lo; k < hi; ++k) runs.push_back({(g * d.k + k) * d.n + tile.col_begin, tile.cols()});
        }
        if (op_ == Op::kBatchedMatmulGradA && input == 1) {
          for (int64_t k = tile.col_begin; k < tile.col_end; ++k) runs.push_back({(g * d.k + k) * d.n + lo, hi - lo});
        }
        if (op_ == Op::kBatchedMatmulGradB) {
          for (int64_t m = lo; m < hi; ++m) {
            if (input == 0) runs.push_back({(g * d.m + m) * d.k + (r0 - g * rows_per), r1 - r0});
            if (input == 1) runs.push_back({(g * d.m + m) * d.n + tile.col_begin, tile.cols()});
          }
        }
      }
      break;
    }
    case Op::kLayerNormGrad: {
      const int64_t c = s[0].back();
      if (output_ == 0) {  // dX: whole rows of X and dY, all of gamma, the rows' Mean and Rstd
        if (input == 1) return {{0, c}};
        for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
          runs.push_back(input == 2 || input == 3 ? FlatRun{r, 1} : FlatRun{r * c, c});
        }
        break;
      }
      // dGamma (chain of dY * xhat) and dBeta (chain of dY) over the rows [lo, hi) of X.
      const bool gamma = output_ == 1;
      if (input == 1 || (!gamma && input != 4)) break;
      if (hi > lo && (input == 2 || input == 3)) return {{lo, hi - lo}};
      for (int64_t r = lo; r < hi; ++r) runs.push_back({r * c + tile.col_begin, tile.cols()});
      break;
    }
    case Op::kCausalSoftmax:
    case Op::kCausalSoftmaxGrad: {  // row r (query i = r % T) reads keys 0..i of every input
      const int64_t t = s[0].back();
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) runs.push_back({r * t, r % t + 1});
      break;
    }
    case Op::kEmbedding: {  // W[V, C], ids: the tile's ids; the table's rows they name (bound: all)
      if (input == 1) return {{tile.row_begin, tile.rows()}};
      for (int64_t v = 0; v < s[0][0]; ++v) runs.push_back({v * s[0][1] + tile.col_begin, tile.cols()});
      break;
    }
    case Op::kEmbeddingGrad: {  // ids, dY: ids [lo, hi); dY's rows among them that hit the tile (bound: all)
      if (hi <= lo) break;
      if (input == 0) return {{lo, hi - lo}};
      const int64_t c = s[1].back();
      for (int64_t n = lo; n < hi; ++n) runs.push_back({n * c + tile.col_begin, tile.cols()});
      break;
    }
  }
  return runs;
}

int TileKernel::IndexInputOf(int input) const {
  if (op_ == Op::kEmbedding && input == 0) return 1;
  if (op_ == Op::kEmbeddingGrad && input == 1) return 0;
  return -1;
}

Result<std::vector<FlatRun>> TileKernel::ReadsGiven(const GridRect& tile, int input, std::int64_t lo, std::int64_t hi,
                                                    const TileSource& index) const {
  if (IndexInputOf(input) < 0 || !Inside(tile) || lo < 0 || hi < lo || hi > units_) return Reads(tile, input, lo, hi);
  const std::vector<Shape>& s = inputs_;
  std::vector<FlatRun> runs;
  if (op_ == Op::kEmbedding) {  // row ids[r] of the table, at the tile's columns, per tile row r
    for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
      const float id = index.At(r);
      POLNODE_RETURN_IF_ERROR(CheckIndex(op_, id, s[0][0]));
      runs.push_back({static_cast<int64_t>(id) * s[0][1] + tile.col_begin, tile.cols()});
    }
    return runs;
  }
  // kEmbeddingGrad: dY's row n, at the tile's columns, for the positions n in [lo, hi) whose id is
  // one of the tile's rows of dW.
  const int64_t c = s[1].back();
  for (int64_t n = lo; n < hi; ++n) {
    const float id = index.At(n);
    POLNODE_RETURN_IF_ERROR(CheckIndex(op_, id, attrs_.num_embeddings));
    const auto v = static_cast<int64_t>(id);
    if (v >= tile.row_begin && v < tile.row_end) runs.push_back({n * c + tile.col_begin, tile.cols()});
  }
  return runs;
}

std::vector<float> TileKernel::Init(const GridRect& tile) const {
  return std::vector<float>(static_cast<std::size_t>(StateSize(tile)), 0.0f);
}

Status TileKernel::Advance(const GridRect& tile, std::span<const TileSource* const> in, std::int64_t lo,
                           std::int64_t hi, std::vector<float>& state) const {
  POLNODE_RETURN_IF_ERROR(CheckTile(tile, in.size()));
  if (lo < 0 || hi < lo || hi > units_) return Bad(op_, "the unit range lies outside the chain");
  if (static_cast<int64_t>(state.size()) != StateSize(tile)) return Bad(op_, "the chain state has the wrong size");
  if (hi == lo) return Status::Ok();
  const std::vector<Shape>& s = inputs_;
  const int64_t rows = tile.rows(), cols = tile.cols();
  float* acc = state.data();
  switch (op_) {
    case Op::kMatmul: {  // C[m,n] = fma chain over k of A[m,k] * B[k,n]
      const int64_t k_size = s[0][1], n_size = s[1][1];
      for (int64_t c0 = lo; c0 < hi; c0 += kChunk) {
        const int64_t c1 = std::min(hi, c0 + kChunk), len = c1 - c0;
        std::vector<float> a(static_cast<std::size_t>(rows * len)), b(static_cast<std::size_t>(len * cols));
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t k = 0; k < len; ++k) a[i * len + k] = in[0]->At((tile.row_begin + i) * k_size + c0 + k);
        }
        for (int64_t k = 0; k < len; ++k) {
          for (int64_t j = 0; j < cols; ++j) b[k * cols + j] = in[1]->At((c0 + k) * n_size + tile.col_begin + j);
        }
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            float x = acc[i * cols + j];
            for (int64_t k = 0; k < len; ++k) x = std::fma(a[i * len + k], b[k * cols + j], x);
            acc[i * cols + j] = x;
          }
        }
      }
      return Status::Ok();
    }
    case Op::kMatmulGradA: {  // dA[m,k] = fma chain over n of dC[m,n] * B[k,n]
      const int64_t n_size = s[0][1];
      for (int64_t c0 = lo; c0 < hi; c0 += kChunk) {
        const int64_t c1 = std::min(hi, c0 + kChunk), len = c1 - c0;
        std::vector<float> a(static_cast<std::size_t>(rows * len)), b(static_cast<std::size_t>(cols * len));
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t n = 0; n < len; ++n) a[i * len + n] = in[0]->At((tile.row_begin + i) * n_size + c0 + n);
        }
        for (int64_t j = 0; j < cols; ++j) {
          for (int64_t n = 0; n < len; ++n) b[j * len + n] = in[1]->At((tile.col_begin + j) * n_size + c0 + n);
        }
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            float x = acc[i * cols + j];
            for (int64_t n = 0; n < len; ++n) x = std::fma(a[i * len + n], b[j * len + n], x);
            acc[i * cols + j] = x;
          }
        }
      }
      return Status::Ok();
    }
    case Op::kMatmulGradB: {  // dB[k,n] = fma chain over m of A[m,k] * dC[m,n]
      const int64_t k_size = s[0][1], n_size = s[1][1];
      for (int64_t c0 = lo; c0 < hi; c0 += kChunk) {
        const int64_t c1 = std::min(hi, c0 + kChunk), len = c1 - c0;
        std::vector<float> a(static_cast<std::size_t>(len * rows)), d(static_cast<std::size_t>(len * cols));
        for (int64_t m = 0; m < len; ++m) {
          for (int64_t i = 0; i < rows; ++i) a[m * rows + i] = in[0]->At((c0 + m) * k_size + tile.row_begin + i);
          for (int64_t j = 0; j < cols; ++j) d[m * cols + j] = in[1]->At((c0 + m) * n_size + tile.col_begin + j);
        }
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            float x = acc[i * cols + j];
            for (int64_t m = 0; m < len; ++m) x = std::fma(a[m * rows + i], d[m * cols + j], x);
            acc[i * cols + j] = x;
          }
        }
      }
      return Status::Ok();
    }
    case Op::kBiasGrad: {  // db[c] = plain sum over (m) or (n, h, w) ascending
      if (s[0].size() == 2) {
        const int64_t n_size = s[0][1];
        for (int64_t j = 0; j < cols; ++j) {
          float x = acc[j];
          for (int64_t m = lo; m < hi; ++m) x = x + in[0]->At(m * n_size + tile.col_begin + j);
          acc[j] = x;
        }
      } else {
        const int64_t channels = s[0][1], height = s[0][2], width = s[0][3];
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t c = tile.col_begin + j;
          float x = acc[j];
          for (int64_t u = lo; u < hi; ++u) {
            const int64_t base = ((u / height * channels + c) * height + u % height) * width;
            for (int64_t w = 0; w < width; ++w) x = x + in[0]->At(base + w);
          }
          acc[j] = x;
        }
      }
      return Status::Ok();
    }
    case Op::kConv2d3x3: {
      const int64_t ci_size = s[0][1], height = s[0][2], width = s[0][3], co_size = s[1][0];
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t n = r / (height * co_size), o = (r / height) % co_size, h = r % height;
        for (int64_t w = tile.col_begin; w < tile.col_end; ++w) {
          float& x = acc[(r - tile.row_begin) * cols + (w - tile.col_begin)];
          for (int64_t ci = lo; ci < hi; ++ci) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = h + kh - 1, iw = w + kw - 1;
                const float xv = ih < 0 || ih >= height || iw < 0 || iw >= width
                                     ? 0.0f
                                     : in[0]->At(((n * ci_size + ci) * height + ih) * width + iw);
                x = std::fma(in[1]->At(((o * ci_size + ci) * 3 + kh) * 3 + kw), xv, x);
              }
            }
          }
        }
      }
      return Status::Ok();
    }
    case Op::kConv2d3x3GradInput: {
      const int64_t co_size = s[0][1], height = s[0][2], width = s[0][3], ci_size = s[1][1];
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t n = r / (height * ci_size), ci = (r / height) % ci_size, h = r % height;
        for (int64_t w = tile.col_begin; w < tile.col_end; ++w) {
          float& x = acc[(r - tile.row_begin) * cols + (w - tile.col_begin)];
          for (int64_t o = lo; o < hi; ++o) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = h - kh + 1, iw = w - kw + 1;
                const float dy = ih < 0 || ih >= height || iw < 0 || iw >= width
                                     ? 0.0f
                                     : in[0]->At(((n * co_size + o) * height + ih) * width + iw);
                x = std::fma(in[1]->At(((o * ci_size + ci) * 3 + kh) * 3 + kw), dy, x);
              }
            }
          }
        }
      }
      return Status::Ok();
    }
    case Op::kConv2d3x3GradWeight: {
      // Unit by unit (one image row (n, h)), the rows every element of the tile reads are gathered
      // once: dY[n, o, h, :] per output channel o and X[n, ci, h + kh - 1, :] (zero-padded at
      // both ends) per (ci, kh); each element's chain then continues over w in order.
      const int64_t ci_size = s[0][1], height = s[0][2], width = s[0][3], co_size = s[1][1];
      const std::vector<int64_t> os = DistinctOfRows(tile, [&](int64_t r) { return r / (3 * ci_size); });
      const std::vector<int64_t> ci_kh = DistinctOfRows(tile, [&](int64_t r) { return r % (3 * ci_size); });
      auto index_of = [](const std::vector<int64_t>& v, int64_t x) {
        return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
      };
      std::vector<std::size_t> row_o, row_x;  // per tile row: its o's and (ci, kh)'s gathered row
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        row_o.push_back(index_of(os, r / (3 * ci_size)));
        row_x.push_back(index_of(ci_kh, r % (3 * ci_size)));
      }
      const int64_t padded = width + 2;
      std::vector<float> dy(os.size() * static_cast<std::size_t>(width));
      std::vector<float> xr(ci_kh.size() * static_cast<std::size_t>(padded), 0.0f);
      for (int64_t u = lo; u < hi; ++u) {
        const int64_t n = u / height, h = u % height;
        for (std::size_t a = 0; a < os.size(); ++a) {
          const int64_t base = ((n * co_size + os[a]) * height + h) * width;
          for (int64_t w = 0; w < width; ++w) dy[a * width + w] = in[1]->At(base + w);
        }
        for (std::size_t b = 0; b < ci_kh.size(); ++b) {
          const int64_t ci = ci_kh[b] / 3, ih = h + ci_kh[b] % 3 - 1;
          float* row = xr.data() + b * padded;
          for (int64_t w = 0; w < width; ++w) {
            row[w + 1] = ih < 0 || ih >= height ? 0.0f : in[0]->At(((n * ci_size + ci) * height + ih) * width + w);
          }
        }
        for (int64_t i = 0; i < rows; ++i) {
          const float* d = dy.data() + row_o[static_cast<std::size_t>(i)] * width;
          const float* x_row = xr.data() + row_x[static_cast<std::size_t>(i)] * padded;
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t kw = tile.col_begin + j;
            float x = acc[i * cols + j];
            // Xpad[n, ci, h + kh - 1, w + kw - 1] sits at x_row[w + kw]; padded taps read +0.0f.
            for (int64_t w = 0; w < width; ++w) x = std::fma(d[w], x_row[w + kw], x);
            acc[i * cols + j] = x;
          }
        }
      }
      return Status::Ok();
    }
    case Op::kSoftmaxCrossEntropy: {
      const int64_t classes = s[0][1];
      if (output_ == 0) {
        float total = acc[0];
        for (int64_t b = lo; b < hi; ++b) {
          const float label_value = in[1]->At(b);
          POLNODE_RETURN_IF_ERROR(CheckIndex(op_, label_value, classes));
          float mx = in[0]->At(b * classes);
          for (int64_t c = 1; c < classes; ++c) {
            const float z = in[0]->At(b * classes + c);
            if (z > mx) mx = z;
          }
          float sum = 0.0f;
          for (int64_t c = 0; c < classes; ++c) sum = sum + det::Exp(in[0]->At(b * classes + c) - mx);
          const auto label = static_cast<int64_t>(label_value);
          const float row_loss = (mx + det::Log(sum)) - in[0]->At(b * classes + label);
          total = total + row_loss;
        }
        acc[0] = total;
        return Status::Ok();
      }
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t b = tile.row_begin + i;
        float mx = acc[2 * i], sum = acc[2 * i + 1];
        for (int64_t u = lo; u < hi; ++u) {
          if (u < classes) {
            const float z = in[0]->At(b * classes + u);
            if (u == 0 || z > mx) mx = z;
          } else {
            sum = sum + det::Exp(in[0]->At(b * classes + (u - classes)) - mx);
          }
        }
        acc[2 * i] = mx;
        acc[2 * i + 1] = sum;
      }
      return Status::Ok();
    }
    case Op::kBatchedMatmul:
    case Op::kBatchedMatmulGradA:
    case Op::kBatchedMatmulGradB: {
      // One fma per unit per output element, in the unit order of op.h's chains.
      const BatchedDims d = BatchedDimsOf(op_, s);
      const int64_t rows_per = op_ == Op::kBatchedMatmulGradB ? d.k : d.m;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t r = tile.row_begin + i, g = r / rows_per, row = r % rows_per;
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t col = tile.col_begin + j;
          float x = acc[i * cols + j];
          for (int64_t u = lo; u < hi; ++u) {
            float a = 0.0f, b = 0.0f;
            if (op_ == Op::kBatchedMatmul) {  // A[g,m,k] * B[g,k,n]
              a = in[0]->At((g * d.m + row) * d.k + u);
              b = in[1]->At((g * d.k + u) * d.n + col);
            } else if (op_ == Op::kBatchedMatmulGradA) {  // dC[g,m,n] * B[g,k,n]
              a = in[0]->At((g * d.m + row) * d.n + u);
              b = in[1]->At((g * d.k + col) * d.n + u);
            } else {  // A[g,m,k] * dC[g,m,n]
              a = in[0]->At((g * d.m + u) * d.k + row);
              b = in[1]->At((g * d.m + u) * d.n + col);
            }
            x = std::fma(a, b, x);
          }
          acc[i * cols + j] = x;
        }
      }
      return Status::Ok();
    }
    case Op::kEmbeddingGrad: {
      // Position by position, dY's row added to the accumulators of its id's row when the tile
      // holds that row: each dW[v, c] is the chain over the positions holding v, in order.
      const int64_t c = s[1].back();
      for (int64_t n = lo; n < hi; ++n) {
        const float id = in[0]->At(n);
        POLNODE_RETURN_IF_ERROR(CheckIndex(op_, id, attrs_.num_embeddings));
        const auto v = static_cast<int64_t>(id);
        if (v < tile.row_begin || v >= tile.row_end) continue;
        float* row = acc + (v - tile.row_begin) * cols;
        for (int64_t j = 0; j < cols; ++j) row[j] = row[j] + in[1]->At(n * c + tile.col_begin + j);
      }
      return Status::Ok();
    }
    case Op::kLayerNormGrad: {
      // Per column: dGamma = fma(dY[r,c], xhat[r,c], acc) with xhat = (x - mean) * rstd as the
      // forward computed it; dBeta = acc + dY[r,c]; rows ascending.
      const int64_t c = s[0].back();
      for (int64_t r = lo; r < hi; ++r) {
        const float mean = output_ == 1 ? in[2]->At(r) : 0.0f, rstd = output_ == 1 ? in[3]->At(r) : 0.0f;
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t col = tile.col_begin + j;
          const float dy = in[4]->At(r * c + col);
          if (output_ == 1) {
            acc[j] = std::fma(dy, (in[0]->At(r * c + col) - mean) * rstd, acc[j]);
          } else {
            acc[j] = acc[j] + dy;
          }
        }
      }
      return Status::Ok();
    }
    default:
      return Bad(op_, "the operator has no chain");
  }
}

Result<std::vector<float>> TileKernel::Finish(const GridRect& tile, std::span<const TileSource* const> in,
                                              std::span<const float> state) const {
  POLNODE_RETURN_IF_ERROR(CheckTile(tile, in.size()));
  if (static_cast<int64_t>(state.size()) != StateSize(tile)) return Bad(op_, "the chain state has the wrong size");
  const std::vector<Shape>& s = inputs_;
  const int64_t out_cols = grid().cols();
  switch (op_) {
    case Op::kMatmul:
    case Op::kMatmulGradA:
    case Op::kMatmulGradB:
    case Op::kBiasGrad:
    case Op::kConv2d3x3:
    case Op::kConv2d3x3GradInput:
    case Op::kConv2d3x3GradWeight:
    case Op::kBatchedMatmul:
    case Op::kBatchedMatmulGradA:
    case Op::kBatchedMatmulGradB:
    case Op::kEmbeddingGrad:
      return std::vector<float>(state.begin(), state.end());
    case Op::kSoftmaxCrossEntropy: {
      const int64_t classes = s[0][1];
      if (output_ == 0) return std::vector<float>{state[0] / static_cast<float>(s[0][0])};
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t i = 0; i < tile.rows(); ++i) {
        const int64_t b = tile.row_begin + i;
        for (int64_t c = tile.col_begin; c < tile.col_end; ++c) {
          out.push_back(det::Exp(in[0]->At(b * classes + c) - state[2 * i]) / state[2 * i + 1]);
        }
      }
      return out;
    }
    case Op::kSoftmaxCrossEntropyGrad: {
      const int64_t classes = s[0][1];
      const auto batch = static_cast<float>(s[0][0]);
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t b = tile.row_begin; b < tile.row_end; ++b) {
        const float label_value = in[1]->At(b);
        POLNODE_RETURN_IF_ERROR(CheckIndex(op_, label_value, classes));
        const auto label = static_cast<int64_t>(label_value);
        for (int64_t c = tile.col_begin; c < tile.col_end; ++c) {
          const float target = c == label ? 1.0f : 0.0f;
          out.push_back((in[0]->At(b * classes + c) - target) / batch);
        }
      }
      return out;
    }
    case Op::kMaxPool2x2Grad: {
      const int64_t out_h = s[1][2], out_w = s[1][3], height = attrs_.pool_input_h;
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t p = r / height, h = r % height;
        for (int64_t w = tile.col_begin; w < tile.col_end; ++w) {
          if (h >= 2 * out_h || w >= 2 * out_w) {
            out.push_back(0.0f);
            continue;
          }
          const int64_t o = (p * out_h + h / 2) * out_w + w / 2;
          const float tap = in[0]->At(o);
          POLNODE_RETURN_IF_ERROR(CheckIndex(op_, tap, 4));
          out.push_back(static_cast<int64_t>(tap) == (h % 2) * 2 + w % 2 ? in[1]->At(o) : 0.0f);
        }
      }
      return out;
    }
    case Op::kMaxPool2x2: {
      // The reference kernel on the tile's windows, one window per output element: X' [1, n, 2, 2].
      const int64_t height = s[0][2], width = s[0][3], out_h = height / 2;
      Tensor x({1, tile.elements(), 2, 2});
      float* v = x.data();
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t p = r / out_h, oh = r % out_h;
        for (int64_t ow = tile.col_begin; ow < tile.col_end; ++ow) {
          for (int tap = 0; tap < 4; ++tap) *v++ = in[0]->At((p * height + 2 * oh + tap / 2) * width + 2 * ow + tap % 2);
        }
      }
      std::vector<Tensor> inputs;
      inputs.push_back(std::move(x));
      return RunReference(op_, attrs_, std::move(inputs), output_);
    }
    case Op::kBiasAdd: {
      // The reference kernel on X' [1, n] and b' [n], b'[i] the bias of element i's channel.
      Tensor x = Gather(*in[0], tile, out_cols);
      Tensor b({tile.elements()});
      int64_t i = 0;
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        for (int64_t c = tile.col_begin; c < tile.col_end; ++c) {
          const int64_t channel = s[0].size() == 2 ? c : (r / s[0][2]) % s[0][1];
          b.data()[i++] = in[1]->At(channel);
        }
      }
      POLNODE_RETURN_IF_ERROR(x.Reshape({1, tile.elements()}));
      std::vector<Tensor> inputs;
      inputs.push_back(std::move(x));
      inputs.push_back(std::move(b));
      return RunReference(op_, attrs_, std::move(inputs), output_);
    }
    case Op::kRelu:
    case Op::kReluGrad:
    case Op::kSgdMomentum:
    case Op::kAdamW:
    case Op::kAdd:
    case Op::kGelu:
    case Op::kGeluGrad:
    case Op::kClipCoefficient: {
      // Elementwise: the reference kernel on the tile's elements of every input.
      std::vector<Tensor> inputs;
      for (const TileSource* src : in) inputs.push_back(Gather(*src, tile, out_cols));
      return RunReference(op_, attrs_, std::move(inputs), output_);
    }
    case Op::kTransposeHeads: {
      // Bits copied unchanged, row by row from the input row each output row names.
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t base = TransposedRow(s[0], r) * s[0][3];
        for (int64_t c = tile.col_begin; c < tile.col_end; ++c) out.push_back(in[0]->At(base + c));
      }
      return out;
    }
    case Op::kLayerNorm: {
      // The reference kernel on the rows the tile needs, X' [rows, C]; gamma and beta outside the
      // tile's columns are never read (Y's column c depends on gamma[c] and beta[c] alone).
      const int64_t c = s[0].back();
      const std::vector<int64_t> rows = LayerNormRows(tile, output_, out_cols);
      const auto n = static_cast<int64_t>(rows.size());
      Tensor x({n, c}), gamma({c}), beta({c});
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < c; ++j) x.data()[i * c + j] = in[0]->At(rows[static_cast<std::size_t>(i)] * c + j);
      }
      if (output_ == 0) {
        for (int64_t j = tile.col_begin; j < tile.col_end; ++j) {
          gamma.data()[j] = in[1]->At(j);
          beta.data()[j] = in[2]->At(j);
        }
      }
      std::vector<Tensor> inputs;
      inputs.push_back(std::move(x));
      inputs.push_back(std::move(gamma));
      inputs.push_back(std::move(beta));
      POLNODE_ASSIGN_OR_RETURN(std::vector<float> all, RunReference(op_, attrs_, std::move(inputs), output_));
      if (output_ != 0) return all;
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = tile.col_begin; j < tile.col_end; ++j) out.push_back(all[static_cast<std::size_t>(i * c + j)]);
      }
      return out;
    }
    case Op::kLayerNormGrad: {
      if (output_ != 0) return std::vector<float>(state.begin(), state.end());
      // dX: the reference kernel on the tile's whole rows, then the tile's columns.
      const int64_t c = s[0].back(), n = tile.rows();
      Tensor x({n, c}), gamma({c}), mean({n}), rstd({n}), dy({n, c});
      for (int64_t j = 0; j < c; ++j) gamma.data()[j] = in[1]->At(j);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = tile.row_begin + i;
        mean.data()[i] = in[2]->At(r);
        rstd.data()[i] = in[3]->At(r);
        for (int64_t j = 0; j < c; ++j) {
          x.data()[i * c + j] = in[0]->At(r * c + j);
          dy.data()[i * c + j] = in[4]->At(r * c + j);
        }
      }
      std::vector<Tensor> inputs;
      inputs.push_back(std::move(x));
      inputs.push_back(std::move(gamma));
      inputs.push_back(std::move(mean));
      inputs.push_back(std::move(rstd));
      inputs.push_back(std::move(dy));
      POLNODE_ASSIGN_OR_RETURN(std::vector<float> all, RunReference(op_, attrs_, std::move(inputs), 0));
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = tile.col_begin; j < tile.col_end; ++j) out.push_back(all[static_cast<std::size_t>(i * c + j)]);
      }
      return out;
    }
    case Op::kCausalSoftmax: {
      // The reference's row loop (reference_backend.cc CausalSoftmax) on each tile row's visible
      // keys 0..i, then the tile's columns (+0.0f beyond i).
      const int64_t t = s[0].back();
      const float scale = attrs_.scale;
      std::vector<float> out, e(static_cast<std::size_t>(t));
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t i = r % t;
        float mx = in[0]->At(r * t) * scale;
        for (int64_t j = 1; j <= i; ++j) {
          if (in[0]->At(r * t + j) * scale > mx) mx = in[0]->At(r * t + j) * scale;
        }
        float sum = 0.0f;
        for (int64_t j = 0; j <= i; ++j) {
          e[static_cast<std::size_t>(j)] = det::Exp(in[0]->At(r * t + j) * scale - mx);
          sum = sum + e[static_cast<std::size_t>(j)];
        }
        for (int64_t j = tile.col_begin; j < tile.col_end; ++j) {
          out.push_back(j <= i ? e[static_cast<std::size_t>(j)] / sum : 0.0f);
        }
      }
      return out;
    }
    case Op::kCausalSoftmaxGrad: {
      // The reference's row loop (CausalSoftmaxGrad): the row's dot over keys 0..i, then dS.
      const int64_t t = s[0].back();
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const int64_t i = r % t;
        float dot = 0.0f;
        for (int64_t j = 0; j <= i; ++j) dot = std::fma(in[0]->At(r * t + j), in[1]->At(r * t + j), dot);
        for (int64_t j = tile.col_begin; j < tile.col_end; ++j) {
          out.push_back(j <= i ? (in[0]->At(r * t + j) * (in[1]->At(r * t + j) - dot)) * attrs_.scale : 0.0f);
        }
      }
      return out;
    }
    case Op::kEmbedding: {
      // Bits copied unchanged from the table row each tile row's id names.
      const int64_t c = s[0][1];
      std::vector<float> out;
      out.reserve(static_cast<std::size_t>(tile.elements()));
      for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
        const float id = in[1]->At(r);
        POLNODE_RETURN_IF_ERROR(CheckIndex(op_, id, s[0][0]));
        const int64_t base = static_cast<int64_t>(id) * c;
        for (int64_t j = tile.col_begin; j < tile.col_end; ++j) out.push_back(in[0]->At(base + j));
      }
      return out;
    }
  }
  return Bad(op_, "unknown operator");
}

Result<std::vector<float>> TileKernel::Compute(const GridRect& tile, std::span<const TileSource* const> inputs) const {
  std::vector<float> state = Init(tile);
  POLNODE_RETURN_IF_ERROR(Advance(tile, inputs, 0, units_, state));
  return Finish(tile, inputs, state);
}

}  // namespace polnode::kernels
