#include "polnode/roles/submitter_role.h"

#include <filesystem>
#include <iomanip>
#include <sstream>

#include "polnode/base/file_util.h"
#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"
#include "polnode/roles/submitter_model.h"
#include "polnode/rpc/file_http.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/task_binding.h"

namespace polnode::node {
namespace {

constexpr std::string_view kSpecPrefix = "/v1/specs/";
constexpr std::uint64_t kScanPage = 100;

bool IsClosed(proto::TaskStatus status) { return status == proto::TASK_SETTLED || status == proto::TASK_CANCELLED; }

// A number for an event line, with `digits` decimals.
std::string Decimal(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

}  // namespace

Result<std::vector<SubmitterTask>> PrepareSubmitterTasks(const std::vector<std::string>& files,
                                                         const solver::TaskTerms& terms) {
  std::map<std::string, std::shared_ptr<const solver::ImageDataset>> data_by_location;
  std::map<std::string, std::string> file_by_document;
  std::vector<SubmitterTask> tasks;
  for (const std::string& file : files) {
    SubmitterTask task;
    task.file = file;
    POLNODE_ASSIGN_OR_RETURN(task.document, solver::ReadTaskFile(file));
    task.document_hex = consensus::ToHex(solver::TaskId(task.document));
    if (auto [it, inserted] = file_by_document.emplace(task.document_hex, file); !inserted) {
      return Status::InvalidArgument("task files " + it->second + " and " + file +
                                     " hold the same task document (TaskId " + task.document_hex +
                                     "), which would be one task; give them different seeds");
    }
    std::shared_ptr<const solver::ImageDataset>& data = data_by_location[task.document.data_location];
    if (!data) {
      Result<solver::ImageDataset> loaded = solver::LoadTaskData(task.document);
      if (!loaded.ok()) return loaded.status().WithContext("task file " + file);
      data = std::make_shared<const solver::ImageDataset>(std::move(loaded).value());
    }
    task.data = data;
    Result<proto::TaskSpec> spec = solver::LedgerSpecFor(task.document, *data, terms);
    if (!spec.ok()) return spec.status().WithContext("task file " + file);
    task.spec = std::move(spec).value();
    task.encoded = solver::EncodeTaskProto(task.document);
    tasks.push_back(std::move(task));
  }
  return tasks;
}

SubmitterRole::SubmitterRole(std::vector<SubmitterTask> tasks, std::unique_ptr<kernels::Backend> backend,
                             std::chrono::seconds model_wait)
    : backend_(std::move(backend)), model_wait_(model_wait) {
  for (SubmitterTask& task : tasks) {
    documents_.emplace(task.document_hex, task.encoded);
    TaskReport r;
    r.file = task.file;
    r.document_hash = task.document_hex;
    r.payment = task.spec.payment();
    report_.tasks.push_back(std::move(r));
    Tracked t;
    t.task = std::move(task);
    tracked_.push_back(std::move(t));
  }
}

Status SubmitterRole::Start(RoleContext& ctx) {
  report_.submitter = consensus::ToHex(ctx.pubkey());
  report_.ledger = ctx.ledger().url();
  for (std::size_t i = 0; i < tracked_.size(); ++i) {
    proto::SubmitTaskTx tx;
    *tx.mutable_spec() = tracked_[i].task.spec;
    tx.set_spec_uri(TaskDocumentUri(ctx.http_url(), tracked_[i].task.document));
    // The segment beacon mixes in a seed only the submitter knows until the proof is committed, so
    // that no block producer can tell a colluding solver in advance which segments get checked.
    POLNODE_ASSIGN_OR_RETURN(tracked_[i].seed, SeedFor(ctx, tracked_[i].task.document_hex));
    const consensus::Hash256 commitment = contracts::SecretCommitment(tracked_[i].seed);
    tx.set_seed_commitment(commitment.data(), commitment.size());
    if (tracked_[i].task.serve_files) POLNODE_RETURN_IF_ERROR(ServeFiles(ctx, tracked_[i].task));
    report_.tasks[i].spec_uri = tx.spec_uri();
    tracked_[i].payload = tx.SerializeAsString();
  }
  POLNODE_RETURN_IF_ERROR(KeepEarlierReport(ctx.home()));
  return WriteReport(ctx);
}

Status SubmitterRole::ServeFiles(RoleContext& ctx, SubmitterTask& task) {
  // The submitter keeps its own copy of the document with local paths (it evaluates the delivered
  // model from them); only the served copy names the files by URL. Neither location is part of
  // the task id, so the document's hash and the ledger's binding do not change.
  solver::TaskSpec served = task.document;
  Result<std::vector<std::string>> data_files = solver::DatasetFiles(served.model, served.data_location);
  if (!data_files.ok()) return data_files.status().WithContext("task file " + task.file);
  Result<consensus::Hash256> data_set = files_.AddSet(*data_files);
  if (!data_set.ok()) return data_set.status().WithContext("task file " + task.file + ": data set");
  served.data_location = FileSetUri(ctx.http_url(), *data_set);
  if (!served.model_location.empty()) {
    Result<consensus::Hash256> model = files_.AddSet({served.model_location});
    if (!model.ok()) return model.status().WithContext("task file " + task.file + ": model file");
    served.model_location = FileSetUri(ctx.http_url(), *model);
  }
  task.encoded = solver::EncodeTaskProto(served);
  std::lock_guard<std::mutex> lock(documents_mu_);
  documents_[task.document_hex] = task.encoded;
  return Status::Ok();
}

Result<std::string> SubmitterRole::SeedFor(RoleContext& ctx, const std::string& document_hex) {
  const std::string dir = ctx.home() + "/seeds";
  const std::string path = dir + "/" + document_hex;
  if (Result<std::vector<std::uint8_t>> saved = ReadWholeFile(path, 64); saved.ok()) {
    if (saved->size() != 32) return Status::Corruption(path + " does not hold a 32-byte seed");
    return std::string(saved->begin(), saved->end());
  } else if (saved.status().code() != StatusCode::kNotFound) {
    return saved.status();
  }
  // A fresh CSPRNG scalar serves as the 32-byte seed; it is never used as a key.
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey fresh, consensus::SecretKey::Generate());
  const auto bytes = fresh.bytes();
  const std::string seed(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create " + dir + ": " + ec.message());
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(path, seed));
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace, ec);
  return seed;
}

