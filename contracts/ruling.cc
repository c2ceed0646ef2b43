#include "polnode/contracts/ruling.h"

#include <algorithm>

#include "polnode/consensus/game_tree.h"

namespace polnode::contracts {

RulingBudget RulingBudgetOf(const proto::Params& params) {
  const std::uint64_t payload = params.max_payload_bytes();
  const std::uint64_t reserve = std::min(kRulingReserveBytes, payload / 2);
  return {payload - reserve, kMaxRulingWork};
}

Result<kernels::Shape> ShapeOfDescriptor(const proto::PinpointShape& shape) {
  if (shape.dims_size() < 1 || shape.dims_size() > 8) return Status::InvalidArgument("a shape needs rank 1..8");
  kernels::Shape dims;
  std::int64_t elements = 1;
  for (std::int64_t d : shape.dims()) {
    if (d < 1 || d > kMaxRefereeElements || elements > kMaxRefereeElements / d) {
      return Status::InvalidArgument("a shape is empty or too large for the referee");
    }
    elements *= d;
    dims.push_back(d);
  }
  return dims;
}

kernels::OpAttrs AttrsOfNode(const proto::PinpointNode& node, std::uint64_t step) {
  kernels::OpAttrs attrs;
  attrs.lr = node.lr();
  attrs.momentum = node.momentum();
  attrs.weight_decay = node.weight_decay();
  attrs.beta1 = node.beta1();
  attrs.beta2 = node.beta2();
  attrs.eps = node.eps();
  attrs.pool_input_h = node.pool_input_h();
  attrs.pool_input_w = node.pool_input_w();
  attrs.lr_warmup_steps = node.lr_warmup_steps();
  attrs.lr_decay_steps = node.lr_decay_steps();
  attrs.min_lr = node.min_lr();
  attrs.max_norm = node.max_norm();
  const bool optimizer = node.op() == static_cast<std::uint32_t>(kernels::Op::kAdamW) ||
                         node.op() == static_cast<std::uint32_t>(kernels::Op::kSgdMomentum);
  if (optimizer) {
    // As solver::AttrsForStep: the descriptor's lr is the schedule's peak.
    attrs.lr = kernels::ScheduledLr(attrs, static_cast<std::int64_t>(step));
  }
  if (node.op() == static_cast<std::uint32_t>(kernels::Op::kAdamW)) {
    // As solver::AttrsForStep: the step that starts after `step` completed steps is step + 1.
    attrs.bias_correction1 = kernels::AdamBiasCorrection(attrs.beta1, static_cast<std::int64_t>(step) + 1);
    attrs.bias_correction2 = kernels::AdamBiasCorrection(attrs.beta2, static_cast<std::int64_t>(step) + 1);
  }
  // Other nodes leave scale unset (0 on the wire): they keep OpAttrs' 1, which they never read.
  if (node.op() == static_cast<std::uint32_t>(kernels::Op::kCausalSoftmax) ||
      node.op() == static_cast<std::uint32_t>(kernels::Op::kCausalSoftmaxGrad)) {
    attrs.scale = node.scale();
  }
  attrs.num_embeddings = node.num_embeddings();
  return attrs;
}

Result<kernels::TileKernel> TileKernelOf(const proto::PinpointNode& node, std::uint32_t output, std::uint64_t step) {
  if (node.op() >= static_cast<std::uint32_t>(kernels::kNumOps)) return Status::InvalidArgument("unknown operator");
  const kernels::Op op = static_cast<kernels::Op>(node.op());
  if (node.inputs_size() != kernels::NumInputs(op) || node.outputs_size() != kernels::NumOutputs(op) ||
      output >= static_cast<std::uint32_t>(node.outputs_size())) {
    return Status::InvalidArgument("the descriptor does not list the operator's inputs and outputs");
  }
  std::vector<kernels::Shape> shapes;
  for (const proto::PinpointInput& in : node.inputs()) {
    POLNODE_ASSIGN_OR_RETURN(kernels::Shape read, ShapeOfDescriptor(in.shape()));
    POLNODE_ASSIGN_OR_RETURN(kernels::Shape source, ShapeOfDescriptor(in.source_shape()));
    if (kernels::NumElements(read) != kernels::NumElements(source)) {
      return Status::InvalidArgument("an input is read under a shape of another size than its own");
    }
    shapes.push_back(std::move(read));
  }
  POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel,
                           kernels::TileKernel::Create(op, AttrsOfNode(node, step), std::move(shapes),
                                                       static_cast<int>(output)));
  POLNODE_ASSIGN_OR_RETURN(kernels::Shape want, ShapeOfDescriptor(node.outputs(static_cast<int>(output))));
  if (kernel.output_shape() != want) return Status::InvalidArgument("the inputs do not give the descriptor's output shape");
  return kernel;
}

