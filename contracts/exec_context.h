// What every state transition receives: the block it runs in, the genesis params, the store to
// read and write (a per-transaction overlay, or the block store for end-of-block processing) and
// the list its events go to.
#ifndef POLNODE_CONTRACTS_EXEC_CONTEXT_H_
#define POLNODE_CONTRACTS_EXEC_CONTEXT_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/contracts.pb.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/state_store.h"

namespace polnode::contracts {

struct ExecContext {
  const BlockContext& block;
  const proto::Params& params;
  StateStore& state;
  std::vector<Event>& events;

  /// Records an event of `type` with the given attributes.
  void Emit(std::string type, std::initializer_list<std::pair<std::string_view, std::string>> attributes) {
    Event event{std::move(type), {}};
    for (const auto& [key, value] : attributes) event.attributes.emplace_back(std::string(key), value);
    events.push_back(std::move(event));
  }
};

/// True for errors that mean the block cannot be executed at all (the store failed, stored state
/// is corrupt, or polnode has a bug), as opposed to a transaction being invalid. Such errors must
/// abort the block: turning them into a failed transaction would make the outcome depend on the
/// health of one node's disk instead of on the chain.
inline bool IsBlockFatal(const Status& status) {
  return status.code() == StatusCode::kIOError || status.code() == StatusCode::kCorruption ||
         status.code() == StatusCode::kInternal || status.code() == StatusCode::kUnavailable;
}

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_EXEC_CONTEXT_H_
