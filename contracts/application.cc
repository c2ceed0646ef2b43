#include "polnode/contracts/application.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "accounts.h"
#include "checked_math.h"
#include "deadlines.h"
#include "dispatch.h"
#include "exec_context.h"
#include "keys.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/genesis.h"
#include "records.h"

namespace polnode::contracts {
namespace {

// Genesis facts every block needs.
struct ChainFacts {
  std::string chain_id;
  proto::Params params;
};

Result<ChainFacts> LoadChainFacts(const StateStore& state) {
  ChainFacts facts;
  POLNODE_ASSIGN_OR_RETURN(facts.chain_id, LoadChainId(state));
  POLNODE_ASSIGN_OR_RETURN(facts.params, LoadParams(state));
  return facts;
}

// The params stored in `state`, decoded. CheckTx runs for every admitted tx, and decoding the
// params (building, parsing and destroying the message) was a sixth of its cost; the params change
// at most with the state's bytes, so each thread keeps the last decoded message with the bytes
// it came from and decodes again only when the stored bytes differ. The pointer is valid until
// this thread's next call.
Result<const proto::Params*> ThreadCachedParams(const StateStore& state) {
  struct Cached {
    std::string bytes;
    proto::Params params;
    bool valid = false;
  };
  thread_local Cached cached;
  POLNODE_ASSIGN_OR_RETURN(auto bytes, state.Get(kParamsKey));
  if (!bytes.has_value()) return Status::FailedPrecondition("the state has no genesis (no params)");
  if (!cached.valid || cached.bytes != *bytes) {
    cached.valid = false;
    POLNODE_RETURN_IF_ERROR(DecodeRecord(*bytes, kParamsKey, cached.params));
    cached.bytes = std::move(*bytes);
    cached.valid = true;
  }
  return &cached.params;
}

std::uint64_t WireSize(const VerifiedTx& tx) { return tx.wire_size != 0 ? tx.wire_size : tx.payload.size(); }

// Runs one transaction against `state` (see application.h): ante, fee, payload in an overlay.
// Returns an error only for block-fatal failures; transaction failures are in the TxResult.
Result<TxResult> ExecuteTx(const BlockContext& block, const ChainFacts& facts, const VerifiedTx& tx,
                           StateStore& state) {
  TxResult result;
  Status ante = CheckAnte(tx, state, facts.params, facts.chain_id);
  if (!ante.ok()) {
    if (IsBlockFatal(ante)) return ante;
    result.code = ante.code();
    result.log = ante.message();
    return result;
  }
  OverlayStateStore fee_overlay(state);
  Status charged = ChargeAnte(tx, fee_overlay, facts.params, block.proposer);
  // With every holding bounded by the genesis supply the fee cannot overflow a balance.
  if (!charged.ok()) return Status::Internal("charging a checked fee failed: " + charged.ToString());
  fee_overlay.FlushTo(state);
  result.fee_charged = true;

  OverlayStateStore payload_overlay(state);
  std::vector<Event> events;
  ExecContext ctx{block, facts.params, payload_overlay, events};
  Status executed = ExecutePayload(ctx, tx);
  if (executed.ok()) {
    payload_overlay.FlushTo(state);
    result.events = std::move(events);
  } else if (IsBlockFatal(executed)) {
    return executed;
  } else {
    result.code = executed.code();
    result.log = executed.message();
  }
  return result;
}

// Puts each signer's transactions in nonce order within the positions they already occupy, so a
// mempool that delivers a signer's txs out of order still yields a valid sequence, while the
// interleaving of different signers (who claimed first) is kept.
void OrderNoncesPerSigner(std::vector<VerifiedTx>& txs) {
  std::map<PubKey, std::vector<std::size_t>> positions;
  for (std::size_t i = 0; i < txs.size(); ++i) positions[txs[i].signer].push_back(i);
  for (const auto& [signer, slots] : positions) {
    std::vector<VerifiedTx> own;
    for (std::size_t slot : slots) own.push_back(std::move(txs[slot]));
    std::stable_sort(own.begin(), own.end(),
                     [](const VerifiedTx& a, const VerifiedTx& b) { return a.nonce < b.nonce; });
    for (std::size_t k = 0; k < slots.size(); ++k) txs[slots[k]] = std::move(own[k]);
  }
}

}  // namespace

bool Application::Matches(const PreparedExecution& prepared, const BlockContext& context,
                          std::span<const VerifiedTx> txs) {
  const BlockContext& p = prepared.context;
  if (p.height != context.height || p.time_unix_ms != context.time_unix_ms || p.randomness != context.randomness ||
      p.proposer != context.proposer || prepared.tx_hashes.size() != txs.size()) {
    return false;
  }
  for (std::size_t i = 0; i < txs.size(); ++i) {
    if (prepared.tx_hashes[i] != txs[i].tx_hash) return false;
  }
  return true;
}

Status Application::InitChain(const proto::GenesisSpec& genesis, StateStore& state) const {
  POLNODE_ASSIGN_OR_RETURN(auto existing, state.Get(kChainIdKey));
  if (existing.has_value()) return Status::FailedPrecondition("the store already holds a genesis");
  POLNODE_RETURN_IF_ERROR(ValidateChainId(genesis.chain_id()));
  POLNODE_RETURN_IF_ERROR(ValidateParams(genesis.params()));
  std::set<std::string> seen;
  std::uint64_t supply = 0;
  for (const proto::Allocation& allocation : genesis.allocations()) {
    if (allocation.pubkey().size() != kIdBytes) return Status::InvalidArgument("allocation pubkey must be 32 bytes");
    if (allocation.amount() == 0) return Status::InvalidArgument("allocation amount must be positive");
    if (!seen.insert(allocation.pubkey()).second) {
      return Status::InvalidArgument("duplicate allocation for " + ToHex(allocation.pubkey()));
    }
    auto sum = CheckedAdd(supply, allocation.amount(), "genesis supply");
    if (!sum.ok()) return Status::InvalidArgument(sum.status().message());
    supply = *sum;
  }
  // Everything is validated before the first write, so a rejected genesis writes nothing.
  state.Put(std::string(kChainIdKey), genesis.chain_id());
  state.Put(std::string(kParamsKey), EncodeRecord(genesis.params()));
  for (const proto::Allocation& allocation : genesis.allocations()) {
    proto::Account account;
    account.set_balance(allocation.amount());
    StoreAccount(state, allocation.pubkey(), account);
  }
  StoreU64(state, kSupplyKey, supply);
  StoreU64(state, kHeightKey, 0);
  return Status::Ok();
}

Status Application::CheckTx(const VerifiedTx& tx, const StateStore& state) const {
  return CheckTxAndNextNonce(tx, state).status();
}

Result<std::uint64_t> Application::CheckTxAndNextNonce(const VerifiedTx& tx, const StateStore& state) const {
  POLNODE_ASSIGN_OR_RETURN(std::string chain_id, LoadChainId(state));
  POLNODE_ASSIGN_OR_RETURN(const proto::Params* params, ThreadCachedParams(state));
  if (tx.chain_id != chain_id) {
    return Status::InvalidArgument("wrong chain id '" + tx.chain_id + "', this chain is '" + chain_id + "'");
  }
  POLNODE_RETURN_IF_ERROR(ValidatePayload(tx, *params));
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, LoadAccount(state, SignerBytes(tx)));
  if (tx.nonce < account.nonce()) {
    return Status::FailedPrecondition("nonce " + std::to_string(tx.nonce) + " was already used; next is " +
                                      std::to_string(account.nonce()));
  }
  const std::uint64_t ahead = tx.nonce - account.nonce();
  if (ahead >= params->mempool_nonce_window()) {
    return Status::FailedPrecondition("nonce " + std::to_string(tx.nonce) + " is too far ahead of " +
                                      std::to_string(account.nonce()));
  }
  // The fees of this tx and of the signer's pending txs with lower nonces must all be payable.
  auto fees = CheckedMul(ahead + 1, params->tx_fee(), "pending fees");
  if (!fees.ok() || account.balance() < *fees) {
    return Status::FailedPrecondition("balance " + std::to_string(account.balance()) +
                                      " cannot pay the fees of the pending transactions up to this one");
  }
  return account.nonce();
}

