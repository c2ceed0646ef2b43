#include "chain_harness.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts/supply.h"

namespace polnode::contracts::testing {
namespace {

// Reads a record through the public query-free path: the raw store plus protobuf.
template <typename Message>
Message Read(const MemoryStateStore& state, const std::string& key) {
  Message message;
  auto value = state.Get(key);
  EXPECT_TRUE(value.ok());
  if (value.ok() && value->has_value()) {
    EXPECT_TRUE(message.ParseFromString(**value));
  }
  return message;
}

}  // namespace

PubKey Key(std::uint8_t n) {
  PubKey key;
  key.fill(n);
  return key;
}

std::string Raw(const PubKey& key) { return {reinterpret_cast<const char*>(key.data()), key.size()}; }

std::string Bytes32(std::uint8_t n) { return std::string(32, static_cast<char>(n)); }

std::string HashBytes(const consensus::Hash256& h) { return std::string(reinterpret_cast<const char*>(h.data()), h.size()); }

proto::Params TestParams() {
  proto::Params p;
  p.set_tx_fee(1);
  p.set_mempool_nonce_window(8);
  p.set_min_stake_solver(1000);
  p.set_min_stake_verifier(500);
  p.set_min_stake_whistleblower(300);
  p.set_unbonding_blocks(5);
  p.set_max_claim_window(100);
  p.set_max_training_window(100);
  p.set_beacon_delay(2);
  p.set_verify_window(5);
  p.set_challenge_window(4);
  p.set_reveal_window(3);
  p.set_verifiers_per_task(2);
  p.set_verifier_fee_bps(1000);
  p.set_jackpot_cut_bps(200);
  p.set_jackpot_payout_bps(5000);
  p.set_forced_error_rate(0);
  p.set_max_segments_per_verification(8);
  p.set_max_payload_bytes(1 << 20);
  p.set_dispute_move_window(3);
  // Locks at the minimums (no payment scaling) keep the tests' arithmetic readable; the scaling
  // has its own tests. One verification round: replacement of absent verifiers is tested apart.
  p.set_jackpot_payout_cap_bps(10'000);
  p.set_publish_window(4);
  p.set_max_verification_rounds(1);
  p.set_max_challengers(4);
  p.set_max_total_steps(std::uint64_t{1} << 40);
  p.set_max_segments(std::uint64_t{1} << 20);
  p.set_seed_reveal_window(6);
  p.set_audit_window(1'000);
  return p;
}

proto::SubmitTaskTx TaskSubmission(std::uint64_t payment) {
  proto::SubmitTaskTx msg;
  proto::TaskSpec* spec = msg.mutable_spec();
  spec->set_model_spec("mlp-2x64");
  spec->set_dataset_hash(Bytes32(0xD1));
  spec->set_hyperparameters_hash(Bytes32(0xD2));
  spec->set_total_steps(1000);
  spec->set_checkpoint_interval(100);
  spec->set_segments_per_verification(2);
  spec->set_payment(payment);
  spec->set_claim_window(10);
  spec->set_training_window(20);
  spec->set_graph_root(Bytes32(0xD3));
  spec->set_batch_root(Bytes32(0xD4));
  spec->set_step_leaf_count(40);
  spec->set_state_tensor_count(8);
  spec->set_initial_state_hash(Bytes32(0xD5));
  msg.set_spec_uri("http://blobs.local/spec");
  return msg;
}

Chain::Chain(const proto::Params& params, const std::vector<PubKey>& funded, std::uint64_t balance) : params_(params) {
  proto::GenesisSpec genesis;
  genesis.set_chain_id(std::string(kChainId));
  *genesis.mutable_params() = params;
  for (const PubKey& key : funded) {
    proto::Allocation* allocation = genesis.add_allocations();
    allocation->set_pubkey(Raw(key));
    allocation->set_amount(balance);
  }
  Status status = app_.InitChain(genesis, state_);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

VerifiedTx Chain::Tx(const PubKey& signer, std::string_view type, const google::protobuf::MessageLite& payload) {
  VerifiedTx tx;
  tx.signer = signer;
  tx.nonce = Nonce(signer) + pending_nonces_[signer]++;
  tx.chain_id = std::string(kChainId);
  tx.payload_type = std::string(type);
  tx.payload = payload.SerializeAsString();
  tx.tx_hash = consensus::Sha256(tx.payload + std::to_string(tx.nonce));
  tx.wire_size = tx.payload.size() + 150;
  return tx;
}

consensus::Hash256 Chain::RandomnessAt(std::uint64_t height) {
  return consensus::Sha256("test-randomness/" + std::to_string(height));
}

BlockResult Chain::Block(const std::vector<VerifiedTx>& txs) {
  pending_nonces_.clear();
  BlockContext context;
  context.height = height_ + 1;
  context.time_unix_ms = static_cast<std::int64_t>(context.height) * 1000;
  context.randomness = RandomnessAt(context.height);
  context.proposer = Proposer();
  auto result = app_.FinalizeBlock(context, txs, state_);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) return {};
  auto committed = app_.Commit();
  EXPECT_TRUE(committed.ok() && *committed == context.height);
  height_ = context.height;
  auto audit = AuditSupply(state_);
  EXPECT_TRUE(audit.ok()) << audit.status().ToString();
  if (audit.ok()) {
    EXPECT_TRUE(audit->balanced()) << "supply " << audit->total() << " != " << audit->genesis_supply;
  }
  return std::move(result).value();
}

TxResult Chain::Run(const PubKey& signer, std::string_view type, const google::protobuf::MessageLite& payload) {
  BlockResult result = Block({Tx(signer, type, payload)});
  if (result.tx_results.size() != 1) return TxResult{StatusCode::kInternal, "block failed", false, {}};
  return result.tx_results[0];
}

void Chain::AdvanceTo(std::uint64_t height) {
  while (height_ < height) Block({});
}

std::uint64_t Chain::Balance(const PubKey& key) const {
  return Read<proto::Account>(state_, "acct/" + consensus::ToHex(Raw(key))).balance();
}

std::uint64_t Chain::Nonce(const PubKey& key) const {
  return Read<proto::Account>(state_, "acct/" + consensus::ToHex(Raw(key))).nonce();
}

proto::StakeRecord Chain::Stake(proto::Role role, const PubKey& key) const {
  const char* name = role == proto::ROLE_SOLVER     ? "solver"
                     : role == proto::ROLE_VERIFIER ? "verifier"
                                                    : "whistleblower";
  return Read<proto::StakeRecord>(state_, std::string("stake/") + name + "/" + consensus::ToHex(Raw(key)));
}

std::uint64_t Chain::Jackpot() const { return Read<proto::Jackpot>(state_, "jackpot").pool(); }

proto::Task Chain::Task(std::string_view task_id) const { return Read<proto::Task>(state_, "task/" + consensus::ToHex(task_id)); }

std::string Chain::TaskIdAt(std::uint64_t seq) const {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(seq));
  auto value = state_.Get(std::string("taskseq/") + buffer);
  EXPECT_TRUE(value.ok() && value->has_value());
  return value.ok() && value->has_value() ? **value : std::string();
}

}  // namespace polnode::contracts::testing
