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
      .EndObject();
}

void WriteSlot(JsonWriter& w, const proto::VerifierSlot& slot) {
  w.BeginObject()
      .Field("verifier", ToHex(slot.verifier()))
      .Field("verdict", proto::Verdict_Name(slot.verdict()))
      .Field("report_hash", ToHex(slot.report_hash()))
      .Field("disputer", ToHex(slot.disputer()))
      .Field("disputer_is_solver", slot.disputer_is_solver())
      .Field("game_result", proto::GameResult_Name(slot.game_result()))
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
      .Field("proof_disproven", task.proof_disproven())
      .Field("solver_slashed", task.solver_slashed())
      .Field("record", ToHex(EncodeRecord(task)));
  w.Key("spec");
  WriteSpec(w, task.spec());
  w.Key("verifiers").BeginArray();
  for (const proto::VerifierSlot& slot : task.verifiers()) WriteSlot(w, slot);
  w.EndArray().EndObject();
}

void WriteStakeFields(JsonWriter& w, const proto::StakeRecord& stake) {
  w.Field("bonded", stake.bonded())
      .Field("locked", stake.locked())
      .Field("free", stake.bonded() >= stake.locked() ? stake.bonded() - stake.locked() : std::uint64_t{0})
      .Field("unbonding", stake.unbonding());
}

}  // namespace polnode::contracts
