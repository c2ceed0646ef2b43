// ChainStore: the ledger's RocksDB database. A block and every state write it causes are committed
// in ONE rocksdb::WriteBatch, so a crash (kill -9, power loss with sync on) at any moment leaves
// the database at the last whole block: never a block without its state, never state without its
// block.
//
// Key layout (one default column family, prefixes keep the kinds apart and sorted):
//   "s/" + key            -> state value (contracts' key space, unchanged bytes)
//   "b/" + u64be(height)  -> encoded block (block.proto bytes)
//   "t/" + tx id (32)     -> u64be(height) + u32be(index in block) + u8(result code) + log
//                            (the tx's execution result, written in the block's batch; a
//                            12-byte record has none: the block recorded no outcomes, or the
//                            store was written before outcomes were kept)
//   "m/tip"               -> u64be(height) + block hash (32)
// Big-endian heights make RocksDB's bytewise order the height order.
//
// The committed state is also kept in memory, loaded by the first StateRoot and then updated by
// each Write: the state root hashes every pair each block, and a RocksDB scan steps over every
// version of every key still in the memtable and unmerged files, so its cost grew with the blocks
// since the last compaction (27 ms after 100 blocks of 1,000 transfers over 10,000 accounts) where
// the in-memory walk costs what the state's size does. Once loaded, GetState reads it too (a
// std::map look-up instead of a memtable skip-list search). RocksDB stays the durable copy and
// serves scans and snapshots. The price is memory: the state is held twice (RocksDB's caches and
// this copy), which an incremental state root (a new state_root.h version) would remove.
//
// Visibility: a Write makes the block durable first (RocksDB write, fsync with sync on) and only
// then publishes it to GetState, ScanState, StateRoot, Snapshot, GetEncodedBlock and FindTx, which
// until then answer from the parent block: their RocksDB reads go through a snapshot taken before
// the write, and the in-memory state is updated at publication. (tip(), the writer's record of
// what Prepare must follow, moves at the write.) Write(commit, publish) lets the caller run the
// publication under a lock of its own while the slow part (the fsync) runs outside it.
//
// Thread safety: one writer (the block producer) calls Prepare/Write; any thread may read. Reads
// that need several keys consistent with each other use a Snapshot.
#ifndef POLNODE_CONSENSUS_CHAIN_STORE_H_
#define POLNODE_CONSENSUS_CHAIN_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/state_root.h"

namespace rocksdb {
class DB;
class Snapshot;
class WriteBatch;
}  // namespace rocksdb

namespace polnode::consensus {

/// The state writes of one block: key -> new value, or nullopt for a delete. Sorted bytewise, so
/// applying it and merging it into scans is deterministic.

/// The last committed block.
struct ChainTip {
  std::uint64_t height = 0;
  Hash256 hash{};
};

/// How a committed transaction's execution ended. A tx whose payload failed is still in its
/// block (it paid the fee and used its nonce), so being committed does not mean it took effect.
struct TxOutcome {
  StatusCode code = StatusCode::kOk;  // kOk, or why the payload failed (its state writes dropped)
  std::string log;                    // the failure message; empty on success
};

/// Where a committed transaction lives, and how it ended.
struct TxLocation {
  std::uint64_t height = 0;
  std::uint32_t index = 0;
  std::optional<TxOutcome> outcome;  // nullopt when the block recorded none (stores older than outcomes)
};

/// What one block commits besides its state writes.
struct BlockRecord {
  std::uint64_t height = 0;
  Hash256 hash{};
  std::string encoded_block;          // the block as stored and served (block.proto bytes)
  std::vector<Hash256> tx_ids;        // in block order; indexed for look-up by id
  std::vector<TxOutcome> tx_outcomes; // one per tx id, in block order; empty records none
};

struct ChainStoreOptions {
  /// fsync the write-ahead log on every block commit. Off only in tests and benchmarks that do not
  /// care about power loss (kill -9 is survived either way: the WAL is in the OS page cache).
  bool sync = true;
  /// Open without the write lock (RocksDB's OpenForReadOnly): reads see the database as it was at
  /// open time, even while another process writes it; Prepare/Write fail with kFailedPrecondition.
  bool read_only = false;
};

/// Visits one pair of a scan; return false to stop early.
using StateVisitor = std::function<bool(std::string_view key, std::string_view value)>;

/// A point-in-time read view of the committed state. Keeps the RocksDB snapshot alive; must not
/// outlive the ChainStore that made it.
class StateSnapshot {
 public:
  ~StateSnapshot();
  StateSnapshot(const StateSnapshot&) = delete;
  StateSnapshot& operator=(const StateSnapshot&) = delete;

  /// The value of `key`, nullopt when absent; kIOError/kCorruption from RocksDB.
  [[nodiscard]] Result<std::optional<std::string>> Get(std::string_view key) const;
  /// Visits every pair whose key starts with `prefix`, in ascending key order.
  [[nodiscard]] Status Scan(std::string_view prefix, const StateVisitor& visit) const;

