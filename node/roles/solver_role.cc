#include "polnode/roles/solver_role.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "polnode/base/file_util.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/locks.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/perturbation.h"
#include "polnode/rpc/file_http.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/forced_round.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_binding.h"
#include "polnode/solver/task_steps.h"
#include "polnode/solver/train_state.h"

namespace polnode::node {
namespace {

constexpr char kSecretFile[] = "secret";
constexpr char kDocumentFile[] = "document.pb";
// The proof trained (and committed), and in a forced round the result proof beside it.
constexpr char kProofDir[] = "proof";
constexpr char kResultDir[] = "proof-result";
// A tolerant forced round's honest values (forced_round.h): beside the proofs, never served.
constexpr char kHonestDir[] = "forced-honest";

std::string Serialized(const google::protobuf::MessageLite& message) {
  std::string out;
  message.SerializeToString(&out);
  return out;
}

consensus::Hash256 HashOf(std::string_view raw) {
  consensus::Hash256 h{};
  std::copy_n(raw.begin(), std::min(raw.size(), h.size()), h.begin());
  return h;
}

std::string Raw(const consensus::Hash256& h) { return std::string(h.begin(), h.end()); }

bool HasManifest(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir + "/" + std::string(solver::kManifestFile), ec);
}

Result<solver::TrainState> LoadCheckpoint(const solver::ProofDir& proof, std::uint64_t checkpoint) {
  POLNODE_ASSIGN_OR_RETURN(solver::StoredState stored, proof.store.GetState(proof.manifest.checkpoint_blobs[checkpoint]));
  return std::move(stored.state);
}

// The PerturbationProof of tolerant forced checkpoint `k`: the committed and the result proof's
// states there must differ only in the first tensor's drawn block (one block path and one list of
// the other tensors' hashes serve both in the ledger's check); kCorruption when they do not.
Result<proto::PerturbationProof> PerturbationProofAt(const proto::Task& task, std::string_view secret,
                                                     const solver::ProofDir& committed, const solver::ProofDir& result,
                                                     std::uint64_t k) {
  const std::string at = "forced checkpoint " + std::to_string(k);
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState perturbed, LoadCheckpoint(committed, k));
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState honest, LoadCheckpoint(result, k));
  if (perturbed.tensors.empty() || perturbed.tensors[0].tensor.numel() == 0) {
    return Status::Corruption(at + ": the committed state has no first tensor");
  }
  if (honest.tensors.size() != perturbed.tensors.size()) {
    return Status::Corruption(at + ": the committed and the result state have different tensor counts");
  }
  std::vector<std::string> names;
  std::vector<consensus::Hash256> other_hashes;
  for (std::size_t t = 0; t < perturbed.tensors.size(); ++t) {
    const solver::NamedTensor& a = perturbed.tensors[t];
    const solver::NamedTensor& b = honest.tensors[t];
    if (a.name != b.name || a.tensor.shape() != b.tensor.shape()) {
      return Status::Corruption(at + ": tensor " + std::to_string(t) + " differs in name or shape between the proofs");
    }
    names.push_back(a.name);
    if (t == 0) continue;
    const consensus::Hash256 hash = solver::TensorHash(a.tensor);
    if (hash != solver::TensorHash(b.tensor)) {
      return Status::Corruption(at + ": tensor " + a.name + " differs between the committed and the result proof");
    }
    other_hashes.push_back(hash);
  }
  const kernels::Tensor& first = perturbed.tensors[0].tensor;
  const consensus::Perturbation drawn =
      consensus::DrawPerturbation(secret, task.forced_seed(), task.id(), k, first.shape());
  Result<proto::PerturbationProof> proof = contracts::BuildPerturbationProof(
      k, names, first.shape(), first.values(), honest.tensors[0].tensor.values(), other_hashes, drawn.block);
  if (!proof.ok()) return Status::Corruption(at + ": " + proof.status().message());
  return proof;
}

}  // namespace

