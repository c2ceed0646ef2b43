#include "polnode/rpc/ledger_api.h"

#include <array>
#include <optional>
#include <charconv>
#include <sstream>
#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/contracts/queries.h"
#include "polnode/contracts/supply.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_json.h"
#include "polnode/rpc/tx_json.h"

namespace polnode::node {
namespace {

using consensus::ToHex;

HttpResponse JsonOk(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

HttpResponse MethodNotAllowed(std::string_view allow) {
  HttpResponse r = JsonErrorResponse(405, "method not allowed; use " + std::string(allow));
  r.allow = std::string(allow);
  return r;
}

// "application/json; charset=utf-8" -> "application/json".
std::string_view MediaType(std::string_view content_type) {
  std::string_view t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    std::size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  }
  return parts;
}

// A 64-hex path segment (a public key or task id) as its 32 raw bytes.
Result<std::string> ParseId(std::string_view hex) {
  if (hex.size() != 64) return Status::InvalidArgument("expected 64 hex characters");
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, consensus::HexToBytes(hex));
  return std::string(bytes.begin(), bytes.end());
}

// The value of `name` in a "a=1&b=2" query string, or `fallback`.
Result<std::uint64_t> QueryParam(std::string_view query, std::string_view name, std::uint64_t fallback) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    const std::string_view text = pair.substr(eq + 1);
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      return Status::InvalidArgument("query parameter '" + std::string(name) + "' is not an unsigned integer");
    }
    return value;
  }
  return fallback;
}

void Gauge(std::ostringstream& out, const char* name, const char* help, std::uint64_t value, const char* type = "gauge") {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value << "\n";
}

}  // namespace

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorruption: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kResourceExhausted: return 413;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kOutOfRange:
    case StatusCode::kPermissionDenied: return 422;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kIOError:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

void LedgerApi::CountResponse(int status) {
  if (status >= 100 && status < static_cast<int>(responses_by_code_.size())) {
    responses_by_code_[static_cast<std::size_t>(status)].fetch_add(1, std::memory_order_relaxed);
  }
}

