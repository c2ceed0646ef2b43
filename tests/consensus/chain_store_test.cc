// ChainStore: atomic block+state commits, resume after reopen, and crash safety under real kill -9.
#include "polnode/consensus/chain_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/state_root.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::consensus {
namespace {

using polnode::testing::TempDir;

Hash256 HashOf(std::uint64_t height) { return Sha256("block " + std::to_string(height)); }

BlockRecord Record(std::uint64_t height) {
  BlockRecord r;
  r.height = height;
  r.hash = HashOf(height);
  r.encoded_block = "block-bytes-" + std::to_string(height);
  r.tx_ids = {Sha256("tx " + std::to_string(height))};
  return r;
}

std::unique_ptr<ChainStore> MustOpen(const std::string& path, ChainStoreOptions opts = {}) {
  auto store = ChainStore::Open(path, opts);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

void Commit(ChainStore& store, std::uint64_t height, const StateDelta& delta) {
  auto prepared = store.Prepare(Record(height), delta);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_TRUE(store.Write(std::move(prepared).value()).ok());
}

std::string Value(const ChainStore& store, std::string_view key) {
  auto v = store.GetState(key);
  EXPECT_TRUE(v.ok());
  return v.ok() && v->has_value() ? **v : "<absent>";
}

TEST(ChainStoreTest, EmptyStoreHasNoTipAndAcceptsOnlyHeightZero) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->tip().has_value());
  EXPECT_EQ(store->Prepare(Record(1), {}).status().code(), StatusCode::kFailedPrecondition);
  Commit(*store, 0, {{"a", "1"}});
  ASSERT_TRUE(store->tip().has_value());
  EXPECT_EQ(store->tip()->height, 0u);
  EXPECT_EQ(store->Prepare(Record(0), {}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->Prepare(Record(2), {}).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ChainStoreTest, ReopenResumesAtLastBlockWithItsState) {
  TempDir dir;
  {
    auto store = MustOpen(dir.File("db"));
    Commit(*store, 0, {{"acct/a", "100"}, {"acct/b", "5"}});
    Commit(*store, 1, {{"acct/a", "90"}, {"acct/c", "10"}, {"acct/b", std::nullopt}});
  }
  auto store = MustOpen(dir.File("db"));
  ASSERT_TRUE(store->tip().has_value());
  EXPECT_EQ(store->tip()->height, 1u);
  EXPECT_EQ(store->tip()->hash, HashOf(1));
  EXPECT_EQ(Value(*store, "acct/a"), "90");
  EXPECT_EQ(Value(*store, "acct/b"), "<absent>");
  EXPECT_EQ(Value(*store, "acct/c"), "10");
  auto block = store->GetEncodedBlock(1);
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(*block, "block-bytes-1");
  EXPECT_EQ(store->GetEncodedBlock(2).status().code(), StatusCode::kNotFound);
  auto loc = store->FindTx(Sha256("tx 1"));
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->height, 1u);
  EXPECT_EQ(loc->index, 0u);
  EXPECT_EQ(store->FindTx(Sha256("never")).status().code(), StatusCode::kNotFound);
  Commit(*store, 2, {{"acct/a", "80"}});
  EXPECT_EQ(store->tip()->height, 2u);
}

// Fault injection: the batch for block 2 is fully built (state writes, block, tx index, tip) and
// then the process "dies" before RocksDB's Write. Nothing of block 2 may be visible after reopen.
TEST(ChainStoreTest, CrashBetweenBuildingAndWritingLeavesPreviousBlockIntact) {
  TempDir dir;
  {
    auto store = MustOpen(dir.File("db"));
    Commit(*store, 0, {{"k", "0"}});
    Commit(*store, 1, {{"k", "1"}});
    auto prepared = store->Prepare(Record(2), {{"k", "2"}, {"new", "x"}});
    ASSERT_TRUE(prepared.ok());
    EXPECT_GT(prepared->batch_bytes(), 0u);
    // The prepared commit is destroyed here without being written.
  }
  auto store = MustOpen(dir.File("db"));
  EXPECT_EQ(store->tip()->height, 1u);
  EXPECT_EQ(Value(*store, "k"), "1");
  EXPECT_EQ(Value(*store, "new"), "<absent>");
  EXPECT_EQ(store->GetEncodedBlock(2).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->FindTx(Sha256("tx 2")).status().code(), StatusCode::kNotFound);
  Commit(*store, 2, {{"k", "2b"}});
  EXPECT_EQ(Value(*store, "k"), "2b");
}

TEST(ChainStoreTest, TxOutcomesAreStoredWithTheBlockAndReadBackByFindTx) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  Commit(*store, 0, {});  // Record() stores no outcomes: the tx reads back without one
  auto bare = store->FindTx(Sha256("tx 0"));
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_FALSE(bare->outcome.has_value());

