#include "id_lookup.h"

#include <cctype>
#include <set>
#include <vector>

#include "polnode/consensus/hex.h"

namespace polnode::node {
namespace {

// `text` lowercased, checked to be a full id or a long enough hex prefix of one.
Result<std::string> NormalizedPrefix(std::string text, std::string_view what, std::string_view kind) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool hex = !text.empty() && text.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex || text.size() > 64 || text.size() < kMinIdPrefix) {
    return Status::InvalidArgument(std::string(what) + " must be a " + std::string(kind) +
                                   " (64 hex) or its first " + std::to_string(kMinIdPrefix) +
                                   " or more hex characters, got '" + text + "'");
  }
  return text;
}

// The one candidate starting with `prefix` (candidates are 64 lowercase hex, without repeats).
Result<std::string> OneMatch(const std::string& prefix, const std::vector<std::string>& candidates,
                             std::string_view what, std::string_view kind) {
  std::vector<std::string> matches;
  for (const std::string& c : candidates) {
    if (c.compare(0, prefix.size(), prefix) == 0) matches.push_back(c);
  }
  if (matches.empty()) {
    return Status::NotFound(std::string(what) + ": no " + std::string(kind) + " on the ledger starts with " + prefix);
  }
  if (matches.size() > 1) {
    return Status::InvalidArgument(std::string(what) + ": " + prefix + " is ambiguous, it names " +
                                   std::to_string(matches.size()) + " " + std::string(kind) + "s (" + matches[0] +
                                   ", " + matches[1] + (matches.size() > 2 ? ", ..." : "") + "): give more of it");
  }
  return matches[0];
}

// Every task, page by page.
Status ForEachTask(const TaskPageFn& page, const std::function<void(const proto::Task&)>& visit) {
  for (std::uint64_t start = 0;;) {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage tasks, page(start));
    for (const proto::Task& task : tasks.tasks) visit(task);
    start += tasks.tasks.size();
    if (tasks.tasks.empty() || start >= tasks.total) return Status::Ok();
  }
}

}  // namespace

Result<std::string> ResolveTaskIdHex(std::string text, std::string_view what, const TaskPageFn& page) {
  POLNODE_ASSIGN_OR_RETURN(std::string prefix, NormalizedPrefix(std::move(text), what, "task id"));
  std::vector<std::string> ids;
  POLNODE_RETURN_IF_ERROR(ForEachTask(page, [&](const proto::Task& task) { ids.push_back(consensus::ToHex(task.id())); }));
  return OneMatch(prefix, ids, what, "task id");
}

Result<std::string> ResolveTaskId(const LedgerClient& ledger, std::string text, std::string_view what) {
  POLNODE_ASSIGN_OR_RETURN(std::string hex, ResolveTaskIdHex(std::move(text), what, [&](std::uint64_t start) {
                             return ledger.Tasks(start, contracts::kMaxTasksPerPage);
                           }));
  return RawFromHex(hex, what);
}

Result<std::string> ResolvePubkey(const LedgerClient& ledger, std::string text, std::string_view what) {
  POLNODE_ASSIGN_OR_RETURN(std::string prefix, NormalizedPrefix(std::move(text), what, "public key"));
  // A full key names any account, even one the ledger has never seen (a transfer's new recipient).
  if (prefix.size() == 64) return RawFromHex(prefix, what);
  std::set<std::string> keys;
  const auto add = [&keys](const std::string& raw) {
    if (!raw.empty()) keys.insert(consensus::ToHex(raw));
  };
  POLNODE_RETURN_IF_ERROR(ForEachTask(
      [&](std::uint64_t start) { return ledger.Tasks(start, contracts::kMaxTasksPerPage); },
      [&](const proto::Task& task) {
        add(task.submitter());
        add(task.solver());
        for (const proto::VerifierSlot& slot : task.verifiers()) add(slot.verifier());
        for (const proto::Challenge& challenge : task.challenges()) add(challenge.challenger());
      }));
  POLNODE_ASSIGN_OR_RETURN(std::vector<contracts::VerifierStake> verifiers, ledger.Verifiers());
  for (const contracts::VerifierStake& v : verifiers) add(v.pubkey);
  POLNODE_ASSIGN_OR_RETURN(std::string hex, OneMatch(prefix, {keys.begin(), keys.end()}, what, "public key"));
  return RawFromHex(hex, what);
}

}  // namespace polnode::node
