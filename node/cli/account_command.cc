// `polnode account`: what a key holds on a ledger and where its money is, for operators who ask
// "what did I earn, what is locked, which tasks is this key part of": balance and nonce, each
// role's stake (bonded, locked in tasks, free, unbonding), and every task the key submitted,
// solved, verified or challenged, with its status and outcome.
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <string>
#include <vector>

#include "flag_groups.h"
#include "id_lookup.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/node_home.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode account";
constexpr std::uint64_t kPage = 100;
// A role daemon's key in its home (role_runtime's LoadOrCreateRoleKey).
constexpr char kRoleKeyFile[] = "role.key";

struct RoleStake {
  const char* name;
  proto::Role role;
  proto::StakeRecord stake;
};

// This key's part in one task.
struct TaskPart {
  proto::Task task;
  std::string role;     // submitter, solver, verifier or whistleblower
  std::string verdict;  // a verifier's verdict; a whistleblower's game result; else ""
};

std::uint64_t Free(const proto::StakeRecord& s) { return s.bonded() >= s.locked() ? s.bonded() - s.locked() : 0; }

// The raw public key --key FILE or --home DIR names (a role home's role.key, else a node home's
// node key); "" when PUBKEY names it (resolved on the ledger: it may be a prefix). Also the ledger
// URL a node home implies when --ledger is not given.
Result<std::string> AccountKey(const FlagSet& flags, std::string& ledger_url) {
  const int given = static_cast<int>(!flags.positional().empty()) + static_cast<int>(flags.Given("key")) +
                    static_cast<int>(flags.Given("home"));
  if (given != 1 || flags.positional().size() > 1) {
    return Status::InvalidArgument("name the account once: PUBKEY (64 hex or a unique prefix), --key FILE or --home DIR");
  }
  if (!flags.positional().empty()) return std::string();
  std::string key_path = flags.Get("key");
  if (flags.Given("home")) {
    const std::string home = flags.Get("home");
    key_path = home + "/" + kRoleKeyFile;
    if (!std::filesystem::exists(key_path)) {
      POLNODE_ASSIGN_OR_RETURN(NodeHome node_home, LoadNodeHome(home));
      key_path = node_home.KeyPath();
      if (ledger_url.empty()) ledger_url = "http://" + node_home.config.listen;
    }
  }
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, consensus::ReadKeyFile(key_path));
  const auto& bytes = key.PublicKey().bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Every task `pubkey` took part in, in submission order.
Result<std::vector<TaskPart>> TasksOf(const LedgerClient& ledger, const std::string& pubkey) {
  std::vector<TaskPart> parts;
  for (std::uint64_t start = 0;; start += kPage) {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, ledger.Tasks(start, kPage));
    for (const proto::Task& task : page.tasks) {
      if (task.submitter() == pubkey) parts.push_back({task, "submitter", ""});
      if (task.solver() == pubkey) parts.push_back({task, "solver", ""});
      for (const proto::VerifierSlot& slot : task.verifiers()) {
        if (slot.verifier() != pubkey) continue;
        parts.push_back({task, "verifier", slot.absent() ? "absent" : proto::Verdict_Name(slot.verdict())});
      }
      for (const proto::Challenge& challenge : task.challenges()) {
        if (challenge.challenger() == pubkey) {
          parts.push_back({task, "whistleblower", proto::GameResult_Name(challenge.game_result())});
        }
      }
    }
    if (page.tasks.size() < kPage || start + kPage >= page.total) break;
  }
  return parts;
}

void PrintJson(std::ostream& out, const std::string& pubkey, const LedgerInfo& info, const proto::Account& account,
               const std::vector<RoleStake>& stakes, const std::vector<TaskPart>& parts) {
  JsonWriter w;
  w.BeginObject()
      .Field("pubkey", consensus::ToHex(pubkey))
      .Field("chain_id", info.chain_id)
      .Field("height", info.height)
      .Field("balance", account.balance())
      .Field("nonce", account.nonce())
      .Key("stakes")
      .BeginObject();
  for (const RoleStake& s : stakes) {
    w.Key(s.name)
        .BeginObject()
        .Field("bonded", s.stake.bonded())
        .Field("locked", s.stake.locked())
        .Field("free", Free(s.stake))
        .Field("unbonding", s.stake.unbonding())
        .EndObject();
  }
  w.EndObject().Key("tasks").BeginArray();
  for (const TaskPart& p : parts) {
    w.BeginObject()
        .Field("task_id", consensus::ToHex(p.task.id()))
        .Field("role", p.role)
        .Field("status", proto::TaskStatus_Name(p.task.status()))
        .Field("outcome", proto::TaskOutcome_Name(p.task.outcome()))
        .Field("payment", p.task.spec().payment())
        .Field("verdict", p.verdict)
        .EndObject();
  }
  w.EndArray().EndObject();
  out << w.str() << "\n";
}

