#include "polnode/ledger/abci_app.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <utility>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/queries.h"

namespace polnode::node {
namespace {

using consensus::Hash256;

// ExecTxResult/ResponseCheckTx codespace of polnode's codes (the StatusCode values; 0 is OK).
constexpr std::string_view kCodespace = "polnode";

std::uint32_t AbciCode(StatusCode code) { return static_cast<std::uint32_t>(code); }

std::string Bytes(const Hash256& h) { return std::string(h.begin(), h.end()); }

std::int64_t UnixMillis(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000 + t.nanos() / 1'000'000;
}

// The account that receives a block's fees. CometBFT names the proposer by its consensus key's
// address (20 bytes of SHA-256 of an ed25519 key), which is not a polnode account; until
// validators register one, fees go to this derived key, whose secret nobody holds: they leave
// circulation but stay counted in the supply.
contracts::PubKey ProposerAccount(std::string_view proposer_address) {
  return consensus::Sha256("polnode/abci-proposer/v1" + std::string(proposer_address));
}

// The context of CometBFT's block `height` with its beacon `randomness` (abci_beacon.h). The
// randomness is zero in PrepareProposal, where the ante checks its simulation runs do not read it.
contracts::BlockContext MakeContext(std::int64_t height, const google::protobuf::Timestamp& time, const Hash256& randomness,
                                    std::string_view proposer_address) {
  contracts::BlockContext context;
  context.height = static_cast<std::uint64_t>(height);
  context.time_unix_ms = UnixMillis(time);
  context.randomness = randomness;
  context.proposer = ProposerAccount(proposer_address);
  return context;
}

// The validator set of a block's last commit: every vote's validator with its power, absent ones
// included (CometBFT lists the whole set).
template <typename Votes>
VotingPowers PowersOf(const Votes& votes) {
  VotingPowers powers;
  for (const auto& vote : votes) powers[vote.validator().address()] = vote.validator().power();
  return powers;
}

// The file in the data directory that keeps the genesis beacon_keys: one 52-byte record per
// validator (20-byte address, 32-byte VRF public key). InitChain writes it before block 0.
constexpr std::string_view kBeaconKeysFile = "beacon_keys";
constexpr std::size_t kBeaconKeyRecord = kValidatorAddressBytes + 32;

std::string BeaconKeysPath(const std::string& data_dir) { return data_dir + "/" + std::string(kBeaconKeysFile); }

std::string EncodeBeaconKeys(const BeaconKeys& keys) {
  std::string out;
  for (const auto& [address, key] : keys) {
    out += address;
    out.append(key.bytes().begin(), key.bytes().end());
  }
  return out;
}

Result<BeaconKeys> DecodeBeaconKeys(const std::vector<std::uint8_t>& bytes) {
  if (bytes.empty() || bytes.size() % kBeaconKeyRecord != 0) return Status::Corruption("beacon_keys file has a bad size");
  BeaconKeys keys;
  for (std::size_t at = 0; at < bytes.size(); at += kBeaconKeyRecord) {
    const std::string address(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                              bytes.begin() + static_cast<std::ptrdiff_t>(at + kValidatorAddressBytes));
    Result<consensus::XOnlyPublicKey> key = consensus::XOnlyPublicKey::FromBytes(
        std::span<const std::uint8_t, 32>(bytes.data() + at + kValidatorAddressBytes, 32));
    if (!key.ok()) return Status::Corruption("beacon_keys file holds an invalid VRF key");
    keys.emplace(address, *key);
  }
  return keys;
}

// The protobuf size of `tx` as one element of a repeated bytes field: what CometBFT counts against
// max_tx_bytes (types.ComputeProtoSizeForTxs).
std::uint64_t ProtoSizeOfTx(const std::string& tx) {
  std::uint64_t varint = 1;
  for (std::uint64_t n = tx.size(); n >= 0x80; n >>= 7) ++varint;
  return 1 + varint + tx.size();
}

abci::Response Exception(const Status& status) {
  abci::Response response;
  response.mutable_exception()->set_error(status.ToString());
  return response;
}

// The path's segments: "/v1/accounts/ab" -> {"v1", "accounts", "ab"}.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    if (slash != 0) parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// A block height in decimal, the whole text; nullopt otherwise (a sign, spaces or an overflow).
std::optional<std::uint64_t> ParseHeight(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The index of a block's first contract transaction: from height 2 the first is the beacon tx,
// which no contract executes (abci_beacon.h).
int FirstContractTx(std::int64_t height) { return height >= 2 ? 1 : 0; }

Result<std::string> RawId(std::string_view hex) {
  if (hex.size() != 64) return Status::InvalidArgument("expected 64 hex characters");
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, consensus::HexToBytes(hex));
  return std::string(bytes.begin(), bytes.end());
}

Result<std::string> Serialized(const google::protobuf::MessageLite& message) {
  std::string out;
  if (!message.SerializeToString(&out)) return Status::Internal("protobuf failed to serialize a query result");
  return out;
}

// The state routes of the embedded ledger's HTTP API (rpc/ledger_api.h) that read one record, with
// that record's protobuf bytes as the answer.
Result<std::string> QueryState(std::string_view path, const contracts::StateStore& state) {
  const std::vector<std::string_view> parts = Segments(path);
  if (parts.size() < 2 || parts[0] != "v1") return Status::NotFound("no such query path: " + std::string(path));
  const std::string_view resource = parts[1];
  if (resource == "accounts" && parts.size() == 3) {
    POLNODE_ASSIGN_OR_RETURN(std::string key, RawId(parts[2]));
    POLNODE_ASSIGN_OR_RETURN(proto::Account account, contracts::QueryAccount(state, key));
    return Serialized(account);
  }
  if (resource == "tasks" && parts.size() == 3) {
    POLNODE_ASSIGN_OR_RETURN(std::string id, RawId(parts[2]));
    POLNODE_ASSIGN_OR_RETURN(proto::Task task, contracts::QueryTask(state, id));
    return Serialized(task);
  }
  if (resource == "params" && parts.size() == 2) {
    POLNODE_ASSIGN_OR_RETURN(proto::Params params, contracts::QueryParams(state));
    return Serialized(params);
  }
  if (resource == "jackpot" && parts.size() == 2) {
    POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, contracts::QueryJackpot(state));
    return Serialized(jackpot);
  }
  return Status::NotFound("no such query path: " + std::string(path));
}

}  // namespace