Status SubmitterRole::RevealSeed(RoleContext& ctx, const Tracked& t, const proto::Task& task) {
  if (task.status() != proto::TASK_COMMITTED || task.seed_commitment().empty() || !task.submitter_seed().empty()) {
    return Status::Ok();
  }
  // Only the seed this submitter committed to can be revealed (a task posted by an earlier run
  // with another seed file would fail on the ledger; its beacon then settles without a seed).
  const consensus::Hash256 commitment = contracts::SecretCommitment(t.seed);
  if (task.seed_commitment() != std::string_view(reinterpret_cast<const char*>(commitment.data()), commitment.size())) {
    return Status::Ok();
  }
  proto::SeedRevealTx tx;
  tx.set_task_id(task.id());
  tx.set_seed(t.seed);
  POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty("seed-" + consensus::ToHex(task.id()),
                                                         contracts::payload::kRevealSeed, tx.SerializeAsString()));
  if (state == DutyState::kSent) ctx.log().Event("seed_revealed", {{"task_id", consensus::ToHex(task.id())}});
  return Status::Ok();
}

std::optional<HttpResponse> SubmitterRole::Handle(const HttpRequest& request) {
  if (std::optional<HttpResponse> file = files_.Handle(request)) return file;
  const std::string_view target = std::string_view(request.target).substr(0, request.target.find('?'));
  if (!target.starts_with(kSpecPrefix)) return std::nullopt;
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = JsonErrorResponse(405, "task documents are read-only");
    r.allow = "GET, HEAD";
    return r;
  }
  const std::string_view id = target.substr(kSpecPrefix.size());
  std::lock_guard<std::mutex> lock(documents_mu_);
  auto it = documents_.find(id);
  if (it == documents_.end()) return JsonErrorResponse(404, "no task document " + std::string(id));
  HttpResponse r;
  r.content_type = "application/x-protobuf";
  r.body = it->second;
  return r;
}

