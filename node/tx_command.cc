// `polnode tx <kind>`: builds a contracts.proto payload, signs it in an envelope with the user's
// key (nonce and chain id fetched from the ledger unless given) and POSTs it to /v1/tx.
#include <algorithm>
#include <rapidjson/document.h>

#include <chrono>
#include <climits>
#include <ostream>
#include <thread>

#include "commands.h"
#include "http_client.h"
#include "json.h"
#include "node_home.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"

namespace polnode::node {
namespace {

namespace payload = contracts::payload;

// ---- flag helpers ---------------------------------------------------------------------------

Result<std::string> Bytes32(const FlagSet& flags, std::string_view name) {
  std::array<std::uint8_t, 32> raw{};
  POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(flags.Get(name), raw).WithContext("--" + std::string(name)));
  return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
}

Result<std::uint64_t> Amount(const FlagSet& flags, std::string_view name) {
  POLNODE_ASSIGN_OR_RETURN(std::int64_t v, flags.GetInt(name, 0, INT64_MAX));
  return static_cast<std::uint64_t>(v);
}

Result<proto::Role> RoleFlag(const FlagSet& flags) {
  const std::string role = flags.Get("role");
  if (role == "solver") return proto::ROLE_SOLVER;
  if (role == "verifier") return proto::ROLE_VERIFIER;
  if (role == "whistleblower") return proto::ROLE_WHISTLEBLOWER;
  return Status::InvalidArgument("--role must be solver, verifier or whistleblower, got '" + role + "'");
}

Result<std::string> Serialize(const google::protobuf::MessageLite& message) {
  std::string out;
  if (!message.SerializeToString(&out)) return Status::Internal("protobuf failed to serialize the payload");
  return out;
}

// ---- the transaction kinds ------------------------------------------------------------------

struct TxKind {
  std::string_view name;
  std::string_view payload_type;
  std::string_view summary;
  void (*declare)(FlagSet& flags);
  Result<std::string> (*build)(const FlagSet& flags);
};

void DeclareTaskId(FlagSet& f) { f.Value("task", "ID", "task id (64 hex)", "", true); }

const TxKind kKinds[] = {
    {"transfer", payload::kTransfer, "move AMOUNT of your balance to another account",
     [](FlagSet& f) {
       f.Value("to", "PUBKEY", "recipient's x-only public key (64 hex)", "", true);
       f.Value("amount", "AMOUNT", "base units to send", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::TransferTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_to(), Bytes32(f, "to"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t amount, Amount(f, "amount"));
       tx.set_amount(amount);
       return Serialize(tx);
     }},
    {"stake", payload::kStake, "bond AMOUNT of your balance as stake for a role",
     [](FlagSet& f) {
       f.Value("role", "ROLE", "solver, verifier or whistleblower", "", true);
       f.Value("amount", "AMOUNT", "base units to bond", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::StakeTx tx;
       POLNODE_ASSIGN_OR_RETURN(proto::Role role, RoleFlag(f));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t amount, Amount(f, "amount"));
       tx.set_role(role);
       tx.set_amount(amount);
       return Serialize(tx);
     }},
    {"unstake", payload::kUnstake, "start unbonding AMOUNT of free stake of a role",
     [](FlagSet& f) {
       f.Value("role", "ROLE", "solver, verifier or whistleblower", "", true);
       f.Value("amount", "AMOUNT", "base units to unbond", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::UnstakeTx tx;
       POLNODE_ASSIGN_OR_RETURN(proto::Role role, RoleFlag(f));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t amount, Amount(f, "amount"));
       tx.set_role(role);
       tx.set_amount(amount);
       return Serialize(tx);
     }},
    {"submit-task", payload::kSubmitTask, "post a training task and escrow its payment",
     [](FlagSet& f) {
       f.Value("model-spec", "TEXT", "names the model graph and initialisation", "", true);
       f.Value("dataset-hash", "HEX", "content hash of the data set (64 hex)", "", true);
       f.Value("hyperparameters-hash", "HEX", "hash of the canonical hyperparameter blob (64 hex)", "", true);
       f.Value("total-steps", "N", "training steps", "", true);
       f.Value("checkpoint-interval", "K", "steps between checkpoints", "", true);
       f.Value("segments", "Q", "segments each verifier replays", "1");
       f.Value("payment", "AMOUNT", "escrowed payment", "", true);
       f.Value("claim-window", "BLOCKS", "blocks in which a solver may claim", "20");
       f.Value("training-window", "BLOCKS", "blocks after the claim to commit the proof", "40");
       f.Value("spec-uri", "URI", "where the full task spec document is served", "", true);
       f.Value("graph-root", "HEX", "Merkle root over the step graph's descriptors (64 hex)", "", true);
       f.Value("batch-root", "HEX", "Merkle root over every step's batch leaf (64 hex)", "", true);
       f.Value("step-leaf-count", "N", "leaves of one step's dispute game tree", "", true);
       f.Value("state-tensor-count", "S", "tensors of the training state", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::SubmitTaskTx tx;
       proto::TaskSpec* spec = tx.mutable_spec();
       spec->set_model_spec(f.Get("model-spec"));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_dataset_hash(), Bytes32(f, "dataset-hash"));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_hyperparameters_hash(), Bytes32(f, "hyperparameters-hash"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t steps, Amount(f, "total-steps"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t interval, Amount(f, "checkpoint-interval"));
       POLNODE_ASSIGN_OR_RETURN(std::int64_t segments, f.GetInt("segments", 0, UINT32_MAX));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t payment, Amount(f, "payment"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t claim_window, Amount(f, "claim-window"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t training_window, Amount(f, "training-window"));
       spec->set_total_steps(steps);
       spec->set_checkpoint_interval(interval);
       spec->set_segments_per_verification(static_cast<std::uint32_t>(segments));
       spec->set_payment(payment);
       spec->set_claim_window(claim_window);
       spec->set_training_window(training_window);
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_graph_root(), Bytes32(f, "graph-root"));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_batch_root(), Bytes32(f, "batch-root"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t leaf_count, Amount(f, "step-leaf-count"));
       POLNODE_ASSIGN_OR_RETURN(std::int64_t state_tensors, f.GetInt("state-tensor-count", 1, UINT32_MAX));
       spec->set_step_leaf_count(leaf_count);
       spec->set_state_tensor_count(static_cast<std::uint32_t>(state_tensors));
       tx.set_spec_uri(f.Get("spec-uri"));
       return Serialize(tx);
     }},
    {"cancel-task", payload::kCancelTask, "withdraw your task while nobody has claimed it", DeclareTaskId,
     [](const FlagSet& f) -> Result<std::string> {
       proto::CancelTaskTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_task_id(), Bytes32(f, "task"));
       return Serialize(tx);
     }},
    {"claim-task", payload::kClaimTask, "claim a task as its solver, committing to a secret",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("secret", "HEX", "your 32-byte secret (64 hex); keep it for the reveal", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::ClaimTaskTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_task_id(), Bytes32(f, "task"));
       POLNODE_ASSIGN_OR_RETURN(std::string secret, Bytes32(f, "secret"));
       const consensus::Hash256 commitment = contracts::SecretCommitment(secret);
       tx.set_secret_commitment(commitment.data(), commitment.size());
       return Serialize(tx);
     }},
    {"commit-proof", payload::kCommitProof, "commit the Merkle root of your proof of learning",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("proof-root", "HEX", "Merkle root over the checkpoint hashes (64 hex)", "", true);
       f.Value("proof-uri", "URI", "where the manifest and checkpoints are served", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::CommitProofTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_task_id(), Bytes32(f, "task"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_proof_root(), Bytes32(f, "proof-root"));
       tx.set_proof_uri(f.Get("proof-uri"));
       return Serialize(tx);
     }},
    {"verdict", payload::kVerdict, "post your verdict as an assigned verifier",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Bool("accept", "the proof replayed within the threshold");
       f.Bool("reject", "the proof did not replay");
       f.Value("report-hash", "HEX", "hash of your replay report (64 hex)", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       if (f.GetBool("accept") == f.GetBool("reject")) return Status::InvalidArgument("give exactly one of --accept, --reject");
       proto::VerdictTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_task_id(), Bytes32(f, "task"));
       tx.set_accept(f.GetBool("accept"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_report_hash(), Bytes32(f, "report-hash"));
       return Serialize(tx);
     }},
    {"dispute", payload::kDispute, "dispute a verifier's verdict on a task",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("verifier", "PUBKEY", "the disputed verifier's key (64 hex)", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::DisputeTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_task_id(), Bytes32(f, "task"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_verifier(), Bytes32(f, "verifier"));
       return Serialize(tx);
     }},
    {"reveal", payload::kReveal, "reveal your claim secret after the challenge window",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("secret", "HEX", "the secret you claimed with (64 hex)", "", true);
       f.Value("result-root", "HEX", "the proof root the submitter should use (64 hex)", "", true);
     },
     [](const FlagSet& f) -> Result<std::string> {
       proto::RevealTx tx;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_task_id(), Bytes32(f, "task"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_secret(), Bytes32(f, "secret"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_result_root(), Bytes32(f, "result-root"));
       return Serialize(tx);
     }},
};

// ---- talking to the ledger ------------------------------------------------------------------

Result<rapidjson::Document> ParseJsonBody(const HttpResponse& response) {
  rapidjson::Document doc;
  doc.Parse(response.body.data(), response.body.size());
  if (doc.HasParseError() || !doc.IsObject()) return Status::Corruption("the ledger answered with a non-JSON body");
  return doc;
}

// A non-200 answer as a Status carrying the ledger's own reason.
Status LedgerRefused(std::string_view what, const HttpResponse& response) {
  std::string reason = response.body;
  if (Result<rapidjson::Document> doc = ParseJsonBody(response); doc.ok() && doc->HasMember("error") && (*doc)["error"].IsString()) {
    reason = (*doc)["error"].GetString();
  }
  return Status::FailedPrecondition(std::string(what) + ": the ledger answered " + std::to_string(response.status) + ": " + reason);
}

Result<std::string> FetchChainId(const HttpEndpoint& ledger) {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(ledger, "GET", "/v1/status"));
  if (r.status != 200) return LedgerRefused("GET /v1/status", r);
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJsonBody(r));
  if (!doc.HasMember("chain_id") || !doc["chain_id"].IsString()) return Status::Corruption("/v1/status has no chain_id");
  return std::string(doc["chain_id"].GetString());
}

