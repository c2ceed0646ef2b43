// `polnode dispute replay TASK_ID`: the auditor's view of a task's dispute games. Fetches the task
// and every game record from a ledger (GET /v1/tasks/{id}/games), re-executes each recorded move
// with the contracts' own rules (contracts/dispute_audit.h: Merkle proofs, bisection, descent and
// the referee's operator on the CPU reference kernel) and prints the path and the ruling, saying
// clearly where the re-execution differs from what the ledger recorded.

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "flag_groups.h"
#include "id_lookup.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/cli.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/chain_store.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/queries.h"
#include "polnode/kernels/op.h"
#include "polnode/ledger/chain_state.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/node_home.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/onnx_origin.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode dispute replay";

std::string ShapeText(const proto::PinpointShape& shape) {
  std::string s = "[";
  for (int i = 0; i < shape.dims_size(); ++i) s += (i ? ", " : "") + std::to_string(shape.dims(i));
  return s + "]";
}

std::string LeafKind(const proto::Task& task, std::uint64_t leaf) {
  const std::uint64_t s = task.spec().state_tensor_count();
  const std::uint64_t n = task.spec().step_leaf_count();
  if (leaf >= n) return "padding";
  if (leaf < s) return "state tensor " + std::to_string(leaf) + " before the step";
  if (leaf == s) return "batch images";
  if (leaf == s + 1) return "batch labels";
  if (leaf == n - 1) return "state after the step";
  return "operator output";
}

// The ONNX file an onnx: task names, read from `path` and checked against the task's hash.
Result<solver::OnnxImport> LoadTaskOnnx(const std::string& path, const proto::Task& task) {
  const std::string& model = task.spec().model_spec();
  if (!solver::IsOnnxModel(model)) {
    return Status::InvalidArgument("--model: the task's model is '" + model + "', not an onnx: file");
  }
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 named, solver::OnnxModelHash(model));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, solver::kMaxOnnxBytes));
  if (consensus::Sha256(bytes) != named) {
    return Status::FailedPrecondition("--model " + path + " has SHA-256 " + consensus::ToHex(consensus::Sha256(bytes)) +
                                      "; the task names " + consensus::ToHex(named));
  }
  Result<solver::OnnxImport> imported = solver::ImportOnnx(bytes);
  if (!imported.ok()) return imported.status().WithContext("--model " + path);
  return imported;
}

// What the text and JSON say of the pinpointed node's origin in an onnx: task's file.
struct OnnxOriginReport {
  std::string text;                         // the origin described, or a hint without the file
  std::optional<solver::OnnxOrigin> origin;  // when the file was given
};

// The report for a game's pinpointed node: the origin when the file was given, a hint when it was
// not, nothing for a built-in model or a game that pinpointed no node.
std::optional<OnnxOriginReport> OnnxOriginFor(const proto::Task& task, const std::optional<solver::OnnxImport>& onnx,
                                              const contracts::GameAudit& audit) {
  if (!audit.node || !solver::IsOnnxModel(task.spec().model_spec())) return std::nullopt;
  if (!onnx) return OnnxOriginReport{"(give --model FILE, the task's ONNX file, to name the file's node)", std::nullopt};
  const solver::OnnxOrigin origin = solver::OnnxOriginOf(*onnx, audit.node->name());
  return OnnxOriginReport{solver::DescribeOnnxOrigin(origin), origin};
}