AbciApp::AbciApp(const AbciAppOptions& options, GenesisParser parse_genesis, std::unique_ptr<consensus::ChainStore> store)
    : options_(options), parse_genesis_(std::move(parse_genesis)), store_(std::move(store)) {}

Result<std::unique_ptr<AbciApp>> AbciApp::Open(const AbciAppOptions& options, GenesisParser parse_genesis) {
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<consensus::ChainStore> store,
                           consensus::ChainStore::Open(options.data_dir, consensus::ChainStoreOptions{options.sync_writes}));
  std::unique_ptr<AbciApp> app(new AbciApp(options, std::move(parse_genesis), std::move(store)));
  if (app->store_->tip().has_value()) POLNODE_RETURN_IF_ERROR(app->LoadChain());
  return app;
}

Status AbciApp::LoadChain() {
  POLNODE_ASSIGN_OR_RETURN(std::string genesis_bytes, store_->GetEncodedBlock(0));
  POLNODE_ASSIGN_OR_RETURN(consensus::Block block0, consensus::DecodeBlock(genesis_bytes));
  POLNODE_ASSIGN_OR_RETURN(std::string tip_bytes, store_->GetEncodedBlock(store_->tip()->height));
  POLNODE_ASSIGN_OR_RETURN(consensus::Block tip, consensus::DecodeBlock(tip_bytes));
  chain_id_ = block0.header.chain_id;
  tip_header_ = tip.header;
  parent_randomness_ = Hash256{};
  if (tip.header.height > 0) {
    POLNODE_ASSIGN_OR_RETURN(std::string parent_bytes, store_->GetEncodedBlock(tip.header.height - 1));
    POLNODE_ASSIGN_OR_RETURN(consensus::Block parent, consensus::DecodeBlock(parent_bytes));
    parent_randomness_ = parent.header.randomness;
  }
  Result<std::vector<std::uint8_t>> keys = ReadWholeFile(BeaconKeysPath(options_.data_dir), 1 << 20);
  if (!keys.ok()) return keys.status().WithContext("the validators' VRF keys (written by InitChain)");
  POLNODE_ASSIGN_OR_RETURN(beacon_keys_, DecodeBeaconKeys(*keys));
  mempool_ = std::make_unique<consensus::Mempool>(
      consensus::MempoolOptions{chain_id_, options_.mempool_max_txs, options_.max_tx_bytes});
  return Status::Ok();
}

