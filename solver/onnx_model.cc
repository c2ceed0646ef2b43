#include "polnode/solver/onnx_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
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

Result<std::string> ExportOnnx(const ModelSpec& model, const TrainState& state) {
  if (model.gpt && model.params.empty()) {
    return Status::InvalidArgument(model.text + " has no vocabulary yet, so no parameters to export");
  }
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
    OnnxNodeMapping mapping{n.name().empty() ? "#" + std::to_string(i) : n.name(), op, ""};
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
      cur_ = add->output(0);
      mapping.target = "linear " + std::to_string(cur_shape_[0]) + "->" + std::to_string(outs) + " (with the Add)";
      out.nodes.push_back(mapping);
      out.nodes.push_back({add->name().empty() ? "#" + std::to_string(i + 1) : add->name(), "Add",
                           "bias of the linear layer above"});
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
    for (kernels::Tensor* t : {&l.weight, &l.bias}) {
      const ParamSpec& spec_p = out.model.params[p++];
      if (t->shape() != spec_p.shape) {
        return Status::InvalidArgument(l.node + ": parameter " + spec_p.name + " is " + ShapeText(t->shape()) +
                                       "; " + out.spec + " needs " + ShapeText(spec_p.shape));
      }
      out.parameter_count += t->numel();
      out.params.push_back({spec_p.name, std::move(*t)});
    }
  }
  return Status::Ok();
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
  GraphMapper mapper(m.graph());
  POLNODE_RETURN_IF_ERROR(mapper.Map(out));
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
