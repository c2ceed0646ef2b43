#include "polnode/roles/role_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "polnode/base/dir_lock.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/roles/duty_journal.h"
#include "polnode/rpc/http_server.h"
#include "polnode/rpc/json.h"

namespace polnode::node {
namespace {

constexpr char kKeyFile[] = "role.key";
constexpr char kDutyDir[] = "duties";

// A duty's journal (duty_journal.h); kNotFound when the duty was never sent.
Result<DutyJournal> ReadJournal(const std::string& path) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, kMaxDutyJournalBytes));
  return DecodeDutyJournal(bytes, path);
}

Status WriteJournal(const std::string& path, const DutyJournal& journal) {
  return WriteFileAtomically(path, EncodeDutyJournal(journal));
}

bool ValidDutyName(std::string_view name) {
  if (name.empty() || name.size() > 200) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return name[0] != '.';
}

std::string MetricName(std::string_view role, std::string_view name) {
  std::string out = "polnode_" + std::string(role) + "_";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

Result<std::pair<std::string, std::uint16_t>> HostPort(const std::string& listen) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("--listen must be HOST:PORT, got '" + listen + "'");
  const std::string port_text = listen.substr(colon + 1);
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port > 65535) return Status::InvalidArgument("bad port in --listen '" + listen + "'");
  return std::make_pair(listen.substr(0, colon), static_cast<std::uint16_t>(port));
}

}  // namespace

// ---- metrics and events ---------------------------------------------------------------------

namespace {

struct HelpEntry {
  std::string_view name;
  std::string_view help;
};

// Every family a role sets (ctx.metrics() in node/roles), sorted by name for the lookup.
constexpr HelpEntry kMetricHelp[] = {
    {"assignments_total", "Verifier slots assigned to this key."},
    {"balance", "The key's balance at the last settlement it saw, in base units of the chain's currency."},
    {"blobs_fetched_total", "Checkpoint blobs fetched from solvers' proof servers."},
    {"challenges_total", "Whistleblower challenges sent."},
    {"checking", "1 while a replay runs or waits to be retried, else 0."},
    {"checkpoints_published_total", "Checkpoints published on the ledger to answer an unavailable verdict."},
    {"checkpoints_saved_total", "Proof checkpoints written to disk."},
    {"checks_total", "Verifier slots re-checked by the whistleblower."},
    {"disagreements_total", "Re-checked verdicts the whistleblower's replay disagreed with."},
    {"dispute_move_bytes_total", "Bytes of dispute-game move payloads sent."},
    {"dispute_moves_total", "Dispute-game moves sent."},
    {"disputes_total", "Reject verdicts the solver disputed."},
    {"forced_errors_total", "Forced-error rounds the solver trained."},
    {"http_responses_total", "HTTP responses this role's server sent, by status code."},
    {"ledger_reachable", "1 when the last pass reached the ledger, else 0."},
    {"model_failures_total", "Delivered models the submitter could not fetch or evaluate."},
    {"model_fetch_retries_total", "Retried fetches of a delivered model."},
    {"models_delivered_total", "Trained models fetched and evaluated by the submitter."},
    {"pass_errors_total", "Passes over the ledger that ended in an error (logged as pass_error)."},
    {"passes_total", "Passes over the ledger."},
    {"proofs_committed_total", "Proof roots committed on the ledger."},
    {"published_loaded_total", "Checkpoints read from the ledger's published copies instead of the solver."},
    {"segments_replayed_total", "Proof segments replayed."},
    {"settled_total", "Tasks this role took part in that settled."},
    {"staked", "1 when the role's stake is bonded and free, else 0."},
    {"steps_trained_total", "Training steps run for proofs."},
    {"task_errors_total", "Tasks whose document or proof could not be used (the task's fault)."},
    {"tasks_accepted_total", "Tasks whose proof was accepted."},
    {"tasks_cancelled_total", "Submitted tasks that closed without settlement (unclaimed, cancelled)."},
    {"tasks_claimed_total", "Tasks claimed by the solver."},
    {"tasks_failed_total", "Task submissions that failed."},
    {"tasks_found_total", "Submitted tasks found on the ledger after a restart."},
    {"tasks_in_flight", "Submitted tasks not closed yet."},
    {"tasks_paid_total", "Solved tasks that settled with the solver paid."},
    {"tasks_settled_total", "Submitted tasks that settled."},
    {"tasks_submitted_total", "Tasks posted to the ledger."},
    {"tasks_unpaid_total", "Solved tasks that settled without paying the solver."},
    {"training_active", "1 while a task trains, else 0."},
    {"training_seconds_total", "Seconds spent training proofs."},
    {"training_threads", "Tasks training at once."},
    {"txs_committed_total", "Transactions this role sent that committed."},
    {"txs_failed_total", "Transactions this role sent whose payload failed on the ledger."},
    {"txs_refused_total", "Transactions the ledger refused at admission."},
    {"txs_sent_total", "Transactions sent."},
    {"verdicts_total", "Verdicts posted, by verdict."},
    {"verifications_total", "Replays of a task's drawn segments."},
    {"verify_errors_total", "Replays that ended in an error (retried)."},
    {"verify_seconds_total", "Seconds spent replaying proof segments."},
};

std::string LabelText(const MetricLabel& label) {
  if (label.name.empty()) return "";
  return std::string(label.name) + "=" + JsonQuote(label.value);
}

}  // namespace