Status AbciApp::RequireChain() const {
  if (chain_id_.empty()) return Status::FailedPrecondition("the chain has no genesis yet (InitChain was not called)");
  return Status::Ok();
}

std::uint64_t AbciApp::height() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tip_header_.height;
}

Hash256 AbciApp::state_root() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tip_header_.state_root;
}

LedgerStatus AbciApp::GetStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  LedgerStatus status;
  status.chain_id = chain_id_;
  if (chain_id_.empty()) return status;
  status.height = tip_header_.height;
  status.tip_hash = consensus::BlockHash(tip_header_);
  status.state_root = tip_header_.state_root;
  status.tip_time_unix_ms = tip_header_.time_unix_ms;
  status.mempool_size = mempool_->size();
  return status;
}

Result<std::string> AbciApp::GetEncodedBlock(std::uint64_t height) const {
  std::lock_guard<std::mutex> lock(mu_);
  // The store holds the block being committed only once Commit wrote it; past the tip is NotFound
  // whatever RocksDB holds, so a reader never sees a height the app has not answered Commit for.
  if (chain_id_.empty() || height > tip_header_.height) {
    return Status::NotFound("no block " + std::to_string(height) + " (the tip is " + std::to_string(tip_header_.height) + ")");
  }
  return store_->GetEncodedBlock(height);
}

Result<consensus::TxLocation> AbciApp::FindTx(const Hash256& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_->FindTx(id);
}

bool AbciApp::IsPending(const Hash256& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return mempool_ != nullptr && mempool_->Contains(id);
}

std::optional<std::uint64_t> AbciApp::NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (mempool_ == nullptr) return std::nullopt;
  return mempool_->NextPendingNonce(signer);
}

Result<std::string> AbciApp::ReadCommitted(const std::function<Result<std::string>(const contracts::StateStore&)>& read) const {
  std::lock_guard<std::mutex> lock(mu_);
  POLNODE_RETURN_IF_ERROR(RequireChain());
  const BlockState committed(*store_);
  return read(committed);
}

abci::Response AbciApp::Handle(const abci::Request& request) {
  std::lock_guard<std::mutex> lock(mu_);
  abci::Response response;
  switch (request.value_case()) {
    case abci::Request::kEcho:
      response.mutable_echo()->set_message(request.echo().message());
      return response;
    case abci::Request::kFlush:
      response.mutable_flush();
      return response;
    case abci::Request::kInfo:
      *response.mutable_info() = Info();
      return response;
    case abci::Request::kInitChain: {
      Result<abci::ResponseInitChain> r = InitChain(request.init_chain());
      if (!r.ok()) return Exception(r.status().WithContext("InitChain"));
      *response.mutable_init_chain() = std::move(r).value();
      return response;
    }
    case abci::Request::kQuery:
      *response.mutable_query() = Query(request.query());
      return response;
    case abci::Request::kCheckTx:
      *response.mutable_check_tx() = CheckTx(request.check_tx());
      return response;
    case abci::Request::kCommit: {
      Result<abci::ResponseCommit> r = Commit();
      if (!r.ok()) return Exception(r.status().WithContext("Commit"));
      *response.mutable_commit() = std::move(r).value();
      return response;
    }
    case abci::Request::kListSnapshots:
      response.mutable_list_snapshots();
      return response;
    case abci::Request::kOfferSnapshot:
      // There are no snapshots to restore from: a new node replays the chain from genesis.
      response.mutable_offer_snapshot()->set_result(abci::ResponseOfferSnapshot::REJECT);
      return response;
    case abci::Request::kLoadSnapshotChunk:
      response.mutable_load_snapshot_chunk();
      return response;
    case abci::Request::kApplySnapshotChunk:
      response.mutable_apply_snapshot_chunk()->set_result(abci::ResponseApplySnapshotChunk::ABORT);
      return response;
    case abci::Request::kPrepareProposal: {
      Result<abci::ResponsePrepareProposal> r = PrepareProposal(request.prepare_proposal());
      if (!r.ok()) return Exception(r.status().WithContext("PrepareProposal"));
      *response.mutable_prepare_proposal() = std::move(r).value();
      return response;
    }
    case abci::Request::kProcessProposal: {
      Result<abci::ResponseProcessProposal> r = ProcessProposal(request.process_proposal());
      if (!r.ok()) return Exception(r.status().WithContext("ProcessProposal"));
      *response.mutable_process_proposal() = std::move(r).value();
      return response;
    }
    case abci::Request::kExtendVote: {
      Result<abci::ResponseExtendVote> r = ExtendVote(request.extend_vote());
      if (!r.ok()) return Exception(r.status().WithContext("ExtendVote"));
      *response.mutable_extend_vote() = std::move(r).value();
      return response;
    }
    case abci::Request::kVerifyVoteExtension:
      *response.mutable_verify_vote_extension() = VerifyVoteExtension(request.verify_vote_extension());
      return response;
    case abci::Request::kFinalizeBlock: {
      Result<abci::ResponseFinalizeBlock> r = FinalizeBlock(request.finalize_block());
      if (!r.ok()) return Exception(r.status().WithContext("FinalizeBlock"));
      *response.mutable_finalize_block() = std::move(r).value();
      return response;
    }
    case abci::Request::VALUE_NOT_SET:
      break;
  }
  return Exception(Status::InvalidArgument("unknown ABCI request"));
}

