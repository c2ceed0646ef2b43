// Target dispute_move: arbitrary bytes as a dispute move (payload "dispute/move"), checked by the
// ledger's mempool admission (Application::CheckTx) and re-executed by the auditor as the opening
// move of a recorded game (contracts::AuditGame), which runs the move decoder and the opening's
// Merkle-proof checks. Properties: never crashes; CheckTx fails only with the documented codes; a
// move the auditor cannot apply is reported as a difference, never as an error. Seeds cover every
// move kind: open, step, graph, tile (first round, with descriptor and block root), chain, and
// referee evidence for a leaf and for a tile (blocks, multiproof, partial state).
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/state_store.h"

namespace polnode::fuzz {
namespace {

std::string Filled(char c) { return std::string(32, c); }

// A disputed task with one rejecting verifier whose verdict the solver disputes.
proto::Task DisputedTask() {
  proto::Task task;
  task.set_id(Filled('\x11'));
  task.set_solver(Filled('\x22'));
  task.set_status(proto::TASK_DISPUTED);
  task.set_proof_root(Filled('\x33'));
  proto::TaskSpec* spec = task.mutable_spec();
  spec->set_total_steps(64);
  spec->set_checkpoint_interval(8);
  spec->set_graph_root(Filled('\x44'));
  spec->set_batch_root(Filled('\x55'));
  spec->set_step_leaf_count(40);
  spec->set_state_tensor_count(8);
  proto::VerifierSlot* slot = task.add_verifiers();
  slot->set_verifier(Filled('\x66'));
  slot->set_verdict(proto::VERDICT_REJECT);
  slot->set_disputed(true);
  return task;
}

void Run(FuzzInput input) {
  const std::string payload(reinterpret_cast<const char*>(input.data()), input.size());
  static const proto::Params params = contracts::DefaultParams();
  static const auto* state = [] {
    auto* s = new contracts::MemoryStateStore();
    proto::GenesisSpec genesis;
    genesis.set_chain_id("fuzz");
    *genesis.mutable_params() = params;
    proto::Allocation* a = genesis.add_allocations();
    a->set_pubkey(Filled('\x66'));
    a->set_amount(1'000'000);
    if (!contracts::Application().InitChain(genesis, *s).ok()) std::abort();
    return s;
  }();
  contracts::VerifiedTx tx;
  std::copy_n(reinterpret_cast<const std::uint8_t*>(Filled('\x66').data()), 32, tx.signer.begin());
  tx.chain_id = "fuzz";
  tx.payload_type = std::string(contracts::payload::kDisputeMove);
  tx.payload = payload;
  tx.wire_size = payload.size() + 128;
  const Status admitted = contracts::Application().CheckTx(tx, *state);
  const StatusCode code = admitted.code();
  POLNODE_FUZZ_CHECK(admitted.ok() || code == StatusCode::kInvalidArgument || code == StatusCode::kResourceExhausted,
                     "CheckTx refused a move with an undocumented status code");

  const proto::Task task = DisputedTask();
  proto::DisputeGame recorded;
  recorded.set_task_id(task.id());
  recorded.mutable_challenger()->set_key(task.verifiers(0).verifier());
  recorded.mutable_defender()->set_key(task.solver());
  recorded.set_challenger_is_verifier(true);
  recorded.set_proof_root(task.proof_root());
  recorded.set_opened_height(10);
  proto::MoveRecord* move = recorded.add_moves();
  move->set_height(11);
  move->set_signer(task.verifiers(0).verifier());  // the challenger of a disputed reject
  move->set_payload(payload);
  Result<contracts::GameAudit> audit = contracts::AuditGame(params, task, recorded);
  POLNODE_FUZZ_CHECK(audit.ok(), "AuditGame failed on a well-formed record");
}

std::vector<std::uint8_t> Bytes(const google::protobuf::MessageLite& m) {
  const std::string s = m.SerializeAsString();
  return {s.begin(), s.end()};
}

std::vector<Seed> Seeds() {
  const proto::Task task = DisputedTask();
  proto::DisputeMoveTx open;
  open.set_task_id(task.id());
  open.set_challenger(task.verifiers(0).verifier());
  open.set_round(1);
  open.mutable_open()->set_segment(3);
  open.mutable_open()->set_start_hash(Filled('\x01'));
  open.mutable_open()->set_end_hash(Filled('\x02'));
  open.mutable_open()->set_claimed_end_hash(Filled('\x03'));
  proto::DisputeMoveTx step = open;
  step.mutable_step()->set_state_hash(Filled('\x04'));
  proto::DisputeMoveTx graph = open;
  graph.mutable_graph()->set_left(Filled('\x05'));
  graph.mutable_graph()->set_right(Filled('\x06'));
  graph.mutable_graph()->add_last_leaf_siblings(Filled('\x07'));
  proto::DisputeMoveTx referee = open;
  proto::PinpointDescriptor layout;
  layout.mutable_state()->add_names("w");
  layout.mutable_state()->add_value_leaves(5);
  referee.mutable_referee()->set_node_descriptor(layout.SerializeAsString());
  proto::RefereeInput* input = referee.mutable_referee()->add_inputs();
  input->set_hash(Filled('\x08'));
  input->add_siblings(Filled('\x09'));
  proto::DisputeMoveTx tile = open;
  proto::PinpointDescriptor add;
  add.mutable_node()->set_name("add");
  add.mutable_node()->set_op(3);  // kernels::Op::kBiasAdd
  add.mutable_node()->add_outputs()->add_dims(70);
  add.mutable_node()->set_first_output_leaf(10);
  tile.mutable_tile()->set_node_descriptor(add.SerializeAsString());
  tile.mutable_tile()->set_node_descriptor_proof(std::string("\x01") + std::string(16, '\0'));
  tile.mutable_tile()->set_block_root(Filled('\x0a'));
  tile.mutable_tile()->set_left(Filled('\x0b'));
  tile.mutable_tile()->set_right(Filled('\x0c'));
  proto::DisputeMoveTx chain = open;
  chain.mutable_chain()->set_state_hash(Filled('\x0d'));
  proto::DisputeMoveTx tile_referee = open;
  proto::TileInput* tile_input = tile_referee.mutable_referee()->add_tile_inputs();
  tile_input->set_block_root(Filled('\x0e'));
  tile_input->add_siblings(Filled('\x0f'));
  tile_input->add_blocks(std::string(64 * 4, '\x01'));
  tile_input->add_blocks(std::string(16, '\x02'));
  tile_input->add_proof(Filled('\x10'));
  tile_referee.mutable_referee()->add_tile_inputs();  // an input the tile does not read
  tile_referee.mutable_referee()->set_lo_state(std::string(8, '\x03'));
  const std::vector<std::uint8_t> open_bytes = Bytes(open);
  return {
      {"open", open_bytes},
      {"step", Bytes(step)},
      {"graph", Bytes(graph)},
      {"tile", Bytes(tile)},
      {"chain", Bytes(chain)},
      {"referee", Bytes(referee)},
      {"referee-tile", Bytes(tile_referee)},
      {"truncated-open", {open_bytes.begin(), open_bytes.begin() + static_cast<long>(open_bytes.size() / 2)}},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(dispute_move, Run, Seeds);

}  // namespace polnode::fuzz
