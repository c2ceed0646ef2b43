// `polnode submitter`: the model owner's daemon. It posts its task documents to the ledger with
// escrowed payment, serves each document at its spec URI, follows every task to TASK_SETTLED or
// TASK_CANCELLED, takes delivery of the trained model when the outcome names one, and exits when
// nothing is left to wait for. Each pass over the ledger it
//   - finds its tasks: the ledger's tasks whose submitter is its key and whose
//     hyperparameters_hash is solver::TaskId of one of its documents (the earliest such task), so
//     a restarted submitter follows what it posted instead of posting it again;
//   - submits the documents not found yet, as duty "submit-<TaskId hex>" (role_runtime.h: never
//     sent twice); a submission the ledger refuses or fails marks that task failed;
//   - reads its tasks and its balance, logging each status change, and at closing the outcome, the
//     refund and the balance change;
//   - fetches, checks and evaluates the model of every task closed with a result root
//     (submitter_model.h), retrying an unreachable solver for a while;
//   - rewrites DIR/report.json (submitter_report.h) when anything in it changed.
//
// Balance changes. The ledger reports balances, not what moved them, so the refund of a task is
// measured: the submitter's balance is read together with its tasks at one block height (the
// height is read before and after; a pass whose reads straddle a block does not count), and the
// change between two such readings, plus the cost of the submissions committed in between, is the
// refund of the one task that closed in between. When several of its tasks close between two
// readings, their refunds cannot be told apart and stay null (the total balance is still exact).
// Transfers to the submitter's key from elsewhere while it runs would be counted as refunds.
#ifndef POLNODE_ROLES_SUBMITTER_ROLE_H_
#define POLNODE_ROLES_SUBMITTER_ROLE_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "polnode/contracts.pb.h"
#include "polnode/kernels/backend.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/submitter_report.h"
#include "polnode/rpc/file_http.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/task_binding.h"
#include "polnode/solver/task_spec.h"

namespace polnode::node {

/// One task document as the submitter posts it.
struct SubmitterTask {
  std::string file;             // as given
  solver::TaskSpec document;
  std::string document_hex;     // solver::TaskId(document)
  std::string encoded;          // solver::EncodeTaskProto(document): what GET /v1/specs/<hex> serves
  proto::TaskSpec spec;         // solver::LedgerSpecFor(document, data, terms)
  std::shared_ptr<const solver::ImageDataset> data;  // for the model's test accuracy
  // Serve the data set's files and the onnx: model's file from this submitter (GET /v1/files/,
  // file_http.h) and name them by URL in the posted document, instead of by this machine's paths.
  bool serve_files = false;
};

/// Reads every task file (solver::ReadTaskFile), loads its data (once per data location) and
/// computes its ledger spec. kInvalidArgument when two files hold the same document (the same
/// TaskId: they would be one task; give them different seeds); the errors of reading, loading and
/// solver::LedgerSpecFor otherwise, naming the file.
[[nodiscard]] Result<std::vector<SubmitterTask>> PrepareSubmitterTasks(const std::vector<std::string>& files,
                                                                       const solver::TaskTerms& terms);

class SubmitterRole final : public Role {
 public:
  /// `backend` evaluates delivered models; an unreachable solver is retried for `model_wait`.
  SubmitterRole(std::vector<SubmitterTask> tasks, std::unique_ptr<kernels::Backend> backend,
                std::chrono::seconds model_wait);

  /// RunRoleDaemon's on_start: fixes the spec URIs at the role's HTTP address, remembers that
  /// address in DIR/listen (submitter_command.cc reuses it, so the URIs stay valid across
  /// restarts) and writes the first report.
  [[nodiscard]] Status Start(RoleContext& ctx);
  [[nodiscard]] Status Poll(RoleContext& ctx) override;
  /// GET /v1/specs/<TaskId hex>: the document's protobuf bytes; 404 for an unknown id, 405 for
  /// other methods; GET /v1/files/<sha256>: the files of tasks with serve_files (FileServer);
  /// nullopt for other paths. Thread-safe.
  std::optional<HttpResponse> Handle(const HttpRequest& request) override;
  /// Every task failed, or closed with its model delivered or given up.
  bool Done() const override;

