// `polnode verifier`: runs a verifier daemon (verifier_role.h) against a ledger.
#include <ostream>

#include "flag_groups.h"
#include "polnode/cli/commands.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/verification_job.h"
#include "polnode/roles/verifier_role.h"
#include "polnode/solver/pol_files.h"

namespace polnode::node {
namespace {

constexpr const char* kName = "polnode verifier";

Status Run(const FlagSet& flags, Io& io) {
  StopSignals stop;  // before anything starts a thread
  POLNODE_ASSIGN_OR_RETURN(RoleOptions role, ReadRoleFlags(flags));
  VerifierOptions options;
  options.lazy = flags.GetBool("lazy");
  POLNODE_ASSIGN_OR_RETURN(ReplayChoice replay, ReadReplayFlags(flags));
  options.stake = replay.stake;
  options.backend = std::move(replay.backend);
  options.threads = replay.threads;
  options.loader = solver::LoadTaskData;
  VerifierRole verifier(std::move(options));
  return RunRoleDaemon("verifier", verifier, role, nullptr, flags.json(), stop, io.out);
}

}  // namespace

int RunVerifierCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kName,
                "Run a verifier: keep verifier stake bonded, replay the segments the ledger assigns this key on "
                "every committed proof it is drawn for (plus the final segment), post the verdict with the hash "
                "of its report (HOME/reports/<task>-<slot>.json), and play the dispute games over its verdicts. Logs "
                "one line per event; serves /metrics.");
  DeclareRoleFlags(flags);
  flags.Bool("lazy", "accept every assigned proof at once without checking it, and answer no dispute (the "
                     "devnet's lazy verifier, which loses its stake to whistleblowers)");
  DeclareReplayFlags(flags, "free verifier stake to keep bonded (default: 4 x the ledger's minimum)");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kName, s);
  return kExitOk;
}

}  // namespace polnode::node
