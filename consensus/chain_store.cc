#include "polnode/consensus/chain_store.h"

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/snapshot.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/state_root.h"

namespace polnode::consensus {
namespace {

constexpr std::string_view kStatePrefix = "s/";
constexpr std::string_view kBlockPrefix = "b/";
constexpr std::string_view kTxPrefix = "t/";
constexpr std::string_view kTipKey = "m/tip";

void PutBe(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t GetBe(std::string_view in, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(in[static_cast<std::size_t>(i)]);
  return v;
}

std::string BlockKey(std::uint64_t height) {
  std::string k(kBlockPrefix);
  PutBe(k, height, 8);
  return k;
}

std::string TxKey(const Hash256& id) {
  std::string k(kTxPrefix);
  k.append(reinterpret_cast<const char*>(id.data()), id.size());
  return k;
}

std::string StateKey(std::string_view key) {
  std::string k(kStatePrefix);
  k.append(key);
  return k;
}

std::string EncodeTip(const ChainTip& tip) {
  std::string v;
  PutBe(v, tip.height, 8);
  v.append(reinterpret_cast<const char*>(tip.hash.data()), tip.hash.size());
  return v;
}

Result<ChainTip> DecodeTip(std::string_view v) {
  if (v.size() != 8 + 32) return Status::Corruption("chain store: tip record has " + std::to_string(v.size()) + " bytes, want 40");
  ChainTip tip;
  tip.height = GetBe(v, 8);
  std::memcpy(tip.hash.data(), v.data() + 8, 32);
  return tip;
}

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  std::string msg = "rocksdb " + std::string(what) + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsNotFound()) return Status::NotFound(std::move(msg));
  return Status::IOError(std::move(msg));
}

// Read options that read through `snapshot` (null: the latest data). The caller keeps the
// snapshot alive while they are in use.
rocksdb::ReadOptions ReadingAt(const std::shared_ptr<const rocksdb::Snapshot>& snapshot) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot.get();
  return ro;
}

// A snapshot of `db` now, released when its last holder lets go.
std::shared_ptr<const rocksdb::Snapshot> SharedSnapshot(rocksdb::DB* db) {
  return {db->GetSnapshot(), [db](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); }};
}

Result<std::optional<std::string>> GetOptional(rocksdb::DB* db, const rocksdb::ReadOptions& ro,
                                               const std::string& key) {
  std::string value;
  rocksdb::Status s = db->Get(ro, ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  POLNODE_RETURN_IF_ERROR(FromRocks(s, "get"));
  return std::optional<std::string>(std::move(value));
}

// Merges the committed "s/" keys under `prefix` (read at `ro`) with `pending` and visits the
// result in ascending key order.
Status MergedScan(rocksdb::DB* db, const rocksdb::ReadOptions& ro, std::string_view prefix,
                  const StateDelta& pending, const StateVisitor& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  const std::string full_prefix = StateKey(prefix);
  it->Seek(ToSlice(full_prefix));
  auto pit = pending.lower_bound(prefix);
  auto committed_valid = [&] { return it->Valid() && it->key().starts_with(ToSlice(full_prefix)); };
  auto pending_valid = [&] { return pit != pending.end() && std::string_view(pit->first).starts_with(prefix); };
  while (true) {
    const bool c = committed_valid();
    const bool p = pending_valid();
    if (!c && !p) break;
    std::string_view ckey = c ? ToView(it->key()).substr(kStatePrefix.size()) : std::string_view();
    if (p && (!c || std::string_view(pit->first) <= ckey)) {
      if (c && std::string_view(pit->first) == ckey) it->Next();  // pending overrides committed
      if (pit->second.has_value() && !visit(pit->first, *pit->second)) return Status::Ok();
      ++pit;
    } else {
      if (!visit(ckey, ToView(it->value()))) return Status::Ok();
      it->Next();
    }
  }
  return FromRocks(it->status(), "scan");
}

}  // namespace

// ---- StateSnapshot --------------------------------------------------------------------------

StateSnapshot::~StateSnapshot() = default;

Result<std::optional<std::string>> StateSnapshot::Get(std::string_view key) const {
  return GetOptional(db_, ReadingAt(snapshot_), StateKey(key));
}

Status StateSnapshot::Scan(std::string_view prefix, const StateVisitor& visit) const {
  static const StateDelta kNoPending;
  return MergedScan(db_, ReadingAt(snapshot_), prefix, kNoPending, visit);
}

// ---- PreparedCommit -------------------------------------------------------------------------