Result<CheatSpec> ParseCheatSpec(std::string_view text) {
  CheatSpec cheat;
  solver::TamperSpec& spec = cheat.tamper;
  bool have_step = false, have_node = false;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) return Status::InvalidArgument("--cheat: '" + std::string(part) + "' is not KEY=VALUE");
    const std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    std::int64_t n = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    const bool number = error == std::errc() && end == value.data() + value.size() && n >= 0;
    if (key == "node" && !number && !value.empty()) {
      cheat.node_name = std::string(value);
      have_node = true;
      continue;
    }
    if (!number) return Status::InvalidArgument("--cheat: '" + std::string(value) + "' is not a non-negative integer");
    if (key == "step") {
      spec.step = n;
      have_step = true;
    } else if (key == "node") {
      spec.node = static_cast<int>(n);
      have_node = true;
    } else if (key == "output") {
      spec.output = static_cast<int>(n);
    } else if (key == "bit" && n < 32) {
      spec.bit = static_cast<int>(n);
    } else {
      return Status::InvalidArgument("--cheat: unknown or out-of-range key '" + std::string(key) + "'");
    }
  }
  if (!have_step || !have_node) return Status::InvalidArgument("--cheat needs step=S and node=N or node=NAME");
  return cheat;
}

Result<solver::TamperSpec> ResolveCheat(const CheatSpec& cheat, const solver::TaskSpec& document,
                                        const solver::ImageDataset& data) {
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(document, data));
  const std::vector<solver::StepNode>& nodes = stepper.graph().nodes;
  solver::TamperSpec tamper = cheat.tamper;
  if (!cheat.node_name.empty()) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const solver::StepNode& n) { return n.name == cheat.node_name; });
    if (it == nodes.end()) return Status::InvalidArgument("--cheat: the step graph has no node '" + cheat.node_name + "'");
    tamper.node = it->index;
  }
  // Each part is checked on its own, so the message names the one that is wrong.
  if (tamper.step >= document.steps) {
    return Status::InvalidArgument("--cheat: step=" + std::to_string(tamper.step) + " is past the task's last step (" +
                                   std::to_string(document.steps - 1) + ")");
  }
  if (tamper.node >= static_cast<int>(nodes.size())) {
    return Status::InvalidArgument("--cheat: node=" + std::to_string(tamper.node) + " is past the step graph's " +
                                   std::to_string(nodes.size()) + " nodes");
  }
  const std::size_t outputs = nodes[static_cast<std::size_t>(tamper.node)].output_shapes.size();
  if (tamper.output >= static_cast<int>(outputs)) {
    return Status::InvalidArgument("--cheat: output=" + std::to_string(tamper.output) + ", but node " +
                                   nodes[static_cast<std::size_t>(tamper.node)].name + " has " +
                                   std::to_string(outputs) + " output(s)");
  }
  return tamper;
}

SolverRole::SolverRole(SolverOptions options) : options_(std::move(options)) {}

SolverRole::~SolverRole() { Stop(); }

void SolverRole::Stop() {
  cancel_ = true;
  for (auto& [id, claimed] : claimed_) {
    if (claimed->worker && claimed->worker->joinable()) claimed->worker->join();
  }
}

bool SolverRole::Busy() const {
  for (const auto& [id, claimed] : claimed_) {
    if (!claimed->committed_root && !claimed->settled_logged) return true;
  }
  return false;
}

Result<const solver::ImageDataset*> SolverRole::Data(const solver::TaskSpec& document) {
  std::lock_guard<std::mutex> lock(data_mu_);
  auto it = data_.find(document.data_location);
  if (it == data_.end()) {
    POLNODE_ASSIGN_OR_RETURN(solver::ImageDataset data, solver::LoadTaskData(document));
    it = data_.emplace(document.data_location, std::make_unique<solver::ImageDataset>(std::move(data))).first;
  }
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(document, *it->second));
  return it->second.get();
}

Status SolverRole::ResolveFiles(RoleContext& ctx, solver::TaskSpec& document) {
  if (!IsRemoteLocation(document.data_location) && !IsRemoteLocation(document.model_location)) return Status::Ok();
  if (!files_) {
    POLNODE_ASSIGN_OR_RETURN(FileStore store, FileStore::Open(ctx.home() + "/files"));
    files_.emplace(std::move(store));
  }
  return ResolveTaskFiles(ctx.fetch_policy(), *files_, document);
}

