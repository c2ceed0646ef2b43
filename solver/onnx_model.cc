#include "polnode/solver/onnx_model.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <utility>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/kernels/detmath_constants.h"
#include "polnode/onnx.pb.h"

namespace polnode::solver {
namespace {

// Parameters are written and read as raw little-endian float32, which is the host's layout.
static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

constexpr std::int64_t kIrVersion = 8;  // what opset 17 pairs with (ONNX 1.12)
constexpr std::string_view kSupported = "Conv, MaxPool, Relu, Flatten, Gemm, MatMul + Add, Identity";

// ----------------------------------------------------------------------------------------------
// Export

void AddInts(onnx::NodeProto& node, const std::string& name, std::initializer_list<std::int64_t> values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a->add_ints(v);
}

void AddInt(onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

onnx::NodeProto& AddNode(onnx::GraphProto& graph, const std::string& name, const std::string& op,
                         std::initializer_list<std::string> inputs, const std::string& output) {
  onnx::NodeProto* n = graph.add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(output);
  return *n;
}

// A tensor value [batch, dims...] with a symbolic batch size.
void SetBatchValue(onnx::ValueInfoProto& v, std::string_view name, const kernels::Shape& sample,
                   onnx::TensorProto::DataType type = onnx::TensorProto::FLOAT) {
  v.set_name(std::string(name));
  onnx::TypeProto::Tensor* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  for (std::int64_t d : sample) shape->add_dim()->set_dim_value(d);
}

void AddFloatAttr(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

// A Constant node whose output `name` holds `t` (given its name here).
void AddConstant(onnx::GraphProto& graph, const std::string& name, onnx::TensorProto t) {
  onnx::NodeProto& n = AddNode(graph, name, "Constant", {}, name);
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  t.set_name(name);
  *a->mutable_t() = std::move(t);
}

onnx::TensorProto Int64Vector(std::initializer_list<std::int64_t> values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<std::int64_t>(values.size()));
  for (std::int64_t v : values) t.add_int64_data(v);
  return t;
}

onnx::TensorProto FloatScalar(float value) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(value);
  return t;
}

// The GPT's forward (model_spec.h's gpt: architecture) as ONNX nodes, named after the step graph's
// nodes (step_graph.h) so a reader can find each in a dispute transcript. Shapes are constants for
// the fixed context T with a free batch (-1), and GELU is spelled out in the operators that opset
// 17 has, in the order torch.onnx.export writes gelu(approximate='tanh'), so ImportOnnx reads both
// with one pattern.
void AddGptGraph(onnx::GraphProto& g, const GptConfig& c) {
  const std::int64_t t = c.context, w = c.width, h = c.heads, d = c.head_dim();
  AddConstant(g, "gpt.heads_shape", Int64Vector({-1, t, h, d}));
  AddConstant(g, "gpt.merge_shape", Int64Vector({-1, t, w}));
  // The scale polnode's causal softmax applies (step_graph.cc SoftmaxAttrs).
  AddConstant(g, "gpt.scale", FloatScalar(1.0f / std::sqrt(static_cast<float>(d))));
  onnx::TensorProto mask;  // true above the diagonal: the future positions a row may not see
  mask.set_data_type(onnx::TensorProto::BOOL);
  mask.add_dims(t);
  mask.add_dims(t);
  for (std::int64_t i = 0; i < t; ++i) {
    for (std::int64_t j = 0; j < t; ++j) mask.add_int32_data(j > i ? 1 : 0);
  }
  AddConstant(g, "gpt.causal_mask", std::move(mask));
  AddConstant(g, "gpt.masked", FloatScalar(-std::numeric_limits<float>::infinity()));
  AddConstant(g, "gpt.gelu.kappa", FloatScalar(kernels::det::kGeluKappa));
  AddConstant(g, "gpt.gelu.beta", FloatScalar(kernels::det::kGeluBeta));
  AddConstant(g, "gpt.one", FloatScalar(1.0f));
  AddConstant(g, "gpt.half", FloatScalar(0.5f));

  AddInt(AddNode(g, "wte.embedding", "Gather", {"wte", std::string(kOnnxInputName)}, "wte.embedding"), "axis", 0);
  std::string x = AddNode(g, "wpe.bias_add", "Add", {"wte.embedding", "wpe"}, "wpe.bias_add").output(0);
  const auto layer_norm = [&g](const std::string& name, const std::string& in, const std::string& params) {
    onnx::NodeProto& n = AddNode(g, name, "LayerNormalization", {in, params + ".g", params + ".b"}, name);
    AddInt(n, "axis", -1);
    AddFloatAttr(n, "epsilon", 1e-5f);  // step_graph.cc LayerNormAttrs
    return name;
  };
  const auto op = [&g](const std::string& name, const std::string& type, std::initializer_list<std::string> in) {
    return AddNode(g, name, type, in, name).output(0);
  };
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "h" + std::to_string(i);
    const std::string ln1 = layer_norm(p + ".ln1", x, p + ".ln1");
    std::string heads[3];
    const char* const kQkv[] = {"q", "k", "v"};
    for (int j = 0; j < 3; ++j) {
      const std::string name = p + ".attn." + kQkv[j];
      const std::string y = op(name, "MatMul", {ln1, p + ".attn.w" + kQkv[j]});
      const std::string split = op(name + ".split", "Reshape", {y, "gpt.heads_shape"});
      onnx::NodeProto& tr = AddNode(g, name + ".heads", "Transpose", {split}, name + ".heads");
      // K goes straight to [B, H, D, T], as torch writes k.transpose(-2, -1) after the head split.
      if (j == 1) AddInts(tr, "perm", {0, 2, 3, 1});
      else AddInts(tr, "perm", {0, 2, 1, 3});
      heads[j] = tr.output(0);
    }
    const std::string scores = op(p + ".attn.scores", "MatMul", {heads[0], heads[1]});
    const std::string scaled = op(p + ".attn.scale", "Mul", {scores, "gpt.scale"});
    const std::string masked = op(p + ".attn.mask", "Where", {"gpt.causal_mask", "gpt.masked", scaled});
    onnx::NodeProto& sm = AddNode(g, p + ".attn.softmax", "Softmax", {masked}, p + ".attn.softmax");
    AddInt(sm, "axis", -1);
    const std::string mixed = op(p + ".attn.mix", "MatMul", {sm.output(0), heads[2]});
    onnx::NodeProto& merge = AddNode(g, p + ".attn.merge", "Transpose", {mixed}, p + ".attn.merge");
    AddInts(merge, "perm", {0, 2, 1, 3});
    const std::string flat = op(p + ".attn.merge.flat", "Reshape", {merge.output(0), "gpt.merge_shape"});
    const std::string proj = op(p + ".attn.proj", "MatMul", {flat, p + ".attn.wo"});
    const std::string mid = op(p + ".attn.residual", "Add", {x, proj});
    const std::string ln2 = layer_norm(p + ".ln2", mid, p + ".ln2");
    const std::string fc = op(p + ".mlp.fc", "MatMul", {ln2, p + ".mlp.w1"});
    const std::string gelu = p + ".mlp.gelu";
    const std::string sq = op(gelu + ".square", "Mul", {fc, fc});
    const std::string cube = op(gelu + ".cube", "Mul", {fc, sq});
    const std::string kc = op(gelu + ".kappa", "Mul", {"gpt.gelu.kappa", cube});
    const std::string inner0 = op(gelu + ".inner", "Add", {fc, kc});
    const std::string inner = op(gelu + ".beta", "Mul", {"gpt.gelu.beta", inner0});
    const std::string th = op(gelu + ".tanh", "Tanh", {inner});
    const std::string onep = op(gelu + ".one_plus", "Add", {"gpt.one", th});
    const std::string xo = op(gelu + ".times_x", "Mul", {fc, onep});
    const std::string act = op(gelu, "Mul", {"gpt.half", xo});
    const std::string out = op(p + ".mlp.proj", "MatMul", {act, p + ".mlp.w2"});
    x = op(p + ".mlp.residual", "Add", {mid, out});
  }
  const std::string lnf = layer_norm("lnf", x, "lnf");
  AddNode(g, "head.matmul", "MatMul", {lnf, "head.w"}, std::string(kOnnxOutputName));
}

}  // namespace

Result<ModelSpec> WithStateVocab(ModelSpec model, const TrainState& state) {
  if (!model.gpt || !model.params.empty()) return model;
  // A gpt: spec without vocab takes the corpus's, which the trained token table [V, C] holds.
  const kernels::Tensor* wte = state.Find("wte");
  if (wte == nullptr || wte->shape().size() != 2) {
    return Status::InvalidArgument(model.text + " has no vocabulary, and the state no token embeddings 'wte' [V, C] to take it from");
  }
  return WithGptVocab(std::move(model), wte->dim(0));
}

Result<std::string> ExportOnnx(const ModelSpec& spec, const TrainState& state) {
  POLNODE_ASSIGN_OR_RETURN(const ModelSpec model, WithStateVocab(spec, state));
  if (state.tensors.size() < model.params.size()) {
    return Status::InvalidArgument("the state holds " + std::to_string(state.tensors.size()) + " tensors; " +
                                   model.text + " has " + std::to_string(model.params.size()) + " parameters");
  }
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    const NamedTensor& t = state.tensors[i];
    if (t.name != model.params[i].name || t.tensor.shape() != model.params[i].shape) {
      return Status::InvalidArgument("state tensor " + std::to_string(i) + " is '" + t.name +
                                     "', not the parameter '" + model.params[i].name + "' of " + model.text);
    }
  }
  onnx::ModelProto m;
  m.set_ir_version(kIrVersion);
  onnx::OperatorSetIdProto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  m.set_producer_name("polnode");
  m.set_doc_string(model.text);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("polnode");
  if (model.gpt) {
    SetBatchValue(*g.add_input(), kOnnxInputName, {model.gpt->context}, onnx::TensorProto::INT64);
    SetBatchValue(*g.add_output(), kOnnxOutputName, {model.gpt->context, model.gpt->vocab});
    AddGptGraph(g, *model.gpt);
  } else {
    SetBatchValue(*g.add_input(), kOnnxInputName, model.input_shape);
    SetBatchValue(*g.add_output(), kOnnxOutputName, {model.num_outputs()});
  }

  std::string cur(kOnnxInputName);
  for (std::size_t li = 0; li < model.layers.size(); ++li) {
    const LayerSpec& l = model.layers[li];
    const bool last = li + 1 == model.layers.size();
    switch (l.kind) {
      case LayerKind::kConv3x3: {
        onnx::NodeProto& n = AddNode(g, l.name + ".conv", "Conv",
                                     {cur, model.params[static_cast<std::size_t>(l.weight_param)].name,
                                      model.params[static_cast<std::size_t>(l.bias_param)].name},
                                     l.name + ".conv");
        AddInts(n, "kernel_shape", {3, 3});
        AddInts(n, "pads", {1, 1, 1, 1});
        AddInts(n, "strides", {1, 1});
        AddInts(n, "dilations", {1, 1});
        AddInt(n, "group", 1);
        cur = l.name + ".conv";
        break;
      }
      case LayerKind::kMaxPool2x2: {
        onnx::NodeProto& n = AddNode(g, l.name + ".maxpool", "MaxPool", {cur}, l.name + ".maxpool");
        AddInts(n, "kernel_shape", {2, 2});
        AddInts(n, "strides", {2, 2});
        cur = l.name + ".maxpool";
        break;
      }
      case LayerKind::kLinear: {
        if (l.flattens) {
          AddInt(AddNode(g, l.name + ".flatten", "Flatten", {cur}, l.name + ".flatten"), "axis", 1);
          cur = l.name + ".flatten";
        }
        const std::string out = last && !l.relu ? std::string(kOnnxOutputName) : l.name + ".matmul";
        onnx::NodeProto& n = AddNode(g, l.name + ".matmul", "Gemm",
                                     {cur, model.params[static_cast<std::size_t>(l.weight_param)].name,
                                      model.params[static_cast<std::size_t>(l.bias_param)].name},
                                     out);
        AddInt(n, "transB", 0);
        cur = out;
        break;
      }
    }
    if (l.relu) {
      const std::string out = last ? std::string(kOnnxOutputName) : l.name + ".relu";
      AddNode(g, l.name + ".relu", "Relu", {cur}, out);
      cur = out;
    }
  }
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    const kernels::Tensor& t = state.tensors[i].tensor;
    onnx::TensorProto* init = g.add_initializer();
    init->set_name(model.params[i].name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    if (model.gpt && model.params[i].name == "wpe") {
      // The [T * C] state tensor is the [T, C] position table; ONNX broadcasts it over the batch.
      init->add_dims(model.gpt->context);
      init->add_dims(model.gpt->width);
    } else {
      for (std::int64_t d : t.shape()) init->add_dims(d);
    }
    init->set_raw_data(reinterpret_cast<const char*>(t.data()), static_cast<std::size_t>(t.numel()) * 4);
  }
  std::string bytes;
  // Deterministic, so one state always exports to the same bytes (and the same file hash).
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  if (!m.SerializeToCodedStream(&coded)) return Status::Internal("ONNX serialization failed");
  coded.Trim();
  return bytes;
}

