#include "polnode/ledger/ledger.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>

#include "polnode/consensus/merkle.h"
#include "polnode/consensus/state_root.h"

namespace polnode::node {
namespace {

using consensus::Block;
using consensus::BlockHeader;
using consensus::Hash256;

// A read-only view of a StateStore that remembers which keys were read through it. CheckTx is a
// function of the tx and the values it reads, nothing else, so a pending tx whose recorded reads a
// block did not write still passes; the post-commit recheck skips it instead of re-running.
class ReadRecorder final : public contracts::StateStore {
 public:
  explicit ReadRecorder(const contracts::StateStore& base) : base_(base) {
    // A transfer's check reads three keys (chain id, params, account): room for a few from the
    // start, so the vector allocates once instead of growing through 1, 2 and 4 elements.
    reads_.reserve(kTypicalReads);
  }

  [[nodiscard]] Result<std::optional<std::string>> Get(std::string_view key) const override {
    Result<std::optional<std::string>> value = base_.Get(key);
    if (value.ok()) reads_.emplace_back(key);
    return value;
  }
  // CheckTx receives a const store, so it cannot write; a write here would be a bug.
  void Put(std::string, std::string) override { std::abort(); }
  void Delete(std::string) override { std::abort(); }
  [[nodiscard]] Status Scan(std::string_view prefix, const contracts::StateVisitor& visit) const override {
    scanned_ = true;  // a scan's read set is open-ended: such a tx is always rechecked
    return base_.Scan(prefix, visit);
  }

  /// The keys read, or nullopt after a scan.
  std::optional<std::vector<std::string>> TakeReads() {
    if (scanned_) return std::nullopt;
    return std::move(reads_);
  }

 private:
  static constexpr std::size_t kTypicalReads = 4;
  const contracts::StateStore& base_;
  mutable std::vector<std::string> reads_;
  mutable bool scanned_ = false;
};

// Whether `delta` writes none of `reads`.
bool Untouched(const std::vector<std::string>& reads, const consensus::StateDelta& delta) {
  return std::none_of(reads.begin(), reads.end(), [&](const std::string& k) { return delta.contains(k); });
}

// The state root of the genesis state, computed without touching the chain store.
Result<Hash256> GenesisStateRoot(const contracts::Application& app, const GenesisFile& genesis) {
  contracts::MemoryStateStore scratch;
  POLNODE_RETURN_IF_ERROR(app.InitChain(genesis.spec, scratch).WithContext("genesis"));
  consensus::StateTree tree;
  for (const auto& [k, v] : scratch.pairs()) tree.Set(k, v);
  tree.Rehash();
  return tree.root();
}

}  // namespace

Ledger::Ledger(const LedgerOptions& options, std::unique_ptr<consensus::ChainStore> store, std::string chain_id,
               const consensus::SecretKey& producer_key, Clock& clock)
    : options_(options),
      store_(std::move(store)),
      chain_id_(std::move(chain_id)),
      producer_key_(producer_key),
      clock_(clock),
      mempool_(consensus::MempoolOptions{chain_id_, options.mempool_max_txs, options.max_tx_bytes}) {}

Result<std::unique_ptr<Ledger>> Ledger::Open(const LedgerOptions& options, const GenesisFile& genesis,
                                             const consensus::SecretKey& producer_key, Clock& clock) {
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<consensus::ChainStore> store,
                           consensus::ChainStore::Open(options.data_dir, consensus::ChainStoreOptions{options.sync_writes}));
  const bool empty = !store->tip().has_value();
  std::unique_ptr<Ledger> ledger(new Ledger(options, std::move(store), genesis.spec.chain_id(), producer_key, clock));
  if (empty) {
    POLNODE_RETURN_IF_ERROR(ledger->CommitGenesis(genesis));
  } else {
    POLNODE_RETURN_IF_ERROR(ledger->CheckStoredGenesis(genesis));
  }
  return ledger;
}

