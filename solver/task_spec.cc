#include "polnode/solver/task_spec.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "polnode/consensus/encoding.h"
#include "polnode/pol.pb.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/onnx_model.h"

namespace polnode::solver {
namespace {

constexpr std::string_view kTaskDomain = "polnode/pol-task/v1";
constexpr std::string_view kScheduleTag = "lr-schedule/v1";
constexpr std::string_view kGradClipTag = "grad-clip/v1";

Result<ReproMode> ParseMode(std::string_view name) {
  if (name == "exact") return ReproMode::kExact;
  if (name == "tolerant") return ReproMode::kTolerant;
  return Status::InvalidArgument("mode must be \"exact\" or \"tolerant\", not \"" + std::string(name) + "\"");
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// One TOML value as written: a string (quotes removed) or a bare number.
struct TomlValue {
  bool is_string = false;
  std::string text;
  int line = 0;
};

Status LineError(int line, const std::string& what) {
  return Status::InvalidArgument("task line " + std::to_string(line) + ": " + what);
}

Result<std::map<std::string, TomlValue, std::less<>>> ReadPairs(std::string_view text) {
  std::map<std::string, TomlValue, std::less<>> pairs;
  int line_no = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_no;
    // A '#' outside a string starts a comment; strings have no escapes, so the first quote
    // pair is the whole string.
    const std::size_t quote = line.find('"');
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos && (quote == std::string_view::npos || hash < quote)) {
      line = line.substr(0, hash);
    }
    line = Trim(line);
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) return LineError(line_no, "expected key = value");
    const std::string key(Trim(line.substr(0, eq)));
    std::string_view value = Trim(line.substr(eq + 1));
    if (key.empty() || key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") != std::string::npos) {
      return LineError(line_no, "bad key '" + key + "'");
    }
    TomlValue v;
    v.line = line_no;
    if (!value.empty() && value.front() == '"') {
      const std::size_t close = value.find('"', 1);
      if (close == std::string_view::npos) return LineError(line_no, "unterminated string");
      std::string_view after = value.substr(close + 1);
      const std::size_t comment = after.find('#');
      if (!Trim(after.substr(0, comment)).empty()) return LineError(line_no, "text after the string");
      v.is_string = true;
      v.text = std::string(value.substr(1, close - 1));
    } else {
      if (value.empty()) return LineError(line_no, "missing value");
      v.text = std::string(value);
    }
    if (!pairs.emplace(key, std::move(v)).second) return LineError(line_no, "repeated key '" + key + "'");
  }
  return pairs;
}

template <typename T>
Result<T> ParseNumber(const TomlValue& v, std::string_view key) {
  T out{};
  if (v.is_string) return LineError(v.line, std::string(key) + " must be a number, not a string");
  const char* first = v.text.data();
  const char* last = first + v.text.size();
  if (!v.text.empty() && *first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec != std::errc() || ptr != last) return LineError(v.line, std::string(key) + ": bad number '" + v.text + "'");
  return out;
}

void WriteCanonical(consensus::Writer& w, const TaskSpec& t) {
  w.String(kTaskDomain);
  w.String(t.model);
  w.Fixed(t.dataset_hash);
  w.String(OptimizerName(t.optimizer.kind));
  w.F32(t.optimizer.lr);
  w.F32(t.optimizer.momentum);
  w.F32(t.optimizer.weight_decay);
  w.F32(t.optimizer.beta1);
  w.F32(t.optimizer.beta2);
  w.F32(t.optimizer.eps);
  w.I64(t.batch);
  w.I64(t.steps);
  w.I64(t.checkpoint_interval);
  w.U64(t.seed);
  w.String(ReproModeName(t.mode));
  w.I64(t.segments_per_check);
  // A constant learning rate and no clipping add nothing, so the ids of tasks from before these
  // existed stay.
  if (HasLrSchedule(t.optimizer)) {
    w.String(kScheduleTag);
    w.I64(t.optimizer.warmup_steps);
    w.I64(t.optimizer.decay_steps);
    w.F32(t.optimizer.min_lr);
  }
  if (t.optimizer.grad_clip != 0.0f) {
    w.String(kGradClipTag);
    w.F32(t.optimizer.grad_clip);
  }
}

}  // namespace

std::string_view ReproModeName(ReproMode mode) { return mode == ReproMode::kExact ? "exact" : "tolerant"; }

