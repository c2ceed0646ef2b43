#include "polnode/solver/step_graph.h"

#include <string>
#include <utility>

namespace polnode::solver {
namespace {

using kernels::Op;
using kernels::OpAttrs;
using kernels::Shape;

// Appends nodes to a graph, tracking the shape of every output it hands out.
class Builder {
 public:
  explicit Builder(StepGraph& g) : g_(g) {}

  // Adds a node and returns references to its outputs.
  std::vector<TensorRef> Add(std::string name, Op op, const OpAttrs& attrs,
                             std::vector<TensorRef> inputs, std::vector<Shape> output_shapes,
                             std::vector<int> state_writes = {}) {
    StepNode n;
    n.index = static_cast<int>(g_.nodes.size());
    n.name = std::move(name);
    n.op = op;
    n.attrs = attrs;
    n.inputs = std::move(inputs);
    if (state_writes.empty()) state_writes.assign(output_shapes.size(), -1);
    n.state_writes = std::move(state_writes);
    n.output_shapes = std::move(output_shapes);
    std::vector<TensorRef> outs;
    for (std::size_t k = 0; k < n.output_shapes.size(); ++k) {
      outs.push_back({SourceKind::kNode, n.index, static_cast<int>(k), {}});
    }
    g_.nodes.push_back(std::move(n));
    return outs;
  }
  TensorRef Add1(std::string name, Op op, std::vector<TensorRef> inputs, Shape shape,
                 const OpAttrs& attrs = {}) {
    return Add(std::move(name), op, attrs, std::move(inputs), {std::move(shape)})[0];
  }

  Shape ShapeOf(const TensorRef& r) const { return RefShape(g_, r); }