Status Ledger::CommitGenesis(const GenesisFile& genesis) {
  std::lock_guard<std::mutex> produce(produce_mu_);
  BlockState state(*store_);
  POLNODE_RETURN_IF_ERROR(app_.InitChain(genesis.spec, state).WithContext("genesis"));
  Block block;
  block.header.chain_id = chain_id_;
  block.header.height = 0;
  block.header.time_unix_ms = genesis.genesis_time_unix_ms;
  block.header.tx_root = consensus::ComputeTxRoot(block.txs);
  POLNODE_RETURN_IF_ERROR(consensus::SetBlockRandomness(producer_key_, block.header, Hash256{}));
  POLNODE_ASSIGN_OR_RETURN(block.header.state_root, store_->StateRoot(state.delta()));
  return SignAndCommit(std::move(block), state.delta(), {}, {});
}

Status Ledger::CheckStoredGenesis(const GenesisFile& genesis) {
  POLNODE_ASSIGN_OR_RETURN(std::string genesis_bytes, store_->GetEncodedBlock(0));
  POLNODE_ASSIGN_OR_RETURN(Block block0, consensus::DecodeBlock(genesis_bytes));
  if (block0.header.chain_id != chain_id_) {
    return Status::FailedPrecondition("the data directory holds chain '" + block0.header.chain_id +
                                      "' but the genesis file is for '" + chain_id_ + "'");
  }
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, GenesisStateRoot(app_, genesis));
  if (root != block0.header.state_root) {
    return Status::FailedPrecondition(
        "the genesis file does not match block 0 of the stored chain (its state root differs); "
        "was genesis.json edited after the chain started?");
  }
  POLNODE_ASSIGN_OR_RETURN(std::string tip_bytes, store_->GetEncodedBlock(store_->tip()->height));
  POLNODE_ASSIGN_OR_RETURN(Block tip, consensus::DecodeBlock(tip_bytes));
  std::unique_lock<std::shared_mutex> lock(state_mu_);
  tip_header_ = tip.header;
  return Status::Ok();
}

Status Ledger::SignAndCommit(Block block, const consensus::StateDelta& delta,
                             std::vector<consensus::TxOutcome> outcomes, std::vector<Hash256> tx_ids) {
  if (tx_ids.size() != block.txs.size()) return Status::Internal("SignAndCommit: one tx id per tx expected");
  POLNODE_RETURN_IF_ERROR(consensus::SignBlockHeader(producer_key_, block.header));
  consensus::BlockRecord record;
  record.height = block.header.height;
  record.hash = consensus::BlockHash(block.header);
  record.tx_ids = std::move(tx_ids);
  record.tx_outcomes = std::move(outcomes);
  POLNODE_ASSIGN_OR_RETURN(record.encoded_block, consensus::EncodeBlock(block));
  POLNODE_ASSIGN_OR_RETURN(consensus::PreparedCommit prepared, store_->Prepare(record, delta));
  // The write and its fsync run without the state lock, so admission and queries go on meanwhile
  // against the previous block (the store keeps its state reads there until publication); only
  // the publication, which makes the block's state visible, and the tip swap take the lock
  // exclusively (see SubmitTx for why that is enough).
  return store_->Write(std::move(prepared), [&](const std::function<void()>& make_visible) {
    std::unique_lock<std::shared_mutex> lock(state_mu_);
    make_visible();
    tip_header_ = block.header;
  });
}