abci::ResponseInfo AbciApp::Info() const {
  abci::ResponseInfo info;
  info.set_data("polnode");
  info.set_version("polnode-abci/1");
  // Height 0 (nothing, or only the genesis state, committed) has no app hash: CometBFT then calls
  // InitChain, which answers the genesis state root.
  if (tip_header_.height > 0) {
    info.set_last_block_height(static_cast<std::int64_t>(tip_header_.height));
    info.set_last_block_app_hash(Bytes(tip_header_.state_root));
  }
  return info;
}

Result<abci::ResponseInitChain> AbciApp::InitChain(const abci::RequestInitChain& request) {
  POLNODE_ASSIGN_OR_RETURN(AbciGenesis abci_genesis, parse_genesis_(request.app_state_bytes()));
  const GenesisFile& genesis = abci_genesis.file;
  if (genesis.spec.chain_id() != request.chain_id()) {
    return Status::InvalidArgument("app_state is for chain '" + genesis.spec.chain_id() + "' but CometBFT's genesis is for '" +
                                   request.chain_id() + "'");
  }
  if (request.initial_height() > 1) {
    return Status::InvalidArgument("initial_height " + std::to_string(request.initial_height()) +
                                   " is not supported: polnode's chains start at block 1");
  }
  // The beacon needs every block from 2 on to follow votes with extensions, and every validator's
  // extension to be checkable.
  if (request.consensus_params().abci().vote_extensions_enable_height() != 1) {
    return Status::InvalidArgument(
        "polnode's beacon needs vote extensions from height 1: set consensus_params.abci.vote_extensions_enable_height "
        "to \"1\" in CometBFT's genesis.json (it is " +
        std::to_string(request.consensus_params().abci().vote_extensions_enable_height()) + ")");
  }
  for (const abci::ValidatorUpdate& v : request.validators()) {
    if (!v.pub_key().has_ed25519()) return Status::InvalidArgument("a genesis validator's key is not ed25519");
    const Hash256 digest = consensus::Sha256(v.pub_key().ed25519());
    const std::string address(digest.begin(), digest.begin() + kValidatorAddressBytes);
    if (abci_genesis.beacon_keys.count(address) == 0) {
      return Status::InvalidArgument("genesis app_state has no beacon_keys entry (VRF key) for validator " +
                                     consensus::ToHex({reinterpret_cast<const std::uint8_t*>(address.data()), address.size()}));
    }
  }
  if (abci_genesis.beacon_keys.empty()) return Status::InvalidArgument("genesis app_state has no beacon_keys");
  abci::ResponseInitChain response;
  if (store_->tip().has_value()) {
    // A restart after InitChain but before block 1: the genesis must be the one already stored.
    if (store_->tip()->height != 0 || chain_id_ != genesis.spec.chain_id()) {
      return Status::FailedPrecondition("InitChain on a store that already holds chain '" + chain_id_ + "' at height " +
                                        std::to_string(store_->tip()->height));
    }
    contracts::MemoryStateStore scratch;
    POLNODE_RETURN_IF_ERROR(app_.InitChain(genesis.spec, scratch).WithContext("genesis"));
    consensus::StateTree tree;
    for (const auto& [k, v] : scratch.pairs()) tree.Set(k, v);
    tree.Rehash();
    if (tree.root() != tip_header_.state_root) {
      return Status::FailedPrecondition("app_state does not match the genesis stored in block 0");
    }
    if (EncodeBeaconKeys(abci_genesis.beacon_keys) != EncodeBeaconKeys(beacon_keys_)) {
      return Status::FailedPrecondition("app_state's beacon_keys differ from the stored ones");
    }
    response.set_app_hash(Bytes(tip_header_.state_root));
    return response;
  }
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(BeaconKeysPath(options_.data_dir), EncodeBeaconKeys(abci_genesis.beacon_keys)));
  BlockState state(*store_);
  POLNODE_RETURN_IF_ERROR(app_.InitChain(genesis.spec, state).WithContext("genesis"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, store_->StateRoot(state.delta()));
  response.set_app_hash(Bytes(root));
  consensus::Block block;
  block.header.chain_id = genesis.spec.chain_id();
  block.header.height = 0;
  block.header.time_unix_ms = UnixMillis(request.time());
  block.header.tx_root = consensus::ComputeTxRoot(block.txs);
  block.header.state_root = root;
  consensus::BlockRecord record;
  record.height = 0;
  record.hash = consensus::BlockHash(block.header);
  POLNODE_ASSIGN_OR_RETURN(record.encoded_block, consensus::EncodeBlock(block));
  POLNODE_ASSIGN_OR_RETURN(consensus::PreparedCommit prepared, store_->Prepare(record, state.delta()));
  POLNODE_RETURN_IF_ERROR(store_->Write(std::move(prepared)));
  POLNODE_RETURN_IF_ERROR(LoadChain());
  return response;
}

