// The ledger's descent of a pinpoint game tree, played by the tests of the pinpoint game
// (tests/verifier): both parties answer GraphMoves for the same tree shape and the descent
// follows the first half where they differ.
#ifndef POLNODE_TESTING_GAME_DESCENT_H_
#define POLNODE_TESTING_GAME_DESCENT_H_

#include <gtest/gtest.h>

#include <cstdint>

#include "polnode/consensus/game_tree.h"
#include "polnode/verifier/pinpoint.h"

namespace polnode::testing {

/// Descends trees `a` and `b` (of one depth) as the ledger does, with GraphMoves only, and returns
/// the index of the leaf it stops at: the first leaf where they differ (the last one when none
/// does). A move either side cannot answer fails the calling test.
inline std::uint64_t Descend(const consensus::GameTree& a, const consensus::GameTree& b) {
  std::uint32_t level = a.depth();
  std::uint64_t index = 0;
  while (level > 0) {
    Result<proto::GraphMove> ma = verifier::AnswerGraphMove(a, level, index, level == a.depth());
    Result<proto::GraphMove> mb = verifier::AnswerGraphMove(b, level, index, level == b.depth());
    EXPECT_TRUE(ma.ok() && mb.ok());
    if (!ma.ok() || !mb.ok()) return index;
    index = ma->left() != mb->left() ? 2 * index : 2 * index + 1;
    --level;
  }
  return index;
}

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_GAME_DESCENT_H_
