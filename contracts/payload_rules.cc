#include "payload_rules.h"

#include <cmath>
#include <string>
#include <string_view>

#include "dispatch.h"
#include "keys.h"

namespace polnode::contracts {
namespace {

Status Check32(std::string_view bytes, std::string_view field) {
  if (bytes.size() != kIdBytes) return Status::InvalidArgument(std::string(field) + " must be 32 bytes");
  return Status::Ok();
}

// Segment digests (beacon.h SegmentDigest): 32 bytes each.
Status CheckDigests(const google::protobuf::RepeatedPtrField<std::string>& digests) {
  for (const std::string& digest : digests) POLNODE_RETURN_IF_ERROR(Check32(digest, "segment_digests"));
  return Status::Ok();
}

Status CheckPositive(std::uint64_t value, std::string_view field) {
  if (value == 0) return Status::InvalidArgument(std::string(field) + " must be positive");
  return Status::Ok();
}

// 1..kMaxTextBytes printable ASCII characters: safe in logs, JSON and file names.
Status CheckText(std::string_view text, std::string_view field) {
  if (text.empty() || text.size() > kMaxTextBytes) {
    return Status::InvalidArgument(std::string(field) + " must be 1.." + std::to_string(kMaxTextBytes) + " bytes");
  }
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return Status::InvalidArgument(std::string(field) + " must be printable ASCII");
  }
  return Status::Ok();
}

Status CheckRole(proto::Role role) {
  if (role != proto::ROLE_SOLVER && role != proto::ROLE_VERIFIER && role != proto::ROLE_WHISTLEBLOWER) {
    return Status::InvalidArgument("role must be solver, verifier or whistleblower");
  }
  return Status::Ok();
}

Status CheckSpec(const proto::TaskSpec& spec) {
  POLNODE_RETURN_IF_ERROR(CheckText(spec.model_spec(), "model_spec"));
  POLNODE_RETURN_IF_ERROR(Check32(spec.dataset_hash(), "dataset_hash"));
  POLNODE_RETURN_IF_ERROR(Check32(spec.hyperparameters_hash(), "hyperparameters_hash"));
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.total_steps(), "total_steps"));
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.checkpoint_interval(), "checkpoint_interval"));
  if (spec.total_steps() % spec.checkpoint_interval() != 0) {
    return Status::InvalidArgument("total_steps must be a multiple of checkpoint_interval");
  }
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.segments_per_verification(), "segments_per_verification"));
  if (spec.segments_per_verification() > spec.total_steps() / spec.checkpoint_interval()) {
    return Status::InvalidArgument("segments_per_verification exceeds the number of segments");
  }
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.payment(), "payment"));
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.claim_window(), "claim_window"));
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.training_window(), "training_window"));
  POLNODE_RETURN_IF_ERROR(Check32(spec.graph_root(), "graph_root"));
  POLNODE_RETURN_IF_ERROR(Check32(spec.batch_root(), "batch_root"));
  POLNODE_RETURN_IF_ERROR(Check32(spec.initial_state_hash(), "initial_state_hash"));
  POLNODE_RETURN_IF_ERROR(CheckPositive(spec.state_tensor_count(), "state_tensor_count"));
  // The game tree holds the state's tensors, the batch, at least one node output and the state
  // after the step; the bound keeps its depth small (2^24 leaves: a 24-round descent).
  if (spec.step_leaf_count() < std::uint64_t{spec.state_tensor_count()} + 4 ||
      spec.step_leaf_count() > (std::uint64_t{1} << 24)) {
    return Status::InvalidArgument("step_leaf_count must be state_tensor_count + 4 .. 2^24");
  }
  // A tolerant forced round perturbs by forced_delta (consensus/forced_perturbation.h); an exact
  // one flips a bit and has none.
  if (spec.tolerant() ? !(std::isfinite(spec.forced_delta()) && spec.forced_delta() > 0.0f)
                      : spec.forced_delta() != 0.0f || std::signbit(spec.forced_delta())) {
    return Status::InvalidArgument(spec.tolerant() ? "a tolerant task's forced_delta must be finite and positive"
                                                   : "an exact task's forced_delta must be 0");
  }
  return Status::Ok();
}

}  // namespace

Status CheckRules(const proto::TransferTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.to(), "to"));
  return CheckPositive(msg.amount(), "amount");
}

Status CheckRules(const proto::StakeTx& msg) {
  POLNODE_RETURN_IF_ERROR(CheckRole(msg.role()));
  return CheckPositive(msg.amount(), "amount");
}

Status CheckRules(const proto::UnstakeTx& msg) {
  POLNODE_RETURN_IF_ERROR(CheckRole(msg.role()));
  return CheckPositive(msg.amount(), "amount");
}

