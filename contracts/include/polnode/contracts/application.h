// Application: the protocol's deterministic state machine behind an interface shaped like
// CometBFT's ABCI (InitChain, CheckTx, PrepareProposal, ProcessProposal, FinalizeBlock, Commit,
// Query), so the embedded single producer and, later, an external BFT engine can both drive it.
// Queries are typed reads of the state (queries.h); rendering them (JSON, HTTP) is the node's job.
//
// The driver (the ledger core) owns storage and signatures:
//   - it decodes each signed envelope, checks its BIP-340 signature and hands the result over as a
//     VerifiedTx; the Application never sees unsigned or unverified transactions;
//   - it gives FinalizeBlock a StateStore that buffers the block's writes; after FinalizeBlock
//     succeeds it computes the state root over the store, commits block + writes in one batch and
//     then calls Commit(). If FinalizeBlock fails, the block's buffered writes are dropped.
//
// Determinism: every decision is a pure function of (state, BlockContext, txs). No clocks, no
// floating point, no unordered iteration, no randomness other than BlockContext::randomness.
//
// Transaction execution, per tx, in block order:
//   1. ante: chain id matches, nonce == the signer's next nonce, balance >= params.tx_fee. If the
//      ante fails the tx is an error result and changes nothing (ProcessProposal rejects blocks
//      that contain one; PrepareProposal never builds one).
//   2. the fee moves from the signer to the block proposer and the signer's nonce advances. This
//      stays even when step 3 fails: it pays for the block space and makes the tx non-replayable.
//   3. the payload runs in a per-tx overlay; on error every payload write is dropped.
// After all txs, the deadlines and randomness draws due at this height run (contracts/deadlines.h):
// timeouts are automatic, no one has to send a "tick" transaction.
#ifndef POLNODE_CONTRACTS_APPLICATION_H_
#define POLNODE_CONTRACTS_APPLICATION_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/state_store.h"

namespace polnode::proto {
class GenesisSpec;
}  // namespace polnode::proto

namespace polnode::contracts {

/// A 32-byte BIP-340 x-only public key: the account address.
using PubKey = std::array<std::uint8_t, 32>;

/// A decoded transaction envelope whose signature the driver has already verified.
struct VerifiedTx {
  PubKey signer{};               // x-only key that signed the envelope
  std::uint64_t nonce = 0;       // must equal the signer's next nonce when executed
  std::string chain_id;          // must equal the chain id fixed at genesis
  std::string payload_type;      // one of the names in payloads.h, e.g. "task/submit"
  std::string payload;           // the serialized payload message that payload_type names
  consensus::Hash256 tx_hash{};  // the envelope's id, echoed in results and events
  std::uint64_t wire_size = 0;   // bytes of the signed envelope, for block size limits
};

/// The VerifiedTx of an envelope that passed consensus::VerifyEnvelope (the caller's duty).
inline VerifiedTx MakeVerifiedTx(const consensus::TxEnvelope& verified, const consensus::Hash256& tx_hash,
                                 std::uint64_t wire_size) {
  return VerifiedTx{verified.signer_pubkey, verified.nonce, verified.chain_id, verified.payload_type,
                    verified.payload,       tx_hash,        wire_size};
}

/// What the block being executed contributes besides its transactions.
struct BlockContext {
  std::uint64_t height = 0;       // must be the last finalized height + 1 (genesis state is height 0)
  std::int64_t time_unix_ms = 0;  // producer's timestamp; recorded, never used for deadlines
  /// Block randomness: must be unknowable to anyone before block height-1 is final (the driver
  /// derives it from block hashes / a commit-reveal beacon). Deadlines schedule draws from it at
  /// heights after the commitments they protect (segment beacon, forced-error seed).
  consensus::Hash256 randomness{};
  PubKey proposer{};  // receives the transaction fees of this block
};

/// A key/value attribute list describing something that happened (for logs and the HTTP API).
struct Event {
  std::string type;  // e.g. "transfer", "task_settled", "slash"
  std::vector<std::pair<std::string, std::string>> attributes;
};

/// The outcome of one transaction.
struct TxResult {
  StatusCode code = StatusCode::kOk;  // kOk, or why the tx failed (its payload writes dropped)
  std::string log;                    // the failure message; empty on success
  bool fee_charged = false;           // false only when the ante itself failed
  std::vector<Event> events;
};

/// The outcome of a whole block.
struct BlockResult {
  std::vector<TxResult> tx_results;     // one per tx, in block order
  std::vector<Event> end_block_events;  // timeouts, draws and settlements due at this height
};

/// Limits a proposal must respect.
struct ProposalLimits {
  std::size_t max_txs = 1000;
  std::uint64_t max_bytes = 4u << 20;  // sum of VerifiedTx::wire_size
};

class Application {
 public:
  Application() = default;

