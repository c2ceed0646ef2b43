// Ledger: the embedded single-producer ledger. It drives the contracts' Application (ABCI-shaped)
// over the RocksDB ChainStore: admits transactions into the mempool, makes blocks, and answers
// the read-only questions of the HTTP API.
//
// Block production, one block at a time (ProduceBlock):
//   1. candidates = mempool txs in admission order; the Application picks the block's txs
//      (PrepareProposal) and executes them (FinalizeBlock) into a BlockState overlay;
//   2. state root over committed state + overlay (state_root.h), header, producer signature;
//   3. block + tx index + every state write + the new tip go to RocksDB in ONE WriteBatch; the
//      block's state becomes visible to admission and queries only once that write (and its
//      fsync) is done, under the state lock (see SubmitTx);
//   4. Application::Commit, then the mempool drops the included txs and rechecks the rest (those
//      whose CheckTx read a key the block wrote; CheckTx depends on nothing else).
// A crash anywhere leaves RocksDB at the previous whole block; the Application keeps nothing in
// memory that a restart would need, so Open simply resumes at the stored tip.
//
// Genesis: on an empty store, Open runs InitChain and commits block 0 (no txs, zero prev_hash,
// the genesis state root). On a non-empty store Open recomputes the genesis state root from the
// genesis file and refuses to start if it differs from block 0's (the file was changed).
//
// Thread safety: SubmitTx, ReadCommitted, status and block reads may run on any number of threads at
// once; ProduceBlock is serialized internally. Reads see whole blocks only: a block (its state,
// its bytes, its tx index) becomes visible under an exclusive lock that the readers' shared locks
// exclude. That lock is not held across the block's RocksDB write and fsync, during which readers
// see its parent.
#ifndef POLNODE_LEDGER_LEDGER_H_
#define POLNODE_LEDGER_LEDGER_H_

#include <array>
#include <optional>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/consensus/block.h"
#include "polnode/consensus/chain_store.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/mempool.h"
#include "polnode/contracts/application.h"
#include "polnode/ledger/chain_state.h"
#include "polnode/ledger/genesis_file.h"

namespace polnode::node {

struct LedgerOptions {
  std::string data_dir;                 // RocksDB directory (created if missing)
  bool sync_writes = true;              // fsync each block's batch
  std::size_t max_txs_per_block = 1000;
  std::uint64_t max_block_tx_bytes = 4u << 20;
  std::size_t max_tx_bytes = 64 * 1024;
  std::size_t mempool_max_txs = 50000;
};

/// A snapshot of where the ledger stands.
struct LedgerStatus {
  std::string chain_id;
  std::uint64_t height = 0;
  consensus::Hash256 tip_hash{};
  consensus::Hash256 state_root{};
  std::int64_t tip_time_unix_ms = 0;
  std::size_t mempool_size = 0;
  std::array<std::uint8_t, 32> producer{};
};

/// What ProduceBlock made.
struct ProducedBlock {
  std::uint64_t height = 0;
  consensus::Hash256 hash{};
  std::size_t tx_count = 0;      // txs in the block
  std::size_t failed_txs = 0;    // of those, txs whose payload failed (they still paid the fee)
  std::size_t dropped_from_mempool = 0;  // pending txs the post-commit recheck removed
  std::int64_t elapsed_us = 0;   // the ledger's clock time of ProduceBlock: execution, state root, signing, commit, recheck
};

/// Monotonic counters for /metrics.
struct LedgerCounters {
  std::atomic<std::uint64_t> txs_accepted{0};
  std::atomic<std::uint64_t> txs_rejected{0};
  std::atomic<std::uint64_t> txs_committed{0};
  std::atomic<std::uint64_t> txs_failed{0};
  std::atomic<std::uint64_t> blocks_produced{0};
  std::atomic<std::uint64_t> block_errors{0};
};

class Ledger {
 public:
  /// Opens (or creates, with block 0) the ledger in options.data_dir for `genesis`, producing
  /// blocks with `producer_key`. kFailedPrecondition if the store belongs to another chain or
  /// another genesis; InitChain's errors for a bad genesis; ChainStore::Open's errors. `clock`
  /// (which must outlive the ledger) times each block's production (ProducedBlock::elapsed_us).
  [[nodiscard]] static Result<std::unique_ptr<Ledger>> Open(const LedgerOptions& options, const GenesisFile& genesis,
                                                            const consensus::SecretKey& producer_key,
                                                            Clock& clock = SystemClock());