PreparedCommit::PreparedCommit() : batch_(std::make_unique<rocksdb::WriteBatch>()) {}
PreparedCommit::PreparedCommit(PreparedCommit&&) noexcept = default;
PreparedCommit& PreparedCommit::operator=(PreparedCommit&&) noexcept = default;
PreparedCommit::~PreparedCommit() = default;

std::size_t PreparedCommit::batch_bytes() const { return batch_ ? batch_->GetDataSize() : 0; }

// ---- ChainStore -----------------------------------------------------------------------------

ChainStore::ChainStore(std::string path, std::unique_ptr<rocksdb::DB> db, std::optional<ChainTip> tip,
                       ChainStoreOptions options)
    : path_(std::move(path)), db_(std::move(db)), options_(options), tip_(tip) {}

ChainStore::~ChainStore() {
  if (db_) {
    // Close flushes nothing we rely on (the WAL already holds every commit) but releases the lock
    // file cleanly; its status cannot be acted upon in a destructor.
    (void)db_->Close();
  }
}

Result<std::unique_ptr<ChainStore>> ChainStore::Open(const std::string& path, const ChainStoreOptions& options) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.paranoid_checks = true;
  // A block's batch goes into the memtable (a skip list) key by key, each insert a search among
  // the entries already there: with the default 64 MiB memtable (some 150 blocks of 1,000
  // transfers) those searches took 3.7 ms of a 20 ms block commit (perf over ledger_bench). An
  // 8 MiB one holds fewer entries to search and miss the cache on; the more frequent flushes run
  // on RocksDB's background thread.
  opts.write_buffer_size = std::size_t{8} << 20;
  // Default WAL recovery mode (kPointInTimeRecovery) drops a torn tail record after a crash, which
  // is exactly "the last whole batch survives".
  rocksdb::DB* raw = nullptr;
  if (options.read_only) {
    opts.create_if_missing = false;
    POLNODE_RETURN_IF_ERROR(FromRocks(rocksdb::DB::OpenForReadOnly(opts, path, &raw), "open (read-only) " + path));
  } else {
    POLNODE_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(opts, path, &raw), "open " + path));
  }
  std::unique_ptr<rocksdb::DB> db(raw);

  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> tip_bytes,
                           GetOptional(db.get(), rocksdb::ReadOptions(), std::string(kTipKey)));
  std::optional<ChainTip> tip;
  if (tip_bytes) {
    POLNODE_ASSIGN_OR_RETURN(ChainTip t, DecodeTip(*tip_bytes));
    POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> block,
                             GetOptional(db.get(), rocksdb::ReadOptions(), BlockKey(t.height)));
    if (!block) {
      return Status::Corruption("chain store: tip names height " + std::to_string(t.height) +
                                " but that block is missing");
    }
    tip = t;
  }
  return std::unique_ptr<ChainStore>(new ChainStore(path, std::move(db), tip, options));
}

std::optional<ChainTip> ChainStore::tip() const {
  std::lock_guard<std::mutex> lock(tip_mu_);
  return tip_;
}

Result<std::optional<std::string>> ChainStore::GetState(std::string_view key) const {
  {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    if (state_) {
      const std::optional<std::string_view> value = state_->Get(key);
      return value ? std::optional<std::string>(*value) : std::optional<std::string>();
    }
  }
  const std::shared_ptr<const rocksdb::Snapshot> snapshot = ReadSnapshot();
  return GetOptional(db_.get(), ReadingAt(snapshot), StateKey(key));
}

std::shared_ptr<const rocksdb::Snapshot> ChainStore::ReadSnapshot() const {
  std::lock_guard<std::mutex> lock(unpublished_mu_);
  return unpublished_;
}

Status ChainStore::LoadState() const {
  {
    std::shared_lock<std::shared_mutex> lock(state_mu_);
    if (state_) return Status::Ok();
  }
  std::unique_lock<std::shared_mutex> lock(state_mu_);
  if (state_) return Status::Ok();
  // A Write's publication clears its snapshot and applies its delta to a loaded map under this
  // lock, so the scan below sees the published state: either the block is published (no snapshot,
  // and it is in RocksDB) or its delta is applied to the map afterwards.
  StateTree loaded;
  static const StateDelta kNoPending;
  const std::shared_ptr<const rocksdb::Snapshot> snapshot = ReadSnapshot();
  POLNODE_RETURN_IF_ERROR(MergedScan(db_.get(), ReadingAt(snapshot), "", kNoPending,
                                     [&](std::string_view k, std::string_view v) {
                                       loaded.Set(k, v);
                                       return true;
                                     }));
  loaded.Rehash();
  state_ = std::move(loaded);
  return Status::Ok();
}

