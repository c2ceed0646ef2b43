// `polnode whistleblower`: runs a whistleblower daemon (whistleblower_role.h) against a ledger.
#include <ostream>

#include "flag_groups.h"
#include "polnode/cli/commands.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/verification_job.h"
#include "polnode/roles/whistleblower_role.h"
#include "polnode/solver/pol_files.h"

namespace polnode::node {
namespace {

constexpr const char* kName = "polnode whistleblower";

Status Run(const FlagSet& flags, Io& io) {
  StopSignals stop;  // before anything starts a thread
  POLNODE_ASSIGN_OR_RETURN(RoleOptions role, ReadRoleFlags(flags));
  WhistleblowerOptions options;
  POLNODE_ASSIGN_OR_RETURN(options.check_share, flags.GetDouble("check-share"));
  if (!(options.check_share >= 0.0 && options.check_share <= 1.0)) {
    return Status::InvalidArgument("--check-share must be between 0 and 1");
  }
  POLNODE_ASSIGN_OR_RETURN(ReplayChoice replay, ReadReplayFlags(flags));
  options.stake = replay.stake;
  options.backend = std::move(replay.backend);
  options.threads = replay.threads;
  options.loader = solver::LoadTaskData;
  WhistleblowerRole whistleblower(std::move(options));
  return RunRoleDaemon("whistleblower", whistleblower, role, nullptr, flags.json(), stop, io.out);
}

}  // namespace

int RunWhistleblowerCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kName,
                "Run a whistleblower: keep whistleblower stake bonded, re-do the replays of a deterministic "
                "share of the verifiers on every verified task (each verifier's own segments plus the final "
                "one), dispute the verdicts that differ from its own where a dispute game can show it, play the "
                "games it starts, and log its balance and stake when a task it disputed settles. Logs one line "
                "per event; serves /metrics.");
  DeclareRoleFlags(flags);
  flags.Value("check-share", "X", "share of the verdicts to audit, 0 to 1 (chosen by hashing task, verifier and "
                                  "this key)", "1.0");
  DeclareReplayFlags(flags, "free whistleblower stake to keep bonded (default: 2 x the ledger's minimum)");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kName, s);
  return kExitOk;
}

}  // namespace polnode::node