Status AbciApp::CheckPending(consensus::PendingTx& tx, const contracts::StateStore& committed) const {
  const contracts::VerifiedTx verified = contracts::MakeVerifiedTx(tx.envelope, tx.id, tx.encoded.size());
  POLNODE_ASSIGN_OR_RETURN(tx.account_nonce, app_.CheckTxAndNextNonce(verified, committed));
  return Status::Ok();
}

abci::ResponseCheckTx AbciApp::CheckTx(const abci::RequestCheckTx& request) {
  abci::ResponseCheckTx response;
  Status status = RequireChain();
  if (status.ok() && IsBeaconTx(request.tx())) {
    status = Status::InvalidArgument("a tx starting with 0x00 is a block's beacon tx, which only a proposer adds");
  } else if (status.ok()) {
    if (request.type() == abci::RECHECK) {
      // Commit already rechecked polnode's pool against the new state; a tx it dropped is gone.
      if (!mempool_->Contains(consensus::TxId(request.tx()))) {
        status = Status::FailedPrecondition("no longer valid after the last block (rechecked at Commit)");
      }
    } else {
      const BlockState committed(*store_);
      status = mempool_->Add(request.tx(), [&](consensus::PendingTx& tx) { return CheckPending(tx, committed); }).status();
      (status.ok() ? counters_.txs_accepted : counters_.txs_rejected).fetch_add(1, std::memory_order_relaxed);
    }
  }
  response.set_code(AbciCode(status.code()));
  if (!status.ok()) {
    response.set_log(status.ToString());
    response.set_codespace(std::string(kCodespace));
  }
  return response;
}