std::vector<std::vector<std::uint64_t>> BoxBlocks(const kernels::TileKernel& kernel, const proto::PinpointNode& node,
                                                  const TileBox& box) {
  const GridRect rect = kernel.grid().BlockRect(box.tile);
  std::vector<std::vector<std::uint64_t>> blocks;
  for (int i = 0; i < node.inputs_size(); ++i) {
    const std::vector<std::int64_t> source(node.inputs(i).source_shape().dims().begin(),
                                           node.inputs(i).source_shape().dims().end());
    const std::vector<FlatRun> runs =
        kernel.Reads(rect, i, static_cast<std::int64_t>(box.lo), static_cast<std::int64_t>(box.hi));
    blocks.push_back(BlockGrid::Of(source).BlocksOfRuns(runs));
  }
  return blocks;
}

Result<std::vector<std::uint64_t>> ExactBoxBlocks(const kernels::TileKernel& kernel, const proto::PinpointNode& node,
                                                  const TileBox& box, int input, const kernels::TileSource& index) {
  const std::vector<std::int64_t> source(node.inputs(input).source_shape().dims().begin(),
                                         node.inputs(input).source_shape().dims().end());
  POLNODE_ASSIGN_OR_RETURN(std::vector<FlatRun> runs,
                           kernel.ReadsGiven(kernel.grid().BlockRect(box.tile), input, static_cast<std::int64_t>(box.lo),
                                             static_cast<std::int64_t>(box.hi), index));
  return BlockGrid::Of(source).BlocksOfRuns(runs);
}

RulingCost CostOf(const kernels::TileKernel& kernel, const proto::PinpointNode& node, const TileBox& box) {
  RulingCost cost;
  const std::vector<std::vector<std::uint64_t>> blocks = BoxBlocks(kernel, node, box);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].empty()) continue;
    const std::vector<std::int64_t> source(node.inputs(static_cast<int>(i)).source_shape().dims().begin(),
                                           node.inputs(static_cast<int>(i)).source_shape().dims().end());
    const BlockGrid grid = BlockGrid::Of(source);
    for (std::uint64_t b : blocks[i]) {
      cost.bytes += static_cast<std::uint64_t>(grid.BlockRect(b).elements()) * 4 + kBlockOverheadBytes;
    }
    cost.blocks += blocks[i].size();
    cost.bytes += kSiblingBytes * consensus::MultiProofLength(blocks[i], consensus::GameTreeDepth(grid.block_count()));
  }
  const GridRect rect = kernel.grid().BlockRect(box.tile);
  if (box.lo > 0) cost.bytes += static_cast<std::uint64_t>(kernel.StateSize(rect)) * 4 + 8;
  cost.work = static_cast<std::uint64_t>(
      kernel.Work(rect, static_cast<std::int64_t>(box.lo), static_cast<std::int64_t>(box.hi)));
  return cost;
}

bool BoxFits(const kernels::TileKernel& kernel, const proto::PinpointNode& node, const TileBox& box,
             const RulingBudget& budget) {
  const GridRect rect = kernel.grid().BlockRect(box.tile);
  const auto work = static_cast<std::uint64_t>(
      kernel.Work(rect, static_cast<std::int64_t>(box.lo), static_cast<std::int64_t>(box.hi)));
  if (work > budget.work) return false;
  return CostOf(kernel, node, box).Fits(budget);
}

std::vector<TileBox> TerminalBoxes(const kernels::TileKernel& kernel, const proto::PinpointNode& node, std::uint64_t tile,
                                   const RulingBudget& budget) {
  std::vector<TileBox> out;
  std::vector<TileBox> pending = {{tile, 0, static_cast<std::uint64_t>(kernel.units())}};
  while (!pending.empty()) {
    const TileBox box = pending.back();
    pending.pop_back();
    if (box.hi - box.lo <= 1 || BoxFits(kernel, node, box, budget)) {
      out.push_back(box);
      continue;
    }
    const std::uint64_t mid = box.lo + (box.hi - box.lo) / 2;
    pending.push_back({tile, mid, box.hi});  // popped after the left half: unit order
    pending.push_back({tile, box.lo, mid});
  }
  return out;
}

}  // namespace polnode::contracts
