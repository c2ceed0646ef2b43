// Data availability is the solver's burden (publication.h): unavailable verdicts stand unless the
// solver publishes the checkpoints they need on the ledger in time.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <span>

#include "checkpoint_fixture.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/queries.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

// A task of 4 segments (k = 10) whose state is 2 tensors of `elements` floats.
proto::TaskSpec SmallSpec() {
  proto::TaskSpec spec = TaskSubmission(10'000).spec();
  spec.set_total_steps(40);
  spec.set_checkpoint_interval(10);
  spec.set_segments_per_verification(1);
  spec.set_state_tensor_count(2);
  spec.set_step_leaf_count(8);
  return spec;
}

struct PublishingFlow {
  explicit PublishingFlow(std::int64_t elements = 5) : fixture(4, 10, 2, elements) {
    flow.spec = SmallSpec();
    flow.spec->set_initial_state_hash(HashBytes(fixture.leaves()[0]));
    flow.SetCheckpoints(fixture.leaves());
  }
  std::set<std::uint64_t> Needed(const proto::VerifierSlot& slot) const {
    std::set<std::uint64_t> needed = {3, 4};
    for (std::uint64_t s : slot.segments()) needed.insert({s, s + 1});
    return needed;
  }
  // To verification; slot 0 says unavailable and slot 1 accepts: the task is publishing.
  void ToPublishing() {
    flow.RunToVerifying(10'000);
    const std::vector<PubKey> assigned = flow.Assigned();
    ASSERT_EQ(flow.Unavailable(assigned[0]).code, StatusCode::kOk);
    ASSERT_EQ(flow.Verdict(assigned[1], true).code, StatusCode::kOk);
  }
  // Every piece of the checkpoints, in one block (the publication window is short in tests).
  void PublishAll(const std::set<std::uint64_t>& checkpoints) {
    std::vector<VerifiedTx> txs;
    for (std::uint64_t c : checkpoints) {
      txs.push_back(flow.chain.Tx(flow.solver, payload::kPublish, fixture.Header(flow.task_id, c)));
      for (const proto::PublishTx& chunk : fixture.Chunks(flow.task_id, c)) {
        txs.push_back(flow.chain.Tx(flow.solver, payload::kPublish, chunk));
      }
    }
    for (const TxResult& r : flow.chain.Block(txs).tx_results) ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  }
  CheckpointFixture fixture;
  TaskFlow flow;
};

// Review finding 1: a solver that committed a root nobody can open (a random root, garbage behind
// its URL, or a server that refuses connections) was paid, and honest verifiers were slashed. Now
// the verifiers say so; the solver cannot publish checkpoints of a root it cannot open; it is not
// paid and its lock goes to those verifiers.
TEST(Publication, AWithholdingSolverIsNeverPaidAndTheVerifiersGain) {
  TaskFlow flow;
  // A root nobody can open: checkpoint 0 is the task's (the ledger checks that much at the
  // commitment), every other leaf is made up.
  std::vector<Hash256> leaves(11);
  for (std::size_t i = 0; i < leaves.size(); ++i) leaves[i] = consensus::Sha256("made up " + std::to_string(i));
  leaves[0].fill(0xD5);
  flow.SetCheckpoints(leaves);
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t v0 = flow.chain.Balance(assigned[0]);
  const std::uint64_t v1 = flow.chain.Balance(assigned[1]);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  ASSERT_EQ(flow.Unavailable(assigned[0]).code, StatusCode::kOk);
  ASSERT_EQ(flow.Unavailable(assigned[1]).code, StatusCode::kOk);
  proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_PUBLISHING);
  EXPECT_GE(task.publish_required_size(), 2);
  // Whatever it posts, a random root has no checkpoint to show.
  CheckpointFixture unrelated(10, 100, 8, 3);
  TxResult r = flow.chain.Run(flow.solver, payload::kPublish, unrelated.Header(flow.task_id, task.publish_required(0)));
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument) << r.log;
  flow.AdvancePastDeadline();
  task = flow.task();
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_UNAVAILABLE);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1);  // its failed publication's fee
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 0u);
  EXPECT_EQ(flow.chain.Balance(assigned[0]), v0 - 1 + 490 + 500);
  EXPECT_EQ(flow.chain.Balance(assigned[1]), v1 - 1 + 490 + 500);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(), 0u);
  EXPECT_EQ(flow.chain.Balance(flow.submitter), submitter + 8'820);
}

