#include "polnode/solver/model_spec.h"

#include <charconv>
#include <cmath>
#include <string>

namespace polnode::solver {
namespace {

constexpr std::int64_t kMaxFeatures = 65536;
constexpr std::int64_t kMaxChannels = 4096;
constexpr std::int64_t kMaxSide = 4096;
// Bounds on what a spec may ask for, so a hostile spec cannot demand absurd allocations.
constexpr std::int64_t kMaxParamElements = std::int64_t{1} << 28;
constexpr std::int64_t kMaxActivationElements = std::int64_t{1} << 24;  // one sample, one layer

std::vector<std::string_view> SplitDashes(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dash = s.find('-', start);
    parts.push_back(s.substr(start, dash == std::string_view::npos ? dash : dash - start));
    if (dash == std::string_view::npos) return parts;
    start = dash + 1;
  }
}

Status BadSpec(std::string_view text, std::string why) {
  return Status::InvalidArgument("model spec '" + std::string(text) + "': " + why);
}

// A decimal size in [1, max]; nullopt-like 0 for anything else.
std::int64_t ParseSize(std::string_view digits, std::int64_t max) {
  if (digits.empty()) return 0;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v < 1 || v > max) return 0;
  return v;
}

std::string Numbered(const char* base, int n) { return base + std::to_string(n); }

// Appends a linear layer from the current activation shape to `out` features.
void AddLinear(ModelSpec& m, const kernels::Shape& in_shape, std::int64_t out, bool relu,
               int index) {
  LayerSpec l;
  l.kind = LayerKind::kLinear;
  l.name = Numbered("fc", index);
  l.in_shape = in_shape;
  l.out_shape = {out};
  l.relu = relu;
  l.flattens = in_shape.size() > 1;
  const std::int64_t in = kernels::NumElements(in_shape);
  l.weight_param = static_cast<int>(m.params.size());
  m.params.push_back({l.name + ".w", {in, out}, in, false, relu});
  l.bias_param = static_cast<int>(m.params.size());
  m.params.push_back({l.name + ".b", {out}, in, true, relu});
  m.layers.push_back(std::move(l));
}

Result<ModelSpec> ParseMlp(std::string_view text, std::string_view body) {
  ModelSpec m;
  m.text = std::string(text);
  const std::vector<std::string_view> tokens = SplitDashes(body);
  if (tokens.size() < 2) return BadSpec(text, "an mlp needs at least an input and an output size");
  std::vector<std::int64_t> sizes;
  for (std::string_view t : tokens) {
    const std::int64_t v = ParseSize(t, kMaxFeatures);
    if (v == 0) {
      return BadSpec(text, "'" + std::string(t) + "' is not a layer size in 1.." +
                               std::to_string(kMaxFeatures));
    }
    sizes.push_back(v);
  }
  m.input_shape = {sizes[0]};
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    AddLinear(m, {sizes[i - 1]}, sizes[i], i + 1 < sizes.size(), static_cast<int>(i));
  }
  return m;
}

// "i1x28x28" -> {1, 28, 28}; empty shape if malformed.
kernels::Shape ParseInputToken(std::string_view t) {
  if (t.size() < 2 || t[0] != 'i') return {};
  kernels::Shape shape;
  std::string_view rest = t.substr(1);
  for (int i = 0; i < 3; ++i) {
    const std::size_t x = rest.find('x');
    const std::string_view part = i < 2 ? rest.substr(0, x) : rest;
    if (i < 2 && x == std::string_view::npos) return {};
    const std::int64_t v = ParseSize(part, i == 0 ? kMaxChannels : kMaxSide);
    if (v == 0) return {};
    shape.push_back(v);
    if (i < 2) rest = rest.substr(x + 1);
  }
  return shape;
}

