#include "gpu/train_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/kernels/detmath.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels::train_check {
namespace {

using Values = std::map<std::string, Tensor, std::less<>>;

// splitmix64's finaliser: the synthetic data and the initial state are pure functions of a key.
std::uint64_t Mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from 24 bits of Mix(key).
float Unit(std::uint64_t key) { return static_cast<float>(Mix(key) >> 40) * 0x1p-24f; }

// A NaN reads as the canonical one, as in every hash.
std::uint32_t CanonicalBits(float v) { return v != v ? 0x7FC00000u : det::FloatBits(v); }

struct Param {
  std::string name;
  Shape shape;
  std::int64_t fan_in;  // 0: a bias, initialised to +0.0f
};

std::vector<Param> ParamsOf(const Spec& s) {
  if (s.model == Model::kMlp) {
    const std::int64_t in = s.side * s.side;
    return {{"w1", {in, s.hidden1}, in},           {"b1", {s.hidden1}, 0},
            {"w2", {s.hidden1, s.hidden2}, s.hidden1}, {"b2", {s.hidden2}, 0},
            {"w3", {s.hidden2, s.classes}, s.hidden2}, {"b3", {s.classes}, 0}};
  }
  const std::int64_t flat = s.hidden2 * (s.side / 4) * (s.side / 4);
  return {{"k1", {s.hidden1, 1, 3, 3}, 9},  {"kb1", {s.hidden1}, 0}, {"k2", {s.hidden2, s.hidden1, 3, 3}, 9 * s.hidden1},
          {"kb2", {s.hidden2}, 0},          {"w", {flat, s.classes}, flat}, {"b", {s.classes}, 0}};
}

// The optimizer buffers of parameter `name`: SGD's velocity, AdamW's two moments.
std::vector<std::string> BuffersOf(const Spec& s, const std::string& name) {
  if (s.model == Model::kMlp) return {name + ".v"};
  return {name + ".m", name + ".v"};
}

Values InitialState(const Spec& s) {
  Values state;
  std::uint64_t key = 1;
  for (const Param& p : ParamsOf(s)) {
    Tensor t(p.shape);
    if (p.fan_in > 0) {
      const float bound = 1.0f / std::sqrt(static_cast<float>(p.fan_in));
      for (float& v : t.values()) v = (2.0f * Unit(key++) - 1.0f) * bound;
    }
    for (const std::string& b : BuffersOf(s, p.name)) state.emplace(b, Tensor(p.shape));
    state.emplace(p.name, std::move(t));
  }
  return state;
}

class Trainer {
 public:
  Trainer(Backend& backend, const Spec& spec, Values state)
      : backend_(backend), spec_(spec), values_(std::move(state)) {
    for (const auto& [name, tensor] : values_) state_names_.push_back(name);
  }

  const Values& values() const { return values_; }
  const std::vector<std::string>& state_names() const { return state_names_; }

  // Step t (t steps done before it); returns its loss.
  Result<float> Step(std::int64_t t) {
    SetBatch(t);
    if (spec_.model == Model::kMlp) {
      POLNODE_RETURN_IF_ERROR(MlpStep());
    } else {
      POLNODE_RETURN_IF_ERROR(CnnStep(t));
    }
    return values_["loss"].data()[0];
  }

 private:
  Status Run(Op op, const OpAttrs& attrs, std::initializer_list<std::string_view> in,
             std::initializer_list<std::string_view> out) {
    std::vector<const Tensor*> inputs;
    for (std::string_view name : in) {
      const auto it = values_.find(name);
      if (it == values_.end()) return Status::Internal("train check: " + std::string(name) + " was never computed");
      inputs.push_back(&it->second);
    }
    std::vector<Tensor*> outputs;
    for (std::string_view name : out) outputs.push_back(&values_[std::string(name)]);
    return backend_.Run(op, attrs, inputs, outputs);
  }

  Status Run(Op op, std::initializer_list<std::string_view> in, std::initializer_list<std::string_view> out) {
    return Run(op, OpAttrs{}, in, out);
  }

  // Step t's batch: one of eight fixed batches, so the loss falls as training goes on.
  void SetBatch(std::int64_t t) {
    const std::uint64_t batch_key = 0x5EED0000ull + static_cast<std::uint64_t>(t % 8) * 0x100000000ull;
    Tensor& x = values_["x"];
    x.Resize(spec_.model == Model::kMlp ? Shape{spec_.batch, spec_.side * spec_.side}
                                        : Shape{spec_.batch, 1, spec_.side, spec_.side});
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = Unit(batch_key + static_cast<std::uint64_t>(i));
    Tensor& labels = values_["labels"];
    labels.Resize({spec_.batch});
    for (std::int64_t b = 0; b < spec_.batch; ++b) {
      const std::uint64_t label = Mix(batch_key ^ (0xABCDull + static_cast<std::uint64_t>(b))) %
                                  static_cast<std::uint64_t>(spec_.classes);
      labels.data()[b] = static_cast<float>(label);
    }
  }

