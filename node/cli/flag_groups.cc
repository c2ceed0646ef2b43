#include "flag_groups.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "polnode/base/cpus.h"
#include "polnode/base/file_util.h"
#include "polnode/solver/prover.h"

namespace polnode::node {

void DeclareBackendFlags(FlagSet& flags) {
  flags.Value("backend", "NAME", "reference, cpu, cuda or hip; never changes the result", "cpu");
  flags.Value("threads", "T", "CPU threads (0: every CPU this process may use); never changes the result", "0");
}

Result<BackendChoice> ReadBackendFlags(const FlagSet& flags) {
  BackendChoice choice;
  choice.name = flags.Get("backend");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t threads, flags.GetInt("threads", 0, 1024));
  choice.threads = threads > 0 ? static_cast<int>(threads) : AvailableCpus();
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(choice.name, choice.threads);
  if (!backend.ok()) return Status::InvalidArgument("--backend: " + backend.status().ToString());
  choice.backend = std::move(backend).value();
  return choice;
}

void DeclareCommitIntervalFlag(FlagSet& flags) {
  flags.Value("commit-interval-ms", "MS",
              "a proof's checkpoint may wait this long to be made durable with the ones after it, sharing their "
              "fsyncs (a crash may lose this much more training); 0: each checkpoint durable on its own",
              std::to_string(solver::kDefaultCommitInterval.count()));
}

Result<Clock::Duration> ReadCommitIntervalFlag(const FlagSet& flags) {
  POLNODE_ASSIGN_OR_RETURN(std::int64_t ms, flags.GetInt("commit-interval-ms", 0, 86'400'000));
  return Clock::Duration(std::chrono::milliseconds(ms));
}

void DeclareLedgerFlag(FlagSet& flags, bool required) {
  flags.Value("ledger", "URL", "the ledger's HTTP API, e.g. http://127.0.0.1:26657", "", required);
}

void DeclareNodeHomeFlag(FlagSet& flags, bool required) {
  flags.Value("home", "DIR", "the node home: config.toml, genesis.json, node.key ('polnode init' makes one)", "",
              required);
}

void DeclareTaskFileFlag(FlagSet& flags, bool required) {
  flags.Value("task", "FILE", "task file (TOML, or protobuf when it ends in .pb)", "", required);
}

void DeclareProofDirFlag(FlagSet& flags, bool required) {
  flags.Value("proof", "DIR", "proof directory written by 'polnode prove'", "", required);
}

void DeclareRoleFlags(FlagSet& flags) {
  flags.Value("home", "DIR",
              "the role's home: its key (role.key, created on first start), settings (role.toml, optional), journal "
              "and files",
              "", true);
  DeclareLedgerFlag(flags, true);
  flags.Value("listen", "HOST:PORT", "where this role serves /metrics and its own routes (port 0: any free port)",
              "127.0.0.1:0");
  flags.Value("poll-ms", "N", "milliseconds between passes over the ledger", "200");
  DeclareLogFormatFlag(flags);
}

void DeclareLogFormatFlag(FlagSet& flags) {
  flags.Value("log-format", "text|json",
              "event lines on the log: text ('<ISO-8601 UTC time> <who> <event> key=value ...') or json (one "
              "object per line: time, role, event and each field as a string)",
              "text");
}

Result<LogFormat> ReadLogFormatFlag(const FlagSet& flags) { return ParseLogFormat(flags.Get("log-format")); }

namespace {

// The address an earlier run of this role home served at (HOME/listen, which RunRoleDaemon
// writes), if any.
std::optional<std::string> PreviousListen(const std::string& home) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(home + "/" + kRoleListenFile, 256);
  if (!bytes.ok()) return std::nullopt;
  std::string listen(bytes->begin(), bytes->end());
  while (!listen.empty() && (listen.back() == '\n' || listen.back() == '\r')) listen.pop_back();
  if (listen.empty()) return std::nullopt;
  return listen;
}

}  // namespace

Result<RoleOptions> ReadRoleFlags(const FlagSet& flags) {
  RoleOptions options;
  options.home = flags.Get("home");
  options.ledger_url = flags.Get("ledger");
  options.listen = flags.Get("listen");
  // Addresses on the ledger (a submitter's spec URIs, a solver's proof URIs) name where the role
  // served: without --listen, a restart serves where the last run of this home did.
  if (!flags.Given("listen")) {
    if (std::optional<std::string> previous = PreviousListen(options.home)) options.listen = *previous;
  }
  POLNODE_ASSIGN_OR_RETURN(std::int64_t poll_ms, flags.GetInt("poll-ms", 10, 60000));
  options.poll_interval = std::chrono::milliseconds(poll_ms);
  POLNODE_ASSIGN_OR_RETURN(options.fetch, FetchPolicy::Load(options.home + "/" + kRoleConfigFile));
  POLNODE_ASSIGN_OR_RETURN(options.log_format, ReadLogFormatFlag(flags));
  return options;
}

void DeclareReplayFlags(FlagSet& flags, std::string stake_help) {
  flags.Value("stake", "AMOUNT", std::move(stake_help));
  DeclareBackendFlags(flags);
}

Result<ReplayChoice> ReadReplayFlags(const FlagSet& flags) {
  ReplayChoice choice;
  if (flags.Given("stake")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t amount, flags.GetInt("stake", 1, INT64_MAX));
    choice.stake = static_cast<std::uint64_t>(amount);
  }
  // The daemon makes its own backends on its worker threads; this one only checks the flags.
  POLNODE_ASSIGN_OR_RETURN(BackendChoice backend, ReadBackendFlags(flags));
  choice.backend = std::move(backend.name);
  choice.threads = backend.threads;
  return choice;
}

void DeclareTaskTermsFlags(FlagSet& flags) {
  const solver::TaskTerms defaults;
  flags.Value("claim-window", "BLOCKS", "blocks after submission in which a solver may claim",
              std::to_string(defaults.claim_window));
  flags.Value("training-window", "BLOCKS", "blocks after the claim in which the proof must be committed",
              std::to_string(defaults.training_window));
  // The shortest text that reads back as the same float32 (std::to_string would round it).
  char delta[32];
  const std::to_chars_result printed = std::to_chars(delta, delta + sizeof delta, defaults.forced_delta);
  flags.Value("forced-delta", "D",
              "tolerant tasks: how far a forced round moves each perturbed weight (float32, > 0)",
              std::string(delta, printed.ptr));
}

Result<solver::TaskTerms> ReadTaskTermsFlags(const FlagSet& flags, std::uint64_t payment) {
  solver::TaskTerms terms;
  terms.payment = payment;
  POLNODE_ASSIGN_OR_RETURN(std::int64_t claim_window, flags.GetInt("claim-window", 1, INT64_MAX));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t training_window, flags.GetInt("training-window", 1, INT64_MAX));
  terms.claim_window = static_cast<std::uint64_t>(claim_window);
  terms.training_window = static_cast<std::uint64_t>(training_window);
  POLNODE_ASSIGN_OR_RETURN(double delta, flags.GetDouble("forced-delta"));
  // Checked as the float32 the ledger keeps: a double beyond float32's range has none, and a tiny
  // one rounds to 0.
  if (!std::isfinite(delta) || !(delta > 0.0) || delta > std::numeric_limits<float>::max() ||
      !(static_cast<float>(delta) > 0.0f)) {
    return Status::InvalidArgument("--forced-delta must be a finite float32 greater than 0, got '" +
                                   flags.Get("forced-delta") + "'");
  }
  terms.forced_delta = static_cast<float>(delta);
  return terms;
}

}  // namespace polnode::node