// ------------------------------------------------------------------------------------------------
// Import

namespace {

// What OnnxImport::nodes records of node `n` (graph index `index`), before its target is known.
OnnxNodeMapping MappingOf(const onnx::NodeProto& n, int index, std::string target) {
  OnnxNodeMapping m{n.name().empty() ? "#" + std::to_string(index) : n.name(), n.op_type(), std::move(target), {}, {}};
  m.inputs.assign(n.input().begin(), n.input().end());
  m.outputs.assign(n.output().begin(), n.output().end());
  return m;
}

std::string NodeLabel(const onnx::NodeProto& n, int index) {
  const std::string name = n.name().empty() ? "#" + std::to_string(index) : "'" + n.name() + "'";
  return "node " + name + " (" + n.op_type() + ")";
}

std::string ShapeText(const kernels::Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out + "]";
}

// A node's attributes, checked against the names its operator may carry.
class Attrs {
 public:
  Attrs(const onnx::NodeProto& node, std::string label) : node_(node), label_(std::move(label)) {}

  [[nodiscard]] Status OnlyKnown(std::initializer_list<std::string_view> known) const {
    for (const onnx::AttributeProto& a : node_.attribute()) {
      bool ok = false;
      for (std::string_view k : known) ok = ok || a.name() == k;
      if (!ok) return Status::InvalidArgument(label_ + ": unsupported attribute '" + a.name() + "'");
    }
    return Status::Ok();
  }

  const onnx::AttributeProto* Find(std::string_view name) const {
    for (const onnx::AttributeProto& a : node_.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }

  /// kInvalidArgument unless the INTS attribute `name` is `want`, or absent and `absent_ok`.
  [[nodiscard]] Status Ints(std::string_view name, const std::vector<std::int64_t>& want, bool absent_ok) const {
    const onnx::AttributeProto* a = Find(name);
    if (a == nullptr) {
      return absent_ok ? Status::Ok() : Bad(name, "is missing; polnode needs " + List(want));
    }
    const std::vector<std::int64_t> got(a->ints().begin(), a->ints().end());
    if (got != want) return Bad(name, "is " + List(got) + "; polnode supports " + List(want));
    return Status::Ok();
  }

  /// kInvalidArgument unless the INT attribute `name` is one of `allowed` (absent reads as `absent`).
  [[nodiscard]] Status Int(std::string_view name, std::int64_t absent, std::initializer_list<std::int64_t> allowed,
                           std::int64_t* value = nullptr) const {
    const onnx::AttributeProto* a = Find(name);
    const std::int64_t v = a == nullptr ? absent : a->i();
    bool ok = false;
    for (std::int64_t x : allowed) ok = ok || v == x;
    if (!ok) return Bad(name, "is " + std::to_string(v) + ", which polnode does not support");
    if (value != nullptr) *value = v;
    return Status::Ok();
  }

  [[nodiscard]] Status Float(std::string_view name, float want) const {
    const onnx::AttributeProto* a = Find(name);
    if (a != nullptr && a->f() != want) {
      return Bad(name, "is " + std::to_string(a->f()) + "; polnode supports " + std::to_string(want));
    }
    return Status::Ok();
  }

  [[nodiscard]] Status NoAutoPad() const {
    const onnx::AttributeProto* a = Find("auto_pad");
    if (a != nullptr && a->s() != "NOTSET") return Bad("auto_pad", "is " + a->s() + "; polnode supports NOTSET");
    return Status::Ok();
  }

 private:
  static std::string List(const std::vector<std::int64_t>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
    return out + "]";
  }
  Status Bad(std::string_view name, const std::string& what) const {
    return Status::InvalidArgument(label_ + ": attribute " + std::string(name) + " " + what);
  }

  const onnx::NodeProto& node_;
  std::string label_;
};

// A float32 initializer as a tensor. kCorruption when its data does not hold its dims' elements.
Result<kernels::Tensor> DecodeInitializer(const onnx::TensorProto& t) {
  const std::string what = "initializer '" + t.name() + "'";
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    return Status::InvalidArgument(what + " has data type " + std::to_string(t.data_type()) +
                                   "; polnode imports float32 (1) parameters");
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0) {
    return Status::InvalidArgument(what + " keeps its data in an external file; polnode imports one self-contained file");
  }
  if (t.dims_size() < 1 || t.dims_size() > 8) {
    return Status::InvalidArgument(what + " has rank " + std::to_string(t.dims_size()) + "; parameters have rank 1..8");
  }
  kernels::Shape shape;
  std::uint64_t count = 1;
  for (std::int64_t d : t.dims()) {
    if (d < 1 || static_cast<std::uint64_t>(d) > kMaxOnnxBytes / 4 / count) {
      return Status::Corruption(what + " has a dimension of " + std::to_string(d) + " (or too many elements)");
    }
    count *= static_cast<std::uint64_t>(d);
    shape.push_back(d);
  }
  kernels::Tensor out(shape);
  if (t.has_raw_data()) {
    if (t.raw_data().size() != count * 4 || t.float_data_size() > 0) {
      return Status::Corruption(what + " holds " + std::to_string(t.raw_data().size()) + " bytes of raw data for " +
                                std::to_string(count) + " float32 elements");
    }
    std::memcpy(out.data(), t.raw_data().data(), count * 4);
  } else {
    if (static_cast<std::uint64_t>(t.float_data_size()) != count) {
      return Status::Corruption(what + " holds " + std::to_string(t.float_data_size()) + " floats for " +
                                std::to_string(count) + " elements");
    }
    std::memcpy(out.data(), t.float_data().data(), count * 4);
  }
  return out;
}

// The transpose of a 2-D tensor.
kernels::Tensor Transposed(const kernels::Tensor& t) {
  const std::int64_t rows = t.dim(0), cols = t.dim(1);
  kernels::Tensor out({cols, rows});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) out.data()[c * rows + r] = t.data()[r * cols + c];
  }
  return out;
}

// A layer read from the graph, before it is checked against the built-in grammar.
struct ImportedLayer {
  LayerKind kind = LayerKind::kLinear;
  std::int64_t size = 0;  // output channels or features; 0 for pooling
  bool relu = false;
  std::string node;  // the ONNX node it came from, for errors
  kernels::Tensor weight, bias;  // polnode layout
  std::string weight_initializer, bias_initializer;  // the ONNX initializers they were read from
};

class GraphMapper {
 public:
  explicit GraphMapper(const onnx::GraphProto& g) : g_(g) {
    for (const onnx::TensorProto& t : g.initializer()) initializers_.emplace(t.name(), &t);
  }

  Status Map(OnnxImport& out);

 private:
  Result<const onnx::TensorProto*> Initializer(const std::string& name, const std::string& label) const {
    auto alias = aliases_.find(name);
    const std::string& real = alias == aliases_.end() ? name : alias->second;
    auto it = initializers_.find(real);
    if (it == initializers_.end()) {
      return Status::InvalidArgument(label + ": input '" + name + "' is not an initializer; polnode takes weights "
                                     "from initializers (export with do_constant_folding=False)");
    }
    return it->second;
  }
  Result<kernels::Tensor> Param(const onnx::NodeProto& n, int input, const std::string& label,
                                const kernels::Shape& want) const {
    if (n.input_size() <= input || n.input(input).empty()) {
      return Status::InvalidArgument(label + ": input " + std::to_string(input) + " is missing");
    }
    POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* t, Initializer(n.input(input), label));
    POLNODE_ASSIGN_OR_RETURN(kernels::Tensor value, DecodeInitializer(*t));
    if (value.shape() != want) {
      return Status::InvalidArgument(label + ": initializer '" + t->name() + "' is " + ShapeText(value.shape()) +
                                     "; the layer needs " + ShapeText(want));
    }
    return value;
  }
  [[nodiscard]] Status ReadsChain(const onnx::NodeProto& n, const std::string& label, int inputs) const;
  [[nodiscard]] Status SingleOutput(const onnx::NodeProto& n, const std::string& label) const;
  [[nodiscard]] Status AddLinear(const std::string& label, const std::string& node, kernels::Tensor w,
                                 kernels::Tensor b);

  const onnx::GraphProto& g_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, std::string> aliases_;  // Identity outputs of initializers
  std::string cur_;                             // the chain's current value
  kernels::Shape cur_shape_;                    // one sample of it
  std::vector<ImportedLayer> layers_;
  bool relu_allowed_ = false;  // cur_ is a Conv's or linear layer's output without its Relu
};

Status GraphMapper::ReadsChain(const onnx::NodeProto& n, const std::string& label, int inputs) const {
  if (n.input_size() != inputs && !(n.op_type() == "Gemm" && n.input_size() == 3)) {
    return Status::InvalidArgument(label + ": has " + std::to_string(n.input_size()) + " inputs, polnode expects " +
                                   std::to_string(inputs));
  }
  if (n.input(0) != cur_) {
    return Status::InvalidArgument(label + ": reads '" + n.input(0) + "', not the previous layer's output '" + cur_ +
                                   "'; polnode imports one chain of layers");
  }
  return Status::Ok();
}

Status GraphMapper::SingleOutput(const onnx::NodeProto& n, const std::string& label) const {
  if (n.output_size() < 1 || n.output(0).empty()) return Status::InvalidArgument(label + ": has no output");
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty()) return Status::InvalidArgument(label + ": output " + std::to_string(i) + " is not supported");
  }
  return Status::Ok();
}

Status GraphMapper::AddLinear(const std::string& label, const std::string& node, kernels::Tensor w,
                              kernels::Tensor b) {
  ImportedLayer l;
  l.kind = LayerKind::kLinear;
  l.size = w.dim(1);
  l.node = node;
  l.weight = std::move(w);
  l.bias = std::move(b);
  if (!layers_.empty() && layers_.back().kind == LayerKind::kLinear && !layers_.back().relu) {
    return Status::InvalidArgument(label + ": follows the linear layer of " + layers_.back().node +
                                   " without a Relu; polnode's hidden linear layers end in Relu");
  }
  layers_.push_back(std::move(l));
  cur_shape_ = {layers_.back().size};
  relu_allowed_ = true;
  return Status::Ok();
}