Result<Hash256> Ledger::SubmitTx(std::string_view encoded_envelope) {
  // Decoding and the signature check (the expensive part) run before any lock is taken, so they
  // never delay a block commit and proceed in parallel on every HTTP thread.
  Result<consensus::PendingTx> prechecked = mempool_.Precheck(encoded_envelope);
  if (!prechecked.ok()) {
    counters_.txs_rejected.fetch_add(1, std::memory_order_relaxed);
    return prechecked.status();
  }
  // The state lock, held shared until the tx is in the pool, keeps every block's publication out
  // of the span between CheckTx's reads and the insertion: a tx checked against the state before a
  // block can never slip in after that block's recheck. That is what lets CheckTx run outside the
  // pool's lock, on every admitting thread at once. The invariant: the store's state reads switch
  // from a block's parent to the block only inside the exclusive section (ChainStore::Write's
  // publication, see SignAndCommit; the RocksDB write and fsync before it are invisible to state
  // reads), and the recheck runs after that section. So a check that read any state of the parent
  // finished its insertion before the section, and the recheck sees the tx; a check that starts
  // after the section reads the block's state only.
  std::shared_lock<std::shared_mutex> lock(state_mu_);
  BlockState committed(*store_);
  Result<Hash256> id = mempool_.InsertAgainstStableState(
      std::move(prechecked).value(), [&](consensus::PendingTx& tx) { return CheckPending(tx, committed); });
  (id.ok() ? counters_.txs_accepted : counters_.txs_rejected).fetch_add(1, std::memory_order_relaxed);
  return id;
}

Status Ledger::CheckPending(consensus::PendingTx& tx, const contracts::StateStore& committed) const {
  ReadRecorder recorder(committed);
  Result<std::uint64_t> account_nonce =
      app_.CheckTxAndNextNonce(contracts::MakeVerifiedTx(tx.envelope, tx.id, tx.encoded.size()), recorder);
  if (account_nonce.ok()) tx.account_nonce = *account_nonce;
  tx.check_reads = recorder.TakeReads();
  return account_nonce.status();
}

