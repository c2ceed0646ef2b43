#include "polnode/consensus/mempool.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"

namespace polnode::consensus {

Mempool::Mempool(MempoolOptions options) : options_(std::move(options)) {}

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
  POLNODE_RETURN_IF_ERROR(VerifyEnvelope(tx.envelope).WithContext("bad signature"));
  tx.encoded.assign(encoded);
  tx.id = TxId(encoded);
  return tx;
}

Result<Hash256> Mempool::Insert(PendingTx tx, const AdmissionCheck& check) {
  std::lock_guard<std::mutex> lock(mu_);
  if (by_id_.count(tx.id) != 0) return Status::AlreadyExists("transaction " + ToHex(tx.id) + " is already pending");
  SignerNonce sn{tx.envelope.signer_pubkey, tx.envelope.nonce};
  if (by_nonce_.count(sn) != 0) {
    return Status::AlreadyExists("nonce " + std::to_string(tx.envelope.nonce) + " of signer " +
                                 ToHex(tx.envelope.signer_pubkey) + " is already used by a pending transaction");
  }
  if (by_seq_.size() >= options_.max_txs || bytes_ + tx.encoded.size() > options_.max_bytes) {
    return Status::Unavailable("mempool is full (" + std::to_string(by_seq_.size()) + " transactions, " +
                               std::to_string(bytes_) + " bytes); retry later");
  }
  tx.seq = next_seq_;
  POLNODE_RETURN_IF_ERROR(check(tx));
  if (tx.future()) {
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
  by_id_.emplace(id, tx.seq);
  by_nonce_.emplace(sn, tx.seq);
  by_seq_.emplace(tx.seq, std::move(tx));
  return id;
}

std::vector<PendingTx> Mempool::Candidates(std::size_t max, std::size_t max_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Each signer's gap-free run from its account nonce; by_nonce_ walks signers in key order and
  // each signer's txs in nonce order.
  std::vector<const PendingTx*> runs;
  for (auto it = by_nonce_.begin(); it != by_nonce_.end();) {
    const std::array<std::uint8_t, 32>& signer = it->first.first;
    std::uint64_t expected = by_seq_.at(it->second).account_nonce;
    for (; it != by_nonce_.end() && it->first.first == signer; ++it) {
      if (it->first.second != expected) continue;  // behind a gap (or a stale, used nonce)
      runs.push_back(&by_seq_.at(it->second));
      ++expected;
    }
  }
  // Admission order across signers; within the positions a signer's txs take, its nonce order
  // (a signer may have sent its txs out of order).
  std::vector<const PendingTx*> ordered = runs;
  std::sort(ordered.begin(), ordered.end(), [](const PendingTx* a, const PendingTx* b) { return a->seq < b->seq; });
  std::map<std::array<std::uint8_t, 32>, std::size_t> taken;  // per signer: run txs placed so far
  std::map<std::array<std::uint8_t, 32>, std::vector<const PendingTx*>> by_signer;
  for (const PendingTx* tx : runs) by_signer[tx->envelope.signer_pubkey].push_back(tx);  // nonce order
  for (const PendingTx*& slot : ordered) {
    const auto& signer = slot->envelope.signer_pubkey;
    slot = by_signer[signer][taken[signer]++];
  }
  runs = std::move(ordered);
  std::vector<PendingTx> out;
  std::size_t bytes = 0;
  std::set<std::array<std::uint8_t, 32>> cut;  // signers whose run stopped at a tx that did not fit
  for (const PendingTx* tx : runs) {
    if (out.size() >= max) break;
    if (cut.count(tx->envelope.signer_pubkey) != 0) continue;
    if (tx->encoded.size() > max_bytes - bytes) {
      // A later, smaller tx of the same signer would follow a gap: its run ends here.
      cut.insert(tx->envelope.signer_pubkey);
      continue;
    }
    bytes += tx->encoded.size();
    // check_reads stays behind: it is Recheck's bookkeeping, and copying it would double the
    // allocations of every candidate the block producer asks for.
    out.push_back(PendingTx{tx->envelope, tx->encoded, tx->id, tx->seq, std::nullopt, tx->account_nonce,
                            tx->admitted_height});
  }
  return out;
}

std::size_t Mempool::FutureOfSignerLocked(const std::array<std::uint8_t, 32>& signer) const {
  std::size_t count = 0;
  for (auto it = by_nonce_.lower_bound(SignerNonce(signer, 0)); it != by_nonce_.end() && it->first.first == signer;
       ++it) {
    count += by_seq_.at(it->second).future() ? 1 : 0;
  }
  return count;
}

void Mempool::EraseLocked(std::map<std::uint64_t, PendingTx>::iterator it) {
  bytes_ -= it->second.encoded.size();
  if (it->second.future()) --future_;
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
    PendingTx& tx = it->second;
    const bool was_future = tx.future();
    const bool ok = check(tx).ok();
    // The check may have moved the account nonce: keep the future count in step.
    if (was_future != tx.future()) {
      if (was_future) {
        --future_;
      } else {
        ++future_;
      }
    }
    const bool expired = tx.future() && height - tx.admitted_height > options_.future_expiry_blocks;
    if (!ok || expired) {
      EraseLocked(it);
      ++dropped;
    }
    it = next;
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
