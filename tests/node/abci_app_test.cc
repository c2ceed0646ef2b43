// AbciApp in process over a real RocksDB: genesis through InitChain, mempool admission, proposals,
// a block's execution and commit, queries, restarts, the requests it must refuse, and the beacon
// through ExtendVote, VerifyVoteExtension, PrepareProposal, ProcessProposal and FinalizeBlock.
#include "polnode/ledger/abci_app.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "polnode/contracts.pb.h"
#include "polnode/contracts/payloads.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/block.h"
#include "polnode/rpc/abci_genesis.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using consensus::SecretKey;
using polnode::testing::IsOk;
using polnode::testing::KeyFromByte;
using polnode::testing::SignedTx;
using polnode::testing::TransferTo;

constexpr char kChain[] = "abci-test";
constexpr std::uint64_t kBalance = 1'000'000'000;
// The one validator: its CometBFT consensus key (ed25519, any 32 bytes here) and its VRF key.
const std::string kValidatorPubKey(32, '\x05');
SecretKey VrfKey() { return KeyFromByte(50); }

std::string ValidatorAddress() {
  const consensus::Hash256 digest = consensus::Sha256(kValidatorPubKey);
  return std::string(digest.begin(), digest.begin() + kValidatorAddressBytes);
}

class AbciAppTest : public ::testing::Test {
 protected:
  AbciAppTest() : dir_("abci-app") {}

  std::unique_ptr<AbciApp> OpenApp() {
    AbciAppOptions options;
    options.data_dir = dir_.File("data");
    options.sync_writes = false;
    options.vrf_key = VrfKey();
    auto app = AbciApp::Open(options, ParseAbciGenesisJson);
    EXPECT_TRUE(IsOk(app));
    return app.ok() ? std::move(app).value() : nullptr;
  }