Status ValidateTask(const TaskSpec& t) {
  if (IsOnnxModel(t.model)) {
    POLNODE_RETURN_IF_ERROR(OnnxModelHash(t.model).status().WithContext("task model"));
  } else {
    Result<ModelSpec> model = ParseModelSpec(t.model);
    if (!model.ok()) return model.status().WithContext("task model");
  }
  POLNODE_RETURN_IF_ERROR(ValidateOptimizer(t.optimizer).WithContext("task optimizer"));
  if (t.batch < 1 || t.steps < 1 || t.checkpoint_interval < 1) {
    return Status::InvalidArgument("task batch, steps and checkpoint_interval must be >= 1");
  }
  if (t.steps % t.checkpoint_interval != 0) {
    return Status::InvalidArgument("task steps (" + std::to_string(t.steps) +
                                   ") must be a multiple of checkpoint_interval (" +
                                   std::to_string(t.checkpoint_interval) + ")");
  }
  const std::int64_t segments = t.steps / t.checkpoint_interval;
  if (segments >= kMaxCheckpoints) return Status::InvalidArgument("task has too many checkpoints");
  if (t.segments_per_check < 1 || t.segments_per_check > segments) {
    return Status::InvalidArgument("task segments must be in 1.." + std::to_string(segments));
  }
  return Status::Ok();
}

Result<TaskSpec> ParseTaskToml(std::string_view text) {
  if (text.size() > kMaxTaskBytes) return Status::ResourceExhausted("task file larger than 64 KiB");
  POLNODE_ASSIGN_OR_RETURN(auto pairs, ReadPairs(text));
  static const std::set<std::string, std::less<>> kKnown = {
      "model", "model_file", "data", "dataset_hash", "optimizer", "lr", "momentum", "weight_decay", "beta1",
      "beta2", "eps", "batch", "steps", "checkpoint_interval", "seed", "mode", "segments",
      "warmup_steps", "lr_decay_steps", "min_lr", "grad_clip"};
  for (const auto& [key, value] : pairs) {
    if (!kKnown.contains(key)) return LineError(value.line, "unknown key '" + key + "'");
  }
  for (std::string_view required : {"model", "dataset_hash", "batch", "steps", "checkpoint_interval", "seed"}) {
    if (!pairs.contains(required)) return Status::InvalidArgument("task is missing '" + std::string(required) + "'");
  }
  auto string_of = [&](std::string_view key, std::string fallback) -> Result<std::string> {
    auto it = pairs.find(key);
    if (it == pairs.end()) return fallback;
    if (!it->second.is_string) return LineError(it->second.line, std::string(key) + " must be a \"string\"");
    return it->second.text;
  };
  TaskSpec t;
  POLNODE_ASSIGN_OR_RETURN(t.model, string_of("model", ""));
  POLNODE_ASSIGN_OR_RETURN(t.model_location, string_of("model_file", ""));
  POLNODE_ASSIGN_OR_RETURN(t.data_location, string_of("data", "fashion-mnist"));
  POLNODE_ASSIGN_OR_RETURN(std::string hash_hex, string_of("dataset_hash", ""));
  POLNODE_ASSIGN_OR_RETURN(t.dataset_hash, consensus::HashFromHex(hash_hex));
  POLNODE_ASSIGN_OR_RETURN(std::string optimizer, string_of("optimizer", "sgd"));
  POLNODE_ASSIGN_OR_RETURN(t.optimizer.kind, ParseOptimizerKind(optimizer));
  t.optimizer.lr = DefaultLearningRate(t.optimizer.kind);  // unless the file gives one (below)
  POLNODE_ASSIGN_OR_RETURN(std::string mode, string_of("mode", "exact"));
  POLNODE_ASSIGN_OR_RETURN(t.mode, ParseMode(mode));
  const std::pair<std::string_view, float*> floats[] = {
      {"lr", &t.optimizer.lr},       {"momentum", &t.optimizer.momentum},
      {"weight_decay", &t.optimizer.weight_decay}, {"beta1", &t.optimizer.beta1},
      {"beta2", &t.optimizer.beta2}, {"eps", &t.optimizer.eps}, {"min_lr", &t.optimizer.min_lr},
      {"grad_clip", &t.optimizer.grad_clip}};
  for (const auto& [key, out] : floats) {
    auto it = pairs.find(key);
    if (it != pairs.end()) {
      POLNODE_ASSIGN_OR_RETURN(*out, ParseNumber<float>(it->second, key));
    }
  }
  const std::pair<std::string_view, std::int64_t*> ints[] = {
      {"batch", &t.batch}, {"steps", &t.steps}, {"checkpoint_interval", &t.checkpoint_interval},
      {"segments", &t.segments_per_check}, {"warmup_steps", &t.optimizer.warmup_steps},
      {"lr_decay_steps", &t.optimizer.decay_steps}};
  for (const auto& [key, out] : ints) {
    auto it = pairs.find(key);
    if (it != pairs.end()) {
      POLNODE_ASSIGN_OR_RETURN(*out, ParseNumber<std::int64_t>(it->second, key));
    }
  }
  POLNODE_ASSIGN_OR_RETURN(t.seed, ParseNumber<std::uint64_t>(pairs.find("seed")->second, "seed"));
  POLNODE_RETURN_IF_ERROR(ValidateTask(t));
  return t;
}