 private:
  StepGraph& g_;
};

TensorRef StateRef(int index) { return {SourceKind::kState, index, 0, {}}; }

TensorRef WithView(TensorRef r, Shape view) {
  r.view = std::move(view);
  return r;
}

// What the backward pass needs from each layer's forward nodes.
struct LayerTrace {
  TensorRef input;        // the activation entering the layer, as the layer reads it
  TensorRef pre_relu;     // the bias_add output (valid when the layer has a ReLU)
  TensorRef pool_argmax;  // pooling: which tap won
};

StepGraph NewGraph(const ModelSpec& model, std::int64_t batch) {
  StepGraph g;
  g.model = model;
  g.batch = batch;
  g.images_shape = BatchInputShape(model, batch);
  g.labels_shape = {batch};
  for (const ParamSpec& p : model.params) {
    g.state_names.push_back(p.name);
    g.state_shapes.push_back(p.shape);
  }
  return g;
}

// Appends the forward pass; returns the logits and fills one trace per layer.
TensorRef AddForward(StepGraph& g, Builder& b, std::vector<LayerTrace>& traces) {
  const std::int64_t batch = g.batch;
  TensorRef x = {SourceKind::kBatchImages, 0, 0, {}};
  for (const LayerSpec& l : g.model.layers) {
    LayerTrace trace;
    Shape out = {batch};
    out.insert(out.end(), l.out_shape.begin(), l.out_shape.end());
    switch (l.kind) {
      case LayerKind::kLinear: {
        if (l.flattens) x = WithView(x, {batch, kernels::NumElements(l.in_shape)});
        trace.input = x;
        const TensorRef y =
            b.Add1(l.name + ".matmul", Op::kMatmul, {x, StateRef(l.weight_param)}, out);
        x = b.Add1(l.name + ".bias_add", Op::kBiasAdd, {y, StateRef(l.bias_param)}, out);
        break;
      }
      case LayerKind::kConv3x3: {
        trace.input = x;
        const TensorRef y =
            b.Add1(l.name + ".conv", Op::kConv2d3x3, {x, StateRef(l.weight_param)}, out);
        x = b.Add1(l.name + ".bias_add", Op::kBiasAdd, {y, StateRef(l.bias_param)}, out);
        break;
      }
      case LayerKind::kMaxPool2x2: {
        trace.input = x;
        const std::vector<TensorRef> outs =
            b.Add(l.name + ".maxpool", Op::kMaxPool2x2, {}, {x}, {out, out});
        x = outs[0];
        trace.pool_argmax = outs[1];
        break;
      }
    }
    if (l.relu) {
      trace.pre_relu = x;
      x = b.Add1(l.name + ".relu", Op::kRelu, {x}, out);
    }
    traces.push_back(std::move(trace));
  }
  return x;
}

// Appends the backward pass from dlogits; returns the gradient of every parameter, by index.
std::vector<TensorRef> AddBackward(StepGraph& g, Builder& b, const std::vector<LayerTrace>& traces,
                                   TensorRef d) {
  const std::vector<LayerSpec>& layers = g.model.layers;
  std::vector<TensorRef> grads(g.model.params.size());
  const auto param_shape = [&](int p) { return g.model.params[static_cast<std::size_t>(p)].shape; };
  // The input gradient of a layer is needed only if some earlier layer has parameters (the
  // first layers may be parameter-free pools reading the batch).
  std::vector<bool> needs_input_grad(layers.size(), false);
  for (std::size_t li = 1; li < layers.size(); ++li) {
    needs_input_grad[li] = needs_input_grad[li - 1] || layers[li - 1].weight_param >= 0;
  }
  for (std::size_t li = layers.size(); li-- > 0;) {
    const LayerSpec& l = layers[li];
    const LayerTrace& t = traces[li];
    const Shape in_shape = b.ShapeOf(t.input);
    if (l.relu) d = b.Add1(l.name + ".relu.grad", Op::kReluGrad, {t.pre_relu, d}, b.ShapeOf(d));
    const bool first = !needs_input_grad[li];
    switch (l.kind) {
      case LayerKind::kLinear: {
        const TensorRef w = StateRef(l.weight_param);
        grads[static_cast<std::size_t>(l.bias_param)] =
            b.Add1(l.name + ".bias_add.grad", Op::kBiasGrad, {d}, param_shape(l.bias_param));
        grads[static_cast<std::size_t>(l.weight_param)] = b.Add1(
            l.name + ".matmul.grad_b", Op::kMatmulGradB, {t.input, d}, param_shape(l.weight_param));
        if (!first) {
          d = b.Add1(l.name + ".matmul.grad_a", Op::kMatmulGradA, {d, w}, in_shape);
          if (l.flattens) {
            Shape unflat = {g.batch};
            unflat.insert(unflat.end(), l.in_shape.begin(), l.in_shape.end());
            d = WithView(d, unflat);
          }
        }
        break;
      }
      case LayerKind::kConv3x3: {
        grads[static_cast<std::size_t>(l.bias_param)] =
            b.Add1(l.name + ".bias_add.grad", Op::kBiasGrad, {d}, param_shape(l.bias_param));
        grads[static_cast<std::size_t>(l.weight_param)] =
            b.Add1(l.name + ".conv.grad_weight", Op::kConv2d3x3GradWeight, {t.input, d},
                   param_shape(l.weight_param));
        if (!first) {
          d = b.Add1(l.name + ".conv.grad_input", Op::kConv2d3x3GradInput,
                     {d, StateRef(l.weight_param)}, in_shape);
        }
        break;
      }
      case LayerKind::kMaxPool2x2: {
        if (!first) {
          OpAttrs attrs;
          attrs.pool_input_h = l.in_shape[1];
          attrs.pool_input_w = l.in_shape[2];
          d = b.Add1(l.name + ".maxpool.grad", Op::kMaxPool2x2Grad, {t.pool_argmax, d}, in_shape,
                     attrs);
        }
        break;
      }
    }
  }
  return grads;
}

void AddOptimizer(StepGraph& g, Builder& b, const std::vector<TensorRef>& grads) {
  const OptimizerConfig& o = g.optimizer;
  const int num_params = static_cast<int>(g.model.params.size());
  const int per_param = o.kind == OptimizerKind::kSgd ? 1 : 2;
  OpAttrs attrs;
  attrs.lr = o.lr;
  attrs.weight_decay = o.weight_decay;
  attrs.momentum = o.momentum;
  attrs.beta1 = o.beta1;
  attrs.beta2 = o.beta2;
  attrs.eps = o.eps;
  for (int p = 0; p < num_params; ++p) {
    const ParamSpec& ps = g.model.params[static_cast<std::size_t>(p)];
    const int first_buffer = num_params + p * per_param;
    std::vector<TensorRef> inputs = {StateRef(p), grads[static_cast<std::size_t>(p)]};
    std::vector<int> writes = {p};
    for (int k = 0; k < per_param; ++k) {
      inputs.push_back(StateRef(first_buffer + k));
      writes.push_back(first_buffer + k);
    }
    const bool sgd = o.kind == OptimizerKind::kSgd;
    std::vector<Shape> shapes(writes.size(), ps.shape);
    b.Add(ps.name + (sgd ? ".sgd" : ".adam"), sgd ? Op::kSgdMomentum : Op::kAdamW, attrs,
          std::move(inputs), std::move(shapes), std::move(writes));
  }
}

}  // namespace

Result<StepGraph> BuildTrainStepGraph(const ModelSpec& model, const OptimizerConfig& optimizer,
                                      std::int64_t batch) {
  if (batch < 1)
    return Status::InvalidArgument("batch size must be >= 1, got " + std::to_string(batch));
  POLNODE_RETURN_IF_ERROR(ValidateOptimizer(optimizer));
  StepGraph g = NewGraph(model, batch);
  g.optimizer = optimizer;
  for (const ParamSpec& p : model.params) {
    for (const std::string& suffix : OptimizerBufferSuffixes(optimizer.kind)) {
      g.state_names.push_back(p.name + "." + suffix);
      g.state_shapes.push_back(p.shape);
    }
  }
  Builder b(g);
  std::vector<LayerTrace> traces;
  const TensorRef logits = AddForward(g, b, traces);
  g.logits_node = logits.index;
  const TensorRef labels = {SourceKind::kBatchLabels, 0, 0, {}};
  const Shape logits_shape = b.ShapeOf(logits);
  const std::vector<TensorRef> loss = b.Add("loss.softmax_xent", kernels::Op::kSoftmaxCrossEntropy,
                                            {}, {logits, labels}, {{1}, logits_shape});
  g.loss_node = loss[0].index;
  const TensorRef dlogits = b.Add1("loss.softmax_xent.grad", kernels::Op::kSoftmaxCrossEntropyGrad,
                                   {loss[1], labels}, logits_shape);
  AddOptimizer(g, b, AddBackward(g, b, traces, dlogits));
  return g;
}

Result<StepGraph> BuildForwardGraph(const ModelSpec& model, std::int64_t batch) {
  if (batch < 1)
    return Status::InvalidArgument("batch size must be >= 1, got " + std::to_string(batch));
  StepGraph g = NewGraph(model, batch);
  Builder b(g);
  std::vector<LayerTrace> traces;
  g.logits_node = AddForward(g, b, traces).index;
  return g;
}

kernels::OpAttrs AttrsForStep(const StepNode& node, std::int64_t step) {
  kernels::OpAttrs attrs = node.attrs;
  if (node.op == kernels::Op::kAdamW) {
    attrs.bias_correction1 = kernels::AdamBiasCorrection(attrs.beta1, step + 1);
    attrs.bias_correction2 = kernels::AdamBiasCorrection(attrs.beta2, step + 1);
  }
  return attrs;
}

kernels::Shape RefShape(const StepGraph& graph, const TensorRef& ref) {
  if (!ref.view.empty()) return ref.view;
  switch (ref.source) {
    case SourceKind::kState:
      return graph.state_shapes[static_cast<std::size_t>(ref.index)];
    case SourceKind::kBatchImages:
      return graph.images_shape;
    case SourceKind::kBatchLabels:
      return graph.labels_shape;
    case SourceKind::kNode:
      return graph.nodes[static_cast<std::size_t>(ref.index)]
          .output_shapes[static_cast<std::size_t>(ref.output)];
  }
  return {};
}

std::string DescribeGraph(const StepGraph& graph) {
  std::string out;
  for (const StepNode& n : graph.nodes) {
    out += std::to_string(n.index) + " " + n.name + " " + std::string(kernels::OpName(n.op)) + " (";
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const TensorRef& r = n.inputs[i];
      if (i > 0) out += ", ";
      switch (r.source) {
        case SourceKind::kState:
          out += graph.state_names[static_cast<std::size_t>(r.index)];
          break;
        case SourceKind::kBatchImages:
          out += "batch.images";
          break;
        case SourceKind::kBatchLabels:
          out += "batch.labels";
          break;
        case SourceKind::kNode:
          out += "n" + std::to_string(r.index) + "." + std::to_string(r.output);
          break;
      }
      if (!r.view.empty()) out += " as " + kernels::ShapeToString(r.view);
    }
    out += ") ->";
    for (std::size_t k = 0; k < n.output_shapes.size(); ++k) {
      out += " " + kernels::ShapeToString(n.output_shapes[k]);
      if (n.state_writes[k] >= 0)
        out += "=" + graph.state_names[static_cast<std::size_t>(n.state_writes[k])];
    }
    out += "\n";
  }
  return out;
}

}  // namespace polnode::solver
