// Target task_payload: arbitrary bytes as the payload of one task transaction (the first byte picks
// its type: task/submit, claim, commit, verdict, dispute, reveal, publish or seed), checked by
// mempool admission (Application::CheckTx) and executed in a block (FinalizeBlock) on a chain whose
// only task waits in TASK_PUBLISHING for two checkpoints after an unavailable verdict. The chain
// is built once with real transactions through the real contracts.
// Properties: never crashes; CheckTx fails only with the documented codes; FinalizeBlock never
// fails for a transaction's sake (a bad payload is that transaction's failed result), and a
// failed transaction leaves the task record as it was.
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/queries.h"
#include "polnode/contracts/record_encoding.h"
#include "polnode/contracts/state_store.h"

namespace polnode::fuzz {
namespace {

namespace payload = contracts::payload;
using consensus::Hash256;

constexpr std::uint64_t kSteps = 8, kInterval = 2, kCheckpoints = kSteps / kInterval + 1;
const std::vector<std::string> kNames = {"w", "b"};
const std::vector<std::int64_t> kDims = {2};

contracts::PubKey Key(char c) {
  contracts::PubKey k{};
  k.fill(static_cast<std::uint8_t>(c));
  return k;
}
// Raw bytes of a key or a hash (both are 32-byte arrays).
std::string Raw(const contracts::PubKey& k) { return std::string(k.begin(), k.end()); }

const contracts::PubKey kSubmitter = Key('\x01'), kSolver = Key('\x02'), kVerifier = Key('\x03'),
                        kWhistleblower = Key('\x04');

// Checkpoint i of the proof: two tensors whose elements are i, so that a publication's chunks can
// hash to the header's tensor hashes.
std::vector<float> Elements(std::uint64_t checkpoint) { return {static_cast<float>(checkpoint), static_cast<float>(checkpoint)}; }

Hash256 CheckpointHash(std::uint64_t checkpoint) {
  const std::vector<float> values = Elements(checkpoint);
  const std::vector<Hash256> tensors(kNames.size(), consensus::TensorHashOf(kDims, values));
  return consensus::StateHashFromTensorHashes(checkpoint * kInterval, kNames, tensors);
}

consensus::MerkleTree ProofTree() {
  std::vector<Hash256> leaves;
  for (std::uint64_t i = 0; i < kCheckpoints; ++i) leaves.push_back(CheckpointHash(i));
  return consensus::MerkleTree(leaves);
}

std::string ProofOf(std::uint64_t checkpoint) {
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*ProofTree().Prove(checkpoint));
  return std::string(bytes.begin(), bytes.end());
}

proto::TaskSpec Spec() {
  proto::TaskSpec spec;
  spec.set_model_spec("fuzz");
  spec.set_dataset_hash(std::string(32, '\x11'));
  spec.set_hyperparameters_hash(std::string(32, '\x22'));
  spec.set_total_steps(kSteps);
  spec.set_checkpoint_interval(kInterval);
  spec.set_segments_per_verification(1);
  spec.set_payment(10'000);
  spec.set_claim_window(100);
  spec.set_training_window(100);
  spec.set_graph_root(std::string(32, '\x33'));
  spec.set_batch_root(std::string(32, '\x44'));
  spec.set_step_leaf_count(8);
  spec.set_state_tensor_count(static_cast<std::uint32_t>(kNames.size()));
  spec.set_initial_state_hash(Raw(CheckpointHash(0)));
  return spec;
}

// The chain: its committed state, the next height, every signer's next nonce and the task's id.
struct Chain {
  contracts::MemoryStateStore state;
  contracts::Application app;
  std::uint64_t height = 1;
  std::array<std::uint64_t, 5> nonces{};
  std::string task_id;

  contracts::VerifiedTx Tx(const contracts::PubKey& signer, std::string_view type, std::string bytes) {
    contracts::VerifiedTx tx;
    tx.signer = signer;
    tx.nonce = nonces[signer[0]];
    tx.chain_id = "fuzz";
    tx.payload_type = std::string(type);
    tx.payload = std::move(bytes);
    tx.tx_hash = consensus::Sha256(tx.payload_type + tx.payload + std::to_string(tx.nonce));
    tx.wire_size = tx.payload.size() + 128;
    return tx;
  }

  contracts::BlockContext Context() const {
    contracts::BlockContext context;
    context.height = height;
    context.time_unix_ms = 1'700'000'000'000 + static_cast<std::int64_t>(height) * 1000;
    context.randomness = consensus::Sha256("fuzz block " + std::to_string(height));
    context.proposer = Key('\x09');
    return context;
  }

  // Executes one block of `txs` (every one must succeed) and commits it.
  void Block(std::vector<contracts::VerifiedTx> txs) {
    Result<contracts::BlockResult> result = app.FinalizeBlock(Context(), txs, state);
    if (!result.ok() || !app.Commit().ok()) std::abort();
    for (std::size_t i = 0; i < txs.size(); ++i) {
      if (result->tx_results[i].code != StatusCode::kOk) std::abort();
      ++nonces[txs[i].signer[0]];
    }
    ++height;
  }

  // The task's record as the contracts store it ("" when it cannot be read).
  std::string RecordIn(const contracts::StateStore& store) const {
    Result<proto::Task> task = contracts::QueryTask(store, task_id);
    return task.ok() ? contracts::EncodeRecord(*task) : "";
  }
};

Chain& Shared() {
  static Chain* chain = [] {
    auto* c = new Chain();
    proto::GenesisSpec genesis;
    genesis.set_chain_id("fuzz");
    proto::Params params = contracts::DefaultParams();
    params.set_verifiers_per_task(1);
    params.set_forced_error_rate(0);
    *genesis.mutable_params() = params;
    for (const contracts::PubKey& k : {kSubmitter, kSolver, kVerifier, kWhistleblower}) {
      proto::Allocation* a = genesis.add_allocations();
      a->set_pubkey(Raw(k));
      a->set_amount(1'000'000);
    }
    if (!c->app.InitChain(genesis, c->state).ok()) std::abort();
    proto::StakeTx solver_stake, verifier_stake, whistleblower_stake;
    solver_stake.set_role(proto::ROLE_SOLVER);
    solver_stake.set_amount(100'000);
    verifier_stake.set_role(proto::ROLE_VERIFIER);
    verifier_stake.set_amount(100'000);
    whistleblower_stake.set_role(proto::ROLE_WHISTLEBLOWER);
    whistleblower_stake.set_amount(100'000);
    proto::SubmitTaskTx submit;
    *submit.mutable_spec() = Spec();
    submit.set_spec_uri("http://127.0.0.1:1/spec");
    const std::uint64_t submit_nonce = c->nonces[kSubmitter[0]];
    c->Block({c->Tx(kSolver, payload::kStake, solver_stake.SerializeAsString()),
              c->Tx(kVerifier, payload::kStake, verifier_stake.SerializeAsString()),
              c->Tx(kWhistleblower, payload::kStake, whistleblower_stake.SerializeAsString()),
              c->Tx(kSubmitter, payload::kSubmitTask, submit.SerializeAsString())});
    c->task_id = Raw(contracts::TaskIdFor(contracts::TaskSpecHash(Spec()), Raw(kSubmitter), submit_nonce));
    proto::ClaimTaskTx claim;
    claim.set_task_id(c->task_id);
    claim.set_secret_commitment(Raw(contracts::SecretCommitment(std::string(32, 's'))));
    c->Block({c->Tx(kSolver, payload::kClaimTask, claim.SerializeAsString())});
    for (int i = 0; i < 4; ++i) c->Block({});  // the forced-error seed is drawn
    proto::CommitProofTx commit;
    commit.set_task_id(c->task_id);
    commit.set_proof_root(Raw(ProofTree().root()));
    commit.set_proof_uri("http://127.0.0.1:1/proof");
    commit.set_initial_proof(ProofOf(0));
    c->Block({c->Tx(kSolver, payload::kCommitProof, commit.SerializeAsString())});
    for (int i = 0; i < 4; ++i) c->Block({});  // the segment beacon assigns the verifier
    proto::VerdictTx unavailable;
    unavailable.set_task_id(c->task_id);
    unavailable.set_verdict(proto::VERDICT_UNAVAILABLE);
    unavailable.set_report_hash(std::string(32, '\x55'));
    c->Block({c->Tx(kVerifier, payload::kVerdict, unavailable.SerializeAsString())});
    Result<proto::Task> task = contracts::QueryTask(c->state, c->task_id);
    if (!task.ok() || task->status() != proto::TASK_PUBLISHING) std::abort();
    return c;
  }();
  return *chain;
}

struct Kind {
  std::string_view type;
  contracts::PubKey signer;
};
const std::array<Kind, 8> kKinds = {{{payload::kPublish, kSolver},
                                     {payload::kRevealSeed, kSubmitter},
                                     {payload::kVerdict, kVerifier},
                                     {payload::kDispute, kWhistleblower},
                                     {payload::kReveal, kSolver},
                                     {payload::kCommitProof, kSolver},
                                     {payload::kSubmitTask, kSubmitter},
                                     {payload::kClaimTask, kWhistleblower}}};

void Run(FuzzInput input) {
  if (input.empty()) return;
  Chain& chain = Shared();
  const Kind& kind = kKinds[input[0] % kKinds.size()];
  const contracts::VerifiedTx tx =
      chain.Tx(kind.signer, kind.type, std::string(reinterpret_cast<const char*>(input.data()) + 1, input.size() - 1));
  const Status admitted = chain.app.CheckTx(tx, chain.state);
  const StatusCode code = admitted.code();
  POLNODE_FUZZ_CHECK(admitted.ok() || code == StatusCode::kInvalidArgument || code == StatusCode::kResourceExhausted ||
                         code == StatusCode::kFailedPrecondition,
                     "CheckTx refused a payload with an undocumented status code");

  contracts::OverlayStateStore overlay(chain.state);
  contracts::Application app;
  Result<contracts::BlockResult> result = app.FinalizeBlock(chain.Context(), std::vector<contracts::VerifiedTx>{tx}, overlay);
  POLNODE_FUZZ_CHECK(result.ok(), "FinalizeBlock failed as a whole because of one transaction");
  POLNODE_FUZZ_CHECK(result->tx_results.size() == 1, "FinalizeBlock lost the transaction's result");
  if (result->tx_results[0].code != StatusCode::kOk) {
    const std::string before = chain.RecordIn(chain.state);
    POLNODE_FUZZ_CHECK(!before.empty() && before == chain.RecordIn(overlay), "a failed transaction changed the task");
  }
}

std::vector<std::uint8_t> Input(std::uint8_t selector, const google::protobuf::MessageLite& m) {
  const std::string s = m.SerializeAsString();
  std::vector<std::uint8_t> bytes = {selector};
  bytes.insert(bytes.end(), s.begin(), s.end());
  return bytes;
}

std::vector<Seed> Seeds() {
  const std::string task_id = Shared().task_id;
  const std::uint64_t final_checkpoint = kCheckpoints - 1;
  proto::PublishTx header;
  header.set_task_id(task_id);
  header.set_checkpoint(final_checkpoint);
  const std::vector<float> values = Elements(final_checkpoint);
  for (const std::string& name : kNames) {
    proto::PublishedTensorHeader* t = header.mutable_header()->add_tensors();
    t->set_name(name);
    for (std::int64_t d : kDims) t->add_dims(d);
    t->set_hash(Raw(consensus::TensorHashOf(kDims, values)));
  }
  header.mutable_header()->set_proof(ProofOf(final_checkpoint));
  proto::PublishTx chunk;
  chunk.set_task_id(task_id);
  chunk.set_checkpoint(final_checkpoint);
  chunk.mutable_chunk()->set_tensor(0);
  chunk.mutable_chunk()->set_chunk(0);
  chunk.mutable_chunk()->set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  proto::SeedRevealTx seed;
  seed.set_task_id(task_id);
  seed.set_seed(std::string(32, 'z'));
  proto::DisputeTx challenge;
  challenge.set_task_id(task_id);
  // A whistleblower names the final segment (always among its covered ones) with a digest of the
  // state its replay reached there.
  challenge.add_failed_segments(kSteps / kInterval - 1);
  challenge.add_segment_digests(std::string(32, '\x44'));
  proto::VerdictTx verdict;
  verdict.set_task_id(task_id);
  verdict.set_verdict(proto::VERDICT_REJECT);
  verdict.add_failed_segments(kSteps / kInterval - 1);
  verdict.add_segment_digests(std::string(32, '\x66'));
  verdict.set_report_hash(std::string(32, '\x55'));
  // A forced round's reveal: the final checkpoint in the committed proof and a result proof.
  proto::RevealTx reveal;
  reveal.set_task_id(task_id);
  reveal.set_secret(std::string(32, 's'));
  reveal.set_result_root(Raw(ProofTree().root()));
  proto::RevealedLeaf* leaf = reveal.add_leaves();
  leaf->set_checkpoint(final_checkpoint);
  leaf->set_committed_hash(Raw(CheckpointHash(final_checkpoint)));
  leaf->set_committed_proof(ProofOf(final_checkpoint));
  leaf->set_result_hash(std::string(32, '\x77'));
  leaf->set_result_proof(ProofOf(final_checkpoint));
  const std::vector<std::uint8_t> header_bytes = Input(0, header);
  return {
      {"publish-header", header_bytes},
      {"publish-chunk", Input(0, chunk)},
      {"publish-truncated", {header_bytes.begin(), header_bytes.begin() + static_cast<long>(header_bytes.size() / 2)}},
      {"seed-reveal", Input(1, seed)},
      {"verdict-reject", Input(2, verdict)},
      {"challenge", Input(3, challenge)},
      {"reveal-forced", Input(4, reveal)},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(task_payload, Run, Seeds);

}  // namespace polnode::fuzz
