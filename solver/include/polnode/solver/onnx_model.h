// ONNX export and import of image classifiers (DESIGN.md section 4): the trained model goes back
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
/// ModelSpec::params order), as described above. kInvalidArgument for a gpt: model, or a state
/// whose leading tensors do not have the model's parameter names and shapes.
Result<std::string> ExportOnnx(const ModelSpec& model, const TrainState& state);

/// One ONNX node and the polnode layer it became.
struct OnnxNodeMapping {
  std::string node;     // the node's name (or "#<index>" when it has none)
  std::string op_type;  // "Gemm"
  std::string target;   // "fc1 (linear 784->256)", "fc1 relu", "alias", "flatten"
};

struct OnnxImport {
  std::int64_t opset = 0;   // the default domain's opset the file declares
  std::string producer;     // producer_name and producer_version, as the file gives them
  std::string input_name;   // the graph input the batch feeds
  kernels::Shape input_shape;  // one sample as the file declares it (an MLP may take images)
  std::string output_name;  // the graph output holding the logits
  std::string spec;         // the built-in spec the graph maps onto: "cnn:i1x28x28-c8-p-10"
  ModelSpec model;          // ParseModelSpec(spec)
  /// The initial parameters, in model.params order and polnode layout (linear weights [in, out]).
  std::vector<NamedTensor> params;
  std::int64_t parameter_count = 0;  // elements over all params
  std::vector<OnnxNodeMapping> nodes;  // in graph order
};

/// Decodes and maps an ONNX file from untrusted bytes. Errors, none of which trains anything:
/// kResourceExhausted above kMaxOnnxBytes; kCorruption for bytes that are not a ModelProto, a
/// missing graph, or an initializer whose data does not match its dims; kInvalidArgument naming
/// the node and its operator for an unsupported operator or attribute, naming the opset for an
/// opset newer than kOnnxOpset (or another operator domain), and for a graph that is not one chain
/// of the layers above (shapes that do not fit, a Conv without Relu, several inputs or outputs, a
/// non-float32 tensor).
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