Status ChainStore::ScanState(std::string_view prefix, const StateDelta& pending, const StateVisitor& visit) const {
  const std::shared_ptr<const rocksdb::Snapshot> snapshot = ReadSnapshot();
  return MergedScan(db_.get(), ReadingAt(snapshot), prefix, pending, visit);
}

Result<Hash256> ChainStore::StateRoot(const StateDelta& pending) const {
  POLNODE_RETURN_IF_ERROR(LoadState());
  std::shared_lock<std::shared_mutex> lock(state_mu_);
  LastRoot last{pending, {}};
  const Hash256 root = state_->RootWith(pending, &last.update);
  std::lock_guard<std::mutex> keep(last_root_mu_);
  last_root_ = std::move(last);
  return root;
}

Result<std::string> ChainStore::GetEncodedBlock(std::uint64_t height) const {
  const std::shared_ptr<const rocksdb::Snapshot> snapshot = ReadSnapshot();
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes,
                           GetOptional(db_.get(), ReadingAt(snapshot), BlockKey(height)));
  if (!bytes) return Status::NotFound("no block at height " + std::to_string(height));
  return std::move(*bytes);
}

Result<TxLocation> ChainStore::FindTx(const Hash256& tx_id) const {
  const std::shared_ptr<const rocksdb::Snapshot> snapshot = ReadSnapshot();
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes,
                           GetOptional(db_.get(), ReadingAt(snapshot), TxKey(tx_id)));
  if (!bytes) return Status::NotFound("transaction " + ToHex(tx_id) + " is not in any block");
  const std::string_view record(*bytes);
  if (record.size() < 12) return Status::Corruption("chain store: tx index record malformed");
  TxLocation loc{GetBe(record, 8), static_cast<std::uint32_t>(GetBe(record.substr(8), 4)), std::nullopt};
  if (record.size() > 12) {
    const auto code = static_cast<std::uint8_t>(record[12]);
    if (code > static_cast<std::uint8_t>(StatusCode::kInternal)) {
      return Status::Corruption("chain store: tx record has unknown result code " + std::to_string(code));
    }
    loc.outcome = TxOutcome{static_cast<StatusCode>(code), std::string(record.substr(13))};
  }
  return loc;
}

Result<PreparedCommit> ChainStore::Prepare(const BlockRecord& block, const StateDelta& delta) const {
  if (options_.read_only) return Status::FailedPrecondition("chain store " + path_ + " is open read-only");
  std::optional<ChainTip> current = tip();
  const std::uint64_t want = current ? current->height + 1 : 0;
  if (block.height != want) {
    return Status::FailedPrecondition("chain store: block height " + std::to_string(block.height) +
                                      " does not follow the tip (next is " + std::to_string(want) + ")");
  }
  const bool with_outcomes = !block.tx_outcomes.empty();
  if (with_outcomes && block.tx_outcomes.size() != block.tx_ids.size()) {
    return Status::InvalidArgument("chain store: block " + std::to_string(block.height) + " has " +
                                   std::to_string(block.tx_ids.size()) + " txs but " +
                                   std::to_string(block.tx_outcomes.size()) + " outcomes");
  }
  PreparedCommit commit;
  rocksdb::WriteBatch& batch = *commit.batch_;
  auto check = [](const rocksdb::Status& s) { return FromRocks(s, "batch"); };
  commit.delta_ = delta;
  for (const auto& [key, value] : delta) {
    if (value) {
      POLNODE_RETURN_IF_ERROR(check(batch.Put(ToSlice(StateKey(key)), ToSlice(*value))));
    } else {
      POLNODE_RETURN_IF_ERROR(check(batch.Delete(ToSlice(StateKey(key)))));
    }
  }
  // Each tx's record carries its outcome, so "committed" and "did it take effect" are answered by
  // one read and can never disagree after a crash: both are in the block's batch.
  // In id order rather than block order: RocksDB inserts a batch into its memtable (a skip list)
  // key by key, and a key just after the previous one is found from where that one went, while
  // 1,000 random ids each took a search from the top. The batch is applied atomically either way;
  // the sort is stable so that a repeated id (a later Put wins) still ends with its last record.
  std::vector<std::uint32_t> order(block.tx_ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return block.tx_ids[a] < block.tx_ids[b]; });
  std::string loc;
  for (const std::uint32_t i : order) {
    loc.clear();
    PutBe(loc, block.height, 8);
    PutBe(loc, i, 4);
    if (with_outcomes) {
      // StatusCode's numeric values are part of this format: only ever append new codes.
      loc.push_back(static_cast<char>(static_cast<std::uint8_t>(block.tx_outcomes[i].code)));
      loc.append(block.tx_outcomes[i].log);
    }
    POLNODE_RETURN_IF_ERROR(check(batch.Put(ToSlice(TxKey(block.tx_ids[i])), ToSlice(loc))));
  }
  POLNODE_RETURN_IF_ERROR(check(batch.Put(ToSlice(BlockKey(block.height)), ToSlice(block.encoded_block))));
  commit.new_tip_ = ChainTip{block.height, block.hash};
  // The tip record goes last in the batch; the batch is atomic anyway, the order only makes a
  // hex dump of the WAL read naturally.
  POLNODE_RETURN_IF_ERROR(check(batch.Put(ToSlice(kTipKey), ToSlice(EncodeTip(commit.new_tip_)))));
  commit.expected_parent_ = current;
  return commit;
}