Status GraphMapper::Map(OnnxImport& out) {
  // The batch input: the one graph input that is not an initializer.
  const onnx::ValueInfoProto* input = nullptr;
  for (const onnx::ValueInfoProto& v : g_.input()) {
    if (initializers_.count(v.name()) > 0) continue;
    if (input != nullptr) {
      return Status::InvalidArgument("the graph has several inputs ('" + input->name() + "', '" + v.name() +
                                     "'); polnode imports models with one");
    }
    input = &v;
  }
  if (input == nullptr) return Status::InvalidArgument("the graph has no input besides its initializers");
  const auto& type = input->type();
  if (!type.has_tensor_type() || type.tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return Status::InvalidArgument("input '" + input->name() + "' is not a float32 tensor");
  }
  const auto& dims = type.tensor_type().shape().dim();
  if (dims.size() != 2 && dims.size() != 4) {
    return Status::InvalidArgument("input '" + input->name() + "' has rank " + std::to_string(dims.size()) +
                                   "; polnode imports [batch, features] or [batch, C, H, W]");
  }
  for (int i = 1; i < dims.size(); ++i) {
    if (!dims[i].has_dim_value() || dims[i].dim_value() < 1 || dims[i].dim_value() > (1 << 20)) {
      return Status::InvalidArgument("input '" + input->name() + "' dimension " + std::to_string(i) +
                                     " is not a fixed size in 1..2^20");
    }
    cur_shape_.push_back(dims[i].dim_value());
  }
  const kernels::Shape input_shape = cur_shape_;
  out.input_name = input->name();
  out.input_shape = input_shape;
  cur_ = input->name();
  if (g_.output_size() != 1) {
    return Status::InvalidArgument("the graph has " + std::to_string(g_.output_size()) +
                                   " outputs; polnode imports models with one (the logits)");
  }
  out.output_name = g_.output(0).name();

  for (int i = 0; i < g_.node_size(); ++i) {
    const onnx::NodeProto& n = g_.node(i);
    const std::string label = NodeLabel(n, i);
    const std::string& op = n.op_type();
    OnnxNodeMapping mapping = MappingOf(n, i, "");
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return Status::InvalidArgument(label + ": unsupported operator domain '" + n.domain() + "'");
    }
    if (op != "Relu" && !layers_.empty() && layers_.back().kind == LayerKind::kConv3x3 && !layers_.back().relu) {
      return Status::InvalidArgument(label + ": follows the Conv of " + layers_.back().node +
                                     " without a Relu; polnode's convolutions end in Relu");
    }
    if (op == "Identity") {
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      if (n.input_size() != 1) return Status::InvalidArgument(label + ": needs one input");
      if (n.input(0) == cur_) {
        cur_ = n.output(0);
        mapping.target = "alias of the previous output";
      } else {
        POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* t, Initializer(n.input(0), label));
        aliases_[n.output(0)] = t->name();
        mapping.target = "alias of initializer '" + t->name() + "'";
      }
    } else if (op == "Conv") {
      POLNODE_RETURN_IF_ERROR(ReadsChain(n, label, 3));
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      const Attrs a(n, label);
      POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"kernel_shape", "pads", "strides", "dilations", "group", "auto_pad"}));
      POLNODE_RETURN_IF_ERROR(a.Ints("kernel_shape", {3, 3}, true));
      POLNODE_RETURN_IF_ERROR(a.Ints("pads", {1, 1, 1, 1}, false));
      POLNODE_RETURN_IF_ERROR(a.Ints("strides", {1, 1}, true));
      POLNODE_RETURN_IF_ERROR(a.Ints("dilations", {1, 1}, true));
      POLNODE_RETURN_IF_ERROR(a.Int("group", 1, {1}));
      POLNODE_RETURN_IF_ERROR(a.NoAutoPad());
      if (cur_shape_.size() != 3) {
        return Status::InvalidArgument(label + ": reads a " + ShapeText(cur_shape_) + " sample; Conv needs C x H x W");
      }
      if (!layers_.empty() && layers_.back().kind == LayerKind::kLinear) {
        return Status::InvalidArgument(label + ": a Conv after a linear layer is not supported");
      }
      POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* wt, Initializer(n.input(1), label));
      if (wt->dims_size() != 4 || wt->dims(0) < 1) {
        return Status::InvalidArgument(label + ": weight '" + wt->name() + "' is not [out, in, 3, 3]");
      }
      const std::int64_t k = wt->dims(0);
      ImportedLayer l;
      l.kind = LayerKind::kConv3x3;
      l.size = k;
      l.node = label;
      POLNODE_ASSIGN_OR_RETURN(l.weight, Param(n, 1, label, {k, cur_shape_[0], 3, 3}));
      if (n.input_size() < 3 || n.input(2).empty()) {
        return Status::InvalidArgument(label + ": has no bias; polnode's convolutions have one");
      }
      POLNODE_ASSIGN_OR_RETURN(l.bias, Param(n, 2, label, {k}));
      POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* bt, Initializer(n.input(2), label));
      l.weight_initializer = wt->name();
      l.bias_initializer = bt->name();
      layers_.push_back(std::move(l));
      cur_shape_[0] = k;
      cur_ = n.output(0);
      relu_allowed_ = true;
      mapping.target = "conv 3x3 to " + std::to_string(k) + " channels";
    } else if (op == "Relu") {
      POLNODE_RETURN_IF_ERROR(ReadsChain(n, label, 1));
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      POLNODE_RETURN_IF_ERROR(Attrs(n, label).OnlyKnown({}));
      if (!relu_allowed_) {
        return Status::InvalidArgument(label + ": polnode supports Relu only right after a Conv or a linear layer");
      }
      layers_.back().relu = true;
      relu_allowed_ = false;
      cur_ = n.output(0);
      mapping.target = "relu of the layer above";
    } else if (op == "MaxPool") {
      POLNODE_RETURN_IF_ERROR(ReadsChain(n, label, 1));
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      const Attrs a(n, label);
      POLNODE_RETURN_IF_ERROR(
          a.OnlyKnown({"kernel_shape", "pads", "strides", "dilations", "ceil_mode", "auto_pad", "storage_order"}));
      POLNODE_RETURN_IF_ERROR(a.Ints("kernel_shape", {2, 2}, false));
      POLNODE_RETURN_IF_ERROR(a.Ints("strides", {2, 2}, false));
      if (a.Find("pads") != nullptr) POLNODE_RETURN_IF_ERROR(a.Ints("pads", {0, 0, 0, 0}, true));
      POLNODE_RETURN_IF_ERROR(a.Ints("dilations", {1, 1}, true));
      POLNODE_RETURN_IF_ERROR(a.Int("ceil_mode", 0, {0}));
      POLNODE_RETURN_IF_ERROR(a.Int("storage_order", 0, {0}));
      POLNODE_RETURN_IF_ERROR(a.NoAutoPad());
      if (cur_shape_.size() != 3 || cur_shape_[1] < 2 || cur_shape_[2] < 2) {
        return Status::InvalidArgument(label + ": reads a " + ShapeText(cur_shape_) +
                                       " sample; MaxPool needs C x H x W with H, W >= 2");
      }
      if (!layers_.empty() && layers_.back().kind == LayerKind::kLinear) {
        return Status::InvalidArgument(label + ": a MaxPool after a linear layer is not supported");
      }
      ImportedLayer l;
      l.kind = LayerKind::kMaxPool2x2;
      l.node = label;
      layers_.push_back(std::move(l));
      cur_shape_ = {cur_shape_[0], cur_shape_[1] / 2, cur_shape_[2] / 2};
      cur_ = n.output(0);
      relu_allowed_ = false;
      mapping.target = "max pool 2x2";
    } else if (op == "Flatten") {
      POLNODE_RETURN_IF_ERROR(ReadsChain(n, label, 1));
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      const Attrs a(n, label);
      POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"axis"}));
      POLNODE_RETURN_IF_ERROR(a.Int("axis", 1, {1}));
      std::int64_t features = 1;
      for (std::int64_t d : cur_shape_) features *= d;
      cur_shape_ = {features};
      cur_ = n.output(0);
      relu_allowed_ = false;
      mapping.target = "flatten to " + std::to_string(features) + " features";
    } else if (op == "Gemm") {
      POLNODE_RETURN_IF_ERROR(ReadsChain(n, label, 3));
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      const Attrs a(n, label);
      POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"alpha", "beta", "transA", "transB"}));
      POLNODE_RETURN_IF_ERROR(a.Float("alpha", 1.0f));
      POLNODE_RETURN_IF_ERROR(a.Float("beta", 1.0f));
      POLNODE_RETURN_IF_ERROR(a.Int("transA", 0, {0}));
      std::int64_t trans_b = 0;
      POLNODE_RETURN_IF_ERROR(a.Int("transB", 0, {0, 1}, &trans_b));
      if (cur_shape_.size() != 1) {
        return Status::InvalidArgument(label + ": reads a " + ShapeText(cur_shape_) +
                                       " sample; flatten it first (Flatten, axis 1)");
      }
      if (n.input_size() < 3 || n.input(2).empty()) {
        return Status::InvalidArgument(label + ": has no bias; polnode's linear layers have one");
      }
      POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* wt, Initializer(n.input(1), label));
      if (wt->dims_size() != 2) return Status::InvalidArgument(label + ": weight '" + wt->name() + "' is not 2-D");
      const std::int64_t outs = trans_b ? wt->dims(0) : wt->dims(1);
      POLNODE_ASSIGN_OR_RETURN(kernels::Tensor w, Param(n, 1, label, trans_b ? kernels::Shape{outs, cur_shape_[0]}
                                                                            : kernels::Shape{cur_shape_[0], outs}));
      POLNODE_ASSIGN_OR_RETURN(kernels::Tensor b, Param(n, 2, label, {outs}));
      POLNODE_RETURN_IF_ERROR(AddLinear(label, label, trans_b ? Transposed(w) : std::move(w), std::move(b)));
      POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* bt, Initializer(n.input(2), label));
      layers_.back().weight_initializer = wt->name();
      layers_.back().bias_initializer = bt->name();
      cur_ = n.output(0);
      mapping.target = "linear " + std::to_string(layers_.back().weight.dim(0)) + "->" + std::to_string(outs);
    } else if (op == "MatMul") {
      POLNODE_RETURN_IF_ERROR(ReadsChain(n, label, 2));
      POLNODE_RETURN_IF_ERROR(SingleOutput(n, label));
      POLNODE_RETURN_IF_ERROR(Attrs(n, label).OnlyKnown({}));
      if (cur_shape_.size() != 1) {
        return Status::InvalidArgument(label + ": reads a " + ShapeText(cur_shape_) + " sample; flatten it first");
      }
      POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* wt, Initializer(n.input(1), label));
      if (wt->dims_size() != 2) return Status::InvalidArgument(label + ": weight '" + wt->name() + "' is not 2-D");
      POLNODE_ASSIGN_OR_RETURN(kernels::Tensor w, Param(n, 1, label, {cur_shape_[0], wt->dims(1)}));
      // The bias is the next node: Add(matmul, b) or Add(b, matmul).
      const onnx::NodeProto* add = i + 1 < g_.node_size() ? &g_.node(i + 1) : nullptr;
      if (add == nullptr || add->op_type() != "Add" || add->input_size() != 2 ||
          (add->input(0) != n.output(0) && add->input(1) != n.output(0))) {
        return Status::InvalidArgument(label + ": is not followed by an Add of its bias; polnode's linear layers "
                                       "have one");
      }
      const std::string add_label = NodeLabel(*add, i + 1);
      POLNODE_RETURN_IF_ERROR(SingleOutput(*add, add_label));
      POLNODE_RETURN_IF_ERROR(Attrs(*add, add_label).OnlyKnown({}));
      const int bias_input = add->input(0) == n.output(0) ? 1 : 0;
      POLNODE_ASSIGN_OR_RETURN(kernels::Tensor b, Param(*add, bias_input, add_label, {w.dim(1)}));
      const std::int64_t outs = w.dim(1);
      POLNODE_RETURN_IF_ERROR(AddLinear(label, label, std::move(w), std::move(b)));
      POLNODE_ASSIGN_OR_RETURN(const onnx::TensorProto* bt, Initializer(add->input(bias_input), add_label));
      layers_.back().weight_initializer = wt->name();
      layers_.back().bias_initializer = bt->name();
      cur_ = add->output(0);
      mapping.target = "linear " + std::to_string(cur_shape_[0]) + "->" + std::to_string(outs) + " (with the Add)";
      out.nodes.push_back(mapping);
      out.nodes.push_back(MappingOf(*add, i + 1, "bias of the linear layer above"));
      ++i;
      continue;
    } else {
      return Status::InvalidArgument(label + ": unsupported operator " + op + "; polnode imports " +
                                     std::string(kSupported));
    }
    out.nodes.push_back(std::move(mapping));
  }
  if (layers_.empty() || layers_.back().kind != LayerKind::kLinear) {
    return Status::InvalidArgument("the graph does not end in a linear layer (Gemm, or MatMul + Add)");
  }
  if (layers_.back().relu) {
    return Status::InvalidArgument("the last layer (" + layers_.back().node +
                                   ") ends in Relu; polnode's models output the logits before any activation");
  }
  if (cur_ != out.output_name) {
    return Status::InvalidArgument("the graph output '" + out.output_name + "' is not the last layer's output '" +
                                   cur_ + "'");
  }
  // The built-in spec the layers form.
  bool image_layers = false;
  for (const ImportedLayer& l : layers_) image_layers = image_layers || l.kind != LayerKind::kLinear;
  std::string spec;
  if (!image_layers) {
    std::int64_t features = 1;
    for (std::int64_t d : input_shape) features *= d;
    spec = "mlp:" + std::to_string(features);
    for (const ImportedLayer& l : layers_) spec += "-" + std::to_string(l.size);
  } else {
    spec = "cnn:i" + std::to_string(input_shape[0]) + "x" + std::to_string(input_shape[1]) + "x" +
           std::to_string(input_shape[2]);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const ImportedLayer& l = layers_[i];
      const bool last = i + 1 == layers_.size();
      if (l.kind == LayerKind::kConv3x3) spec += "-c" + std::to_string(l.size);
      if (l.kind == LayerKind::kMaxPool2x2) spec += "-p";
      if (l.kind == LayerKind::kLinear) spec += (last ? "-" : "-f") + std::to_string(l.size);
    }
  }
  Result<ModelSpec> model = ParseModelSpec(spec);
  if (!model.ok()) {
    return Status::InvalidArgument("the graph maps to " + spec + ", which polnode refuses: " + model.status().ToString());
  }
  out.spec = spec;
  out.model = std::move(*model);
  std::size_t p = 0;
  for (ImportedLayer& l : layers_) {
    if (l.kind == LayerKind::kMaxPool2x2) continue;
    for (auto [t, initializer] : {std::pair{&l.weight, &l.weight_initializer}, std::pair{&l.bias, &l.bias_initializer}}) {
      const ParamSpec& spec_p = out.model.params[p++];
      if (t->shape() != spec_p.shape) {
        return Status::InvalidArgument(l.node + ": parameter " + spec_p.name + " is " + ShapeText(t->shape()) +
                                       "; " + out.spec + " needs " + ShapeText(spec_p.shape));
      }
      out.parameter_count += t->numel();
      out.params.push_back({spec_p.name, std::move(*t)});
      out.param_initializers.push_back(*initializer);
    }
  }
  return Status::Ok();
}

