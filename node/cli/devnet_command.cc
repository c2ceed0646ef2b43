// `polnode devnet`: flags and the final report (devnet.h runs the network).
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/devnet/devnet.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/model_spec.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode devnet";

std::string ReportJson(const DevnetReport& r) {
  JsonWriter w;
  w.BeginObject()
      .Field("home", r.home)
      .Field("ledger", r.ledger_url)
      .Field("all_settled", r.all_settled)
      .Field("audits_match", r.audits_match)
      .Field("wall_seconds", r.wall_seconds)
      .Field("training_seconds", r.training_seconds)
      .Field("verifying_seconds", r.verifying_seconds)
      .Field("disputing_seconds", r.disputing_seconds)
      .Field("ledger_down_seconds", r.ledger_down_seconds)
      .Field("protocol_overhead", r.training_seconds > 0 ? (r.wall_seconds - r.training_seconds) / r.training_seconds : 0.0);
  w.Key("tasks").BeginArray();
  for (const DevnetTask& t : r.tasks) {
    w.BeginObject().Field("task_id", t.id_hex).Field("solver", t.solver).Field("status", t.status).Field("outcome", t.outcome);
    w.Key("accuracy");
    if (t.accuracy >= 0) {
      w.Double(t.accuracy);
    } else {
      w.Null();
    }
    w.Key("seconds_in_status").BeginObject();
    for (const auto& [status, seconds] : t.seconds_in_status) w.Field(status, seconds);
    w.EndObject().Key("games").BeginArray();
    for (const DevnetGame& g : t.games) {
      w.BeginObject()
          .Field("challenger", g.challenger)
          .Field("challenger_kind", g.challenger_kind)
          .Field("result", g.result)
          .Field("defender", g.defender)
          .Field("winner", g.winner)
          .Field("phase", g.phase)
          .Field("ruling", g.ruling)
          .Field("moves", g.moves)
          .Field("by_referee", g.by_referee)
          .Field("segment", g.segment)
          .Field("step", g.step)
          .Field("leaf", g.leaf)
          .Field("node", g.node_name)
          .Field("operator", g.node_op)
          .Field("onnx_origin", g.onnx_origin)
          .Field("audit_matches", g.audit_matches)
          .EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray().Key("accounts").BeginArray();
  for (const DevnetAccount& a : r.accounts) {
    w.BeginObject()
        .Field("name", a.name)
        .Field("pubkey", a.pubkey_hex)
        .Field("genesis", a.genesis)
        .Field("balance", a.balance)
        .Field("staked", a.staked)
        .Field("change", a.change())
        .EndObject();
  }
  w.EndArray();
  if (!r.validator_urls.empty()) {
    w.Key("validators").BeginObject().Key("apis").BeginArray();
    for (const std::string& url : r.validator_urls) w.String(url);
    w.EndArray().Key("homes").BeginArray();
    for (const std::string& home : r.validator_homes) w.String(home);
    w.EndArray()
        .Field("agree", r.validators_agree)
        .Field("agreed_height", r.agreed_height)
        .Field("agreed_state_root", r.agreed_state_root)
        .Field("difference", r.validators_difference)
        .Field("killed_at_height", r.validator_killed_at)
        .Field("missed_blocks", r.validator_missed_blocks)
        .Field("catch_up_seconds", r.validator_catch_up_seconds)
        .EndObject();
  }
  w.Key("logs").BeginObject();
  for (const auto& [name, path] : r.logs) w.Field(name, path);
  w.EndObject().EndObject();
  return w.str();
}

void PrintText(const DevnetReport& r, std::ostream& out) {
  out << std::fixed << std::setprecision(1);
  out << "\ndevnet report (" << r.home << ")\n";
  for (const DevnetTask& t : r.tasks) {
    out << "task " << t.id_hex.substr(0, 16) << "  solver " << t.solver << "  " << t.outcome;
    if (t.accuracy >= 0) out << "  delivered model test accuracy " << std::setprecision(2) << 100 * t.accuracy << "%" << std::setprecision(1);
    out << "\n";
    for (const DevnetGame& g : t.games) {
      out << "  game: " << g.challenger << " (" << (g.challenger_kind == "verifier" ? "its reject disputed" : "challenged the proof")
          << ") vs " << g.defender << " (defends its proof), " << g.moves << " moves, " << g.result;
      if (!g.winner.empty()) out << ", winner " << g.winner;
      out << "\n";
      if (g.by_referee) {
        out << "    pinpointed: segment " << g.segment << ", step " << g.step << ", leaf " << g.leaf;
        if (!g.node_name.empty()) out << ", operator " << g.node_name << " (" << g.node_op << ")";
        out << "\n";
        if (!g.onnx_origin.empty()) out << "    in the ONNX model: " << g.onnx_origin << "\n";
      }
      out << "    ruling: " << g.ruling << "\n    auditor's re-execution " << (g.audit_matches ? "matches" : "DIFFERS FROM")
          << " the ledger\n";
    }
  }
  // Ids print as 16-hex prefixes, which every command that takes an id accepts back (id_lookup.h).
  out << "balances (change since genesis, stake included; key prefix for 'polnode account'):\n";
  for (const DevnetAccount& a : r.accounts) {
    out << "  " << std::left << std::setw(16) << a.name << std::right << std::setw(12) << a.change() << "  "
        << a.pubkey_hex.substr(0, 16) << "\n";
  }
  const double overhead = r.training_seconds > 0 ? (r.wall_seconds - r.training_seconds) / r.training_seconds : 0.0;
  out << "time: wall " << r.wall_seconds << " s; training " << r.training_seconds << " s ("
      << 100 * r.training_seconds / r.wall_seconds << "%), verifying " << r.verifying_seconds << " s ("
      << 100 * r.verifying_seconds / r.wall_seconds << "%), disputing " << r.disputing_seconds << " s ("
      << 100 * r.disputing_seconds / r.wall_seconds << "%); protocol overhead (wall minus training) "
      << std::setprecision(2) << overhead << "x the training time\n";
  if (r.ledger_down_seconds > 0) out << "ledger outage: down " << r.ledger_down_seconds << " s, then served again\n";
  if (!r.validator_urls.empty()) {
    out << r.validator_urls.size() << " CometBFT validators (polnode APIs:";
    for (const std::string& url : r.validator_urls) out << " " << url;
    out << ")\n";
    if (r.validator_killed_at > 0) {
      out << "  validator " << r.validator_urls.size() - 1 << " killed (SIGKILL) at height " << r.validator_killed_at
          << "; after a restart it caught up " << r.validator_missed_blocks << " blocks in " << r.validator_catch_up_seconds
          << " s\n";
    }
    out << "  " << (r.validators_agree ? "every validator has" : "validators DIFFER: " + r.validators_difference + "; expected")
        << " state root " << r.agreed_state_root.substr(0, 16) << " at height " << r.agreed_height
        << " and the same task outcomes\n";
  }
  out << "logs: " << r.home << "/logs (one file per process)\n";
  if (!r.tasks.empty()) {
    out << "audit a task: polnode dispute replay " << r.tasks.front().id_hex.substr(0, 16) << " --home "
        << (r.validator_homes.empty() ? r.home + "/ledger" : r.validator_homes.back()) << "\n";
  }
  out << (r.all_settled && r.audits_match ? "every task settled; every dispute re-executed as the ledger ruled\n"
                                          : "NOT every task settled, or an audit differed\n");
}

Status Run(const FlagSet& flags, Io& io) {
  DevnetOptions o;
  o.home = flags.Get("home");
  if (o.home.empty()) {
    std::string dir = (std::filesystem::temp_directory_path() / "polnode-devnet-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return Status::IOError("cannot create a devnet directory in /tmp");
    o.home = dir;
  }
  o.home = std::filesystem::absolute(o.home).string();
  POLNODE_ASSIGN_OR_RETURN(std::int64_t tasks, flags.GetInt("tasks", 1, 50));
  o.tasks = static_cast<int>(tasks);
  o.model = flags.Get("model");
  // A GPT's default corpus is the Jargon File (Debian's jargon-text), an image model's Fashion-MNIST.
  o.data = flags.Given("data") ? flags.Get("data") : solver::IsGptSpec(o.model) ? "jargon" : "fashion-mnist";
  POLNODE_ASSIGN_OR_RETURN(o.steps, flags.GetInt("steps", 1, 1'000'000));
  POLNODE_ASSIGN_OR_RETURN(o.checkpoint_interval, flags.GetInt("checkpoint-interval", 1, 1'000'000));
  POLNODE_ASSIGN_OR_RETURN(o.batch, flags.GetInt("batch", 1, 65536));
  POLNODE_ASSIGN_OR_RETURN(o.segments, flags.GetInt("segments", 1, 1'000'000));
  o.cheat = flags.Get("cheat");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t rate, flags.GetInt("forced-error-rate", 0, INT64_MAX));
  o.forced_error_rate = static_cast<std::uint64_t>(rate);
  POLNODE_ASSIGN_OR_RETURN(o.block_interval_ms, flags.GetInt("block-interval-ms", 10, 10'000));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t timeout, flags.GetInt("timeout-s", 10, 86'400));
  o.timeout = std::chrono::seconds(timeout);
  o.restart_roles = flags.GetBool("restart-roles");
  o.own_model_and_data = flags.GetBool("own-model-and-data");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t outage, flags.GetInt("ledger-outage-s", 0, 3600));
  o.ledger_outage = std::chrono::seconds(outage);
  POLNODE_ASSIGN_OR_RETURN(std::int64_t base_port, flags.GetInt("base-port", 0, 65535 - 6));
  o.base_port = static_cast<std::uint16_t>(base_port);
  if (flags.Given("validators")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t validators, flags.GetInt("validators", 1, 16));
    o.validators = static_cast<int>(validators);
  }
  o.kill_validator = flags.GetBool("kill-validator");
  if (o.kill_validator && o.validators < 4) {
    return Status::InvalidArgument("--kill-validator needs --validators 4 or more (3 of 4 keep the chain going)");
  }
  if (flags.Given("cometbft")) o.cometbft = flags.Get("cometbft");
  if (o.validators > 0 && (o.ledger_outage.count() > 0 || o.base_port != 0)) {
    return Status::InvalidArgument("--ledger-outage-s and --base-port are for the embedded ledger, not --validators");
  }
  if (o.steps % o.checkpoint_interval != 0) return Status::InvalidArgument("--steps must be a multiple of --checkpoint-interval");

  std::ostream& progress = flags.json() ? io.err : io.out;
  POLNODE_ASSIGN_OR_RETURN(DevnetReport report, RunDevnet(o, progress));
  const std::string json = ReportJson(report);
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(o.home + "/report.json", json + "\n"));
  if (flags.json()) {
    io.out << json << "\n";
  } else {
    PrintText(report, io.out);
  }
  if (!report.all_settled || !report.audits_match) {
    return Status::FailedPrecondition("the devnet ended with unsettled tasks or a disputed audit; see " + o.home + "/report.json");
  }
  return Status::Ok();
}

}  // namespace

int RunDevnetCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Run the whole protocol on this machine as real processes over loopback: a ledger, a submitter with "
                "Fashion-MNIST tasks, an honest and a cheating solver, an honest and a lazy verifier and a "
                "whistleblower; wait until every task settles, audit every dispute and report outcomes, model "
                "accuracy, the pinpointed operators, balance changes and time. Exit 1 if a task did not settle.");
  flags.Value("home", "DIR", "where the devnet lives (homes, logs, report.json); default: a new /tmp/polnode-devnet-*");
  flags.Value("tasks", "N", "tasks the submitter posts", "2");
  flags.Value("model", "SPEC", "model of every task (mlp:, cnn: or gpt:, e.g. gpt:layers=1,heads=2,width=32,context=16)",
              "mlp:784-64-10");
  flags.Value("data", "DIR|FILE",
              "data set: an IDX directory ('fashion-mnist', the default: Debian's dataset-fashion-mnist), or for a gpt: "
              "model a text file ('jargon', the default: Debian's jargon-text)");
  flags.Value("steps", "N", "training steps per task", "300");
  flags.Value("checkpoint-interval", "K", "steps between checkpoints", "50");
  flags.Value("batch", "B", "batch size", "64");
  flags.Value("segments", "Q", "segments each verifier replays", "2");
  flags.Value("cheat", "step=S,node=N|NAME", "the cheating solver's tamper (default: the first weight matrix's update, in the final segment)");
  flags.Value("forced-error-rate", "R", "a round is forced with probability 1/R (0: never)", "0");
  flags.Value("block-interval-ms", "N", "the least milliseconds between blocks (the devnet makes each block once every role has caught up with the last)", "100");
  flags.Value("timeout-s", "S", "give up after this long", "900");
  flags.Bool("restart-roles",
             "kill the honest solver once it has saved a checkpoint past the initial state and the honest verifier "
             "once it starts verifying, then restart both (tests restart safety and resumed training)");
  flags.Bool("own-model-and-data",
             "tasks name an ONNX model (the image model's initial weights, exported) by hash and a copy of the data set "
             "in the submitter's own directory; the submitter serves both over HTTP and every other role fetches them");
  flags.Value("ledger-outage-s", "S",
              "once a task is being verified, kill the ledger, keep it down S seconds and restart it on the same "
              "address (tests that the roles ride out an outage; 0: no outage)",
              "0");
  flags.Value("base-port", "P",
              "serve the ledger on 127.0.0.1:P and the six role daemons on P+1..P+6 (solver-honest, solver-cheat, "
              "verifier-honest, verifier-lazy, whistleblower, submitter); 0: free ports the system picks",
              "0");
  flags.Value("validators", "N",
              "run the chain on N CometBFT validators (each with its own `polnode abci --http` application, on "
              "loopback; roles spread over their APIs) instead of the embedded ledger; the windows are wider in "
              "blocks, since CometBFT makes blocks on its own timer",
              "4");
  flags.Bool("kill-validator",
             "with --validators: once a task is claimed, kill the last validator (SIGKILL, CometBFT and application), "
             "restart it after the others made 20 blocks and time its catch-up");
  flags.Value("cometbft", "PATH", "the CometBFT binary for --validators", "/opt/polnode-cometbft/v0.38.26/bin/cometbft");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