Status SolverRole::Poll(RoleContext& ctx) {
  if (!backend_) {
    POLNODE_ASSIGN_OR_RETURN(backend_, kernels::MakeBackend(options_.backend, options_.threads));
  }
  if (!have_params_) {
    POLNODE_ASSIGN_OR_RETURN(params_, ctx.ledger().Params());
    have_params_ = true;
  }
  const std::uint64_t stake = options_.stake > 0 ? options_.stake : params_.min_stake_solver();
  POLNODE_ASSIGN_OR_RETURN(bool staked, ctx.EnsureStake(proto::ROLE_SOLVER, stake));
  POLNODE_ASSIGN_OR_RETURN(LedgerInfo info, ctx.ledger().Info());

  std::vector<proto::Task> open;
  for (std::uint64_t start = 0;;) {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, ctx.ledger().Tasks(start, 100));
    for (const proto::Task& task : page.tasks) {
      if (task.solver() == ctx.pubkey()) {
        POLNODE_RETURN_IF_ERROR(HandleOwnTask(ctx, task));
      } else if (auto it = claimed_.find(task.id()); it != claimed_.end() && task.status() != proto::TASK_OPEN) {
        ctx.log().Event("claim_lost", {{"task_id", consensus::ToHex(task.id())}});
        claimed_.erase(it);  // another solver's claim landed first
        --claims_;
      } else if (task.status() == proto::TASK_OPEN) {
        open.push_back(task);
      }
    }
    start += page.tasks.size();
    if (page.tasks.empty() || start >= page.total) break;
  }
  ctx.metrics().Set("training_active", Busy() ? 1 : 0);
  // Trainings running on worker threads (devnet.cc holds blocks back while one does).
  ctx.metrics().Set("training_threads", static_cast<double>(std::count_if(claimed_.begin(), claimed_.end(), [](const auto& c) {
                      return c.second->worker != nullptr && !c.second->done;
                    })));
  if (!staked || Busy()) return Status::Ok();
  if (options_.max_tasks > 0 && claims_ >= options_.max_tasks) return Status::Ok();
  for (const proto::Task& task : open) {
    if (refused_.contains(task.id())) continue;
    POLNODE_RETURN_IF_ERROR(MaybeClaim(ctx, task, info.height));
    if (Busy()) break;
  }
  return Status::Ok();
}

Result<bool> SolverRole::AnyVerifierCouldTake(RoleContext& ctx, const proto::Task& task) const {
  const std::uint64_t lock = contracts::TaskLock(params_, proto::ROLE_VERIFIER, task.spec().payment());
  POLNODE_ASSIGN_OR_RETURN(std::vector<contracts::VerifierStake> verifiers, ctx.ledger().Verifiers());
  for (const contracts::VerifierStake& v : verifiers) {
    if (v.pubkey == ctx.pubkey() || v.pubkey == task.submitter()) continue;  // never drawn for it
    const std::uint64_t free = v.stake.bonded() >= v.stake.locked() ? v.stake.bonded() - v.stake.locked() : 0;
    if (free >= lock) return true;
  }
  return false;
}

