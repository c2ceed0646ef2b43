// The flags several commands take, each declared once here with one name, one default and one help
// text, and read back into the value the command needs. A command declares the groups it takes and
// its own flags; no flag of a group is declared anywhere else.
#ifndef POLNODE_CLI_FLAG_GROUPS_H_
#define POLNODE_CLI_FLAG_GROUPS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"
#include "polnode/cli/cli.h"
#include "polnode/kernels/backend.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/solver/task_binding.h"

namespace polnode::node {

/// --backend NAME (reference, cpu, cuda or hip; default cpu) and --threads T (0, the default:
/// every hardware thread). Neither ever changes a result.
void DeclareBackendFlags(FlagSet& flags);

/// The backend the flags chose, made once to check that this build and machine have it.
struct BackendChoice {
  std::string name;
  int threads = 1;  // --threads with 0 resolved to the hardware's thread count
  std::unique_ptr<kernels::Backend> backend;
};
/// kInvalidArgument for a thread count out of range or a backend this build or machine lacks: a
/// usage error before any work starts, not a failure at the first step.
[[nodiscard]] Result<BackendChoice> ReadBackendFlags(const FlagSet& flags);

/// --commit-interval-ms MS: how long a proof's checkpoint may wait to be made durable with the ones
/// after it (solver::ProveOptions::commit_interval; default solver::kDefaultCommitInterval).
void DeclareCommitIntervalFlag(FlagSet& flags);
[[nodiscard]] Result<Clock::Duration> ReadCommitIntervalFlag(const FlagSet& flags);

/// --ledger URL: a ledger's HTTP API.
void DeclareLedgerFlag(FlagSet& flags, bool required);

/// --home DIR: a node home (`polnode init` creates one; node_home.h).
void DeclareNodeHomeFlag(FlagSet& flags, bool required);

/// --task FILE: a task document (TOML, or protobuf when the name ends in .pb).
void DeclareTaskFileFlag(FlagSet& flags, bool required);
/// --proof DIR: a proof directory written by `polnode prove`.
void DeclareProofDirFlag(FlagSet& flags, bool required);

/// --log-format text|json: how a daemon writes its event lines (role_runtime.h LogFormat; default
/// text).
void DeclareLogFormatFlag(FlagSet& flags);
[[nodiscard]] Result<LogFormat> ReadLogFormatFlag(const FlagSet& flags);

/// What every role daemon takes: --home (the role's home), --ledger, --listen, --poll-ms and
/// --log-format. Reading them also loads the fetch policy from HOME/role.toml (FetchPolicy::Load;
/// absent: the default).
void DeclareRoleFlags(FlagSet& flags);
[[nodiscard]] Result<RoleOptions> ReadRoleFlags(const FlagSet& flags);

/// What a role that replays proofs (verifier, whistleblower) takes besides the role flags: --stake
/// AMOUNT (free stake to keep bonded; `stake_help` says the default) and the backend flags.
void DeclareReplayFlags(FlagSet& flags, std::string stake_help);
struct ReplayChoice {
  std::uint64_t stake = 0;  // 0 when not given
  std::string backend;
  int threads = 1;
};
[[nodiscard]] Result<ReplayChoice> ReadReplayFlags(const FlagSet& flags);

/// --claim-window BLOCKS, --training-window BLOCKS and --forced-delta D (a tolerant task's forced
/// perturbation size), defaulting to solver::TaskTerms{}'s.
void DeclareTaskTermsFlags(FlagSet& flags);
/// The terms with `payment` and the windows and forced delta the flags give. kInvalidArgument
/// naming the flag for a window out of range or a forced delta that is not a finite float32 > 0.
[[nodiscard]] Result<solver::TaskTerms> ReadTaskTermsFlags(const FlagSet& flags, std::uint64_t payment);

}  // namespace polnode::node

#endif  // POLNODE_CLI_FLAG_GROUPS_H_
