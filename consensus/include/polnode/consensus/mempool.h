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
//   8. future caps: a tx behind a gap in its signer's nonces ("future": no pending tx holds some
//                   nonce between account_nonce and its own, so it cannot execute until the gap
//                   is filled) is admitted only while the signer has fewer than
//                   max_future_per_signer and the pool fewer than max_future such txs; a
//                   gap-free run from account_nonce is not capped by them (kResourceExhausted)
// Steps 1-4 run without the pool's lock, so signature checks proceed in parallel on several HTTP
// threads; the signer's key is parsed through a bounded cache (XOnlyKeyCache), since an account
// signs many txs. Steps 5-8 and the insertion run under the lock, so two racing copies of a tx
// cannot both get in. Step 7 reads the ledger's state and is the second most costly step: Insert
// runs it under the lock too, InsertAgainstStableState outside it (for callers that can keep that
// state from changing meanwhile), re-running steps 5 and 6 under the lock before inserting.
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

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/tx_envelope.h"

namespace polnode::consensus {

struct MempoolOptions {
  std::string chain_id;                       // txs for any other chain are rejected
  std::size_t max_txs = 50000;                // pending txs at most
  std::size_t max_tx_bytes = 64 * 1024;       // largest encoded envelope admitted
  std::size_t max_bytes = std::size_t{256} << 20;  // pending encoded bytes at most
  std::size_t max_future_per_signer = 16;     // txs behind a gap in a signer's nonces, per signer
  std::size_t max_future = 2000;              // ... and in the whole pool
  std::uint64_t future_expiry_blocks = 100;   // a future tx older than this is dropped
  std::size_t signer_key_cache_slots = 32768; // parsed signer keys kept (XOnlyKeyCache, ~100 bytes each)
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
  /// check).
  std::uint64_t account_nonce = 0;
  std::uint64_t admitted_height = 0;  // the pool's height when the tx got in
  /// Behind a gap in its signer's pending nonces, as of its admission or the last Recheck (a gap
  /// filled since is noticed at the next Recheck).
  bool future = false;
};

/// The application's part of admission (step 7). Called with the decoded, signature-checked tx
/// (under the pool's lock by Insert and Recheck, without it by InsertAgainstStableState); may set
/// tx.check_reads; must not call back into the Mempool.
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

  /// As Insert, but `check` runs without the pool's lock, so admissions on several threads overlap
  /// in it; steps 5 and 6 run again under the lock afterwards, so of two racing txs with the same
  /// id or the same (signer, nonce) exactly one gets in. Same verdicts as Insert, provided that
  ///   - the state `check` reads does not change until this returns. Otherwise a tx checked
  ///     against the state before a block could be inserted after that block's Recheck and
  ///     escape it (the ledger holds its state lock shared across this call; a block commit
  ///     takes it exclusively); and
  ///   - `check` is safe to run on several threads at once.
  [[nodiscard]] Result<Hash256> InsertAgainstStableState(PendingTx tx, const AdmissionCheck& check);

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
  using Signer = std::array<std::uint8_t, 32>;
  using BySeq = std::map<std::uint64_t, PendingTx>;
  // One signer's pending txs by nonce (their entries in by_seq_). Per signer, so that admission
  // finds a signer's txs with one hash look-up instead of a search of every pending tx's
  // (signer, nonce) pair: that search was the largest cost of admission under the pool's lock.
  using SignerTxs = std::map<std::uint64_t, BySeq::iterator>;
  // Tx ids and signers need no order, only look-ups: hash tables indexed by 8 bytes of the key
  // mixed with a per-pool random key, so nobody can grind ids or keys that pile into one bucket.
  struct KeyedHash {
    std::uint64_t key = 0;
    std::size_t operator()(const std::array<std::uint8_t, 32>& bytes) const;
  };

  // Steps 5 (duplicates) and 6 (capacity) for `tx`.
  Status CheckSlotLocked(const PendingTx& tx) const;
  Status CheckCapacityLocked(const PendingTx& tx) const;
  static Status DuplicateIdError(const PendingTx& tx);
  static Status DuplicateNonceError(const PendingTx& tx);
  // Steps 5 and 6 (again: the lock may have been dropped since), 8 and the insertion, for a tx
  // whose step 7 passed.
  Result<Hash256> InsertLocked(PendingTx tx);
  void EraseLocked(BySeq::iterator it);
  // One past the last nonce of the gap-free run of `own` from `account_nonce`.
  static std::uint64_t RunEnd(const SignerTxs& own, std::uint64_t account_nonce);
  // How many of `own` are future txs.
  static std::size_t FutureCount(const SignerTxs& own);

  const MempoolOptions options_;
  mutable XOnlyKeyCache signer_keys_;  // Precheck's parsed signer keys; locks of its own
  mutable std::mutex mu_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t height_ = 0;      // of the last Recheck
  std::size_t bytes_ = 0;         // encoded bytes pending
  std::size_t future_ = 0;        // pending txs marked future
  BySeq by_seq_;                                                    // admission order
  std::unordered_map<Hash256, std::uint64_t, KeyedHash> by_id_;     // id -> seq
  std::unordered_map<Signer, SignerTxs, KeyedHash> by_signer_;      // never holds an empty SignerTxs
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_MEMPOOL_H_