// ---- GPT import. The graph is followed node by node, giving every value a role in the gpt:
// architecture (model_spec.h); an operator is accepted only where its inputs' roles fit the
// pattern, so the file computes exactly polnode's forward. Small constant computations (torch's
// shape arithmetic, the causal mask) are evaluated; the batch size stays symbolic.

constexpr std::int64_t kBatchDim = -1;                      // the batch in an activation's shape
constexpr double kBatchValue = -1099511627776.0;            // the batch in a constant shape vector
constexpr std::int64_t kMaxConstElements = std::int64_t{1} << 24;  // a T x T mask at T = 4096
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
// All constant values together (a hostile file can ask for many masks): 256 MiB as doubles.
constexpr std::int64_t kMaxConstTotal = std::int64_t{1} << 25;

enum class GptRole : std::uint8_t {
  kConst,       // a small constant: values known
  kParam,       // a float32 initializer, or a view of one with the same element order
  kIds,         // the token ids [B, T]
  kTokens,      // wte's rows for the ids [B, T, C]
  kStream,      // the residual stream entering a block, or lnf [B, T, C]
  kMid,         // the stream between a block's attention and its MLP [B, T, C]
  kNorm,        // LayerNormalization of a kStream or kMid value
  kLinear,      // a kNorm times a weight [B, T, N]
  kSplit,       // a q, k or v kLinear as heads [B, T, H, D]
  kHeads,       // [B, H, T, D] (q, v)
  kHeadsT,      // [B, H, D, T] (k, transposed for the scores)
  kScores,      // Q K^T [B, H, T, T]
  kScaled,      // times 1 / sqrt(D)
  kMasked,      // with the future masked out
  kProbs,       // softmax over the last axis
  kMixed,       // P V [B, H, T, D]
  kMerged,      // [B, T, H, D]
  kMergedFlat,  // [B, T, C]
  kAttn,        // times wo [B, T, C]
  kGelu,        // a step of GELU's tanh expression of a kLinear
  kMlp,         // GELU's output times w2 [B, T, C]
};

struct GptValue {
  GptRole role = GptRole::kConst;
  kernels::Shape shape;        // kBatchDim for the batch
  std::vector<double> values;  // kConst: row-major (int64 and bool as numbers)
  const onnx::TensorProto* param = nullptr;  // kParam
  std::string from;   // the value this one is computed from (see each role)
  int stage = 0;      // kGelu: how far GELU's expression has got (kGeluDone is its output)
  std::int64_t heads = 0;
  // Parameters named so far: kStream (after a block) and kMid hold their block's, kNorm its gain
  // and shift, kLinear its weight, and attention values the q, k, v linear values' names.
  std::vector<std::string> names;
};

constexpr int kGeluDone = 9;

std::string RoleText(const GptValue& v) {
  static const char* const kNames[] = {"a constant", "an initializer", "the token ids", "the token embeddings",
                                       "the residual stream", "the residual stream after attention",
                                       "a LayerNorm output", "a linear projection", "heads", "heads",
                                       "transposed heads", "attention scores", "scaled scores",
                                       "masked scores", "attention probabilities", "attention output heads",
                                       "merged heads", "merged heads", "the attention projection",
                                       "part of a GELU", "the MLP output"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(GptRole::kMlp) + 1, "one name per role");
  return kNames[static_cast<int>(v.role)];
}

class GptMapper {
 public:
  explicit GptMapper(const onnx::GraphProto& g) : g_(g) {}

  Status Map(OnnxImport& out);

 private:
  Result<const GptValue*> In(const onnx::NodeProto& n, int i, const std::string& label) const {
    if (i >= n.input_size() || n.input(i).empty()) {
      return Status::InvalidArgument(label + ": input " + std::to_string(i) + " is missing");
    }
    auto it = values_.find(n.input(i));
    if (it == values_.end()) {
      return Status::InvalidArgument(label + ": input '" + n.input(i) + "' is not computed before it");
    }
    return &it->second;
  }
  Status Node(const onnx::NodeProto& n, const std::string& label, std::string& target);
  Status Fold(const onnx::NodeProto& n, const std::string& label, std::vector<const GptValue*>& in, GptValue& out);
  Status Matmul(const std::string& label, const GptValue& a, const GptValue& b, const std::string& a_name,
                const std::string& b_name, GptValue& out, std::string& target);
  Status AddOrMul(const onnx::NodeProto& n, const std::string& label, const GptValue& a, const GptValue& b,
                  GptValue& out, std::string& target);
  Result<kernels::Tensor> Weight(const std::string& name, const kernels::Shape& want, const std::string& what);
  /// Counts `v`'s constant elements; kResourceExhausted past kMaxConstTotal over the graph.
  [[nodiscard]] Status Charge(const GptValue& v, const std::string& what);

  const onnx::GraphProto& g_;
  std::map<std::string, GptValue> values_;
  std::int64_t context_ = 0, width_ = 0;
  std::int64_t const_elements_ = 0;  // over every constant value so far, against kMaxConstTotal
};

// An integer constant clamped beyond any size polnode accepts (torch writes INT64_MAX for "to the
// end" in Slice), and above kBatchValue so that no constant passes for the batch.
std::int64_t ClampInt(std::int64_t x) { return std::clamp(x, -(std::int64_t{1} << 40) + 1, std::int64_t{1} << 40); }

// kInvalidArgument for a float constant equal to kBatchValue: it would pass for the batch in a
// shape vector (directly or through Cast), which only Shape of an activation may produce.
Status NotTheBatch(double x, const std::string& what) {
  if (x != kBatchValue) return Status::Ok();
  return Status::InvalidArgument(what + " holds -2^40, which polnode's GPT import reserves for the batch size");
}

// A constant tensor's values; kInvalidArgument for types or sizes the pattern never needs.
Result<GptValue> DecodeConstant(const onnx::TensorProto& t, const std::string& what) {
  GptValue v;
  std::int64_t count = 1;
  for (std::int64_t d : t.dims()) {
    if (d < 0 || d > kMaxDim || count * std::max<std::int64_t>(d, 1) > kMaxConstElements) {
      return Status::InvalidArgument(what + " is larger than polnode's constants (" +
                                     std::to_string(kMaxConstElements) + " elements)");
    }
    count *= d;
    v.shape.push_back(d);
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return Status::InvalidArgument(what + " keeps its data in an external file");
  }
  const std::string& raw = t.raw_data();
  const auto want = [&](std::size_t have, std::size_t width) -> Status {
    if (have == static_cast<std::size_t>(count) && (raw.empty() || width == 0)) return Status::Ok();
    if (!raw.empty() && raw.size() == static_cast<std::size_t>(count) * width) return Status::Ok();
    return Status::Corruption(what + " holds the wrong amount of data for its dims");
  };
  // The data's length is checked before `count` values are allocated: the dims alone may ask for
  // kMaxConstElements of them.
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      POLNODE_RETURN_IF_ERROR(raw.empty() ? want(static_cast<std::size_t>(t.float_data_size()), 0) : want(0, 4));
      break;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL: {
      const bool is64 = t.data_type() == onnx::TensorProto::INT64;
      const std::size_t width = is64 ? 8 : t.data_type() == onnx::TensorProto::INT32 ? 4 : 1;
      POLNODE_RETURN_IF_ERROR(
          raw.empty() ? want(static_cast<std::size_t>(is64 ? t.int64_data_size() : t.int32_data_size()), 0)
                      : want(0, width));
      break;
    }
    default:
      return Status::InvalidArgument(what + " has data type " + std::to_string(t.data_type()) +
                                     "; polnode's GPT import reads float32, int64, int32 and bool constants");
  }
  v.values.resize(static_cast<std::size_t>(count));
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (!raw.empty()) {
        for (std::size_t i = 0; i < v.values.size(); ++i) {
          float f;
          std::memcpy(&f, raw.data() + i * 4, 4);
          v.values[i] = f;
        }
      } else {
        for (std::size_t i = 0; i < v.values.size(); ++i) v.values[i] = t.float_data(static_cast<int>(i));
      }
      for (double x : v.values) POLNODE_RETURN_IF_ERROR(NotTheBatch(x, what));
      break;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL: {
      const bool is64 = t.data_type() == onnx::TensorProto::INT64;
      const std::size_t width = is64 ? 8 : t.data_type() == onnx::TensorProto::INT32 ? 4 : 1;
      for (std::size_t i = 0; i < v.values.size(); ++i) {
        std::int64_t x = 0;
        if (raw.empty()) {
          x = is64 ? t.int64_data(static_cast<int>(i)) : t.int32_data(static_cast<int>(i));
        } else if (width == 8) {
          std::memcpy(&x, raw.data() + i * 8, 8);
        } else if (width == 4) {
          std::int32_t y;
          std::memcpy(&y, raw.data() + i * 4, 4);
          x = y;
        } else {
          x = raw[i] != 0;
        }
        v.values[i] = static_cast<double>(ClampInt(x));
      }
      break;
    }
    default:
      break;  // refused above
  }
  return v;
}

