// StateStore: the key-value seam between the contracts state machine and whatever holds the ledger
// state. The ledger core implements it over RocksDB with a per-block overlay that commits in one
// atomic WriteBatch together with the block (consensus/chain_store.h); tests use MemoryStateStore.
//
// Every piece of protocol state lives behind this interface, nothing in memory survives between
// calls into the Application, so the state root computed by the ledger core over these pairs is a
// commitment to the whole protocol state.
//
// Key namespaces (ASCII prefixes; <pk> is the 64-hex lowercase x-only public key, <id> the 64-hex
// task id, <h> a height as 16 lowercase hex digits so bytewise order is height order):
//   "meta/chain_id"            chain id string (raw bytes)
//   "meta/height"              last finalized height, 8 bytes big-endian
//   "meta/supply"              total supply fixed at genesis, 8 bytes big-endian
//   "meta/task_count"          number of tasks ever submitted, 8 bytes big-endian
//   "params"                   proto::Params
//   "jackpot"                  proto::Jackpot (forced-error jackpot pool)
//   "acct/<pk>"                proto::Account (balance, next nonce)
//   "stake/<role>/<pk>"        proto::StakeRecord; <role> is solver | verifier | whistleblower
//   "verifiers"                proto::VerifierSet (sorted keys with any verifier stake)
//   "task/<id>"                proto::Task
//   "taskseq/<h>"              task id (32 raw bytes), by submission order, for listing
//   "due/<h>"                  proto::DueList: deadlines and draws processed at the end of block h
//   "game/<id>/<pk>"           proto::DisputeGame: the pinpoint game over verifier <pk>'s verdict
//   "spec/<hash>"              proto::SpecIndex: the task a spec hash belongs to
//   "pub/<id>/<c>"             proto::PublishedCheckpoint: checkpoint <c> (16 hex digits) as published
//   "pub/<id>/<c>/<t>/<k>"     chunk <k> of tensor <t> of that checkpoint: float32 bytes
//   "reveal/<id>"              proto::RevealedCheckpoints: a forced round's reveal, checked
//
// Values are canonical encodings: protobuf messages written with deterministic serialization by
// this library only (one writer, one schema version, so one encoding per value), or the raw
// fixed-width integers named above. Amounts are uint64 base units; there is no floating point
// anywhere in contracts.
#ifndef POLNODE_CONTRACTS_STATE_STORE_H_
#define POLNODE_CONTRACTS_STATE_STORE_H_

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "polnode/base/status.h"

namespace polnode::contracts {

/// Visits one pair of a scan; returning false stops the scan early.
using StateVisitor = std::function<bool(std::string_view key, std::string_view value)>;

/// Ordered key-value state. Keys and values are arbitrary bytes; an empty value is a present key.
///
/// Contract for implementations:
///  - Get returns the latest Put for the key, nullopt after Delete or when never written. Errors
///    (kIOError, kCorruption) are for the backing store failing, never for a missing key.
///  - Put and Delete cannot fail: implementations buffer writes in memory (the ledger core's block
///    overlay) and report storage failures when the block is committed, which aborts the block.
///  - Scan visits, in ascending bytewise key order, every present key starting with `prefix`,
///    with buffered writes merged over the backing state. Writing during a scan is not allowed.
///  - Not thread-safe: one caller at a time.
///
/// The state machine uses Scan only for queries and supply audits, never to decide a state
/// transition, so execution cost does not grow with unrelated state.
class StateStore {
 public:
  virtual ~StateStore() = default;

  /// The value of `key`, or nullopt when absent.
  [[nodiscard]] virtual Result<std::optional<std::string>> Get(std::string_view key) const = 0;

  /// Sets `key` to `value`, replacing any previous value.
  virtual void Put(std::string key, std::string value) = 0;

  /// Removes `key`; removing an absent key is not an error.
  virtual void Delete(std::string key) = 0;

  /// Visits every present pair whose key starts with `prefix`, in ascending key order.
  [[nodiscard]] virtual Status Scan(std::string_view prefix, const StateVisitor& visit) const = 0;
};

/// A complete in-memory StateStore (tests, tools, and a scratch space for proposal checks).
class MemoryStateStore final : public StateStore {
 public:
  [[nodiscard]] Result<std::optional<std::string>> Get(std::string_view key) const override;
  void Put(std::string key, std::string value) override;
  void Delete(std::string key) override;
  [[nodiscard]] Status Scan(std::string_view prefix, const StateVisitor& visit) const override;

  /// Every pair, sorted by key (for equality checks in tests).
  const std::map<std::string, std::string, std::less<>>& pairs() const { return pairs_; }

 private:
  std::map<std::string, std::string, std::less<>> pairs_;
};

/// Buffers writes over a read-only base; reads see the buffered writes first. The state machine
/// runs every transaction in one of these so a failed transaction leaves no partial writes: on
/// success the buffer is flushed into the block's store, on failure it is dropped.
class OverlayStateStore final : public StateStore {
 public:
  /// `base` must outlive the overlay and must not change while the overlay holds writes.
  explicit OverlayStateStore(const StateStore& base) : base_(base) {}

  [[nodiscard]] Result<std::optional<std::string>> Get(std::string_view key) const override;
  void Put(std::string key, std::string value) override;
  void Delete(std::string key) override;
  [[nodiscard]] Status Scan(std::string_view prefix, const StateVisitor& visit) const override;

  /// Buffered writes by key: a value, or nullopt for a delete.
  using Writes = std::map<std::string, std::optional<std::string>, std::less<>>;

  /// Applies the buffered writes to `target` in ascending key order and empties the buffer.
  void FlushTo(StateStore& target);

  /// Moves the buffered writes out (the buffer is empty afterwards).
  Writes TakeWrites() { return std::exchange(writes_, {}); }

  /// Applies `writes` to `target` in ascending key order.
  static void Apply(Writes writes, StateStore& target);

  /// Number of buffered writes (puts and deletes).
  std::size_t pending_writes() const { return writes_.size(); }

 private:
  const StateStore& base_;
  Writes writes_;  // nullopt = deleted
};

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_STATE_STORE_H_