 private:
  friend class ChainStore;
  StateSnapshot(rocksdb::DB* db, std::shared_ptr<const rocksdb::Snapshot> snapshot)
      : db_(db), snapshot_(std::move(snapshot)) {}
  rocksdb::DB* db_;
  std::shared_ptr<const rocksdb::Snapshot> snapshot_;  // released by its deleter
};

/// A block and its state writes, encoded into one WriteBatch but not yet written. Dropping it
/// without ChainStore::Write is exactly what a crash between building and committing looks like.
class PreparedCommit {
 public:
  PreparedCommit(PreparedCommit&&) noexcept;
  PreparedCommit& operator=(PreparedCommit&&) noexcept;
  ~PreparedCommit();

  /// The tip this commit will produce.
  const ChainTip& new_tip() const { return new_tip_; }
  /// Bytes of the encoded batch (for metrics and tests).
  std::size_t batch_bytes() const;

 private:
  friend class ChainStore;
  PreparedCommit();
  std::unique_ptr<rocksdb::WriteBatch> batch_;
  StateDelta delta_;  // the state writes in batch_, applied to the in-memory state by Write
  ChainTip new_tip_;
  std::optional<ChainTip> expected_parent_;
};

class ChainStore {
 public:
  /// Opens (creating if needed) the database in directory `path`. kIOError if RocksDB refuses
  /// (e.g. another process holds its lock), kCorruption if the tip record is malformed.
  [[nodiscard]] static Result<std::unique_ptr<ChainStore>> Open(const std::string& path,
                                                                const ChainStoreOptions& options = {});
  ~ChainStore();
  ChainStore(const ChainStore&) = delete;
  ChainStore& operator=(const ChainStore&) = delete;

  /// The last committed block; nullopt for a store with no block yet (before genesis).
  std::optional<ChainTip> tip() const;

  /// Committed state value of `key`; nullopt when absent.
  [[nodiscard]] Result<std::optional<std::string>> GetState(std::string_view key) const;

  /// Visits committed state with `pending` merged on top (a value in `pending` replaces the
  /// committed one, nullopt hides it), over keys starting with `prefix`, ascending.
  [[nodiscard]] Status ScanState(std::string_view prefix, const StateDelta& pending,
                                 const StateVisitor& visit) const;

  /// The state root (state_root.h) of committed state with `pending` applied on top. The hashes
  /// it computes are kept, so that a Write of exactly this `pending` onto exactly this state
  /// installs them instead of hashing the same buckets and nodes again.
  [[nodiscard]] Result<Hash256> StateRoot(const StateDelta& pending) const;

  /// The encoded block at `height`; kNotFound past the tip.
  [[nodiscard]] Result<std::string> GetEncodedBlock(std::uint64_t height) const;

  /// Where the transaction with id `tx_id` was committed; kNotFound if it never was.
  [[nodiscard]] Result<TxLocation> FindTx(const Hash256& tx_id) const;

  /// Builds the WriteBatch for `block` plus `delta`. kFailedPrecondition unless block.height is
  /// tip+1 (or 0 on an empty store), and on a store opened read-only; kInvalidArgument when
  /// tx_outcomes is neither empty nor one per tx id. Writes nothing.
  [[nodiscard]] Result<PreparedCommit> Prepare(const BlockRecord& block, const StateDelta& delta) const;

  /// Writes a prepared batch atomically and advances the tip. kFailedPrecondition if the tip moved
  /// since Prepare; kIOError if RocksDB fails (then nothing of the block is visible).
  [[nodiscard]] Status Write(PreparedCommit commit);

  /// Calls its argument once: the step that makes a written block's state visible (see the file
  /// comment).
  using Publisher = std::function<void(const std::function<void()>& make_visible)>;

  /// As Write(commit), but after the durable write calls `publish`, which must call make_visible
  /// exactly once before it returns; until it does, reads see the parent block. Write
  /// returns when `publish` has. Not called when the write fails.
  [[nodiscard]] Status Write(PreparedCommit commit, const Publisher& publish);

  /// A consistent read view of the committed state as published at this moment.
  std::unique_ptr<StateSnapshot> Snapshot() const;

  const std::string& path() const { return path_; }

 private:
  ChainStore(std::string path, std::unique_ptr<rocksdb::DB> db, std::optional<ChainTip> tip,
             ChainStoreOptions options);

  // Loads state_ from RocksDB unless it is loaded already.
  [[nodiscard]] Status LoadState() const;
  // The snapshot reads of RocksDB must use: the one taken before an unpublished write, or null
  // (the latest data) when every write is published.
  std::shared_ptr<const rocksdb::Snapshot> ReadSnapshot() const;

  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  ChainStoreOptions options_;
  mutable std::mutex tip_mu_;  // guards tip_ only; RocksDB does its own locking
  std::optional<ChainTip> tip_;
  // The committed state in memory (see the file comment); nullopt until the first StateRoot.
  mutable std::shared_mutex state_mu_;
  mutable std::optional<StateTree> state_;
  // The last StateRoot's pending writes and hashes, for Write (see StateRoot). Guarded by
  // last_root_mu_: StateRoot runs under a shared state_mu_, so several may run at once.
  struct LastRoot {
    StateDelta pending;
    StateRootUpdate update;
  };
  mutable std::mutex last_root_mu_;
  mutable std::optional<LastRoot> last_root_;
  // Set by Write just before its RocksDB write, cleared at its publication (see the file comment).
  mutable std::mutex unpublished_mu_;
  std::shared_ptr<const rocksdb::Snapshot> unpublished_;
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_CHAIN_STORE_H_