std::string EncodeTaskProto(const TaskSpec& t) {
  pol::TaskSpec m;
  m.set_model(t.model);
  m.set_data_location(t.data_location);
  m.set_model_location(t.model_location);
  m.set_dataset_hash(t.dataset_hash.data(), t.dataset_hash.size());
  m.set_optimizer(std::string(OptimizerName(t.optimizer.kind)));
  m.set_lr(t.optimizer.lr);
  m.set_momentum(t.optimizer.momentum);
  m.set_weight_decay(t.optimizer.weight_decay);
  m.set_beta1(t.optimizer.beta1);
  m.set_beta2(t.optimizer.beta2);
  m.set_eps(t.optimizer.eps);
  m.set_batch(t.batch);
  m.set_steps(t.steps);
  m.set_checkpoint_interval(t.checkpoint_interval);
  m.set_seed(t.seed);
  m.set_mode(std::string(ReproModeName(t.mode)));
  m.set_segments_per_check(t.segments_per_check);
  m.set_warmup_steps(t.optimizer.warmup_steps);
  m.set_lr_decay_steps(t.optimizer.decay_steps);
  m.set_min_lr(t.optimizer.min_lr);
  m.set_grad_clip(t.optimizer.grad_clip);
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    // Serializing a message of plain scalar and string fields into a string cannot fail.
    static_cast<void>(m.SerializeToCodedStream(&coded));
  }
  return out;
}

Result<TaskSpec> DecodeTaskProto(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > kMaxTaskBytes) return Status::ResourceExhausted("task larger than 64 KiB");
  pol::TaskSpec m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("task bytes are not a polnode.pol.TaskSpec message");
  }
  if (m.dataset_hash().size() != 32) return Status::Corruption("task dataset_hash is not 32 bytes");
  TaskSpec t;
  t.model = m.model();
  t.data_location = m.data_location();
  t.model_location = m.model_location();
  std::copy(m.dataset_hash().begin(), m.dataset_hash().end(), t.dataset_hash.begin());
  Result<OptimizerKind> kind = ParseOptimizerKind(m.optimizer());
  if (!kind.ok()) return Status::Corruption("task optimizer: " + kind.status().message());
  t.optimizer.kind = *kind;
  t.optimizer.lr = m.lr();
  t.optimizer.momentum = m.momentum();
  t.optimizer.weight_decay = m.weight_decay();
  t.optimizer.beta1 = m.beta1();
  t.optimizer.beta2 = m.beta2();
  t.optimizer.eps = m.eps();
  t.batch = m.batch();
  t.steps = m.steps();
  t.checkpoint_interval = m.checkpoint_interval();
  t.seed = m.seed();
  Result<ReproMode> mode = ParseMode(m.mode());
  if (!mode.ok()) return Status::Corruption("task " + mode.status().message());
  t.mode = *mode;
  t.segments_per_check = m.segments_per_check();
  t.optimizer.warmup_steps = m.warmup_steps();
  t.optimizer.decay_steps = m.lr_decay_steps();
  t.optimizer.min_lr = m.min_lr();
  t.optimizer.grad_clip = m.grad_clip();
  POLNODE_RETURN_IF_ERROR(ValidateTask(t));
  return t;
}

consensus::Hash256 TaskId(const TaskSpec& task) {
  consensus::HashWriter w;
  WriteCanonical(w, task);
  return w.Finalize();
}

}  // namespace polnode::solver
