// `polnode tx <kind>`: builds a contracts.proto payload, signs it in an envelope with the user's
// key (nonce and chain id fetched from the ledger unless given) and POSTs it to /v1/tx.
#include <algorithm>

#include <charconv>
#include <chrono>
#include <climits>
#include <ostream>

#include "flag_groups.h"
#include "id_lookup.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/rpc/node_home.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/task_binding.h"

namespace polnode::node {
namespace {

namespace payload = contracts::payload;

// ---- flag helpers ---------------------------------------------------------------------------

Result<std::string> Bytes32(const FlagSet& flags, std::string_view name) {
  std::array<std::uint8_t, 32> raw{};
  POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(flags.Get(name), raw).WithContext("--" + std::string(name)));
  return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
}

// An optional flag's bytes, hex-encoded on the command line (any length); empty when not given.
Result<std::string> OptionalHex(const FlagSet& flags, std::string_view name) {
  if (!flags.Given(name)) return std::string();
  Result<std::vector<std::uint8_t>> raw = consensus::HexToBytes(flags.Get(name));
  if (!raw.ok()) return raw.status().WithContext("--" + std::string(name));
  return std::string(raw->begin(), raw->end());
}

// The comma-separated parts of a flag's value (none for "").
std::vector<std::string> CommaParts(const FlagSet& flags, std::string_view name) {
  std::vector<std::string> parts;
  const std::string list = flags.Get(name);
  std::string_view text = list;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return parts;
}

// A comma-separated list of segment numbers ("" for none).
Result<std::vector<std::uint64_t>> SegmentList(const FlagSet& flags, std::string_view name) {
  std::vector<std::uint64_t> out;
  for (const std::string& part : CommaParts(flags, name)) {
    std::uint64_t v = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || error != std::errc() || end != part.data() + part.size()) {
      return Status::InvalidArgument("--" + std::string(name) + ": '" + part + "' is not a segment number");
    }
    out.push_back(v);
  }
  return out;
}

// A comma-separated list of 32-byte hashes, 64 hex each ("" for none).
Result<std::vector<std::string>> HashList(const FlagSet& flags, std::string_view name) {
  std::vector<std::string> out;
  for (const std::string& part : CommaParts(flags, name)) {
    std::array<std::uint8_t, 32> raw{};
    POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(part, raw).WithContext("--" + std::string(name)));
    out.emplace_back(reinterpret_cast<const char*>(raw.data()), raw.size());
  }
  return out;
}

// --leaves: comma-separated CHECKPOINT:COMMITTED_HASH:COMMITTED_PROOF:RESULT_HASH:RESULT_PROOF,
// hashes 64 hex, proofs the serialized Merkle proofs in hex.
Result<std::vector<proto::RevealedLeaf>> LeafList(const FlagSet& flags, std::string_view name) {
  std::vector<proto::RevealedLeaf> out;
  for (const std::string& part : CommaParts(flags, name)) {
    std::vector<std::string> fields;
    for (std::size_t begin = 0;;) {
      const std::size_t colon = part.find(':', begin);
      fields.push_back(part.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin));
      if (colon == std::string::npos) break;
      begin = colon + 1;
    }
    const std::string context = "--" + std::string(name) + " '" + part + "'";
    if (fields.size() != 5) return Status::InvalidArgument(context + " is not CHECKPOINT:HASH:PROOF:HASH:PROOF");
    proto::RevealedLeaf& leaf = out.emplace_back();
    std::uint64_t checkpoint = 0;
    auto [end, error] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), checkpoint);
    if (fields[0].empty() || error != std::errc() || end != fields[0].data() + fields[0].size()) {
      return Status::InvalidArgument(context + ": '" + fields[0] + "' is not a checkpoint number");
    }
    leaf.set_checkpoint(checkpoint);
    std::string* targets[] = {leaf.mutable_committed_hash(), leaf.mutable_committed_proof(), leaf.mutable_result_hash(),
                              leaf.mutable_result_proof()};
    for (std::size_t i = 0; i < 4; ++i) {
      Result<std::vector<std::uint8_t>> raw = consensus::HexToBytes(fields[i + 1]);
      if (!raw.ok()) return raw.status().WithContext(context);
      if (i % 2 == 0 && raw->size() != 32) return Status::InvalidArgument(context + ": a hash is 64 hex");
      targets[i]->assign(raw->begin(), raw->end());
    }
  }
  return out;
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

