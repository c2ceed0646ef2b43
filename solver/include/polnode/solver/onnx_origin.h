// Where a node of an imported model's step graph (step_graph.h) comes from in the ONNX file it was
// imported from (onnx_model.h), so that a dispute over an onnx: task names the file's own node
// (issue 13: "the pinpoint path names the ONNX node"). The ledger, the referee and the hashes only
// know the step graph; this is a view for people (`polnode dispute replay --model`, the devnet's
// report), computed from OnnxImport alone.
//
// A forward node maps to the ONNX node that computes the same value: a layer's matmul, conv or
// bias to the node reading its parameter's initializer (through Identity aliases and views), a
// parameter-free operator (relu, max pool, attention scores, causal softmax, P V, merge, GELU,
// residuals) to the node of that role reached from its block's parameter readers. A backward node
// ("...grad", "...grad_a", ...) maps to the forward node it differentiates; an optimizer node
// ("<param>.sgd", "<param>.adam") to the parameter's initializer, as do gradient clipping's
// per-parameter nodes. The loss and the clip coefficient are not in the file (the task adds them).
#ifndef POLNODE_SOLVER_ONNX_ORIGIN_H_
#define POLNODE_SOLVER_ONNX_ORIGIN_H_

#include <string>
#include <string_view>

#include "polnode/solver/onnx_model.h"

namespace polnode::solver {

enum class OnnxRelation {
  kForward,    // computes the output of `node`
  kBackward,   // a gradient through `node`
  kUpdate,     // the optimizer's update of `initializer`
  kClipping,   // gradient-norm clipping of `initializer`'s gradient
  kNotInFile,  // the task's loss or the step's own totals: no node of the file
};

struct OnnxOrigin {
  OnnxRelation relation = OnnxRelation::kNotInFile;
  /// Points into the OnnxImport::nodes it was computed from; null for kNotInFile.
  const OnnxNodeMapping* node = nullptr;
  /// For kUpdate and kClipping (and forward nodes that read a parameter): the file's initializer.
  std::string initializer;
};

/// The origin of step-graph node `step_node` in `import` (which must outlive the result). A name
/// that is not a node of the imported model's step graph, or whose node the file does not hold, is
/// kNotInFile.
OnnxOrigin OnnxOriginOf(const OnnxImport& import, std::string_view step_node);

/// One line for people, e.g. "ONNX node '/fc1/Gemm' (Gemm: linear 784->256)", "backward of ONNX
/// node ...", "update of ONNX initializer 'fc1.weight' (read by node '/fc1/Gemm', Gemm)",
/// "not in the ONNX file (the task's loss and the training step's own totals)".
std::string DescribeOnnxOrigin(const OnnxOrigin& origin);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_ONNX_ORIGIN_H_