Result<abci::ResponsePrepareProposal> AbciApp::PrepareProposal(const abci::RequestPrepareProposal& request) {
  POLNODE_RETURN_IF_ERROR(RequireChain());
  std::vector<contracts::VerifiedTx> candidates;
  std::vector<consensus::PendingTx> decoded;
  for (const std::string& tx : request.txs()) {
    // A tx that no longer decodes or verifies is left out (the block must not carry it).
    Result<consensus::PendingTx> pending = mempool_->Precheck(tx);
    if (pending.ok()) decoded.push_back(std::move(pending).value());
  }
  for (const consensus::PendingTx& tx : decoded) {
    candidates.push_back(contracts::MakeVerifiedTx(tx.envelope, tx.id, tx.encoded.size()));
  }
  const contracts::BlockContext context = MakeContext(request.height(), request.time(), Hash256{}, request.proposer_address());
  const std::uint64_t max_bytes = request.max_tx_bytes() > 0 ? static_cast<std::uint64_t>(request.max_tx_bytes()) : 0;
  abci::ResponsePrepareProposal response;
  std::uint64_t total = 0;
  if (request.height() >= 2) {
    std::vector<ExtendedVote> votes;
    for (const abci::ExtendedVoteInfo& v : request.local_last_commit().votes()) {
      if (v.block_id_flag() == abci::BLOCK_ID_FLAG_COMMIT) votes.push_back(ExtendedVote{v.validator().address(), v.vote_extension()});
    }
    const std::vector<std::uint8_t> alpha =
        BeaconAlpha(chain_id_, static_cast<std::uint64_t>(request.height() - 1), parent_randomness_);
    // Without more than 2/3 of valid extensions no valid block exists: an empty proposal, which
    // the others reject, lets the round pass rather than stop this node.
    Result<std::string> beacon = BuildBeaconTx(votes, beacon_keys_, PowersOf(request.local_last_commit().votes()), alpha);
    if (!beacon.ok()) return response;
    total += ProtoSizeOfTx(*beacon);
    if (total > max_bytes) return response;
    response.add_txs(*std::move(beacon));
  }
  const BlockState committed(*store_);
  POLNODE_ASSIGN_OR_RETURN(std::vector<contracts::VerifiedTx> chosen,
                           app_.PrepareProposal(std::move(candidates), context, committed,
                                                contracts::ProposalLimits{options_.max_txs_per_block, max_bytes}));
  for (const contracts::VerifiedTx& tx : chosen) {
    auto it = std::find_if(decoded.begin(), decoded.end(), [&](const consensus::PendingTx& p) { return p.id == tx.tx_hash; });
    if (it == decoded.end()) return Status::Internal("PrepareProposal returned a transaction that was not offered");
    // The application counted envelope bytes; CometBFT counts each tx's protobuf framing too.
    total += ProtoSizeOfTx(it->encoded);
    if (total > max_bytes) break;
    response.add_txs(it->encoded);
  }
  return response;
}

Result<abci::ResponseProcessProposal> AbciApp::ProcessProposal(const abci::RequestProcessProposal& request) {
  POLNODE_RETURN_IF_ERROR(RequireChain());
  abci::ResponseProcessProposal response;
  response.set_status(abci::ResponseProcessProposal::REJECT);
  Result<Hash256> beacon = BlockBeacon(request.height(), request.txs(), PowersOf(request.proposed_last_commit().votes()));
  if (!beacon.ok()) return response;
  std::vector<consensus::PendingTx> decoded;
  for (int i = FirstContractTx(request.height()); i < request.txs_size(); ++i) {
    Result<consensus::PendingTx> pending = mempool_->Precheck(request.txs(i));
    if (!pending.ok()) return response;
    decoded.push_back(std::move(pending).value());
  }
  std::vector<contracts::VerifiedTx> txs;
  for (const consensus::PendingTx& tx : decoded) txs.push_back(contracts::MakeVerifiedTx(tx.envelope, tx.id, tx.encoded.size()));
  const contracts::BlockContext context = MakeContext(request.height(), request.time(), *beacon, request.proposer_address());
  const BlockState committed(*store_);
  const contracts::ProposalLimits limits{options_.max_txs_per_block, std::numeric_limits<std::uint64_t>::max()};
  if (app_.ProcessProposal(txs, context, committed, limits).ok()) response.set_status(abci::ResponseProcessProposal::ACCEPT);
  return response;
}