  /// Mempool admission (mempool.h) with Application::CheckTx against the committed state. Returns
  /// the tx id, or the reason for rejection.
  [[nodiscard]] Result<consensus::Hash256> SubmitTx(std::string_view encoded_envelope);

  /// Makes, signs and commits the next block (empty if the mempool is). `time_unix_ms` is the
  /// producer's clock; the header gets max(time, parent's time) so block times never go back.
  /// On error nothing is committed and the mempool is unchanged.
  [[nodiscard]] Result<ProducedBlock> ProduceBlock(std::int64_t time_unix_ms);

  LedgerStatus GetStatus() const;

  /// The block at `height` in its stored (protobuf) form; kNotFound past the tip.
  [[nodiscard]] Result<std::string> GetEncodedBlock(std::uint64_t height) const;

  /// Where a committed tx is and how its execution ended; kNotFound if it is not in any block.
  [[nodiscard]] Result<consensus::TxLocation> FindTx(const consensus::Hash256& id) const;

  /// Whether a tx with this id waits in the mempool.
  bool IsPending(const consensus::Hash256& id) const { return mempool_.Contains(id); }

  /// The nonce `signer`'s next tx needs given its pending ones (Mempool::NextPendingNonce).
  std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const {
    return mempool_.NextPendingNonce(signer);
  }

  /// Calls `read` with the committed state (contracts/queries.h reads it) and returns what it
  /// returns. It sees whole blocks only: no block commits while it runs.
  template <typename Read>
  auto ReadCommitted(Read&& read) const {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    const BlockState committed(*store_);
    return read(static_cast<const contracts::StateStore&>(committed));
  }

  const LedgerCounters& counters() const { return counters_; }
  const std::string& chain_id() const { return chain_id_; }

 private:
  Ledger(const LedgerOptions& options, std::unique_ptr<consensus::ChainStore> store, std::string chain_id,
         const consensus::SecretKey& producer_key, Clock& clock);

  // Application::CheckTx of a pending tx against `committed`, recording in tx.check_reads the
  // keys it read (see the recheck in ProduceBlock).
  [[nodiscard]] Status CheckPending(consensus::PendingTx& tx, const contracts::StateStore& committed) const;
  // Commits block 0 on an empty store.
  [[nodiscard]] Status CommitGenesis(const GenesisFile& genesis);
  // Checks that the stored chain was made from `genesis`; loads the tip header.
  [[nodiscard]] Status CheckStoredGenesis(const GenesisFile& genesis);
  // Signs `header`, encodes the block and commits it with `delta` and its txs' outcomes (one per
  // tx, in block order, or none) in one batch. `tx_ids` are the TxIds of block.txs, in order (the
  // caller has them already; hashing 1,000 txs again cost a third of a millisecond). Caller holds
  // produce_mu_.
  [[nodiscard]] Status SignAndCommit(consensus::Block block, const consensus::StateDelta& delta,
                                     std::vector<consensus::TxOutcome> outcomes,
                                     std::vector<consensus::Hash256> tx_ids);

  const LedgerOptions options_;
  std::unique_ptr<consensus::ChainStore> store_;
  const std::string chain_id_;
  const consensus::SecretKey producer_key_;
  Clock& clock_;
  contracts::Application app_;
  consensus::Mempool mempool_;
  LedgerCounters counters_;

  std::mutex produce_mu_;               // one ProduceBlock at a time
  mutable std::shared_mutex state_mu_;  // exclusive only while a committed block's state is published
  consensus::BlockHeader tip_header_;   // guarded by state_mu_
};

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_LEDGER_H_