HttpResponse LedgerApi::Handle(const HttpRequest& request) {
  const std::string_view target = request.target;
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (path.empty() || path.front() != '/') return JsonErrorResponse(400, "request target must be an absolute path");
  const std::vector<std::string_view> parts = SplitPath(path);
  const bool get = request.method == "GET" || request.method == "HEAD";

  if (parts.size() == 1 && parts[0] == "metrics") {
    if (!get) return MethodNotAllowed("GET");
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = Metrics();
    return r;
  }
  if (parts.size() < 2 || parts[0] != "v1") return JsonErrorResponse(404, "no such endpoint: " + std::string(path));
  const std::string_view resource = parts[1];

  if (resource == "tx" && parts.size() == 2) {
    if (request.method != "POST") return MethodNotAllowed("POST");
    return PostTx(request);
  }
  if (resource == "status" && parts.size() == 2) {
    if (!get) return MethodNotAllowed("GET");
    LedgerStatus s = ledger_.GetStatus();
    JsonWriter w;
    w.BeginObject()
        .Field("chain_id", s.chain_id)
        .Field("height", s.height)
        .Field("tip_hash", ToHex(s.tip_hash))
        .Field("state_root", ToHex(s.state_root))
        .Field("tip_time_unix_ms", s.tip_time_unix_ms)
        .Field("mempool_size", static_cast<std::uint64_t>(s.mempool_size))
        .Field("producer", ToHex(s.producer))
        .EndObject();
    return JsonOk(w.str());
  }
  if (resource == "blocks" && parts.size() == 3) {
    if (!get) return MethodNotAllowed("GET");
    return GetBlock(parts[2], request);
  }
  if (resource == "txs" && parts.size() == 3) {
    if (!get) return MethodNotAllowed("GET");
    return GetTx(parts[2]);
  }
  if (resource == "accounts" && parts.size() == 4 && parts[3] == "pending") {
    if (!get) return MethodNotAllowed("GET");
    std::array<std::uint8_t, 32> signer{};
    if (Status s = consensus::HexToFixed(parts[2], signer); !s.ok()) {
      return JsonErrorResponse(400, "account must be a 64-hex x-only public key");
    }
    JsonWriter w;
    w.BeginObject().Key("next_nonce");
    if (std::optional<std::uint64_t> next = ledger_.NextPendingNonce(signer)) {
      w.Uint(*next);
    } else {
      w.Null();
    }
    w.EndObject();
    return JsonOk(w.str());
  }
  if (resource == "accounts" && parts.size() == 3) {
    if (!get) return MethodNotAllowed("GET");
    return QueryById(parts[2], [](const contracts::StateStore& state, const std::string& pubkey) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(proto::Account account, contracts::QueryAccount(state, pubkey));
      return AccountJson(pubkey, account);
    });
  }
  if (resource == "accounts" && parts.size() == 4 && parts[3] == "stakes") {
    if (!get) return MethodNotAllowed("GET");
    return QueryById(parts[2], [](const contracts::StateStore& state, const std::string& pubkey) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(contracts::AccountStakes stakes, contracts::QueryStakes(state, pubkey));
      return StakesJson(pubkey, stakes);
    });
  }
  if (resource == "tasks" && parts.size() == 2) {
    if (!get) return MethodNotAllowed("GET");
    return GetTasks(query);
  }
  if (resource == "tasks" && parts.size() == 4 && parts[3] == "games") {
    if (!get) return MethodNotAllowed("GET");
    return QueryById(parts[2], [](const contracts::StateStore& state, const std::string& id) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(contracts::TaskGames games, contracts::QueryGames(state, id));
      return TaskGamesJson(games);
    });
  }
  if (resource == "tasks" && parts.size() == 4 && parts[3] == "revealed") {
    if (!get) return MethodNotAllowed("GET");
    return QueryById(parts[2], [](const contracts::StateStore& state, const std::string& id) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(proto::RevealedCheckpoints revealed, contracts::QueryRevealed(state, id));
      return RevealedCheckpointsJson(revealed);
    });
  }
  // Checkpoints a solver published for unavailable verdicts: the header, then chunk by chunk.
  if (resource == "tasks" && (parts.size() == 5 || parts.size() == 7) && parts[3] == "published") {
    if (!get) return MethodNotAllowed("GET");
    std::uint64_t numbers[3] = {0, 0, 0};
    for (std::size_t i = 4; i < parts.size(); ++i) {
      const std::string_view text = parts[i];
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), numbers[i - 4]);
      if (error != std::errc() || end != text.data() + text.size()) {
        return JsonErrorResponse(400, "'" + std::string(text) + "' is not an unsigned integer");
      }
    }
    if (numbers[1] > UINT32_MAX || numbers[2] > UINT32_MAX) return JsonErrorResponse(404, "no such published chunk");
    const bool chunk = parts.size() == 7;
    return QueryById(parts[2], [numbers, chunk](const contracts::StateStore& state,
                                                const std::string& id) -> Result<std::string> {
      if (!chunk) {
        POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, contracts::QueryPublished(state, id, numbers[0]));
        return PublishedCheckpointJson(published);
      }
      POLNODE_ASSIGN_OR_RETURN(std::string bytes,
                               contracts::QueryPublishedChunk(state, id, numbers[0], static_cast<std::uint32_t>(numbers[1]),
                                                              static_cast<std::uint32_t>(numbers[2])));
      return PublishedChunkJson(bytes);
    });
  }
  if (resource == "tasks" && parts.size() == 3) {
    if (!get) return MethodNotAllowed("GET");
    return QueryById(parts[2], [](const contracts::StateStore& state, const std::string& id) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(proto::Task task, contracts::QueryTask(state, id));
      return TaskJson(task);
    });
  }
  if (resource == "params" && parts.size() == 2) {
    if (!get) return MethodNotAllowed("GET");
    return Query([](const contracts::StateStore& state) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(proto::Params params, contracts::QueryParams(state));
      return ParamsJson(params);
    });
  }
  if (resource == "jackpot" && parts.size() == 2) {
    if (!get) return MethodNotAllowed("GET");
    return Query([](const contracts::StateStore& state) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, contracts::QueryJackpot(state));
      return JackpotJson(jackpot);
    });
  }
  if (resource == "supply" && parts.size() == 2) {
    if (!get) return MethodNotAllowed("GET");
    return Query([](const contracts::StateStore& state) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(contracts::SupplyReport report, contracts::AuditSupply(state));
      return SupplyJson(report);
    });
  }
  if (resource == "verifiers" && parts.size() == 2) {
    if (!get) return MethodNotAllowed("GET");
    return Query([](const contracts::StateStore& state) -> Result<std::string> {
      POLNODE_ASSIGN_OR_RETURN(std::vector<contracts::VerifierStake> set, contracts::QueryVerifiers(state));
      return VerifiersJson(set);
    });
  }
  return JsonErrorResponse(404, "no such endpoint: " + std::string(path));
}

