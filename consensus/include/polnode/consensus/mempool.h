// Mempool: signed transactions waiting for a block.
//
// Admission runs, in this order, and rejects with the first failure:
//   1. size:        encoded bytes <= max_tx_bytes                       (kResourceExhausted)
//   2. decode:      canonical TxEnvelope (tx_envelope.h)                 (its DecodeEnvelope error)
//   3. chain id:    equals the ledger's chain id                         (kInvalidArgument)
//   4. signature:   VerifyEnvelope                                       (kCorruption / kInvalidArgument)
//   5. duplicates:  same tx id already pending                           (kAlreadyExists)
//                   same (signer, nonce) already pending                 (kAlreadyExists)
//   6. capacity:    fewer than max_txs and max_bytes pending             (kUnavailable: retry later)
//   7. application: the caller's check (nonce window, fee and balance via Application::CheckTx),
//                   which also records the signer's next executable nonce (account_nonce)
//   8. future caps: a tx whose nonce is ahead of account_nonce ("future": it cannot execute until
//                   the gap is filled) is admitted only while the signer has fewer than
//                   max_future_per_signer and the pool fewer than max_future such txs
//                                                                        (kResourceExhausted)
// Steps 1-4 run without the pool's lock, so signature checks proceed in parallel on several HTTP
// threads; steps 5-8 and the insertion run under the lock, so two racing copies of a tx cannot
// both get in.
//
// Candidates: the block producer is offered, per signer, only the run of txs whose nonces follow on
// from its account nonce without a gap; a signer whose next nonce is missing is skipped as a
// whole, so txs parked behind a nonce gap never occupy a block's candidate list (they used to
// stall the chain for free). The runs are merged in admission order (a sequence number assigned
// under the lock): a deterministic function of the order in which Add calls won the lock. A
// future tx that stays unexecutable for future_expiry_blocks blocks is dropped at a Recheck.
//
// Thread-safe: every method may be called from any thread.
#ifndef POLNODE_CONSENSUS_MEMPOOL_H_
#define POLNODE_CONSENSUS_MEMPOOL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/tx_envelope.h"

namespace polnode::consensus {

struct MempoolOptions {
  std::string chain_id;                       // txs for any other chain are rejected
  std::size_t max_txs = 50000;                // pending txs at most
  std::size_t max_tx_bytes = 64 * 1024;       // largest encoded envelope admitted
  std::size_t max_bytes = std::size_t{256} << 20;  // pending encoded bytes at most
  std::size_t max_future_per_signer = 16;     // txs ahead of a signer's account nonce, per signer
  std::size_t max_future = 2000;              // ... and in the whole pool
  std::uint64_t future_expiry_blocks = 100;   // a future tx older than this is dropped
};

/// A transaction that passed admission.
struct PendingTx {
  TxEnvelope envelope;
  std::string encoded;   // canonical envelope bytes (what goes into the block)
  Hash256 id{};          // TxId(encoded)
  std::uint64_t seq = 0; // admission order
  /// The caller's record of the state keys its check read when the tx last passed (nullopt: not
  /// recorded). A check that depends on those values alone need not run again while none of them
  /// changed; the pool only keeps the record.
  std::optional<std::vector<std::string>> check_reads;
  /// The signer's next executable nonce in the state the caller's check last read (set by the
  /// check). nonce > account_nonce marks a future tx.
  std::uint64_t account_nonce = 0;
  std::uint64_t admitted_height = 0;  // the pool's height when the tx got in
  bool future() const { return envelope.nonce > account_nonce; }
};

/// The application's part of admission (step 7). Called under the pool's lock with the decoded,
/// signature-checked tx; may set tx.check_reads; must not call back into the Mempool.
using AdmissionCheck = std::function<Status(PendingTx& tx)>;

class Mempool {
 public:
  explicit Mempool(MempoolOptions options);

  /// Runs admission (see the file comment) on `encoded` and keeps the tx on success. Returns the
  /// tx id, or the first failed step's Status with a message that names the reason.
  /// Equivalent to Insert(Precheck(encoded), check).
  [[nodiscard]] Result<Hash256> Add(std::string_view encoded, const AdmissionCheck& check);

  /// Steps 1-4 (size, decode, chain id, signature): pure checks that take no lock, so a caller can
  /// run them before taking locks of its own. Returns the tx ready for Insert.
  [[nodiscard]] Result<PendingTx> Precheck(std::string_view encoded) const;

  /// Steps 5-7 and the insertion, for a tx that passed Precheck.
  [[nodiscard]] Result<Hash256> Insert(PendingTx tx, const AdmissionCheck& check);

  /// Executable txs (see the file comment) in admission order, up to `max` txs and `max_bytes`
  /// encoded bytes (copies without check_reads; the pool is unchanged).
  std::vector<PendingTx> Candidates(std::size_t max, std::size_t max_bytes) const;

  /// Drops the txs with these ids (those committed in a block). Unknown ids are ignored.
  void Remove(std::span<const Hash256> ids);

  /// After block `height`: re-runs `check` on every pending tx in admission order and drops those
  /// that now fail (their nonce was used by a committed tx, the balance no longer covers the fee,
  /// ...) and future txs admitted more than future_expiry_blocks before `height`. Returns how many
  /// were dropped. The pool's lock is held throughout, so a check that can tell from
  /// tx.check_reads that nothing it depends on changed should return Ok without re-running.
  std::size_t Recheck(const AdmissionCheck& check, std::uint64_t height);

  /// Number of pending txs, their encoded bytes, and how many of them are future txs.
  std::size_t size() const;
  std::size_t bytes() const;
  std::size_t future_count() const;

  /// Whether a tx with this id is pending.
  bool Contains(const Hash256& id) const;

  /// One past the highest nonce `signer` has pending, or nullopt when it has none: the nonce its
  /// next transaction needs while earlier ones still wait for a block. (Nonces stay far below 2^64.)
  std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const;

  const MempoolOptions& options() const { return options_; }

 private:
  using SignerNonce = std::pair<std::array<std::uint8_t, 32>, std::uint64_t>;

  void EraseLocked(std::map<std::uint64_t, PendingTx>::iterator it);
  std::size_t FutureOfSignerLocked(const std::array<std::uint8_t, 32>& signer) const;

  const MempoolOptions options_;
  mutable std::mutex mu_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t height_ = 0;      // of the last Recheck
  std::size_t bytes_ = 0;         // encoded bytes pending
  std::size_t future_ = 0;        // future txs pending
  std::map<std::uint64_t, PendingTx> by_seq_;     // admission order
  std::map<Hash256, std::uint64_t> by_id_;        // id -> seq
  std::map<SignerNonce, std::uint64_t> by_nonce_; // (signer, nonce) -> seq
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_MEMPOOL_H_