bool SubmitterRole::Done() const {
  for (std::size_t i = 0; i < tracked_.size(); ++i) {
    const Tracked& t = tracked_[i];
    if (t.failed) continue;
    if (!t.closed) return false;
    // A task that closed in a pass whose reads straddled a block (no consistent reading) gets its
    // refund from the next reading: the balance read before its settling block is known, so one
    // more pass attributes it instead of leaving it unknown.
    const TaskReport& r = report_.tasks[i];
    if (!r.refund && last_reading_ && last_reading_->height < r.settle_height) return false;
    if (t.wants_model && !report_.tasks[i].model && report_.tasks[i].error.empty()) return false;
  }
  return true;
}

Status SubmitterRole::Outcome() const {
  std::string problems;
  for (const TaskReport& t : report_.tasks) {
    if (!t.error.empty()) problems += (problems.empty() ? "" : "; ") + t.file + ": " + t.error;
  }
  if (problems.empty()) return Status::Ok();
  return Status::FailedPrecondition(problems);
}

Status SubmitterRole::Poll(RoleContext& ctx) {
  const Status pass = Pass(ctx);
  const Status written = WriteReport(ctx);
  return pass.ok() ? written : pass;
}

Status SubmitterRole::Pass(RoleContext& ctx) {
  if (!params_) {
    POLNODE_ASSIGN_OR_RETURN(params_, ctx.ledger().Params());
  }
  POLNODE_RETURN_IF_ERROR(Scan(ctx));
  POLNODE_RETURN_IF_ERROR(Submit(ctx));
  POLNODE_RETURN_IF_ERROR(Follow(ctx));
  return DeliverModels(ctx);
}

bool SubmitterRole::AllPlaced() const {
  for (const Tracked& t : tracked_) {
    if (t.ledger_id.empty() && !t.failed) return false;
  }
  return true;
}

void SubmitterRole::Fail(RoleContext& ctx, std::size_t i, std::string why) {
  tracked_[i].failed = true;
  report_.tasks[i].status = "failed";
  report_.tasks[i].error = std::move(why);
  ctx.metrics().Add("tasks_failed_total");
  ctx.log().Event("task_failed", {{"document_hash", tracked_[i].task.document_hex}, {"error", report_.tasks[i].error}});
}

Status SubmitterRole::Scan(RoleContext& ctx) {
  while (!AllPlaced()) {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, ctx.ledger().Tasks(scan_next_, kScanPage));
    for (const proto::Task& task : page.tasks) {
      for (std::size_t i = 0; task.submitter() == ctx.pubkey() && i < tracked_.size(); ++i) {
        Tracked& t = tracked_[i];
        if (!t.ledger_id.empty() || t.failed) continue;
        if (consensus::ToHex(task.spec().hyperparameters_hash()) != t.task.document_hex) continue;
        // Read first: a failure here leaves the task unbound and the scan where it was.
        POLNODE_ASSIGN_OR_RETURN(TaskFacts facts, LoadTaskFacts(ctx.home(), consensus::ToHex(task.id())));
        t.ledger_id = task.id();
        TaskReport& r = report_.tasks[i];
        r.task_id = consensus::ToHex(task.id());
        r.payment = task.spec().payment();
        r.cost = task.spec().payment() + params_->tx_fee();
        r.submit_height = task.submit_height();
        r.refund = facts.refund;
        r.model = facts.model;
        ctx.metrics().Add("tasks_found_total");
        ctx.log().Event("task_found", {{"task_id", r.task_id},
                                       {"document_hash", t.task.document_hex},
                                       {"file", t.task.file},
                                       {"submit_height", std::to_string(r.submit_height)}});
        if (task.spec_uri() != r.spec_uri) {
          // Posted by an earlier run serving elsewhere: solvers fetch the document there, not here.
          ctx.log().Event("spec_uri_elsewhere", {{"task_id", r.task_id}, {"spec_uri", task.spec_uri()}});
        }
        break;
      }
      ++scan_next_;
    }
    if (page.tasks.empty() || scan_next_ >= page.total) break;
  }
  return Status::Ok();
}