HttpResponse LedgerApi::Query(const std::function<Result<std::string>(const contracts::StateStore&)>& query) {
  Result<std::string> json = ledger_.ReadCommitted(query);
  if (!json.ok()) return JsonErrorResponse(HttpStatusFor(json.status()), json.status().message());
  return JsonOk(std::move(json).value());
}

HttpResponse LedgerApi::QueryById(
    std::string_view id_hex,
    const std::function<Result<std::string>(const contracts::StateStore&, const std::string&)>& query) {
  Result<std::string> id = ParseId(id_hex);
  if (!id.ok()) return JsonErrorResponse(HttpStatusFor(id.status()), id.status().message());
  return Query([&](const contracts::StateStore& state) { return query(state, *id); });
}

HttpResponse LedgerApi::GetTasks(std::string_view query) {
  Result<std::uint64_t> start = QueryParam(query, "start", 0);
  if (!start.ok()) return JsonErrorResponse(HttpStatusFor(start.status()), start.status().message());
  Result<std::uint64_t> limit = QueryParam(query, "limit", contracts::kMaxTasksPerPage);
  if (!limit.ok()) return JsonErrorResponse(HttpStatusFor(limit.status()), limit.status().message());
  return Query([&](const contracts::StateStore& state) -> Result<std::string> {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, contracts::QueryTasks(state, *start, *limit));
    return TaskPageJson(page);
  });
}

HttpResponse LedgerApi::PostTx(const HttpRequest& request) {
  const std::string_view media = MediaType(request.content_type);
  std::string encoded;
  if (media == "application/x-protobuf" || media == "application/octet-stream") {
    encoded = request.body;
  } else if (media == "application/json") {
    Result<consensus::TxEnvelope> tx = ParseSignedTxJson(request.body);
    if (!tx.ok()) return JsonErrorResponse(400, tx.status().message());
    Result<std::string> bytes = consensus::EncodeEnvelope(*tx);
    if (!bytes.ok()) return JsonErrorResponse(400, bytes.status().message());
    encoded = std::move(bytes).value();
  } else {
    return JsonErrorResponse(415, "Content-Type must be application/x-protobuf or application/json");
  }
  Result<consensus::Hash256> id = ledger_.SubmitTx(encoded);
  if (!id.ok()) {
    // A missing account is the state machine's refusal here, not a missing endpoint.
    int status = id.status().code() == StatusCode::kNotFound ? 422 : HttpStatusFor(id.status());
    return JsonErrorResponse(status, id.status().ToString());
  }
  JsonWriter w;
  w.BeginObject().Field("tx_id", ToHex(*id)).Field("status", "pending").EndObject();
  return JsonOk(w.str());
}