  // InitChain as CometBFT sends it for a one-validator genesis with vote extensions from height 1,
  // the validator's VRF key registered in app_state.
  static abci::Request InitChainRequest(std::string_view chain_id) {
    abci::Request r;
    r.mutable_init_chain()->set_chain_id(std::string(chain_id));
    BeaconKeys keys;
    keys.emplace(ValidatorAddress(), VrfKey().PublicKey());
    Result<std::string> app_state =
        AddBeaconKeys(FormatGenesisJson(polnode::testing::TestGenesis(kChain, KeyFromByte(1), kBalance)), keys);
    EXPECT_TRUE(app_state.ok());
    r.mutable_init_chain()->set_app_state_bytes(app_state.ok() ? *app_state : "");
    r.mutable_init_chain()->mutable_time()->set_seconds(1'700'000'000);
    r.mutable_init_chain()->mutable_consensus_params()->mutable_abci()->set_vote_extensions_enable_height(1);
    abci::ValidatorUpdate* v = r.mutable_init_chain()->add_validators();
    v->mutable_pub_key()->set_ed25519(kValidatorPubKey);
    v->set_power(10);
    return r;
  }

  // The one validator's vote at the previous height, as a block's last commit lists it.
  static void AddVote(abci::CommitInfo& commit) {
    abci::VoteInfo* vote = commit.add_votes();
    vote->mutable_validator()->set_address(ValidatorAddress());
    vote->mutable_validator()->set_power(10);
    vote->set_block_id_flag(abci::BLOCK_ID_FLAG_COMMIT);
  }

  static abci::Request CheckTx(const std::string& tx, abci::CheckTxType type = abci::NEW) {
    abci::Request r;
    r.mutable_check_tx()->set_tx(tx);
    r.mutable_check_tx()->set_type(type);
    return r;
  }

  static abci::Request Finalize(std::int64_t height, const std::vector<std::string>& txs) {
    abci::Request r;
    abci::RequestFinalizeBlock* f = r.mutable_finalize_block();
    for (const std::string& tx : txs) f->add_txs(tx);
    f->set_height(height);
    f->set_hash(std::string(32, static_cast<char>(height)));
    f->mutable_time()->set_seconds(1'700'000'000 + height);
    f->set_proposer_address(std::string(20, '\x07'));
    return r;
  }

  static abci::Request Commit() {
    abci::Request r;
    r.mutable_commit();
    return r;
  }

  static abci::Request Info() {
    abci::Request r;
    r.mutable_info();
    return r;
  }

  static abci::Request QueryAccount(const SecretKey& key) {
    abci::Request r;
    r.mutable_query()->set_path("/v1/accounts/" + consensus::ToHex(key.PublicKey().bytes()));
    return r;
  }

  static std::string Transfer(std::uint64_t nonce, std::uint64_t amount) {
    return SignedTx(KeyFromByte(1), kChain, nonce, contracts::payload::kTransfer, TransferTo(KeyFromByte(2), amount));
  }

  polnode::testing::TempDir dir_;
};

TEST_F(AbciAppTest, GenesisBlockCommitQueryAndRestart) {
  std::string app_hash;
  {
    std::unique_ptr<AbciApp> app = OpenApp();
    ASSERT_NE(app, nullptr);
    abci::Response info = app->Handle(Info());
    EXPECT_EQ(info.info().last_block_height(), 0);
    EXPECT_TRUE(info.info().last_block_app_hash().empty());

    abci::Response init = app->Handle(InitChainRequest(kChain));
    ASSERT_TRUE(init.has_init_chain()) << init.exception().error();
    EXPECT_EQ(init.init_chain().app_hash().size(), 32u);

    const std::string tx0 = Transfer(0, 500);
    const std::string tx1 = Transfer(1, 700);
    EXPECT_EQ(app->Handle(CheckTx(tx0)).check_tx().code(), 0u);
    EXPECT_EQ(app->Handle(CheckTx(tx1)).check_tx().code(), 0u);
    // The same tx again, and one far outside the nonce window, are refused.
    EXPECT_NE(app->Handle(CheckTx(tx0)).check_tx().code(), 0u);
    EXPECT_NE(app->Handle(CheckTx(Transfer(1'000'000, 1))).check_tx().code(), 0u);

    abci::Request prepare;
    prepare.mutable_prepare_proposal()->set_max_tx_bytes(1 << 20);
    prepare.mutable_prepare_proposal()->add_txs(tx1);  // out of nonce order: the app reorders
    prepare.mutable_prepare_proposal()->add_txs(tx0);
    prepare.mutable_prepare_proposal()->set_height(1);
    abci::Response prepared = app->Handle(prepare);
    ASSERT_EQ(prepared.prepare_proposal().txs_size(), 2) << prepared.exception().error();
    EXPECT_EQ(prepared.prepare_proposal().txs(0), tx0);

    abci::Request process;
    process.mutable_process_proposal()->add_txs(tx0);
    process.mutable_process_proposal()->add_txs(tx1);
    process.mutable_process_proposal()->set_height(1);
    EXPECT_EQ(app->Handle(process).process_proposal().status(), abci::ResponseProcessProposal::ACCEPT);

    abci::Response finalized = app->Handle(Finalize(1, {tx0, tx1}));
    ASSERT_TRUE(finalized.has_finalize_block()) << finalized.exception().error();
    ASSERT_EQ(finalized.finalize_block().tx_results_size(), 2);
    EXPECT_EQ(finalized.finalize_block().tx_results(0).code(), 0u);
    EXPECT_EQ(finalized.finalize_block().tx_results(1).code(), 0u);
    app_hash = finalized.finalize_block().app_hash();
    EXPECT_NE(app_hash, init.init_chain().app_hash());
    ASSERT_TRUE(app->Handle(Commit()).has_commit());

    info = app->Handle(Info());
    EXPECT_EQ(info.info().last_block_height(), 1);
    EXPECT_EQ(info.info().last_block_app_hash(), app_hash);
    // After Commit the pool no longer holds the block's txs: a recheck of them fails.
    EXPECT_NE(app->Handle(CheckTx(tx0, abci::RECHECK)).check_tx().code(), 0u);

    abci::Response query = app->Handle(QueryAccount(KeyFromByte(2)));
    ASSERT_EQ(query.query().code(), 0u) << query.query().log();
    proto::Account account;
    ASSERT_TRUE(account.ParseFromString(query.query().value()));
    EXPECT_EQ(account.balance(), 1200u);
    EXPECT_EQ(query.query().height(), 1);
  }
  // Reopened, it reports the same height and app hash (what CometBFT's handshake compares).
  std::unique_ptr<AbciApp> app = OpenApp();
  ASSERT_NE(app, nullptr);
  abci::Response info = app->Handle(Info());
  EXPECT_EQ(info.info().last_block_height(), 1);
  EXPECT_EQ(info.info().last_block_app_hash(), app_hash);
  abci::Response query = app->Handle(QueryAccount(KeyFromByte(1)));
  proto::Account sender;
  ASSERT_TRUE(sender.ParseFromString(query.query().value()));
  EXPECT_EQ(sender.nonce(), 2u);
}

TEST_F(AbciAppTest, MalformedTransactionsAreRejectedAndChangeNothing) {
  std::unique_ptr<AbciApp> app = OpenApp();
  ASSERT_NE(app, nullptr);
  ASSERT_TRUE(app->Handle(InitChainRequest(kChain)).has_init_chain());
  const std::string garbage = "not a transaction";
  const std::string good = Transfer(0, 5);
  EXPECT_NE(app->Handle(CheckTx(garbage)).check_tx().code(), 0u);

  abci::Request process;
  process.mutable_process_proposal()->add_txs(good);
  process.mutable_process_proposal()->add_txs(garbage);
  process.mutable_process_proposal()->set_height(1);
  EXPECT_EQ(app->Handle(process).process_proposal().status(), abci::ResponseProcessProposal::REJECT);
  // A tx signed for another chain is as bad.
  abci::Request other = process;
  other.mutable_process_proposal()->set_txs(
      1, SignedTx(KeyFromByte(1), "other-chain", 1, contracts::payload::kTransfer, TransferTo(KeyFromByte(2), 1)));
  EXPECT_EQ(app->Handle(other).process_proposal().status(), abci::ResponseProcessProposal::REJECT);

  abci::Request prepare;
  prepare.mutable_prepare_proposal()->set_max_tx_bytes(1 << 20);
  prepare.mutable_prepare_proposal()->add_txs(garbage);
  prepare.mutable_prepare_proposal()->add_txs(good);
  prepare.mutable_prepare_proposal()->set_height(1);
  abci::Response prepared = app->Handle(prepare);
  ASSERT_EQ(prepared.prepare_proposal().txs_size(), 1);
  EXPECT_EQ(prepared.prepare_proposal().txs(0), good);

  // Decided anyway (a byzantine majority): the bad tx gets an error result, the good one runs.
  abci::Response finalized = app->Handle(Finalize(1, {garbage, good}));
  ASSERT_TRUE(finalized.has_finalize_block()) << finalized.exception().error();
  EXPECT_NE(finalized.finalize_block().tx_results(0).code(), 0u);
  EXPECT_EQ(finalized.finalize_block().tx_results(0).codespace(), "polnode");
  EXPECT_EQ(finalized.finalize_block().tx_results(1).code(), 0u);
  ASSERT_TRUE(app->Handle(Commit()).has_commit());
  abci::Response query = app->Handle(QueryAccount(KeyFromByte(2)));
  proto::Account account;
  ASSERT_TRUE(account.ParseFromString(query.query().value()));
  EXPECT_EQ(account.balance(), 5u);
}

TEST_F(AbciAppTest, PrepareProposalStaysWithinMaxTxBytes) {
  std::unique_ptr<AbciApp> app = OpenApp();
  ASSERT_NE(app, nullptr);
  ASSERT_TRUE(app->Handle(InitChainRequest(kChain)).has_init_chain());
  abci::Request prepare;
  std::vector<std::int64_t> sizes;
  for (std::uint64_t nonce = 0; nonce < 3; ++nonce) {
    const std::string tx = Transfer(nonce, 1);
    prepare.mutable_prepare_proposal()->add_txs(tx);
    // What CometBFT counts: the tx with its protobuf field tag and length.
    abci::ResponsePrepareProposal alone;
    alone.add_txs(tx);
    sizes.push_back(static_cast<std::int64_t>(alone.ByteSizeLong()));
  }
  prepare.mutable_prepare_proposal()->set_height(1);
  prepare.mutable_prepare_proposal()->set_max_tx_bytes(sizes[0] + sizes[1] + sizes[2] - 1);
  abci::Response prepared = app->Handle(prepare);
  ASSERT_TRUE(prepared.has_prepare_proposal()) << prepared.exception().error();
  EXPECT_EQ(prepared.prepare_proposal().txs_size(), 2);
  EXPECT_LE(static_cast<std::int64_t>(prepared.prepare_proposal().ByteSizeLong()), sizes[0] + sizes[1]);
  prepare.mutable_prepare_proposal()->set_max_tx_bytes(sizes[0] - 1);
  EXPECT_EQ(app->Handle(prepare).prepare_proposal().txs_size(), 0);
}

TEST_F(AbciAppTest, RefusesWhatWouldBreakTheChain) {
  std::unique_ptr<AbciApp> app = OpenApp();
  ASSERT_NE(app, nullptr);
  // Before genesis nothing executes.
  EXPECT_TRUE(app->Handle(Finalize(1, {})).has_exception());
  EXPECT_TRUE(app->Handle(Commit()).has_exception());
  EXPECT_NE(app->Handle(QueryAccount(KeyFromByte(1))).query().code(), 0u);
  // CometBFT's chain id must be the one the app_state was made for.
  abci::Response wrong = app->Handle(InitChainRequest("another-chain"));
  ASSERT_TRUE(wrong.has_exception());
  EXPECT_NE(wrong.exception().error().find("another-chain"), std::string::npos);

  abci::Response init = app->Handle(InitChainRequest(kChain));
  ASSERT_TRUE(init.has_init_chain());
  // Heights must follow on: no gap, no going back.
  EXPECT_TRUE(app->Handle(Finalize(2, {})).has_exception());
  EXPECT_TRUE(app->Handle(Finalize(0, {})).has_exception());
  EXPECT_TRUE(app->Handle(Commit()).has_exception());  // nothing finalized
  abci::Request unknown;
  EXPECT_TRUE(app->Handle(unknown).has_exception());
  abci::Request query;
  query.mutable_query()->set_path("/v1/nothing-here");
  EXPECT_NE(app->Handle(query).query().code(), 0u);
  app.reset();

  // A restart between InitChain and block 1: CometBFT calls InitChain again and gets the same hash.
  app = OpenApp();
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->Handle(Info()).info().last_block_height(), 0);
  abci::Response again = app->Handle(InitChainRequest(kChain));
  ASSERT_TRUE(again.has_init_chain()) << again.exception().error();
  EXPECT_EQ(again.init_chain().app_hash(), init.init_chain().app_hash());
  // Finalizing twice without Commit (consensus restarted) executes the block once.
  const std::string tx = Transfer(0, 9);
  ASSERT_TRUE(app->Handle(Finalize(1, {tx})).has_finalize_block());
  abci::Response second = app->Handle(Finalize(1, {tx}));
  ASSERT_TRUE(second.has_finalize_block());
  EXPECT_EQ(second.finalize_block().tx_results(0).code(), 0u);
  ASSERT_TRUE(app->Handle(Commit()).has_commit());
  abci::Response q = app->Handle(QueryAccount(KeyFromByte(2)));
  proto::Account account;
  ASSERT_TRUE(account.ParseFromString(q.query().value()));
  EXPECT_EQ(account.balance(), 9u);
}

TEST_F(AbciAppTest, RefusesAGenesisWithoutTheBeacon) {
  std::unique_ptr<AbciApp> app = OpenApp();
  ASSERT_NE(app, nullptr);
  abci::Request no_extensions = InitChainRequest(kChain);
  no_extensions.mutable_init_chain()->mutable_consensus_params()->mutable_abci()->set_vote_extensions_enable_height(0);
  abci::Response r = app->Handle(no_extensions);
  ASSERT_TRUE(r.has_exception());
  EXPECT_NE(r.exception().error().find("vote_extensions_enable_height"), std::string::npos) << r.exception().error();
  // A second validator without a VRF key in app_state.
  abci::Request unregistered = InitChainRequest(kChain);
  abci::ValidatorUpdate* v = unregistered.mutable_init_chain()->add_validators();
  v->mutable_pub_key()->set_ed25519(std::string(32, '\x06'));
  v->set_power(10);
  r = app->Handle(unregistered);
  ASSERT_TRUE(r.has_exception());
  EXPECT_NE(r.exception().error().find("no beacon_keys entry"), std::string::npos) << r.exception().error();
  // polnode's plain genesis.json (no beacon_keys at all).
  abci::Request plain = InitChainRequest(kChain);
  plain.mutable_init_chain()->set_app_state_bytes(FormatGenesisJson(polnode::testing::TestGenesis(kChain, KeyFromByte(1), kBalance)));
  r = app->Handle(plain);
  ASSERT_TRUE(r.has_exception());
  EXPECT_NE(r.exception().error().find("beacon_keys"), std::string::npos) << r.exception().error();
  EXPECT_EQ(app->Handle(Info()).info().last_block_height(), 0);
}

// The beacon through the ABCI methods: the validator's extension at height 1 verifies (and nothing
// else does), block 2 must open with the beacon tx of block 1's votes, and its randomness is the
// derivation from that tx, also after a restart.
TEST_F(AbciAppTest, BeaconFromVoteExtensions) {
  std::unique_ptr<AbciApp> app = OpenApp();
  ASSERT_NE(app, nullptr);
  ASSERT_TRUE(app->Handle(InitChainRequest(kChain)).has_init_chain());
  // A user cannot send a beacon tx.
  EXPECT_NE(app->Handle(CheckTx(std::string(1, '\0') + "x")).check_tx().code(), 0u);

  // Height 1: no beacon tx; R(1) is the genesis value.
  abci::Request extend;
  extend.mutable_extend_vote()->set_height(1);
  abci::Response extended = app->Handle(extend);
  ASSERT_TRUE(extended.has_extend_vote()) << extended.exception().error();
  const std::string extension = extended.extend_vote().vote_extension();
  EXPECT_EQ(extension.size(), consensus::kVrfProofBytes);
  const auto verify = [&](std::string_view address, std::string_view ext, std::int64_t height) {
    abci::Request r;
    r.mutable_verify_vote_extension()->set_validator_address(std::string(address));
    r.mutable_verify_vote_extension()->set_vote_extension(std::string(ext));
    r.mutable_verify_vote_extension()->set_height(height);
    return app->Handle(r).verify_vote_extension().status();
  };
  EXPECT_EQ(verify(ValidatorAddress(), extension, 1), abci::ResponseVerifyVoteExtension::ACCEPT);
  std::string flipped = extension;
  flipped[3] = static_cast<char>(flipped[3] ^ 1);
  EXPECT_EQ(verify(ValidatorAddress(), flipped, 1), abci::ResponseVerifyVoteExtension::REJECT);
  EXPECT_EQ(verify(std::string(20, 'x'), extension, 1), abci::ResponseVerifyVoteExtension::REJECT);
  EXPECT_EQ(verify(ValidatorAddress(), extension, 2), abci::ResponseVerifyVoteExtension::REJECT);
  EXPECT_EQ(verify(ValidatorAddress(), "", 1), abci::ResponseVerifyVoteExtension::REJECT);
  ASSERT_TRUE(app->Handle(Finalize(1, {})).has_finalize_block());
  ASSERT_TRUE(app->Handle(Commit()).has_commit());

  // Height 2: the proposer's beacon tx comes first, from local_last_commit's verified extensions;
  // a late vote with a bad extension is left out.
  abci::Request prepare;
  abci::RequestPrepareProposal* p = prepare.mutable_prepare_proposal();
  p->set_max_tx_bytes(1 << 20);
  p->set_height(2);
  const std::string tx = Transfer(0, 9);
  p->add_txs(tx);
  abci::ExtendedVoteInfo* vote = p->mutable_local_last_commit()->add_votes();
  vote->mutable_validator()->set_address(ValidatorAddress());
  vote->mutable_validator()->set_power(10);
  vote->set_vote_extension(extension);
  vote->set_block_id_flag(abci::BLOCK_ID_FLAG_COMMIT);
  abci::ExtendedVoteInfo* late = p->mutable_local_last_commit()->add_votes();
  late->mutable_validator()->set_address(std::string(20, 'x'));
  late->mutable_validator()->set_power(1);
  late->set_vote_extension(flipped);
  late->set_block_id_flag(abci::BLOCK_ID_FLAG_COMMIT);
  abci::Response prepared = app->Handle(prepare);
  ASSERT_EQ(prepared.prepare_proposal().txs_size(), 2) << prepared.exception().error();
  const std::string beacon_tx = prepared.prepare_proposal().txs(0);
  BeaconEntry entry;
  entry.address = ValidatorAddress();
  std::copy(extension.begin(), extension.end(), entry.proof.begin());
  EXPECT_EQ(beacon_tx, EncodeBeaconTx({entry}));
  EXPECT_EQ(prepared.prepare_proposal().txs(1), tx);

  const auto process = [&](const std::vector<std::string>& txs) {
    abci::Request r;
    for (const std::string& t : txs) r.mutable_process_proposal()->add_txs(t);
    r.mutable_process_proposal()->set_height(2);
    AddVote(*r.mutable_process_proposal()->mutable_proposed_last_commit());
    return app->Handle(r).process_proposal().status();
  };
  EXPECT_EQ(process({beacon_tx, tx}), abci::ResponseProcessProposal::ACCEPT);
  EXPECT_EQ(process({tx}), abci::ResponseProcessProposal::REJECT);             // no beacon tx
  EXPECT_EQ(process({tx, beacon_tx}), abci::ResponseProcessProposal::REJECT);  // not first
  EXPECT_EQ(process({beacon_tx, beacon_tx, tx}), abci::ResponseProcessProposal::REJECT);
  std::string forged = beacon_tx;
  forged[30] = static_cast<char>(forged[30] ^ 1);
  EXPECT_EQ(process({forged, tx}), abci::ResponseProcessProposal::REJECT);

  // FinalizeBlock: the randomness is the derivation from the beacon tx; the beacon tx gets code 0
  // and is not one of polnode's stored txs.
  abci::Request finalize = Finalize(2, {beacon_tx, tx});
  AddVote(*finalize.mutable_finalize_block()->mutable_decided_last_commit());
  abci::Response finalized = app->Handle(finalize);
  ASSERT_TRUE(finalized.has_finalize_block()) << finalized.exception().error();
  ASSERT_EQ(finalized.finalize_block().tx_results_size(), 2);
  EXPECT_EQ(finalized.finalize_block().tx_results(0).code(), 0u);
  EXPECT_EQ(finalized.finalize_block().tx_results(1).code(), 0u);
  ASSERT_TRUE(app->Handle(Commit()).has_commit());
  BeaconKeys keys;
  keys.emplace(ValidatorAddress(), VrfKey().PublicKey());
  const Result<consensus::Hash256> expected =
      VerifyBeaconTx(beacon_tx, keys, {{ValidatorAddress(), 10}}, BeaconAlpha(kChain, 1, consensus::Hash256{}));
  ASSERT_TRUE(expected.ok());
  const auto randomness = [&](AbciApp& a, std::uint64_t height) {
    abci::Request q;
    q.mutable_query()->set_path("/v1/blocks/" + std::to_string(height));
    abci::Response r = a.Handle(q);
    EXPECT_EQ(r.query().code(), 0u) << r.query().log();
    Result<consensus::Block> block = consensus::DecodeBlock(r.query().value());
    EXPECT_TRUE(block.ok());
    return block.ok() ? block->header.randomness : consensus::Hash256{};
  };
  EXPECT_EQ(randomness(*app, 1), GenesisBeacon(kChain));
  for (const char* path : {"/v1/blocks/3", "/v1/blocks/x1", "/v1/blocks/", "/v1/blocks/1234567890123456789"}) {
    abci::Request q;
    q.mutable_query()->set_path(path);
    EXPECT_NE(app->Handle(q).query().code(), 0u) << path;
  }
  EXPECT_EQ(randomness(*app, 2), *expected);
  Result<consensus::Block> stored = consensus::DecodeBlock(*app->GetEncodedBlock(2));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->txs, std::vector<std::string>{tx});
  // A block that is decided without a valid beacon tx stops the application.
  abci::Request bad = Finalize(3, {tx});
  AddVote(*bad.mutable_finalize_block()->mutable_decided_last_commit());
  EXPECT_TRUE(app->Handle(bad).has_exception());

  // After a restart the keys and R(2) come back from the store: the extension at height 3 is the
  // one alpha(3) = (3, R(2)) gives.
  app.reset();
  app = OpenApp();
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(randomness(*app, 2), *expected);
  extend.mutable_extend_vote()->set_height(3);
  extended = app->Handle(extend);
  ASSERT_TRUE(extended.has_extend_vote()) << extended.exception().error();
  const Result<std::string> want = MakeBeaconExtension(VrfKey(), BeaconAlpha(kChain, 3, *expected));
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(extended.extend_vote().vote_extension(), *want);
  EXPECT_EQ(verify(ValidatorAddress(), *want, 3), abci::ResponseVerifyVoteExtension::ACCEPT);
}

}  // namespace
}  // namespace polnode::node