  // The loss and its gradient dz from logits z.
  Status Loss() {
    POLNODE_RETURN_IF_ERROR(Run(Op::kSoftmaxCrossEntropy, {"z", "labels"}, {"loss", "p"}));
    return Run(Op::kSoftmaxCrossEntropyGrad, {"p", "labels"}, {"dz"});
  }

  Status MlpStep() {
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmul, {"x", "w1"}, {"a1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasAdd, {"a1", "b1"}, {"p1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kRelu, {"p1"}, {"h1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmul, {"h1", "w2"}, {"a2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasAdd, {"a2", "b2"}, {"p2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kRelu, {"p2"}, {"h2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmul, {"h2", "w3"}, {"a3"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasAdd, {"a3", "b3"}, {"z"}));
    POLNODE_RETURN_IF_ERROR(Loss());
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradB, {"h2", "dz"}, {"w3.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasGrad, {"dz"}, {"b3.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradA, {"dz", "w3"}, {"dh2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kReluGrad, {"p2", "dh2"}, {"dp2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradB, {"h1", "dp2"}, {"w2.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasGrad, {"dp2"}, {"b2.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradA, {"dp2", "w2"}, {"dh1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kReluGrad, {"p1", "dh1"}, {"dp1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradB, {"x", "dp1"}, {"w1.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasGrad, {"dp1"}, {"b1.g"}));
    OpAttrs sgd;
    sgd.lr = 0.05f;
    sgd.momentum = 0.9f;
    sgd.weight_decay = 1e-4f;
    for (const Param& p : ParamsOf(spec_)) {
      const std::string g = p.name + ".g", v = p.name + ".v";
      POLNODE_RETURN_IF_ERROR(Run(Op::kSgdMomentum, sgd, {p.name, g, v}, {p.name, v}));
    }
    return Status::Ok();
  }

  Status CnnStep(std::int64_t t) {
    const std::int64_t half = spec_.side / 2, quarter = spec_.side / 4;
    POLNODE_RETURN_IF_ERROR(Run(Op::kConv2d3x3, {"x", "k1"}, {"c1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasAdd, {"c1", "kb1"}, {"q1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kRelu, {"q1"}, {"r1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMaxPool2x2, {"r1"}, {"m1", "arg1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kConv2d3x3, {"m1", "k2"}, {"c2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasAdd, {"c2", "kb2"}, {"q2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kRelu, {"q2"}, {"r2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMaxPool2x2, {"r2"}, {"m2", "arg2"}));
    // The flatten is a view in the solver's graph; here a copy under the other shape.
    values_["flat"] = values_["m2"];
    POLNODE_RETURN_IF_ERROR(values_["flat"].Reshape({spec_.batch, spec_.hidden2 * quarter * quarter}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmul, {"flat", "w"}, {"a"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasAdd, {"a", "b"}, {"z"}));
    POLNODE_RETURN_IF_ERROR(Loss());
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradB, {"flat", "dz"}, {"w.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasGrad, {"dz"}, {"b.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kMatmulGradA, {"dz", "w"}, {"dflat"}));
    values_["dm2"] = values_["dflat"];
    POLNODE_RETURN_IF_ERROR(values_["dm2"].Reshape({spec_.batch, spec_.hidden2, quarter, quarter}));
    OpAttrs pool2;
    pool2.pool_input_h = pool2.pool_input_w = half;
    POLNODE_RETURN_IF_ERROR(Run(Op::kMaxPool2x2Grad, pool2, {"arg2", "dm2"}, {"dr2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kReluGrad, {"q2", "dr2"}, {"dq2"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasGrad, {"dq2"}, {"kb2.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kConv2d3x3GradWeight, {"m1", "dq2"}, {"k2.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kConv2d3x3GradInput, {"dq2", "k2"}, {"dm1"}));
    OpAttrs pool1;
    pool1.pool_input_h = pool1.pool_input_w = spec_.side;
    POLNODE_RETURN_IF_ERROR(Run(Op::kMaxPool2x2Grad, pool1, {"arg1", "dm1"}, {"dr1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kReluGrad, {"q1", "dr1"}, {"dq1"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kBiasGrad, {"dq1"}, {"kb1.g"}));
    POLNODE_RETURN_IF_ERROR(Run(Op::kConv2d3x3GradWeight, {"x", "dq1"}, {"k1.g"}));
    OpAttrs adam;
    adam.lr = 1e-3f;
    adam.weight_decay = 0.01f;
    adam.bias_correction1 = AdamBiasCorrection(adam.beta1, t + 1);
    adam.bias_correction2 = AdamBiasCorrection(adam.beta2, t + 1);
    for (const Param& p : ParamsOf(spec_)) {
      const std::string g = p.name + ".g", m = p.name + ".m", v = p.name + ".v";
      POLNODE_RETURN_IF_ERROR(Run(Op::kAdamW, adam, {p.name, g, m, v}, {p.name, m, v}));
    }
    return Status::Ok();
  }

  Backend& backend_;
  Spec spec_;
  Values values_;
  std::vector<std::string> state_names_;
};

std::string BitsText(float v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(v), det::FloatBits(v));
  return buf;
}

// Empty when every state tensor of both runs agrees (NaN matching NaN); else the first difference.
std::string FirstDifference(const Trainer& got, const Trainer& want) {
  for (const std::string& name : want.state_names()) {
    const Tensor& g = got.values().at(name);
    const Tensor& w = want.values().at(name);
    if (g.shape() != w.shape()) return name + " has shape " + ShapeToString(g.shape()) + ", not " + ShapeToString(w.shape());
    for (std::int64_t e = 0; e < w.numel(); ++e) {
      if (CanonicalBits(g.data()[e]) != CanonicalBits(w.data()[e])) {
        return name + " element " + std::to_string(e) + ": " + BitsText(g.data()[e]) + " vs the reference's " +
               BitsText(w.data()[e]);
      }
    }
  }
  return "";
}

std::uint64_t Digest(const Trainer& run) {
  std::uint64_t h = 1469598103934665603ull;
  for (const std::string& name : run.state_names()) {
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    for (float v : run.values().at(name).values()) {
      const std::uint32_t bits = CanonicalBits(v);
      for (int byte = 0; byte < 4; ++byte) h = (h ^ ((bits >> (8 * byte)) & 0xFFu)) * 1099511628211ull;
    }
  }
  return h;
}

Status CheckSpec(const Spec& s) {
  if (s.batch < 1 || s.side < 1 || s.hidden1 < 1 || s.hidden2 < 1 || s.classes < 1) {
    return Status::InvalidArgument("train check: every size must be at least 1 (" + Describe(s) + ")");
  }
  if (s.model == Model::kCnn && s.side % 4 != 0) {
    return Status::InvalidArgument("train check: a CNN's side must be a multiple of 4, not " + std::to_string(s.side));
  }
  return Status::Ok();
}

}  // namespace

std::string Describe(const Spec& s) {
  const std::string batch = ", batch " + std::to_string(s.batch);
  if (s.model == Model::kMlp) {
    return "mlp " + std::to_string(s.side * s.side) + "-" + std::to_string(s.hidden1) + "-" + std::to_string(s.hidden2) +
           "-" + std::to_string(s.classes) + " sgd" + batch;
  }
  return "cnn 1x" + std::to_string(s.side) + "x" + std::to_string(s.side) + " c" + std::to_string(s.hidden1) + "-p-c" +
         std::to_string(s.hidden2) + "-p-" + std::to_string(s.classes) + " adamw" + batch;
}

Result<Outcome> CompareTraining(Backend& candidate, Backend& reference, const Spec& spec, std::int64_t steps) {
  POLNODE_RETURN_IF_ERROR(CheckSpec(spec));
  if (steps < 1) return Status::InvalidArgument("train check: steps must be at least 1, not " + std::to_string(steps));
  const Values initial = InitialState(spec);
  Trainer got(candidate, spec, initial);
  Trainer want(reference, spec, initial);
  Outcome outcome;
  using Clock = std::chrono::steady_clock;
  for (std::int64_t t = 0; t < steps; ++t) {
    const Clock::time_point start = Clock::now();
    Result<float> got_loss = got.Step(t);
    const Clock::time_point middle = Clock::now();
    Result<float> want_loss = want.Step(t);
    outcome.candidate_seconds += std::chrono::duration<double>(middle - start).count();
    outcome.reference_seconds += std::chrono::duration<double>(Clock::now() - middle).count();
    if (!want_loss.ok()) return want_loss.status();
    if (!got_loss.ok()) return got_loss.status();
    if (t == 0) outcome.first_loss = *want_loss;
    outcome.last_loss = *want_loss;
    std::string detail = FirstDifference(got, want);
    if (detail.empty() && CanonicalBits(*got_loss) != CanonicalBits(*want_loss)) {
      detail = "loss " + BitsText(*got_loss) + " vs the reference's " + BitsText(*want_loss);
    }
    if (!detail.empty()) {
      outcome.first_difference = t + 1;
      outcome.detail = std::move(detail);
      break;
    }
  }
  outcome.candidate_digest = Digest(got);
  outcome.reference_digest = Digest(want);
  return outcome;
}

}  // namespace polnode::kernels::train_check
