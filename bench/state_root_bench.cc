// State root cost per block at a large state (issue 15 finding 6): the version-1 definition
// re-hashed every pair of the state each block; version 2 (consensus/state_root.h) re-hashes the
// buckets a block touches and 16 tree levels above them. Both are measured in this run, on the
// same state and the same block delta, alternating, and the ratio is printed.
//
//   state_root_bench [--keys N] [--changes C] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "polnode/consensus/state_root.h"

namespace {

using polnode::consensus::Hash256;
using polnode::consensus::Sha256Hasher;
using polnode::consensus::StateDelta;
using polnode::consensus::StateTree;

// The version-1 root: every pair of the merged state, in key order, through one hash.
Hash256 FullRehash(const std::map<std::string, std::string>& state, const StateDelta& pending) {
  Sha256Hasher h;
  h.Update(std::string_view("polnode/state-root/v1"));
  auto append = [&h](std::string_view k, std::string_view v) {
    for (std::uint64_t n : {std::uint64_t{k.size()}}) h.Update(std::string_view(reinterpret_cast<const char*>(&n), 8));
    h.Update(k);
    std::uint64_t n = v.size();
    h.Update(std::string_view(reinterpret_cast<const char*>(&n), 8));
    h.Update(v);
  };
  auto c = state.begin();
  auto p = pending.begin();
  while (c != state.end() || p != pending.end()) {
    if (p == pending.end() || (c != state.end() && c->first < p->first)) {
      append(c->first, c->second);
      ++c;
      continue;
    }
    if (c != state.end() && c->first == p->first) ++c;
    if (p->second) append(p->first, *p->second);
    ++p;
  }
  return h.Finalize();
}

double Millis(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t keys = 1'000'000;
  std::size_t changes = 1'000;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::size_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--keys") keys = value;
    if (flag == "--changes") changes = value;
    if (flag == "--repeats") repeats = static_cast<int>(value);
  }
  std::mt19937_64 rng(15);
  // Values of about the size of the ledger's records (accounts, stakes, tasks: 10-300 bytes).
  std::map<std::string, std::string> state;
  StateTree tree;
  for (std::size_t i = 0; i < keys; ++i) {
    const std::string key = "acct/" + std::to_string(rng());
    std::string value(16 + rng() % 200, static_cast<char>('a' + i % 26));
    tree.Set(key, value);
    state.emplace(key, std::move(value));
  }
  const auto built = std::chrono::steady_clock::now();
  tree.Rehash();
  const double build_ms = Millis(std::chrono::steady_clock::now() - built);
  std::vector<double> v1, v2;
  for (int r = 0; r < repeats; ++r) {
    StateDelta delta;
    auto it = state.begin();
    for (std::size_t c = 0; c < changes; ++c) {
      std::advance(it, static_cast<long>(rng() % std::max<std::size_t>(1, state.size() / changes)));
      if (it == state.end()) it = state.begin();
      delta[it->first] = std::string(32, 'z');
    }
    // Alternate which one runs first, so neither always meets a warm cache.
    for (int order = 0; order < 2; ++order) {
      const bool full_first = (r + order) % 2 == 0;
      const auto t0 = std::chrono::steady_clock::now();
      const Hash256 root = full_first ? FullRehash(state, delta) : tree.RootWith(delta);
      const double ms = Millis(std::chrono::steady_clock::now() - t0);
      (full_first ? v1 : v2).push_back(ms);
      if (root == Hash256{}) std::puts("");  // keeps the computation observable
    }
  }
  std::sort(v1.begin(), v1.end());
  std::sort(v2.begin(), v2.end());
  const double m1 = v1[v1.size() / 2];
  const double m2 = v2[v2.size() / 2];
  std::printf("state root per block: %zu keys, %zu changed keys, %d repeats (median)\n", keys, changes, repeats);
  std::printf("  v1 full re-hash       %9.2f ms\n", m1);
  std::printf("  v2 bucketed, pending  %9.2f ms   (ratio %.1fx faster)\n", m2, m1 / m2);
  std::printf("  v2 initial build      %9.2f ms   (once, when a node opens its store)\n", build_ms);
  return 0;
}
