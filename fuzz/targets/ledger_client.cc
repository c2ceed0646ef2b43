// Target ledger_client: the decoding of ledger API answers by LedgerClient (ledger_client.h
// Decode*), as a role daemon decodes whatever the ledger it talks to sends back. The first input
// byte picks the decoder, the rest is the answer's body.
// Properties: never crashes, throws or aborts; a decoder returns a value or a kCorruption error
// naming the answer; DecodeRefusal is never ok and maps the status as documented.
// The seeds are real answers of LedgerApi over a real Ledger (in a temporary RocksDB directory)
// with a staked account, a submitted task, committed, failed and pending transactions.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures.h"
#include "fuzz.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/ledger_api.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/ledger_json.h"
#include "polnode/testing/ledger_fixtures.h"

namespace polnode::fuzz {
namespace {

// Every decoder as one signature: the Status of its result.
template <typename T>
Status StatusOf(const Result<T>& result) {
  return result.status();
}

// A refusal of `kStatus`, checked here against DecodeRefusal's documented mapping; returns ok
// since its error is the expected result, not a decoding failure for Run to check.
template <int kStatus>
Status Refusal(std::string_view body) {
  const Status s = node::DecodeRefusal("GET /v1/status", kStatus, body);
  POLNODE_FUZZ_CHECK(!s.ok(), "a refusal decoded as ok");
  const StatusCode expected = kStatus == 404   ? StatusCode::kNotFound
                              : kStatus == 409 ? StatusCode::kAlreadyExists
                              : kStatus >= 500 ? StatusCode::kUnavailable
                                               : StatusCode::kFailedPrecondition;
  POLNODE_FUZZ_CHECK(s.code() == expected, "a refusal with the wrong status code");
  return Status::Ok();
}

using DecodeFn = Status (*)(std::string_view body);

// The first input byte, modulo kSelectors: which decoder the rest of the input goes to.
enum Selector : std::uint8_t {
  kInfo, kParams, kTask, kTaskPage, kGames, kAccount, kStakeSolver, kStakeVerifier, kStakeWhistleblower,
  kPendingNonce, kTxId, kTxState, kRefusal404, kRefusal409, kRefusal422, kRefusal503, kVerifiers, kPublished,
  kPublishedChunk, kRevealed, kSelectors,
};

// Indexed by Selector.
constexpr std::array<DecodeFn, kSelectors> kDecoders = {
    [](std::string_view b) { return StatusOf(node::DecodeLedgerInfo(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeParams(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeTask(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeTaskPage(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeTaskGames(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeAccount(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeStake(b, proto::ROLE_SOLVER)); },
    [](std::string_view b) { return StatusOf(node::DecodeStake(b, proto::ROLE_VERIFIER)); },
    [](std::string_view b) { return StatusOf(node::DecodeStake(b, proto::ROLE_WHISTLEBLOWER)); },
    [](std::string_view b) { return StatusOf(node::DecodePendingNonce(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeTxId(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeTxState(b)); },
    Refusal<404>,
    Refusal<409>,
    Refusal<422>,
    Refusal<503>,
    [](std::string_view b) { return StatusOf(node::DecodeVerifiers(b)); },
    [](std::string_view b) { return StatusOf(node::DecodePublishedCheckpoint(b)); },
    [](std::string_view b) { return StatusOf(node::DecodePublishedChunk(b)); },
    [](std::string_view b) { return StatusOf(node::DecodeRevealedCheckpoints(b)); },
};
static_assert(std::ranges::none_of(kDecoders, [](DecodeFn f) { return f == nullptr; }), "a Selector without a decoder");

void Run(FuzzInput input) {
  if (input.empty()) return;
  const DecodeFn decode = kDecoders[input[0] % kSelectors];
  const std::string_view body(reinterpret_cast<const char*>(input.data()) + 1, input.size() - 1);
  const Status s = decode(body);
  if (s.ok()) return;
  POLNODE_FUZZ_CHECK(s.code() == StatusCode::kCorruption, "a bad answer decoded to an error other than kCorruption");
  POLNODE_FUZZ_CHECK(s.message().find(" answer") != std::string::npos,
                     "a decoding error that does not name the answer");
}

// --- Seeds: real answers of a real ledger. ---

using testing::KeyFromByte;

constexpr char kChain[] = "polnode-fuzz";

// The encoded envelope of `payload` from key 1 at `nonce`. The fixtures sign with fixed auxiliary
// randomness, so the seeds (which contain tx ids) are the same on every run.
std::string Envelope(std::uint64_t nonce, std::string_view type, const google::protobuf::MessageLite& payload) {
  return testing::SignedTx(KeyFromByte(1), kChain, nonce, type, payload);
}

std::string Transfer(std::uint64_t nonce, std::uint64_t amount) {
  return Envelope(nonce, contracts::payload::kTransfer, testing::TransferTo(KeyFromByte(2), amount));
}

std::vector<std::uint8_t> Input(Selector selector, std::string_view body) {
  std::vector<std::uint8_t> bytes = {selector};
  bytes.insert(bytes.end(), body.begin(), body.end());
  return bytes;
}

// The answers of a ledger at height 1 whose block holds a stake, a task submission, a transfer and
// a failing transfer, with one more transfer pending.
std::vector<Seed> LedgerSeeds() {
  const node::GenesisFile genesis = testing::TestGenesis(kChain, KeyFromByte(1), 1000000);
  Result<std::unique_ptr<node::Ledger>> ledger = testing::OpenTestLedger(FixtureDir("ledger-client") + "/data", genesis);
  if (!ledger.ok()) std::abort();
  node::LedgerApi api(**ledger);
  // The body of an answer that must have `status`: a seed of another kind would be mislabelled.
  const auto answer = [&](int status, std::string method, std::string target, std::string body = "") {
    const node::HttpResponse r = api.Handle(
        node::HttpRequest{std::move(method), std::move(target), "application/x-protobuf", "", std::move(body)});
    if (r.status != status) std::abort();
    return r.body;
  };
  const auto get = [&](std::string target) { return answer(200, "GET", std::move(target)); };

  proto::StakeTx stake;
  stake.set_role(proto::ROLE_SOLVER);
  stake.set_amount(2000);
  proto::SubmitTaskTx submit;
  *submit.mutable_spec() = testing::UnboundTaskSpec();
  submit.set_spec_uri("http://127.0.0.1:7001/v1/specs/" + std::string(64, 'a'));
  const std::string ok_tx = Transfer(2, 5);
  const std::string failing_tx = Transfer(3, 1u << 30);  // over the balance: committed, failed
  for (const std::string& tx : {Envelope(0, contracts::payload::kStake, stake),
                                Envelope(1, contracts::payload::kSubmitTask, submit), ok_tx, failing_tx}) {
    answer(200, "POST", "/v1/tx", tx);
  }
  if (!(*ledger)->ProduceBlock(1700000001000).ok()) std::abort();
  const std::string pending_tx = Transfer(4, 1);
  const std::string posted = answer(200, "POST", "/v1/tx", pending_tx);

  const std::string account = consensus::ToHex(KeyFromByte(1).PublicKey().bytes());
  const std::string stranger = consensus::ToHex(KeyFromByte(3).PublicKey().bytes());
  const std::string page = get("/v1/tasks?start=0&limit=10");
  Result<contracts::TaskPage> tasks = node::DecodeTaskPage(page);
  if (!tasks.ok() || tasks->tasks.size() != 1) std::abort();
  const std::string task_id = consensus::ToHex(tasks->tasks[0].id());
  const std::string games = get("/v1/tasks/" + task_id + "/games");
  // No game is open on this chain; one recorded game, written by the ledger's own renderer, shows
  // the array's entry format.
  Result<contracts::TaskGames> no_games = node::DecodeTaskGames(games);
  if (!no_games.ok()) std::abort();
  contracts::TaskGames one_game = *no_games;
  proto::DisputeGame& game = one_game.games.emplace_back();
  game.set_task_id(tasks->tasks[0].id());
  game.mutable_challenger()->set_key(std::string(32, '\x55'));
  game.mutable_defender()->set_key(tasks->tasks[0].submitter());
  game.set_round(3);
  game.set_proof_root(std::string(32, '\x12'));
  game.set_start_root(std::string(32, '\x34'));
  const std::string games_with_one = node::TaskGamesJson(one_game);
  // No task on this chain reached its verdicts; one with a verifier slot and a whistleblower's
  // challenge that caught a forced error, written by the ledger's renderer, shows their formats.
  proto::Task challenged = tasks->tasks[0];
  proto::VerifierSlot* slot = challenged.add_verifiers();
  slot->set_verifier(std::string(32, '\x55'));
  slot->set_verdict(proto::VERDICT_REJECT);
  slot->set_lock(500);
  slot->add_segments(3);
  slot->add_failed_segments(7);
  slot->add_segment_digests(std::string(32, '\x66'));
  slot->set_vouched(true);
  proto::Challenge* challenge = challenged.add_challenges();
  challenge->set_challenger(std::string(32, '\x77'));
  challenge->set_lock(300);
  challenge->add_segments(2);
  challenge->add_segments(7);
  challenge->add_failed_segments(7);
  challenge->add_segment_digests(std::string(32, '\x88'));
  challenge->set_caught(true);
  // After a forced round's reveal: the forced checkpoints and their honest hashes.
  challenged.set_forced_error(true);
  challenged.add_forced_checkpoints(8);
  challenged.add_honest_hashes(std::string(32, '\x99'));
  const std::string task_challenged = node::TaskJson(challenged);
  // No verifier is staked on this chain; one member, written by the ledger's renderer, shows the
  // entry format.
  contracts::VerifierStake member;
  member.pubkey = std::string(32, '\x55');
  member.stake.set_bonded(700);
  member.stake.set_locked(200);
  const std::string one_verifier = node::VerifiersJson({member});
  // No solver published or revealed on this chain; records written by the ledger's renderer show
  // the formats of a published checkpoint, one of its chunks and a forced round's reveal.
  proto::PublishedCheckpoint published;
  proto::PublishedTensorHeader* tensor = published.add_tensors();
  tensor->set_name("fc1.w");
  tensor->add_dims(2);
  tensor->add_dims(3);
  tensor->set_hash(std::string(32, '\x21'));
  published.add_chunks_received(1);
  published.add_verified(true);
  published.set_state_hash(std::string(32, '\x22'));
  published.set_proof(std::string(72, '\x23'));
  proto::RevealedCheckpoints revealed;
  for (std::uint64_t checkpoint : {3u, 8u}) {
    proto::RevealedLeaf* leaf = revealed.add_leaves();
    leaf->set_checkpoint(checkpoint);
    leaf->set_committed_hash(std::string(32, '\x31'));
    leaf->set_committed_proof(std::string(136, '\x32'));
    leaf->set_result_hash(std::string(32, checkpoint == 8 ? '\x31' : '\x33'));
    leaf->set_result_proof(std::string(136, '\x34'));
  }
  const auto tx_path = [](const std::string& tx) { return "/v1/txs/" + consensus::ToHex(consensus::TxId(tx)); };

  return {
      {"status", Input(kInfo, get("/v1/status"))},
      {"params", Input(kParams, get("/v1/params"))},
      {"task", Input(kTask, get("/v1/tasks/" + task_id))},
      {"task-challenged", Input(kTask, task_challenged)},
      {"tasks", Input(kTaskPage, page)},
      {"tasks-empty", Input(kTaskPage, get("/v1/tasks?start=5"))},
      {"games", Input(kGames, games)},
      {"games-one", Input(kGames, games_with_one)},
      {"account", Input(kAccount, get("/v1/accounts/" + account))},
      {"stakes-solver", Input(kStakeSolver, get("/v1/accounts/" + account + "/stakes"))},
      {"stakes-verifier", Input(kStakeVerifier, get("/v1/accounts/" + stranger + "/stakes"))},
      {"stakes-whistleblower", Input(kStakeWhistleblower, get("/v1/accounts/" + account + "/stakes"))},
      {"verifiers", Input(kVerifiers, get("/v1/verifiers"))},
      {"verifiers-one", Input(kVerifiers, one_verifier)},
      {"published", Input(kPublished, node::PublishedCheckpointJson(published))},
      {"published-chunk", Input(kPublishedChunk, node::PublishedChunkJson(std::string(24, '\x41')))},
      {"revealed", Input(kRevealed, node::RevealedCheckpointsJson(revealed))},
      {"pending", Input(kPendingNonce, get("/v1/accounts/" + account + "/pending"))},
      {"pending-none", Input(kPendingNonce, get("/v1/accounts/" + stranger + "/pending"))},
      {"post-tx", Input(kTxId, posted)},
      {"tx-committed", Input(kTxState, get(tx_path(ok_tx)))},
      {"tx-failed", Input(kTxState, get(tx_path(failing_tx)))},
      {"tx-pending", Input(kTxState, get(tx_path(pending_tx)))},
      {"refusal-404", Input(kRefusal404, answer(404, "GET", "/v1/tasks/" + std::string(64, '0')))},
      {"refusal-409", Input(kRefusal409, answer(409, "POST", "/v1/tx", pending_tx))},
      {"refusal-422", Input(kRefusal422, answer(422, "POST", "/v1/tx", Transfer(0, 1)))},  // a used nonce
      {"refusal-503-text", Input(kRefusal503, "upstream unavailable")},
  };
}

std::vector<Seed> Seeds() {
  std::vector<Seed> seeds = LedgerSeeds();
  const std::vector<Seed> malformed = {
      {"bad-truncated", Input(kInfo, "{\"chain_id\":\"polnode-fuzz\",\"hei")},
      {"bad-height-type", Input(kInfo, "{\"chain_id\":\"c\",\"height\":\"1\"}")},
      {"bad-negative", Input(kAccount, "{\"balance\":-1,\"nonce\":0}")},
      {"bad-entry", Input(kTaskPage, "{\"total\":1,\"tasks\":[1]}")},
      {"bad-record-hex", Input(kTask, "{\"record\":\"zz\"}")},
      {"bad-record-proto", Input(kParams, "{\"record\":\"ff\"}")},
      {"bad-stake-type", Input(kStakeSolver, "{\"solver\":[]}")},
      {"bad-tx-status", Input(kTxState, "{\"status\":\"lost\",\"height\":1}")},
      {"bad-nested", Input(kGames, std::string(2000, '[') + std::string(2000, ']'))},
      {"bad-not-object", Input(kTxId, "[\"tx_id\"]")},
      {"bad-revealed-record", Input(kRevealed, "{\"leaves\":[],\"record\":\"0a\"}")},
  };
  seeds.insert(seeds.end(), malformed.begin(), malformed.end());
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(ledger_client, Run, Seeds);

}  // namespace polnode::fuzz
