#include "polnode/rpc/ledger_client.h"

#include <algorithm>
#include <cstring>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/payloads.h"

namespace polnode::node {

Result<std::string> RawFromHex(std::string_view hex, std::string_view what) {
  Result<std::vector<std::uint8_t>> bytes = consensus::HexToBytes(hex);
  if (!bytes.ok() || bytes->size() != 32) return Status::InvalidArgument(std::string(what) + " must be 64 hex characters");
  return std::string(bytes->begin(), bytes->end());
}

Result<LedgerClient> LedgerClient::FromUrl(std::string_view url) {
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint endpoint, ParseHttpUrl(url));
  return LedgerClient(std::move(endpoint));
}

Result<std::string> LedgerClient::GetJson(std::string_view target) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint_, "GET", target, {}, {}, timeout_));
  if (r.status != 200) return DecodeRefusal("GET " + std::string(target), r.status, r.body);
  return std::move(r.body);
}

Result<LedgerInfo> LedgerClient::Info() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/status"));
  return DecodeLedgerInfo(body);
}

Result<proto::Params> LedgerClient::Params() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/params"));
  return DecodeParams(body);
}

Result<proto::Task> LedgerClient::Task(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + consensus::ToHex(task_id)));
  return DecodeTask(body);
}

Result<contracts::TaskPage> LedgerClient::Tasks(std::uint64_t start, std::uint64_t limit) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body,
                           GetJson("/v1/tasks?start=" + std::to_string(start) + "&limit=" + std::to_string(limit)));
  return DecodeTaskPage(body);
}

Result<contracts::TaskGames> LedgerClient::Games(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + consensus::ToHex(task_id) + "/games"));
  return DecodeTaskGames(body);
}

Result<proto::PublishedCheckpoint> LedgerClient::Published(std::string_view task_id, std::uint64_t checkpoint) const {
  const std::string target = "/v1/tasks/" + consensus::ToHex(task_id) + "/published/" + std::to_string(checkpoint);
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson(target));
  return DecodePublishedCheckpoint(body);
}

Result<proto::RevealedCheckpoints> LedgerClient::Revealed(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + consensus::ToHex(task_id) + "/revealed"));
  return DecodeRevealedCheckpoints(body);
}

Result<solver::TrainState> LedgerClient::PublishedState(const proto::Task& task, std::uint64_t checkpoint) const {
  const std::string base = "/v1/tasks/" + consensus::ToHex(task.id()) + "/published/" + std::to_string(checkpoint);
  POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, Published(task.id(), checkpoint));
  solver::TrainState state;
  state.step = static_cast<std::int64_t>(checkpoint * task.spec().checkpoint_interval());
  for (int t = 0; t < published.tensors_size(); ++t) {
    const proto::PublishedTensorHeader& header = published.tensors(t);
    if (t >= published.verified_size() || !published.verified(t)) {
      return Status::FailedPrecondition("checkpoint " + std::to_string(checkpoint) + " is not completely published");
    }
    kernels::Shape shape(header.dims().begin(), header.dims().end());
    kernels::Tensor tensor(shape);
    const std::uint64_t elements = static_cast<std::uint64_t>(tensor.numel());
    for (std::uint64_t begin = 0, chunk = 0; begin < elements; begin += contracts::payload::kPublishChunkElements, ++chunk) {
      POLNODE_ASSIGN_OR_RETURN(std::string chunk_body,
                               GetJson(base + "/" + std::to_string(t) + "/" + std::to_string(chunk)));
      POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, DecodePublishedChunk(chunk_body));
      const std::uint64_t count = std::min(contracts::payload::kPublishChunkElements, elements - begin);
      if (bytes.size() != count * sizeof(float)) {
        return Status::Corruption("published chunk " + std::to_string(chunk) + " of tensor " + header.name() +
                                  " has the wrong size");
      }
      std::memcpy(tensor.data() + begin, bytes.data(), bytes.size());
    }
    const consensus::Hash256 hash = solver::TensorHash(tensor);
    if (std::string(hash.begin(), hash.end()) != header.hash()) {
      return Status::Corruption("published tensor " + header.name() + " does not hash to its header");
    }
    state.tensors.push_back({header.name(), std::move(tensor)});
  }
  return state;
}

Result<proto::Account> LedgerClient::Account(std::string_view pubkey) const {
  Result<std::string> body = GetJson("/v1/accounts/" + consensus::ToHex(pubkey));
  if (!body.ok() && body.status().code() == StatusCode::kNotFound) return proto::Account();
  if (!body.ok()) return body.status();
  return DecodeAccount(*body);
}

