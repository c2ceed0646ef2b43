#include "polnode/consensus/mempool.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"

namespace polnode::consensus {

namespace {

// A key for KeyedHash. std::random_device reads the OS's generator; should it fail, the pool still
// works, with a guessable key.
std::uint64_t RandomKey() {
  try {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  } catch (...) {
    return 0x9e3779b97f4a7c15ULL;
  }
}

}  // namespace

std::size_t Mempool::KeyedHash::operator()(const std::array<std::uint8_t, 32>& bytes) const {
  std::uint64_t x = 0;
  std::memcpy(&x, bytes.data(), sizeof(x));
  // splitmix64's finalizer over the keyed word: a bijection that spreads every input bit.
  x ^= key;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::size_t>(x ^ (x >> 31));
}

Mempool::Mempool(MempoolOptions options)
    : options_(std::move(options)), signer_keys_(options_.signer_key_cache_slots),
      by_id_(0, KeyedHash{RandomKey()}), by_signer_(0, KeyedHash{by_id_.hash_function().key}) {}

Result<Hash256> Mempool::Add(std::string_view encoded, const AdmissionCheck& check) {
  POLNODE_ASSIGN_OR_RETURN(PendingTx tx, Precheck(encoded));
  return Insert(std::move(tx), check);
}

Result<PendingTx> Mempool::Precheck(std::string_view encoded) const {
  if (encoded.size() > options_.max_tx_bytes) {
    return Status::ResourceExhausted("transaction of " + std::to_string(encoded.size()) +
                                     " bytes exceeds the mempool limit of " + std::to_string(options_.max_tx_bytes));
  }
  PendingTx tx;
  POLNODE_ASSIGN_OR_RETURN(tx.envelope, DecodeEnvelope(encoded));
  if (tx.envelope.chain_id != options_.chain_id) {
    return Status::InvalidArgument("wrong chain id '" + tx.envelope.chain_id + "' (this ledger is '" +
                                   options_.chain_id + "')");
  }
  POLNODE_RETURN_IF_ERROR(VerifyEnvelope(tx.envelope, signer_keys_).WithContext("bad signature"));
  tx.encoded.assign(encoded);
  tx.id = TxId(encoded);
  return tx;
}

Status Mempool::DuplicateIdError(const PendingTx& tx) {
  return Status::AlreadyExists("transaction " + ToHex(tx.id) + " is already pending");
}

Status Mempool::DuplicateNonceError(const PendingTx& tx) {
  return Status::AlreadyExists("nonce " + std::to_string(tx.envelope.nonce) + " of signer " +
                               ToHex(tx.envelope.signer_pubkey) + " is already used by a pending transaction");
}

Status Mempool::CheckCapacityLocked(const PendingTx& tx) const {
  if (by_seq_.size() >= options_.max_txs || bytes_ + tx.encoded.size() > options_.max_bytes) {
    return Status::Unavailable("mempool is full (" + std::to_string(by_seq_.size()) + " transactions, " +
                               std::to_string(bytes_) + " bytes); retry later");
  }
  return Status::Ok();
}

Status Mempool::CheckSlotLocked(const PendingTx& tx) const {
  if (by_id_.count(tx.id) != 0) return DuplicateIdError(tx);
  if (auto own = by_signer_.find(tx.envelope.signer_pubkey);
      own != by_signer_.end() && own->second.count(tx.envelope.nonce) != 0) {
    return DuplicateNonceError(tx);
  }
  return CheckCapacityLocked(tx);
}

Result<Hash256> Mempool::Insert(PendingTx tx, const AdmissionCheck& check) {
  std::lock_guard<std::mutex> lock(mu_);
  POLNODE_RETURN_IF_ERROR(CheckSlotLocked(tx));
  tx.seq = next_seq_;
  POLNODE_RETURN_IF_ERROR(check(tx));
  return InsertLocked(std::move(tx));
}

Result<Hash256> Mempool::InsertAgainstStableState(PendingTx tx, const AdmissionCheck& check) {
  {
    // A duplicate is refused before the costly check, and with the same error Insert gives.
    std::lock_guard<std::mutex> lock(mu_);
    POLNODE_RETURN_IF_ERROR(CheckSlotLocked(tx));
  }
  POLNODE_RETURN_IF_ERROR(check(tx));
  std::lock_guard<std::mutex> lock(mu_);
  return InsertLocked(std::move(tx));
}

Result<Hash256> Mempool::InsertLocked(PendingTx tx) {
  // Under Insert's lock nothing changed since its CheckSlotLocked; after InsertAgainstStableState's
  // unlocked check a racing copy or a filled pool may have appeared.
  POLNODE_RETURN_IF_ERROR(CheckSlotLocked(tx));
  const Signer signer = tx.envelope.signer_pubkey;
  const std::uint64_t nonce = tx.envelope.nonce;
  const auto own = by_signer_.find(signer);
  tx.seq = next_seq_;
  const std::uint64_t run_end = own != by_signer_.end() ? RunEnd(own->second, tx.account_nonce) : tx.account_nonce;
  tx.future = nonce > run_end;
  if (tx.future) {
    if (own != by_signer_.end() && FutureCount(own->second) >= options_.max_future_per_signer) {
      return Status::ResourceExhausted("signer " + ToHex(signer) + " already has " +
                                       std::to_string(options_.max_future_per_signer) +
                                       " transactions waiting behind a missing nonce " +
                                       std::to_string(tx.account_nonce));
    }
    if (future_ >= options_.max_future) {
      return Status::ResourceExhausted("the mempool holds " + std::to_string(future_) +
                                       " transactions waiting behind missing nonces; send nonce " +
                                       std::to_string(tx.account_nonce) + " first");
    }
    ++future_;
  }
  ++next_seq_;
  tx.admitted_height = height_;
  bytes_ += tx.encoded.size();
  const Hash256 id = tx.id;
  const std::uint64_t seq = tx.seq;
  const BySeq::iterator entry = by_seq_.emplace_hint(by_seq_.end(), seq, std::move(tx));  // seq is the largest yet
  by_id_.emplace(id, seq);
  (own != by_signer_.end() ? own : by_signer_.try_emplace(signer).first)->second.emplace(nonce, entry);
  return id;
}

std::vector<PendingTx> Mempool::Candidates(std::size_t max, std::size_t max_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Each signer's gap-free run from its account nonce, in nonce order: each run is contiguous in
  // `runs` (its "group"). The signers come in the hash table's order, which is not deterministic
  // (the table's key is random), but nothing below depends on the order of the groups, only on
  // the admission order of the txs and on the nonce order within each group.
  std::vector<const PendingTx*> runs;
  std::vector<std::size_t> group_of;     // per entry of `runs`
  std::vector<std::size_t> group_start;  // per group: its first entry in `runs`
  for (const auto& [signer, own] : by_signer_) {
    std::uint64_t expected = own.begin()->second->second.account_nonce;
    const std::size_t group = group_start.size();
    const std::size_t first = runs.size();
    for (const auto& [nonce, entry] : own) {
      if (nonce != expected) continue;  // behind a gap (or a stale, used nonce)
      runs.push_back(&entry->second);
      group_of.push_back(group);
      ++expected;
    }
    if (runs.size() != first) group_start.push_back(first);
  }
  // Admission order across signers; within the positions a signer's txs take, its nonce order
  // (a signer may have sent its txs out of order): the k-th of a signer's positions in admission
  // order gets its k-th tx in nonce order. Vectors rather than per-signer maps: the producer asks
  // for 2,000 candidates every block.
  std::vector<std::size_t> by_admission(runs.size());
  for (std::size_t k = 0; k < by_admission.size(); ++k) by_admission[k] = k;
  std::sort(by_admission.begin(), by_admission.end(),
            [&](std::size_t a, std::size_t b) { return runs[a]->seq < runs[b]->seq; });
  std::vector<std::size_t> next = group_start;  // per group: its next tx in nonce order
  std::vector<bool> cut(group_start.size(), false);  // groups whose run stopped at a tx that did not fit
  std::vector<PendingTx> out;
  out.reserve(std::min(max, runs.size()));
  std::size_t bytes = 0;
  for (const std::size_t slot : by_admission) {
    if (out.size() >= max) break;
    const std::size_t group = group_of[slot];
    const PendingTx* tx = runs[next[group]++];
    if (cut[group]) continue;
    if (tx->encoded.size() > max_bytes - bytes) {
      // A later, smaller tx of the same signer would follow a gap: its run ends here.
      cut[group] = true;
      continue;
    }
    bytes += tx->encoded.size();
    // check_reads stays behind: it is Recheck's bookkeeping, and copying it would double the
    // allocations of every candidate the block producer asks for.
    out.push_back(PendingTx{tx->envelope, tx->encoded, tx->id, tx->seq, std::nullopt, tx->account_nonce,
                            tx->admitted_height, tx->future});
  }
  return out;
}

std::uint64_t Mempool::RunEnd(const SignerTxs& own, std::uint64_t account_nonce) {
  std::uint64_t end = account_nonce;
  for (auto it = own.lower_bound(account_nonce); it != own.end() && it->first == end; ++it) ++end;
  return end;
}

std::size_t Mempool::FutureCount(const SignerTxs& own) {
  std::size_t count = 0;
  for (const auto& [nonce, entry] : own) count += entry->second.future ? 1 : 0;
  return count;
}

void Mempool::EraseLocked(BySeq::iterator it) {
  const PendingTx& tx = it->second;
  bytes_ -= tx.encoded.size();
  if (tx.future) --future_;
  by_id_.erase(tx.id);
  const auto own = by_signer_.find(tx.envelope.signer_pubkey);
  own->second.erase(tx.envelope.nonce);
  if (own->second.empty()) by_signer_.erase(own);
  by_seq_.erase(it);
}

void Mempool::Remove(std::span<const Hash256> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Hash256& id : ids) {
    auto found = by_id_.find(id);
    if (found == by_id_.end()) continue;
    EraseLocked(by_seq_.find(found->second));
  }
}

