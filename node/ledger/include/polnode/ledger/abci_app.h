// AbciApp: polnode's state machine (contracts::Application over the RocksDB ChainStore) driven by
// CometBFT through ABCI 2.0 (abci.proto) instead of by the embedded block producer (ledger.h).
// The contracts execute blocks exactly as in the embedded ledger; what changes is who orders them.
//
// Heights: polnode's block 0 is the genesis state InitChain writes; CometBFT's block H is polnode's
// block H. Each block is kept in the ChainStore as the embedded ledger keeps its own (block record,
// tx index with outcomes, state writes, one atomic WriteBatch), so FindTx and the chain's blocks
// read the same; the header carries no producer signature (CometBFT's commit signs the block) and
// its randomness is the validators' beacon (abci_beacon.h): from block 2 on, each block's first tx
// is the beacon tx of the previous height's vote extensions.
//
//   Info             last committed height and its state root (the app hash), so that CometBFT's
//                    handshake replays the blocks a restarted node is missing
//   InitChain        genesis accounts and params from app_state_bytes (polnode's genesis.json with
//                    each validator's VRF key, parsed by the injected GenesisParser); refuses a
//                    genesis without vote extensions from height 1 or without a VRF key for one of
//                    CometBFT's validators; block 0; app hash = genesis state root.
//                    Again on a store that has block 0 (a crash before block 1): checks the genesis
//                    is the stored one and answers the same app hash
//   CheckTx          mempool admission (consensus::Mempool + Application::CheckTx, the nonce window
//                    and fee rules) against the committed state, never the block being finalized;
//                    a RECHECK passes while polnode's pool still holds the tx after the last Commit;
//                    a tx with the beacon tx's 0x00 prefix is refused
//   ExtendVote       this validator's VRF proof on alpha(h) (abci_beacon.h)
//   VerifyVoteExtension  ACCEPT a proof that verifies with the sender's registered VRF key
//   PrepareProposal  from block 2: the beacon tx of local_last_commit's valid extensions first;
//                    then Application::PrepareProposal over the txs CometBFT offers, all within
//                    max_tx_bytes
//   ProcessProposal  REJECT a block from height 2 whose first tx is not a beacon tx that verifies
//                    against the proposed last commit (VerifyBeaconTx), or with another tx that
//                    does not decode, is not signed, is for another chain, or whose ante fails
//                    (Application::ProcessProposal); ACCEPT otherwise
//   FinalizeBlock    Application::FinalizeBlock into a BlockState overlay; per-tx results (a tx
//                    that cannot execute at all gets a non-zero code and changes nothing);
//                    app_hash = the state root after the block; the block's randomness is R(h)
//                    of abci_beacon.h. Nothing is written yet. The beacon tx is CometBFT's, not
//                    polnode's: it gets result code 0 and is not among the stored block's txs
//   Commit           the block and its writes in one RocksDB batch; the pool drops the block's txs
//                    and rechecks the rest
//   Query            path = the embedded ledger's HTTP state paths (see Query in abci_app.cc),
//                    and /v1/blocks/{height} for a committed block; the value is the record's
//                    protobuf bytes
//   Echo, Flush      answered; there are no snapshots
// Any failure of a method is answered with ResponseException (CometBFT stops on one: it means the
// application cannot follow the chain).
//
// Thread safety: Handle may be called from any number of connection threads; one mutex serializes
// them (CometBFT's own socket server does the same).
#ifndef POLNODE_LEDGER_ABCI_APP_H_
#define POLNODE_LEDGER_ABCI_APP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/abci.pb.h"
#include "polnode/base/status.h"
#include "polnode/consensus/block.h"
#include "polnode/consensus/chain_store.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/mempool.h"
#include "polnode/contracts/application.h"
#include "polnode/ledger/abci_beacon.h"
#include "polnode/ledger/chain_state.h"
#include "polnode/ledger/genesis_file.h"
#include "polnode/ledger/ledger.h"

namespace polnode::node {

/// What InitChain's app_state_bytes carries: polnode's genesis and each validator's VRF public key
/// by its CometBFT address (node/rpc/abci_genesis.h writes and parses the JSON).
struct AbciGenesis {
  GenesisFile file;
  BeaconKeys beacon_keys;
};

/// Parses InitChain's app_state_bytes (node/rpc's ParseAbciGenesisJson). Injected because the
/// JSON reader lives above node/ledger.
using GenesisParser = std::function<Result<AbciGenesis>(std::string_view json)>;

struct AbciAppOptions {
  std::string data_dir;          // RocksDB directory (created if missing)
  bool sync_writes = true;       // fsync each block's batch
  /// Limits that decide which txs a block may hold. FinalizeBlock applies them too, so every
  /// validator must run with the same values: they are not command-line options.
  std::size_t max_tx_bytes = 64 * 1024;
  std::size_t max_txs_per_block = 10000;
  std::size_t mempool_max_txs = 50000;
  /// This validator's VRF key, for ExtendVote; a node that never votes may have none (ExtendVote
  /// then fails). Its public key must be in the genesis beacon_keys under this node's address.
  std::optional<consensus::SecretKey> vrf_key;
};

class AbciApp {
 public:
  /// Opens (creating if needed) the store in options.data_dir. kCorruption if the store has blocks
  /// but no readable block 0 or tip; ChainStore::Open's errors.
  [[nodiscard]] static Result<std::unique_ptr<AbciApp>> Open(const AbciAppOptions& options, GenesisParser parse_genesis);