HttpResponse LedgerApi::GetBlock(std::string_view height_text, const HttpRequest& request) {
  std::uint64_t height = 0;
  if (height_text == "latest") {
    height = ledger_.GetStatus().height;
  } else {
    auto [end, ec] = std::from_chars(height_text.data(), height_text.data() + height_text.size(), height);
    if (ec != std::errc() || end != height_text.data() + height_text.size()) {
      return JsonErrorResponse(400, "block height must be a non-negative integer or \"latest\"");
    }
  }
  Result<std::string> bytes = ledger_.GetEncodedBlock(height);
  if (!bytes.ok()) return JsonErrorResponse(HttpStatusFor(bytes.status()), bytes.status().message());
  if (request.accept.find("application/x-protobuf") != std::string::npos) {
    HttpResponse r;
    r.content_type = "application/x-protobuf";
    r.body = std::move(bytes).value();
    return r;
  }
  Result<consensus::Block> block = consensus::DecodeBlock(*bytes);
  if (!block.ok()) return JsonErrorResponse(500, "stored block is unreadable: " + block.status().message());
  const consensus::BlockHeader& h = block->header;
  JsonWriter w;
  w.BeginObject()
      .Field("chain_id", h.chain_id)
      .Field("height", h.height)
      .Field("hash", ToHex(consensus::BlockHash(h)))
      .Field("prev_hash", ToHex(h.prev_hash))
      .Field("tx_root", ToHex(h.tx_root))
      .Field("state_root", ToHex(h.state_root))
      .Field("time_unix_ms", h.time_unix_ms)
      .Field("producer", ToHex(h.producer))
      .Field("signature", ToHex(h.signature));
  w.Key("txs").BeginArray();
  for (const std::string& tx : block->txs) {
    w.BeginObject().Field("tx_id", ToHex(consensus::TxId(tx)));
    if (Result<consensus::TxEnvelope> env = consensus::DecodeEnvelope(tx); env.ok()) WriteTxFields(w, *env);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return JsonOk(w.str());
}

HttpResponse LedgerApi::GetTx(std::string_view id_hex) {
  if (!IsHex64(id_hex)) return JsonErrorResponse(400, "transaction id must be 64 hex characters");
  Result<consensus::Hash256> id = consensus::HashFromHex(id_hex);
  if (!id.ok()) return JsonErrorResponse(400, id.status().message());
  JsonWriter w;
  w.BeginObject().Field("tx_id", ToHex(*id));
  // Pending is asked first: a block is in the store before its txs leave the mempool, so a tx that
  // was pending and is no longer is found committed. Asked the other way round, a block committed
  // between the two lookups made a committed tx look unknown (a client then gave up on it).
  const bool pending = ledger_.IsPending(*id);
  if (Result<consensus::TxLocation> loc = ledger_.FindTx(*id); loc.ok()) {
    w.Field("status", "committed").Field("height", loc->height).Field("index", std::uint64_t{loc->index});
    // A committed tx whose payload failed still paid its fee and used its nonce; only the result
    // says whether it took effect. Stores written before results were kept have none to report.
    if (loc->outcome && loc->outcome->code == StatusCode::kOk) {
      w.Field("result", "ok");
    } else if (loc->outcome) {
      w.Field("result", "failed")
          .Field("code", StatusCodeName(loc->outcome->code))
          .Field("error", loc->outcome->log);
    }
  } else if (loc.status().code() != StatusCode::kNotFound) {
    return JsonErrorResponse(500, loc.status().message());
  } else if (pending) {
    w.Field("status", "pending");
  } else {
    return JsonErrorResponse(404, "transaction " + ToHex(*id) + " is neither pending nor committed");
  }
  w.EndObject();
  return JsonOk(w.str());
}

std::string LedgerApi::Metrics() const {
  const LedgerStatus s = ledger_.GetStatus();
  const LedgerCounters& c = ledger_.counters();
  std::ostringstream out;
  Gauge(out, "polnode_block_height", "Height of the last committed block.", s.height);
  Gauge(out, "polnode_mempool_size", "Transactions waiting in the mempool.", s.mempool_size);
  Gauge(out, "polnode_txs_accepted_total", "Transactions admitted to the mempool.", c.txs_accepted.load(), "counter");
  Gauge(out, "polnode_txs_rejected_total", "Transactions refused at admission.", c.txs_rejected.load(), "counter");
  Gauge(out, "polnode_txs_committed_total", "Transactions included in committed blocks.", c.txs_committed.load(), "counter");
  Gauge(out, "polnode_txs_failed_total", "Committed transactions whose payload failed.", c.txs_failed.load(), "counter");
  Gauge(out, "polnode_blocks_produced_total", "Blocks produced since start.", c.blocks_produced.load(), "counter");
  Gauge(out, "polnode_block_errors_total", "Block production attempts that failed.", c.block_errors.load(), "counter");
  out << "# HELP polnode_http_requests_total HTTP responses sent, by status code.\n"
         "# TYPE polnode_http_requests_total counter\n";
  for (std::size_t code = 100; code < responses_by_code_.size(); ++code) {
    std::uint64_t n = responses_by_code_[code].load(std::memory_order_relaxed);
    if (n > 0) out << "polnode_http_requests_total{code=\"" << code << "\"} " << n << "\n";
  }
  return out.str();
}

}  // namespace polnode::node
