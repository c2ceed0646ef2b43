// What `polnode submitter` reports about its tasks: DIR/report.json, rewritten atomically whenever
// something in it changes (`polnode devnet` reads it for its final report); a run that finds an
// earlier run's report.json first renames it to report-N.json (the first free N from 1), so no
// run's report is ever lost; the summary printed at
// exit, and the few facts only the submitter can know (DIR/tasks/<task id hex>), kept so that a
// restarted submitter reports them again. The facts are a local file read by no other node, so a
// versioned cereal archive (base/local_archive.h) of kind "submitter-facts":
//   version 1: uint8 has refund, [uint64 refund], uint8 has model,
//              [string state hash (hex), int64 test_correct, int64 test_total].
// The model's path is not stored: it is ModelPath of the home and task; nor is its ONNX file's,
// OnnxPath, reported when that file is there (a refusal to export is reported by the run that made it). Files of the text form
// before it ("refund N" and "model STATE_HASH CORRECT TOTAL" lines) are still read, never written.
//
// report.json is one JSON object:
//   {
//     "submitter": "<64 hex>",              the submitter's key
//     "ledger": "http://HOST:PORT",
//     "balance": N | null,                  its balance at the last consistent look at the ledger
//     "done": true | false,                 every task closed and every model fetched or given up
//     "tasks": [ {                          one per --task file, in the order given
//       "file": "PATH",                     as given on the command line
//       "document_hash": "<64 hex>",        solver::TaskId of the task document
//       "spec_uri": "URI",                  where this submitter serves the document
//       "task_id": "<64 hex>" | "",         the ledger's task id, once found on the ledger
//       "status": "submitting" | "TASK_OPEN" | ... | "TASK_SETTLED" | "TASK_CANCELLED" | "failed",
//       "outcome": "OUTCOME_..." | "",      once the task is closed
//       "payment": N,                       escrowed at submission
//       "cost": N,                          payment + the submit transaction's fee
//       "refund": N | null,                 what the task's closing paid back to the submitter;
//                                           null until closed, or when it could not be told apart
//                                           (see SubmitterRole)
//       "balance_change": N | null,         refund - cost (negative: what the task cost)
//       "submit_height": N,                 0 until found
//       "settle_height": N,                 0 until closed
//       "seconds_to_settle": X | null,      block time of settle_height - block time of submit_height
//       "solver": "<64 hex>" | "",
//       "result_root": "<64 hex>" | "",     the proof the model comes from (ACCEPTED, FORCED_ERROR)
//       "accuracy": X | null,               the delivered model's test accuracy, in [0, 1]
//       "model": null | {                   once delivered
//         "path": "DIR/models/<task id hex>.state",   solver/train_state.h encoding
//         "state_hash": "<64 hex>",
//         "test_correct": N, "test_total": N,
//         "onnx": "DIR/models/<task id hex>.onnx" | null,  the model as `polnode export` writes it
//         "onnx_error": ""                  why it could not be exported (a family ONNX cannot express)
//       },
//       "error": ""                         why the submission failed or the model was not had
//     } ]
//   }
#ifndef POLNODE_ROLES_SUBMITTER_REPORT_H_
#define POLNODE_ROLES_SUBMITTER_REPORT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/local_archive.h"
#include "polnode/base/status.h"

namespace polnode::node {

struct DeliveredModel {
  std::string path;
  std::string state_hash;  // hex
  std::int64_t test_correct = 0;
  std::int64_t test_total = 0;
  std::string onnx_path = {};   // empty when the model was not exported
  std::string onnx_error = {};  // why it was not, when the exporter refused it