// A constant's element as an integer: truncated, and clamped to sizes far beyond any polnode accepts.
std::int64_t ToInt(double x) {
  constexpr double kLimit = static_cast<double>(std::int64_t{1} << 40);
  return x >= -kLimit && x <= kLimit ? static_cast<std::int64_t>(x) : x > 0 ? std::int64_t{1} << 40 : -(std::int64_t{1} << 40);
}

GptValue Const(kernels::Shape shape, std::vector<double> values) {
  GptValue v;
  v.shape = std::move(shape);
  v.values = std::move(values);
  return v;
}

// The one value of a 1-element constant or initializer; NaN for anything else (NaN compares false,
// so it matches no constant the pattern asks for).
double ScalarOf(const GptValue& v) {
  if (v.role == GptRole::kConst && v.values.size() == 1) return v.values[0];
  // Only a 1-element initializer is decoded: the pattern asks this of every parameter it meets.
  if (v.role == GptRole::kParam && v.param != nullptr &&
      std::all_of(v.param->dims().begin(), v.param->dims().end(), [](std::int64_t d) { return d == 1; })) {
    Result<GptValue> c = DecodeConstant(*v.param, "");
    if (c.ok() && c->values.size() == 1) return c->values[0];
  }
  return std::numeric_limits<double>::quiet_NaN();
}

bool Near(double got, double want) { return std::fabs(got - want) <= 1e-6 * std::fabs(want); }

// The element count of `s` without the batch; kInvalidArgument (naming `label`) past int64, which
// up to 8 dimensions of kMaxDim each can reach.
Result<std::int64_t> Elements(const kernels::Shape& s, const std::string& label) {
  std::int64_t n = 1;
  for (std::int64_t d : s) {
    if (__builtin_mul_overflow(n, d == kBatchDim ? 1 : d, &n)) {
      return Status::InvalidArgument(label + ": the shape " + ShapeText(s) + " has more elements than int64 counts");
    }
  }
  return n;
}

// Whether a mask of shape `s` is [t, t], or that with leading 1s: the one shape that broadcasts
// against the scores [B, H, T, T] as the same mask for every sample and head.
bool IsSquareMask(const kernels::Shape& s, std::int64_t t) {
  return s.size() >= 2 && s[s.size() - 2] == t && s.back() == t &&
         std::all_of(s.begin(), s.end() - 2, [](std::int64_t d) { return d == 1; });
}

bool HasBatch(const kernels::Shape& s) { return std::find(s.begin(), s.end(), kBatchDim) != s.end(); }

// Reshape's output shape for `in` and the target `to` (0 copies, -1 infers); the batch may move
// only as a whole dimension.
Result<kernels::Shape> ReshapeTarget(const kernels::Shape& in, const GptValue& to, bool allowzero,
                                     const std::string& label) {
  if (to.role != GptRole::kConst || to.shape.size() != 1 || to.values.size() > 8) {
    return Status::InvalidArgument(label + ": the target shape is not a constant vector of rank <= 8");
  }
  kernels::Shape out;
  int infer = -1;
  for (std::size_t i = 0; i < to.values.size(); ++i) {
    const double v = to.values[i];
    if (v == kBatchValue) {
      out.push_back(kBatchDim);
    } else if (v == 0 && !allowzero && i < in.size()) {
      out.push_back(in[i]);
    } else if (v == -1 && infer < 0) {
      infer = static_cast<int>(i);
      out.push_back(1);
    } else if (v >= 1 && v <= static_cast<double>(kMaxDim)) {
      out.push_back(static_cast<std::int64_t>(v));
    } else {
      return Status::InvalidArgument(label + ": target dimension " + std::to_string(i) + " is not supported");
    }
  }
  POLNODE_ASSIGN_OR_RETURN(const std::int64_t have, Elements(in, label));
  POLNODE_ASSIGN_OR_RETURN(const std::int64_t known, Elements(out, label));
  if (infer >= 0) {
    if (HasBatch(in) && !HasBatch(out) && have == known) {
      out[static_cast<std::size_t>(infer)] = kBatchDim;
    } else if (HasBatch(in) == HasBatch(out) && known > 0 && have % known == 0) {
      out[static_cast<std::size_t>(infer)] = have / known;
    } else {
      return Status::InvalidArgument(label + ": cannot infer the -1 dimension keeping the batch whole");
    }
  }
  POLNODE_ASSIGN_OR_RETURN(const std::int64_t size, Elements(out, label));
  if (HasBatch(in) != HasBatch(out) || have != size) {
    return Status::InvalidArgument(label + ": reshapes " + ShapeText(in) + " to " + ShapeText(out) +
                                   " (-1 is the batch), which splits or merges the batch or changes the size");
  }
  return out;
}

Status GptMapper::Fold(const onnx::NodeProto& n, const std::string& label, std::vector<const GptValue*>& in,
                       GptValue& out) {
  const std::string& op = n.op_type();
  const Attrs a(n, label);
  const auto ints = [&](const GptValue& v) {
    std::vector<std::int64_t> r;
    for (double x : v.values) r.push_back(ToInt(x));
    return r;
  };
  const std::size_t arity = op == "Concat" ? in.size() : op == "Cast" || op == "ConstantOfShape" ? 1
                          : op == "Trilu" ? std::clamp<std::size_t>(in.size(), 1, 2) : 2;
  if (in.size() != arity) {
    return Status::InvalidArgument(label + ": has " + std::to_string(in.size()) + " inputs, " + std::to_string(arity) +
                                   " expected");
  }
  for (const GptValue* v : in) {
    for (double x : v->values) {
      if (x == kBatchValue && op != "Gather" && op != "Unsqueeze" && op != "Concat" && op != "Identity" &&
          op != "Cast" && op != "Reshape") {
        return Status::InvalidArgument(label + ": computes with the batch size, which polnode leaves free");
      }
    }
  }
  if (op == "Gather") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"axis"}));
    POLNODE_RETURN_IF_ERROR(a.Int("axis", 0, {0}));
    if (in.size() != 2 || in[0]->shape.size() != 1) {
      return Status::InvalidArgument(label + ": polnode folds Gather of a constant vector only");
    }
    out = Const(in[1]->shape, {});
    for (double i : in[1]->values) {
      const auto size = static_cast<double>(in[0]->values.size());
      const double k = i < 0 ? i + size : i;
      if (!(k >= 0 && k < size)) return Status::InvalidArgument(label + ": index out of range");
      out.values.push_back(in[0]->values[static_cast<std::size_t>(k)]);
    }
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({}));
    if (in.size() != 2) return Status::InvalidArgument(label + ": needs the axes as a second input (opset 13+)");
    out = *in[0];
    for (std::int64_t axis : ints(*in[1])) {
      const auto rank = static_cast<std::int64_t>(out.shape.size()) + (op == "Unsqueeze" ? 1 : 0);
      const std::int64_t k = axis < 0 ? axis + rank : axis;
      if (k < 0 || k >= rank || out.shape.size() >= 8) return Status::InvalidArgument(label + ": axis out of range");
      if (op == "Unsqueeze") {
        out.shape.insert(out.shape.begin() + k, 1);
      } else {
        if (out.shape[static_cast<std::size_t>(k)] != 1) return Status::InvalidArgument(label + ": squeezes a dimension that is not 1");
        out.shape.erase(out.shape.begin() + k);
      }
    }
  } else if (op == "Concat") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"axis"}));
    POLNODE_RETURN_IF_ERROR(a.Int("axis", 0, {0, -1}));
    out = Const({0}, {});
    for (const GptValue* v : in) {
      if (v->shape.size() != 1) return Status::InvalidArgument(label + ": polnode folds Concat of vectors only");
      out.values.insert(out.values.end(), v->values.begin(), v->values.end());
    }
    out.shape = {static_cast<std::int64_t>(out.values.size())};
  } else if (op == "Cast") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"to", "saturate"}));
    std::int64_t to = 0;
    POLNODE_RETURN_IF_ERROR(a.Int("to", 0, {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64,
                                            onnx::TensorProto::INT32, onnx::TensorProto::BOOL}, &to));
    out = *in[0];
    for (double& x : out.values) {
      if (x == kBatchValue) continue;
      if (to == onnx::TensorProto::BOOL) x = x != 0 ? 1 : 0;
      if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32) x = static_cast<double>(ClampInt(ToInt(x)));
      if (to == onnx::TensorProto::FLOAT) x = std::fabs(x) <= std::numeric_limits<float>::max() ? static_cast<float>(x) : x;
      POLNODE_RETURN_IF_ERROR(NotTheBatch(x, label));
    }
  } else if (op == "ConstantOfShape") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"value"}));
    out = Const({}, {});
    std::int64_t count = 1;
    for (std::int64_t d : ints(*in[0])) {
      if (d < 0 || d > kMaxDim || count * std::max<std::int64_t>(d, 1) > kMaxConstElements) {
        return Status::InvalidArgument(label + ": the shape is larger than polnode's constants");
      }
      count *= d;
      out.shape.push_back(d);
    }
    double fill = 0;
    if (const onnx::AttributeProto* v = a.Find("value")) {
      POLNODE_ASSIGN_OR_RETURN(GptValue f, DecodeConstant(v->t(), label + " value"));
      if (f.values.size() != 1) return Status::InvalidArgument(label + ": value is not one element");
      fill = f.values[0];
    }
    out.values.assign(static_cast<std::size_t>(count), fill);
  } else if (op == "Trilu") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"upper"}));
    std::int64_t upper = 1;
    POLNODE_RETURN_IF_ERROR(a.Int("upper", 1, {0, 1}, &upper));
    if (in.size() > 1 && in[1]->values.size() != 1) return Status::InvalidArgument(label + ": k is not one value");
    const std::int64_t k = in.size() > 1 ? ToInt(in[1]->values[0]) : 0;
    out = *in[0];
    if (out.shape.size() < 2) return Status::InvalidArgument(label + ": needs a matrix");
    const std::int64_t rows = out.shape[out.shape.size() - 2], cols = out.shape.back();
    for (std::size_t e = 0; e < out.values.size(); ++e) {
      const auto i = static_cast<std::int64_t>(e) / cols % rows, j = static_cast<std::int64_t>(e) % cols;
      const bool keep = upper ? j - i >= k : j - i <= k;
      if (!keep) out.values[e] = 0;
    }
  } else if (op == "Reshape") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"allowzero"}));
    std::int64_t allowzero = 0;
    POLNODE_RETURN_IF_ERROR(a.Int("allowzero", 0, {0, 1}, &allowzero));
    POLNODE_ASSIGN_OR_RETURN(out.shape, ReshapeTarget(in[0]->shape, *in[1], allowzero != 0, label));
    out.values = in[0]->values;
  } else if (op == "Equal") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({}));
    if (in[0]->shape != in[1]->shape && in[1]->values.size() != 1) {
      return Status::InvalidArgument(label + ": polnode folds Equal of same-shaped constants or with a scalar");
    }
    out = *in[0];
    for (std::size_t i = 0; i < out.values.size(); ++i) {
      out.values[i] = out.values[i] == in[1]->values[in[1]->values.size() == 1 ? 0 : i] ? 1 : 0;
    }
  } else {
    return Status::InvalidArgument(label + ": unsupported operator " + op + " on constants");
  }
  return Status::Ok();
}