// The account's next nonce, counting its txs still in the mempool; 0 for an account the ledger has
// never seen. The pending nonce is read first: if a block commits between the two reads, the
// committed nonce read second already includes those txs, so the larger value is never stale.
Result<std::uint64_t> FetchNonce(const HttpEndpoint& ledger, const std::string& pubkey_hex) {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse pending, HttpCall(ledger, "GET", "/v1/accounts/" + pubkey_hex + "/pending"));
  if (pending.status != 200) return LedgerRefused("GET /v1/accounts/.../pending", pending);
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document pending_doc, ParseJsonBody(pending));
  std::uint64_t pending_next = 0;
  if (pending_doc.HasMember("next_nonce") && pending_doc["next_nonce"].IsUint64()) {
    pending_next = pending_doc["next_nonce"].GetUint64();
  }
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(ledger, "GET", "/v1/accounts/" + pubkey_hex));
  if (r.status == 404) return pending_next;
  if (r.status != 200) return LedgerRefused("GET /v1/accounts", r);
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJsonBody(r));
  if (!doc.HasMember("nonce") || !doc["nonce"].IsUint64()) return Status::Corruption("account JSON has no nonce");
  return std::max(pending_next, doc["nonce"].GetUint64());
}

// Polls /v1/txs/{id} until the tx is in a block; returns its height. A tx that was committed but
// whose payload failed (it paid its fee, changed nothing else) is an error carrying the ledger's
// reason: reporting it as done would hide, e.g., a proof commitment that never took effect.
Result<std::uint64_t> WaitCommitted(const HttpEndpoint& ledger, const std::string& id_hex, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(ledger, "GET", "/v1/txs/" + id_hex));
    if (r.status == 200) {
      POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJsonBody(r));
      if (doc.HasMember("result") && doc["result"].IsString() && std::string_view(doc["result"].GetString()) == "failed") {
        const std::string error = doc.HasMember("error") && doc["error"].IsString() ? doc["error"].GetString() : "";
        return Status::FailedPrecondition("transaction " + id_hex + " was committed but failed: " + error);
      }
      if (doc.HasMember("height") && doc["height"].IsUint64()) return doc["height"].GetUint64();
    } else if (r.status == 404) {
      return Status::FailedPrecondition("transaction " + id_hex + " left the mempool without being committed "
                                        "(its nonce or balance no longer checks out)");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Unavailable("transaction " + id_hex + " not committed within " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status SendTx(const TxKind& kind, const FlagSet& flags, Io& io) {
  std::string key_path = flags.Get("key");
  std::string ledger_url = flags.Get("ledger");
  if (flags.Given("home")) {
    POLNODE_ASSIGN_OR_RETURN(NodeHome home, LoadNodeHome(flags.Get("home")));
    if (!flags.Given("key")) key_path = home.KeyPath();
    if (!flags.Given("ledger")) ledger_url = "http://" + home.config.listen;
  }
  if (key_path.empty() || ledger_url.empty()) {
    return Status::InvalidArgument("give --home DIR, or both --key FILE and --ledger URL");
  }
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint ledger, ParseHttpUrl(ledger_url));
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, consensus::ReadKeyFile(key_path));
  const std::string signer = consensus::BytesToHex(key.PublicKey().bytes());

  consensus::TxEnvelope envelope;
  envelope.payload_type = std::string(kind.payload_type);
  POLNODE_ASSIGN_OR_RETURN(envelope.payload, kind.build(flags));
  if (flags.Given("chain-id")) {
    envelope.chain_id = flags.Get("chain-id");
  } else {
    POLNODE_ASSIGN_OR_RETURN(envelope.chain_id, FetchChainId(ledger));
  }
  if (flags.Given("nonce")) {
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t nonce, Amount(flags, "nonce"));
    envelope.nonce = nonce;
  } else {
    POLNODE_ASSIGN_OR_RETURN(envelope.nonce, FetchNonce(ledger, signer));
  }
  POLNODE_ASSIGN_OR_RETURN(consensus::TxEnvelope signed_envelope, consensus::SignEnvelope(key, envelope));
  POLNODE_ASSIGN_OR_RETURN(std::string bytes, consensus::EncodeEnvelope(signed_envelope));
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(ledger, "POST", "/v1/tx", bytes, "application/x-protobuf"));
  if (r.status != 200) return LedgerRefused("POST /v1/tx", r);
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJsonBody(r));
  if (!doc.HasMember("tx_id") || !doc["tx_id"].IsString()) return Status::Corruption("POST /v1/tx answer has no tx_id");
  const std::string id = doc["tx_id"].GetString();

  std::optional<std::uint64_t> height;
  if (flags.GetBool("wait")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t timeout_ms, flags.GetInt("wait-timeout-ms", 1, 3600 * 1000));
    POLNODE_ASSIGN_OR_RETURN(height, WaitCommitted(ledger, id, std::chrono::milliseconds(timeout_ms)));
  }
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("tx_id", id).Field("signer", signer).Field("nonce", envelope.nonce).Field("payload_type", kind.payload_type);
    if (height) w.Field("height", *height);
    w.Field("status", height ? "committed" : "pending").EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << kind.name << " " << id << " (signer " << signer.substr(0, 16) << "..., nonce " << envelope.nonce << ") "
           << (height ? "committed in block " + std::to_string(*height) : std::string("accepted into the mempool")) << "\n";
  }
  return Status::Ok();
}