Result<ProducedBlock> Ledger::ProduceBlock(std::int64_t time_unix_ms) {
  std::lock_guard<std::mutex> produce(produce_mu_);
  const Clock::TimePoint started = clock_.Now();
  BlockHeader parent;
  {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    parent = tip_header_;
  }
  // Only this thread commits, so the committed state cannot change under the overlay below.
  // Candidates are executable already (no signer behind a nonce gap), so a few more than fit are
  // enough to fill the block when some fail their simulation.
  std::vector<consensus::PendingTx> pending =
      mempool_.Candidates(options_.max_txs_per_block * 2, options_.max_block_tx_bytes * 2);
  std::map<Hash256, consensus::PendingTx*> by_id;
  std::vector<contracts::VerifiedTx> candidates;
  candidates.reserve(pending.size());
  for (consensus::PendingTx& tx : pending) {
    by_id.emplace(tx.id, &tx);
    // The candidates are copies made for this block, and only their encoded bytes and ids are
    // needed after this: the envelope's strings move instead of being copied a second time.
    consensus::TxEnvelope& e = tx.envelope;
    candidates.push_back(contracts::VerifiedTx{e.signer_pubkey, e.nonce, std::move(e.chain_id),
                                               std::move(e.payload_type), std::move(e.payload), tx.id,
                                               tx.encoded.size()});
  }
  // The block's randomness is the producer's VRF output on its height and the parent's randomness:
  // fixed before any transaction is chosen, so no choice of contents can steer it.
  Block block;
  block.header.chain_id = chain_id_;
  block.header.height = parent.height + 1;
  POLNODE_RETURN_IF_ERROR(consensus::SetBlockRandomness(producer_key_, block.header, parent.randomness));
  contracts::BlockContext context;
  context.height = block.header.height;
  context.time_unix_ms = std::max(time_unix_ms, parent.time_unix_ms);
  context.randomness = block.header.randomness;
  context.proposer = producer_key_.PublicKey().bytes();
  const contracts::ProposalLimits limits{options_.max_txs_per_block, options_.max_block_tx_bytes};

  BlockState state(*store_);
  auto chosen = app_.PrepareProposal(std::move(candidates), context, state, limits);
  if (!chosen.ok()) {
    counters_.block_errors.fetch_add(1, std::memory_order_relaxed);
    return chosen.status().WithContext("prepare proposal");
  }
  auto result = app_.FinalizeBlock(context, *chosen, state);
  if (!result.ok()) {
    counters_.block_errors.fetch_add(1, std::memory_order_relaxed);
    return result.status().WithContext("finalize block " + std::to_string(context.height));
  }

  block.header.prev_hash = consensus::BlockHash(parent);
  block.header.time_unix_ms = context.time_unix_ms;
  std::vector<Hash256> ids;
  for (const contracts::VerifiedTx& tx : *chosen) {
    auto it = by_id.find(tx.tx_hash);
    if (it == by_id.end()) return Status::Internal("prepare proposal returned a transaction that was not a candidate");
    // Each candidate is chosen at most once, and the copy is this block's to use up.
    block.txs.push_back(std::move(it->second->encoded));
    ids.push_back(tx.tx_hash);
  }
  block.header.tx_root = consensus::MerkleRoot(ids);
  auto root = store_->StateRoot(state.delta());
  if (!root.ok()) {
    counters_.block_errors.fetch_add(1, std::memory_order_relaxed);
    return root.status();
  }
  block.header.state_root = *root;
  const Hash256 hash = consensus::BlockHash(block.header);
  if (result->tx_results.size() != ids.size()) {
    counters_.block_errors.fetch_add(1, std::memory_order_relaxed);
    return Status::Internal("finalize block returned " + std::to_string(result->tx_results.size()) +
                            " tx results for " + std::to_string(ids.size()) + " txs");
  }
  std::vector<consensus::TxOutcome> outcomes;
  outcomes.reserve(ids.size());
  for (const contracts::TxResult& r : result->tx_results) outcomes.push_back(consensus::TxOutcome{r.code, r.log});
  if (Status s = SignAndCommit(std::move(block), state.delta(), std::move(outcomes), ids); !s.ok()) {
    counters_.block_errors.fetch_add(1, std::memory_order_relaxed);
    return s.WithContext("commit block " + std::to_string(context.height));
  }
  // The block is durable: the Application may forget it was pending.
  if (auto committed = app_.Commit(); !committed.ok()) return committed.status().WithContext("application commit");

  ProducedBlock produced;
  produced.height = context.height;
  produced.hash = hash;
  produced.tx_count = ids.size();
  for (const contracts::TxResult& r : result->tx_results) produced.failed_txs += r.code != StatusCode::kOk ? 1 : 0;
  mempool_.Remove(ids);
  {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    BlockState committed(*store_);
    // Only txs that read a key this block wrote can have changed their verdict; the rest are
    // skipped, which keeps the pool's lock (and so admission) from waiting on a full re-run.
    produced.dropped_from_mempool = mempool_.Recheck(
        [&](consensus::PendingTx& tx) {
          if (tx.check_reads && Untouched(*tx.check_reads, state.delta())) return Status::Ok();
          return CheckPending(tx, committed);
        },
        context.height);
  }
  produced.elapsed_us =
      std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - started).count();
  counters_.blocks_produced.fetch_add(1, std::memory_order_relaxed);
  counters_.txs_committed.fetch_add(produced.tx_count, std::memory_order_relaxed);
  counters_.txs_failed.fetch_add(produced.failed_txs, std::memory_order_relaxed);
  return produced;
}

LedgerStatus Ledger::GetStatus() const {
  LedgerStatus status;
  {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    status.height = tip_header_.height;
    status.tip_hash = consensus::BlockHash(tip_header_);
    status.state_root = tip_header_.state_root;
    status.tip_time_unix_ms = tip_header_.time_unix_ms;
  }
  status.chain_id = chain_id_;
  status.mempool_size = mempool_.size();
  status.producer = producer_key_.PublicKey().bytes();
  return status;
}

Result<std::string> Ledger::GetEncodedBlock(std::uint64_t height) const { return store_->GetEncodedBlock(height); }

Result<consensus::TxLocation> Ledger::FindTx(const Hash256& id) const { return store_->FindTx(id); }

}  // namespace polnode::node