Status SolverRole::MaybeClaim(RoleContext& ctx, const proto::Task& task, std::uint64_t height) {
  // Leave a margin: a claim landing after the claim deadline fails and only costs the fee.
  if (task.deadline() <= height + 2) return Status::Ok();
  Result<solver::TaskSpec> document = FetchTaskDocument(ctx.fetch_policy(), std::string(task.spec_uri()));
  Status usable = document.status();
  if (usable.ok()) usable = ResolveFiles(ctx, *document);
  const solver::ImageDataset* data = nullptr;
  if (usable.ok()) {
    Result<const solver::ImageDataset*> loaded = Data(*document);
    usable = loaded.status();
    if (loaded.ok()) data = *loaded;
  }
  if (usable.ok()) usable = solver::CheckSpecBinding(task.spec(), *document, *data);
  if (!usable.ok()) {
    // Not retried: a document that is unreachable now is retried, anything else is final.
    if (usable.code() != StatusCode::kUnavailable) refused_[task.id()] = usable.ToString();
    ctx.log().Event("task_refused", {{"task_id", consensus::ToHex(task.id())}, {"reason", usable.ToString()}});
    return Status::Ok();
  }

  // Training a task no verifier can take would end OUTCOME_NO_VERIFIERS, unpaid: wait (and say so,
  // once per task) until some verifier other than this solver has the free stake its lock needs.
  POLNODE_ASSIGN_OR_RETURN(bool checkable, AnyVerifierCouldTake(ctx, task));
  if (!checkable) {
    if (waiting_for_verifiers_.insert(task.id()).second) {
      ctx.log().Event("claim_deferred", {{"task_id", consensus::ToHex(task.id())},
                                         {"reason", "no staked verifier has the free stake this task's lock needs, so "
                                                    "it would settle unverified and unpaid"}});
    }
    return Status::Ok();
  }

  // The claim locks stake in proportion to the payment (contracts/locks.h): top it up first, and
  // claim once it is bonded.
  const std::uint64_t lock = contracts::TaskLock(params_, proto::ROLE_SOLVER, task.spec().payment());
  POLNODE_ASSIGN_OR_RETURN(bool staked, ctx.EnsureStake(proto::ROLE_SOLVER, std::max(lock, options_.stake)));
  if (!staked) return Status::Ok();

  auto claimed = std::make_unique<Claimed>();
  claimed->document = *document;
  claimed->dir = ctx.home() + "/tasks/" + consensus::ToHex(task.id());
  std::error_code ec;
  std::filesystem::create_directories(claimed->dir, ec);
  if (ec) return Status::IOError("cannot create " + claimed->dir + ": " + ec.message());
  // The secret decides, with later block randomness, whether this round is forced; it must survive
  // a restart (the reveal needs it), so it is written before the claim is sent.
  const std::string secret_path = claimed->dir + "/" + kSecretFile;
  if (Result<std::vector<std::uint8_t>> saved = ReadWholeFile(secret_path, 64); saved.ok() && saved->size() == 32) {
    claimed->secret.assign(saved->begin(), saved->end());
  } else {
    POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey fresh, consensus::SecretKey::Generate());
    // A fresh CSPRNG scalar serves as the 32-byte secret; it is never used as a key.
    const auto bytes = fresh.bytes();
    claimed->secret.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(secret_path, claimed->secret));
    std::filesystem::permissions(secret_path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace, ec);
  }
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(claimed->dir + "/" + kDocumentFile, solver::EncodeTaskProto(*document)));

  proto::ClaimTaskTx tx;
  tx.set_task_id(task.id());
  tx.set_secret_commitment(Raw(contracts::SecretCommitment(claimed->secret)));
  POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty("claim-" + consensus::ToHex(task.id()), contracts::payload::kClaimTask, Serialized(tx)));
  if (state == DutyState::kFailed) {
    refused_[task.id()] = "claim failed";
    return Status::Ok();
  }
  ctx.log().Event("claiming", {{"task_id", consensus::ToHex(task.id())}, {"model", document->model}, {"steps", std::to_string(document->steps)}});
  ctx.metrics().Add("tasks_claimed_total");
  ++claims_;
  claimed_[task.id()] = std::move(claimed);
  return Status::Ok();
}

Result<SolverRole::Claimed*> SolverRole::Restore(RoleContext& ctx, const proto::Task& task) {
  auto claimed = std::make_unique<Claimed>();
  claimed->dir = ctx.home() + "/tasks/" + consensus::ToHex(task.id());
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> secret, ReadWholeFile(claimed->dir + "/" + kSecretFile, 64));
  if (secret.size() != 32) return Status::Corruption("the secret of task " + consensus::ToHex(task.id()) + " is damaged");
  claimed->secret.assign(secret.begin(), secret.end());
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> doc, ReadWholeFile(claimed->dir + "/" + kDocumentFile, solver::kMaxTaskBytes));
  POLNODE_ASSIGN_OR_RETURN(claimed->document, solver::DecodeTaskProto(doc));
  // Proofs already made are served again at once (verifiers and the submitter may be waiting).
  // The result proof is the committed one unless a forced round wrote its own.
  for (const char* sub : {kProofDir, kResultDir}) {
    const std::string dir = claimed->dir + "/" + sub;
    if (!HasManifest(dir)) continue;
    POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 root, proofs_.Add(dir));
    claimed->result_root = root;
  }
  if (task.status() != proto::TASK_CLAIMED) claimed->committed_root = HashOf(task.proof_root());
  claimed->settled_logged = task.status() == proto::TASK_SETTLED || task.status() == proto::TASK_CANCELLED;
  ctx.log().Event("restored", {{"task_id", consensus::ToHex(task.id())}, {"status", proto::TaskStatus_Name(task.status())}});
  ++claims_;
  Claimed* raw = claimed.get();
  claimed_[task.id()] = std::move(claimed);
  return raw;
}