// A float32 initializer for a GPT parameter, in polnode's shape `want` (the file's dims must be
// `want`, except that wpe may be [T * C], [T, C] or [1, T, C]).
Result<kernels::Tensor> GptMapper::Weight(const std::string& name, const kernels::Shape& want, const std::string& what) {
  const GptValue& v = values_.at(name);
  POLNODE_ASSIGN_OR_RETURN(kernels::Tensor t, DecodeInitializer(*v.param));
  const bool flat_ok = what == "wpe" && t.numel() == kernels::NumElements(want);
  if (t.shape() != want && !flat_ok) {
    return Status::InvalidArgument("initializer '" + v.param->name() + "' (" + what + ") is " + ShapeText(t.shape()) +
                                   "; the GPT needs " + ShapeText(want));
  }
  kernels::Tensor out(want);
  std::copy(t.values().begin(), t.values().end(), out.values().begin());
  return out;
}

Status GptMapper::Matmul(const std::string& label, const GptValue& a, const GptValue& b, const std::string& a_name,
                         const std::string& b_name, GptValue& out, std::string& target) {
  const std::int64_t c = width_;
  const bool weight = b.role == GptRole::kParam && b.shape.size() == 2;
  if (a.role == GptRole::kNorm && weight && b.shape[0] == c) {
    out.role = GptRole::kLinear;
    out.shape = {kBatchDim, context_, b.shape[1]};
    out.from = a_name;
    out.names = {b_name};
    target = "linear " + std::to_string(c) + "->" + std::to_string(b.shape[1]) + " by '" + b_name + "'";
    return Status::Ok();
  }
  if (a.role == GptRole::kHeads && b.role == GptRole::kHeadsT && a.heads == b.heads &&
      values_.at(a.from).from == values_.at(b.from).from && a.from != b.from) {
    out.role = GptRole::kScores;
    out.shape = {kBatchDim, a.heads, context_, context_};
    out.heads = a.heads;
    out.names = {a.from, b.from};
    target = "attention scores Q K^T";
    return Status::Ok();
  }
  if (a.role == GptRole::kProbs && b.role == GptRole::kHeads && b.heads == a.heads &&
      values_.at(b.from).from == values_.at(a.names[0]).from && b.from != a.names[0] && b.from != a.names[1]) {
    out.role = GptRole::kMixed;
    out.shape = b.shape;
    out.from = values_.at(b.from).from;
    out.heads = a.heads;
    out.names = {a.names[0], a.names[1], b.from};
    target = "attention P V";
    return Status::Ok();
  }
  if (a.role == GptRole::kMergedFlat && weight && b.shape[0] == c && b.shape[1] == c) {
    out = a;
    out.role = GptRole::kAttn;
    out.names.push_back(b_name);
    target = "attention output projection by '" + b_name + "'";
    return Status::Ok();
  }
  if (a.role == GptRole::kGelu && a.stage == kGeluDone && weight && b.shape[0] == 4 * c && b.shape[1] == c) {
    out.role = GptRole::kMlp;
    out.shape = {kBatchDim, context_, c};
    out.from = a.from;
    out.names = {b_name};
    target = "MLP output projection by '" + b_name + "'";
    return Status::Ok();
  }
  return Status::InvalidArgument(label + ": multiplies " + RoleText(a) + " " + ShapeText(a.shape) + " by " +
                                 RoleText(b) + " " + ShapeText(b.shape) + ", which is not a step of polnode's GPT");
}

// Add and Mul (and Div for the scale): the residual adds, the position embedding, the attention
// scale and additive mask, and GELU's tanh expression.
Status GptMapper::AddOrMul(const onnx::NodeProto& n, const std::string& label, const GptValue& a, const GptValue& b,
                           GptValue& out, std::string& target) {
  const std::string& op = n.op_type();
  const std::string& an = n.input(0);
  const std::string& bn = n.input(1);
  const std::int64_t t = context_, c = width_;
  // Commutative cases are tried both ways round.
  for (int swap = 0; swap < (op == "Div" ? 1 : 2); ++swap) {
    const GptValue& x = swap ? b : a;
    const GptValue& y = swap ? a : b;
    const std::string& xn = swap ? bn : an;
    if (op == "Add" && x.role == GptRole::kTokens && y.role == GptRole::kParam &&
        (y.shape == kernels::Shape{t, c} || y.shape == kernels::Shape{1, t, c})) {
      out.role = GptRole::kStream;
      out.shape = x.shape;
      out.names = {x.from, y.param->name()};  // wte, wpe
      target = "position embeddings '" + y.param->name() + "'";
      return Status::Ok();
    }
    if (op == "Add" && x.role == GptRole::kStream && y.role == GptRole::kAttn && values_.at(y.from).from == xn) {
      out.role = GptRole::kMid;
      out.shape = x.shape;
      out.from = xn;
      out.heads = y.heads;
      out.names = {values_.at(y.from).names[0], values_.at(y.from).names[1]};  // ln1 gain, shift
      for (const std::string& lin : {y.names[0], y.names[1], y.names[2]}) out.names.push_back(values_.at(lin).names[0]);
      out.names.push_back(y.names[3]);  // wo
      target = "attention residual";
      return Status::Ok();
    }
    if (op == "Add" && x.role == GptRole::kMid && y.role == GptRole::kMlp) {
      const GptValue& fc = values_.at(y.from);
      const GptValue& ln2 = values_.at(fc.from);
      if (ln2.from == xn) {
        out.role = GptRole::kStream;
        out.shape = x.shape;
        out.from = xn;
        out.names = {ln2.names[0], ln2.names[1], fc.names[0], y.names[0]};  // ln2 gain, shift, w1, w2
        target = "MLP residual";
        return Status::Ok();
      }
    }
    const std::int64_t d = x.heads > 0 ? c / x.heads : 1;
    if (op == "Mul" && x.role == GptRole::kScores && Near(ScalarOf(y), 1.0 / std::sqrt(static_cast<double>(d)))) {
      out = x;
      out.role = GptRole::kScaled;
      target = "scale 1/sqrt(" + std::to_string(d) + ")";
      return Status::Ok();
    }
    if (op == "Div" && x.role == GptRole::kScores && Near(ScalarOf(y), std::sqrt(static_cast<double>(d)))) {
      out = x;
      out.role = GptRole::kScaled;
      target = "scale 1/sqrt(" + std::to_string(d) + ")";
      return Status::Ok();
    }
    if (op == "Add" && x.role == GptRole::kScaled && y.role == GptRole::kConst) {
      if (!IsSquareMask(y.shape, t)) {
        return Status::InvalidArgument(label + ": adds a mask of shape " + ShapeText(y.shape) +
                                       " to the scaled attention scores; polnode's causal mask is T x T = " +
                                       ShapeText({t, t}));
      }
      bool causal = true;
      for (std::int64_t i = 0; i < t; ++i) {
        for (std::int64_t j = 0; j < t; ++j) {
          const double m = y.values[static_cast<std::size_t>(i * t + j)];
          causal = causal && (j > i ? m <= -1e9 : m == 0);
        }
      }
      if (causal) {
        out = x;
        out.role = GptRole::kMasked;
        target = "causal mask (additive)";
        return Status::Ok();
      }
    }
    // GELU, tanh form, as torch writes it: 0.5 * (x * (1 + tanh(beta * (x + kappa * (x * (x * x)))))).
    const auto gelu = [&](int stage_from, const GptValue& step, const std::string& what) {
      out.role = GptRole::kGelu;
      out.shape = step.shape;
      out.stage = stage_from + 1;
      out.from = step.from;
      target = "GELU (tanh): " + what;
      return Status::Ok();
    };
    const bool x_is_fc_of_y = x.role == GptRole::kLinear && y.role == GptRole::kGelu && y.from == xn;
    if (op == "Mul" && x.role == GptRole::kLinear && an == bn && x.shape.back() == 4 * c) {
      out.role = GptRole::kGelu;
      out.shape = x.shape;
      out.stage = 1;
      out.from = xn;
      target = "GELU (tanh): x * x";
      return Status::Ok();
    }
    if (op == "Mul" && x_is_fc_of_y && y.stage == 1) return gelu(1, y, "x^3");
    if (op == "Mul" && y.role == GptRole::kGelu && y.stage == 2 && Near(ScalarOf(x), kernels::det::kGeluKappa)) {
      return gelu(2, y, "kappa x^3");
    }
    if (op == "Add" && x_is_fc_of_y && y.stage == 3) return gelu(3, y, "x + kappa x^3");
    if (op == "Mul" && y.role == GptRole::kGelu && y.stage == 4 && Near(ScalarOf(x), std::sqrt(2.0 / std::numbers::pi))) {
      return gelu(4, y, "sqrt(2/pi) (x + kappa x^3)");
    }
    if (op == "Add" && y.role == GptRole::kGelu && y.stage == 6 && Near(ScalarOf(x), 1.0)) return gelu(6, y, "1 + tanh");
    if (op == "Mul" && x_is_fc_of_y && y.stage == 7) return gelu(7, y, "x (1 + tanh)");
    if (op == "Mul" && y.role == GptRole::kGelu && y.stage == 8 && Near(ScalarOf(x), 0.5)) return gelu(8, y, "0.5 x (1 + tanh)");
  }
  if ((op == "Mul" || op == "Div") && a.role == GptRole::kScores && !std::isnan(ScalarOf(b))) {
    return Status::InvalidArgument(label + ": scales the attention scores by " + (op == "Div" ? "1/" : "") +
                                   std::to_string(ScalarOf(b)) + "; polnode's attention scales them by 1/sqrt(" +
                                   std::to_string(width_ / a.heads) + ")");
  }
  if (op == "Div" && a.role == GptRole::kLinear && Near(ScalarOf(b), std::numbers::sqrt2)) {
    return Status::InvalidArgument(label + ": divides by sqrt(2), as GELU by Erf does; polnode's GELU is the tanh "
                                   "form (export F.gelu(x, approximate='tanh'))");
  }
  if (op == "Add" && (a.role == GptRole::kLinear || a.role == GptRole::kAttn || a.role == GptRole::kMlp) &&
      b.role == GptRole::kParam) {
    return Status::InvalidArgument(label + ": adds a bias to a linear layer; polnode's GPT linear layers have none "
                                   "(nanoGPT's bias=False)");
  }
  return Status::InvalidArgument(label + ": " + op + " of " + RoleText(a) + " " + ShapeText(a.shape) + " and " +
                                 RoleText(b) + " " + ShapeText(b.shape) + " is not a step of polnode's GPT");
}