  /// Answers one request (see the file comment). Never fails: an error is a ResponseException.
  abci::Response Handle(const abci::Request& request);

  /// The last committed height and its state root (what Info answers).
  std::uint64_t height() const;
  consensus::Hash256 state_root() const;

  // The reads polnode's HTTP API serves (rpc/ledger_api.h) from this application's committed
  // state, the same questions the embedded Ledger answers. Each takes the application mutex, so it
  // sees whole committed blocks: a block finalized but not yet committed is not visible.

  /// Chain id, last committed height, its block hash, state root and time, and the size of this
  /// node's pool (the txs its CometBFT's mempool admitted through CheckTx). `producer` stays zero:
  /// CometBFT's proposers are not polnode accounts. An application before InitChain answers height
  /// 0 and an empty chain id.
  LedgerStatus GetStatus() const;

  /// The committed block at `height` in its stored (protobuf) form; kNotFound past the tip.
  [[nodiscard]] Result<std::string> GetEncodedBlock(std::uint64_t height) const;

  /// Where a committed tx is and how its execution ended; kNotFound if it is in no committed block.
  [[nodiscard]] Result<consensus::TxLocation> FindTx(const consensus::Hash256& id) const;

  /// Whether this node's pool holds the tx (admitted by CheckTx, not yet in a committed block).
  bool IsPending(const consensus::Hash256& id) const;

  /// The nonce `signer`'s next tx needs given its txs in this node's pool (Mempool::NextPendingNonce);
  /// nullopt when it has none there or before InitChain.
  std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const;

  /// Calls `read` with the committed state and returns what it returns; no block commits while it
  /// runs. kFailedPrecondition before InitChain.
  [[nodiscard]] Result<std::string> ReadCommitted(
      const std::function<Result<std::string>(const contracts::StateStore&)>& read) const;

  /// Counters for /metrics: txs admitted and refused by CheckTx, txs and blocks committed.
  const LedgerCounters& counters() const { return counters_; }

 private:
  // The finalized block waiting for Commit.
  struct PendingBlock {
    std::unique_ptr<BlockState> state;
    consensus::Block block;
    std::vector<consensus::Hash256> ids;
    std::vector<consensus::TxOutcome> outcomes;
  };

  AbciApp(const AbciAppOptions& options, GenesisParser parse_genesis, std::unique_ptr<consensus::ChainStore> store);

  abci::ResponseInfo Info() const;
  [[nodiscard]] Result<abci::ResponseInitChain> InitChain(const abci::RequestInitChain& request);
  abci::ResponseCheckTx CheckTx(const abci::RequestCheckTx& request);
  [[nodiscard]] Result<abci::ResponsePrepareProposal> PrepareProposal(const abci::RequestPrepareProposal& request);
  [[nodiscard]] Result<abci::ResponseProcessProposal> ProcessProposal(const abci::RequestProcessProposal& request);
  [[nodiscard]] Result<abci::ResponseFinalizeBlock> FinalizeBlock(const abci::RequestFinalizeBlock& request);
  [[nodiscard]] Result<abci::ResponseCommit> Commit();
  [[nodiscard]] Result<abci::ResponseExtendVote> ExtendVote(const abci::RequestExtendVote& request) const;
  abci::ResponseVerifyVoteExtension VerifyVoteExtension(const abci::RequestVerifyVoteExtension& request) const;
  // R(height) of the block at `height` (tip + 1) whose txs are `txs` and whose last commit's
  // validator set is `powers`: GenesisBeacon at height 1, else VerifyBeaconTx of txs[0] on
  // alpha(height - 1). kInvalidArgument when the block has no valid beacon tx.
  [[nodiscard]] Result<consensus::Hash256> BlockBeacon(std::int64_t height, const google::protobuf::RepeatedPtrField<std::string>& txs,
                                                       const VotingPowers& powers) const;
  abci::ResponseQuery Query(const abci::RequestQuery& request) const;
  // Query's /v1/blocks/{height}: the committed block in its stored form (its header carries R(h)).
  [[nodiscard]] Result<std::string> QueryBlock(std::string_view height_text) const;

  // Loads the chain id and tip header from a store that has blocks, and makes the pool.
  [[nodiscard]] Status LoadChain();
  // Application::CheckTx of a pending tx against `committed`; records the signer's next nonce.
  [[nodiscard]] Status CheckPending(consensus::PendingTx& tx, const contracts::StateStore& committed) const;
  // kFailedPrecondition before InitChain.
  [[nodiscard]] Status RequireChain() const;

  const AbciAppOptions options_;
  const GenesisParser parse_genesis_;
  std::unique_ptr<consensus::ChainStore> store_;
  contracts::Application app_;
  mutable std::mutex mu_;                      // the one application mutex: every Handle holds it
  std::string chain_id_;                       // empty before InitChain
  std::unique_ptr<consensus::Mempool> mempool_;  // made once the chain id is known
  consensus::BlockHeader tip_header_;          // the last committed block's header
  consensus::Hash256 parent_randomness_{};     // the randomness of the block before the tip (zero at 0)
  BeaconKeys beacon_keys_;                     // the validators' VRF keys, from genesis
  std::optional<PendingBlock> pending_;        // set by FinalizeBlock, consumed by Commit
  LedgerCounters counters_;
};

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_ABCI_APP_H_