TEST(Publication, AnAvailableSolverPublishesAndTheVerifierReplaysFromTheLedger) {
  PublishingFlow p;
  TaskFlow& flow = p.flow;
  ASSERT_NO_FATAL_FAILURE(p.ToPublishing());
  const std::vector<PubKey> assigned = flow.Assigned();
  proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_PUBLISHING);
  const std::set<std::uint64_t> needed = p.Needed(task.verifiers(0));
  EXPECT_EQ(std::set<std::uint64_t>(task.publish_required().begin(), task.publish_required().end()), needed);
  p.PublishAll(needed);
  task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_VERIFYING);
  EXPECT_TRUE(task.verifiers(0).published());
  EXPECT_EQ(task.verifiers(0).verdict(), proto::VERDICT_NONE);
  EXPECT_EQ(task.verifiers(1).verdict(), proto::VERDICT_ACCEPT);  // kept
  // The data is on the ledger now: "unavailable" is no longer an answer.
  EXPECT_EQ(flow.Unavailable(assigned[0]).code, StatusCode::kFailedPrecondition);
  ASSERT_EQ(flow.Verdict(assigned[0], true).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().status(), proto::TASK_CHALLENGE);
  flow.AdvancePastDeadline();
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  EXPECT_EQ(flow.task().outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(flow.chain.Balance(flow.solver), solver - 1 + 8'820);
  // Issue 15 finding 6: state never shrank. Published data stays for auditors during the audit
  // window, then goes.
  const auto published_keys = [&flow] {
    int count = 0;
    EXPECT_TRUE(flow.chain.state().Scan("pub/", [&count](std::string_view, std::string_view) { return ++count > 0; }).ok());
    return count;
  };
  EXPECT_GT(published_keys(), 0);
  flow.chain.AdvanceTo(flow.task().settle_height() + flow.chain.params().audit_window());
  EXPECT_EQ(published_keys(), 0);
  EXPECT_TRUE(flow.task().pruned());
}

// Issue 14 finding 1: a solver that publishes and then stays down must not keep its challenger from
// opening the game. The ledger keeps each published checkpoint's state hash and the Merkle proof it
// checked; those alone open the game, and the solver, who owes the next move and has no server
// answering for it, forfeits: the proof is unproven, the solver is not paid and loses its lock,
// the escrow goes back to the submitter, and the challenger gains.
TEST(Publication, ThePublishedProofsOpenAGameWithOnlyLedgerData) {
  PublishingFlow p;
  TaskFlow& flow = p.flow;
  ASSERT_NO_FATAL_FAILURE(p.ToPublishing());
  const std::vector<PubKey> assigned = flow.Assigned();
  const std::set<std::uint64_t> needed = p.Needed(flow.task().verifiers(0));
  p.PublishAll(needed);
  Result<Hash256> root = [&]() -> Result<Hash256> {
    Hash256 h{};
    if (flow.proof_root.size() != h.size()) return Status::Internal("proof_root is not 32 bytes");
    std::copy(flow.proof_root.begin(), flow.proof_root.end(), h.begin());
    return h;
  }();
  ASSERT_TRUE(root.ok());
  for (std::uint64_t c : needed) {
    SCOPED_TRACE(c);
    Result<proto::PublishedCheckpoint> published = QueryPublished(flow.chain.state(), flow.task_id, c);
    ASSERT_TRUE(published.ok()) << published.status().ToString();
    EXPECT_EQ(published->state_hash(), HashBytes(p.fixture.leaves()[c]));
    const std::string& raw = published->proof();
    Result<consensus::MerkleProof> proof =
        consensus::ParseMerkleProof(std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
    ASSERT_TRUE(proof.ok()) << proof.status().ToString();
    EXPECT_EQ(proof->leaf_index, c);
    EXPECT_TRUE(consensus::VerifyMerkleProof(*root, p.fixture.leaves()[c], *proof).ok());
  }

  // The verifier replays from the ledger and rejects segment s; the solver disputes the reject.
  const std::uint64_t s = flow.task().verifiers(0).segments(0);
  ASSERT_EQ(flow.Reject(assigned[0], {s}).code, StatusCode::kOk);
  ASSERT_EQ(flow.Dispute(assigned[0]).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  const std::uint64_t solver = flow.chain.Balance(flow.solver);
  const std::uint64_t submitter = flow.chain.Balance(flow.submitter);
  const std::uint64_t challenger = flow.chain.Balance(assigned[0]);
  const std::uint64_t challenger_locked = flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked();
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  ASSERT_EQ(flow.task().status(), proto::TASK_DISPUTED);

  // The opening move, from the ledger's records only.
  Result<proto::PublishedCheckpoint> start = QueryPublished(flow.chain.state(), flow.task_id, s);
  Result<proto::PublishedCheckpoint> end = QueryPublished(flow.chain.state(), flow.task_id, s + 1);
  ASSERT_TRUE(start.ok() && end.ok());
  Result<TaskGames> games = QueryGames(flow.chain.state(), flow.task_id);
  ASSERT_TRUE(games.ok());
  ASSERT_EQ(games->games.size(), 1u);
  proto::DisputeMoveTx move;
  move.set_task_id(flow.task_id);
  move.set_challenger(Raw(assigned[0]));
  move.set_round(games->games[0].round());
  proto::OpenMove* open = move.mutable_open();
  open->set_segment(s);
  open->set_start_hash(start->state_hash());
  open->set_start_proof(start->proof());
  open->set_end_hash(end->state_hash());
  open->set_end_proof(end->proof());
  open->set_claimed_end_hash(HashBytes(consensus::Sha256("the challenger's replay")));
  const TxResult opened = flow.chain.Run(assigned[0], payload::kDisputeMove, move);
  ASSERT_EQ(opened.code, StatusCode::kOk) << opened.log;
  games = QueryGames(flow.chain.state(), flow.task_id);
  ASSERT_TRUE(games.ok());
  EXPECT_EQ(games->games[0].phase(), proto::GAME_STEPS);
  EXPECT_EQ(games->games[0].segment(), s);

  // The challenger posts its step hash (from its own replay, here made up); the solver's server is
  // down and it never answers: it forfeits alone.
  proto::DisputeMoveTx step;
  step.set_task_id(flow.task_id);
  step.set_challenger(Raw(assigned[0]));
  step.set_round(games->games[0].round());
  step.mutable_step()->set_state_hash(HashBytes(consensus::Sha256("the challenger's midpoint")));
  const TxResult stepped = flow.chain.Run(assigned[0], payload::kDisputeMove, step);
  ASSERT_EQ(stepped.code, StatusCode::kOk) << stepped.log;
  flow.chain.AdvanceTo(flow.chain.height() + flow.chain.params().dispute_move_window() + 1);
  const proto::Task task = flow.task();
  ASSERT_EQ(task.status(), proto::TASK_SETTLED);
  games = QueryGames(flow.chain.state(), flow.task_id);
  ASSERT_TRUE(games.ok());
  EXPECT_TRUE(games->games[0].forfeit());
  EXPECT_EQ(games->games[0].winner(), Raw(assigned[0]));
  EXPECT_NE(task.standing(), proto::PROOF_UPHELD);
  EXPECT_EQ(task.outcome(), proto::OUTCOME_REJECTED);
  EXPECT_LE(flow.chain.Balance(flow.solver), solver);  // not paid
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), 0u);
  EXPECT_GT(flow.chain.Balance(flow.submitter), submitter);  // escrow back
  EXPECT_GE(flow.chain.Balance(assigned[0]) + flow.chain.Stake(proto::ROLE_VERIFIER, assigned[0]).locked(),
            challenger + challenger_locked);

  // After the audit window the proofs go with the rest of the published data.
  flow.chain.AdvanceTo(task.settle_height() + flow.chain.params().audit_window());
  EXPECT_TRUE(flow.task().pruned());
  for (std::uint64_t c : needed) {
    EXPECT_EQ(QueryPublished(flow.chain.state(), flow.task_id, c).status().code(), StatusCode::kNotFound);
  }
  int left = 0;
  EXPECT_TRUE(flow.chain.state().Scan("pub/", [&left](std::string_view, std::string_view) { return ++left > 0; }).ok());
  EXPECT_EQ(left, 0);
}

TEST(Publication, BadPublicationsAreRefusedAndChangeNothing) {
  PublishingFlow p;
  TaskFlow& flow = p.flow;
  flow.RunToVerifying(10'000);
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(flow.Unavailable(assigned[0]).code, StatusCode::kOk);
  ASSERT_EQ(flow.Unavailable(assigned[1]).code, StatusCode::kOk);
  const proto::Task task = flow.task();
  std::uint64_t not_required = 0;
  while (std::find(task.publish_required().begin(), task.publish_required().end(), not_required) !=
         task.publish_required().end()) {
    ++not_required;
  }
  const std::uint64_t c = task.publish_required(0);
  const std::vector<proto::PublishTx> chunks = p.fixture.Chunks(flow.task_id, c);
  ASSERT_EQ(chunks.size(), 2u);
  // All in one block: the publication window is short.
  std::vector<VerifiedTx> txs;
  std::vector<StatusCode> want;
  auto expect = [&](const PubKey& signer, const proto::PublishTx& msg, StatusCode code) {
    txs.push_back(flow.chain.Tx(signer, payload::kPublish, msg));
    want.push_back(code);
  };
  expect(flow.outsider, p.fixture.Header(flow.task_id, c), StatusCode::kPermissionDenied);
  expect(flow.solver, chunks[0], StatusCode::kFailedPrecondition);  // header first
  if (not_required <= 4) expect(flow.solver, p.fixture.Header(flow.task_id, not_required), StatusCode::kFailedPrecondition);
  proto::PublishTx wrong_checkpoint = p.fixture.Header(flow.task_id, c == 0 ? 1 : 0);
  wrong_checkpoint.set_checkpoint(c);
  expect(flow.solver, wrong_checkpoint, StatusCode::kInvalidArgument);  // proves another leaf
  expect(flow.solver, p.fixture.Header(flow.task_id, c), StatusCode::kOk);
  expect(flow.solver, p.fixture.Header(flow.task_id, c), StatusCode::kAlreadyExists);
  proto::PublishTx short_chunk = chunks[0];
  short_chunk.mutable_chunk()->mutable_data()->pop_back();
  expect(flow.solver, short_chunk, StatusCode::kInvalidArgument);
  proto::PublishTx no_tensor = chunks[0];
  no_tensor.mutable_chunk()->set_tensor(7);
  expect(flow.solver, no_tensor, StatusCode::kInvalidArgument);
  // A chunk whose tensor then does not hash to its header: refused, and the right one still lands.
  proto::PublishTx corrupt = chunks[0];
  (*corrupt.mutable_chunk()->mutable_data())[0] ^= 1;
  expect(flow.solver, corrupt, StatusCode::kInvalidArgument);
  expect(flow.solver, chunks[0], StatusCode::kOk);
  expect(flow.solver, chunks[0], StatusCode::kAlreadyExists);  // verified: immutable
  expect(flow.solver, chunks[1], StatusCode::kOk);
  const BlockResult result = flow.chain.Block(txs);
  ASSERT_EQ(result.tx_results.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(result.tx_results[i].code, want[i]) << "tx " << i << ": " << result.tx_results[i].log;
  }
  const proto::Task after = flow.task();
  EXPECT_EQ(after.publish_required_size(), task.publish_required_size() - 1);
}

TEST(Publication, LargeTensorsArePublishedInChunksThatFitAnEnvelope) {
  const std::int64_t elements = static_cast<std::int64_t>(payload::kPublishChunkElements) + 5;
  PublishingFlow p(elements);
  TaskFlow& flow = p.flow;
  ASSERT_NO_FATAL_FAILURE(p.ToPublishing());
  const std::uint64_t c = flow.task().publish_required(0);
  const std::vector<proto::PublishTx> chunks = p.fixture.Chunks(flow.task_id, c);
  ASSERT_EQ(chunks.size(), 4u);  // 2 tensors x 2 chunks
  for (const proto::PublishTx& chunk : chunks) {
    EXPECT_LE(chunk.ByteSizeLong(), flow.chain.params().max_payload_bytes());
  }
  p.PublishAll({c});
  const proto::Task task = flow.task();
  EXPECT_EQ(std::find(task.publish_required().begin(), task.publish_required().end(), c), task.publish_required().end());
}

}  // namespace
}  // namespace polnode::contracts::testing