void SolverRole::StartTraining(RoleContext& ctx, const proto::Task& task, Claimed& claimed) {
  claimed.done = false;
  const std::string task_hex = consensus::ToHex(task.id());
  std::optional<solver::ForcedRound> forced = ForcedRoundOf(task, claimed);
  claimed.worker = std::make_unique<std::thread>([this, &ctx, &claimed, task_hex, forced] {
    const Clock::TimePoint started = ctx.clock().Now();
    Status status = [&]() -> Status {
      POLNODE_ASSIGN_OR_RETURN(const solver::ImageDataset* data, Data(claimed.document));
      kernels::Backend* backend = backend_.get();
      std::unique_ptr<solver::TamperingBackend> tamper;
      solver::ProveOptions prove;
      prove.out_dir = claimed.dir + "/" + kProofDir;
      // A forced round's proof is falsified at its forced checkpoints as it is trained, and
      // training goes on from the falsified states (forced_round.h).
      if (forced) prove.on_checkpoint = solver::ForcedCheckpointHook(*forced, claimed.document.checkpoint_interval);
      prove.key = &ctx.key();
      prove.cancel = &cancel_;
      prove.clock = &ctx.clock();
      prove.commit_interval = options_.commit_interval;
      // Durable progress, so an operator (or the devnet) can see where a restart will resume.
      prove.on_checkpoint_saved = [&ctx, &task_hex](std::int64_t step) {
        ctx.metrics().Add("checkpoints_saved_total");
        ctx.log().Event("checkpoint_saved", {{"task_id", task_hex}, {"step", std::to_string(step)}});
      };
      if (options_.cheat) {
        POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(claimed.document, *data));
        POLNODE_ASSIGN_OR_RETURN(solver::TamperSpec spec, ResolveCheat(*options_.cheat, claimed.document, *data));
        tamper = std::make_unique<solver::TamperingBackend>(*backend_, stepper.graph().nodes.size(), spec);
        backend = tamper.get();
        prove.on_start = [&tamper](std::int64_t first_step) { tamper->Seek(first_step); };
      }
      POLNODE_ASSIGN_OR_RETURN(solver::ProveResult result, solver::Prove(claimed.document, *data, *backend, prove));
      const double seconds = std::chrono::duration<double>(ctx.clock().Now() - started).count();
      ctx.metrics().Add("training_seconds_total", seconds);
      ctx.metrics().Add("steps_trained_total", static_cast<double>(claimed.document.steps - result.resumed_from_step));
      ctx.log().Event("trained", {{"task_id", task_hex},
                                  {"steps", std::to_string(claimed.document.steps)},
                                  {"resumed_from", std::to_string(result.resumed_from_step)},
                                  {"seconds", std::to_string(seconds)},
                                  {"root", consensus::ToHex(result.manifest.merkle_root)}});
      return Status::Ok();
    }();
    claimed.result = status;
    claimed.done = true;
  });
  ctx.log().Event("training", {{"task_id", task_hex},
                               {"backend", options_.backend},
                               {"cheating", options_.cheat ? "true" : "false"},
                               {"forced_checkpoints", forced ? std::to_string(forced->checkpoints.size()) : "0"}});
}

std::optional<solver::ForcedRound> SolverRole::ForcedRoundOf(const proto::Task& task, const Claimed& claimed) const {
  if (task.forced_seed().empty() ||
      !contracts::IsForcedError(claimed.secret, task.forced_seed(), task.id(), params_.forced_error_rate())) {
    return std::nullopt;
  }
  solver::ForcedRound round;
  round.secret = claimed.secret;
  round.forced_seed = task.forced_seed();
  round.task_id = task.id();
  round.mode = claimed.document.mode;
  round.forced_delta = task.spec().forced_delta();
  round.honest_dir = claimed.dir + "/" + kHonestDir;
  const std::uint64_t segments = static_cast<std::uint64_t>(claimed.document.steps / claimed.document.checkpoint_interval);
  round.checkpoints = contracts::ForcedCheckpoints(claimed.secret, task.forced_seed(), task.id(), segments);
  return round;
}