void PrintText(std::ostream& out, const std::string& pubkey, const LedgerInfo& info, const proto::Account& account,
               const std::vector<RoleStake>& stakes, const std::vector<TaskPart>& parts) {
  out << "account " << consensus::ToHex(pubkey) << " on chain " << info.chain_id << " at height " << info.height
      << "\n"
      << "balance " << account.balance() << ", nonce " << account.nonce() << "\n\n"
      << std::left << std::setw(15) << "STAKE" << std::setw(14) << "BONDED" << std::setw(14) << "LOCKED"
      << std::setw(14) << "FREE" << "UNBONDING\n";
  for (const RoleStake& s : stakes) {
    out << std::left << std::setw(15) << s.name << std::setw(14) << s.stake.bonded() << std::setw(14)
        << s.stake.locked() << std::setw(14) << Free(s.stake) << s.stake.unbonding() << "\n";
  }
  out << "\n" << parts.size() << " task part(s)\n";
  if (parts.empty()) return;
  out << std::left << std::setw(66) << "TASK" << std::setw(15) << "ROLE" << std::setw(16) << "STATUS"
      << std::setw(26) << "OUTCOME" << "VERDICT\n";
  for (const TaskPart& p : parts) {
    out << std::left << std::setw(66) << consensus::ToHex(p.task.id()) << std::setw(15) << p.role << std::setw(16)
        << proto::TaskStatus_Name(p.task.status()) << std::setw(26) << proto::TaskOutcome_Name(p.task.outcome())
        << (p.verdict.empty() ? "-" : p.verdict) << "\n";
  }
}

Status Run(const FlagSet& flags, Io& io) {
  std::string ledger_url = flags.Get("ledger");
  POLNODE_ASSIGN_OR_RETURN(std::string pubkey, AccountKey(flags, ledger_url));
  if (ledger_url.empty()) return Status::InvalidArgument("give --ledger URL (or --home of a node home)");
  POLNODE_ASSIGN_OR_RETURN(LedgerClient ledger, LedgerClient::FromUrl(ledger_url));
  if (pubkey.empty()) {
    POLNODE_ASSIGN_OR_RETURN(pubkey, ResolvePubkey(ledger, flags.positional()[0], "PUBKEY"));
  }
  POLNODE_ASSIGN_OR_RETURN(LedgerInfo info, ledger.Info());
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, ledger.Account(pubkey));
  std::vector<RoleStake> stakes = {{"solver", proto::ROLE_SOLVER, {}},
                                   {"verifier", proto::ROLE_VERIFIER, {}},
                                   {"whistleblower", proto::ROLE_WHISTLEBLOWER, {}}};
  for (RoleStake& s : stakes) {
    POLNODE_ASSIGN_OR_RETURN(s.stake, ledger.Stake(pubkey, s.role));
  }
  POLNODE_ASSIGN_OR_RETURN(std::vector<TaskPart> parts, TasksOf(ledger, pubkey));
  if (flags.json()) {
    PrintJson(io.out, pubkey, info, account, stakes, parts);
  } else {
    PrintText(io.out, pubkey, info, account, stakes, parts);
  }
  return Status::Ok();
}

}  // namespace

int RunAccountCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Print what an account holds on a ledger: balance and nonce, each role's stake (bonded, locked "
                "in tasks, free, unbonding) and every task it submitted, solved, verified or challenged with "
                "the task's status, outcome and its verdict. Name the account by PUBKEY, --key FILE, or --home "
                "DIR (a role daemon's home, or a node home, whose ledger is then the default).");
  flags.Positional("[PUBKEY]", "the account's x-only public key: 64 hex, or its first 8 or more hex characters when "
                               "they name one key the ledger's tasks or verifier set hold");
  flags.Value("key", "FILE", "a key file; the account is its public key");
  DeclareNodeHomeFlag(flags, false);
  DeclareLedgerFlag(flags, false);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  const Status s = Run(flags, io);
  if (!s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