// What every solver does before claiming (solver_role MaybeClaim), done before the submission's
// fee and escrow are spent: the document at `spec_uri` must be served, decode, and bind to `spec`.
Status CheckServedDocument(const proto::TaskSpec& spec, const std::string& spec_uri) {
  const auto refuse = [&](const Status& why) {
    return Status::FailedPrecondition("--spec-uri " + spec_uri + ": a solver would refuse this task: " + why.ToString() +
                                      " ('polnode submitter --task FILE' serves and posts a task document; "
                                      "--unchecked-spec-uri posts anyway)");
  };
  // The submitter names this URI itself: any host a solver might be allowed to reach is worth
  // checking (a solver's own fetch policy decides later whether it fetches from there).
  Result<FetchPolicy> any_host = FetchPolicy::Make("http", "public,private,loopback", FetchPolicy::kDefaultMaxBytes,
                                                   FetchPolicy::kDefaultMaxRedirects);
  if (!any_host.ok()) return any_host.status();
  Result<solver::TaskSpec> document = FetchTaskDocument(*any_host, spec_uri);
  if (!document.ok()) return refuse(document.status());
  Result<solver::ImageDataset> data = solver::LoadTaskData(*document);
  if (!data.ok()) return refuse(data.status());
  if (Status bound = solver::CheckSpecBinding(spec, *document, *data); !bound.ok()) return refuse(bound);
  return Status::Ok();
}

// ---- the transaction kinds ------------------------------------------------------------------

struct TxKind {
  std::string_view name;
  std::string_view payload_type;
  std::string_view summary;
  void (*declare)(FlagSet& flags);
  // `task_id`: the raw task id --task ID named (a full id or a unique prefix, resolved on the
  // ledger), for kinds that declare it; empty otherwise.
  Result<std::string> (*build)(const FlagSet& flags, const std::string& task_id);
};

void DeclareTaskId(FlagSet& f) {
  f.Value("task", "ID", "task id: 64 hex, or its first 8 or more hex characters when they name one task", "", true);
}

