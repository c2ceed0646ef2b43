// `polnode solver`: the miner's daemon (solver_role.h).
#include "flag_groups.h"
#include "polnode/cli/commands.h"
#include "polnode/roles/solver_role.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode solver";

Status Run(const FlagSet& flags, Io& io) {
  StopSignals stop;  // before the backend starts its threads
  POLNODE_ASSIGN_OR_RETURN(RoleOptions options, ReadRoleFlags(flags));
  SolverOptions solver;
  // The role makes its own backend on its training thread; this one only checks the flags.
  POLNODE_ASSIGN_OR_RETURN(BackendChoice backend, ReadBackendFlags(flags));
  solver.backend = std::move(backend.name);
  solver.threads = backend.threads;
  POLNODE_ASSIGN_OR_RETURN(std::int64_t stake, flags.GetInt("stake", 0, INT64_MAX));
  solver.stake = static_cast<std::uint64_t>(stake);
  POLNODE_ASSIGN_OR_RETURN(std::int64_t max_tasks, flags.GetInt("max-tasks", 0, INT64_MAX));
  solver.max_tasks = static_cast<std::uint64_t>(max_tasks);
  POLNODE_ASSIGN_OR_RETURN(solver.commit_interval, ReadCommitIntervalFlag(flags));
  if (flags.Given("cheat")) {
    POLNODE_ASSIGN_OR_RETURN(solver.cheat, ParseCheatSpec(flags.Get("cheat")));
  }
  SolverRole role(std::move(solver));
  return RunRoleDaemon("solver", role, options, nullptr, flags.json(), stop, io.out);
}

}  // namespace

int RunSolverCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Run a solver: stake, claim open tasks this machine can train, train them with proof of learning "
                "(resumable across restarts), serve the proofs over HTTP, commit their roots, dispute wrong reject "
                "verdicts, reveal, and answer dispute games. Stops on SIGINT/SIGTERM.");
  DeclareRoleFlags(flags);
  DeclareBackendFlags(flags);
  flags.Value("stake", "AMOUNT", "solver stake to keep free for a claim (0: the chain's min_stake_solver)", "0");
  flags.Value("max-tasks", "N", "claim at most N tasks in this run (0: no limit)", "0");
  DeclareCommitIntervalFlag(flags);
  flags.Value("cheat", "step=S,node=N|NAME[,output=O][,bit=B]",
              "devnet and tests: train dishonestly, corrupting one operator output at one step");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
