// `polnode import FILE`: checks an ONNX file (solver/onnx_model.h) and prints what polnode maps it
// to (the built-in spec, a GPT's architecture, each node's role, the parameters, input and
// output), or the error that
// names the unsupported operator and node, or the opset that is too new.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "flag_groups.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/onnx_model.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode import";

std::string SampleText(const kernels::Shape& sample) {
  std::string out = "[batch";
  for (std::int64_t d : sample) out += ", " + std::to_string(d);
  return out + "]";
}

Status Run(const FlagSet& flags, Io& io) {
  if (flags.positional().size() != 1) return Status::InvalidArgument("give one ONNX file");
  const std::string& path = flags.positional()[0];
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, solver::kMaxOnnxBytes));
  Result<solver::OnnxImport> imported = solver::ImportOnnx(bytes);
  if (!imported.ok()) {
    return imported.status().WithContext(path + " cannot be imported");
  }
  const solver::OnnxImport& m = *imported;
  const std::string file_hash = consensus::ToHex(consensus::Sha256(bytes));
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("file", path)
        .Field("sha256", file_hash)
        .Field("model", "onnx:" + file_hash)
        .Field("spec", m.spec)
        .Field("opset", m.opset)
        .Field("producer", m.producer)
        .Field("input", m.input_name)
        .Field("output", m.output_name)
        .Field("parameters", m.parameter_count)
        .Key("nodes")
        .BeginArray();
    for (const solver::OnnxNodeMapping& n : m.nodes) {
      w.BeginObject().Field("name", n.node).Field("op", n.op_type).Field("maps_to", n.target).EndObject();
    }
    w.EndArray().EndObject();
    io.out << w.str() << "\n";
    return Status::Ok();
  }
  io.out << "file           " << path << " (" << bytes.size() << " bytes, sha256 " << file_hash << ")\n"
         << "producer       " << (m.producer.empty() ? "(none)" : m.producer) << ", opset " << m.opset << "\n"
         << "maps to        " << m.spec << "\n"
         << "task model     model = \"onnx:" << file_hash << "\"\n";
  if (const std::optional<solver::GptConfig>& g = m.model.gpt) {
    io.out << "architecture   GPT: " << g->layers << " blocks, " << g->heads << " heads of " << g->head_dim()
           << ", width " << g->width << ", context " << g->context << ", vocabulary " << g->vocab << "\n"
           << "input          '" << m.input_name << "' int64 token ids [batch, " << g->context << "]\n"
           << "output         '" << m.output_name << "' float32 [batch, " << g->context << ", " << g->vocab
           << "] (next-symbol logits per position)\n";
  } else {
    io.out << "input          '" << m.input_name << "' float32 " << SampleText(m.input_shape)
           << (m.input_shape == m.model.input_shape ? "" : ", read as " + SampleText(m.model.input_shape)) << "\n"
           << "output         '" << m.output_name << "' float32 " << SampleText({m.model.num_outputs()})
           << " (logits)\n";
  }
  io.out << "parameters     " << m.parameter_count << " in " << m.params.size() << " tensors\n";
  if (flags.GetBool("nodes") || !m.model.gpt) {
    for (const solver::OnnxNodeMapping& n : m.nodes) {
      io.out << "  " << n.op_type << std::string(10 - std::min<std::size_t>(9, n.op_type.size()), ' ') << n.node
           << "  ->  " << n.target << "\n";
    }
  } else {
    io.out << "nodes          " << m.nodes.size() << " (--nodes lists each with its role)\n";
  }
  for (const solver::NamedTensor& p : m.params) {
    io.out << "  param " << p.name << " [";
    for (std::size_t i = 0; i < p.tensor.shape().size(); ++i) io.out << (i ? ", " : "") << p.tensor.shape()[i];
    io.out << "]\n";
  }
  return Status::Ok();
}

}  // namespace

int RunImportCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Check an ONNX model file (torch.onnx.export with do_constant_folding=False, opset <= 17) and print "
                "the built-in model it maps to (mlp:, cnn: or gpt:), each node's layer, the parameter count and the "
                "input and output; or the error naming the unsupported operator and node. Supported: Conv (3x3, "
                "stride 1, padding 1) + Relu, MaxPool (2x2, stride 2), Flatten, Gemm, MatMul + Add, Relu, Identity; "
                "and nanoGPT's bias-free GPT with int64 token ids in: Gather, Add, LayerNormalization, MatMul, "
                "Reshape, Transpose, Mul/Div (scale), Where or Add (causal mask), Softmax, tanh GELU (Mul, Add, "
                "Tanh), with torch's constant shape arithmetic.");
  flags.Positional("FILE", "the .onnx file");
  flags.Bool("nodes", "list every node of a GPT too (an mlp: or cnn: always lists them)");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  const Status s = Run(flags, io);
  if (!s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
