#include "polnode/testing/task_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"

namespace polnode::contracts::testing {
namespace {

proto::StakeTx StakeMsg(proto::Role role, std::uint64_t amount) {
  proto::StakeTx msg;
  msg.set_role(role);
  msg.set_amount(amount);
  return msg;
}

}  // namespace

TaskFlow::TaskFlow(const proto::Params& params)
    : chain(params, {Key(1), Key(2), Key(3), Key(4), Key(5), Key(6), Key(7)}, kFunds) {
  std::vector<VerifiedTx> txs;
  txs.push_back(chain.Tx(solver, payload::kStake, StakeMsg(proto::ROLE_SOLVER, params.min_stake_solver())));
  for (const PubKey& verifier : verifiers) {
    txs.push_back(chain.Tx(verifier, payload::kStake, StakeMsg(proto::ROLE_VERIFIER, params.min_stake_verifier())));
  }
  txs.push_back(
      chain.Tx(whistleblower, payload::kStake, StakeMsg(proto::ROLE_WHISTLEBLOWER, params.min_stake_whistleblower())));
  BlockResult result = chain.Block(txs);
  for (const TxResult& r : result.tx_results) EXPECT_EQ(r.code, StatusCode::kOk) << r.log;
  std::vector<Hash256> leaves(Segments() + 1);
  for (std::size_t i = 0; i < leaves.size(); ++i) leaves[i].fill(static_cast<std::uint8_t>(0xA0 + i));
  leaves[0].fill(0xD5);  // TaskSubmission's initial_state_hash
  SetCheckpoints(std::move(leaves));
}

void TaskFlow::Submit(std::uint64_t payment) {
  const std::uint64_t nonce = chain.Nonce(submitter);
  proto::SubmitTaskTx msg = TaskSubmission(payment);
  if (spec) {
    *msg.mutable_spec() = *spec;
    msg.mutable_spec()->set_payment(payment);
  }
  if (seed) msg.set_seed_commitment(HashBytes(SecretCommitment(*seed)));
  TxResult r = chain.Run(submitter, payload::kSubmitTask, msg);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const Hash256 id = TaskIdFor(TaskSpecHash(msg.spec()), Raw(submitter), nonce);
  task_id = std::string(reinterpret_cast<const char*>(id.data()), id.size());
}

TxResult TaskFlow::RevealSeed(const std::string& revealed) {
  proto::SeedRevealTx msg;
  msg.set_task_id(task_id);
  msg.set_seed(revealed);
  return chain.Run(submitter, payload::kRevealSeed, msg);
}

void TaskFlow::Claim() {
  proto::ClaimTaskTx msg;
  msg.set_task_id(task_id);
  const Hash256 commitment = SecretCommitment(secret);
  msg.set_secret_commitment(std::string(reinterpret_cast<const char*>(commitment.data()), commitment.size()));
  TxResult r = chain.Run(solver, payload::kClaimTask, msg);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
}

void TaskFlow::Commit() {
  chain.AdvanceTo(task().claim_height() + chain.params().beacon_delay());
  proto::CommitProofTx msg;
  msg.set_task_id(task_id);
  msg.set_proof_root(proof_root);
  msg.set_proof_uri("http://solver.local/proof");
  if (!checkpoints.empty()) {
    const std::vector<std::uint8_t> initial = consensus::SerializeMerkleProof(*consensus::MerkleTree(checkpoints).Prove(0));
    msg.set_initial_proof(std::string(initial.begin(), initial.end()));
  }
  TxResult r = chain.Run(solver, payload::kCommitProof, msg);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
}

void TaskFlow::AwaitAssignment() { chain.AdvanceTo(task().deadline()); }

void TaskFlow::RunToVerifying(std::uint64_t payment) {
  Submit(payment);
  Claim();
  Commit();
  AwaitAssignment();
  ASSERT_EQ(task().status(), proto::TASK_VERIFYING);
}

std::vector<PubKey> TaskFlow::Assigned() const {
  std::vector<PubKey> assigned;
  const proto::Task current = task();
  for (const proto::VerifierSlot& slot : current.verifiers()) {
    PubKey key;
    std::copy(slot.verifier().begin(), slot.verifier().end(), key.begin());
    assigned.push_back(key);
  }
  return assigned;
}

PubKey TaskFlow::Unassigned() const {
  const std::vector<PubKey> assigned = Assigned();
  for (const PubKey& verifier : verifiers) {
    if (std::find(assigned.begin(), assigned.end(), verifier) == assigned.end()) return verifier;
  }
  ADD_FAILURE() << "every verifier is assigned";
  return Key(0);
}

std::uint64_t TaskFlow::Segments() const {
  const proto::TaskSpec s = spec ? *spec : TaskSubmission(1).spec();
  return s.total_steps() / s.checkpoint_interval();
}

void TaskFlow::SetCheckpoints(std::vector<Hash256> leaves) {
  checkpoints = std::move(leaves);
  const Hash256 root = consensus::MerkleRoot(checkpoints);
  proof_root.assign(reinterpret_cast<const char*>(root.data()), root.size());
}

std::string TaskFlow::RootWithFinal(const std::string& final_hash) const {
  std::vector<Hash256> leaves = checkpoints;
  std::copy(final_hash.begin(), final_hash.end(), leaves.back().begin());
  const Hash256 root = consensus::MerkleRoot(leaves);
  return {reinterpret_cast<const char*>(root.data()), root.size()};
}

namespace {

proto::VerdictTx VerdictMsg(const std::string& task_id, std::uint32_t slot, const PubKey& verifier,
                            proto::Verdict verdict, const std::vector<std::uint64_t>& failed,
                            const std::string& replay_final) {
  proto::VerdictTx msg;
  msg.set_task_id(task_id);
  msg.set_slot(slot);
  msg.set_verdict(verdict);
  msg.set_report_hash(Bytes32(0xCC));
  for (std::uint64_t s : failed) msg.add_failed_segments(s);
  if (verdict != proto::VERDICT_UNAVAILABLE) {
    const Hash256 digest = FinalDigest(Raw(verifier), replay_final);
    msg.set_final_digest(std::string(reinterpret_cast<const char*>(digest.data()), digest.size()));
  }
  return msg;
}

// The first slot of `verifier` in `task` that `wanted` accepts, else its first slot, else 0 (which
// it does not hold: the ledger refuses what names it).
template <typename Wanted>
std::uint32_t SlotFor(const proto::Task& task, const PubKey& verifier, Wanted wanted) {
  std::optional<std::uint32_t> any;
  for (int i = 0; i < task.verifiers_size(); ++i) {
    if (task.verifiers(i).verifier() != Raw(verifier)) continue;
    if (wanted(task.verifiers(i))) return static_cast<std::uint32_t>(i);
    if (!any) any = static_cast<std::uint32_t>(i);
  }
  return any.value_or(0);
}

std::uint32_t OpenSlot(const proto::Task& task, const PubKey& verifier) {
  return SlotFor(task, verifier, [](const proto::VerifierSlot& s) {
    return !s.absent() && s.verdict() == proto::VERDICT_NONE;
  });
}

}  // namespace

TxResult TaskFlow::Verdict(const PubKey& verifier, bool accept) {
  if (!accept) return Reject(verifier, {FinalSegment()});
  return chain.Run(verifier, payload::kVerdict,
                   VerdictMsg(task_id, OpenSlot(task(), verifier), verifier, proto::VERDICT_ACCEPT, {}, replay_final));
}

TxResult TaskFlow::Reject(const PubKey& verifier, const std::vector<std::uint64_t>& failed) {
  return chain.Run(verifier, payload::kVerdict,
                   VerdictMsg(task_id, OpenSlot(task(), verifier), verifier, proto::VERDICT_REJECT, failed, replay_final));
}

TxResult TaskFlow::Unavailable(const PubKey& verifier) {
  return chain.Run(verifier, payload::kVerdict,
                   VerdictMsg(task_id, OpenSlot(task(), verifier), verifier, proto::VERDICT_UNAVAILABLE, {}, ""));
}

TxResult TaskFlow::SlotVerdict(std::uint32_t slot, proto::Verdict verdict, const std::vector<std::uint64_t>& failed) {
  const PubKey verifier = KeyOfSlot(slot);
  return chain.Run(verifier, payload::kVerdict, VerdictMsg(task_id, slot, verifier, verdict, failed, replay_final));
}

TxResult TaskFlow::Dispute(const PubKey& verifier) {
  const std::uint32_t slot = SlotFor(task(), verifier, [](const proto::VerifierSlot& s) {
    return !s.absent() && s.verdict() == proto::VERDICT_REJECT && !s.disputed();
  });
  proto::DisputeTx msg;
  msg.set_task_id(task_id);
  msg.set_verifier(Raw(verifier));
  msg.set_slot(slot);
  return chain.Run(solver, payload::kDispute, msg);
}

PubKey TaskFlow::KeyOfSlot(std::uint32_t slot) const {
  const proto::Task current = task();
  PubKey key{};
  if (slot >= static_cast<std::uint32_t>(current.verifiers_size())) {
    ADD_FAILURE() << "the task has no slot " << slot;
    return key;
  }
  const std::string& raw = current.verifiers(static_cast<int>(slot)).verifier();
  std::copy(raw.begin(), raw.end(), key.begin());
  return key;
}

TxResult TaskFlow::Challenge(const PubKey& challenger) { return ChallengeReaching(challenger, replay_final); }

TxResult TaskFlow::ChallengeReaching(const PubKey& challenger, const std::string& final_state) {
  proto::DisputeTx msg;
  msg.set_task_id(task_id);
  const Hash256 digest = FinalDigest(Raw(challenger), final_state);
  msg.set_final_digest(std::string(reinterpret_cast<const char*>(digest.data()), digest.size()));
  return chain.Run(challenger, payload::kDispute, msg);
}

void TaskFlow::AdvancePastDeadline() { chain.AdvanceTo(task().deadline()); }

TxResult TaskFlow::Reveal(const std::string& result_root) {
  proto::RevealTx msg;
  msg.set_task_id(task_id);
  msg.set_secret(secret);
  msg.set_result_root(result_root);
  return chain.Run(solver, payload::kReveal, msg);
}

TxResult TaskFlow::RevealForced(const std::string& honest_final) {
  EXPECT_FALSE(checkpoints.empty()) << "RevealForced needs SetCheckpoints";
  proto::RevealTx msg;
  msg.set_task_id(task_id);
  msg.set_secret(secret);
  msg.set_result_root(RootWithFinal(honest_final));
  const Hash256& committed = checkpoints.back();
  msg.set_committed_final(std::string(reinterpret_cast<const char*>(committed.data()), committed.size()));
  msg.set_honest_final(honest_final);
  const consensus::MerkleProof path = *consensus::MerkleTree(checkpoints).Prove(checkpoints.size() - 1);
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(path);
  msg.set_final_proof(std::string(bytes.begin(), bytes.end()));
  return chain.Run(solver, payload::kReveal, msg);
}

}  // namespace polnode::contracts::testing