Status CheckRules(const proto::SubmitTaskTx& msg) {
  if (!msg.has_spec()) return Status::InvalidArgument("spec is missing");
  POLNODE_RETURN_IF_ERROR(CheckSpec(msg.spec()));
  if (!msg.seed_commitment().empty()) POLNODE_RETURN_IF_ERROR(Check32(msg.seed_commitment(), "seed_commitment"));
  return CheckText(msg.spec_uri(), "spec_uri");
}

Status CheckRules(const proto::SeedRevealTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  return Check32(msg.seed(), "seed");
}

Status CheckRules(const proto::CancelTaskTx& msg) { return Check32(msg.task_id(), "task_id"); }

Status CheckRules(const proto::ClaimTaskTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  return Check32(msg.secret_commitment(), "secret_commitment");
}

Status CheckRules(const proto::CommitProofTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  POLNODE_RETURN_IF_ERROR(Check32(msg.proof_root(), "proof_root"));
  return CheckText(msg.proof_uri(), "proof_uri");
}

Status CheckRules(const proto::VerdictTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  POLNODE_RETURN_IF_ERROR(CheckDigests(msg.segment_digests()));
  return Check32(msg.report_hash(), "report_hash");
}

Status CheckRules(const proto::DisputeTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  // A whistleblower's challenge names the segments its replay found wrong (which of its covered
  // segments the ledger checks, verification.h); the solver's dispute of a reject names the
  // verdict and nothing else.
  if (msg.verifier().empty()) {
    if (msg.failed_segments().empty()) return Status::InvalidArgument("a challenge names at least one failed segment");
    for (int i = 1; i < msg.failed_segments_size(); ++i) {
      if (msg.failed_segments(i) <= msg.failed_segments(i - 1)) {
        return Status::InvalidArgument("failed_segments must be strictly ascending");
      }
    }
    return CheckDigests(msg.segment_digests());
  }
  if (!msg.failed_segments().empty() || !msg.segment_digests().empty()) {
    return Status::InvalidArgument("the solver's dispute names no segments and no digests");
  }
  return Check32(msg.verifier(), "verifier");
}

Status CheckRules(const proto::PublishTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  if (msg.part_case() == proto::PublishTx::PART_NOT_SET) return Status::InvalidArgument("a header or a chunk is missing");
  return Status::Ok();
}

// Hashes and proofs inside a move are checked against the game by the move's executor; here only
// what needs no state: which game, and that the move is not empty.
Status CheckRules(const proto::DisputeMoveTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  POLNODE_RETURN_IF_ERROR(Check32(msg.challenger(), "challenger"));
  if (msg.move_case() == proto::DisputeMoveTx::MOVE_NOT_SET) return Status::InvalidArgument("move is missing");
  return Status::Ok();
}

Status CheckRules(const proto::RevealTx& msg) {
  POLNODE_RETURN_IF_ERROR(Check32(msg.task_id(), "task_id"));
  POLNODE_RETURN_IF_ERROR(Check32(msg.secret(), "secret"));
  POLNODE_RETURN_IF_ERROR(Check32(msg.result_root(), "result_root"));
  // The leaves of a forced round: ascending checkpoints, 32-byte hashes. Which checkpoints, and
  // the proofs, are checked against the task (settlement.h).
  for (int i = 0; i < msg.leaves_size(); ++i) {
    const proto::RevealedLeaf& leaf = msg.leaves(i);
    if (i > 0 && leaf.checkpoint() <= msg.leaves(i - 1).checkpoint()) {
      return Status::InvalidArgument("leaves must be in strictly ascending checkpoint order");
    }
    POLNODE_RETURN_IF_ERROR(Check32(leaf.committed_hash(), "leaves.committed_hash"));
    POLNODE_RETURN_IF_ERROR(Check32(leaf.result_hash(), "leaves.result_hash"));
  }
  for (int i = 0; i < msg.perturbations_size(); ++i) {
    const proto::PerturbationProof& p = msg.perturbations(i);
    if (i > 0 && p.checkpoint() <= msg.perturbations(i - 1).checkpoint()) {
      return Status::InvalidArgument("perturbations must be in strictly ascending checkpoint order");
    }
    for (const std::string& h : p.tensor_hashes()) POLNODE_RETURN_IF_ERROR(Check32(h, "perturbations.tensor_hashes"));
    for (const std::string& h : p.block_siblings()) POLNODE_RETURN_IF_ERROR(Check32(h, "perturbations.block_siblings"));
  }
  return Status::Ok();
}

}  // namespace polnode::contracts