Status ChainStore::Write(PreparedCommit commit) {
  return Write(std::move(commit), [](const std::function<void()>& make_visible) { make_visible(); });
}

Status ChainStore::Write(PreparedCommit commit, const Publisher& publish) {
  if (!commit.batch_) return Status::Internal("chain store: commit already written");
  {
    std::lock_guard<std::mutex> lock(tip_mu_);
    const bool same_parent = (tip_.has_value() == commit.expected_parent_.has_value()) &&
                             (!tip_ || (tip_->height == commit.expected_parent_->height &&
                                        tip_->hash == commit.expected_parent_->hash));
    if (!same_parent) return Status::FailedPrecondition("chain store: tip moved since the commit was prepared");
    // Reads keep to the parent block until this one's publication. The snapshot is taken before
    // the write, so it cannot contain the batch.
    std::shared_ptr<const rocksdb::Snapshot> before = SharedSnapshot(db_.get());
    {
      std::lock_guard<std::mutex> unpublished(unpublished_mu_);
      unpublished_ = std::move(before);
    }
    rocksdb::WriteOptions wo;
    wo.sync = options_.sync;
    if (Status written = FromRocks(db_->Write(wo, commit.batch_.get()), "write block"); !written.ok()) {
      std::lock_guard<std::mutex> unpublished(unpublished_mu_);
      unpublished_.reset();
      return written;
    }
    tip_ = commit.new_tip_;
  }
  // Whether the last StateRoot was asked for this very delta, decided before the publication:
  // comparing two deltas of a 1,000-transfer block takes a third of a millisecond, and the caller
  // may hold a lock of its own across the publication.
  std::optional<LastRoot> last;
  {
    std::lock_guard<std::mutex> keep(last_root_mu_);
    last = std::exchange(last_root_, std::nullopt);
  }
  if (last && last->pending != commit.delta_) last.reset();
  bool published = false;
  const std::function<void()> make_visible = [&] {
    if (std::exchange(published, true)) return;
    // Under state_mu_ both steps: a LoadState (it holds the lock exclusively) scans either before
    // them, through the snapshot, and has the delta applied here afterwards, or after them.
    std::unique_lock<std::shared_mutex> state_lock(state_mu_);
    if (state_) {
      // The producer asked StateRoot for this very delta over this very state just before (the
      // header carries the root): its hashes are the ones a Rehash would compute. Anything else
      // (another delta, a state changed since) takes the long way.
      if (last && last->update.generation == state_->generation() && !state_->dirty()) {
        state_->ApplyWith(commit.delta_, last->update);
      } else {
        for (const auto& [key, value] : commit.delta_) {
          state_->Set(key, value ? std::optional<std::string_view>(*value) : std::nullopt);
        }
        state_->Rehash();
      }
    }
    std::lock_guard<std::mutex> unpublished(unpublished_mu_);
    unpublished_.reset();
  };
  publish(make_visible);
  if (!published) {
    // The block is durable whatever the publisher did; reads must not stay behind it.
    make_visible();
    return Status::Internal("chain store: the publisher did not publish the block");
  }
  return Status::Ok();
}

std::unique_ptr<StateSnapshot> ChainStore::Snapshot() const {
  std::shared_ptr<const rocksdb::Snapshot> snapshot = ReadSnapshot();
  if (!snapshot) snapshot = SharedSnapshot(db_.get());
  return std::unique_ptr<StateSnapshot>(new StateSnapshot(db_.get(), std::move(snapshot)));
}

}  // namespace polnode::consensus
