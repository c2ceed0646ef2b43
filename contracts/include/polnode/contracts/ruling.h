// What one ruling of the pinpoint game's referee may cost, and what a tile ruling costs (issue 14,
// finding 5; DESIGN.md section 6, step 3: "no ruling may need more bytes or operations than one
// block can carry").
//
// When the disputed leaf is an operator's output, the game descends the output's block tree to
// one disputed block, the tile (contracts/dispute_game.h), and the referee computes that tile
// alone (kernels/tile.h) from the input blocks it reads, each Merkle-proved against its agreed
// input leaf (tensor hash v3, consensus/pinpoint.h). A tile whose whole chain would read more
// bytes or do more work than a ruling may is bisected along its chain: both parties commit to
// the tile's chain state at a midpoint unit, until the units [lo, hi) left fit, or one unit is
// left. The referee then starts from the agreed state after lo units (posted, checked against its
// hash) and computes the state after hi units, or the tile itself when hi is the chain's end.
//
// A box is (tile, lo, hi). Its cost:
//   bytes  every block of every input that units [lo, hi) (and the finish when hi is the end)
//          read: 4 bytes per element + kBlockOverheadBytes, the multiproof siblings of those
//          blocks (kSiblingBytes each), and the chain state at lo when lo > 0 (4 bytes a float);
//   work   kernels::TileKernel::Work (one multiply-add, add, compare or exponential per term).
// It fits a budget when both are within it. The budget follows the chain's transaction limit:
// RulingBudgetOf(params).bytes = max_payload_bytes - kRulingReserveBytes (half of
// max_payload_bytes when that is smaller), the reserve covering what the cost does not count
// (the move's header, block roots and each input leaf's path to its agreed subtree); work is
// kMaxRulingWork on the CPU reference kernel.
#ifndef POLNODE_CONTRACTS_RULING_H_
#define POLNODE_CONTRACTS_RULING_H_

#include <cstdint>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"
#include "polnode/kernels/tile.h"

namespace polnode::contracts {

/// Largest tensor (elements) a descriptor may name for the referee.
inline constexpr std::int64_t kMaxRefereeElements = std::int64_t{1} << 26;
/// Work (chain terms) one ruling may take: a 64 x 64 tile of a 1024-deep matrix product.
inline constexpr std::uint64_t kMaxRulingWork = std::uint64_t{1} << 22;
/// Bytes of a referee move that RulingCost does not count, kept free below max_payload_bytes.
inline constexpr std::uint64_t kRulingReserveBytes = std::uint64_t{16} << 10;
/// The protobuf framing of one posted block, and one multiproof sibling's bytes with its framing.
inline constexpr std::uint64_t kBlockOverheadBytes = 4;
inline constexpr std::uint64_t kSiblingBytes = 34;

struct RulingBudget {
  std::uint64_t bytes = 0;
  std::uint64_t work = 0;
};

/// The budget of a chain with `params` (see the file comment).
RulingBudget RulingBudgetOf(const proto::Params& params);

/// Units [lo, hi) of the chain of block `tile` of an operator output.
struct TileBox {
  std::uint64_t tile = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
};

struct RulingCost {
  std::uint64_t bytes = 0;
  std::uint64_t work = 0;
  std::uint64_t blocks = 0;  // input blocks posted
  bool Fits(const RulingBudget& budget) const { return bytes <= budget.bytes && work <= budget.work; }
};

/// The shape a descriptor names; kInvalidArgument unless rank 1..8 with every dimension >= 1
/// and at most kMaxRefereeElements elements.
Result<kernels::Shape> ShapeOfDescriptor(const proto::PinpointShape& shape);

/// The operator attributes `node` runs with in the step that starts after `step` completed steps
/// (as solver::AttrsForStep: kSgdMomentum's and kAdamW's lr is kernels::ScheduledLr of the
/// descriptor's schedule at `step`, and kAdamW's bias corrections follow from the step).
kernels::OpAttrs AttrsOfNode(const proto::PinpointNode& node, std::uint64_t step);

/// Output `output` of `node` as the referee computes it tile by tile, at the step that starts
/// after `step` completed steps. kInvalidArgument when the descriptor's operator, input shapes
/// (read and source shapes of equal size) or output shape do not make a valid operator output.
Result<kernels::TileKernel> TileKernelOf(const proto::PinpointNode& node, std::uint32_t output, std::uint64_t step);

/// Per operator input, the blocks (of the input's source tensor, ascending) that `box` reads; for
/// an input read where its index input's values point (kernels::TileKernel::IndexInputOf: the
/// embeddings' token ids), the blocks of the bound Reads gives, which the cost prices without data.
/// Precondition: box.tile is a block of the kernel's output and lo <= hi <= units().
std::vector<std::vector<std::uint64_t>> BoxBlocks(const kernels::TileKernel& kernel, const proto::PinpointNode& node,
                                                  const TileBox& box);

/// The blocks of input `input` that `box` reads, exactly: BoxBlocks's for an input without an
/// index input, else those of the elements the index values name (TileKernel::ReadsGiven), read
/// from `index`, the index input's source (its proven blocks, in the referee). A subset of
/// BoxBlocks's. kInvalidArgument for an index value that is not an integer in range.
/// Precondition: as BoxBlocks.
Result<std::vector<std::uint64_t>> ExactBoxBlocks(const kernels::TileKernel& kernel, const proto::PinpointNode& node,
                                                  const TileBox& box, int input, const kernels::TileSource& index);

/// The cost of `box` (see the file comment). Precondition: as BoxBlocks.
RulingCost CostOf(const kernels::TileKernel& kernel, const proto::PinpointNode& node, const TileBox& box);

/// Whether `box` fits `budget`: its work first (constant time), then, only for a box whose work
/// fits, its bytes (which enumerate the blocks it reads), so that a long chain over large tensors
/// is never enumerated whole. Precondition: as BoxBlocks.
bool BoxFits(const kernels::TileKernel& kernel, const proto::PinpointNode& node, const TileBox& box,
             const RulingBudget& budget);

/// Every box the game's chain bisection of `tile` can end at under `budget`, in unit order: the
/// whole chain when it fits (or has at most one unit), else those of both halves
/// [lo, mid), [mid, hi) with mid = lo + (hi - lo) / 2. For reports and tests; the game itself
/// evaluates one box per round.
std::vector<TileBox> TerminalBoxes(const kernels::TileKernel& kernel, const proto::PinpointNode& node, std::uint64_t tile,
                                   const RulingBudget& budget);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_RULING_H_