std::string_view MetricHelp(std::string_view name) {
  const auto* it = std::lower_bound(std::begin(kMetricHelp), std::end(kMetricHelp), name,
                                    [](const HelpEntry& e, std::string_view n) { return e.name < n; });
  if (it != std::end(kMetricHelp) && it->name == name) return it->help;
  return "polnode role metric";
}

void RoleMetrics::Add(std::string_view name, double delta, const MetricLabel& label) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it == values_.end()) it = values_.emplace(std::string(name), std::map<std::string, double>()).first;
  it->second[LabelText(label)] += delta;
}

void RoleMetrics::Set(std::string_view name, double value, const MetricLabel& label) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it == values_.end()) it = values_.emplace(std::string(name), std::map<std::string, double>()).first;
  it->second[LabelText(label)] = value;
}

double RoleMetrics::Get(std::string_view name, const MetricLabel& label) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it == values_.end()) return 0.0;
  auto sample = it->second.find(LabelText(label));
  return sample == it->second.end() ? 0.0 : sample->second;
}

std::string RoleMetrics::Text(std::string_view role) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream out;
  out.precision(17);
  for (const auto& [name, samples] : values_) {
    const std::string metric = MetricName(role, name);
    out << "# HELP " << metric << " " << MetricHelp(name) << "\n"
        << "# TYPE " << metric << (name.ends_with("_total") ? " counter" : " gauge") << "\n";
    for (const auto& [labels, value] : samples) {
      out << metric << (labels.empty() ? "" : "{" + labels + "}") << " " << value << "\n";
    }
  }
  return out.str();
}

Result<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return Status::InvalidArgument("--log-format must be text or json, got '" + std::string(text) + "'");
}

std::string Iso8601Utc(std::int64_t unix_ms) {
  const std::int64_t ms = ((unix_ms % 1000) + 1000) % 1000;
  const std::time_t seconds = static_cast<std::time_t>((unix_ms - ms) / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[80];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms));
  return text;
}

void EventLog::Event(std::string_view event, std::initializer_list<std::pair<std::string_view, std::string>> fields) {
  const std::string time = Iso8601Utc(clock_.UnixMillis());
  std::string line;
  if (format_.load() == LogFormat::kJson) {
    JsonWriter w;
    w.BeginObject().Field("time", time).Field("role", role_).Field("event", event);
    for (const auto& [key, value] : fields) w.Field(key, value);
    w.EndObject();
    line = w.str();
  } else {
    std::ostringstream text;
    text << time << " " << role_ << " " << event;
    for (const auto& [key, value] : fields) {
      text << " " << key << "=";
      if (value.find_first_of(" \"=") != std::string::npos) {
        text << JsonQuote(value);
      } else {
        text << value;
      }
    }
    line = text.str();
  }
  std::lock_guard<std::mutex> lock(mu_);
  (out_ != nullptr ? *out_ : std::cout) << line << std::endl;
}

