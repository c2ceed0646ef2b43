// `polnode verifier`: runs a verifier daemon (verifier_role.h) against a ledger.
#include <ostream>

#include "commands.h"
#include "pol_cli.h"
#include "role_runtime.h"
#include "verifier_role.h"

namespace polnode::node {
namespace {

constexpr const char* kName = "polnode verifier";

Status Run(const FlagSet& flags, Io& io) {
  POLNODE_ASSIGN_OR_RETURN(RoleOptions role, RoleOptionsFromFlags(flags));
  VerifierOptions options;
  options.lazy = flags.GetBool("lazy");
  if (flags.Given("stake")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t stake, flags.GetInt("stake", 1, INT64_MAX));
    options.stake = static_cast<std::uint64_t>(stake);
  }
  options.backend = flags.Get("backend");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t threads, flags.GetInt("threads", 1, 1024));
  options.threads = static_cast<int>(threads);
  // A backend this machine lacks is a usage error now, not a failure at the first assignment.
  POLNODE_RETURN_IF_ERROR(kernels::MakeBackend(options.backend, options.threads).status().WithContext("--backend"));
  options.loader = LoadTaskData;
  VerifierRole verifier(std::move(options));
  return RunRoleDaemon("verifier", verifier, role, nullptr, flags.json(), io);
}

}  // namespace

int RunVerifierCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kName,
                "Run a verifier: keep verifier stake bonded, replay the segments the ledger assigns this key on "
                "every committed proof it is drawn for (plus the final segment), post the verdict with the hash "
                "of its report (HOME/reports/<task>.json), and play the dispute games over its verdicts. Logs "
                "one line per event; serves /metrics.");
  DeclareRoleFlags(flags);
  flags.Bool("lazy", "accept every assigned proof at once without checking it, and answer no dispute (the "
                     "devnet's lazy verifier, which loses its stake to whistleblowers)");
  flags.Value("stake", "AMOUNT", "free verifier stake to keep bonded (default: 4 x the ledger's minimum)");
  flags.Value("backend", "NAME", "replay backend: reference, cpu, cuda or hip", "cpu");
  flags.Value("threads", "T", "replay threads", "1");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kName, s);
  return kExitOk;
}

}  // namespace polnode::node
