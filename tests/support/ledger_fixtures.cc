#include "polnode/testing/ledger_fixtures.h"

#include <array>
#include <cstdlib>

#include "polnode/contracts/genesis.h"

namespace polnode::testing {

consensus::SecretKey KeyFromByte(std::uint8_t byte) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(byte);
  Result<consensus::SecretKey> key = consensus::SecretKey::FromBytes(bytes);
  if (!key.ok()) std::abort();  // byte 0 is not a key; every caller passes a constant
  return *key;
}

std::string RawPubKey(const consensus::SecretKey& key) {
  const auto& pub = key.PublicKey().bytes();
  return std::string(pub.begin(), pub.end());
}

consensus::TxEnvelope SignedEnvelope(const consensus::SecretKey& signer, std::string_view chain_id, std::uint64_t nonce,
                                     std::string_view payload_type, const google::protobuf::MessageLite& payload) {
  consensus::TxEnvelope e;
  e.chain_id = std::string(chain_id);
  e.nonce = nonce;
  e.payload_type = std::string(payload_type);
  e.payload = payload.SerializeAsString();
  const std::array<std::uint8_t, 32> aux{};
  Result<consensus::TxEnvelope> signed_envelope = consensus::SignEnvelope(signer, e, aux);
  if (!signed_envelope.ok()) std::abort();  // a fixture's fields are always valid
  return *std::move(signed_envelope);
}

std::string SignedTx(const consensus::SecretKey& signer, std::string_view chain_id, std::uint64_t nonce,
                     std::string_view payload_type, const google::protobuf::MessageLite& payload) {
  Result<std::string> bytes = consensus::EncodeEnvelope(SignedEnvelope(signer, chain_id, nonce, payload_type, payload));
  if (!bytes.ok()) std::abort();
  return *std::move(bytes);
}

proto::TransferTx TransferTo(const consensus::SecretKey& to, std::uint64_t amount) {
  proto::TransferTx payload;
  payload.set_to(RawPubKey(to));
  payload.set_amount(amount);
  return payload;
}

node::GenesisFile TestGenesis(std::string_view chain_id, const consensus::SecretKey& funded, std::uint64_t balance) {
  node::GenesisFile genesis;
  genesis.spec.set_chain_id(std::string(chain_id));
  *genesis.spec.mutable_params() = contracts::DefaultParams();
  proto::Allocation* a = genesis.spec.add_allocations();
  a->set_pubkey(RawPubKey(funded));
  a->set_amount(balance);
  return genesis;
}

Result<std::unique_ptr<node::Ledger>> OpenTestLedger(const std::string& data_dir, const node::GenesisFile& genesis) {
  node::LedgerOptions options;
  options.data_dir = data_dir;
  options.sync_writes = false;
  return node::Ledger::Open(options, genesis, KeyFromByte(9));
}

proto::TaskSpec UnboundTaskSpec() {
  proto::TaskSpec spec;
  spec.set_model_spec("mlp:16-8-3");
  spec.set_dataset_hash(std::string(32, '\x11'));
  spec.set_hyperparameters_hash(std::string(32, '\x22'));
  spec.set_total_steps(40);
  spec.set_checkpoint_interval(5);
  spec.set_segments_per_verification(2);
  spec.set_payment(5000);
  spec.set_claim_window(20);
  spec.set_training_window(40);
  spec.set_graph_root(std::string(32, '\x33'));
  spec.set_batch_root(std::string(32, '\x44'));
  spec.set_step_leaf_count(8);
  spec.set_state_tensor_count(2);
  spec.set_initial_state_hash(std::string(32, '\x55'));
  return spec;
}

}  // namespace polnode::testing
