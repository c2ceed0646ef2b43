#include "polnode/solver/onnx_origin.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace polnode::solver {
namespace {

using NodePredicate = std::function<bool(const OnnxNodeMapping&)>;

bool StartsWith(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool TargetStartsWith(const OnnxNodeMapping& n, std::string_view prefix) { return StartsWith(n.target, prefix); }

// Nodes that only rename a value (Identity, a view of an initializer, a reshape that changes
// nothing) are walked through: the node a parameter "comes from" is the first that computes.
bool IsAlias(const OnnxNodeMapping& n) {
  return TargetStartsWith(n, "alias") || TargetStartsWith(n, "view of initializer") || TargetStartsWith(n, "no-op reshape");
}

class OriginFinder {
 public:
  explicit OriginFinder(const OnnxImport& import) : import_(import) {}

  std::optional<std::size_t> ParamIndex(std::string_view name) const {
    for (std::size_t i = 0; i < import_.params.size(); ++i) {
      if (import_.params[i].name == name) return i;
    }
    return std::nullopt;
  }

  std::string Initializer(std::size_t param) const {
    return param < import_.param_initializers.size() ? import_.param_initializers[param] : "";
  }

  // The first node reading parameter `name`'s initializer, past aliases; -1 if none (or no such
  // parameter).
  int Reader(std::string_view name) const {
    const std::optional<std::size_t> p = ParamIndex(name);
    // An empty name is ONNX's absent optional input, which many nodes "read".
    if (!p || Initializer(*p).empty()) return -1;
    std::set<std::string> values = {Initializer(*p)};
    for (std::size_t i = 0; i < import_.nodes.size(); ++i) {
      const OnnxNodeMapping& n = import_.nodes[i];
      if (!Reads(n, values)) continue;
      if (!IsAlias(n)) return static_cast<int>(i);
      values.insert(n.outputs.begin(), n.outputs.end());
    }
    return -1;
  }

  // The first node after `from`, in graph order (which is topological), that depends on `from`'s
  // outputs and satisfies `want`; -1 if none.
  int Downstream(int from, const NodePredicate& want) const {
    if (from < 0) return -1;
    std::set<std::string> values(import_.nodes[from].outputs.begin(), import_.nodes[from].outputs.end());
    for (std::size_t i = static_cast<std::size_t>(from) + 1; i < import_.nodes.size(); ++i) {
      const OnnxNodeMapping& n = import_.nodes[i];
      if (!Reads(n, values)) continue;
      if (want(n)) return static_cast<int>(i);
      values.insert(n.outputs.begin(), n.outputs.end());
    }
    return -1;
  }

  // The node computing forward step-graph node `name` (no "grad" component); -1 if unknown.
  int Forward(std::string_view name) const {
    const std::size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) return -1;
    const std::string prefix(name.substr(0, dot));
    const std::string_view key = name.substr(dot + 1);
    const auto role = [](std::string_view target) {
      return NodePredicate([target](const OnnxNodeMapping& n) { return TargetStartsWith(n, target); });
    };
    const auto op = [](std::string_view type) {
      return NodePredicate([type](const OnnxNodeMapping& n) { return n.op_type == type; });
    };
    if (key == "matmul" || key == "conv") return Reader(prefix + ".w");
    if (key == "bias_add") return ParamIndex(prefix + ".b") ? Reader(prefix + ".b") : Reader(prefix);
    if (key == "embedding") return Reader(prefix);
    if (key == "relu") return Downstream(Reader(prefix + ".w"), op("Relu"));
    if (key == "maxpool") return MaxPool(prefix);
    if (key == "heads") return Downstream(Forward(prefix), op("Transpose"));
    if (prefix.ends_with(".attn")) {
      if (key == "q" || key == "k" || key == "v") return Reader(prefix + ".w" + std::string(key));
      if (key == "scores") return Downstream(Reader(prefix + ".wq"), role("attention scores"));
      if (key == "softmax") return Downstream(Reader(prefix + ".wq"), role("causal softmax"));
      if (key == "mix") return Downstream(Reader(prefix + ".wv"), role("attention P V"));
      if (key == "merge") {
        return Downstream(Reader(prefix + ".wv"), [](const OnnxNodeMapping& n) {
          return TargetStartsWith(n, "heads back") || TargetStartsWith(n, "merge the heads");
        });
      }
      if (key == "proj") return Reader(prefix + ".wo");
      if (key == "residual") return Downstream(Reader(prefix + ".wo"), role("attention residual"));
    }
    if (prefix.ends_with(".mlp")) {
      if (key == "fc") return Reader(prefix + ".w1");
      if (key == "gelu") return Downstream(Reader(prefix + ".w1"), role("GELU (tanh): tanh"));
      if (key == "proj") return Reader(prefix + ".w2");
      if (key == "residual") return Downstream(Reader(prefix + ".w2"), role("MLP residual"));
    }
    return -1;
  }

  // A LayerNorm node ("h0.ln1", "lnf") is named by its parameters' prefix alone.
  int LayerNorm(std::string_view name) const { return Reader(std::string(name) + ".g"); }

  const OnnxNodeMapping* Node(int index) const { return index < 0 ? nullptr : &import_.nodes[index]; }

 private:
  static bool Reads(const OnnxNodeMapping& n, const std::set<std::string>& values) {
    for (const std::string& in : n.inputs) {
      if (values.contains(in)) return true;
    }
    return false;
  }

  // "pool<k>": the file's k-th MaxPool.
  int MaxPool(std::string_view layer) const {
    if (!StartsWith(layer, "pool")) return -1;
    int k = 0;
    for (char c : layer.substr(4)) {
      if (c < '0' || c > '9' || k > 1000) return -1;
      k = k * 10 + (c - '0');
    }
    for (std::size_t i = 0; i < import_.nodes.size(); ++i) {
      if (import_.nodes[i].op_type == "MaxPool" && --k == 0) return static_cast<int>(i);
    }
    return -1;
  }

  const OnnxImport& import_;
};

// The forward name a backward node differentiates: everything before its first "grad..."
// component ("fc1.matmul.grad_b" -> "fc1.matmul", "h0.attn.q.heads.grad" -> "h0.attn.q.heads").
std::optional<std::string> ForwardOfBackward(std::string_view name) {
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('.', start), name.size());
    if (StartsWith(name.substr(start, end - start), "grad")) {
      if (start == 0) return std::nullopt;
      return std::string(name.substr(0, start - 1));
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

OnnxOrigin OnnxOriginOf(const OnnxImport& import, std::string_view step_node) {
  const OriginFinder finder(import);
  OnnxOrigin origin;
  // Per-parameter nodes: the optimizer's update and gradient clipping's.
  for (std::size_t p = 0; p < import.params.size(); ++p) {
    const std::string& name = import.params[p].name;
    const bool update = step_node == name + ".sgd" || step_node == name + ".adam";
    const bool clipping = StartsWith(step_node, name + ".grad.") || step_node == "grad_norm.sum." + name;
    if (!update && !clipping) continue;
    origin.relation = update ? OnnxRelation::kUpdate : OnnxRelation::kClipping;
    origin.initializer = finder.Initializer(p);
    origin.node = finder.Node(finder.Reader(name));
    return origin;
  }
  std::string forward(step_node);
  bool backward = false;
  if (std::optional<std::string> f = ForwardOfBackward(step_node)) {
    forward = *f;
    backward = true;
  }
  int index = finder.Forward(forward);
  if (index < 0) index = finder.LayerNorm(forward);
  if (index < 0) return origin;
  origin.relation = backward ? OnnxRelation::kBackward : OnnxRelation::kForward;
  origin.node = finder.Node(index);
  return origin;
}

std::string DescribeOnnxOrigin(const OnnxOrigin& origin) {
  const auto node_text = [&origin] {
    return "ONNX node '" + origin.node->node + "' (" + origin.node->op_type + ": " + origin.node->target + ")";
  };
  const auto reader_text = [&origin] {
    return origin.node == nullptr ? std::string()
                                  : " (read by node '" + origin.node->node + "', " + origin.node->op_type + ")";
  };
  switch (origin.relation) {
    case OnnxRelation::kForward:
      return node_text();
    case OnnxRelation::kBackward:
      return "backward of " + node_text();
    case OnnxRelation::kUpdate:
      return "update of ONNX initializer '" + origin.initializer + "'" + reader_text();
    case OnnxRelation::kClipping:
      return "gradient clipping of ONNX initializer '" + origin.initializer + "'" + reader_text();
    case OnnxRelation::kNotInFile:
      break;
  }
  return "not in the ONNX file (the task's loss and the training step's own totals)";
}

}  // namespace polnode::solver
