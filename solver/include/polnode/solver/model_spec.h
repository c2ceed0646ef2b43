// Model specs: the text a task uses to fix its model (DESIGN.md section 4), parsed into layers
// and parameters.
//
// Grammar (tokens separated by '-', sizes are decimal integers >= 1):
//   mlp:IN-H1-...-OUT     Linear layers IN->H1->...->OUT with ReLU after every layer but the
//                         last. Input: IN features per sample (a flattened image).
//   cnn:[iCxHxW-]LAYERS-OUT
//                         Input C x H x W (default i1x28x28). LAYERS, in order:
//                           cK  conv 3x3 (stride 1, zero padding 1) to K channels, bias, ReLU
//                           p   2x2 max pool, stride 2 (odd sizes floor)
//                           fK  linear to K features, bias, ReLU (the first f flattens C x H x W)
//                         OUT: the final linear layer (no ReLU), whose outputs are the logits.
//                         No c or p after the first f.
// Example: cnn:c8-p-c16-p-f64-10 = conv(8)+relu, pool, conv(16)+relu, pool, fc 784->64 + relu,
// fc 64->10.
//   gpt:layers=L,heads=H,width=C,context=T[,vocab=V]
//                         A character-level GPT (nanoGPT's architecture with bias = False in the
//                         linear layers): keys in any order, each once. Input: T token ids per
//                         sample; output: V logits per position. V is normally left out and taken
//                         from the data (the corpus's distinct symbols, WithGptVocab); a given V
//                         must cover the corpus's symbols. H must divide C. Limits: L <= 64,
//                         C <= 4096, T <= 4096, V <= 256 (a symbol is a byte).
//                         Parameters, in state order: "wte" [V, C], "wpe" [T * C] (the [T, C]
//                         table flattened: it is the bias of the [B, T * C] view of the token
//                         embeddings), then per block i = 0..L-1: "h<i>.ln1.g" [C],
//                         "h<i>.ln1.b" [C], "h<i>.attn.wq", "h<i>.attn.wk", "h<i>.attn.wv",
//                         "h<i>.attn.wo" [C, C], "h<i>.ln2.g", "h<i>.ln2.b" [C], "h<i>.mlp.w1"
//                         [C, 4C], "h<i>.mlp.w2" [4C, C]; then "lnf.g", "lnf.b" [C] and "head.w"
//                         [C, V] (not tied to wte). Linear weights are [in, out] like every model's.
//
// Layers are named conv1.., pool1.., fc1.. in order of appearance; a layer's parameters are
// "<layer>.w" then "<layer>.b". Shapes: linear w [in, out], b [out]; conv w [out, in, 3, 3], b
// [out].
#ifndef POLNODE_SOLVER_MODEL_SPEC_H_
#define POLNODE_SOLVER_MODEL_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/tensor.h"

namespace polnode::solver {

enum class LayerKind : std::uint8_t { kConv3x3, kMaxPool2x2, kLinear };

struct LayerSpec {
  LayerKind kind = LayerKind::kLinear;
  std::string name;          // "conv1", "pool1", "fc1"
  kernels::Shape in_shape;   // one sample's activation entering the layer: {C, H, W} or {F}
  kernels::Shape out_shape;  // and leaving it (after the ReLU, if any)
  bool relu = false;         // conv and hidden linear layers end in a ReLU
  bool flattens = false;     // a linear layer whose input is C x H x W, read as C*H*W features
  int weight_param = -1;     // index into ModelSpec::params (-1 for pooling)
  int bias_param = -1;
};

struct ParamSpec {
  std::string name;  // "fc1.w"
  kernels::Shape shape;
  std::int64_t fan_in = 0;  // inputs feeding one output: in features, or in channels * 9
  bool is_bias = false;
  bool feeds_relu = false;  // its layer ends in a ReLU (every layer but the last)
  /// GPT parameters (init.h): init_std > 0 draws U[-b, b) with b = init_std * sqrt(3) (standard
  /// deviation init_std); init_one starts every element at 1 (LayerNorm gains).
  float init_std = 0.0f;
  bool init_one = false;
  /// AdamW's weight decay skips this parameter (LayerNorm gains and shifts, as nanoGPT does).
  bool no_decay = false;
};

/// The sizes of a gpt: spec. vocab is 0 until the data fixes it (WithGptVocab).
struct GptConfig {
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t width = 0;
  std::int64_t context = 0;
  std::int64_t vocab = 0;
  std::int64_t head_dim() const { return width / heads; }
};

struct ModelSpec {
  std::string text;            // the spec as parsed (canonical: what was given)
  kernels::Shape input_shape;  // one sample: {IN} for mlp, {C, H, W} for cnn
  std::vector<LayerSpec> layers;
  std::vector<ParamSpec> params;  // canonical order: layer by layer, weight before bias
  /// Set for gpt: specs (layers is then empty; params is empty until the vocabulary is known).
  std::optional<GptConfig> gpt;

  /// Number of logits (the last layer's outputs; a GPT's vocabulary, per position).
  std::int64_t num_outputs() const { return gpt ? gpt->vocab : layers.back().out_shape[0]; }
};

/// Parses `text` by the grammar above. kInvalidArgument, with the offending token, for anything
/// else: an unknown prefix or token, a size of 0 or above the limits (65536 features, 4096
/// channels), a pool on a side smaller than 2, a conv or pool after a linear layer, or a missing
/// output size. A gpt: spec: kInvalidArgument for an unknown, repeated or missing key, a size of 0
/// or above the limits, or heads that do not divide the width; its params are filled only when it
/// names its vocab.
Result<ModelSpec> ParseModelSpec(std::string_view text);

/// A gpt: model with its vocabulary fixed to `vocab` symbols (the data's): the spec's own vocab when
/// it names one (kInvalidArgument when that is smaller than `vocab`), else `vocab`; params filled.
/// kInvalidArgument for a model that is not a GPT or a vocab outside 1..256.
Result<ModelSpec> WithGptVocab(ModelSpec model, std::int64_t vocab);

/// True when `text` names a GPT (starts with "gpt:"), whatever follows.
bool IsGptSpec(std::string_view text);

/// The batch input's shape for `batch` samples: {batch, IN} or {batch, C, H, W}.
kernels::Shape BatchInputShape(const ModelSpec& model, std::int64_t batch);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_MODEL_SPEC_H_