Status SubmitterRole::Submit(RoleContext& ctx) {
  for (std::size_t i = 0; i < tracked_.size(); ++i) {
    Tracked& t = tracked_[i];
    if (!t.ledger_id.empty() || t.failed) continue;
    // Named by what is sent, not only the document: a submission that failed on the ledger (too
    // little balance, a window over the chain's maximum) can be retried with other terms, which is
    // another transaction and another duty.
    const std::string duty =
        "submit-" + t.task.document_hex + "-" + consensus::ToHex(consensus::Sha256(t.payload)).substr(0, 16);
    Result<DutyState> state = ctx.SendDuty(duty, contracts::payload::kSubmitTask, t.payload);
    if (!state.ok()) {
      const StatusCode code = state.status().code();
      // A 4xx refusal is the ledger saying no to this transaction as it stands (a window over
      // the chain's maximum, too little balance); anything else may pass on a later try.
      if (code != StatusCode::kFailedPrecondition && code != StatusCode::kInvalidArgument) return state.status();
      Fail(ctx, i, "the ledger refused the submission: " + state.status().message());
      last_reading_.reset();
      continue;
    }
    switch (*state) {
      case DutyState::kSent:
        ctx.metrics().Add("tasks_submitted_total");
        ctx.log().Event("task_submitted", {{"document_hash", t.task.document_hex}, {"file", t.task.file}});
        break;
      case DutyState::kFailed:
        Fail(ctx, i, "the submission failed on the ledger: " + ctx.DutyFailure(duty) +
                         " (the fee is spent; run again with terms the ledger accepts, e.g. another --payment)");
        // Its fee left the balance at a height this role cannot tell: start the measuring afresh.
        last_reading_.reset();
        break;
      case DutyState::kPending:
      case DutyState::kCommitted:
        break;  // the next scan finds it
    }
  }
  return Status::Ok();
}

Status SubmitterRole::Follow(RoleContext& ctx) {
  // Read the balance and the open tasks between two reads of the height; equal heights mean every
  // read saw the same block. A few tries, since a block may commit in between.
  std::vector<std::pair<std::size_t, proto::Task>> records;
  std::optional<Reading> reading;
  for (int attempt = 0; attempt < 3 && !reading; ++attempt) {
    records.clear();
    POLNODE_ASSIGN_OR_RETURN(LedgerInfo before, ctx.ledger().Info());
    POLNODE_ASSIGN_OR_RETURN(proto::Account account, ctx.ledger().Account(ctx.pubkey()));
    for (std::size_t i = 0; i < tracked_.size(); ++i) {
      if (tracked_[i].ledger_id.empty() || tracked_[i].closed) continue;
      POLNODE_ASSIGN_OR_RETURN(proto::Task task, ctx.ledger().Task(tracked_[i].ledger_id));
      records.emplace_back(i, std::move(task));
    }
    POLNODE_ASSIGN_OR_RETURN(LedgerInfo after, ctx.ledger().Info());
    if (before.height == after.height) reading = Reading{after.height, account.balance()};
  }
  // Every record is looked at even if one fails, so no closing goes unreported; but money is only
  // attributed when every task's state at the reading's height is known.
  Status observed = Status::Ok();
  std::vector<std::size_t> newly_closed;
  for (const auto& [i, task] : records) {
    Result<bool> closed = Observe(ctx, i, task);
    if (!closed.ok() && observed.ok()) observed = closed.status();
    if (closed.ok() && *closed) newly_closed.push_back(i);
  }
  const Status attributed = reading && observed.ok() ? Attribute(ctx, *reading) : Status::Ok();

  double in_flight = 0;
  for (const Tracked& t : tracked_) in_flight += !t.ledger_id.empty() && !t.closed ? 1 : 0;
  ctx.metrics().Set("tasks_in_flight", in_flight);
  for (std::size_t i : newly_closed) {
    const TaskReport& r = report_.tasks[i];
    const std::optional<std::int64_t> change = r.balance_change();
    ctx.log().Event("task_settled", {{"task_id", r.task_id},
                                     {"status", r.status},
                                     {"outcome", r.outcome},
                                     {"refund", r.refund ? std::to_string(*r.refund) : "unknown"},
                                     {"balance_change", change ? std::to_string(*change) : "unknown"},
                                     {"seconds", r.seconds_to_settle ? Decimal(*r.seconds_to_settle, 3) : "unknown"}});
  }
  return observed.ok() ? attributed : observed;
}