Result<ModelSpec> ParseCnn(std::string_view text, std::string_view body) {
  ModelSpec m;
  m.text = std::string(text);
  std::vector<std::string_view> tokens = SplitDashes(body);
  m.input_shape = {1, 28, 28};
  std::size_t first = 0;
  if (!tokens.empty() && !tokens[0].empty() && tokens[0][0] == 'i') {
    m.input_shape = ParseInputToken(tokens[0]);
    if (m.input_shape.empty()) {
      return BadSpec(text, "'" + std::string(tokens[0]) + "' is not an input shape like i1x28x28");
    }
    first = 1;
  }
  if (tokens.size() <= first) return BadSpec(text, "a cnn needs at least an output size");
  kernels::Shape shape = m.input_shape;
  int convs = 0, pools = 0, linears = 0;
  for (std::size_t i = first; i < tokens.size(); ++i) {
    const std::string_view t = tokens[i];
    const bool last = i + 1 == tokens.size();
    const auto bad = [&](const std::string& why) {
      return BadSpec(text, "token '" + std::string(t) + "': " + why);
    };
    if (last) {
      const std::int64_t out = ParseSize(t, kMaxFeatures);
      if (out == 0)
        return bad("the last token must be the number of outputs (1.." +
                   std::to_string(kMaxFeatures) + ")");
      AddLinear(m, shape, out, false, ++linears);
      break;
    }
    if (t == "p") {
      if (linears > 0) return bad("pooling after a linear layer");
      if (shape[1] < 2 || shape[2] < 2) return bad("pooling needs a side of at least 2");
      LayerSpec l;
      l.kind = LayerKind::kMaxPool2x2;
      l.name = Numbered("pool", ++pools);
      l.in_shape = shape;
      shape = {shape[0], shape[1] / 2, shape[2] / 2};
      l.out_shape = shape;
      m.layers.push_back(std::move(l));
    } else if (!t.empty() && t[0] == 'c') {
      if (linears > 0) return bad("a convolution after a linear layer");
      const std::int64_t out = ParseSize(t.substr(1), kMaxChannels);
      if (out == 0) return bad("channels must be 1.." + std::to_string(kMaxChannels));
      LayerSpec l;
      l.kind = LayerKind::kConv3x3;
      l.name = Numbered("conv", ++convs);
      l.in_shape = shape;
      shape = {out, shape[1], shape[2]};
      l.out_shape = shape;
      l.relu = true;
      l.weight_param = static_cast<int>(m.params.size());
      m.params.push_back(
          {l.name + ".w", {out, l.in_shape[0], 3, 3}, l.in_shape[0] * 9, false, true});
      l.bias_param = static_cast<int>(m.params.size());
      m.params.push_back({l.name + ".b", {out}, l.in_shape[0] * 9, true, true});
      m.layers.push_back(std::move(l));
    } else if (!t.empty() && t[0] == 'f') {
      const std::int64_t out = ParseSize(t.substr(1), kMaxFeatures);
      if (out == 0) return bad("features must be 1.." + std::to_string(kMaxFeatures));
      AddLinear(m, shape, out, true, ++linears);
      shape = {out};
    } else {
      return bad("expected cK, p, fK or (last) the output size");
    }
  }
  return m;
}

constexpr std::int64_t kMaxGptLayers = 64;
constexpr std::int64_t kMaxGptWidth = 4096;
constexpr std::int64_t kMaxGptContext = 4096;
constexpr std::int64_t kMaxGptVocab = 256;  // byte-level: a symbol is one byte

// Fills a GPT's parameters for its (known) vocabulary; see model_spec.h for names and shapes.
void AddGptParams(ModelSpec& m) {
  const GptConfig& g = *m.gpt;
  const std::int64_t c = g.width;
  // nanoGPT's initialisation: standard deviation 0.02, residual projections 0.02 / sqrt(2 L).
  const float std_main = 0.02f;
  const float std_proj = 0.02f / std::sqrt(2.0f * static_cast<float>(g.layers));
  const auto weight = [&](std::string name, kernels::Shape shape, float sd) {
    ParamSpec p;
    p.name = std::move(name);
    p.fan_in = shape[0];
    p.shape = std::move(shape);
    p.init_std = sd;
    m.params.push_back(std::move(p));
  };
  const auto norm = [&](const std::string& prefix) {
    ParamSpec gain;
    gain.name = prefix + ".g";
    gain.shape = {c};
    gain.fan_in = c;
    gain.init_one = true;
    gain.no_decay = true;
    m.params.push_back(gain);
    ParamSpec shift = gain;
    shift.name = prefix + ".b";
    shift.init_one = false;
    shift.is_bias = true;
    m.params.push_back(shift);
  };
  weight("wte", {g.vocab, c}, std_main);
  weight("wpe", {g.context * c}, std_main);
  for (std::int64_t i = 0; i < g.layers; ++i) {
    const std::string h = "h" + std::to_string(i);
    norm(h + ".ln1");
    weight(h + ".attn.wq", {c, c}, std_main);
    weight(h + ".attn.wk", {c, c}, std_main);
    weight(h + ".attn.wv", {c, c}, std_main);
    weight(h + ".attn.wo", {c, c}, std_proj);
    norm(h + ".ln2");
    weight(h + ".mlp.w1", {c, 4 * c}, std_main);
    weight(h + ".mlp.w2", {4 * c, c}, std_proj);
  }
  norm("lnf");
  weight("head.w", {c, g.vocab}, std_main);
}

