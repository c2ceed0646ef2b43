// One operator output evaluated tile by tile and, along each element's evaluation chain, unit by
// unit, with exactly the bits of the whole operator (op.h's canonical order). The ledger's referee
// uses it to rule on one tile of a disputed output from a few Merkle-proved input blocks and,
// where the chain is long, from agreed partial sums (DESIGN.md section 6, step 3); the parties use
// it to compute the partial sums they commit to.
//
// Tiles. A tile is a rectangle of the output's 2-D view (base/block_grid.h); the game uses one
// block of the output's block grid, but any rectangle works.
//
// Chains. Every element of an output with a chain is computed by a fold over `units()` units in
// ascending order (each unit a fixed run of the chain's terms), from an initial state, followed by
// a finish; the tile's state between units is a vector of floats (StateSize). The units and state:
//   matmul             units k (one fma each), state: one accumulator per element
//   matmul_grad_a      units n,                state: one accumulator per element
//   matmul_grad_b      units m,                state: one accumulator per element
//   bias_grad          2-D: units m; 4-D: units (n, h), each W adds over w; one accumulator each
//   conv2d_3x3         units ci, each the 9 fmas (kh, kw); one accumulator per element
//   conv2d_3x3_grad_input   units o, each 9 fmas (kh, kw); one accumulator per element
//   conv2d_3x3_grad_weight  units (n, h), each W fmas over w; one accumulator per element
//   softmax_xent       output 0 (loss): units b, each adds row b's loss; state: the running total
//                      output 1 (P): units 0..C-1 take the row maxima, units C..2C-1 sum the
//                      exponentials; state: per tile row (max, sum)
// The finish is the identity for accumulators, divides the loss by B, and computes P = e / s. Every
// other operator (bias_add, relu, relu_grad, max_pool_2x2 and its gradient, softmax_xent_grad,
// sgd_momentum, adamw) has no chain (units() == 0): Finish computes the tile from its inputs, by
// running the reference kernel itself on the tile's gathered elements where the operator is
// elementwise.
//
// Reads. Reads(tile, input, lo, hi) lists the input elements (flat, in the input's own row-major
// order, which a view does not change) that Advance over units [lo, hi) and, when hi == units(),
// Finish may read; nothing else is read. Index inputs (labels, pooling taps) are checked where a
// tile reads them.
//
// Of the transformer's operators, the elementwise ones (add, gelu, gelu_grad, and gradient
// clipping's clip_coefficient) and the head
// transpose (a permutation of rows) have tile kernels (Finish on the gathered elements), and the
// batched products chain over their contracted axis like matmul (a unit is one k, n or m);
// layer_norm and layer_norm_grad's dX run the reference kernel on the whole rows their tile
// needs, and layer_norm_grad's dGamma and dBeta chain over the rows (a unit is one row).
// causal_softmax and its gradient have no chain: each tile row i of a T x T matrix reads the
// visible keys 0..i of its row (T is small: one row is a few hundred bytes) and runs the
// reference's row loop with attrs.scale. embedding (no chain) copies the table rows its tile's ids
// name; embedding_grad chains over the positions (a unit is one position: its id, and its dY row
// when the id is one of the tile's rows of dW).
//
// Index-dependent reads. The table rows embedding reads, and the dY rows embedding_grad reads,
// depend on the token ids' values: IndexInputOf names the ids input, Reads lists a bound (every
// row of the table, every position's dY row) that depends on shapes alone (so the ledger can
// price a ruling without data), and ReadsGiven the exact elements, given the ids. The referee
// proves the ids' blocks first and then exactly the blocks the ids name; a dishonest id cannot
// be posted, since the ids are proven against their agreed tensor like every other input.
//
// Any new operator needs its case in every switch here (shapes, units, Reads, Advance or Finish)
// and in tests/kernels/tile_test.cc; until then Create refuses it, and a game whose disputed leaf
// is its output cannot be refereed (the first tile move is refused, so both parties forfeit). Keep
// its units small enough that one unit of one 64 x 64 tile fits a ruling (contracts/ruling.h): a
// softmax row is one unit of the loss, a reduction over many rows is a unit per row.
#ifndef POLNODE_KERNELS_TILE_H_
#define POLNODE_KERNELS_TILE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "polnode/base/block_grid.h"
#include "polnode/base/status.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {

/// Where a tile's input elements come from: a whole tensor, or (the referee) the blocks proven.
class TileSource {
 public:
  virtual ~TileSource() = default;
  /// Element `flat` of the input (row-major). Only elements listed by Reads are asked for.
  virtual float At(std::int64_t flat) const = 0;
};

/// A TileSource over a tensor in memory, which must outlive it.
class TensorSource final : public TileSource {
 public:
  explicit TensorSource(const Tensor& tensor) : data_(tensor.data()) {}
  float At(std::int64_t flat) const override { return data_[flat]; }

 private:
  const float* data_;
};

class TileKernel {
 public:
  /// Output `output` of `op` run with `attrs` on inputs of `input_shapes` (the shapes the operator
  /// reads them in). kInvalidArgument for an unknown operator, an output it lacks, or input shapes
  /// that break its contract (op.h).
  static Result<TileKernel> Create(Op op, const OpAttrs& attrs, std::vector<Shape> input_shapes, int output);

  Op op() const { return op_; }
  int output() const { return output_; }
  const Shape& output_shape() const { return output_shape_; }
  const std::vector<Shape>& input_shapes() const { return inputs_; }
  /// The output's block grid (base/block_grid.h).
  BlockGrid grid() const { return BlockGrid::Of(output_shape_); }

  /// The units of every element's chain; 0 when the operator has none.
  std::int64_t units() const { return units_; }

  /// Floats in the chain state of `tile`; 0 without a chain.
  std::int64_t StateSize(const GridRect& tile) const;

  /// The work of units [lo, hi) of `tile` plus, when hi == units(), its finish: chain terms (one
  /// multiply-add, add, compare or exponential each) summed over the tile's elements.
  std::int64_t Work(const GridRect& tile, std::int64_t lo, std::int64_t hi) const;

  /// Whether `tile` is a non-empty rectangle inside the output's 2-D view.
  bool Inside(const GridRect& tile) const;

  /// The flat runs of input `input` read by units [lo, hi) of `tile` and, when hi == units(), by
  /// its finish (see the file comment). Runs may overlap. Empty for a tile outside the output or a
  /// range outside [0, units()].
  /// For an input with an index input (IndexInputOf), a bound on the exact reads that depends on
  /// the shapes alone (see the file comment).
  std::vector<FlatRun> Reads(const GridRect& tile, int input, std::int64_t lo, std::int64_t hi) const;

  /// The index input whose values decide which elements of input `input` a tile reads (the
  /// token ids of embedding and embedding_grad), or -1 when its reads follow from the shapes.
  int IndexInputOf(int input) const;

  /// The exact reads of input `input`: Reads itself for an input without an index input, else
  /// the elements the index values name, read from `index` (only at elements Reads lists for the
  /// index input). kInvalidArgument for an index value that is not an integer in range.
  Result<std::vector<FlatRun>> ReadsGiven(const GridRect& tile, int input, std::int64_t lo, std::int64_t hi,
                                          const TileSource& index) const;

  /// The chain state of `tile` before its first unit.
  std::vector<float> Init(const GridRect& tile) const;

  /// Advances `state` (StateSize(tile) floats: the state after `lo` units) through units
  /// [lo, hi). kInvalidArgument for a tile outside the output, a range outside [0, units()], a
  /// state of the wrong size, or an index input out of range.
  [[nodiscard]] Status Advance(const GridRect& tile, std::span<const TileSource* const> inputs, std::int64_t lo,
                               std::int64_t hi, std::vector<float>& state) const;

  /// The tile's output values, row by row, from the state after all units (ignored without a
  /// chain). Errors as Advance's.
  Result<std::vector<float>> Finish(const GridRect& tile, std::span<const TileSource* const> inputs,
                                    std::span<const float> state) const;

  /// Init, Advance over every unit, and Finish.
  Result<std::vector<float>> Compute(const GridRect& tile, std::span<const TileSource* const> inputs) const;

 private:
  [[nodiscard]] Status CheckTile(const GridRect& tile, std::size_t inputs) const;

  Op op_ = Op::kMatmul;
  OpAttrs attrs_;
  std::vector<Shape> inputs_;
  int output_ = 0;
  Shape output_shape_;
  std::int64_t units_ = 0;
};

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_TILE_H_
