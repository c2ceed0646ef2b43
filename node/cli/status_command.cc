// `polnode status`: what a ledger is doing, for people watching a devnet and for scripts: its
// height, its tasks in flight (every task with --all) with their verdicts, and the dispute games
// of every task whose verdicts were disputed.
#include <iomanip>
#include <ostream>
#include <sstream>

#include "flag_groups.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode status";
constexpr std::uint64_t kPage = 100;

bool IsClosed(const proto::Task& task) {
  return task.status() == proto::TASK_SETTLED || task.status() == proto::TASK_CANCELLED;
}

// Whether the task has (or had) dispute games: a disputed reject or a whistleblower's challenge.
bool HasDispute(const proto::Task& task) {
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.disputed()) return true;
  }
  return task.challenges_size() > 0;
}

// A key or id for the table: its first 16 hex characters, "-" when empty.
std::string Short(std::string_view raw) {
  if (raw.empty()) return "-";
  return consensus::ToHex(raw).substr(0, 16);
}

struct Verdicts {
  int accept = 0;
  int reject = 0;
  int unavailable = 0;
  int none = 0;
  int overdue = 0;  // slots that missed a verdict deadline and may still answer (VerifierSlot.overdue)
};

Verdicts CountVerdicts(const proto::Task& task) {
  Verdicts v;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.absent()) continue;
    if (slot.overdue()) ++v.overdue;
    if (slot.verdict() == proto::VERDICT_ACCEPT) {
      ++v.accept;
    } else if (slot.verdict() == proto::VERDICT_REJECT) {
      ++v.reject;
    } else if (slot.verdict() == proto::VERDICT_UNAVAILABLE) {
      ++v.unavailable;
    } else {
      ++v.none;
    }
  }
  return v;
}

struct TaskView {
  proto::Task task;
  std::vector<proto::DisputeGame> games;
};

void WriteGameJson(JsonWriter& w, const proto::DisputeGame& game) {
  w.BeginObject()
      .Field("challenger", consensus::ToHex(game.challenger().key()))
      .Field("challenger_is_verifier", game.challenger_is_verifier())
      .Field("defender", consensus::ToHex(game.defender().key()))
      .Field("phase", proto::GamePhase_Name(game.phase()))
      .Field("round", std::uint64_t{game.round()})
      .Field("deadline", game.deadline())
      .Field("moves", static_cast<std::uint64_t>(game.moves_size()))
      .Field("winner", consensus::ToHex(game.winner()))
      .Field("ruling", game.ruling())
      .EndObject();
}