Status GptMapper::Node(const onnx::NodeProto& n, const std::string& label, std::string& target) {
  const std::string& op = n.op_type();
  if (n.output_size() < 1 || n.output(0).empty()) return Status::InvalidArgument(label + ": has no output");
  if (values_.count(n.output(0)) > 0) {
    // Roles point at the values they came from by name, so a name must keep its first meaning.
    return Status::InvalidArgument(label + ": writes '" + n.output(0) + "', which is already defined");
  }
  GptValue out;
  if (op == "Constant") {
    const Attrs a(n, label);
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"value", "value_float", "value_int", "value_ints", "value_floats"}));
    if (n.attribute_size() != 1) return Status::InvalidArgument(label + ": needs exactly one value attribute");
    const onnx::AttributeProto& v = n.attribute(0);
    if (v.name() == "value") {
      POLNODE_ASSIGN_OR_RETURN(out, DecodeConstant(v.t(), label + " value"));
    } else if (v.name() == "value_float") {
      POLNODE_RETURN_IF_ERROR(NotTheBatch(v.f(), label));
      out = Const({}, {v.f()});
    } else if (v.name() == "value_int") {
      out = Const({}, {static_cast<double>(ClampInt(v.i()))});
    } else {
      out = Const({0}, {});
      for (std::int64_t x : v.ints()) out.values.push_back(static_cast<double>(ClampInt(x)));
      for (float x : v.floats()) {
        POLNODE_RETURN_IF_ERROR(NotTheBatch(x, label));
        out.values.push_back(x);
      }
      if (out.values.size() > 8) return Status::InvalidArgument(label + ": a longer list than polnode folds");
      out.shape = {static_cast<std::int64_t>(out.values.size())};
    }
    target = "constant";
    POLNODE_RETURN_IF_ERROR(Charge(out, label));
    values_[n.output(0)] = std::move(out);
    return Status::Ok();
  }
  std::vector<const GptValue*> in;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    POLNODE_ASSIGN_OR_RETURN(const GptValue* v, In(n, i, label));
    in.push_back(v);
  }
  if (in.empty()) return Status::InvalidArgument(label + ": has no inputs");
  const GptValue& x = *in[0];
  const auto need = [&](std::size_t count) {
    return in.size() == count ? Status::Ok()
                              : Status::InvalidArgument(label + ": has " + std::to_string(in.size()) + " inputs, " +
                                                        std::to_string(count) + " expected");
  };
  bool all_const = true;
  for (const GptValue* v : in) all_const = all_const && v->role == GptRole::kConst;
  const Attrs a(n, label);
  if (op == "Identity") {
    POLNODE_RETURN_IF_ERROR(need(1));
    out = x;
    target = "alias";
  } else if (op == "Shape") {
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({}));
    out = Const({static_cast<std::int64_t>(x.shape.size())}, {});
    for (std::int64_t d : x.shape) out.values.push_back(d == kBatchDim ? kBatchValue : static_cast<double>(d));
    target = "shape arithmetic";
  } else if (all_const) {
    POLNODE_RETURN_IF_ERROR(Fold(n, label, in, out));
    target = "constant (folded)";
  } else if (x.role == GptRole::kParam && (op == "Reshape" || op == "Unsqueeze" || op == "Slice")) {
    // Views of a parameter (torch's wpe.view(T, C)[None, :t]): same elements, same order.
    out = x;
    if (op == "Reshape") {
      POLNODE_RETURN_IF_ERROR(need(2));
      POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"allowzero"}));
      std::int64_t allowzero = 0;
      POLNODE_RETURN_IF_ERROR(a.Int("allowzero", 0, {0, 1}, &allowzero));
      POLNODE_ASSIGN_OR_RETURN(out.shape, ReshapeTarget(x.shape, *in[1], allowzero != 0, label));
    } else if (op == "Unsqueeze") {
      POLNODE_RETURN_IF_ERROR(need(2));
      POLNODE_RETURN_IF_ERROR(Fold(n, label, in, out));
      out.role = GptRole::kParam;
      out.param = x.param;
    } else {
      // Slice(data, starts, ends[, axes[, steps]]) that keeps every element.
      if (in.size() < 3) return Status::InvalidArgument(label + ": needs starts and ends");
      for (std::size_t k = 1; k < in.size(); ++k) {
        if (in[k]->role != GptRole::kConst) return Status::InvalidArgument(label + ": slices by a computed range");
      }
      for (std::size_t k = 0; k < in[1]->values.size(); ++k) {
        if (in[2]->values.size() <= k || (in.size() > 3 && in[3]->values.size() <= k) ||
            (in.size() > 4 && in[4]->values.size() <= k)) {
          return Status::InvalidArgument(label + ": starts, ends, axes and steps differ in length");
        }
        const double axis_v = in.size() > 3 ? in[3]->values[k] : static_cast<double>(k);
        const auto rank = static_cast<double>(x.shape.size());
        const double axis = axis_v < 0 ? axis_v + rank : axis_v;
        if (!(axis >= 0 && axis < rank)) return Status::InvalidArgument(label + ": bad axes");
        const auto dim = static_cast<double>(x.shape[static_cast<std::size_t>(axis)]);
        const double step = in.size() > 4 ? in[4]->values[k] : 1;
        if (in[1]->values[k] != 0 || in[2]->values[k] < dim || step != 1) {
          return Status::InvalidArgument(label + ": slices part of initializer '" + x.param->name() +
                                         "'; polnode's GPT uses every position (the input's context is the model's)");
        }
      }
    }
    target = "view of initializer '" + x.param->name() + "'";
  } else if (op == "Gather") {
    POLNODE_RETURN_IF_ERROR(need(2));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"axis"}));
    POLNODE_RETURN_IF_ERROR(a.Int("axis", 0, {0}));
    if (x.role != GptRole::kParam || x.shape.size() != 2 || in[1]->role != GptRole::kIds || width_ != 0) {
      return Status::InvalidArgument(label + ": polnode's GPT gathers the token embeddings [V, C] once, by the ids");
    }
    width_ = x.shape[1];
    out.role = GptRole::kTokens;
    out.shape = {kBatchDim, context_, width_};
    out.from = x.param->name();
    target = "token embeddings '" + out.from + "' [" + std::to_string(x.shape[0]) + ", " + std::to_string(width_) + "]";
  } else if (op == "LayerNormalization") {
    POLNODE_RETURN_IF_ERROR(need(3));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"axis", "epsilon", "stash_type"}));
    POLNODE_RETURN_IF_ERROR(a.Int("axis", -1, {-1, 2}));
    const onnx::AttributeProto* eps = a.Find("epsilon");
    if (eps != nullptr && std::fabs(eps->f() - 1e-5f) > 1e-11f) {
      return Status::InvalidArgument(label + ": epsilon is " + std::to_string(eps->f()) + "; polnode's LayerNorm uses 1e-5");
    }
    const kernels::Shape vec = {width_};
    if ((x.role != GptRole::kStream && x.role != GptRole::kMid) || in[1]->role != GptRole::kParam ||
        in[2]->role != GptRole::kParam || in[1]->shape != vec || in[2]->shape != vec) {
      return Status::InvalidArgument(label + ": normalises " + RoleText(x) +
                                     "; polnode's GPT normalises the residual stream with a gain and a shift [C]");
    }
    out.role = GptRole::kNorm;
    out.shape = x.shape;
    out.from = n.input(0);
    out.names = {in[1]->param->name(), in[2]->param->name()};
    target = "LayerNorm with '" + out.names[0] + "', '" + out.names[1] + "'";
  } else if (op == "MatMul") {
    POLNODE_RETURN_IF_ERROR(need(2));
    POLNODE_RETURN_IF_ERROR(Matmul(label, x, *in[1], n.input(0), in[1]->role == GptRole::kParam ? in[1]->param->name() : n.input(1), out, target));
  } else if (op == "Add" || op == "Mul" || op == "Div") {
    POLNODE_RETURN_IF_ERROR(need(2));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({}));
    POLNODE_RETURN_IF_ERROR(AddOrMul(n, label, x, *in[1], out, target));
  } else if (op == "Reshape") {
    POLNODE_RETURN_IF_ERROR(need(2));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"allowzero"}));
    std::int64_t allowzero = 0;
    POLNODE_RETURN_IF_ERROR(a.Int("allowzero", 0, {0, 1}, &allowzero));
    POLNODE_ASSIGN_OR_RETURN(kernels::Shape shape, ReshapeTarget(x.shape, *in[1], allowzero != 0, label));
    out = x;
    out.shape = shape;
    if (shape == x.shape) {
      target = "no-op reshape";
    } else if (x.role == GptRole::kLinear && x.shape.back() == width_ && shape.size() == 4 &&
               shape[0] == kBatchDim && shape[1] == context_ && shape[2] * shape[3] == width_) {
      out.role = GptRole::kSplit;
      out.heads = shape[2];
      out.from = n.input(0);
      target = "split into " + std::to_string(out.heads) + " heads";
    } else if (x.role == GptRole::kMerged && shape == kernels::Shape{kBatchDim, context_, width_}) {
      out.role = GptRole::kMergedFlat;
      target = "merge the heads";
    } else {
      return Status::InvalidArgument(label + ": reshapes " + RoleText(x) + " " + ShapeText(x.shape) + " to " +
                                     ShapeText(shape) + ", which is not a step of polnode's GPT");
    }
  } else if (op == "Transpose") {
    POLNODE_RETURN_IF_ERROR(need(1));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"perm"}));
    const onnx::AttributeProto* perm_attr = a.Find("perm");
    const std::vector<std::int64_t> perm =
        perm_attr == nullptr ? std::vector<std::int64_t>{} : std::vector<std::int64_t>(perm_attr->ints().begin(), perm_attr->ints().end());
    const std::vector<std::int64_t> swap12 = {0, 2, 1, 3}, to_keys = {0, 2, 3, 1}, swap23 = {0, 1, 3, 2};
    out = x;
    const std::int64_t h = x.heads, d = h > 0 ? width_ / h : 0;
    if (x.role == GptRole::kSplit && perm == swap12) {
      out.role = GptRole::kHeads;
      out.shape = {kBatchDim, h, context_, d};
      target = "heads [B, H, T, D]";
    } else if ((x.role == GptRole::kSplit && perm == to_keys) || (x.role == GptRole::kHeads && perm == swap23)) {
      out.role = GptRole::kHeadsT;
      out.shape = {kBatchDim, h, d, context_};
      target = "keys transposed [B, H, D, T]";
    } else if (x.role == GptRole::kMixed && perm == swap12) {
      out.role = GptRole::kMerged;
      out.shape = {kBatchDim, context_, h, d};
      target = "heads back to [B, T, H, D]";
    } else {
      return Status::InvalidArgument(label + ": transposes " + RoleText(x) + " " + ShapeText(x.shape) +
                                     ", which is not a step of polnode's GPT");
    }
  } else if (op == "Where") {
    POLNODE_RETURN_IF_ERROR(need(3));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({}));
    // Where(future, -inf, scores) (torch's masked_fill) or Where(past, scores, -inf).
    const GptValue& cond = x;
    const bool fill_first = in[2]->role == GptRole::kScaled;
    const GptValue& scores = fill_first ? *in[2] : *in[1];
    const double fill = ScalarOf(fill_first ? *in[1] : *in[2]);
    const std::int64_t t = context_;
    bool causal = cond.role == GptRole::kConst && scores.role == GptRole::kScaled && fill <= -1e9 &&
                  IsSquareMask(cond.shape, t) && cond.values.size() == static_cast<std::size_t>(t * t);
    for (std::int64_t i = 0; causal && i < t; ++i) {
      for (std::int64_t j = 0; j < t; ++j) {
        const bool future = cond.values[static_cast<std::size_t>(i * t + j)] != 0;
        causal = causal && future == (fill_first ? j > i : j <= i);
      }
    }
    if (!causal) {
      return Status::InvalidArgument(label + ": is not the causal mask of the scaled attention scores (Where of the "
                                     "[T, T] future positions, -inf, scores)");
    }
    out = scores;
    out.role = GptRole::kMasked;
    target = "causal mask";
  } else if (op == "Softmax") {
    POLNODE_RETURN_IF_ERROR(need(1));
    POLNODE_RETURN_IF_ERROR(a.OnlyKnown({"axis"}));
    POLNODE_RETURN_IF_ERROR(a.Int("axis", -1, {-1, 3}));
    if (x.role != GptRole::kMasked) {
      return Status::InvalidArgument(label + ": softmax of " + RoleText(x) +
                                     "; polnode's GPT takes the softmax of the scaled, causally masked scores only");
    }
    out = x;
    out.role = GptRole::kProbs;
    target = "causal softmax";
  } else if (op == "Tanh") {
    POLNODE_RETURN_IF_ERROR(need(1));
    if (x.role != GptRole::kGelu || x.stage != 5) {
      return Status::InvalidArgument(label + ": Tanh of " + RoleText(x) + " outside GELU's tanh expression");
    }
    out = x;
    out.stage = 6;
    target = "GELU (tanh): tanh";
  } else if (op == "Erf") {
    return Status::InvalidArgument(label + ": GELU by Erf; polnode's GELU is the tanh form (export "
                                   "F.gelu(x, approximate='tanh'))");
  } else {
    return Status::InvalidArgument(label + ": unsupported operator " + op +
                                   "; polnode's GPT import maps Gather, Add, LayerNormalization, MatMul, Reshape, "
                                   "Transpose, Mul, Div, Where, Softmax, Tanh and constant shape arithmetic");
  }
  POLNODE_RETURN_IF_ERROR(Charge(out, label));
  values_[n.output(0)] = std::move(out);
  return Status::Ok();
}