Result<bool> SubmitterRole::Observe(RoleContext& ctx, std::size_t i, const proto::Task& task) {
  Tracked& t = tracked_[i];
  TaskReport& r = report_.tasks[i];
  t.record = task;
  r.solver = consensus::ToHex(task.solver());
  r.result_root = consensus::ToHex(task.result_root());
  POLNODE_RETURN_IF_ERROR(RevealSeed(ctx, t, task));
  const std::string status = proto::TaskStatus_Name(task.status());
  if (status != r.status) {
    r.status = status;
    ctx.log().Event("task_status",
                    {{"task_id", r.task_id}, {"status", status}, {"deadline", std::to_string(task.deadline())}});
  }
  if (!IsClosed(task.status())) return false;

  // Everything that can fail comes first, so that a failed read leaves the task open for the
  // next pass rather than closed without its numbers.
  POLNODE_ASSIGN_OR_RETURN(r.seconds_to_settle, SecondsBetween(ctx, task.submit_height(), task.settle_height()));
  t.closed = true;
  r.outcome = proto::TaskOutcome_Name(task.outcome());
  r.settle_height = task.settle_height();
  ctx.metrics().Add(task.status() == proto::TASK_SETTLED ? "tasks_settled_total" : "tasks_cancelled_total");
  if (task.outcome() == proto::OUTCOME_ACCEPTED) ctx.metrics().Add("tasks_accepted_total");
  t.wants_model = !task.result_root().empty() &&
                  (task.outcome() == proto::OUTCOME_ACCEPTED || task.outcome() == proto::OUTCOME_FORCED_ERROR);
  return true;
}

Status SubmitterRole::Attribute(RoleContext& ctx, const Reading& now) {
  report_.balance = now.balance;
  ctx.metrics().Set("balance", static_cast<double>(now.balance));
  // A submission not found yet may already have moved the balance by an amount not known here.
  if (!AllPlaced()) {
    last_reading_.reset();
    return Status::Ok();
  }
  if (last_reading_ && now.height > last_reading_->height) {
    std::int64_t refunds = static_cast<std::int64_t>(now.balance) - static_cast<std::int64_t>(last_reading_->balance);
    std::vector<std::size_t> closing;
    for (std::size_t i = 0; i < tracked_.size(); ++i) {
      const TaskReport& r = report_.tasks[i];
      if (tracked_[i].ledger_id.empty()) continue;
      if (r.submit_height > last_reading_->height && r.submit_height <= now.height) {
        refunds += static_cast<std::int64_t>(r.cost);
      }
      if (tracked_[i].closed && r.settle_height > last_reading_->height && r.settle_height <= now.height) {
        closing.push_back(i);
      }
    }
    if (closing.size() == 1 && refunds >= 0 && !report_.tasks[closing[0]].refund) {
      TaskReport& r = report_.tasks[closing[0]];
      r.refund = static_cast<std::uint64_t>(refunds);
      POLNODE_RETURN_IF_ERROR(SaveTaskFacts(ctx.home(), r.task_id, TaskFacts{r.refund, r.model}));
    }
  }
  if (!last_reading_ || now.height >= last_reading_->height) last_reading_ = now;
  return Status::Ok();
}

