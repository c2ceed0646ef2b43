#include "polnode/roles/submitter_report.h"

#include <charconv>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "polnode/base/file_util.h"
#include "polnode/rpc/json.h"

namespace polnode::node {
namespace {

constexpr std::uint64_t kMaxFactsBytes = 4096;

std::string Short(const std::string& hex) { return hex.size() > 16 ? hex.substr(0, 16) : hex; }

Result<std::uint64_t> ParseU64(std::string_view text, const std::string& path) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::Corruption(path + ": '" + std::string(text) + "' is not a number");
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
          .EndObject();
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
    }
    if (!t.error.empty()) out << "  error: " << t.error << "\n";
  }
  return out.str();
}

std::string ModelPath(const std::string& home, const std::string& task_id_hex) {
  return home + "/models/" + task_id_hex + ".state";
}

Result<TaskFacts> LoadTaskFacts(const std::string& home, const std::string& task_id_hex) {
  const std::string path = FactsPath(home, task_id_hex);
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxFactsBytes);
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return TaskFacts{};
  if (!bytes.ok()) return bytes.status();
  TaskFacts facts;
  std::istringstream in(std::string(bytes->begin(), bytes->end()));
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string_view> words = Words(line);
    if (words.size() == 2 && words[0] == "refund") {
      POLNODE_ASSIGN_OR_RETURN(facts.refund, ParseU64(words[1], path));
    } else if (words.size() == 4 && words[0] == "model") {
      DeliveredModel model;
      model.path = ModelPath(home, task_id_hex);
      model.state_hash = std::string(words[1]);
      POLNODE_ASSIGN_OR_RETURN(std::uint64_t correct, ParseU64(words[2], path));
      POLNODE_ASSIGN_OR_RETURN(std::uint64_t total, ParseU64(words[3], path));
      model.test_correct = static_cast<std::int64_t>(correct);
      model.test_total = static_cast<std::int64_t>(total);
      facts.model = std::move(model);
    } else {
      return Status::Corruption(path + ": unexpected line '" + line + "'");
    }
  }
  return facts;
}

Status SaveTaskFacts(const std::string& home, const std::string& task_id_hex, const TaskFacts& facts) {
  std::error_code ec;
  std::filesystem::create_directories(home + "/tasks", ec);
  if (ec) return Status::IOError("cannot create " + home + "/tasks: " + ec.message());
  std::string text;
  if (facts.refund) text += "refund " + std::to_string(*facts.refund) + "\n";
  if (facts.model) {
    text += "model " + facts.model->state_hash + " " + std::to_string(facts.model->test_correct) + " " +
            std::to_string(facts.model->test_total) + "\n";
  }
  return WriteFileAtomically(FactsPath(home, task_id_hex), text);
}

}  // namespace polnode::node