Status SolverRole::CommitProof(RoleContext& ctx, const proto::Task& task, Claimed& claimed) {
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 root, proofs_.Add(claimed.dir + "/" + kProofDir));
  const std::optional<solver::ForcedRound> round = ForcedRoundOf(task, claimed);
  const bool forced = round.has_value();
  claimed.result_root = root;
  if (forced) {
    // What the reveal will show and the submitter will get: the committed proof with the forced
    // checkpoints restored.
    POLNODE_RETURN_IF_ERROR(
        solver::WriteResultProof(claimed.dir + "/" + kProofDir, claimed.dir + "/" + kResultDir, *round, ctx.key()).status());
    POLNODE_ASSIGN_OR_RETURN(claimed.result_root, proofs_.Add(claimed.dir + "/" + kResultDir));
  }
  proto::CommitProofTx tx;
  tx.set_task_id(task.id());
  tx.set_proof_root(Raw(root));
  tx.set_proof_uri(ProofUri(ctx.http_url(), root));
  // The ledger checks the proof's starting point: checkpoint 0 must be the task's initial state.
  POLNODE_ASSIGN_OR_RETURN(std::string initial_proof, CheckpointProof(claimed.dir + "/" + kProofDir, 0));
  tx.set_initial_proof(std::move(initial_proof));
  POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty("commit-" + consensus::ToHex(task.id()), contracts::payload::kCommitProof, Serialized(tx)));
  if (state == DutyState::kSent) {
    ctx.log().Event("committing", {{"task_id", consensus::ToHex(task.id())}, {"root", consensus::ToHex(root)}, {"forced", forced ? "true" : "false"}});
    ctx.metrics().Add("proofs_committed_total");
    if (forced) ctx.metrics().Add("forced_errors_total");
  }
  claimed.committed_root = root;
  return Status::Ok();
}

Result<std::string> SolverRole::CheckpointProof(const std::string& dir, std::uint64_t checkpoint) {
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir proof, solver::OpenProofDir(dir));
  const consensus::MerkleTree tree(proof.manifest.checkpoint_hashes);
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof path, tree.Prove(checkpoint));
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(path);
  return std::string(bytes.begin(), bytes.end());
}

Result<std::vector<proto::PublishTx>> PublishTxs(const std::string& proof_dir, std::string_view task_id,
                                                 std::uint64_t checkpoint) {
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir proof, solver::OpenProofDir(proof_dir));
  if (checkpoint >= proof.manifest.checkpoint_blobs.size()) {
    return Status::OutOfRange("the proof has no checkpoint " + std::to_string(checkpoint));
  }
  POLNODE_ASSIGN_OR_RETURN(solver::StoredState stored, proof.store.GetState(proof.manifest.checkpoint_blobs[checkpoint]));
  const solver::TrainState& state = stored.state;
  const consensus::MerkleTree tree(proof.manifest.checkpoint_hashes);
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof path, tree.Prove(checkpoint));
  const std::vector<std::uint8_t> path_bytes = consensus::SerializeMerkleProof(path);
  std::vector<proto::PublishTx> txs;
  proto::PublishTx& header = txs.emplace_back();
  header.set_task_id(std::string(task_id));
  header.set_checkpoint(checkpoint);
  for (const solver::NamedTensor& t : state.tensors) {
    proto::PublishedTensorHeader* h = header.mutable_header()->add_tensors();
    h->set_name(t.name);
    for (std::int64_t d : t.tensor.shape()) h->add_dims(d);
    h->set_hash(Raw(solver::TensorHash(t.tensor)));
  }
  header.mutable_header()->set_proof(std::string(path_bytes.begin(), path_bytes.end()));
  for (std::size_t t = 0; t < state.tensors.size(); ++t) {
    const kernels::Tensor& tensor = state.tensors[t].tensor;
    const std::uint64_t elements = static_cast<std::uint64_t>(tensor.numel());
    for (std::uint64_t begin = 0, chunk = 0; begin < elements; begin += contracts::payload::kPublishChunkElements, ++chunk) {
      const std::uint64_t count = std::min(contracts::payload::kPublishChunkElements, elements - begin);
      proto::PublishTx& part = txs.emplace_back();
      part.set_task_id(std::string(task_id));
      part.set_checkpoint(checkpoint);
      part.mutable_chunk()->set_tensor(static_cast<std::uint32_t>(t));
      part.mutable_chunk()->set_chunk(static_cast<std::uint32_t>(chunk));
      std::string data(count * sizeof(float), '\0');
      // Little-endian float32, as the ledger hashes it (this build targets little-endian hosts).
      std::memcpy(data.data(), tensor.data() + begin, data.size());
      part.mutable_chunk()->set_data(std::move(data));
    }
  }
  return txs;
}