Result<abci::ResponseFinalizeBlock> AbciApp::FinalizeBlock(const abci::RequestFinalizeBlock& request) {
  POLNODE_RETURN_IF_ERROR(RequireChain());
  const std::uint64_t height = static_cast<std::uint64_t>(request.height());
  if (request.height() <= 0 || height != tip_header_.height + 1) {
    return Status::FailedPrecondition("block " + std::to_string(request.height()) + " does not follow the committed height " +
                                      std::to_string(tip_header_.height));
  }
  pending_.reset();  // a block finalized again after a restart of consensus replaces the earlier attempt

  // A decided block without a valid beacon cannot come from more than 2/3 of honest validators
  // (ProcessProposal rejects it): this node cannot follow such a chain.
  POLNODE_ASSIGN_OR_RETURN(Hash256 randomness,
                           BlockBeacon(request.height(), request.txs(), PowersOf(request.decided_last_commit().votes())));
  // A tx that does not decode, verify or belong to this chain cannot execute at all: it gets an
  // error result and changes nothing (ProcessProposal kept honest validators from voting for it).
  abci::ResponseFinalizeBlock response;
  std::vector<contracts::VerifiedTx> verified;
  std::vector<std::size_t> slot;  // index in the stored block (and its outcomes) of verified[i]
  PendingBlock block;
  const int first = FirstContractTx(request.height());
  if (first == 1) response.add_tx_results();
  for (int i = first; i < request.txs_size(); ++i) {
    const std::string& raw = request.txs(i);
    block.block.txs.push_back(raw);
    block.ids.push_back(consensus::TxId(raw));
    block.outcomes.emplace_back();
    abci::ExecTxResult* result = response.add_tx_results();
    Result<consensus::PendingTx> pending = mempool_->Precheck(raw);
    if (!pending.ok()) {
      result->set_code(AbciCode(pending.status().code()));
      result->set_log(pending.status().ToString());
      result->set_codespace(std::string(kCodespace));
      block.outcomes.back() = consensus::TxOutcome{pending.status().code(), pending.status().ToString()};
      continue;
    }
    verified.push_back(contracts::MakeVerifiedTx(pending->envelope, pending->id, raw.size()));
    slot.push_back(static_cast<std::size_t>(i - first));
  }
  const contracts::BlockContext context = MakeContext(request.height(), request.time(), randomness, request.proposer_address());
  block.state = std::make_unique<BlockState>(*store_);
  POLNODE_ASSIGN_OR_RETURN(contracts::BlockResult executed, app_.FinalizeBlock(context, verified, *block.state));
  if (executed.tx_results.size() != verified.size()) {
    return Status::Internal("FinalizeBlock returned " + std::to_string(executed.tx_results.size()) + " results for " +
                            std::to_string(verified.size()) + " txs");
  }
  for (std::size_t i = 0; i < verified.size(); ++i) {
    const contracts::TxResult& r = executed.tx_results[i];
    abci::ExecTxResult* result = response.mutable_tx_results(static_cast<int>(slot[i]) + first);
    result->set_code(AbciCode(r.code));
    if (r.code != StatusCode::kOk) {
      result->set_log(r.log);
      result->set_codespace(std::string(kCodespace));
    }
    block.outcomes[slot[i]] = consensus::TxOutcome{r.code, r.log};
  }
  consensus::BlockHeader& header = block.block.header;
  header.chain_id = chain_id_;
  header.height = height;
  header.prev_hash = consensus::BlockHash(tip_header_);
  header.time_unix_ms = context.time_unix_ms;
  header.tx_root = consensus::MerkleRoot(block.ids);
  header.randomness = context.randomness;
  POLNODE_ASSIGN_OR_RETURN(header.state_root, store_->StateRoot(block.state->delta()));
  response.set_app_hash(Bytes(header.state_root));
  pending_ = std::move(block);
  return response;
}

Result<Hash256> AbciApp::BlockBeacon(std::int64_t height, const google::protobuf::RepeatedPtrField<std::string>& txs,
                                     const VotingPowers& powers) const {
  if (height == 1) return GenesisBeacon(chain_id_);
  if (txs.empty()) return Status::InvalidArgument("block " + std::to_string(height) + " has no beacon tx");
  const std::vector<std::uint8_t> alpha = BeaconAlpha(chain_id_, static_cast<std::uint64_t>(height - 1), parent_randomness_);
  Result<Hash256> beacon = VerifyBeaconTx(txs[0], beacon_keys_, powers, alpha);
  if (!beacon.ok()) return beacon.status().WithContext("block " + std::to_string(height) + "'s beacon tx");
  return beacon;
}