  bool operator==(const DeliveredModel&) const = default;
  double test_accuracy() const {
    return test_total > 0 ? static_cast<double>(test_correct) / static_cast<double>(test_total) : 0.0;
  }
};

struct TaskReport {
  std::string file;
  std::string document_hash;
  std::string spec_uri;
  std::string task_id;
  std::string status = "submitting";
  std::string outcome;
  std::uint64_t payment = 0;
  std::uint64_t cost = 0;
  std::optional<std::uint64_t> refund;
  std::uint64_t submit_height = 0;
  std::uint64_t settle_height = 0;
  std::optional<double> seconds_to_settle;
  std::string solver;
  std::string result_root;
  std::optional<DeliveredModel> model;
  std::string error;

  /// refund - cost, once the refund is known.
  std::optional<std::int64_t> balance_change() const;
};

struct SubmitterReport {
  std::string submitter;
  std::string ledger;
  std::optional<std::uint64_t> balance;
  bool done = false;
  std::vector<TaskReport> tasks;
};

/// The report.json text above (compact, one line, no trailing newline).
std::string SubmitterReportJson(const SubmitterReport& report);

/// The human summary printed at exit: one block of lines per task.
std::string SubmitterReportText(const SubmitterReport& report);

/// What a restarted submitter cannot read back from the ledger: the refund it attributed to a
/// task and the model it delivered.
struct TaskFacts {
  std::optional<std::uint64_t> refund;
  std::optional<DeliveredModel> model;

  bool operator==(const TaskFacts&) const = default;

  template <class Archive>
  void save(Archive& ar) const;
  template <class Archive>
  void load(Archive& ar, std::uint32_t version);
};

/// Version 2 adds the model's onnx_error, so that a restarted submitter still reports why the
/// model has no ONNX file.
inline constexpr LocalFormat kTaskFactsFormat{"submitter-facts", 2};
/// No facts file is larger (a state hash of at most kMaxStateHashHex characters, an ONNX refusal of
/// at most kMaxOnnxErrorBytes and three numbers).
inline constexpr std::uint64_t kMaxTaskFactsBytes = 4096;
/// A model's state hash is SHA-256 in hex.
inline constexpr std::size_t kMaxStateHashHex = 64;
/// The most of a model's onnx_error a facts file keeps: a refusal is a one-line status message,
/// and the bound keeps every facts file within kMaxTaskFactsBytes.
inline constexpr std::size_t kMaxOnnxErrorBytes = 2048;

/// The bytes of `facts` in the newest format (the model's path and onnx_path are not stored; its
/// onnx_error is cut to its first kMaxOnnxErrorBytes bytes).
std::vector<std::uint8_t> EncodeTaskFacts(const TaskFacts& facts);

/// Decodes facts of any version, the text form included, leaving the model's path empty; `file`
/// names the file in errors. An accepted model has a non-empty lowercase hex state hash of at most
/// kMaxStateHashHex characters and 0 <= test_correct <= test_total. kFailedPrecondition for a
/// newer version or another kind of file; kCorruption for a truncated or damaged one.
Result<TaskFacts> DecodeTaskFacts(std::span<const std::uint8_t> bytes, std::string_view file);

/// Where the submitter keeps the model of a task: DIR/models/<task_id_hex>.state.
std::string ModelPath(const std::string& home, const std::string& task_id_hex);
/// Where it keeps the same model as ONNX: DIR/models/<task_id_hex>.onnx.
std::string OnnxPath(const std::string& home, const std::string& task_id_hex);

/// Reads DIR/tasks/<task_id_hex> (any version; the model's path is ModelPath, its onnx_path
/// OnnxPath when that file exists); no facts when the
/// file does not exist; DecodeTaskFacts's errors, which name the file, when it cannot be read. It
/// never changes the file, so an unreadable one stays for the operator.
[[nodiscard]] Result<TaskFacts> LoadTaskFacts(const std::string& home, const std::string& task_id_hex);
/// Writes them atomically (creating DIR/tasks).
[[nodiscard]] Status SaveTaskFacts(const std::string& home, const std::string& task_id_hex, const TaskFacts& facts);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_SUBMITTER_REPORT_H_
