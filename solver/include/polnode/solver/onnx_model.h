// ONNX export and import of image classifiers and GPTs (DESIGN.md section 4): the trained model goes back
// to the submitter as an ONNX file, and a task may start from an ONNX file (architecture and
// initial weights) instead of a seeded built-in spec.
//
// Exported graph (opset kOnnxOpset, IR version 8, producer "polnode"):
//   input  "input"  float32 [batch, IN] (mlp:) or [batch, C, H, W] (cnn:), the batch dimension
//                   symbolic ("batch"); pixels normalised exactly as the task's data set feeds
//                   them to training (solver/dataset.h PixelNormalization).
//   output "logits" float32 [batch, classes], before any softmax.
//   Per layer, in ModelSpec order: Conv (3x3, stride 1, pads 1) + Relu, MaxPool (2x2, stride 2),
//   Flatten (axis 1, before the first linear layer of a cnn:), Gemm (transB = 0: polnode's linear
//   weights are [in, out]) + Relu except after the last layer. Every parameter is a float32
//   initializer named as in the state ("fc1.w", "conv1.b", ...), raw little-endian data.
//
// A gpt: model (model_spec.h) exports as:
//   input  "input"  int64 [batch, T] token ids (the corpus's symbol indices, as training reads them)
//   output "logits" float32 [batch, T, V]
//   Gather(wte, input) + wpe (an initializer [T, C]: the state's [T * C] table), then per block
//   LayerNormalization (axis -1, epsilon 1e-5) -> MatMul by wq, wk, wv -> Reshape [-1, T, H, D] ->
//   Transpose (q, v: [B, H, T, D]; k: [B, H, D, T]) -> MatMul (scores) -> Mul by 1/sqrt(D) ->
//   Where(causal mask [T, T] true above the diagonal, -inf, scores) -> Softmax (axis -1) -> MatMul
//   by v -> Transpose -> Reshape [-1, T, C] -> MatMul by wo -> Add (residual) -> LayerNormalization
//   -> MatMul by w1 -> GELU, tanh form, spelled out as torch.onnx.export writes it (Mul, Add, Tanh:
//   opset 17 has no Gelu) -> MatMul by w2 -> Add (residual); then lnf and MatMul by head.w. Nodes
//   are named after the step graph's (step_graph.h: "h0.attn.q", "h1.mlp.gelu", ...); shapes and
//   scalars are Constant nodes, so the initializers are exactly the parameters.
//
// Import maps a graph onto the built-in mlp:/cnn: operator set and reads the weights from its
// initializers. Accepted (what torch.onnx.export writes for nn.Sequential MLPs and CNNs at opset
// <= kOnnxOpset with do_constant_folding=False): one float32 graph input (the initializers aside)
// of shape [batch, F] or [batch, C, H, W]; nodes, in graph order:
//   Conv      kernel 3x3, stride 1, pads 1 on every side, dilation 1, group 1, with a bias,
//             followed by Relu
//   MaxPool   kernel 2x2, stride 2, no padding, dilation 1, ceil_mode 0, one output
//   Flatten   axis 1 (also first, on an image input of an MLP)
//   Gemm      alpha = beta = 1, transA = 0, transB 0 or 1, a bias initializer of [out]
//   MatMul    by an initializer [in, out], followed by Add of an initializer [out]
//   Relu      after a Conv, Gemm or MatMul+Add (required after Conv, and after every linear layer
//             but the last, which must be the graph's one output)
//   Identity  of a value or an initializer (an alias)
// Anything else is an error naming the operator and the node.
//
// A graph whose input holds integers (int64 or int32 token ids [batch, T], T fixed, the batch
// free) is imported as a GPT: every node's output gets a role in the gpt: architecture (the
// residual stream, a LayerNorm of it, a projection, heads, scores, ...) and an operator is accepted
// only where its inputs' roles fit polnode's forward. Accepted: what ExportOnnx writes and what
// torch.onnx.export (opset <= 17, do_constant_folding=False) writes for nanoGPT's bias-free GPT with
// an untied head: Gather (token embeddings), Add (position embeddings [T, C], [1, T, C] or views of
// a [T * C] initializer through Reshape, Unsqueeze and whole-range Slice; residuals; GELU), Mul or
// Div by the attention scale 1/sqrt(D), a causal mask as Where(future, <= -1e9 or -inf, scores),
// Where(past, scores, fill) or an additive [T, T] constant, Softmax over the last axis,
// LayerNormalization (epsilon 1e-5), MatMul, Reshape and Transpose of heads, GELU's tanh expression
// (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in torch's order), Identity; constant shape
// arithmetic (Constant, Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, ConstantOfShape, Trilu,
// Reshape, Equal) is evaluated with the batch left symbolic. Layers, heads, width, context and
// vocabulary are read from the shapes; each parameter must be its own initializer (tied weights
// are refused). An Erf GELU, a biased linear layer, another scale or mask, or any other operator is
// an error naming the node and operator.
#ifndef POLNODE_SOLVER_ONNX_MODEL_H_
#define POLNODE_SOLVER_ONNX_MODEL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/optimizer.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