  BlockRecord r = Record(1);
  r.tx_ids.push_back(Sha256("tx 1b"));
  r.tx_outcomes = {TxOutcome{}, TxOutcome{StatusCode::kFailedPrecondition, "insufficient balance"}};
  auto prepared = store->Prepare(r, {});
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_TRUE(store->Write(std::move(prepared).value()).ok());
  auto ok = store->FindTx(Sha256("tx 1"));
  ASSERT_TRUE(ok.ok() && ok->outcome.has_value());
  EXPECT_EQ(ok->outcome->code, StatusCode::kOk);
  EXPECT_EQ(ok->outcome->log, "");
  auto failed = store->FindTx(Sha256("tx 1b"));
  ASSERT_TRUE(failed.ok() && failed->outcome.has_value());
  EXPECT_EQ(failed->index, 1u);
  EXPECT_EQ(failed->outcome->code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(failed->outcome->log, "insufficient balance");

  BlockRecord mismatched = Record(2);
  mismatched.tx_outcomes = {TxOutcome{}, TxOutcome{}};
  EXPECT_EQ(store->Prepare(mismatched, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChainStoreTest, StaleCommitIsRejectedAfterTheTipMoved) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  Commit(*store, 0, {});
  auto first = store->Prepare(Record(1), {{"x", "first"}});
  auto second = store->Prepare(Record(1), {{"x", "second"}});
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(store->Write(std::move(first).value()).ok());
  EXPECT_EQ(store->Write(std::move(second).value()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Value(*store, "x"), "first");
}

// Every state read of the store, as one string: GetState of each key, a scan of everything, a
// Snapshot's reads and the state root.
std::string StateView(const ChainStore& store) {
  std::string view;
  for (const char* key : {"a", "b", "c"}) view += std::string(key) + "=" + Value(store, key) + ";";
  EXPECT_TRUE(store.ScanState("", {}, [&](std::string_view k, std::string_view v) {
                     view += "scan " + std::string(k) + "=" + std::string(v) + ";";
                     return true;
                   }).ok());
  std::unique_ptr<StateSnapshot> snapshot = store.Snapshot();
  for (const char* key : {"a", "b", "c"}) {
    auto v = snapshot->Get(key);
    EXPECT_TRUE(v.ok());
    view += std::string("snapshot ") + key + "=" + (v.ok() && v->has_value() ? **v : "<absent>") + ";";
  }
  auto root = store.StateRoot({});
  EXPECT_TRUE(root.ok());
  view += "root " + (root.ok() ? ToHex(*root) : std::string("<error>"));
  return view;
}

// Write(commit, publish): the block is durable and tip() moved when `publish` runs, but every
// read answers from the parent until make_visible, and from the block after it. Once with
// the in-memory state loaded before the write (a StateRoot was asked) and once without (reads go
// to RocksDB and the first StateRoot loads the state during the window).
TEST(ChainStoreTest, AWrittenBlocksStateIsInvisibleUntilPublished) {
  for (const bool loaded : {true, false}) {
    SCOPED_TRACE(loaded ? "state loaded" : "state not loaded");
    TempDir dir;
    auto store = MustOpen(dir.File("db"));
    Commit(*store, 0, {{"a", "1"}, {"b", "2"}});
    const StateDelta delta{{"a", std::nullopt}, {"b", "22"}, {"c", "3"}};
    // The same reads on a second store that holds the block already published: what the first
    // must show after make_visible.
    TempDir reference_dir;
    auto reference = MustOpen(reference_dir.File("db"));
    Commit(*reference, 0, {{"a", "1"}, {"b", "2"}});
    Commit(*reference, 1, delta);
    const std::string after = StateView(*reference);

    store.reset();
    store = MustOpen(dir.File("db"));  // reopened: nothing loaded
    if (loaded) {
      ASSERT_TRUE(store->StateRoot(delta).ok());
    }
    auto prepared = store->Prepare(Record(1), delta);
    ASSERT_TRUE(prepared.ok());
    std::string before;
    if (loaded) before = StateView(*store);
    bool called = false;
    Status written = store->Write(std::move(prepared).value(), [&](const std::function<void()>& make_visible) {
      called = true;
      ASSERT_TRUE(store->tip().has_value());
      EXPECT_EQ(store->tip()->height, 1u);
      EXPECT_EQ(store->GetEncodedBlock(1).status().code(), StatusCode::kNotFound);
      EXPECT_EQ(store->FindTx(Record(1).tx_ids[0]).status().code(), StatusCode::kNotFound);
      const std::string during = StateView(*store);
      EXPECT_NE(during, after);
      EXPECT_EQ(during.substr(0, during.find("scan")), "a=1;b=2;c=<absent>;");
      if (loaded) {
        EXPECT_EQ(during, before);
      }
      make_visible();
      EXPECT_EQ(StateView(*store), after);
      Result<std::string> block = store->GetEncodedBlock(1);
      ASSERT_TRUE(block.ok());
      EXPECT_EQ(*block, Record(1).encoded_block);
      EXPECT_TRUE(store->FindTx(Record(1).tx_ids[0]).ok());
    });
    ASSERT_TRUE(written.ok()) << written.ToString();
    EXPECT_TRUE(called);
    EXPECT_EQ(StateView(*store), after);
  }
}

// A publisher that forgets make_visible gets an error, and the block's state is published anyway:
// it is durable, and reads must not stay behind it.
TEST(ChainStoreTest, APublisherThatDoesNotPublishIsAnErrorAndTheBlockIsPublished) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  Commit(*store, 0, {{"a", "1"}});
  auto prepared = store->Prepare(Record(1), {{"a", "2"}});
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(store->Write(std::move(prepared).value(), [](const std::function<void()>&) {}).code(),
            StatusCode::kInternal);
  EXPECT_EQ(Value(*store, "a"), "2");
  EXPECT_EQ(store->tip()->height, 1u);
}

TEST(ChainStoreTest, ScanMergesPendingWritesAndDeletesWithinPrefix) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  Commit(*store, 0, {{"a/1", "c1"}, {"a/2", "c2"}, {"a/4", "c4"}, {"b/1", "other"}});
  StateDelta pending{{"a/2", std::nullopt}, {"a/3", "p3"}, {"a/4", "p4"}, {"c/1", "other"}};
  std::vector<std::pair<std::string, std::string>> seen;
  ASSERT_TRUE(store
                  ->ScanState("a/", pending,
                              [&](std::string_view k, std::string_view v) {
                                seen.emplace_back(k, v);
                                return true;
                              })
                  .ok());
  std::vector<std::pair<std::string, std::string>> want{{"a/1", "c1"}, {"a/3", "p3"}, {"a/4", "p4"}};
  EXPECT_EQ(seen, want);

  std::size_t visited = 0;
  ASSERT_TRUE(store->ScanState("", pending, [&](std::string_view, std::string_view) { return ++visited < 2; }).ok());
  EXPECT_EQ(visited, 2u);
}

// `writes` random writes to keys "k/0" .. "k/<keys - 1>": one in `delete_one_in` a deletion, the
// others a run of min_len .. min_len + extra_len - 1 copies of one letter.
StateDelta RandomDelta(std::mt19937_64& rng, int writes, std::uint64_t keys, std::uint64_t delete_one_in,
                       std::uint64_t min_len, std::uint64_t extra_len) {
  StateDelta delta;
  for (int i = 0; i < writes; ++i) {
    const std::string key = "k/" + std::to_string(rng() % keys);
    if (rng() % delete_one_in == 0) {
      delta[key] = std::nullopt;
      continue;
    }
    const std::uint64_t length = min_len + rng() % extra_len;
    delta[key] = std::string(length, static_cast<char>('a' + rng() % 26));
  }
  return delta;
}

// `model` with `delta` applied.
void ApplyDelta(const StateDelta& delta, std::map<std::string, std::string>& model) {
  for (const auto& [k, v] : delta) {
    if (v) {
      model[k] = *v;
    } else {
      model.erase(k);
    }
  }
}

// The state root straight from its definition (state_root.h): every bucket hashed, the whole tree
// built, nothing kept between calls.
Hash256 NaiveStateRoot(const std::map<std::string, std::string>& state) {
  std::vector<std::vector<std::pair<std::string, std::string>>> buckets(std::size_t{1} << kStateBucketBits);
  for (const auto& [k, v] : state) buckets[StateBucketOf(k)].emplace_back(k, v);
  auto be = [](std::uint64_t n, int bytes) {
    std::string out(static_cast<std::size_t>(bytes), '\0');
    for (int i = bytes - 1; i >= 0; --i, n >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(n & 0xff);
    return out;
  };
  std::vector<Hash256> level;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].empty()) {
      level.push_back(Hash256{});
      continue;
    }
    std::string stream = "polnode/state-bucket/v2" + be(b, 4);
    for (const auto& [k, v] : buckets[b]) stream += be(k.size(), 8) + k + be(v.size(), 8) + v;
    level.push_back(Sha256(stream));
  }
  while (level.size() > 1) {
    std::vector<Hash256> up;
    for (std::size_t i = 0; i < level.size(); i += 2) {
      std::string node(1, '\x01');
      node.append(reinterpret_cast<const char*>(level[i].data()), 32);
      node.append(reinterpret_cast<const char*>(level[i + 1].data()), 32);
      up.push_back(Sha256(node));
    }
    level = std::move(up);
  }
  std::string top(kStateRootDomain);
  top.append(reinterpret_cast<const char*>(level[0].data()), 32);
  return Sha256(top);
}

