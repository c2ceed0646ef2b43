#include "polnode/testing/task_flow.h"

#include <gtest/gtest.h>

#include <algorithm>

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
}

void TaskFlow::Submit(std::uint64_t payment) {
  const std::uint64_t nonce = chain.Nonce(submitter);
  proto::SubmitTaskTx msg = TaskSubmission(payment);
  if (spec) {
    *msg.mutable_spec() = *spec;
    msg.mutable_spec()->set_payment(payment);
  }
  TxResult r = chain.Run(submitter, payload::kSubmitTask, msg);
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  const Hash256 id = TaskIdFor(TaskSpecHash(msg.spec()), Raw(submitter), nonce);
  task_id = std::string(reinterpret_cast<const char*>(id.data()), id.size());
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

TxResult TaskFlow::Verdict(const PubKey& verifier, bool accept) {
  proto::VerdictTx msg;
  msg.set_task_id(task_id);
  msg.set_accept(accept);
  msg.set_report_hash(Bytes32(0xCC));
  return chain.Run(verifier, payload::kVerdict, msg);
}

TxResult TaskFlow::Dispute(const PubKey& disputer, const PubKey& verifier) {
  proto::DisputeTx msg;
  msg.set_task_id(task_id);
  msg.set_verifier(Raw(verifier));
  return chain.Run(disputer, payload::kDispute, msg);
}

void TaskFlow::AdvancePastDeadline() { chain.AdvanceTo(task().deadline()); }

TxResult TaskFlow::Reveal(const std::string& result_root) {
  proto::RevealTx msg;
  msg.set_task_id(task_id);
  msg.set_secret(secret);
  msg.set_result_root(result_root);
  return chain.Run(solver, payload::kReveal, msg);
}

}  // namespace polnode::contracts::testing
