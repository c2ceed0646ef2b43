#include "polnode/roles/submitter_report.h"

#include <charconv>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "polnode/base/file_util.h"
#include "polnode/rpc/json.h"

namespace polnode::node {
namespace {

std::string Short(const std::string& hex) { return hex.size() > 16 ? hex.substr(0, 16) : hex; }

Result<std::uint64_t> ParseU64(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::Corruption("'" + std::string(text) + "' is not a number");
  }
  return value;
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  while (!line.empty()) {
    const std::size_t space = line.find(' ');
    if (space != 0) words.push_back(line.substr(0, space));
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
  }
  return words;
}

std::string FactsPath(const std::string& home, const std::string& task_id_hex) {
  return home + "/tasks/" + task_id_hex;
}

// What both forms must hold for a model: the state hash as FetchTrainedModel writes it and counts
// that make an accuracy in [0, 1]. Empty when they do.
std::string ModelFault(std::string_view state_hash, std::int64_t correct, std::int64_t total) {
  const bool hex = state_hash.find_first_not_of("0123456789abcdef") == std::string_view::npos;
  if (state_hash.empty() || state_hash.size() > kMaxStateHashHex || !hex) return "the model's state hash is not hex";
  if (correct < 0 || correct > total) return "the model's test counts are inconsistent";
  return "";
}

// The text form before the archive: "refund N" and "model STATE_HASH CORRECT TOTAL" lines. It
// cannot be mistaken for an archive, which starts with cereal's endianness byte (0 or 1).
Result<TaskFacts> DecodeText(std::string_view text) {
  TaskFacts facts;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string_view> words = Words(line);
    if (words.size() == 2 && words[0] == "refund") {
      POLNODE_ASSIGN_OR_RETURN(facts.refund, ParseU64(words[1]));
    } else if (words.size() == 4 && words[0] == "model") {
      DeliveredModel model;
      model.state_hash = std::string(words[1]);
      POLNODE_ASSIGN_OR_RETURN(std::uint64_t correct, ParseU64(words[2]));
      POLNODE_ASSIGN_OR_RETURN(std::uint64_t total, ParseU64(words[3]));
      constexpr std::uint64_t kMaxCount = std::numeric_limits<std::int64_t>::max();
      if (correct > kMaxCount || total > kMaxCount) return Status::Corruption("a test count is out of range");
      model.test_correct = static_cast<std::int64_t>(correct);
      model.test_total = static_cast<std::int64_t>(total);
      if (const std::string fault = ModelFault(model.state_hash, model.test_correct, model.test_total); !fault.empty()) {
        return Status::Corruption(fault);
      }
      facts.model = std::move(model);
    } else {
      return Status::Corruption("unexpected line '" + line.substr(0, 80) + "'");
    }
  }
  return facts;
}

}  // namespace

std::optional<std::int64_t> TaskReport::balance_change() const {
  if (!refund) return std::nullopt;
  return static_cast<std::int64_t>(*refund) - static_cast<std::int64_t>(cost);
}

std::string SubmitterReportJson(const SubmitterReport& report) {
  JsonWriter w;
  w.BeginObject().Field("submitter", report.submitter).Field("ledger", report.ledger).Key("balance");
  if (report.balance) {
    w.Uint(*report.balance);
  } else {
    w.Null();
  }
  w.Field("done", report.done).Key("tasks").BeginArray();
  for (const TaskReport& t : report.tasks) {
    w.BeginObject()
        .Field("file", t.file)
        .Field("document_hash", t.document_hash)
        .Field("spec_uri", t.spec_uri)
        .Field("task_id", t.task_id)
        .Field("status", t.status)
        .Field("outcome", t.outcome)
        .Field("payment", t.payment)
        .Field("cost", t.cost)
        .Key("refund");
    if (t.refund) {
      w.Uint(*t.refund);
    } else {
      w.Null();
    }
    w.Key("balance_change");
    if (std::optional<std::int64_t> change = t.balance_change()) {
      w.Int(*change);
    } else {
      w.Null();
    }
    w.Field("submit_height", t.submit_height).Field("settle_height", t.settle_height).Key("seconds_to_settle");
    if (t.seconds_to_settle) {
      w.Double(*t.seconds_to_settle);
    } else {
      w.Null();
    }
    w.Field("solver", t.solver).Field("result_root", t.result_root).Key("accuracy");
    if (t.model) {
      w.Double(t.model->test_accuracy());
    } else {
      w.Null();
    }
    w.Key("model");
    if (t.model) {
      w.BeginObject()
          .Field("path", t.model->path)
          .Field("state_hash", t.model->state_hash)
          .Field("test_correct", t.model->test_correct)
          .Field("test_total", t.model->test_total)
          .Key("onnx");
      if (t.model->onnx_path.empty()) {
        w.Null();
      } else {
        w.String(t.model->onnx_path);
      }
      w.Field("onnx_error", t.model->onnx_error).EndObject();
    } else {
      w.Null();
    }
    w.Field("error", t.error).EndObject();
  }
  w.EndArray().EndObject();
  return w.str();
}

