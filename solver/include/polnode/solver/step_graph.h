// One training step as a fixed DAG of operators in a canonical topological order (DESIGN.md
// sections 3 and 6): state_{t+1} = Step(state_t, batch_t, hyper).
//
// Node order, which is part of every task's definition (the pinpoint game bisects over it):
//   1. forward, layer by layer: "<layer>.matmul" / "<layer>.conv", "<layer>.bias_add",
//      "<layer>.relu", "<pool>.maxpool";
//   2. "loss.softmax_xent" (outputs: mean loss [1], probabilities) and "loss.softmax_xent.grad";
//   3. backward, last layer first; per layer: "<layer>.relu.grad", "<layer>.bias_add.grad",
//      "<layer>.matmul.grad_b" / "<layer>.conv.grad_weight", then, unless no earlier layer has
//      parameters (the gradient would flow only into the batch), "<layer>.matmul.grad_a" /
//      "<layer>.conv.grad_input" or "<pool>.maxpool.grad";
//   3b. with gradient-norm clipping (OptimizerConfig::grad_clip > 0), in state order:
//      "<param>.grad.copy" (kTransposeHeads of the gradient's [1, 1, N, 1] view: the same
//      elements, since a node reads a tensor under one view only) and "<param>.grad.squares"
//      (kMatmul of the gradient's [1, N] view by the copy's [N, 1] view: its sum of squares as
//      one fma chain) for every parameter, each but the first followed by
//      "grad_norm.sum.<param>" (kAdd to the running total, [1, 1]); then "grad_norm.clip"
//      (kClipCoefficient of the total) and "<param>.grad.clipped" (kMatmul of the gradient's
//      [N, 1] view by the coefficient [1, 1]) for every parameter, which the optimizer reads;
//   4. the optimizer, parameter by parameter in state order: "<param>.sgd" / "<param>.adam",
//      writing the new parameter and buffers in place of the old ones.
// A forward graph (evaluation) is part 1 alone.
//
// A GPT (model_spec.h) reads the batch's token ids [B, T] as "images" and the next symbol of
// every position [B * T] as "labels". Its forward: "wte.embedding", "wpe.bias_add" (over the
// [B, T * C] view), then per block "h<i>.ln1", "h<i>.attn.{q,k,v}" (matmul) each followed by
// "h<i>.attn.{q,k,v}.heads" (transpose to [B, H, T, D]), "h<i>.attn.scores" (Q K^T),
// "h<i>.attn.softmax" (causal, scale 1 / sqrt(D)), "h<i>.attn.mix" (P V), "h<i>.attn.merge",
// "h<i>.attn.proj", "h<i>.attn.residual", "h<i>.ln2", "h<i>.mlp.fc", "h<i>.mlp.gelu",
// "h<i>.mlp.proj", "h<i>.mlp.residual"; then "lnf", "head.matmul" and the loss over [B * T, V].
// Its backward mirrors it, last block first: the head, "lnf.grad", per block the MLP branch
// ("...mlp.proj.grad_b", "...grad_a", "...mlp.gelu.grad", "...mlp.fc.grad_b", "...grad_a",
// "...ln2.grad", "...mlp.residual.grad": kAdd of the output gradient and the branch's), then
// attention ("...attn.proj.grad_b/_a", "...attn.merge.grad", "...attn.mix.grad_a/_b",
// "...attn.softmax.grad", "...attn.scores.grad_q/_k", and for q, k, v in that order
// "...heads.grad", "...grad_b", "...grad_a", "...grad_sum" (k and v), "...ln1.grad",
// "...attn.residual.grad"), and last "wpe.bias_add.grad" and "wte.embedding.grad". LayerNorm
// gains and shifts get no weight decay (ParamSpec::no_decay).
#ifndef POLNODE_SOLVER_STEP_GRAPH_H_
#define POLNODE_SOLVER_STEP_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/optimizer.h"

namespace polnode::solver {

/// Where a node input comes from.
enum class SourceKind : std::uint8_t {
  kState,        // state tensor `index` as it was when the step began
  kBatchImages,  // the batch's images (BatchInputShape)
  kBatchLabels,  // the batch's labels [batch], class indices as floats
  kNode,         // output `output` of the earlier node `index`
};

struct TensorRef {
  SourceKind source = SourceKind::kState;
  int index = 0;
  int output = 0;
  /// When non-empty, the consumer reads the same elements under this shape (same element count).
  /// Only node outputs are viewed: a linear layer reads a C x H x W activation as C*H*W features,
  /// and its input gradient is read back as C x H x W.
  kernels::Shape view;
};

struct StepNode {
  int index = 0;
  std::string name;
  kernels::Op op = kernels::Op::kMatmul;
  /// The step-independent attributes; AttrsForStep adds what depends on the step.
  kernels::OpAttrs attrs;
  std::vector<TensorRef> inputs;
  std::vector<kernels::Shape> output_shapes;
  /// Per output: the state tensor this output replaces (optimizer nodes), or -1 for an
  /// intermediate value that lives only during the step.
  std::vector<int> state_writes;
};

struct StepGraph {
  ModelSpec model;
  OptimizerConfig optimizer;
  std::int64_t batch = 0;
  kernels::Shape images_shape;           // BatchInputShape(model, batch)
  kernels::Shape labels_shape;           // {batch}
  std::vector<std::string> state_names;  // the state layout the graph reads and writes
  std::vector<kernels::Shape> state_shapes;
  std::vector<StepNode> nodes;  // canonical order; node i has index i
  int logits_node = -1;         // output 0: logits [batch, outputs]
  int loss_node = -1;           // output 0: the mean loss [1]; -1 in a forward graph
};

/// The training step of `model` under `optimizer` for batches of `batch` samples. kInvalidArgument
/// for batch < 1 or an invalid optimizer.
Result<StepGraph> BuildTrainStepGraph(const ModelSpec& model, const OptimizerConfig& optimizer,
                                      std::int64_t batch);

/// The forward pass alone (through the logits), reading only the parameters. kInvalidArgument for
/// batch < 1.
Result<StepGraph> BuildForwardGraph(const ModelSpec& model, std::int64_t batch);

/// The attributes `node` runs with in the step that starts from a state with `step` completed
/// steps: node.attrs, with, for kSgdMomentum and kAdamW, lr = kernels::ScheduledLr(node.attrs,
/// step) (the optimizer's schedule; node.attrs.lr is the peak), and for kAdamW
/// bias_correction{1,2} = AdamBiasCorrection(beta{1,2}, step + 1). Nothing else depends on the
/// step.
kernels::OpAttrs AttrsForStep(const StepNode& node, std::int64_t step);

/// The shape a consumer sees through `ref`: its view if set, else the source's own shape.
kernels::Shape RefShape(const StepGraph& graph, const TensorRef& ref);

/// One line per node: "12 fc2.matmul.grad_b matmul_grad_b (n3.0, n9.0) -> [256, 128]", for
/// logs, dispute transcripts and tests.
std::string DescribeGraph(const StepGraph& graph);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_STEP_GRAPH_H_
