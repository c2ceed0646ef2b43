#include "sim_chain.h"

#include <algorithm>

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/sha256.h"

namespace polnode::econ {
namespace {

constexpr std::string_view kChainId = "polnode-econ";

std::string StakeKey(proto::Role role, const PubKey& key) {
  const char* name = role == proto::ROLE_SOLVER     ? "solver"
                     : role == proto::ROLE_VERIFIER ? "verifier"
                                                    : "whistleblower";
  return std::string("stake/") + name + "/" + Hex(Raw(key));
}

}  // namespace

std::string Raw(const PubKey& key) { return {reinterpret_cast<const char*>(key.data()), key.size()}; }

PubKey KeyOf(std::string_view raw) {
  PubKey key{};
  std::copy_n(raw.begin(), std::min(raw.size(), key.size()), key.begin());
  return key;
}

std::string Hex(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

PendingTx MakeTx(const PubKey& signer, std::string_view type, const google::protobuf::MessageLite& payload) {
  return PendingTx{signer, std::string(type), payload.SerializeAsString()};
}

Result<SimChain> SimChain::Create(const proto::Params& params, const std::vector<PubKey>& funded,
                                  std::uint64_t balance, std::uint64_t seed) {
  SimChain chain(params, seed);
  proto::GenesisSpec genesis;
  genesis.set_chain_id(std::string(kChainId));
  *genesis.mutable_params() = params;
  for (const PubKey& key : funded) {
    proto::Allocation* allocation = genesis.add_allocations();
    allocation->set_pubkey(Raw(key));
    allocation->set_amount(balance);
  }
  POLNODE_RETURN_IF_ERROR(chain.app_.InitChain(genesis, chain.state_));
  return chain;
}

void SimChain::StartEpoch(std::uint64_t epoch) {
  epoch_ = epoch;
  epoch_start_ = height_ + 1;
}

Status SimChain::Block(const std::vector<PendingTx>& txs) {
  std::map<PubKey, std::uint64_t> next_nonce;
  std::vector<contracts::VerifiedTx> verified;
  verified.reserve(txs.size());
  for (const PendingTx& pending : txs) {
    auto found = next_nonce.find(pending.signer);
    if (found == next_nonce.end()) {
      POLNODE_ASSIGN_OR_RETURN(std::uint64_t nonce, Nonce(pending.signer));
      found = next_nonce.emplace(pending.signer, nonce).first;
    }
    contracts::VerifiedTx tx;
    tx.signer = pending.signer;
    tx.nonce = found->second++;
    tx.chain_id = std::string(kChainId);
    tx.payload_type = pending.type;
    tx.payload = pending.payload;
    tx.tx_hash = consensus::Sha256(Raw(pending.signer) + std::to_string(tx.nonce) + pending.payload);
    tx.wire_size = pending.payload.size() + 150;
    verified.push_back(std::move(tx));
  }
  contracts::BlockContext context;
  context.height = height_ + 1;
  context.time_unix_ms = static_cast<std::int64_t>(context.height) * 1000;
  consensus::HashWriter randomness;
  randomness.String("polnode/econ/randomness/v1");
  randomness.U64(seed_);
  randomness.U64(epoch_);
  randomness.U64(context.height - epoch_start_);
  context.randomness = randomness.Finalize();
  context.proposer = PubKey{};  // nobody simulated: fees leave every actor
  POLNODE_ASSIGN_OR_RETURN(contracts::BlockResult result, app_.FinalizeBlock(context, verified, state_));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t committed, app_.Commit());
  if (committed != context.height) return Status::Internal("the application committed another height");
  height_ = context.height;
  for (std::size_t i = 0; i < result.tx_results.size(); ++i) {
    const contracts::TxResult& r = result.tx_results[i];
    if (r.code != StatusCode::kOk) {
      return Status::Internal("block " + std::to_string(height_) + ": " + txs[i].type + " from " +
                              Hex(Raw(txs[i].signer)).substr(0, 8) + " failed: " + r.log);
    }
  }
  return Status::Ok();
}

Status SimChain::AdvanceTo(std::uint64_t height) {
  while (height_ < height) POLNODE_RETURN_IF_ERROR(Block({}));
  return Status::Ok();
}

template <typename Message>
Result<Message> SimChain::Read(const std::string& key) const {
  Message message;
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes, state_.Get(key));
  if (bytes.has_value() && !message.ParseFromString(*bytes)) return Status::Corruption("record " + key + " does not parse");
  return message;
}

Result<std::uint64_t> SimChain::Wealth(const PubKey& key) const {
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, Read<proto::Account>("acct/" + Hex(Raw(key))));
  std::uint64_t wealth = account.balance();
  for (proto::Role role : {proto::ROLE_SOLVER, proto::ROLE_VERIFIER, proto::ROLE_WHISTLEBLOWER}) {
    POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, Stake(role, key));
    wealth += stake.bonded() + stake.unbonding();
  }
  return wealth;
}

Result<proto::StakeRecord> SimChain::Stake(proto::Role role, const PubKey& key) const {
  return Read<proto::StakeRecord>(StakeKey(role, key));
}

Result<std::uint64_t> SimChain::Nonce(const PubKey& key) const {
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, Read<proto::Account>("acct/" + Hex(Raw(key))));
  return account.nonce();
}

Result<std::uint64_t> SimChain::Jackpot() const {
  POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, Read<proto::Jackpot>("jackpot"));
  return jackpot.pool();
}

Result<proto::Task> SimChain::Task(std::string_view task_id) const {
  return Read<proto::Task>("task/" + Hex(task_id));
}

Result<proto::DisputeGame> SimChain::Game(std::string_view task_id, std::string_view challenger) const {
  return Read<proto::DisputeGame>("game/" + Hex(task_id) + "/" + Hex(challenger));
}

}  // namespace polnode::econ