TEST(ChainStoreTest, StateRootFollowsTheDocumentedDefinition) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  auto empty = store->StateRoot({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, NaiveStateRoot({}));
  auto one = store->StateRoot({{"k", "vv"}});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, NaiveStateRoot({{"k", "vv"}}));
  EXPECT_NE(*one, *empty);

  // The root depends only on the resulting state, not on whether it is pending or committed.
  Commit(*store, 0, {{"k", "vv"}, {"z", "1"}});
  auto committed = store->StateRoot({{"z", std::nullopt}});
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(*committed, *one);
  auto changed = store->StateRoot({{"k", "vw"}, {"z", std::nullopt}});
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(*changed, *one);
  EXPECT_EQ(*changed, NaiveStateRoot({{"k", "vw"}}));
  EXPECT_EQ(*store->StateRoot({{"k", ""}}), NaiveStateRoot({{"k", ""}, {"z", "1"}})) << "empty value is present";
}

// Issue 15 finding 6: the root re-hashed all state every block. The incremental tree must give the
// definition's root after any sequence of blocks, pending or committed.
TEST(StateTreeTest, IncrementalRootEqualsTheDefinitionOverRandomBlocks) {
  std::mt19937_64 rng(15);
  StateTree tree;
  std::map<std::string, std::string> model;
  for (int block = 0; block < 40; ++block) {
    const StateDelta delta = RandomDelta(rng, 25, 300, 4, 0, 5);
    std::map<std::string, std::string> after = model;
    ApplyDelta(delta, after);
    ASSERT_EQ(tree.RootWith(delta), NaiveStateRoot(after)) << "pending, block " << block;
    for (const auto& [k, v] : delta) tree.Set(k, v ? std::optional<std::string_view>(*v) : std::nullopt);
    tree.Rehash();
    model = std::move(after);
    ASSERT_EQ(tree.root(), NaiveStateRoot(model)) << "committed, block " << block;
    ASSERT_EQ(tree.size(), model.size());
  }
}