// ---- context --------------------------------------------------------------------------------

RoleContext::RoleContext(std::string role, std::string home, consensus::SecretKey key, LedgerClient ledger,
                         FetchPolicy fetch, Clock& clock)
    : role_(role),
      home_(std::move(home)),
      key_(std::move(key)),
      ledger_(std::move(ledger)),
      fetch_(std::move(fetch)),
      clock_(clock),
      log_(std::move(role), clock) {
  const auto& pub = key_.PublicKey().bytes();
  pubkey_.assign(reinterpret_cast<const char*>(pub.data()), pub.size());
}

std::string RoleContext::http_url() const {
  std::lock_guard<std::mutex> lock(mu_);
  return http_url_;
}

void RoleContext::set_http_url(std::string url) {
  std::lock_guard<std::mutex> lock(mu_);
  http_url_ = std::move(url);
}

std::string RoleContext::DutyPath(std::string_view name) const {
  return home_ + "/" + kDutyDir + "/" + std::string(name);
}

bool RoleContext::DutySent(std::string_view name) const {
  std::error_code ec;
  return std::filesystem::exists(DutyPath(name), ec);
}

std::string RoleContext::DutyFailure(std::string_view name) const {
  if (!ValidDutyName(name)) return "";
  std::lock_guard<std::mutex> lock(mu_);
  Result<DutyJournal> journal = ReadJournal(DutyPath(name));
  if (!journal.ok() || journal->outcome != DutyJournal::Outcome::kFailed) return "";
  return journal->reason;
}