const TxKind kKinds[] = {
    {"transfer", payload::kTransfer, "move AMOUNT of your balance to another account",
     [](FlagSet& f) {
       f.Value("to", "PUBKEY", "recipient's x-only public key (64 hex)", "", true);
       f.Value("amount", "AMOUNT", "base units to send", "", true);
     },
     [](const FlagSet& f, const std::string&) -> Result<std::string> {
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
     [](const FlagSet& f, const std::string&) -> Result<std::string> {
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
     [](const FlagSet& f, const std::string&) -> Result<std::string> {
       proto::UnstakeTx tx;
       POLNODE_ASSIGN_OR_RETURN(proto::Role role, RoleFlag(f));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t amount, Amount(f, "amount"));
       tx.set_role(role);
       tx.set_amount(amount);
       return Serialize(tx);
     }},
    {"submit-task", payload::kSubmitTask, "post a training task and escrow its payment",
     [](FlagSet& f) {
       f.Value("task", "FILE", "task document (TOML or .pb): fills every field below but the terms, "
               "computing the graph and batch roots from the model and the data set");
       f.Value("model-spec", "TEXT", "names the model graph and initialisation (without --task)");
       f.Value("dataset-hash", "HEX", "content hash of the data set (64 hex; without --task)");
       f.Value("hyperparameters-hash", "HEX", "hash of the canonical hyperparameter blob (64 hex; without --task)");
       f.Value("total-steps", "N", "training steps (without --task)");
       f.Value("checkpoint-interval", "K", "steps between checkpoints (without --task)");
       f.Value("segments", "Q", "segments each verifier replays (without --task)", "1");
       f.Value("graph-root", "HEX", "Merkle root over the step graph's descriptors (64 hex; without --task)");
       f.Value("batch-root", "HEX", "Merkle root over every step's batch leaf (64 hex; without --task)");
       f.Value("step-leaf-count", "N", "leaves of one step's dispute game tree (without --task)");
       f.Value("state-tensor-count", "S", "tensors of the training state (without --task)");
       f.Value("initial-state-hash", "HEX", "state hash of checkpoint 0, the task's initial state (64 hex; without --task)");
       f.Bool("tolerant", "a tolerant-mode task: replays are judged by profiled distances (without --task)");
       f.Value("seed", "HEX", "optional 32-byte beacon seed (64 hex) you reveal with `tx reveal-seed` once the proof "
               "is committed; only its SHA-256 is posted now. Keep it: a seed never revealed pays the solver unchecked");
       f.Value("payment", "AMOUNT", "escrowed payment", "", true);
       DeclareTaskTermsFlags(f);
       f.Value("spec-uri", "URI", "where the full task spec document is served (http://...; 'polnode submitter "
               "--task FILE' serves it for you); it is fetched and checked against the spec before anything is paid",
               "", true);
       f.Bool("unchecked-spec-uri", "post without fetching --spec-uri first (solvers refuse the task until it serves "
              "the document)");
     },
     [](const FlagSet& f, const std::string&) -> Result<std::string> {
       proto::SubmitTaskTx tx;
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t payment, Amount(f, "payment"));
       POLNODE_ASSIGN_OR_RETURN(solver::TaskTerms terms, ReadTaskTermsFlags(f, payment));
       tx.set_spec_uri(f.Get("spec-uri"));
       if (f.Given("seed")) {
         POLNODE_ASSIGN_OR_RETURN(std::string seed, Bytes32(f, "seed"));
         const consensus::Hash256 commitment = contracts::SecretCommitment(seed);
         tx.set_seed_commitment(commitment.data(), commitment.size());
       }
       if (f.Given("task")) {
         POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec document, solver::ReadTaskFile(f.Get("task")));
         POLNODE_ASSIGN_OR_RETURN(solver::ImageDataset data, solver::LoadTaskData(document));
         POLNODE_ASSIGN_OR_RETURN(*tx.mutable_spec(), solver::LedgerSpecFor(document, data, terms));
         if (!f.GetBool("unchecked-spec-uri")) POLNODE_RETURN_IF_ERROR(CheckServedDocument(tx.spec(), tx.spec_uri()));
         return Serialize(tx);
       }
       for (const char* name : {"model-spec", "dataset-hash", "hyperparameters-hash", "total-steps", "checkpoint-interval",
                                "graph-root", "batch-root", "step-leaf-count", "state-tensor-count",
                                "initial-state-hash"}) {
         if (!f.Given(name)) return Status::InvalidArgument(std::string("--") + name + " is required without --task");
       }
       proto::TaskSpec* spec = tx.mutable_spec();
       spec->set_model_spec(f.Get("model-spec"));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_dataset_hash(), Bytes32(f, "dataset-hash"));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_hyperparameters_hash(), Bytes32(f, "hyperparameters-hash"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t steps, Amount(f, "total-steps"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t interval, Amount(f, "checkpoint-interval"));
       POLNODE_ASSIGN_OR_RETURN(std::int64_t segments, f.GetInt("segments", 0, UINT32_MAX));
       spec->set_total_steps(steps);
       spec->set_checkpoint_interval(interval);
       spec->set_segments_per_verification(static_cast<std::uint32_t>(segments));
       spec->set_payment(terms.payment);
       spec->set_claim_window(terms.claim_window);
       spec->set_training_window(terms.training_window);
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_graph_root(), Bytes32(f, "graph-root"));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_batch_root(), Bytes32(f, "batch-root"));
       POLNODE_ASSIGN_OR_RETURN(std::uint64_t leaf_count, Amount(f, "step-leaf-count"));
       POLNODE_ASSIGN_OR_RETURN(std::int64_t state_tensors, f.GetInt("state-tensor-count", 1, UINT32_MAX));
       spec->set_step_leaf_count(leaf_count);
       spec->set_state_tensor_count(static_cast<std::uint32_t>(state_tensors));
       POLNODE_ASSIGN_OR_RETURN(*spec->mutable_initial_state_hash(), Bytes32(f, "initial-state-hash"));
       spec->set_tolerant(f.GetBool("tolerant"));
       if (spec->tolerant()) spec->set_forced_delta(terms.forced_delta);
       if (!f.GetBool("unchecked-spec-uri")) POLNODE_RETURN_IF_ERROR(CheckServedDocument(*spec, tx.spec_uri()));
       return Serialize(tx);
     }},
    {"cancel-task", payload::kCancelTask, "withdraw your task while nobody has claimed it", DeclareTaskId,
     [](const FlagSet&, const std::string& task_id) -> Result<std::string> {
       proto::CancelTaskTx tx;
       *tx.mutable_task_id() = task_id;
       return Serialize(tx);
     }},
    {"claim-task", payload::kClaimTask, "claim a task as its solver, committing to a secret",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("secret", "HEX", "your 32-byte secret (64 hex); keep it for the reveal", "", true);
     },
     [](const FlagSet& f, const std::string& task_id) -> Result<std::string> {
       proto::ClaimTaskTx tx;
       *tx.mutable_task_id() = task_id;
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
       f.Value("initial-proof", "HEX", "the serialized Merkle proof that checkpoint 0 is the task's initial state "
               "(consensus::SerializeMerkleProof)", "", true);
     },
     [](const FlagSet& f, const std::string& task_id) -> Result<std::string> {
       proto::CommitProofTx tx;
       *tx.mutable_task_id() = task_id;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_proof_root(), Bytes32(f, "proof-root"));
       tx.set_proof_uri(f.Get("proof-uri"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_initial_proof(), OptionalHex(f, "initial-proof"));
       return Serialize(tx);
     }},
    {"verdict", payload::kVerdict, "post your verdict as an assigned verifier",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("slot", "N", "the slot this verdict answers: its index among the task's verifiers (polnode status "
               "TASK --json lists them; a key drawn for several slots posts one verdict per slot)", "", true);
       f.Value("verdict", "WORD", "accept, reject or unavailable (the proof's data could not be had)", "", true);
       f.Value("failed-segments", "LIST", "reject: the segments whose replay failed, comma-separated ascending", "");
       f.Value("segment-digests", "LIST", "exact-mode reject: per failed segment, in the same order, SegmentDigest(your "
               "key, segment, the state hash your replay of it reached), 64 hex each, comma-separated", "");
       f.Value("report-hash", "HEX", "hash of your replay report (64 hex)", "", true);
     },
     [](const FlagSet& f, const std::string& task_id) -> Result<std::string> {
       proto::VerdictTx tx;
       *tx.mutable_task_id() = task_id;
       POLNODE_ASSIGN_OR_RETURN(std::int64_t slot, f.GetInt("slot", 0, UINT32_MAX));
       tx.set_slot(static_cast<std::uint32_t>(slot));
       const std::string word = f.Get("verdict");
       if (word == "accept") {
         tx.set_verdict(proto::VERDICT_ACCEPT);
       } else if (word == "reject") {
         tx.set_verdict(proto::VERDICT_REJECT);
       } else if (word == "unavailable") {
         tx.set_verdict(proto::VERDICT_UNAVAILABLE);
       } else {
         return Status::InvalidArgument("--verdict must be accept, reject or unavailable, got '" + word + "'");
       }
       POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> failed, SegmentList(f, "failed-segments"));
       for (std::uint64_t s : failed) tx.add_failed_segments(s);
       POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> digests, HashList(f, "segment-digests"));
       for (std::string& d : digests) tx.add_segment_digests(std::move(d));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_report_hash(), Bytes32(f, "report-hash"));
       return Serialize(tx);
     }},
    {"dispute", payload::kDispute, "as the solver, dispute a reject verdict; as a whistleblower, challenge the proof",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("verifier", "PUBKEY", "the solver: the rejecting verifier's key (64 hex); a whistleblower leaves it out");
       f.Value("slot", "N", "the solver, with --verifier: the index of the disputed slot among the task's verifiers");
       f.Value("failed-segments", "LIST", "a whistleblower: the segments of its challenge (ChallengeSegments of your "
               "key) whose replay failed, comma-separated ascending, at least one");
       f.Value("segment-digests", "LIST", "a whistleblower, exact mode: per failed segment, in the same order, "
               "SegmentDigest(your key, segment, the state hash your replay of it reached), 64 hex each, comma-separated");
     },
     [](const FlagSet& f, const std::string& task_id) -> Result<std::string> {
       proto::DisputeTx tx;
       *tx.mutable_task_id() = task_id;
       if (f.Given("verifier") != f.Given("slot")) {
         return Status::InvalidArgument("the solver names the disputed verdict by --verifier and --slot together");
       }
       if (f.Given("verifier")) {
         if (f.Given("failed-segments") || f.Given("segment-digests")) {
           return Status::InvalidArgument("the solver's dispute carries no --failed-segments or --segment-digests");
         }
         POLNODE_ASSIGN_OR_RETURN(*tx.mutable_verifier(), Bytes32(f, "verifier"));
         POLNODE_ASSIGN_OR_RETURN(std::int64_t slot, f.GetInt("slot", 0, UINT32_MAX));
         tx.set_slot(static_cast<std::uint32_t>(slot));
       } else {
         POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> failed, SegmentList(f, "failed-segments"));
         if (failed.empty()) return Status::InvalidArgument("a whistleblower's challenge names its --failed-segments");
         for (std::uint64_t s : failed) tx.add_failed_segments(s);
         POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> digests, HashList(f, "segment-digests"));
         for (std::string& d : digests) tx.add_segment_digests(std::move(d));
       }
       return Serialize(tx);
     }},
    {"reveal-seed", payload::kRevealSeed, "as the submitter, reveal the beacon seed your task committed to",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("seed", "HEX", "the seed given to submit-task --seed (64 hex)", "", true);
     },
     [](const FlagSet& f, const std::string& task_id) -> Result<std::string> {
       proto::SeedRevealTx tx;
       *tx.mutable_task_id() = task_id;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_seed(), Bytes32(f, "seed"));
       return Serialize(tx);
     }},
    {"reveal", payload::kReveal, "reveal your claim secret after the challenge window",
     [](FlagSet& f) {
       DeclareTaskId(f);
       f.Value("secret", "HEX", "the secret you claimed with (64 hex)", "", true);
       f.Value("result-root", "HEX", "the proof root the submitter should use (64 hex)", "", true);
       f.Value("leaves", "LIST", "forced rounds: the checkpoints the ledger needs (contracts/forced.h "
               "RevealCheckpoints), ascending, comma-separated, each CHECKPOINT:COMMITTED_HASH:COMMITTED_PROOF:"
               "RESULT_HASH:RESULT_PROOF (hashes 64 hex, proofs serialized Merkle proofs in hex)");
     },
     [](const FlagSet& f, const std::string& task_id) -> Result<std::string> {
       proto::RevealTx tx;
       *tx.mutable_task_id() = task_id;
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_secret(), Bytes32(f, "secret"));
       POLNODE_ASSIGN_OR_RETURN(*tx.mutable_result_root(), Bytes32(f, "result-root"));
       POLNODE_ASSIGN_OR_RETURN(std::vector<proto::RevealedLeaf> leaves, LeafList(f, "leaves"));
       for (proto::RevealedLeaf& leaf : leaves) *tx.add_leaves() = std::move(leaf);
       return Serialize(tx);
     }},
};