Result<proto::StakeRecord> LedgerClient::Stake(std::string_view pubkey, proto::Role role) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/accounts/" + consensus::ToHex(pubkey) + "/stakes"));
  return DecodeStake(body, role);
}

Result<std::vector<contracts::VerifierStake>> LedgerClient::Verifiers() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/verifiers"));
  return DecodeVerifiers(body);
}

// The pending nonce is read first: if a block commits between the two reads, the committed nonce
// read second already includes those txs, so the larger value is never stale.
Result<std::uint64_t> LedgerClient::NextNonce(std::string_view pubkey) const {
  POLNODE_ASSIGN_OR_RETURN(std::string pending_body, GetJson("/v1/accounts/" + consensus::ToHex(pubkey) + "/pending"));
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::uint64_t> pending_next, DecodePendingNonce(pending_body));
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, Account(pubkey));
  return std::max(pending_next.value_or(0), account.nonce());
}

Result<std::string> LedgerClient::PostTx(std::string_view envelope_bytes) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r,
                           HttpCall(endpoint_, "POST", "/v1/tx", envelope_bytes, "application/x-protobuf", timeout_));
  if (r.status != 200) return DecodeRefusal("POST /v1/tx", r.status, r.body);
  return DecodeTxId(r.body);
}

Result<LedgerClient::Sent> LedgerClient::Sign(const consensus::SecretKey& key, std::string_view payload_type,
                                              std::string payload, std::optional<std::uint64_t> nonce,
                                              std::optional<std::string> chain_id) const {
  consensus::TxEnvelope envelope;
  envelope.payload_type = std::string(payload_type);
  envelope.payload = std::move(payload);
  if (chain_id) {
    envelope.chain_id = *chain_id;
  } else {
    POLNODE_ASSIGN_OR_RETURN(LedgerInfo info, Info());
    envelope.chain_id = info.chain_id;
  }
  if (nonce) {
    envelope.nonce = *nonce;
  } else {
    const auto& pub = key.PublicKey().bytes();
    POLNODE_ASSIGN_OR_RETURN(envelope.nonce, NextNonce(std::string_view(reinterpret_cast<const char*>(pub.data()), pub.size())));
  }
  Sent sent;
  sent.nonce = envelope.nonce;
  POLNODE_ASSIGN_OR_RETURN(consensus::TxEnvelope signed_envelope, consensus::SignEnvelope(key, std::move(envelope)));
  POLNODE_ASSIGN_OR_RETURN(sent.envelope, consensus::EncodeEnvelope(signed_envelope));
  sent.id_hex = consensus::ToHex(consensus::TxId(sent.envelope));
  return sent;
}

Result<LedgerClient::Sent> LedgerClient::Send(const consensus::SecretKey& key, std::string_view payload_type,
                                              std::string payload, std::optional<std::uint64_t> nonce,
                                              std::optional<std::string> chain_id) const {
  POLNODE_ASSIGN_OR_RETURN(Sent sent, Sign(key, payload_type, std::move(payload), nonce, std::move(chain_id)));
  POLNODE_ASSIGN_OR_RETURN(std::string id, PostTx(sent.envelope));
  if (id != sent.id_hex) return Status::Corruption("the ledger named the transaction " + id + ", not " + sent.id_hex);
  return sent;
}

Result<TxState> LedgerClient::Tx(std::string_view id_hex) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint_, "GET", "/v1/txs/" + std::string(id_hex), {}, {}, timeout_));
  if (r.status == 404) return TxState();
  if (r.status != 200) return DecodeRefusal("GET /v1/txs", r.status, r.body);
  return DecodeTxState(r.body);
}

Result<std::uint64_t> LedgerClient::WaitCommitted(std::string_view id_hex, std::chrono::milliseconds timeout,
                                                  Clock& clock) const {
  const Clock::TimePoint deadline = clock.Now() + timeout;
  while (true) {
    POLNODE_ASSIGN_OR_RETURN(TxState state, Tx(id_hex));
    switch (state.kind) {
      case TxState::Kind::kCommitted: return state.height;
      case TxState::Kind::kFailed:
        return Status::FailedPrecondition("transaction " + std::string(id_hex) + " was committed but failed: " + state.error);
      case TxState::Kind::kUnknown:
        return Status::FailedPrecondition("transaction " + std::string(id_hex) +
                                          " left the mempool without being committed (its nonce or balance no longer checks out)");
      case TxState::Kind::kPending: break;
    }
    if (clock.Now() > deadline) {
      return Status::Unavailable("transaction " + std::string(id_hex) + " not committed within " +
                                 std::to_string(timeout.count()) + " ms");
    }
    clock.SleepFor(std::chrono::milliseconds(100));
  }
}

}  // namespace polnode::node
