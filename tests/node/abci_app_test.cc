// AbciApp in process over a real RocksDB: genesis through InitChain, mempool admission, proposals,
// a block's execution and commit, queries, restarts, and the requests it must refuse.
#include "polnode/ledger/abci_app.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "polnode/contracts.pb.h"
#include "polnode/contracts/payloads.h"
#include "polnode/consensus/hex.h"
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

class AbciAppTest : public ::testing::Test {
 protected:
  AbciAppTest() : dir_("abci-app") {}

  std::unique_ptr<AbciApp> OpenApp() {
    AbciAppOptions options;
    options.data_dir = dir_.File("data");
    options.sync_writes = false;
    auto app = AbciApp::Open(options, ParseGenesisJson);
    EXPECT_TRUE(IsOk(app));
    return app.ok() ? std::move(app).value() : nullptr;
  }

  static abci::Request InitChainRequest(std::string_view chain_id) {
    abci::Request r;
    r.mutable_init_chain()->set_chain_id(std::string(chain_id));
    r.mutable_init_chain()->set_app_state_bytes(FormatGenesisJson(polnode::testing::TestGenesis(kChain, KeyFromByte(1), kBalance)));
    r.mutable_init_chain()->mutable_time()->set_seconds(1'700'000'000);
    return r;
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

}  // namespace
}  // namespace polnode::node