/// The opset export writes and the newest import accepts (default domain).
inline constexpr std::int64_t kOnnxOpset = 17;
inline constexpr std::string_view kOnnxInputName = "input";
inline constexpr std::string_view kOnnxOutputName = "logits";
/// Largest ONNX file import reads (protobuf's own limit is 2 GiB).
inline constexpr std::size_t kMaxOnnxBytes = std::size_t{1} << 30;

/// The serialized ONNX ModelProto of `model` with the parameters of `state` (its first tensors, in
/// ModelSpec::params order), as described above; the same state always gives the same bytes.
/// A gpt: model without its vocabulary takes it from the state's token table (WithStateVocab).
/// kInvalidArgument for such a model whose state has no such table, or a state whose leading
/// tensors do not have the model's parameter names and shapes.
Result<std::string> ExportOnnx(const ModelSpec& model, const TrainState& state);

/// `model` itself, except that a gpt: model without its vocabulary (vocab fixed by the data) gets
/// the vocabulary of the state it trained, the rows of its token table "wte" [V, C]
/// (WithGptVocab). kInvalidArgument when that state has no such table.
Result<ModelSpec> WithStateVocab(ModelSpec model, const TrainState& state);

/// One ONNX node and the polnode layer it became.
struct OnnxNodeMapping {
  std::string node;     // the node's name (or "#<index>" when it has none)
  std::string op_type;  // "Gemm"
  std::string target;   // "fc1 (linear 784->256)", "fc1 relu", "alias", "flatten"
  std::vector<std::string> inputs, outputs;  // the node's value names, as in the file
};

struct OnnxImport {
  std::int64_t opset = 0;   // the default domain's opset the file declares
  std::string producer;     // producer_name and producer_version, as the file gives them
  std::string input_name;   // the graph input the batch feeds
  kernels::Shape input_shape;  // one sample as the file declares it (an MLP may take images; a GPT: {T})
  std::string output_name;  // the graph output holding the logits
  std::string spec;         // the built-in spec the graph maps onto: "cnn:i1x28x28-c8-p-10", "gpt:...,vocab=65"
  ModelSpec model;          // ParseModelSpec(spec)
  /// The initial parameters, in model.params order and polnode layout (linear weights [in, out]).
  std::vector<NamedTensor> params;
  /// Per parameter (parallel to params): the initializer of the file it was read from.
  std::vector<std::string> param_initializers;
  std::int64_t parameter_count = 0;  // elements over all params
  std::vector<OnnxNodeMapping> nodes;  // in graph order
};

/// Decodes and maps an ONNX file from untrusted bytes. Errors, none of which trains anything:
/// kResourceExhausted above kMaxOnnxBytes (or, for a GPT, constants of more than 2^25 elements in
/// all); kCorruption for bytes that are not a ModelProto, a
/// missing graph, or an initializer whose data does not match its dims; kInvalidArgument naming
/// the node and its operator for an unsupported operator or attribute, naming the opset for an
/// opset newer than kOnnxOpset (or another operator domain), and for a graph that is not one chain
/// of the layers above (shapes that do not fit, a Conv without Relu, several inputs or outputs, a
/// non-float32 tensor) or, with token ids in, not polnode's GPT (naming the first node off it).
Result<OnnxImport> ImportOnnx(std::span<const std::uint8_t> bytes);

/// The state at step 0 of a task whose model is imported: `params` (OnnxImport::params), then every
/// optimizer buffer of `optimizer` at +0.0f, in state order (train_state.h), as InitialState lays
/// it out. Precondition: params are model.params in order.
TrainState ImportedInitialState(const ModelSpec& model, const std::vector<NamedTensor>& params,
                                OptimizerKind optimizer);

/// A task names an ONNX model as "onnx:" followed by the file's SHA-256 in 64 lowercase hex digits
/// (the hash is part of the task id, so no solver can be handed another file); the file's location
/// is TaskSpec::model_location (TOML key model_file), which, like the data's, is not.

/// True when `text` starts with "onnx:", whatever follows.
bool IsOnnxModel(std::string_view text);

/// The SHA-256 an "onnx:<64 hex>" model names. kInvalidArgument for anything else.
Result<consensus::Hash256> OnnxModelHash(std::string_view text);

/// Reads the onnx: model of `task` from task.model_location (at most kMaxOnnxBytes) and imports
/// it. kInvalidArgument when the task has no model_location or its model is not onnx:;
/// kFailedPrecondition, before anything is decoded, when the file's SHA-256 is not the one the
/// task names; the read's and ImportOnnx's errors otherwise.
Result<OnnxImport> LoadOnnxTaskModel(const TaskSpec& task);

/// The model of `task`: ParseModelSpec of a built-in spec, or an onnx: model's (LoadOnnxTaskModel).
Result<ModelSpec> TaskModelSpec(const TaskSpec& task);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_ONNX_MODEL_H_
