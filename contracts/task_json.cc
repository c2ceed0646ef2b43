#include "task_json.h"

#include "keys.h"
#include "records.h"

namespace polnode::contracts {
namespace {

void WriteSpec(JsonWriter& w, const proto::TaskSpec& spec) {
  w.BeginObject()
      .Field("model_spec", spec.model_spec())
      .Field("dataset_hash", ToHex(spec.dataset_hash()))
      .Field("hyperparameters_hash", ToHex(spec.hyperparameters_hash()))
      .Field("total_steps", spec.total_steps())
      .Field("checkpoint_interval", spec.checkpoint_interval())
      .Field("segments_per_verification", spec.segments_per_verification())
      .Field("payment", spec.payment())
      .Field("claim_window", spec.claim_window())
      .Field("training_window", spec.training_window())
      .Field("graph_root", ToHex(spec.graph_root()))
      .Field("batch_root", ToHex(spec.batch_root()))
      .Field("step_leaf_count", spec.step_leaf_count())
      .Field("state_tensor_count", spec.state_tensor_count())
      .Field("tolerant", spec.tolerant())
      .EndObject();
}

void WriteSlot(JsonWriter& w, const proto::VerifierSlot& slot) {
  w.BeginObject()
      .Field("verifier", ToHex(slot.verifier()))
      .Field("verdict", proto::Verdict_Name(slot.verdict()))
      .Field("report_hash", ToHex(slot.report_hash()))
      .Field("lock", slot.lock())
      .Field("absent", slot.absent())
      .Field("published", slot.published())
      .Field("disputed", slot.disputed())
      .Field("vouched", slot.vouched())
      .Field("game_result", proto::GameResult_Name(slot.game_result()));
  w.Key("segments").BeginArray();
  for (std::uint64_t s : slot.segments()) w.Uint(s);
  w.EndArray();
  w.Key("failed_segments").BeginArray();
  for (std::uint64_t s : slot.failed_segments()) w.Uint(s);
  w.EndArray().EndObject();
}

void WriteChallenge(JsonWriter& w, const proto::Challenge& challenge) {
  w.BeginObject()
      .Field("challenger", ToHex(challenge.challenger()))
      .Field("lock", challenge.lock())
      .Field("game_result", proto::GameResult_Name(challenge.game_result()))
      .EndObject();
}

}  // namespace

void WriteTaskJson(JsonWriter& w, const proto::Task& task) {
  w.BeginObject()
      .Field("id", ToHex(task.id()))
      .Field("seq", task.seq())
      .Field("submitter", ToHex(task.submitter()))
      .Field("status", proto::TaskStatus_Name(task.status()))
      .Field("outcome", proto::TaskOutcome_Name(task.outcome()))
      .Field("spec_hash", ToHex(task.spec_hash()))
      .Field("spec_uri", task.spec_uri())
      .Field("escrow", task.escrow())
      .Field("submit_height", task.submit_height())
      .Field("deadline", task.deadline())
      .Field("solver", ToHex(task.solver()))
      .Field("claim_height", task.claim_height())
      .Field("forced_seed_drawn", !task.forced_seed().empty())
      .Field("proof_root", ToHex(task.proof_root()))
      .Field("proof_uri", task.proof_uri())
      .Field("commit_height", task.commit_height())
      .Field("segment_beacon", ToHex(task.segment_beacon()))
      .Field("forced_error", task.forced_error())
      .Field("result_root", ToHex(task.result_root()))
      .Field("settle_height", task.settle_height())
      .Field("standing", proto::ProofStanding_Name(task.standing()))
      .Field("disproven_segment", task.disproven_segment())
      .Field("disprover", ToHex(task.disprover()))
      .Field("solver_lock", task.solver_lock())
      .Field("jackpot_cut", task.jackpot_cut())
      .Field("verification_round", static_cast<std::uint64_t>(task.verification_round()))
      .Field("forced_root", ToHex(task.forced_root()))
      .Field("record", ToHex(EncodeRecord(task)));
  w.Key("publish_required").BeginArray();
  for (std::uint64_t c : task.publish_required()) w.Uint(c);
  w.EndArray();
  w.Key("spec");
  WriteSpec(w, task.spec());
  w.Key("verifiers").BeginArray();
  for (const proto::VerifierSlot& slot : task.verifiers()) WriteSlot(w, slot);
  w.EndArray();
  w.Key("challenges").BeginArray();
  for (const proto::Challenge& challenge : task.challenges()) WriteChallenge(w, challenge);
  w.EndArray().EndObject();
}

void WriteStakeFields(JsonWriter& w, const proto::StakeRecord& stake) {
  w.Field("bonded", stake.bonded())
      .Field("locked", stake.locked())
      .Field("free", stake.bonded() >= stake.locked() ? stake.bonded() - stake.locked() : std::uint64_t{0})
      .Field("unbonding", stake.unbonding());
}

}  // namespace polnode::contracts
