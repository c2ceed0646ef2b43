// MemoryStateStore and the per-transaction OverlayStateStore.
#include "polnode/contracts/state_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace polnode::contracts {
namespace {

std::vector<std::string> ScanKeys(const StateStore& store, std::string_view prefix) {
  std::vector<std::string> keys;
  Status status = store.Scan(prefix, [&keys](std::string_view key, std::string_view) {
    keys.emplace_back(key);
    return true;
  });
  EXPECT_TRUE(status.ok());
  return keys;
}

std::optional<std::string> Read(const StateStore& store, std::string_view key) {
  auto value = store.Get(key);
  EXPECT_TRUE(value.ok());
  return value.ok() ? *value : std::nullopt;
}

TEST(MemoryStateStore, GetPutDeleteAndOrderedPrefixScan) {
  MemoryStateStore store;
  EXPECT_EQ(Read(store, "a"), std::nullopt);
  store.Put("b/2", "two");
  store.Put("b/1", "one");
  store.Put("c", "");
  store.Put("a", "x");
  EXPECT_EQ(Read(store, "c"), std::string());  // empty value is present
  EXPECT_EQ(ScanKeys(store, "b/"), (std::vector<std::string>{"b/1", "b/2"}));
  store.Delete("b/1");
  store.Delete("missing");
  EXPECT_EQ(ScanKeys(store, ""), (std::vector<std::string>{"a", "b/2", "c"}));
}

TEST(MemoryStateStore, ScanStopsWhenTheVisitorSaysSo) {
  MemoryStateStore store;
  for (char c = 'a'; c <= 'e'; ++c) store.Put(std::string(1, c), "v");
  int visited = 0;
  ASSERT_TRUE(store.Scan("", [&visited](std::string_view, std::string_view) { return ++visited < 2; }).ok());
  EXPECT_EQ(visited, 2);
}

TEST(OverlayStateStore, ReadsThroughAndShadowsTheBase) {
  MemoryStateStore base;
  base.Put("k/1", "base1");
  base.Put("k/2", "base2");
  OverlayStateStore overlay(base);
  EXPECT_EQ(Read(overlay, "k/1"), "base1");
  overlay.Put("k/1", "new1");
  overlay.Delete("k/2");
  overlay.Put("k/3", "new3");
  EXPECT_EQ(Read(overlay, "k/1"), "new1");
  EXPECT_EQ(Read(overlay, "k/2"), std::nullopt);
  EXPECT_EQ(ScanKeys(overlay, "k/"), (std::vector<std::string>{"k/1", "k/3"}));
  EXPECT_EQ(overlay.pending_writes(), 3u);
  // The base is untouched until the overlay is flushed.
  EXPECT_EQ(Read(base, "k/1"), "base1");
  EXPECT_EQ(Read(base, "k/2"), "base2");
}

TEST(OverlayStateStore, FlushAppliesEverythingAndDroppingAppliesNothing) {
  MemoryStateStore base;
  base.Put("x", "1");
  {
    OverlayStateStore dropped(base);
    dropped.Put("x", "2");
    dropped.Put("y", "3");
  }
  EXPECT_EQ(base.pairs().size(), 1u);
  EXPECT_EQ(Read(base, "x"), "1");
  OverlayStateStore kept(base);
  kept.Put("y", "3");
  kept.Delete("x");
  kept.FlushTo(base);
  EXPECT_EQ(kept.pending_writes(), 0u);
  EXPECT_EQ(Read(base, "x"), std::nullopt);
  EXPECT_EQ(Read(base, "y"), "3");
}

TEST(OverlayStateStore, NestsOverAnotherOverlay) {
  MemoryStateStore base;
  OverlayStateStore block(base);
  block.Put("a", "1");
  OverlayStateStore tx(block);
  EXPECT_EQ(Read(tx, "a"), "1");
  tx.Put("b", "2");
  tx.FlushTo(block);
  EXPECT_TRUE(base.pairs().empty());
  block.FlushTo(base);
  EXPECT_EQ(ScanKeys(base, ""), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace polnode::contracts