Result<abci::ResponseExtendVote> AbciApp::ExtendVote(const abci::RequestExtendVote& request) const {
  POLNODE_RETURN_IF_ERROR(RequireChain());
  if (!options_.vrf_key) return Status::FailedPrecondition("this node has no VRF key, so it cannot extend its votes");
  // CometBFT asks for the height after the last committed block, whose randomness alpha binds.
  if (request.height() <= 0 || static_cast<std::uint64_t>(request.height()) != tip_header_.height + 1) {
    return Status::FailedPrecondition("ExtendVote for height " + std::to_string(request.height()) + " after block " +
                                      std::to_string(tip_header_.height));
  }
  const std::vector<std::uint8_t> alpha = BeaconAlpha(chain_id_, static_cast<std::uint64_t>(request.height()), tip_header_.randomness);
  POLNODE_ASSIGN_OR_RETURN(std::string extension, MakeBeaconExtension(*options_.vrf_key, alpha));
  abci::ResponseExtendVote response;
  response.set_vote_extension(std::move(extension));
  return response;
}

abci::ResponseVerifyVoteExtension AbciApp::VerifyVoteExtension(const abci::RequestVerifyVoteExtension& request) const {
  abci::ResponseVerifyVoteExtension response;
  response.set_status(abci::ResponseVerifyVoteExtension::REJECT);
  if (!RequireChain().ok() || request.height() <= 0 ||
      static_cast<std::uint64_t>(request.height()) != tip_header_.height + 1) {
    return response;
  }
  const std::vector<std::uint8_t> alpha = BeaconAlpha(chain_id_, static_cast<std::uint64_t>(request.height()), tip_header_.randomness);
  if (VerifyBeaconExtension(beacon_keys_, request.validator_address(), request.vote_extension(), alpha).ok()) {
    response.set_status(abci::ResponseVerifyVoteExtension::ACCEPT);
  }
  return response;
}

Result<abci::ResponseCommit> AbciApp::Commit() {
  if (!pending_) return Status::FailedPrecondition("Commit without a finalized block");
  PendingBlock block = std::move(*pending_);
  pending_.reset();
  consensus::BlockRecord record;
  record.height = block.block.header.height;
  record.hash = consensus::BlockHash(block.block.header);
  record.tx_ids = block.ids;
  record.tx_outcomes = std::move(block.outcomes);
  POLNODE_ASSIGN_OR_RETURN(record.encoded_block, consensus::EncodeBlock(block.block));
  POLNODE_ASSIGN_OR_RETURN(consensus::PreparedCommit prepared, store_->Prepare(record, block.state->delta()));
  POLNODE_RETURN_IF_ERROR(store_->Write(std::move(prepared)));
  parent_randomness_ = tip_header_.randomness;
  tip_header_ = block.block.header;
  counters_.blocks_produced.fetch_add(1, std::memory_order_relaxed);
  counters_.txs_committed.fetch_add(record.tx_ids.size(), std::memory_order_relaxed);
  counters_.txs_failed.fetch_add(
      static_cast<std::uint64_t>(std::count_if(record.tx_outcomes.begin(), record.tx_outcomes.end(),
                                               [](const consensus::TxOutcome& o) { return o.code != StatusCode::kOk; })),
      std::memory_order_relaxed);
  POLNODE_RETURN_IF_ERROR(app_.Commit().status());
  mempool_->Remove(block.ids);
  const BlockState committed(*store_);
  mempool_->Recheck([&](consensus::PendingTx& tx) { return CheckPending(tx, committed); }, tip_header_.height);
  return abci::ResponseCommit();
}

Result<std::string> AbciApp::QueryBlock(std::string_view height_text) const {
  std::optional<std::uint64_t> height = ParseHeight(height_text);
  if (!height) return Status::InvalidArgument("block height must be a decimal number");
  if (*height > tip_header_.height) return Status::NotFound("no block " + std::string(height_text));
  return store_->GetEncodedBlock(*height);
}

abci::ResponseQuery AbciApp::Query(const abci::RequestQuery& request) const {
  abci::ResponseQuery response;
  const Status ready = RequireChain();
  const std::vector<std::string_view> parts = Segments(request.path());
  const bool block_path = parts.size() == 3 && parts[0] == "v1" && parts[1] == "blocks";
  Result<std::string> value = !ready.ok()   ? Result<std::string>(ready)
                              : block_path ? QueryBlock(parts[2])
                                           : QueryState(request.path(), BlockState(*store_));
  response.set_height(static_cast<std::int64_t>(tip_header_.height));
  if (!value.ok()) {
    response.set_code(AbciCode(value.status().code()));
    response.set_log(value.status().ToString());
    response.set_codespace(std::string(kCodespace));
    return response;
  }
  response.set_value(std::move(value).value());
  return response;
}

}  // namespace polnode::node
