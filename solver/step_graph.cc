#include "polnode/solver/step_graph.h"

#include <cmath>
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

// A GPT's graph needs its parameters, which exist once the vocabulary is fixed (WithGptVocab).
Status CheckGptReady(const ModelSpec& model) {
  if (model.gpt && model.params.empty()) {
    return Status::InvalidArgument("model " + model.text +
                                   " has no vocabulary yet: fix it from the data (WithGptVocab)");
  }
  return Status::Ok();
}

StepGraph NewGraph(const ModelSpec& model, std::int64_t batch) {
  StepGraph g;
  g.model = model;
  g.batch = batch;
  g.images_shape = BatchInputShape(model, batch);
  // A GPT predicts the next symbol at every position: one label per position.
  g.labels_shape = {model.gpt ? batch * model.gpt->context : batch};
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

// ---- GPT (model_spec.h's gpt: grammar). Parameter indices follow the state order there.
struct GptIndex {
  static constexpr int kWte = 0;
  static constexpr int kWpe = 1;
  static constexpr int kPerBlock = 10;
  static int Block(std::int64_t i) { return 2 + static_cast<int>(i) * kPerBlock; }
  // Offsets within a block.
  static constexpr int kLn1G = 0, kLn1B = 1, kWq = 2, kWk = 3, kWv = 4, kWo = 5, kLn2G = 6,
                       kLn2B = 7, kW1 = 8, kW2 = 9;
  static int Final(const GptConfig& g) { return Block(g.layers); }  // lnf.g, lnf.b, head.w
};
static_assert(GptIndex::kLn1B == GptIndex::kLn1G + 1 && GptIndex::kLn2B == GptIndex::kLn2G + 1,
              "AddLayerNorm and its backward read a LayerNorm's shift right after its gain");

// What a block's backward reads from its forward.
struct GptBlockTrace {
  TensorRef x_in, ln1_y, ln1_mean, ln1_rstd, qh, kh, vh, probs, merged;
  TensorRef x_mid, ln2_y, ln2_mean, ln2_rstd, fc, act;
};

struct GptTrace {
  std::vector<GptBlockTrace> blocks;
  TensorRef x_final, lnf_y, lnf_mean, lnf_rstd;
};

OpAttrs LayerNormAttrs() {
  OpAttrs a;
  a.eps = 1e-5f;  // PyTorch's nn.LayerNorm default
  return a;
}

OpAttrs SoftmaxAttrs(const GptConfig& g) {
  OpAttrs a;
  a.scale = 1.0f / std::sqrt(static_cast<float>(g.head_dim()));
  return a;
}

// Appends a LayerNorm of `x` (read as [N, C]) with gain/shift parameters `gain`, `gain` + 1;
// returns {Y, Mean, Rstd}.
std::vector<TensorRef> AddLayerNorm(Builder& b, const std::string& name, TensorRef x, int gain,
                                    std::int64_t n, std::int64_t c) {
  return b.Add(name, Op::kLayerNorm, LayerNormAttrs(), {WithView(x, {n, c}), StateRef(gain),
                                                        StateRef(gain + 1)},
               {{n, c}, {n}, {n}});
}

TensorRef AddGptForward(StepGraph& g, Builder& b, GptTrace& trace) {
  const GptConfig& m = *g.model.gpt;
  const std::int64_t bt = g.batch, t = m.context, c = m.width, h = m.heads, d = m.head_dim();
  const std::int64_t n = bt * t;
  const TensorRef ids = {SourceKind::kBatchImages, 0, 0, {}};
  const TensorRef tok =
      b.Add1("wte.embedding", Op::kEmbedding, {StateRef(GptIndex::kWte), ids}, {bt, t, c});
  TensorRef x = b.Add1("wpe.bias_add", Op::kBiasAdd,
                       {WithView(tok, {bt, t * c}), StateRef(GptIndex::kWpe)}, {bt, t * c});
  const Shape heads = {bt, h, t, d};
  const Shape split = {bt, t, h, d};
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "h" + std::to_string(i);
    const int base = GptIndex::Block(i);
    GptBlockTrace tr;
    tr.x_in = WithView(x, {n, c});
    std::vector<TensorRef> ln1 = AddLayerNorm(b, p + ".ln1", x, base + GptIndex::kLn1G, n, c);
    tr.ln1_y = ln1[0];
    tr.ln1_mean = ln1[1];
    tr.ln1_rstd = ln1[2];
    const auto project = [&](const char* what, int w) {
      const TensorRef y = b.Add1(p + ".attn." + what, Op::kMatmul, {tr.ln1_y, StateRef(base + w)},
                                 {n, c});
      return b.Add1(p + ".attn." + what + ".heads", Op::kTransposeHeads, {WithView(y, split)},
                    heads);
    };
    tr.qh = project("q", GptIndex::kWq);
    tr.kh = project("k", GptIndex::kWk);
    tr.vh = project("v", GptIndex::kWv);
    // Scores Q K^T: kBatchedMatmulGradA computes dC * B^T per head.
    const TensorRef scores =
        b.Add1(p + ".attn.scores", Op::kBatchedMatmulGradA, {tr.qh, tr.kh}, {bt, h, t, t});
    tr.probs = b.Add1(p + ".attn.softmax", Op::kCausalSoftmax, {scores}, {bt, h, t, t},
                      SoftmaxAttrs(m));
    const TensorRef mixed =
        b.Add1(p + ".attn.mix", Op::kBatchedMatmul, {tr.probs, tr.vh}, heads);
    tr.merged = b.Add1(p + ".attn.merge", Op::kTransposeHeads, {mixed}, split);
    const TensorRef proj = b.Add1(p + ".attn.proj", Op::kMatmul,
                                  {WithView(tr.merged, {n, c}), StateRef(base + GptIndex::kWo)},
                                  {n, c});
    tr.x_mid = b.Add1(p + ".attn.residual", Op::kAdd, {tr.x_in, proj}, {n, c});
    std::vector<TensorRef> ln2 = AddLayerNorm(b, p + ".ln2", tr.x_mid, base + GptIndex::kLn2G, n, c);
    tr.ln2_y = ln2[0];
    tr.ln2_mean = ln2[1];
    tr.ln2_rstd = ln2[2];
    tr.fc = b.Add1(p + ".mlp.fc", Op::kMatmul, {tr.ln2_y, StateRef(base + GptIndex::kW1)},
                   {n, 4 * c});
    tr.act = b.Add1(p + ".mlp.gelu", Op::kGelu, {tr.fc}, {n, 4 * c});
    const TensorRef out = b.Add1(p + ".mlp.proj", Op::kMatmul,
                                 {tr.act, StateRef(base + GptIndex::kW2)}, {n, c});
    x = b.Add1(p + ".mlp.residual", Op::kAdd, {tr.x_mid, out}, {n, c});
    trace.blocks.push_back(std::move(tr));
  }
  const int fin = GptIndex::Final(m);
  trace.x_final = WithView(x, {n, c});
  std::vector<TensorRef> lnf = AddLayerNorm(b, "lnf", x, fin, n, c);
  trace.lnf_y = lnf[0];
  trace.lnf_mean = lnf[1];
  trace.lnf_rstd = lnf[2];
  return b.Add1("head.matmul", Op::kMatmul, {trace.lnf_y, StateRef(fin + 2)}, {n, m.vocab});
}