void WriteText(Io& io, const proto::Task& task, const proto::DisputeGame& game, const contracts::GameAudit& audit,
               const std::optional<solver::OnnxImport>& onnx) {
  std::ostream& out = io.out;
  out << "game of challenger " << consensus::ToHex(game.challenger().key()) << "\n"
      << "  challenger " << (game.challenger_is_verifier() ? "a rejecting verifier" : "a whistleblower")
      << " (says the proof is wrong)\n"
      << "  defender   " << consensus::ToHex(game.defender().key()) << " (the solver: says its proof is right)\n"
      << "  proof      " << consensus::ToHex(game.proof_root())
      << (task.forced_root().empty() ? "" : " (the result proof revealed after a forced round: segment ends)") << "\n";
  if (!game.start_root().empty() && game.start_root() != game.proof_root()) {
    out << "  starts     " << consensus::ToHex(game.start_root()) << " (the committed proof: segment starts)\n";
  }
  out << "  moves      " << game.moves_size() << " recorded, phase " << proto::GamePhase_Name(game.phase()) << "\n";
  if (game.phase() == proto::GAME_OPENING) return;
  out << "  segment    " << game.segment() << " (steps " << game.first_step() << ".."
      << game.first_step() + task.spec().checkpoint_interval() << ")\n";
  if (game.phase() == proto::GAME_REFEREE || !game.true_leaf().empty() || game.leaf() != 0 || game.graph_rounds_size() > 0) {
    out << "  step       " << game.first_step() + game.lo() << " -> " << game.first_step() + game.lo() + 1 << "\n"
        << "  leaf       " << game.leaf() << " (" << LeafKind(task, game.leaf()) << ")\n";
  }
  if (audit.node) {
    out << "  node       " << audit.node->name() << ", operator "
        << kernels::OpName(static_cast<kernels::Op>(audit.node->op())) << ", inputs";
    for (const proto::PinpointInput& in : audit.node->inputs()) out << " " << ShapeText(in.shape());
    out << ", outputs";
    for (const proto::PinpointShape& shape : audit.node->outputs()) out << " " << ShapeText(shape);
    out << "\n";
  }
  if (std::optional<OnnxOriginReport> report = OnnxOriginFor(task, onnx, audit)) {
    out << "  onnx       " << report->text << "\n";
  }
  if (game.phase() == proto::GAME_REFEREE || game.phase() == proto::GAME_RESOLVED) {
    out << "  challenger's hash  " << consensus::ToHex(game.challenger().hash()) << "\n"
        << "  defender's hash    " << consensus::ToHex(game.defender().hash()) << "\n";
  }
  if (!audit.replayed.true_leaf().empty()) out << "  recomputed hash    " << consensus::ToHex(audit.replayed.true_leaf()) << "\n";
  out << "  ledger's ruling    " << (game.ruling().empty() ? "(not decided yet)" : game.ruling()) << "\n";
  if (game.forfeit()) {
    out << "  ended by           forfeit of " << (game.both_forfeited() ? "both sides" : game.challenger_won() ? "the defender" : "the challenger")
        << " (a move owed was not made in time)\n";
  }
  if (!game.winner().empty()) out << "  winner             " << consensus::ToHex(game.winner()) << "\n";
  if (audit.differences.empty()) {
    out << "  audit              re-executed every move: the result matches the ledger's\n";
  } else {
    out << "  audit              MISMATCH: the re-execution differs from the ledger's record\n";
    for (const std::string& d : audit.differences) out << "    - " << d << "\n";
  }
}

