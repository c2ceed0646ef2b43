#include "polnode/testing/task_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "polnode/base/block_grid.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/perturbation.h"

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
  if (UsesTolerantStates()) {
    // The forced seed is drawn: the committed states (and their perturbations) are known now.
    std::vector<Hash256> leaves = checkpoints;
    leaves.resize(Segments() + 1);
    for (std::uint64_t k = 1; k < leaves.size(); ++k) leaves[k] = TolerantStateHash(k, CommittedTolerantState(k));
    SetCheckpoints(std::move(leaves));
  }
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

namespace {

std::string RawHash(const Hash256& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

std::string ProofBytes(const consensus::MerkleTree& tree, std::uint64_t index) {
  Result<consensus::MerkleProof> path = tree.Prove(index);
  EXPECT_TRUE(path.ok()) << "no leaf " << index;
  if (!path.ok()) return {};
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*path);
  return {bytes.begin(), bytes.end()};
}

proto::VerdictTx VerdictMsg(const std::string& task_id, std::uint32_t slot, proto::Verdict verdict,
                            const std::vector<std::uint64_t>& failed, const std::vector<std::string>& digests) {
  proto::VerdictTx msg;
  msg.set_task_id(task_id);
  msg.set_slot(slot);
  msg.set_verdict(verdict);
  msg.set_report_hash(Bytes32(0xCC));
  for (std::uint64_t s : failed) msg.add_failed_segments(s);
  for (const std::string& d : digests) msg.add_segment_digests(d);
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

bool TaskFlow::Forced() const {
  const proto::Task current = task();
  return IsForcedError(secret, current.forced_seed(), current.id(), chain.params().forced_error_rate());
}

std::vector<std::uint64_t> TaskFlow::ForcedCheckpoints() const {
  if (!Forced()) return {};
  const proto::Task current = task();
  return contracts::ForcedCheckpoints(secret, current.forced_seed(), current.id(), Segments());
}

std::vector<Hash256> TaskFlow::ResultLeaves() const {
  std::vector<Hash256> leaves = checkpoints;
  for (std::uint64_t k : ForcedCheckpoints()) {
    if (UsesTolerantStates()) {
      leaves[k] = TolerantStateHash(k, HonestTolerantState(k));
    } else {
      leaves[k].fill(static_cast<std::uint8_t>(honest_fill + k));
    }
  }
  return leaves;
}

TaskFlow::TolerantState TaskFlow::HonestTolerantState(std::uint64_t k) const {
  TolerantState state;
  const std::uint32_t tensors = spec->state_tensor_count();
  for (std::uint32_t t = 0; t < tensors; ++t) state.names.push_back("t" + std::to_string(t));
  state.dims = {100, 70};
  state.first.resize(100 * 70);
  for (std::size_t i = 0; i < state.first.size(); ++i) {
    const std::uint64_t v = (k * 131 + i * 17 + tolerant_variant * 7) % 997;
    state.first[i] = static_cast<float>(v) / 997.0f - 0.5f;
  }
  for (std::uint32_t t = 1; t < tensors; ++t) {
    Hash256& h = state.other_hashes.emplace_back();
    h.fill(static_cast<std::uint8_t>(0xB0 + t));
    h[1] = static_cast<std::uint8_t>(k);
  }
  return state;
}

TaskFlow::TolerantState TaskFlow::CommittedTolerantState(std::uint64_t k) const {
  TolerantState state = HonestTolerantState(k);
  const std::vector<std::uint64_t> forced = ForcedCheckpoints();
  if (!std::binary_search(forced.begin(), forced.end(), k)) return state;
  const proto::Task current = task();
  const float delta = committed_delta.value_or(spec->forced_delta());
  const consensus::Perturbation p = consensus::DrawPerturbation(secret, current.forced_seed(), current.id(), k, state.dims);
  for (const consensus::PerturbedElement& e : p.elements) {
    float& value = state.first[static_cast<std::size_t>(e.flat)];
    value = consensus::PerturbedValue(value, e.sign, delta);
  }
  return state;
}

Hash256 TaskFlow::TolerantStateHash(std::uint64_t k, const TolerantState& state) const {
  std::vector<Hash256> hashes{consensus::TensorHashOf(state.dims, state.first)};
  hashes.insert(hashes.end(), state.other_hashes.begin(), state.other_hashes.end());
  return consensus::StateHashFromTensorHashes(k * spec->checkpoint_interval(), state.names, hashes);
}

std::vector<std::uint64_t> TaskFlow::TolerantReplayIndices(std::uint64_t k) const {
  const std::vector<std::uint64_t> forced = ForcedCheckpoints();
  if (!std::binary_search(forced.begin(), forced.end(), k)) return {};
  const proto::Task current = task();
  return consensus::PerturbedIndices(
      consensus::DrawPerturbation(secret, current.forced_seed(), current.id(), k, HonestTolerantState(k).dims));
}

std::string TaskFlow::ResultRoot() const { return RawHash(consensus::MerkleRoot(ResultLeaves())); }

std::string TaskFlow::ReplayDigest(const PubKey& party, std::uint64_t segment) const {
  if (UsesTolerantStates()) {
    const Hash256 indices = consensus::PerturbedIndicesHash(TolerantReplayIndices(segment + 1));
    return RawHash(SegmentDigest(Raw(party), segment, RawHash(indices)));
  }
  return RawHash(SegmentDigest(Raw(party), segment, RawHash(ResultLeaves()[segment + 1])));
}

std::vector<std::uint64_t> TaskFlow::SlotCovered(std::uint32_t slot) const {
  const proto::Task current = task();
  std::vector<std::uint64_t> covered(current.verifiers(static_cast<int>(slot)).segments().begin(),
                                     current.verifiers(static_cast<int>(slot)).segments().end());
  if (std::find(covered.begin(), covered.end(), FinalSegment()) == covered.end()) covered.push_back(FinalSegment());
  std::sort(covered.begin(), covered.end());
  return covered;
}

std::vector<std::uint64_t> TaskFlow::ChallengeCovered(const PubKey& challenger) const {
  const proto::Task current = task();
  return ChallengeSegments(current.segment_beacon(), Raw(challenger), Segments(),
                           current.spec().segments_per_verification());
}

std::vector<std::uint64_t> TaskFlow::ForcedEnds(const std::vector<std::uint64_t>& covered) const {
  const std::vector<std::uint64_t> forced = ForcedCheckpoints();
  std::vector<std::uint64_t> ends;
  for (std::uint64_t s : covered) {
    if (std::binary_search(forced.begin(), forced.end(), s + 1)) ends.push_back(s);
  }
  return ends;
}

TxResult TaskFlow::Verdict(const PubKey& verifier, bool accept) {
  if (!accept) return Reject(verifier, {FinalSegment()});
  return SlotVerdict(OpenSlot(task(), verifier), proto::VERDICT_ACCEPT);
}

TxResult TaskFlow::Reject(const PubKey& verifier, const std::vector<std::uint64_t>& failed) {
  return SlotVerdict(OpenSlot(task(), verifier), proto::VERDICT_REJECT, failed);
}

TxResult TaskFlow::Unavailable(const PubKey& verifier) {
  return SlotVerdict(OpenSlot(task(), verifier), proto::VERDICT_UNAVAILABLE);
}

TxResult TaskFlow::SlotVerdict(std::uint32_t slot, proto::Verdict verdict, const std::vector<std::uint64_t>& failed) {
  std::vector<std::string> digests;
  const PubKey verifier = KeyOfSlot(slot);
  for (std::uint64_t s : failed) digests.push_back(ReplayDigest(verifier, s));
  return SlotVerdictWith(slot, verdict, failed, digests);
}

TxResult TaskFlow::SlotVerdictWith(std::uint32_t slot, proto::Verdict verdict, const std::vector<std::uint64_t>& failed,
                                   const std::vector<std::string>& digests) {
  return chain.Run(KeyOfSlot(slot), payload::kVerdict, VerdictMsg(task_id, slot, verdict, failed, digests));
}

TxResult TaskFlow::DiligentVerdict(std::uint32_t slot) {
  const std::vector<std::uint64_t> failed = ForcedEnds(SlotCovered(slot));
  return SlotVerdict(slot, failed.empty() ? proto::VERDICT_ACCEPT : proto::VERDICT_REJECT, failed);
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

TxResult TaskFlow::Challenge(const PubKey& challenger) {
  return ChallengeWith(challenger, {FinalSegment()}, {ReplayDigest(challenger, FinalSegment())});
}

TxResult TaskFlow::ChallengeWith(const PubKey& challenger, const std::vector<std::uint64_t>& failed,
                                 const std::vector<std::string>& digests) {
  proto::DisputeTx msg;
  msg.set_task_id(task_id);
  for (std::uint64_t s : failed) msg.add_failed_segments(s);
  for (const std::string& d : digests) msg.add_segment_digests(d);
  return chain.Run(challenger, payload::kDispute, msg);
}

TxResult TaskFlow::DiligentChallenge(const PubKey& challenger) {
  const std::vector<std::uint64_t> failed = ForcedEnds(ChallengeCovered(challenger));
  std::vector<std::string> digests;
  for (std::uint64_t s : failed) digests.push_back(ReplayDigest(challenger, s));
  return ChallengeWith(challenger, failed, digests);
}

void TaskFlow::AdvancePastDeadline() { chain.AdvanceTo(task().deadline()); }

TxResult TaskFlow::Reveal(const std::string& result_root) {
  proto::RevealTx msg;
  msg.set_task_id(task_id);
  msg.set_secret(secret);
  msg.set_result_root(result_root);
  return chain.Run(solver, payload::kReveal, msg);
}

proto::RevealTx TaskFlow::ForcedReveal(const std::vector<std::uint64_t>& shown) const {
  return ForcedRevealOver(ResultLeaves(), shown);
}

proto::RevealTx TaskFlow::ForcedRevealOver(const std::vector<Hash256>& result,
                                           const std::vector<std::uint64_t>& shown) const {
  EXPECT_FALSE(checkpoints.empty()) << "ForcedReveal needs SetCheckpoints";
  const consensus::MerkleTree committed_tree(checkpoints);
  const consensus::MerkleTree result_tree(result);
  proto::RevealTx msg;
  msg.set_task_id(task_id);
  msg.set_secret(secret);
  msg.set_result_root(RawHash(result_tree.root()));
  for (std::uint64_t k : shown) {
    proto::RevealedLeaf* leaf = msg.add_leaves();
    leaf->set_checkpoint(k);
    if (k >= checkpoints.size() || k >= result.size()) continue;  // not in the proof: no hashes
    leaf->set_committed_hash(RawHash(checkpoints[k]));
    leaf->set_committed_proof(ProofBytes(committed_tree, k));
    leaf->set_result_hash(RawHash(result[k]));
    leaf->set_result_proof(ProofBytes(result_tree, k));
  }
  if (!UsesTolerantStates()) return msg;
  const proto::Task current = task();
  const std::vector<std::uint64_t> forced = ForcedCheckpoints();
  for (std::uint64_t k : shown) {
    if (!std::binary_search(forced.begin(), forced.end(), k)) continue;
    const TolerantState committed = CommittedTolerantState(k);
    const TolerantState honest = HonestTolerantState(k);
    const consensus::Perturbation p = consensus::DrawPerturbation(secret, current.forced_seed(), current.id(), k, honest.dims);
    Result<proto::PerturbationProof> proof = contracts::BuildPerturbationProof(
        k, honest.names, honest.dims, committed.first, honest.first, honest.other_hashes, p.block);
    EXPECT_TRUE(proof.ok()) << proof.status().ToString();
    if (proof.ok()) *msg.add_perturbations() = *std::move(proof);
  }
  return msg;
}

proto::RevealTx TaskFlow::ForcedReveal() const { return ForcedReveal(RevealCheckpoints(task())); }

TxResult TaskFlow::RevealForced() { return chain.Run(solver, payload::kReveal, ForcedReveal()); }

}  // namespace polnode::contracts::testing