std::size_t Mempool::Recheck(const AdmissionCheck& check, std::uint64_t height) {
  std::lock_guard<std::mutex> lock(mu_);
  height_ = height;
  std::size_t dropped = 0;
  for (auto it = by_seq_.begin(); it != by_seq_.end();) {
    auto next = std::next(it);
    if (!check(it->second).ok()) {
      EraseLocked(it);
      ++dropped;
    }
    it = next;
  }
  // Which txs are behind a gap now (blocks and fresh txs may have filled gaps); those that have
  // waited there too long go, after the walk (erasing a signer's last tx would remove the entry
  // the walk stands on). A signer's expired txs lie past its run, so they do not change it.
  future_ = 0;
  std::vector<BySeq::iterator> expired;
  for (auto& [signer, own] : by_signer_) {
    const std::uint64_t run_end = RunEnd(own, own.begin()->second->second.account_nonce);
    for (auto& [nonce, entry] : own) {
      PendingTx& tx = entry->second;
      tx.future = nonce >= run_end;
      if (tx.future && height - tx.admitted_height > options_.future_expiry_blocks) {
        tx.future = false;  // not counted: it leaves now
        expired.push_back(entry);
      } else if (tx.future) {
        ++future_;
      }
    }
  }
  for (const BySeq::iterator entry : expired) EraseLocked(entry);
  return dropped + expired.size();
}

std::size_t Mempool::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_seq_.size();
}

std::size_t Mempool::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::size_t Mempool::future_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return future_;
}

bool Mempool::Contains(const Hash256& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_id_.count(id) != 0;
}

std::optional<std::uint64_t> Mempool::NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto own = by_signer_.find(signer);
  if (own == by_signer_.end()) return std::nullopt;
  return own->second.rbegin()->first + 1;
}

}  // namespace polnode::consensus