void WriteJson(JsonWriter& w, const proto::Task& task, const proto::DisputeGame& game, const contracts::GameAudit& audit,
               const std::optional<solver::OnnxImport>& onnx) {
  w.BeginObject()
      .Field("challenger", consensus::ToHex(game.challenger().key()))
      .Field("challenger_is_verifier", game.challenger_is_verifier())
      .Field("proof_root", consensus::ToHex(game.proof_root()))
      .Field("forfeit", game.forfeit())
      .Field("both_forfeited", game.both_forfeited())
      .Field("defender", consensus::ToHex(game.defender().key()))
      .Field("phase", proto::GamePhase_Name(game.phase()))
      .Field("moves", static_cast<std::uint64_t>(game.moves_size()))
      .Field("segment", game.segment())
      .Field("step", game.first_step() + game.lo())
      .Field("leaf", game.leaf())
      .Field("leaf_kind", LeafKind(task, game.leaf()))
      .Field("challenger_hash", consensus::ToHex(game.challenger().hash()))
      .Field("defender_hash", consensus::ToHex(game.defender().hash()))
      .Field("recomputed_hash", consensus::ToHex(audit.replayed.true_leaf()))
      .Field("ledger_ruling", game.ruling())
      .Field("recomputed_ruling", audit.ruling)
      .Field("winner", consensus::ToHex(game.winner()))
      .Field("matches_ledger", audit.differences.empty());
  if (audit.node) {
    w.Key("node").BeginObject().Field("name", audit.node->name())
        .Field("operator", kernels::OpName(static_cast<kernels::Op>(audit.node->op()))).EndObject();
  }
  if (std::optional<OnnxOriginReport> report = OnnxOriginFor(task, onnx, audit)) {
    w.Key("onnx").BeginObject().Field("origin", report->text);
    if (const std::optional<solver::OnnxOrigin>& o = report->origin) {
      if (o->node != nullptr) w.Field("node", o->node->node).Field("op_type", o->node->op_type);
      if (!o->initializer.empty()) w.Field("initializer", o->initializer);
    }
    w.EndObject();
  }
  w.Key("differences").BeginArray();
  for (const std::string& d : audit.differences) w.String(d);
  w.EndArray().EndObject();
}

// The task, its params and its games: from a running ledger (--ledger: GET /v1/tasks/{id}/games), or
// straight from a node home's stored chain (--home, read-only: works with the ledger stopped or
// running, as verify-chain does).
Result<contracts::TaskGames> LoadGames(const FlagSet& flags, const std::string& task_text) {
  if (flags.Given("ledger") == flags.Given("home")) return Status::InvalidArgument("give exactly one of --ledger URL and --home DIR");
  if (flags.Given("home")) {
    POLNODE_ASSIGN_OR_RETURN(NodeHome home, LoadNodeHome(flags.Get("home")));
    POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<consensus::ChainStore> store,
                             consensus::ChainStore::Open(home.DataDir(), consensus::ChainStoreOptions{.read_only = true}));
    const BlockState committed(*store);
    POLNODE_ASSIGN_OR_RETURN(std::string task_hex, ResolveTaskIdHex(task_text, "TASK_ID", [&](std::uint64_t start) {
                               return contracts::QueryTasks(committed, start, contracts::kMaxTasksPerPage);
                             }));
    POLNODE_ASSIGN_OR_RETURN(std::string task_id, RawFromHex(task_hex, "TASK_ID"));
    return contracts::QueryGames(committed, task_id);
  }
  POLNODE_ASSIGN_OR_RETURN(LedgerClient client, LedgerClient::FromUrl(flags.Get("ledger")));
  POLNODE_ASSIGN_OR_RETURN(std::string task_hex, ResolveTaskIdHex(task_text, "TASK_ID", [&](std::uint64_t start) {
                             return client.Tasks(start, contracts::kMaxTasksPerPage);
                           }));
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint ledger, ParseHttpUrl(flags.Get("ledger")));
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(ledger, "GET", "/v1/tasks/" + task_hex + "/games"));
  if (r.status != 200) {
    return Status::FailedPrecondition("GET /v1/tasks/" + task_hex + "/games answered " + std::to_string(r.status) + ": " + r.body);
  }
  return DecodeTaskGames(r.body);
}