  /// Applies the genesis spec to an EMPTY store: chain id, params, allocations, height 0.
  /// kInvalidArgument for invalid params, duplicate or malformed accounts, or supply overflow;
  /// kFailedPrecondition if the store already holds a chain id.
  [[nodiscard]] Status InitChain(const proto::GenesisSpec& genesis, StateStore& state) const;

  /// Mempool admission against committed `state`: chain id, payload decodes and passes its
  /// stateless checks, nonce in [next nonce, next nonce + params.mempool_nonce_window), and a
  /// balance that covers the fees of this tx and the signer's earlier pending ones. Does not run
  /// the payload: a tx that passes can still fail in FinalizeBlock (it then pays its fee).
  [[nodiscard]] Status CheckTx(const VerifiedTx& tx, const StateStore& state) const;

  /// CheckTx, and for a tx that passes, the nonce the signer's next transaction must carry in
  /// `state` (0 for a new account): what a mempool needs to tell executable transactions from
  /// those waiting behind a missing nonce. Both come from one read of the signer's account.
  [[nodiscard]] Result<std::uint64_t> CheckTxAndNextNonce(const VerifiedTx& tx, const StateStore& state) const;

  /// Picks the txs of the next block from `candidates` (mempool order): each signer's txs are put
  /// in nonce order within the positions they occupy, then txs are simulated in order on a scratch
  /// overlay of `state` and kept when their ante passes and the limits allow. Deterministic.
  /// The simulation's writes and results are kept: a FinalizeBlock of exactly these txs in the same
  /// context on the same state applies them instead of executing every transaction again.
  [[nodiscard]] Result<std::vector<VerifiedTx>> PrepareProposal(std::vector<VerifiedTx> candidates,
                                                                const BlockContext& context, const StateStore& state,
                                                                const ProposalLimits& limits) const;

  /// Accepts a proposed block only if it respects `limits` and every tx's ante passes when the
  /// block is simulated on a scratch overlay of `state`. Writes nothing.
  [[nodiscard]] Status ProcessProposal(std::span<const VerifiedTx> txs, const BlockContext& context,
                                       const StateStore& state, const ProposalLimits& limits) const;

  /// Executes a block (see the file comment) and writes its effects into `state`. Returns an
  /// error only when the block as a whole cannot be executed (height is not the stored height + 1,
  /// the store failing, corrupt stored state); the driver must then drop the block's writes.
  /// Transaction failures are reported per tx in the result. Finalizing again without Commit (the
  /// driver dropped the previous attempt) is allowed: the height check runs against the store.
  [[nodiscard]] Result<BlockResult> FinalizeBlock(const BlockContext& context, std::span<const VerifiedTx> txs,
                                                  StateStore& state);

  /// Called by the driver once the last finalized block and its writes are durably committed.
  /// Returns that block's height; kFailedPrecondition without a successful FinalizeBlock since
  /// the previous Commit.
  [[nodiscard]] Result<std::uint64_t> Commit();

 private:
  // The last proposal's execution, for FinalizeBlock to reuse (one producer thread only).
  struct PreparedExecution {
    BlockContext context;
    std::vector<consensus::Hash256> tx_hashes;
    std::vector<TxResult> results;
    OverlayStateStore::Writes writes;
  };
  static bool Matches(const PreparedExecution& prepared, const BlockContext& context, std::span<const VerifiedTx> txs);
  mutable std::optional<PreparedExecution> prepared_;
  std::optional<std::uint64_t> finalized_height_;  // set by FinalizeBlock, cleared by Commit
};

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_APPLICATION_H_