  const SubmitterReport& report() const { return report_; }
  /// Ok when every task was posted and every model due was delivered; otherwise
  /// kFailedPrecondition listing what went wrong.
  [[nodiscard]] Status Outcome() const;

 private:
  struct Tracked {
    SubmitterTask task;
    std::string payload;          // the SubmitTaskTx bytes, once Start fixed the spec URI
    std::string seed;             // the beacon seed (32 bytes) the submission commits to
    std::string ledger_id;        // raw; empty until found
    proto::Task record;           // the last record read
    bool failed = false;
    bool closed = false;
    bool wants_model = false;     // closed with a result root
    std::optional<std::chrono::steady_clock::time_point> first_model_try;
  };
  struct Reading {
    std::uint64_t height = 0;
    std::uint64_t balance = 0;
  };

  [[nodiscard]] Status Pass(RoleContext& ctx);
  // The beacon seed of task document `document_hex`: kept in DIR/seeds (0600), created on first
  // need, so a restarted submitter reveals the seed it committed to.
  [[nodiscard]] static Result<std::string> SeedFor(RoleContext& ctx, const std::string& document_hex);
  // Registers `task`'s data and model files with files_ and serves its document naming them by
  // URL at the role's address (SubmitterTask::serve_files).
  [[nodiscard]] Status ServeFiles(RoleContext& ctx, SubmitterTask& task);
  // Reveals the seed once the task's proof is committed (before the segment beacon is drawn).
  [[nodiscard]] Status RevealSeed(RoleContext& ctx, const Tracked& t, const proto::Task& task);
  // Binds documents to the ledger's tasks that carry them (see the file comment).
  [[nodiscard]] Status Scan(RoleContext& ctx);
  // Sends the submit duty of every document not bound yet.
  [[nodiscard]] Status Submit(RoleContext& ctx);
  // Reads the balance and the open tasks at one height, observes them, attributes refunds.
  [[nodiscard]] Status Follow(RoleContext& ctx);
  // Takes in a task's record; true when it closed just now.
  [[nodiscard]] Result<bool> Observe(RoleContext& ctx, std::size_t i, const proto::Task& task);
  // Credits the balance change since the last reading to the one task that closed in between.
  [[nodiscard]] Status Attribute(RoleContext& ctx, const Reading& now);
  [[nodiscard]] Status DeliverModels(RoleContext& ctx);
  // Block time of `to` minus block time of `from`, in seconds.
  [[nodiscard]] Result<double> SecondsBetween(RoleContext& ctx, std::uint64_t from, std::uint64_t to) const;
  // Renames an earlier run's HOME/report.json to the first free HOME/report-N.json (N from 1), so
  // this run's report never overwrites it.
  [[nodiscard]] static Status KeepEarlierReport(const std::string& home);
  // Rewrites report.json if its text changed.
  [[nodiscard]] Status WriteReport(RoleContext& ctx);
  void Fail(RoleContext& ctx, std::size_t i, std::string why);
  // Every document is bound to a ledger task or failed.
  bool AllPlaced() const;

  std::vector<Tracked> tracked_;  // tracked_[i] is report_.tasks[i]
  mutable std::mutex documents_mu_;  // Start fixes served documents' file URIs while Handle may read
  std::map<std::string, std::string, std::less<>> documents_;  // TaskId hex -> encoded document
  FileServer files_;
  std::unique_ptr<kernels::Backend> backend_;
  std::chrono::seconds model_wait_;
  SubmitterReport report_;
  std::string written_;            // the report.json text last written
  std::optional<proto::Params> params_;
  std::uint64_t scan_next_ = 0;    // the next submission number to scan
  std::optional<Reading> last_reading_;   // the last consistent reading (see Follow)
};

}  // namespace polnode::node

#endif  // POLNODE_ROLES_SUBMITTER_ROLE_H_