// Returns whether every game matched the ledger.
Result<bool> Replay(const FlagSet& flags, Io& io) {
  if (flags.positional().size() != 1) return Status::InvalidArgument("give exactly one TASK_ID");
  POLNODE_ASSIGN_OR_RETURN(contracts::TaskGames view, LoadGames(flags, flags.positional()[0]));
  const std::string task_hex = consensus::ToHex(view.task.id());
  const proto::Task& task = view.task;
  const proto::Params& params = view.params;
  std::optional<solver::OnnxImport> onnx;
  if (flags.Given("model")) {
    POLNODE_ASSIGN_OR_RETURN(onnx, LoadTaskOnnx(flags.Get("model"), task));
  }
  // --challenger takes a key or a prefix of one, like every id on the command line (id_lookup.h).
  std::string only = flags.Get("challenger");
  for (char& c : only) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (flags.Given("challenger")) {
    if (only.size() < kMinIdPrefix || only.size() > 64 || only.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return Status::InvalidArgument("--challenger must be a public key (64 hex) or its first " +
                                     std::to_string(kMinIdPrefix) + " or more hex characters, got '" + only + "'");
    }
    const bool any = std::any_of(view.games.begin(), view.games.end(), [&only](const proto::DisputeGame& game) {
      return consensus::ToHex(game.challenger().key()).starts_with(only);
    });
    if (!any) return Status::NotFound("--challenger: no dispute game of task " + task_hex + " has a challenger starting with " + only);
  }
  bool all_match = true;
  JsonWriter w;
  if (flags.json()) {
    w.BeginObject().Field("task_id", task_hex).Field("status", proto::TaskStatus_Name(task.status()))
        .Field("outcome", proto::TaskOutcome_Name(task.outcome()));
    w.Key("games").BeginArray();
  } else {
    io.out << "task " << task_hex << ": " << proto::TaskStatus_Name(task.status()) << ", "
           << proto::TaskOutcome_Name(task.outcome()) << ", " << view.games.size() << " dispute game(s)\n";
  }
  for (const proto::DisputeGame& game : view.games) {
    if (!only.empty() && !consensus::ToHex(game.challenger().key()).starts_with(only)) continue;
    POLNODE_ASSIGN_OR_RETURN(contracts::GameAudit audit, contracts::AuditGame(params, task, game));
    all_match = all_match && audit.differences.empty();
    if (flags.json()) {
      WriteJson(w, task, game, audit, onnx);
    } else {
      WriteText(io, task, game, audit, onnx);
    }
  }
  if (flags.json()) {
    w.EndArray().Field("matches_ledger", all_match).EndObject();
    io.out << w.str() << "\n";
  }
  return all_match;
}

}  // namespace

int RunDisputeCommand(const std::vector<std::string>& args, Io& io) {
  constexpr std::string_view kUsage =
      "usage: polnode dispute replay TASK_ID [--home DIR | --ledger URL] [--challenger PUBKEY] [--model FILE] [--json]\n"
      "  replay: re-execute a task's dispute games as an auditor ('polnode dispute replay --help')\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    io.out << kUsage;  // asked for: the usage is the answer, not an error
    return kExitOk;
  }
  if (args.empty() || args[0] != "replay") {
    io.err << kUsage;
    return kExitUsage;
  }
  FlagSet flags(std::string(kCommand),
                "Fetch a task's dispute games from a ledger (--ledger), or read them from a node home's stored "
                "chain (--home, no running ledger needed), re-execute every recorded move (proofs, bisection, "
                "descent, and the referee's operator on the CPU reference kernel) and print the pinpointed "
                "segment, step, operator, both parties' hashes, the recomputed hash and the ruling. Exits 3 when "
                "the re-execution differs from the ledger's record.");
  flags.Positional("TASK_ID", "the task id (64 hex), or its first 8 or more hex characters when they name one task");
  DeclareNodeHomeFlag(flags, false);
  DeclareLedgerFlag(flags, false);
  flags.Value("challenger", "PUBKEY",
              "only the games of this challenger, a rejecting verifier or a whistleblower (64 hex, or a prefix of 8 or "
              "more hex characters)");
  flags.Value("model", "FILE",
              "an onnx: task's model file (checked against the hash the task names): the pinpointed operator is "
              "also named by the file's own node, or by the initializer an optimizer node updates");
  if (auto exit = ParseOrExit(flags, {args.begin() + 1, args.end()}, io)) return *exit;
  Result<bool> matched = Replay(flags, io);
  if (!matched.ok()) return ReportError(io, kCommand, matched.status());
  if (!*matched) {
    io.err << "polnode dispute replay: the re-execution differs from the ledger's record\n";
    return kExitMismatch;
  }
  return kExitOk;
}

}  // namespace polnode::node