Result<std::vector<VerifiedTx>> Application::PrepareProposal(std::vector<VerifiedTx> candidates,
                                                             const BlockContext& context, const StateStore& state,
                                                             const ProposalLimits& limits) const {
  POLNODE_ASSIGN_OR_RETURN(ChainFacts facts, LoadChainFacts(state));
  OrderNoncesPerSigner(candidates);
  OverlayStateStore scratch(state);
  PreparedExecution prepared;
  prepared.context = context;
  std::vector<VerifiedTx> chosen;
  std::uint64_t bytes = 0;
  for (VerifiedTx& tx : candidates) {
    if (chosen.size() >= limits.max_txs) break;
    if (WireSize(tx) > limits.max_bytes - bytes) continue;
    POLNODE_ASSIGN_OR_RETURN(TxResult result, ExecuteTx(context, facts, tx, scratch));
    // A tx whose ante failed wrote nothing, so the scratch holds exactly the chosen txs' effects.
    if (!result.fee_charged) continue;
    bytes += WireSize(tx);
    prepared.tx_hashes.push_back(tx.tx_hash);
    prepared.results.push_back(std::move(result));
    chosen.push_back(std::move(tx));
  }
  prepared.writes = scratch.TakeWrites();
  prepared_ = std::move(prepared);
  return chosen;
}