void PrintJson(std::ostream& out, const LedgerClient& ledger, const LedgerInfo& info, std::uint64_t total,
               const std::vector<TaskView>& views) {
  JsonWriter w;
  w.BeginObject()
      .Field("ledger", ledger.url())
      .Field("chain_id", info.chain_id)
      .Field("height", info.height)
      .Field("total_tasks", total)
      .Key("tasks")
      .BeginArray();
  for (const TaskView& view : views) {
    const proto::Task& t = view.task;
    const Verdicts v = CountVerdicts(t);
    w.BeginObject()
        .Field("task_id", consensus::ToHex(t.id()))
        .Field("status", proto::TaskStatus_Name(t.status()))
        .Field("outcome", proto::TaskOutcome_Name(t.outcome()))
        .Field("submitter", consensus::ToHex(t.submitter()))
        .Field("solver", consensus::ToHex(t.solver()))
        .Field("payment", t.spec().payment())
        .Field("submit_height", t.submit_height())
        .Field("deadline", t.deadline())
        .Field("settle_height", t.settle_height())
        .Key("verdicts")
        .BeginObject()
        .Field("accept", v.accept)
        .Field("reject", v.reject)
        .Field("unavailable", v.unavailable)
        .Field("none", v.none)
        .EndObject()
        .Key("verifiers")
        .BeginArray();
    for (int i = 0; i < t.verifiers_size(); ++i) {
      const proto::VerifierSlot& slot = t.verifiers(i);
      w.BeginObject()
          .Field("slot", static_cast<std::int64_t>(i))
          .Field("verifier", consensus::ToHex(slot.verifier()))
          .Field("verdict", proto::Verdict_Name(slot.verdict()))
          .Field("absent", slot.absent())
          .Field("overdue", slot.overdue())
          .Field("disputed", slot.disputed())
          .Field("vouched", slot.vouched())
          .Field("game_result", proto::GameResult_Name(slot.game_result()))
          .EndObject();
    }
    w.EndArray().Key("challenges").BeginArray();
    for (const proto::Challenge& c : t.challenges()) {
      w.BeginObject()
          .Field("challenger", consensus::ToHex(c.challenger()))
          .Field("caught", c.caught())
          .Field("game_result", proto::GameResult_Name(c.game_result()))
          .EndObject();
    }
    w.EndArray().Field("standing", proto::ProofStanding_Name(t.standing())).Key("games").BeginArray();
    for (const proto::DisputeGame& game : view.games) WriteGameJson(w, game);
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
  out << w.str() << "\n";
}

void PrintText(std::ostream& out, const LedgerClient& ledger, const LedgerInfo& info, std::uint64_t total,
               const std::vector<TaskView>& views, bool all) {
  out << "ledger " << ledger.url() << " (chain " << info.chain_id << ") at height " << info.height << ": "
      << views.size() << (all ? " tasks" : " of " + std::to_string(total) + " tasks in flight") << "\n";
  if (views.empty()) return;
  out << std::left << std::setw(18) << "TASK" << std::setw(16) << "STATUS" << std::setw(18) << "SOLVER"
      << std::setw(10) << "DEADLINE" << "VERDICTS (OUTCOME)\n";
  for (const TaskView& view : views) {
    const proto::Task& t = view.task;
    const Verdicts v = CountVerdicts(t);
    std::ostringstream verdicts;
    if (t.verifiers_size() == 0) {
      verdicts << "-";
    } else {
      verdicts << v.accept << " accept, " << v.reject << " reject, " << v.unavailable << " unavailable, " << v.none
               << " pending";
      if (v.overdue > 0) verdicts << " (" << v.overdue << " overdue)";
    }
    if (IsClosed(t)) verdicts << "  " << proto::TaskOutcome_Name(t.outcome());
    out << std::left << std::setw(18) << Short(t.id()) << std::setw(16) << proto::TaskStatus_Name(t.status())
        << std::setw(18) << Short(t.solver()) << std::setw(10)
        << (t.deadline() == 0 ? std::string("-") : std::to_string(t.deadline())) << verdicts.str() << "\n";
    for (const proto::DisputeGame& game : view.games) {
      out << "  game: " << (game.challenger_is_verifier() ? "verifier " : "whistleblower ")
          << Short(game.challenger().key()) << " against solver " << Short(game.defender().key()) << ", " << proto::GamePhase_Name(game.phase()) << " round "
          << game.round() << ", deadline " << game.deadline() << ", " << game.moves_size() << " moves, winner "
          << Short(game.winner()) << "\n";
    }
  }
}

Status Run(const FlagSet& flags, Io& io) {
  POLNODE_ASSIGN_OR_RETURN(LedgerClient ledger, LedgerClient::FromUrl(flags.Get("ledger")));
  const bool all = flags.GetBool("all");
  POLNODE_ASSIGN_OR_RETURN(LedgerInfo info, ledger.Info());
  std::vector<TaskView> views;
  std::uint64_t total = 0;
  for (std::uint64_t start = 0;; start += kPage) {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, ledger.Tasks(start, kPage));
    total = page.total;
    for (proto::Task& task : page.tasks) {
      if (!all && IsClosed(task)) continue;
      TaskView view;
      if (HasDispute(task)) {
        POLNODE_ASSIGN_OR_RETURN(contracts::TaskGames games, ledger.Games(task.id()));
        view.games = std::move(games.games);
      }
      view.task = std::move(task);
      views.push_back(std::move(view));
    }
    if (page.tasks.size() < kPage || start + kPage >= page.total) break;
  }
  if (flags.json()) {
    PrintJson(io.out, ledger, info, total, views);
  } else {
    PrintText(io.out, ledger, info, total, views, all);
  }
  return Status::Ok();
}

}  // namespace

int RunStatusCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Print a ledger's height and its tasks in flight (status, solver, deadline, verdicts) with the "
                "dispute games of every disputed task: challenger, defender, phase, round, deadline, moves, winner.");
  DeclareLedgerFlag(flags, true);
  flags.Bool("all", "list every task, settled and cancelled ones too");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
