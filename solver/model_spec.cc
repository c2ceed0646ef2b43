#include "polnode/solver/model_spec.h"

#include <charconv>
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

}  // namespace

Result<ModelSpec> ParseModelSpec(std::string_view text) {
  Result<ModelSpec> parsed = BadSpec(text, "must start with 'mlp:' or 'cnn:'");
  if (text.starts_with("mlp:")) parsed = ParseMlp(text, text.substr(4));
  if (text.starts_with("cnn:")) parsed = ParseCnn(text, text.substr(4));
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

kernels::Shape BatchInputShape(const ModelSpec& model, std::int64_t batch) {
  kernels::Shape shape = {batch};
  shape.insert(shape.end(), model.input_shape.begin(), model.input_shape.end());
  return shape;
}

}  // namespace polnode::solver