Status SubmitterRole::DeliverModels(RoleContext& ctx) {
  for (std::size_t i = 0; i < tracked_.size(); ++i) {
    Tracked& t = tracked_[i];
    TaskReport& r = report_.tasks[i];
    if (!t.closed || !t.wants_model || r.model || !r.error.empty()) continue;
    const Clock::TimePoint now = ctx.clock().Now();
    const bool first_try = !t.first_model_try;
    if (first_try) t.first_model_try = now;
    Result<DeliveredModel> model =
        FetchTrainedModel(ctx.fetch_policy(), ctx.home(), t.record, t.task.document, *t.task.data, *backend_);
    if (model.ok()) {
      r.model = std::move(model).value();
      POLNODE_RETURN_IF_ERROR(SaveTaskFacts(ctx.home(), r.task_id, TaskFacts{r.refund, r.model}));
      ctx.metrics().Add("models_delivered_total");
      ctx.log().Event("model_delivered", {{"task_id", r.task_id},
                                          {"accuracy", Decimal(r.model->test_accuracy(), 4)},
                                          {"state_hash", r.model->state_hash},
                                          {"path", r.model->path},
                                          {"onnx", r.model->onnx_path},
                                          {"onnx_error", r.model->onnx_error}});
      continue;
    }
    if (model.status().code() == StatusCode::kUnavailable && now - *t.first_model_try < model_wait_) {
      if (first_try) ctx.log().Event("model_unavailable", {{"task_id", r.task_id}, {"error", model.status().ToString()}});
      ctx.metrics().Add("model_fetch_retries_total");
      continue;
    }
    r.error = "the model could not be had: " + model.status().ToString();
    ctx.metrics().Add("model_failures_total");
    ctx.log().Event("model_failed", {{"task_id", r.task_id}, {"error", model.status().ToString()}});
  }
  return Status::Ok();
}

Result<double> SubmitterRole::SecondsBetween(RoleContext& ctx, std::uint64_t from, std::uint64_t to) const {
  std::uint64_t times[2] = {0, 0};
  const std::uint64_t heights[2] = {from, to};
  for (int k = 0; k < 2; ++k) {
    const std::string target = "/v1/blocks/" + std::to_string(heights[k]);
    POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(ctx.ledger().endpoint(), "GET", target, {}, {},
                                                      std::chrono::seconds(10), "application/x-protobuf"));
    if (r.status != 200) return Status::Unavailable("GET " + target + " answered " + std::to_string(r.status));
    POLNODE_ASSIGN_OR_RETURN(consensus::Block block, consensus::DecodeBlock(r.body));
    times[k] = block.header.time_unix_ms;
  }
  return (static_cast<double>(times[1]) - static_cast<double>(times[0])) / 1000.0;
}

Status SubmitterRole::KeepEarlierReport(const std::string& home) {
  const std::filesystem::path current = home + "/report.json";
  std::error_code ec;
  if (!std::filesystem::exists(current, ec)) return Status::Ok();
  for (int n = 1;; ++n) {
    const std::filesystem::path kept = home + "/report-" + std::to_string(n) + ".json";
    if (std::filesystem::exists(kept, ec)) continue;
    std::filesystem::rename(current, kept, ec);
    if (ec) return Status::IOError("cannot keep the earlier " + current.string() + " as " + kept.string() + ": " + ec.message());
    return Status::Ok();
  }
}

Status SubmitterRole::WriteReport(RoleContext& ctx) {
  report_.done = Done();
  std::string text = SubmitterReportJson(report_);
  if (text == written_) return Status::Ok();
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(ctx.home() + "/report.json", text + "\n"));
  written_ = std::move(text);
  return Status::Ok();
}

}  // namespace polnode::node