Result<DutyState> RoleContext::SendDuty(std::string_view name, std::string_view payload_type, std::string payload) {
  if (!ValidDutyName(name)) return Status::InvalidArgument("bad duty name '" + std::string(name) + "'");
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = DutyPath(name);
  Result<DutyJournal> journal = ReadJournal(path);
  // A journal that cannot be read (damaged, or a newer polnode's) is never overwritten or resent
  // over: the duty stops with the error naming the file, for an operator to look at.
  if (!journal.ok() && journal.status().code() != StatusCode::kNotFound) {
    return journal.status().WithContext("duty " + std::string(name));
  }
  if (journal.ok()) {
    if (journal->outcome == DutyJournal::Outcome::kFailed) return DutyState::kFailed;
    if (journal->outcome == DutyJournal::Outcome::kCommitted) return DutyState::kCommitted;
    const std::string& id = journal->tx_id;
    POLNODE_ASSIGN_OR_RETURN(TxState state, ledger_.Tx(id));
    switch (state.kind) {
      case TxState::Kind::kPending: return DutyState::kPending;
      case TxState::Kind::kCommitted:
        POLNODE_RETURN_IF_ERROR(WriteJournal(path, {id, DutyJournal::Outcome::kCommitted, ""}));
        metrics_.Add("txs_committed_total");
        return DutyState::kCommitted;
      case TxState::Kind::kFailed:
        POLNODE_RETURN_IF_ERROR(WriteJournal(path, {id, DutyJournal::Outcome::kFailed, state.error}));
        metrics_.Add("txs_failed_total");
        log_.Event("tx_failed", {{"duty", std::string(name)}, {"tx_id", id}, {"error", state.error}});
        return DutyState::kFailed;
      case TxState::Kind::kUnknown:
        log_.Event("tx_lost", {{"duty", std::string(name)}, {"tx_id", id}});
        break;  // the ledger lost it (restarted with an empty mempool): send again below
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(home_ + "/" + kDutyDir, ec);
  // Journalled before it is posted: a crash after the post must find the id on restart, or the
  // duty would be sent a second time.
  POLNODE_ASSIGN_OR_RETURN(LedgerClient::Sent sent, ledger_.Sign(key_, payload_type, std::move(payload)));
  POLNODE_RETURN_IF_ERROR(WriteJournal(path, {sent.id_hex, DutyJournal::Outcome::kSent, ""}));
  if (Result<std::string> posted = ledger_.PostTx(sent.envelope); !posted.ok()) {
    // Refused outright, nothing reached the mempool: forget it. Unreachable, it may have arrived:
    // the journal stays and the next pass asks the ledger.
    if (posted.status().code() != StatusCode::kUnavailable) std::filesystem::remove(path, ec);
    metrics_.Add("txs_refused_total");
    return posted.status().WithContext("duty " + std::string(name));
  }
  metrics_.Add("txs_sent_total");
  log_.Event("tx_sent", {{"duty", std::string(name)}, {"type", std::string(payload_type)}, {"tx_id", sent.id_hex}});
  return DutyState::kSent;
}

Result<bool> RoleContext::EnsureStake(proto::Role role, std::uint64_t amount) {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, ledger_.Stake(pubkey_, role));
  const std::uint64_t free = stake.bonded() >= stake.locked() ? stake.bonded() - stake.locked() : 0;
  if (free >= amount) return true;
  const std::uint64_t shortfall = amount - free;
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, ledger_.Account(pubkey_));
  POLNODE_ASSIGN_OR_RETURN(proto::Params params, ledger_.Params());
  if (account.balance() < shortfall || account.balance() - shortfall < params.tx_fee()) {
    // Sending it would only fail on the ledger (and journal the duty as failed): say what is missing.
    const std::uint64_t need = shortfall + params.tx_fee();
    const std::string notice = std::to_string(static_cast<int>(role)) + "/" + std::to_string(need) + "/" +
                               std::to_string(account.balance());
    std::lock_guard<std::mutex> lock(mu_);
    if (notice != funding_notice_) {
      funding_notice_ = notice;
      log_.Event("needs_funds", {{"pubkey", consensus::ToHex(pubkey_)},
                                 {"stake_role", proto::Role_Name(role)},
                                 {"balance", std::to_string(account.balance())},
                                 {"need", std::to_string(need)},
                                 {"hint", "transfer at least " + std::to_string(need - account.balance()) +
                                              " to this key ('polnode tx transfer --to KEY')"}});
    }
    return false;
  }
  proto::StakeTx tx;
  tx.set_role(role);
  tx.set_amount(shortfall);
  std::string payload;
  tx.SerializeToString(&payload);
  // Named by the bonded amount it tops up, so each shortfall is its own duty.
  const std::string duty = "stake-" + std::to_string(static_cast<int>(role)) + "-" + std::to_string(stake.bonded());
  POLNODE_ASSIGN_OR_RETURN(DutyState state, SendDuty(duty, "stake", std::move(payload)));
  (void)state;
  return false;
}

// ---- the daemon -----------------------------------------------------------------------------

std::optional<HttpResponse> Role::Handle(const HttpRequest&) { return std::nullopt; }

Result<consensus::SecretKey> LoadOrCreateRoleKey(const std::string& home) {
  const std::string path = home + "/" + kKeyFile;
  Result<consensus::SecretKey> key = consensus::ReadKeyFile(path);
  if (key.ok() || key.status().code() != StatusCode::kNotFound) return key;
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey fresh, consensus::SecretKey::Generate());
  POLNODE_RETURN_IF_ERROR(consensus::WriteKeyFile(path, fresh));
  return fresh;
}

