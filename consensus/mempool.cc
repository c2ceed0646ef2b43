#include "polnode/consensus/mempool.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"

namespace polnode::consensus {

namespace {

// -1, 0 or 1 as a is bytewise below, equal to or above b.
int CompareBytes(const std::array<std::uint8_t, 32>& a, const std::array<std::uint8_t, 32>& b) {
  for (std::size_t i = 0; i < 32; i += 8) {
    std::uint64_t x = 0, y = 0;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    if (x != y) {
      if constexpr (std::endian::native == std::endian::little) {
        x = __builtin_bswap64(x);
        y = __builtin_bswap64(y);
      }
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

// A key for IdHash. std::random_device reads the OS's generator; should it fail, the pool still
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

std::size_t Mempool::IdHash::operator()(const Hash256& id) const {
  std::uint64_t x = 0;
  std::memcpy(&x, id.data(), sizeof(x));
  // splitmix64's finalizer over the keyed word: a bijection that spreads every input bit.
  x ^= key;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::size_t>(x ^ (x >> 31));
}

bool Mempool::SignerNonceLess::operator()(const SignerNonce& a, const SignerNonce& b) const {
  const int c = CompareBytes(a.first, b.first);
  return c != 0 ? c < 0 : a.second < b.second;
}

Mempool::Mempool(MempoolOptions options)
    : options_(std::move(options)), signer_keys_(options_.signer_key_cache_slots),
      by_id_(0, IdHash{RandomKey()}) {}

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

Status Mempool::CheckSlotLocked(const PendingTx& tx) const {
  if (by_id_.count(tx.id) != 0) return Status::AlreadyExists("transaction " + ToHex(tx.id) + " is already pending");
  if (by_nonce_.count(SignerNonce{tx.envelope.signer_pubkey, tx.envelope.nonce}) != 0) {
    return Status::AlreadyExists("nonce " + std::to_string(tx.envelope.nonce) + " of signer " +
                                 ToHex(tx.envelope.signer_pubkey) + " is already used by a pending transaction");
  }
  if (by_seq_.size() >= options_.max_txs || bytes_ + tx.encoded.size() > options_.max_bytes) {
    return Status::Unavailable("mempool is full (" + std::to_string(by_seq_.size()) + " transactions, " +
                               std::to_string(bytes_) + " bytes); retry later");
  }
  return Status::Ok();
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
  tx.seq = next_seq_;
  tx.future = tx.envelope.nonce > RunEndLocked(tx.envelope.signer_pubkey, tx.account_nonce);
  if (tx.future) {
    if (FutureOfSignerLocked(tx.envelope.signer_pubkey) >= options_.max_future_per_signer) {
      return Status::ResourceExhausted("signer " + ToHex(tx.envelope.signer_pubkey) + " already has " +
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
  SignerNonce sn{tx.envelope.signer_pubkey, tx.envelope.nonce};
  by_id_.emplace(id, tx.seq);
  by_nonce_.emplace(std::move(sn), tx.seq);
  by_seq_.emplace(tx.seq, std::move(tx));
  return id;
}

std::vector<PendingTx> Mempool::Candidates(std::size_t max, std::size_t max_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Each signer's gap-free run from its account nonce; by_nonce_ walks signers in key order and
  // each signer's txs in nonce order, so each run is contiguous in `runs` (its "group").
  std::vector<const PendingTx*> runs;
  std::vector<std::size_t> group_of;     // per entry of `runs`
  std::vector<std::size_t> group_start;  // per group: its first entry in `runs`
  for (auto it = by_nonce_.begin(); it != by_nonce_.end();) {
    const std::array<std::uint8_t, 32>& signer = it->first.first;
    std::uint64_t expected = by_seq_.at(it->second).account_nonce;
    const std::size_t group = group_start.size();
    const std::size_t first = runs.size();
    for (; it != by_nonce_.end() && it->first.first == signer; ++it) {
      if (it->first.second != expected) continue;  // behind a gap (or a stale, used nonce)
      runs.push_back(&by_seq_.at(it->second));
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

std::uint64_t Mempool::RunEndLocked(const std::array<std::uint8_t, 32>& signer, std::uint64_t account_nonce) const {
  std::uint64_t end = account_nonce;
  for (auto it = by_nonce_.lower_bound(SignerNonce(signer, account_nonce));
       it != by_nonce_.end() && it->first.first == signer && it->first.second == end; ++it) {
    ++end;
  }
  return end;
}

std::size_t Mempool::FutureOfSignerLocked(const std::array<std::uint8_t, 32>& signer) const {
  std::size_t count = 0;
  for (auto it = by_nonce_.lower_bound(SignerNonce(signer, 0)); it != by_nonce_.end() && it->first.first == signer;
       ++it) {
    count += by_seq_.at(it->second).future ? 1 : 0;
  }
  return count;
}

void Mempool::EraseLocked(std::map<std::uint64_t, PendingTx>::iterator it) {
  bytes_ -= it->second.encoded.size();
  if (it->second.future) --future_;
  by_id_.erase(it->second.id);
  by_nonce_.erase(SignerNonce{it->second.envelope.signer_pubkey, it->second.envelope.nonce});
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
  // waited there too long go.
  future_ = 0;
  for (auto it = by_nonce_.begin(); it != by_nonce_.end();) {
    const std::array<std::uint8_t, 32> signer = it->first.first;
    const std::uint64_t run_end = RunEndLocked(signer, by_seq_.at(it->second).account_nonce);
    while (it != by_nonce_.end() && it->first.first == signer) {
      auto next = std::next(it);
      PendingTx& tx = by_seq_.at(it->second);
      tx.future = tx.envelope.nonce >= run_end;
      if (tx.future && height - tx.admitted_height > options_.future_expiry_blocks) {
        tx.future = false;  // not counted: it leaves now
        EraseLocked(by_seq_.find(it->second));
        ++dropped;
      } else if (tx.future) {
        ++future_;
      }
      it = next;
    }
  }
  return dropped;
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
  // by_nonce_ orders by (signer, nonce): the entry before the first one past (signer, max) is
  // this signer's highest pending nonce, if that entry is the signer's at all.
  auto it = by_nonce_.upper_bound(SignerNonce(signer, std::numeric_limits<std::uint64_t>::max()));
  if (it == by_nonce_.begin()) return std::nullopt;
  --it;
  if (it->first.first != signer) return std::nullopt;
  return it->first.second + 1;
}

}  // namespace polnode::consensus
