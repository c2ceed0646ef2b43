// One way to name things on the command line: a task id or a public key is taken as its 64 hex
// characters or as a unique prefix of at least 8 of them (the 16 that `status`, the devnet report
// and the role logs' short forms print), looked up on the ledger. Shared by every command that
// takes a task id or an account key, so a prefix printed by one is accepted back by all.
#ifndef POLNODE_CLI_ID_LOOKUP_H_
#define POLNODE_CLI_ID_LOOKUP_H_

#include <cstdint>
#include <functional>
#include <string>

#include "polnode/base/status.h"
#include "polnode/contracts/queries.h"
#include "polnode/rpc/ledger_client.h"

namespace polnode::node {

/// The fewest hex characters a prefix may have: 32 bits, so a collision among a ledger's tasks is
/// rare and is reported, never guessed.
inline constexpr std::size_t kMinIdPrefix = 8;

/// The tasks from sequence number `start` (a ledger's /v1/tasks, or a stored chain's query).
using TaskPageFn = std::function<Result<contracts::TaskPage>(std::uint64_t start)>;

/// The full task id (64 lowercase hex) of the one task whose id starts with `text` (64 hex, or at
/// least kMinIdPrefix hex characters, any case). `what` names the argument in errors (e.g. "--task").
/// kInvalidArgument when `text` is not such hex or names several tasks (the first two are listed);
/// kNotFound when no task matches.
[[nodiscard]] Result<std::string> ResolveTaskIdHex(std::string text, std::string_view what, const TaskPageFn& page);

/// ResolveTaskIdHex over `ledger`'s task list, returned as the raw 32 bytes a payload holds.
[[nodiscard]] Result<std::string> ResolveTaskId(const LedgerClient& ledger, std::string text, std::string_view what);

/// The raw 32-byte public key `text` names: 64 hex as given (any account, known to the ledger or
/// not), or a unique prefix of at least kMinIdPrefix hex among the keys the ledger knows to be
/// active: every task's submitter, solver, verifiers and challengers, and every staked verifier.
/// Errors as ResolveTaskIdHex.
[[nodiscard]] Result<std::string> ResolvePubkey(const LedgerClient& ledger, std::string text, std::string_view what);

}  // namespace polnode::node

#endif  // POLNODE_CLI_ID_LOOKUP_H_