// Write installs the hashes StateRoot computed for its delta instead of re-hashing (ApplyWith).
// Its root must equal the definition's whether the last StateRoot was for this very delta, for
// another delta, or for none at all.
TEST(ChainStoreTest, CommittedRootIsRightWhateverStateRootWasAskedBefore) {
  TempDir dir;
  auto store = MustOpen(dir.File("db"));
  std::mt19937_64 rng(18);
  std::map<std::string, std::string> model;
  for (std::uint64_t height = 0; height < 24; ++height) {
    const StateDelta delta = RandomDelta(rng, 40, 200, 5, 1, 4);
    ApplyDelta(delta, model);
    switch (height % 3) {
      case 0: {  // the producer's order: StateRoot of the delta, then its commit
        auto root = store->StateRoot(delta);
        ASSERT_TRUE(root.ok());
        EXPECT_EQ(*root, NaiveStateRoot(model));
        break;
      }
      case 1: {  // the last StateRoot was for another delta
        StateDelta other = delta;
        other["k/other"] = "x";
        ASSERT_TRUE(store->StateRoot(other).ok());
        break;
      }
      default:
        break;  // the last StateRoot was the previous iteration's check of the committed root
    }
    auto prepared = store->Prepare(Record(height), delta);
    ASSERT_TRUE(prepared.ok());
    ASSERT_TRUE(store->Write(std::move(prepared).value()).ok());
    auto committed = store->StateRoot({});
    ASSERT_TRUE(committed.ok());
    ASSERT_EQ(*committed, NaiveStateRoot(model)) << "height " << height;
  }
}