// LayerNorm's backward: fills the gain's and shift's gradients and returns dX [N, C].
TensorRef AddLayerNormGrad(Builder& b, const std::string& name, TensorRef x,
                           TensorRef mean, TensorRef rstd, TensorRef dy, int gain,
                           std::vector<TensorRef>& grads) {
  const Shape xs = b.ShapeOf(x);
  const std::int64_t c = xs.back();
  const std::vector<TensorRef> outs =
      b.Add(name + ".grad", Op::kLayerNormGrad, LayerNormAttrs(),
            {x, StateRef(gain), mean, rstd, dy}, {xs, {c}, {c}});
  grads[static_cast<std::size_t>(gain)] = outs[1];
  grads[static_cast<std::size_t>(gain + 1)] = outs[2];
  return outs[0];
}

std::vector<TensorRef> AddGptBackward(StepGraph& g, Builder& b, const GptTrace& trace,
                                      TensorRef d) {
  const GptConfig& m = *g.model.gpt;
  const std::int64_t bt = g.batch, t = m.context, c = m.width, h = m.heads, d_head = m.head_dim();
  const std::int64_t n = bt * t;
  const Shape heads = {bt, h, t, d_head};
  const Shape split = {bt, t, h, d_head};
  std::vector<TensorRef> grads(g.model.params.size());
  const auto shape_of = [&](int p) { return g.model.params[static_cast<std::size_t>(p)].shape; };
  const int fin = GptIndex::Final(m);
  grads[static_cast<std::size_t>(fin + 2)] =
      b.Add1("head.matmul.grad_b", Op::kMatmulGradB, {trace.lnf_y, d}, shape_of(fin + 2));
  d = b.Add1("head.matmul.grad_a", Op::kMatmulGradA, {d, StateRef(fin + 2)}, {n, c});
  d = AddLayerNormGrad(b, "lnf", trace.x_final, trace.lnf_mean, trace.lnf_rstd, d, fin, grads);
  for (std::int64_t i = m.layers; i-- > 0;) {
    const std::string p = "h" + std::to_string(i);
    const int base = GptIndex::Block(i);
    const GptBlockTrace& tr = trace.blocks[static_cast<std::size_t>(i)];
    const auto weight_grad = [&](const std::string& name, TensorRef a, TensorRef dc, int w) {
      grads[static_cast<std::size_t>(base + w)] =
          b.Add1(name + ".grad_b", Op::kMatmulGradB, {a, dc}, shape_of(base + w));
    };
    // MLP branch: d is the gradient of the block's output.
    weight_grad(p + ".mlp.proj", tr.act, d, GptIndex::kW2);
    TensorRef dm = b.Add1(p + ".mlp.proj.grad_a", Op::kMatmulGradA,
                          {d, StateRef(base + GptIndex::kW2)}, {n, 4 * c});
    dm = b.Add1(p + ".mlp.gelu.grad", Op::kGeluGrad, {tr.fc, dm}, {n, 4 * c});
    weight_grad(p + ".mlp.fc", tr.ln2_y, dm, GptIndex::kW1);
    dm = b.Add1(p + ".mlp.fc.grad_a", Op::kMatmulGradA, {dm, StateRef(base + GptIndex::kW1)},
                {n, c});
    dm = AddLayerNormGrad(b, p + ".ln2", tr.x_mid, tr.ln2_mean, tr.ln2_rstd, dm,
                          base + GptIndex::kLn2G, grads);
    d = b.Add1(p + ".mlp.residual.grad", Op::kAdd, {d, dm}, {n, c});
    // Attention branch.
    weight_grad(p + ".attn.proj", WithView(tr.merged, {n, c}), d, GptIndex::kWo);
    const TensorRef dmerged = b.Add1(p + ".attn.proj.grad_a", Op::kMatmulGradA,
                                     {d, StateRef(base + GptIndex::kWo)}, {n, c});
    const TensorRef dmixed = b.Add1(p + ".attn.merge.grad", Op::kTransposeHeads,
                                    {WithView(dmerged, split)}, heads);
    const TensorRef dprobs = b.Add1(p + ".attn.mix.grad_a", Op::kBatchedMatmulGradA,
                                    {dmixed, tr.vh}, {bt, h, t, t});
    const TensorRef dvh = b.Add1(p + ".attn.mix.grad_b", Op::kBatchedMatmulGradB,
                                 {tr.probs, dmixed}, heads);
    const TensorRef dscores = b.Add1(p + ".attn.softmax.grad", Op::kCausalSoftmaxGrad,
                                     {tr.probs, dprobs}, {bt, h, t, t}, SoftmaxAttrs(m));
    const TensorRef dqh =
        b.Add1(p + ".attn.scores.grad_q", Op::kBatchedMatmul, {dscores, tr.kh}, heads);
    const TensorRef dkh =
        b.Add1(p + ".attn.scores.grad_k", Op::kBatchedMatmulGradB, {dscores, tr.qh}, heads);
    TensorRef dy;
    const std::pair<const char*, TensorRef> branches[] = {{"q", dqh}, {"k", dkh}, {"v", dvh}};
    const int weights[] = {GptIndex::kWq, GptIndex::kWk, GptIndex::kWv};
    for (int k = 0; k < 3; ++k) {
      const std::string name = p + ".attn." + branches[k].first;
      const TensorRef dproj =
          b.Add1(name + ".heads.grad", Op::kTransposeHeads, {branches[k].second}, split);
      weight_grad(name, tr.ln1_y, WithView(dproj, {n, c}), weights[k]);
      const TensorRef dyk = b.Add1(name + ".grad_a", Op::kMatmulGradA,
                                   {WithView(dproj, {n, c}), StateRef(base + weights[k])}, {n, c});
      dy = k == 0 ? dyk : b.Add1(name + ".grad_sum", Op::kAdd, {dy, dyk}, {n, c});
    }
    dy = AddLayerNormGrad(b, p + ".ln1", tr.x_in, tr.ln1_mean, tr.ln1_rstd, dy,
                          base + GptIndex::kLn1G, grads);
    d = b.Add1(p + ".attn.residual.grad", Op::kAdd, {d, dy}, {n, c});
  }
  grads[GptIndex::kWpe] = b.Add1("wpe.bias_add.grad", Op::kBiasGrad, {WithView(d, {bt, t * c})},
                                 shape_of(GptIndex::kWpe));
  OpAttrs emb;
  emb.num_embeddings = m.vocab;
  grads[GptIndex::kWte] =
      b.Add1("wte.embedding.grad", Op::kEmbeddingGrad,
             {{SourceKind::kBatchImages, 0, 0, {}}, WithView(d, {bt, t, c})},
             shape_of(GptIndex::kWte), emb);
  return grads;
}