std::string SubmitterReportText(const SubmitterReport& report) {
  std::ostringstream out;
  out << "submitter " << report.submitter << " on " << report.ledger;
  if (report.balance) out << ", balance " << *report.balance;
  out << "\n";
  for (const TaskReport& t : report.tasks) {
    out << t.file << ": task " << (t.task_id.empty() ? "(not on the ledger)" : Short(t.task_id)) << " " << t.status;
    if (!t.outcome.empty()) out << " " << t.outcome;
    out << "\n";
    if (t.settle_height != 0) {
      out << "  heights " << t.submit_height << " -> " << t.settle_height;
      if (t.seconds_to_settle) out << " (" << std::fixed << std::setprecision(1) << *t.seconds_to_settle << " s)";
      out << "\n";
    }
    out << "  paid " << t.cost;
    if (t.refund) {
      out << ", refunded " << *t.refund << ", balance change " << *t.balance_change();
    } else if (t.settle_height != 0) {
      out << ", refund unknown (it closed together with another task, or while no submitter watched)";
    }
    out << "\n";
    if (t.model) {
      out << "  model " << t.model->path << ": test accuracy " << std::fixed << std::setprecision(2)
          << 100.0 * t.model->test_accuracy() << "% (" << t.model->test_correct << "/" << t.model->test_total << ")\n";
      if (!t.model->onnx_path.empty()) out << "  onnx  " << t.model->onnx_path << "\n";
      if (!t.model->onnx_error.empty()) out << "  not exported as ONNX: " << t.model->onnx_error << "\n";
    }
    if (!t.error.empty()) out << "  error: " << t.error << "\n";
  }
  return out.str();
}

std::string ModelPath(const std::string& home, const std::string& task_id_hex) {
  return home + "/models/" + task_id_hex + ".state";
}

std::string OnnxPath(const std::string& home, const std::string& task_id_hex) {
  return home + "/models/" + task_id_hex + ".onnx";
}

template <class Archive>
void TaskFacts::save(Archive& ar) const {
  ar(static_cast<std::uint8_t>(refund.has_value()));
  if (refund) ar(*refund);
  ar(static_cast<std::uint8_t>(model.has_value()));
  if (model) {
    SaveString(ar, model->state_hash);
    ar(model->test_correct, model->test_total);
    SaveString(ar, model->onnx_error.substr(0, kMaxOnnxErrorBytes));
  }
}

template <class Archive>
void TaskFacts::load(Archive& ar, std::uint32_t version) {
  // Version 1 has no onnx_error (it reads back empty); version 2 adds it after the counts.
  if (version != 1 && version != 2) FailLocalLoad("no reader for version " + std::to_string(version));
  const auto flag = [&ar] {
    std::uint8_t has = 0;
    ar(has);
    if (has > 1) FailLocalLoad("a presence flag of " + std::to_string(has));
    return has == 1;
  };
  if (flag()) {
    refund.emplace();
    ar(*refund);
  }
  if (flag()) {
    DeliveredModel& m = model.emplace();
    LoadString(ar, m.state_hash, kMaxStateHashHex);
    ar(m.test_correct, m.test_total);
    if (const std::string fault = ModelFault(m.state_hash, m.test_correct, m.test_total); !fault.empty()) {
      FailLocalLoad(fault);
    }
    if (version >= 2) LoadString(ar, m.onnx_error, kMaxOnnxErrorBytes);
  }
}

std::vector<std::uint8_t> EncodeTaskFacts(const TaskFacts& facts) { return EncodeLocal(kTaskFactsFormat, facts); }

Result<TaskFacts> DecodeTaskFacts(std::span<const std::uint8_t> bytes, std::string_view file) {
  if (bytes.empty() || bytes[0] > 1) {
    Result<TaskFacts> text = DecodeText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!text.ok()) return Status::Corruption(std::string(file) + ": " + text.status().message() + "; it is left as it is");
    return text;
  }
  return DecodeLocal<TaskFacts>(bytes, kTaskFactsFormat, file);
}

Result<TaskFacts> LoadTaskFacts(const std::string& home, const std::string& task_id_hex) {
  const std::string path = FactsPath(home, task_id_hex);
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxTaskFactsBytes);
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return TaskFacts{};
  if (!bytes.ok()) return bytes.status();
  POLNODE_ASSIGN_OR_RETURN(TaskFacts facts, DecodeTaskFacts(*bytes, path));
  if (facts.model) {
    facts.model->path = ModelPath(home, task_id_hex);
    // The export follows the state's write, so a file there is the export of this model.
    const std::string onnx = OnnxPath(home, task_id_hex);
    std::error_code ec;
    if (std::filesystem::is_regular_file(onnx, ec)) facts.model->onnx_path = onnx;
  }
  return facts;
}

Status SaveTaskFacts(const std::string& home, const std::string& task_id_hex, const TaskFacts& facts) {
  std::error_code ec;
  std::filesystem::create_directories(home + "/tasks", ec);
  if (ec) return Status::IOError("cannot create " + home + "/tasks: " + ec.message());
  return WriteFileAtomically(FactsPath(home, task_id_hex), EncodeTaskFacts(facts));
}

}  // namespace polnode::node
