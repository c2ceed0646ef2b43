// `polnode whistleblower`: runs a whistleblower daemon (whistleblower_role.h) against a ledger.
#include <ostream>

#include "commands.h"
#include "pol_cli.h"
#include "role_runtime.h"
#include "whistleblower_role.h"

namespace polnode::node {
namespace {

constexpr const char* kName = "polnode whistleblower";

Status Run(const FlagSet& flags, Io& io) {
  POLNODE_ASSIGN_OR_RETURN(RoleOptions role, RoleOptionsFromFlags(flags));
  WhistleblowerOptions options;
  POLNODE_ASSIGN_OR_RETURN(options.check_share, flags.GetDouble("check-share"));
  if (!(options.check_share >= 0.0 && options.check_share <= 1.0)) {
    return Status::InvalidArgument("--check-share must be between 0 and 1");
  }
  if (flags.Given("stake")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t stake, flags.GetInt("stake", 1, INT64_MAX));
    options.stake = static_cast<std::uint64_t>(stake);
  }
  options.backend = flags.Get("backend");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t threads, flags.GetInt("threads", 1, 1024));
  options.threads = static_cast<int>(threads);
  // A backend this machine lacks is a usage error now, not a failure at the first audit.
  POLNODE_RETURN_IF_ERROR(kernels::MakeBackend(options.backend, options.threads).status().WithContext("--backend"));
  options.loader = LoadTaskData;
  WhistleblowerRole whistleblower(std::move(options));
  return RunRoleDaemon("whistleblower", whistleblower, role, nullptr, flags.json(), io);
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
  flags.Value("stake", "AMOUNT", "free whistleblower stake to keep bonded (default: 2 x the ledger's minimum)");
  flags.Value("backend", "NAME", "replay backend: reference, cpu, cuda or hip", "cpu");
  flags.Value("threads", "T", "replay threads", "1");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kName, s);
  return kExitOk;
}

}  // namespace polnode::node