// A stake the ledger would take but that can never do anything is refused before its fee is
// spent: one that leaves the role's bonded stake below the smallest lock a task of that role
// takes (the role is never drawn, can never claim or challenge), or one the balance cannot cover.
Status CheckStakeUseful(const FlagSet& flags, const LedgerClient& ledger, std::string_view signer_raw) {
  POLNODE_ASSIGN_OR_RETURN(proto::Role role, RoleFlag(flags));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t amount, Amount(flags, "amount"));
  POLNODE_ASSIGN_OR_RETURN(proto::Params params, ledger.Params());
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, ledger.Account(signer_raw));
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, ledger.Stake(signer_raw, role));
  const std::uint64_t minimum = role == proto::ROLE_SOLVER     ? params.min_stake_solver()
                                : role == proto::ROLE_VERIFIER ? params.min_stake_verifier()
                                                               : params.min_stake_whistleblower();
  const std::string role_name = flags.Get("role");
  if (amount > account.balance() || account.balance() - amount < params.tx_fee()) {
    return Status::FailedPrecondition("the balance is " + std::to_string(account.balance()) + ": it cannot bond " +
                                      std::to_string(amount) + " and pay the fee of " + std::to_string(params.tx_fee()) +
                                      " (fund this key first)");
  }
  if (stake.bonded() + amount < minimum) {
    return Status::FailedPrecondition(
        "the " + role_name + " stake would be " + std::to_string(stake.bonded() + amount) + ", below min_stake_" +
        role_name + " = " + std::to_string(minimum) + ": a " + role_name +
        " with less is never given work; bond at least " + std::to_string(minimum - stake.bonded()));
  }
  return Status::Ok();
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
  POLNODE_ASSIGN_OR_RETURN(LedgerClient ledger, LedgerClient::FromUrl(ledger_url));
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, consensus::ReadKeyFile(key_path));
  const std::string signer = consensus::ToHex(key.PublicKey().bytes());

  // A kind that takes --task ID (not submit-task's --task FILE) accepts a unique prefix of the id.
  std::string task_id;
  if (flags.Given("task") && kind.payload_type != payload::kSubmitTask) {
    POLNODE_ASSIGN_OR_RETURN(task_id, ResolveTaskId(ledger, flags.Get("task"), "--task"));
  }
  POLNODE_ASSIGN_OR_RETURN(std::string payload, kind.build(flags, task_id));
  if (kind.payload_type == payload::kStake) {
    const auto pub = key.PublicKey();
    POLNODE_RETURN_IF_ERROR(CheckStakeUseful(
        flags, ledger, std::string_view(reinterpret_cast<const char*>(pub.bytes().data()), pub.bytes().size())));
  }
  std::optional<std::uint64_t> nonce;
  if (flags.Given("nonce")) {
    POLNODE_ASSIGN_OR_RETURN(nonce, Amount(flags, "nonce"));
  }
  std::optional<std::string> chain_id;
  if (flags.Given("chain-id")) chain_id = flags.Get("chain-id");
  // A submitted task's id follows from its spec, the signer and the nonce (contracts/beacon.h
  // TaskIdFor), so the poster learns the id every other command takes without asking the ledger.
  std::string task_hex = task_id.empty() ? std::string() : consensus::ToHex(task_id);
  proto::SubmitTaskTx submitted;
  const bool is_submit = kind.payload_type == payload::kSubmitTask && submitted.ParseFromString(payload);
  POLNODE_ASSIGN_OR_RETURN(LedgerClient::Sent sent, ledger.Send(key, kind.payload_type, std::move(payload), nonce, chain_id));
  const std::string& id = sent.id_hex;
  if (is_submit) {
    const auto pub = key.PublicKey();
    task_hex = consensus::ToHex(contracts::TaskIdFor(
        contracts::TaskSpecHash(submitted.spec()),
        std::string_view(reinterpret_cast<const char*>(pub.bytes().data()), pub.bytes().size()), sent.nonce));
  }

  std::optional<std::uint64_t> height;
  if (flags.GetBool("wait")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t timeout_ms, flags.GetInt("wait-timeout-ms", 1, 3600 * 1000));
    POLNODE_ASSIGN_OR_RETURN(height, ledger.WaitCommitted(id, std::chrono::milliseconds(timeout_ms)));
  }
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("tx_id", id).Field("signer", signer).Field("nonce", sent.nonce).Field("payload_type", kind.payload_type);
    if (!task_hex.empty()) w.Field("task_id", task_hex);
    if (height) w.Field("height", *height);
    w.Field("status", height ? "committed" : "pending").EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << kind.name << ": tx " << id << " (signer " << signer.substr(0, 16) << "..., nonce " << sent.nonce << ") "
           << (height ? "committed in block " + std::to_string(*height) : std::string("accepted into the mempool")) << "\n";
    if (!task_hex.empty()) io.out << "task " << task_hex << "\n";
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
    FlagSet flags(command, std::string(kind.summary) + " (payload type \"" + std::string(kind.payload_type) +
                               "\"). Signed with --key, else --home's node key; sent to --ledger, else the ledger "
                               "--home's config names.");
    kind.declare(flags);
    DeclareNodeHomeFlag(flags, false);
    flags.Value("key", "FILE", "key file that signs (default: --home's node.key)");
    DeclareLedgerFlag(flags, false);
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