void PrintKinds(std::ostream& out) {
  out << "usage: polnode tx <kind> [flags]   (each kind takes --help)\n\nSign a transaction with your key and "
         "send it to a ledger.\n\nKinds:\n";
  for (const TxKind& k : kKinds) {
    out << "  " << k.name << std::string(14 - std::min<std::size_t>(13, k.name.size()), ' ') << k.summary << "\n";
  }
}

}  // namespace

int RunTxCommand(const std::vector<std::string>& args, Io& io) {
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    PrintKinds(args.empty() ? io.err : io.out);
    return args.empty() ? kExitUsage : kExitOk;
  }
  for (const TxKind& kind : kKinds) {
    if (kind.name != args[0]) continue;
    const std::string command = "polnode tx " + std::string(kind.name);
    FlagSet flags(command, std::string(kind.summary) + " (payload type \"" + std::string(kind.payload_type) + "\").");
    kind.declare(flags);
    flags.Value("home", "DIR", "node home: its node.key signs and its config names the ledger");
    flags.Value("key", "FILE", "key file that signs (overrides --home)");
    flags.Value("ledger", "URL", "ledger API, e.g. http://127.0.0.1:26657 (overrides --home)");
    flags.Value("nonce", "N", "nonce to use (default: the account's next nonce, asked from the ledger)");
    flags.Value("chain-id", "ID", "chain id to sign for (default: asked from the ledger)");
    flags.Bool("wait", "wait until the transaction is in a block");
    flags.Value("wait-timeout-ms", "N", "how long --wait waits", "30000");
    if (auto exit = ParseOrExit(flags, {args.begin() + 1, args.end()}, io)) return *exit;
    if (Status s = SendTx(kind, flags, io); !s.ok()) return ReportError(io, command, s);
    return kExitOk;
  }
  io.err << "polnode tx: error: unknown kind '" << args[0] << "'\n";
  PrintKinds(io.err);
  return kExitUsage;
}

}  // namespace polnode::node