Status SolverRole::Publish(RoleContext& ctx, const proto::Task& task, Claimed& claimed) {
  const std::string task_hex = consensus::ToHex(task.id());
  for (std::uint64_t checkpoint : task.publish_required()) {
    POLNODE_ASSIGN_OR_RETURN(std::vector<proto::PublishTx> txs,
                             PublishTxs(claimed.dir + "/" + kProofDir, task.id(), checkpoint));
    // The header first, then its chunks: in nonce order they execute in this order.
    for (std::size_t i = 0; i < txs.size(); ++i) {
      const std::string name = "publish-" + task_hex + "-" + std::to_string(checkpoint) + "-" + std::to_string(i);
      POLNODE_ASSIGN_OR_RETURN(DutyState sent, ctx.SendDuty(name, contracts::payload::kPublish, Serialized(txs[i])));
      if (i == 0 && sent == DutyState::kSent) {
        ctx.log().Event("publishing", {{"task_id", task_hex},
                                       {"checkpoint", std::to_string(checkpoint)},
                                       {"transactions", std::to_string(txs.size())}});
        ctx.metrics().Add("checkpoints_published_total");
      }
    }
  }
  return Status::Ok();
}

Result<proto::RevealTx> ForcedRevealTx(const proto::Task& task, std::string_view secret, const std::string& committed_dir,
                                       const std::string& result_dir) {
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir committed, solver::OpenProofDir(committed_dir));
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir result, solver::OpenProofDir(result_dir));
  const std::vector<consensus::Hash256>& committed_hashes = committed.manifest.checkpoint_hashes;
  const std::vector<consensus::Hash256>& result_hashes = result.manifest.checkpoint_hashes;
  if (committed_hashes.size() != result_hashes.size()) {
    return Status::Corruption("the committed and the result proof have different checkpoint counts");
  }
  const consensus::MerkleTree committed_tree(committed_hashes);
  const consensus::MerkleTree result_tree(result_hashes);
  proto::RevealTx tx;
  tx.set_task_id(task.id());
  tx.set_secret(std::string(secret));
  tx.set_result_root(Raw(result_tree.root()));
  for (std::uint64_t k : contracts::RevealCheckpoints(task)) {
    if (k >= committed_hashes.size()) return Status::OutOfRange("the proof has no checkpoint " + std::to_string(k));
    POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof committed_path, committed_tree.Prove(k));
    POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof result_path, result_tree.Prove(k));
    const std::vector<std::uint8_t> committed_bytes = consensus::SerializeMerkleProof(committed_path);
    const std::vector<std::uint8_t> result_bytes = consensus::SerializeMerkleProof(result_path);
    proto::RevealedLeaf* leaf = tx.add_leaves();
    leaf->set_checkpoint(k);
    leaf->set_committed_hash(Raw(committed_hashes[k]));
    leaf->set_committed_proof(std::string(committed_bytes.begin(), committed_bytes.end()));
    leaf->set_result_hash(Raw(result_hashes[k]));
    leaf->set_result_proof(std::string(result_bytes.begin(), result_bytes.end()));
    // A tolerant forced checkpoint (the two proofs differ exactly there) also proves that its
    // committed state is the honest one with the drawn perturbation and nothing else.
    if (task.spec().tolerant() && committed_hashes[k] != result_hashes[k]) {
      POLNODE_ASSIGN_OR_RETURN(*tx.add_perturbations(), PerturbationProofAt(task, secret, committed, result, k));
    }
  }
  return tx;
}