Status Application::ProcessProposal(std::span<const VerifiedTx> txs, const BlockContext& context,
                                    const StateStore& state, const ProposalLimits& limits) const {
  if (txs.size() > limits.max_txs) return Status::InvalidArgument("the proposal has too many transactions");
  POLNODE_ASSIGN_OR_RETURN(ChainFacts facts, LoadChainFacts(state));
  OverlayStateStore scratch(state);
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < txs.size(); ++i) {
    if (WireSize(txs[i]) > limits.max_bytes - bytes) return Status::InvalidArgument("the proposal is too large");
    bytes += WireSize(txs[i]);
    POLNODE_ASSIGN_OR_RETURN(TxResult result, ExecuteTx(context, facts, txs[i], scratch));
    if (!result.fee_charged) {
      return Status::InvalidArgument("transaction " + std::to_string(i) + " fails its ante: " + result.log);
    }
  }
  return Status::Ok();
}

Result<BlockResult> Application::FinalizeBlock(const BlockContext& context, std::span<const VerifiedTx> txs,
                                               StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(ChainFacts facts, LoadChainFacts(state));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t last_height, LoadU64(state, kHeightKey));
  if (context.height != last_height + 1) {
    return Status::FailedPrecondition("block height " + std::to_string(context.height) + " does not follow " +
                                      std::to_string(last_height));
  }
  BlockResult result;
  std::optional<PreparedExecution> prepared = std::exchange(prepared_, std::nullopt);
  if (prepared && Matches(*prepared, context, txs)) {
    // The proposal this node prepared: its execution is this block's.
    OverlayStateStore::Apply(std::move(prepared->writes), state);
    result.tx_results = std::move(prepared->results);
  } else {
    result.tx_results.reserve(txs.size());
    for (const VerifiedTx& tx : txs) {
      POLNODE_ASSIGN_OR_RETURN(TxResult tx_result, ExecuteTx(context, facts, tx, state));
      result.tx_results.push_back(std::move(tx_result));
    }
  }
  ExecContext end_block{context, facts.params, state, result.end_block_events};
  Status due = ProcessDue(end_block);
  if (!due.ok()) {
    // No user input reaches these transitions, so any failure is a bug or a broken store.
    if (IsBlockFatal(due)) return due.WithContext("end of block " + std::to_string(context.height));
    return Status::Internal("end of block " + std::to_string(context.height) + ": " + due.ToString());
  }
  StoreU64(state, kHeightKey, context.height);
  finalized_height_ = context.height;
  return result;
}

Result<std::uint64_t> Application::Commit() {
  if (!finalized_height_.has_value()) return Status::FailedPrecondition("no finalized block to commit");
  const std::uint64_t height = *finalized_height_;
  finalized_height_.reset();
  return height;
}

}  // namespace polnode::contracts