Status RunRoleDaemon(std::string_view role_name, Role& role, const RoleOptions& options,
                     const std::function<Status(RoleContext&)>& on_start, bool json, StopSignals& stop,
                     std::ostream& out, Clock& clock) {
  std::error_code ec;
  std::filesystem::create_directories(options.home, ec);
  if (ec) return Status::IOError("cannot create " + options.home + ": " + ec.message());
  // Held until the daemon returns: a second daemon on this home would claim and train the same
  // tasks into the same folders.
  POLNODE_ASSIGN_OR_RETURN(DirLock home_lock, DirLock::Acquire(options.home, "role home"));
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, LoadOrCreateRoleKey(options.home));
  POLNODE_ASSIGN_OR_RETURN(LedgerClient ledger, LedgerClient::FromUrl(options.ledger_url));
  RoleContext ctx(std::string(role_name), options.home, std::move(key), std::move(ledger), options.fetch, clock);

  POLNODE_ASSIGN_OR_RETURN(auto host_port, HostPort(options.listen));
  HttpServerOptions server_options;
  server_options.host = host_port.first;
  server_options.port = host_port.second;
  server_options.limits.max_body_bytes = 1 << 16;  // roles take no large uploads
  std::atomic<std::uint64_t> requests{0};
  POLNODE_ASSIGN_OR_RETURN(
      std::unique_ptr<HttpServer> server,
      HttpServer::Start(
          server_options,
          [&](const HttpRequest& request) -> HttpResponse {
            ++requests;
            if (request.target == "/metrics") {
              HttpResponse r;
              r.content_type = "text/plain; version=0.0.4";
              r.body = ctx.metrics().Text(ctx.role());
              return r;
            }
            if (std::optional<HttpResponse> r = role.Handle(request)) return std::move(*r);
            return JsonErrorResponse(404, "no such endpoint: " + request.target);
          },
          [&ctx](int status) { ctx.metrics().Add("http_responses_total", 1.0, {"code", std::to_string(status)}); }));
  ctx.set_http_url("http://" + host_port.first + ":" + std::to_string(server->port()));
  // Kept for the next run of this home (ReadRoleFlags): URLs this role put on the ledger stay valid.
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(options.home + "/" + kRoleListenFile,
                                              host_port.first + ":" + std::to_string(server->port()) + "\n"));

  ctx.log().set_format(options.log_format);
  if (json || options.log_format == LogFormat::kJson) {
    JsonWriter w;
    w.BeginObject();
    if (options.log_format == LogFormat::kJson) {
      w.Field("time", Iso8601Utc(clock.UnixMillis())).Field("role", role_name).Field("event", "started");
    } else {
      w.Field("role", role_name);
    }
    w.Field("pubkey", consensus::ToHex(ctx.pubkey())).Field("url", ctx.http_url()).Field("ledger", ctx.ledger().url());
    w.EndObject();
    out << w.str() << std::endl;
  } else {
    out << "polnode " << role_name << ": key " << consensus::ToHex(ctx.pubkey()) << ", serving " << ctx.http_url()
           << ", ledger " << ctx.ledger().url() << std::endl;
  }
  if (on_start) POLNODE_RETURN_IF_ERROR(on_start(ctx));

  // The pass counters exist from the start, at 0: a scrape during the first pass (which can take
  // long: funding, fetching) finds every counter the role has.
  ctx.metrics().Add("passes_total", 0.0);
  ctx.metrics().Add("pass_errors_total", 0.0);
  bool ledger_reachable = true;
  while (!role.Done()) {
    const Clock::TimePoint started = clock.Now();
    const Status status = role.Poll(ctx);
    ctx.metrics().Add("passes_total");
    if (status.code() == StatusCode::kUnavailable) {
      if (ledger_reachable) ctx.log().Event("ledger_unreachable", {{"error", status.ToString()}});
      ledger_reachable = false;
    } else {
      if (!ledger_reachable) ctx.log().Event("ledger_reachable");
      ledger_reachable = true;
      if (!status.ok()) {
        ctx.metrics().Add("pass_errors_total");
        ctx.log().Event("pass_error", {{"error", status.ToString()}});
      }
    }
    ctx.metrics().Set("ledger_reachable", ledger_reachable ? 1 : 0);
    // The next pass is due one interval after this one started (at once when the pass took
    // longer); a signal that came meanwhile waits in the kernel and is taken here.
    clock.WaitUntil(started + options.poll_interval, nullptr);
    if (stop.WaitFor(std::chrono::nanoseconds(0)) != 0) {
      ctx.log().Event("stopping");
      break;
    }
  }
  role.Stop();
  server->Stop();
  return Status::Ok();
}

}  // namespace polnode::node