Status SolverRole::HandleOwnTask(RoleContext& ctx, const proto::Task& task) {
  Claimed* claimed = nullptr;
  if (auto it = claimed_.find(task.id()); it != claimed_.end()) {
    claimed = it->second.get();
  } else {
    POLNODE_ASSIGN_OR_RETURN(claimed, Restore(ctx, task));
  }
  const std::string task_hex = consensus::ToHex(task.id());
  const bool forced = !task.forced_seed().empty() &&
                      contracts::IsForcedError(claimed->secret, task.forced_seed(), task.id(), params_.forced_error_rate());
  switch (task.status()) {
    case proto::TASK_CLAIMED:
      // A forced round is falsified while it is trained: training waits for the forced-error seed.
      if (task.forced_seed().empty()) return Status::Ok();
      if (!claimed->worker) StartTraining(ctx, task, *claimed);
      if (!claimed->done) return Status::Ok();
      if (!claimed->result.ok()) {
        ctx.log().Event("training_failed", {{"task_id", task_hex}, {"error", claimed->result.ToString()}});
        claimed->worker->join();
        claimed->worker.reset();  // retried next pass; Prove resumes from its last checkpoint
        return Status::Ok();
      }
      return CommitProof(ctx, task, *claimed);
    case proto::TASK_PUBLISHING:
      return Publish(ctx, task, *claimed);
    case proto::TASK_CHALLENGE:
      // In a forced round the reveal decides which rejects the solver defends against.
      if (forced) return Status::Ok();
      // A reject left undisputed stands and leaves the proof unproven: the solver defends its proof
      // against every one (a cheater bluffs, hoping the verifier cannot play its game).
      // Slot by slot: a key drawn for several slots gave a verdict on each.
      for (int i = 0; i < task.verifiers_size(); ++i) {
        const proto::VerifierSlot& slot = task.verifiers(i);
        if (slot.absent() || slot.verdict() != proto::VERDICT_REJECT || slot.disputed()) continue;
        proto::DisputeTx tx;
        tx.set_task_id(task.id());
        tx.set_verifier(slot.verifier());
        tx.set_slot(static_cast<std::uint32_t>(i));
        POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty("dispute-" + task_hex + "-" + std::to_string(i),
                                                               contracts::payload::kDispute, Serialized(tx)));
        if (state == DutyState::kSent) {
          ctx.log().Event("disputing",
                          {{"task_id", task_hex}, {"slot", std::to_string(i)}, {"verifier", consensus::ToHex(slot.verifier())}});
          ctx.metrics().Add("disputes_total");
        }
      }
      return Status::Ok();
    case proto::TASK_REVEALING: {
      if (!claimed->result_root) return Status::FailedPrecondition("task " + task_hex + " awaits a reveal but its proof is missing");
      proto::RevealTx tx;
      if (forced) {
        POLNODE_ASSIGN_OR_RETURN(tx, ForcedRevealTx(task, claimed->secret, claimed->dir + "/" + kProofDir,
                                                    claimed->dir + "/" + kResultDir));
      } else {
        tx.set_task_id(task.id());
        tx.set_secret(claimed->secret);
        tx.set_result_root(Raw(*claimed->result_root));
      }
      POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty("reveal-" + task_hex, contracts::payload::kReveal, Serialized(tx)));
      if (state == DutyState::kSent) {
        ctx.log().Event("revealing",
                        {{"task_id", task_hex}, {"forced", forced ? "true" : "false"}, {"leaves", std::to_string(tx.leaves_size())}});
      }
      return Status::Ok();
    }
    case proto::TASK_DISPUTED: {
      if (!claimed->disputes) {
        POLNODE_ASSIGN_OR_RETURN(const solver::ImageDataset* data, Data(claimed->document));
        if (!dispute_backend_) {
          POLNODE_ASSIGN_OR_RETURN(dispute_backend_, kernels::MakeBackend(options_.backend, 1));
        }
        DisputeParty party = DaemonParty(ctx, claimed->document, data, dispute_backend_.get());
        if (options_.cheat) {
          POLNODE_ASSIGN_OR_RETURN(party.tamper, ResolveCheat(*options_.cheat, claimed->document, *data));
        }
        claimed->disputes = std::make_unique<DisputeDuty>(std::move(party));
      }
      return claimed->disputes->Poll(ctx, task).status();
    }
    case proto::TASK_SETTLED:
    case proto::TASK_CANCELLED:
      if (!claimed->settled_logged) {
        POLNODE_ASSIGN_OR_RETURN(proto::Account account, ctx.ledger().Account(ctx.pubkey()));
        ctx.log().Event("settled", {{"task_id", task_hex},
                                    {"outcome", proto::TaskOutcome_Name(task.outcome())},
                                    {"balance", std::to_string(account.balance())}});
        ctx.metrics().Add(task.outcome() == proto::OUTCOME_ACCEPTED ? "tasks_paid_total" : "tasks_unpaid_total");
        claimed->settled_logged = true;
      }
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

}  // namespace polnode::node