Result<ModelSpec> ParseGpt(std::string_view text, std::string_view body) {
  ModelSpec m;
  m.text = std::string(text);
  GptConfig g;
  struct Key {
    std::string_view name;
    std::int64_t* value;
    std::int64_t max;
    bool required;
  };
  Key keys[] = {{"layers", &g.layers, kMaxGptLayers, true},
                {"heads", &g.heads, kMaxGptWidth, true},
                {"width", &g.width, kMaxGptWidth, true},
                {"context", &g.context, kMaxGptContext, true},
                {"vocab", &g.vocab, kMaxGptVocab, false}};
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = body.find(',', start);
    const std::string_view item =
        body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return BadSpec(text, "'" + std::string(item) + "' is not KEY=VALUE (keys: layers, heads, "
                                                     "width, context, vocab)");
    }
    const std::string_view name = item.substr(0, eq);
    Key* key = nullptr;
    for (Key& k : keys) {
      if (k.name == name) key = &k;
    }
    if (key == nullptr) {
      return BadSpec(text, "unknown key '" + std::string(name) +
                               "' (keys: layers, heads, width, context, vocab)");
    }
    if (*key->value != 0) return BadSpec(text, "key '" + std::string(name) + "' given twice");
    *key->value = ParseSize(item.substr(eq + 1), key->max);
    if (*key->value == 0) {
      return BadSpec(text, std::string(name) + " must be an integer in 1.." +
                               std::to_string(key->max) + ", got '" +
                               std::string(item.substr(eq + 1)) + "'");
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (const Key& k : keys) {
    if (k.required && *k.value == 0) return BadSpec(text, "missing key '" + std::string(k.name) + "'");
  }
  if (g.width % g.heads != 0) {
    return BadSpec(text, "heads (" + std::to_string(g.heads) + ") must divide width (" +
                             std::to_string(g.width) + ")");
  }
  // One sample's largest activations: the attention scores [H, T, T] and the MLP's [T, 4C].
  if (g.heads * g.context * g.context > kMaxActivationElements ||
      g.context * 4 * g.width > kMaxActivationElements) {
    return BadSpec(text, "attention scores or MLP activations per sample exceed " +
                             std::to_string(kMaxActivationElements) + " elements");
  }
  m.input_shape = {g.context};
  m.gpt = g;
  if (g.vocab > 0) AddGptParams(m);
  return m;
}

}  // namespace

Result<ModelSpec> ParseModelSpec(std::string_view text) {
  Result<ModelSpec> parsed = BadSpec(text, "must start with 'mlp:', 'cnn:' or 'gpt:'");
  if (text.starts_with("mlp:")) parsed = ParseMlp(text, text.substr(4));
  if (text.starts_with("cnn:")) parsed = ParseCnn(text, text.substr(4));
  if (IsGptSpec(text)) parsed = ParseGpt(text, text.substr(4));
  if (!parsed.ok()) return parsed;
  for (const LayerSpec& l : parsed->layers) {
    if (kernels::NumElements(l.out_shape) > kMaxActivationElements) {
      return BadSpec(text, l.name + " produces " + kernels::ShapeToString(l.out_shape) +
                               " per sample, more than " + std::to_string(kMaxActivationElements));
    }
  }
  for (const ParamSpec& p : parsed->params) {
    if (kernels::NumElements(p.shape) > kMaxParamElements) {
      return BadSpec(text, p.name + " would have " + std::to_string(kernels::NumElements(p.shape)) +
                               " elements, more than " + std::to_string(kMaxParamElements));
    }
  }
  return parsed;
}

Result<ModelSpec> WithGptVocab(ModelSpec model, std::int64_t vocab) {
  if (!model.gpt) return BadSpec(model.text, "not a gpt: model, so it takes no vocabulary");
  if (vocab < 1 || vocab > kMaxGptVocab) {
    return BadSpec(model.text, "vocabulary of " + std::to_string(vocab) + " symbols, must be 1.." +
                                   std::to_string(kMaxGptVocab));
  }
  if (model.gpt->vocab != 0) {
    if (model.gpt->vocab < vocab) {
      return BadSpec(model.text, "vocab " + std::to_string(model.gpt->vocab) +
                                     " is smaller than the data's " + std::to_string(vocab) +
                                     " symbols");
    }
    return model;
  }
  model.gpt->vocab = vocab;
  AddGptParams(model);
  return model;
}

bool IsGptSpec(std::string_view text) { return text.starts_with("gpt:"); }

kernels::Shape BatchInputShape(const ModelSpec& model, std::int64_t batch) {
  kernels::Shape shape = {batch};
  shape.insert(shape.end(), model.input_shape.begin(), model.input_shape.end());
  return shape;
}

}  // namespace polnode::solver
