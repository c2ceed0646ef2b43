// Chain verification: re-executes a stored chain from its genesis file in a scratch store and
// checks every block against what re-execution produces. `polnode ledger verify-chain` runs it.
//
// Per block, in height order (any failure stops with kCorruption naming the height and the check):
//   - the stored bytes decode as a canonical block; its chain id is the genesis chain id; its
//     height is its position;
//   - prev_hash is the hash of the previous block (block 0: all zero);
//   - tx_root matches its transactions; the producer is block 0's producer and its BIP-340
//     signature over the header hash verifies;
//   - every transaction decodes canonically, is for this chain and carries a valid signature;
//   - block 0's state root equals the state root of InitChain(genesis);
//   - for later blocks the Application accepts the block (ProcessProposal), executes it
//     (FinalizeBlock), and the resulting state root equals the header's state root;
//   - after the last block the scratch state and the stored state have the same root.
#ifndef POLNODE_LEDGER_CHAIN_VERIFIER_H_
#define POLNODE_LEDGER_CHAIN_VERIFIER_H_

#include <cstdint>
#include <string>

#include "polnode/consensus/chain_store.h"
#include "polnode/ledger/genesis_file.h"

namespace polnode::node {

struct ChainReport {
  std::uint64_t blocks = 0;        // blocks checked, genesis included
  std::uint64_t transactions = 0;  // transactions re-executed
  consensus::Hash256 tip_hash{};
  consensus::Hash256 state_root{};  // of the tip, as re-computed
};

/// Verifies the chain in `stored` (see the file comment), re-executing in a new ChainStore created
/// in `scratch_dir` (which must not exist yet; the caller removes it afterwards). kCorruption for
/// a chain that fails a check; kFailedPrecondition for an empty store.
[[nodiscard]] Result<ChainReport> VerifyChain(const consensus::ChainStore& stored, const GenesisFile& genesis,
                                              const std::string& scratch_dir);

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_CHAIN_VERIFIER_H_