TEST(StateTreeTest, ApplyWithEqualsSetAndRehash) {
  std::mt19937_64 rng(4);
  StateTree applied, rehashed;
  for (int block = 0; block < 30; ++block) {
    StateDelta delta;
    for (int i = 0; i < 30; ++i) {
      const std::string key = "a/" + std::to_string(rng() % 150);
      delta[key] = rng() % 4 == 0 ? std::nullopt : std::optional<std::string>(std::to_string(rng() % 1000));
    }
    StateRootUpdate update;
    const Hash256 pending = applied.RootWith(delta, &update);
    EXPECT_EQ(update.generation, applied.generation());
    applied.ApplyWith(delta, update);
    EXPECT_NE(update.generation, applied.generation()) << "an update is good for one generation only";
    for (const auto& [k, v] : delta) rehashed.Set(k, v ? std::optional<std::string_view>(*v) : std::nullopt);
    rehashed.Rehash();
    ASSERT_EQ(applied.root(), pending) << "block " << block;
    ASSERT_EQ(applied.root(), rehashed.root()) << "block " << block;
    ASSERT_EQ(applied.size(), rehashed.size());
    for (const auto& [k, v] : delta) ASSERT_EQ(applied.Get(k), rehashed.Get(k));
  }
}

// Each block h writes "counter" = h and 50 keys "w/<i>" = h, so a block applied in part would show
// up as keys that disagree with each other or with the tip.
StateDelta CrashDelta(std::uint64_t h) {
  StateDelta d{{"counter", std::to_string(h)}};
  for (int i = 0; i < 50; ++i) d["w/" + std::to_string(i)] = std::to_string(h) + std::string(200, 'x');
  return d;
}

// Runs in a child process: commits blocks as fast as it can while another thread sends SIGKILL to
// the process after `delay_us`. Never returns normally.
[[noreturn]] void CommitUntilKilled(const std::string& path, int delay_us) {
  auto opened = ChainStore::Open(path, ChainStoreOptions{.sync = false});
  if (!opened.ok()) std::_Exit(3);
  ChainStore& store = **opened;
  // The clock starts once the database is open, so the kill lands among the commits whatever the
  // machine's load makes process start-up cost.
  std::thread killer([delay_us] {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    std::raise(SIGKILL);
  });
  killer.detach();
  while (true) {
    std::uint64_t next = store.tip() ? store.tip()->height + 1 : 0;
    auto prepared = store.Prepare(Record(next), CrashDelta(next));
    if (!prepared.ok() || !store.Write(std::move(prepared).value()).ok()) std::_Exit(4);
  }
}

TEST(ChainStoreCrashTest, KillNineAtRandomMomentsNeverLeavesAPartialBlock) {
  // A threadsafe death test re-executes this test body in a fresh process up to the EXPECT_EXIT
  // being run (no fork of a process that has RocksDB threads); the environment variable hands
  // that process the parent's database directory.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  static constexpr char kDirEnv[] = "POLNODE_CHAIN_STORE_CRASH_DIR";
  std::optional<TempDir> dir;
  std::string path;
  if (const char* inherited = std::getenv(kDirEnv)) {
    path = inherited;
  } else {
    dir.emplace();
    path = dir->File("db");
    ASSERT_EQ(setenv(kDirEnv, path.c_str(), 1), 0);
  }
  std::mt19937 rng(20240611);
  std::uint64_t last_height = 0;
  bool any = false;
  for (int round = 0; round < 20; ++round) {
    const int delay_us = 1000 + static_cast<int>(rng() % 100000);
    EXPECT_EXIT(CommitUntilKilled(path, delay_us), ::testing::KilledBySignal(SIGKILL), "");
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    if (!store->tip()) continue;  // killed before the first block: nothing to check yet
    const std::uint64_t h = store->tip()->height;
    if (any) {
      EXPECT_GE(h, last_height) << "a committed block was lost in round " << round;
    }
    any = true;
    last_height = h;
    EXPECT_EQ(store->tip()->hash, HashOf(h));
    EXPECT_EQ(Value(*store, "counter"), std::to_string(h));
    for (int i = 0; i < 50; ++i) {
      ASSERT_EQ(Value(*store, "w/" + std::to_string(i)), std::to_string(h) + std::string(200, 'x'));
    }
    auto block = store->GetEncodedBlock(h);
    ASSERT_TRUE(block.ok());
    EXPECT_EQ(*block, "block-bytes-" + std::to_string(h));
    EXPECT_EQ(store->GetEncodedBlock(h + 1).status().code(), StatusCode::kNotFound);
  }
  EXPECT_TRUE(any) << "no round got as far as committing a block";
  RecordProperty("blocks_committed_across_crashes", static_cast<int>(last_height));
  if (dir) unsetenv(kDirEnv);
}

}  // namespace
}  // namespace polnode::consensus
