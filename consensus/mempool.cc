#include "polnode/consensus/mempool.h"

#include <limits>

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
  if (by_seq_.size() >= options_.max_txs) {
    return Status::Unavailable("mempool is full (" + std::to_string(options_.max_txs) + " transactions); retry later");
  }
  tx.seq = next_seq_;
  POLNODE_RETURN_IF_ERROR(check(tx));
  ++next_seq_;
  const Hash256 id = tx.id;
  by_id_.emplace(id, tx.seq);
  by_nonce_.emplace(sn, tx.seq);
  by_seq_.emplace(tx.seq, std::move(tx));
  return id;
}

std::vector<PendingTx> Mempool::Candidates(std::size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PendingTx> out;
  out.reserve(std::min(max, by_seq_.size()));
  for (auto it = by_seq_.begin(); it != by_seq_.end() && out.size() < max; ++it) {
    // check_reads stays behind: it is Recheck's bookkeeping, and copying it would double the
    // allocations of every candidate the block producer asks for.
    const PendingTx& tx = it->second;
    out.push_back(PendingTx{tx.envelope, tx.encoded, tx.id, tx.seq, std::nullopt});
  }
  return out;
}

void Mempool::EraseLocked(std::map<std::uint64_t, PendingTx>::iterator it) {
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

std::size_t Mempool::Recheck(const AdmissionCheck& check) {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t dropped = 0;
  for (auto it = by_seq_.begin(); it != by_seq_.end();) {
    auto next = std::next(it);
    if (!check(it->second).ok()) {
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