Status GptMapper::Charge(const GptValue& v, const std::string& what) {
  const_elements_ += static_cast<std::int64_t>(v.values.size());
  if (const_elements_ > kMaxConstTotal) {
    return Status::ResourceExhausted(what + ": the graph's constants exceed " + std::to_string(kMaxConstTotal) +
                                     " elements");
  }
  return Status::Ok();
}

Status GptMapper::Map(OnnxImport& out) {
  for (const onnx::TensorProto& t : g_.initializer()) {
    GptValue v;
    if (t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() > 0) {
      v.role = GptRole::kParam;
      v.param = &t;
      for (std::int64_t d : t.dims()) {
        if (d < 1 || d > kMaxDim) return Status::InvalidArgument("initializer '" + t.name() + "' has a dimension of " + std::to_string(d));
        v.shape.push_back(d);
      }
    } else {
      POLNODE_ASSIGN_OR_RETURN(v, DecodeConstant(t, "initializer '" + t.name() + "'"));
      POLNODE_RETURN_IF_ERROR(Charge(v, "initializer '" + t.name() + "'"));
    }
    values_[t.name()] = std::move(v);
  }
  const onnx::ValueInfoProto* input = nullptr;
  for (const onnx::ValueInfoProto& v : g_.input()) {
    if (values_.count(v.name()) > 0) continue;
    if (input != nullptr) return Status::InvalidArgument("the graph has several inputs; polnode's GPT takes one (the token ids)");
    input = &v;
  }
  if (input == nullptr) return Status::InvalidArgument("the graph has no input besides its initializers");
  const auto& dims = input->type().tensor_type().shape().dim();
  if (dims.size() != 2 || dims[0].has_dim_value() || !dims[1].has_dim_value() || dims[1].dim_value() < 1 ||
      dims[1].dim_value() > kMaxDim) {
    return Status::InvalidArgument("input '" + input->name() + "' is not token ids [batch, T] with a free batch "
                                   "(dynamic_axes) and a fixed context T");
  }
  context_ = dims[1].dim_value();
  GptValue ids;
  ids.role = GptRole::kIds;
  ids.shape = {kBatchDim, context_};
  values_[input->name()] = ids;
  out.input_name = input->name();
  out.input_shape = {context_};
  if (g_.output_size() != 1) return Status::InvalidArgument("the graph has " + std::to_string(g_.output_size()) + " outputs; polnode's GPT has one (the logits)");
  out.output_name = g_.output(0).name();

  for (int i = 0; i < g_.node_size(); ++i) {
    const onnx::NodeProto& n = g_.node(i);
    const std::string label = NodeLabel(n, i);
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return Status::InvalidArgument(label + ": unsupported operator domain '" + n.domain() + "'");
    }
    std::string target;
    POLNODE_RETURN_IF_ERROR(Node(n, label, target));
    out.nodes.push_back(MappingOf(n, i, std::move(target)));
  }
  auto logits = values_.find(out.output_name);
  if (logits == values_.end() || logits->second.role != GptRole::kLinear ||
      values_.at(values_.at(logits->second.from).from).role != GptRole::kStream) {
    return Status::InvalidArgument("the graph output '" + out.output_name +
                                   "' is not the head's projection of the final LayerNorm of the residual stream");
  }
  const GptValue& head = logits->second;
  const GptValue& lnf = values_.at(head.from);
  // Walk the residual stream back from lnf to the embeddings, block by block.
  std::vector<std::vector<std::string>> blocks;  // last first: ln1.g, ln1.b, wq, wk, wv, wo, ln2.g, ln2.b, w1, w2
  std::int64_t heads = 0;
  const GptValue* stream = &values_.at(lnf.from);
  while (!stream->from.empty()) {
    const GptValue& mid = values_.at(stream->from);
    std::vector<std::string> names = mid.names;
    names.insert(names.end(), stream->names.begin(), stream->names.end());
    blocks.push_back(std::move(names));
    if (heads != 0 && heads != mid.heads) return Status::InvalidArgument("the blocks have different head counts");
    heads = mid.heads;
    stream = &values_.at(mid.from);
    if (blocks.size() > 64) return Status::InvalidArgument("more than 64 blocks");
  }
  if (blocks.empty()) return Status::InvalidArgument("the graph has no transformer block");
  std::vector<std::string> order = {stream->names[0], stream->names[1]};
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) order.insert(order.end(), it->begin(), it->end());
  order.insert(order.end(), {lnf.names[0], lnf.names[1], head.names[0]});
  const std::int64_t vocab = values_.at(order[0]).shape[0];
  out.spec = "gpt:layers=" + std::to_string(blocks.size()) + ",heads=" + std::to_string(heads) +
             ",width=" + std::to_string(width_) + ",context=" + std::to_string(context_) +
             ",vocab=" + std::to_string(vocab);
  Result<ModelSpec> model = ParseModelSpec(out.spec);
  if (!model.ok()) {
    return Status::InvalidArgument("the graph maps to " + out.spec + ", which polnode refuses: " + model.status().ToString());
  }
  out.model = std::move(*model);
  if (order.size() != out.model.params.size()) return Status::Internal("GPT parameter count mismatch");
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (order[i] == order[j]) {
        return Status::InvalidArgument("initializer '" + order[i] + "' is both " + out.model.params[j].name + " and " +
                                       out.model.params[i].name + "; polnode's GPT trains them as separate parameters");
      }
    }
    const ParamSpec& spec_p = out.model.params[i];
    POLNODE_ASSIGN_OR_RETURN(kernels::Tensor t, Weight(order[i], spec_p.shape, spec_p.name));
    out.parameter_count += t.numel();
    out.params.push_back({spec_p.name, std::move(t)});
    out.param_initializers.push_back(order[i]);
  }
  return Status::Ok();
}

// True when the graph's first input that is not an initializer holds integers: token ids, so the
// model is read as a GPT; image models take float32.
bool TakesTokenIds(const onnx::GraphProto& g) {
  for (const onnx::ValueInfoProto& v : g.input()) {
    bool initializer = false;
    for (const onnx::TensorProto& t : g.initializer()) initializer = initializer || t.name() == v.name();
    if (initializer) continue;
    const std::int32_t type = v.type().tensor_type().elem_type();
    return type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32;
  }
  return false;
}

}  // namespace

Result<OnnxImport> ImportOnnx(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > kMaxOnnxBytes) {
    return Status::ResourceExhausted("the ONNX file is " + std::to_string(bytes.size()) + " bytes; the limit is " +
                                     std::to_string(kMaxOnnxBytes));
  }
  onnx::ModelProto m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("not an ONNX model (the bytes do not parse as a ModelProto)");
  }
  OnnxImport out;
  bool has_default = false;
  for (const onnx::OperatorSetIdProto& o : m.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
    has_default = true;
    out.opset = o.version();
  }
  if (!has_default) return Status::InvalidArgument("the model imports no version of the default ONNX operator set");
  if (out.opset > kOnnxOpset) {
    return Status::InvalidArgument("the model uses opset " + std::to_string(out.opset) +
                                   "; polnode supports opsets up to " + std::to_string(kOnnxOpset) +
                                   " (export with opset_version <= " + std::to_string(kOnnxOpset) + ")");
  }
  if (out.opset < 1) return Status::InvalidArgument("the model declares opset " + std::to_string(out.opset));
  if (!m.has_graph()) return Status::Corruption("the ONNX model has no graph");
  out.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  if (TakesTokenIds(m.graph())) {
    GptMapper mapper(m.graph());
    POLNODE_RETURN_IF_ERROR(mapper.Map(out));
  } else {
    GraphMapper mapper(m.graph());
    POLNODE_RETURN_IF_ERROR(mapper.Map(out));
  }
  return out;
}

TrainState ImportedInitialState(const ModelSpec& model, const std::vector<NamedTensor>& params,
                                OptimizerKind optimizer) {
  TrainState state;
  state.tensors = params;
  const std::vector<std::string> suffixes = OptimizerBufferSuffixes(optimizer);
  for (const ParamSpec& p : model.params) {
    for (const std::string& suffix : suffixes) {
      state.tensors.push_back({p.name + "." + suffix, kernels::Tensor(p.shape)});
    }
  }
  return state;
}

bool IsOnnxModel(std::string_view text) { return text.starts_with("onnx:"); }

Result<consensus::Hash256> OnnxModelHash(std::string_view text) {
  const std::string_view hex = text.substr(std::min<std::size_t>(text.size(), 5));
  bool lower_hex = IsOnnxModel(text) && hex.size() == 64;
  for (char c : hex) lower_hex = lower_hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!lower_hex) {
    return Status::InvalidArgument("'" + std::string(text.substr(0, 80)) +
                                   "' is not onnx: followed by a SHA-256 in 64 lowercase hex digits");
  }
  return consensus::HashFromHex(hex);
}

Result<OnnxImport> LoadOnnxTaskModel(const TaskSpec& task) {
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 want, OnnxModelHash(task.model));
  if (task.model_location.empty()) {
    return Status::InvalidArgument("task model " + task.model + " needs its file (model_file)");
  }
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(task.model_location, kMaxOnnxBytes);
  if (!bytes.ok()) return bytes.status().WithContext("model file " + task.model_location);
  const consensus::Hash256 got = consensus::Sha256(*bytes);
  if (got != want) {
    return Status::FailedPrecondition("model file " + task.model_location + " has SHA-256 " + consensus::ToHex(got) +
                                      ", not the task's " + consensus::ToHex(want));
  }
  Result<OnnxImport> imported = ImportOnnx(*bytes);
  if (!imported.ok()) return imported.status().WithContext("model file " + task.model_location);
  return imported;
}

Result<ModelSpec> TaskModelSpec(const TaskSpec& task) {
  if (!IsOnnxModel(task.model)) return ParseModelSpec(task.model);
  POLNODE_ASSIGN_OR_RETURN(OnnxImport imported, LoadOnnxTaskModel(task));
  return std::move(imported.model);
}

}  // namespace polnode::solver