// Gradient-norm clipping (step_graph.h, part 3b): returns every gradient scaled by the clip
// coefficient, each as a [N, 1] node output (the optimizer reads it under the parameter's shape).
std::vector<TensorRef> AddGradClip(StepGraph& g, Builder& b, const std::vector<TensorRef>& grads) {
  TensorRef total;
  for (std::size_t p = 0; p < grads.size(); ++p) {
    const ParamSpec& ps = g.model.params[p];
    const std::int64_t n = kernels::NumElements(ps.shape);
    // A node reads a tensor under one view only, so the [N, 1] operand is a copy: a head
    // transpose of a [1, 1, N, 1] view swaps an axis of size 1, which keeps every element in place.
    const TensorRef copy = b.Add1(ps.name + ".grad.copy", Op::kTransposeHeads,
                                  {WithView(grads[p], {1, 1, n, 1})}, {1, n, 1, 1});
    const TensorRef squares = b.Add1(ps.name + ".grad.squares", Op::kMatmul,
                                     {WithView(grads[p], {1, n}), WithView(copy, {n, 1})}, {1, 1});
    total = p == 0 ? squares
                   : b.Add1("grad_norm.sum." + ps.name, Op::kAdd, {total, squares}, {1, 1});
  }
  OpAttrs clip;
  clip.max_norm = g.optimizer.grad_clip;
  const TensorRef coefficient =
      b.Add1("grad_norm.clip", Op::kClipCoefficient, {total}, {1, 1}, clip);
  std::vector<TensorRef> clipped;
  for (std::size_t p = 0; p < grads.size(); ++p) {
    const ParamSpec& ps = g.model.params[p];
    const std::int64_t n = kernels::NumElements(ps.shape);
    clipped.push_back(WithView(b.Add1(ps.name + ".grad.clipped", Op::kMatmul,
                                      {WithView(grads[p], {n, 1}), coefficient}, {n, 1}),
                               ps.shape));
  }
  return clipped;
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
  attrs.lr_warmup_steps = o.warmup_steps;
  attrs.lr_decay_steps = o.decay_steps;
  attrs.min_lr = o.min_lr;
  for (int p = 0; p < num_params; ++p) {
    const ParamSpec& ps = g.model.params[static_cast<std::size_t>(p)];
    attrs.weight_decay = ps.no_decay ? 0.0f : o.weight_decay;
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
  POLNODE_RETURN_IF_ERROR(CheckGptReady(model));
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
  GptTrace gpt_trace;
  const TensorRef logits =
      model.gpt ? AddGptForward(g, b, gpt_trace) : AddForward(g, b, traces);
  g.logits_node = logits.index;
  const TensorRef labels = {SourceKind::kBatchLabels, 0, 0, {}};
  const Shape logits_shape = b.ShapeOf(logits);
  const std::vector<TensorRef> loss = b.Add("loss.softmax_xent", kernels::Op::kSoftmaxCrossEntropy,
                                            {}, {logits, labels}, {{1}, logits_shape});
  g.loss_node = loss[0].index;
  const TensorRef dlogits = b.Add1("loss.softmax_xent.grad", kernels::Op::kSoftmaxCrossEntropyGrad,
                                   {loss[1], labels}, logits_shape);
  std::vector<TensorRef> grads = model.gpt ? AddGptBackward(g, b, gpt_trace, dlogits)
                                           : AddBackward(g, b, traces, dlogits);
  if (optimizer.grad_clip > 0.0f) grads = AddGradClip(g, b, grads);
  AddOptimizer(g, b, grads);
  return g;
}

Result<StepGraph> BuildForwardGraph(const ModelSpec& model, std::int64_t batch) {
  if (batch < 1)
    return Status::InvalidArgument("batch size must be >= 1, got " + std::to_string(batch));
  POLNODE_RETURN_IF_ERROR(CheckGptReady(model));
  StepGraph g = NewGraph(model, batch);
  Builder b(g);
  std::vector<LayerTrace> traces;
  GptTrace gpt_trace;
  g.logits_node =
      (model.gpt ? AddGptForward(g, b, gpt_trace) : AddForward(g, b, traces)).index;
  return g;
}

kernels::OpAttrs AttrsForStep(const StepNode& node, std::int64_t step) {
  kernels::OpAttrs attrs = node.attrs;
  if (node.op == kernels::Op::kAdamW || node.op == kernels::Op::kSgdMomentum) {
    attrs.lr = kernels::ScheduledLr(node.attrs, step);
  }
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
