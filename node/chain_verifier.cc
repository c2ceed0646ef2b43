#include "chain_verifier.h"

#include <filesystem>

#include "chain_state.h"
#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/application.h"

namespace polnode::node {
namespace {

using consensus::Block;
using consensus::Hash256;

Status Bad(std::uint64_t height, const std::string& what) {
  return Status::Corruption("block " + std::to_string(height) + ": " + what);
}

// The checks that need only the block and its parent.
Status CheckLinks(const Block& block, std::uint64_t height, const std::string& chain_id, const Hash256& parent_hash,
                  const std::array<std::uint8_t, 32>* producer) {
  const consensus::BlockHeader& h = block.header;
  if (h.height != height) return Bad(height, "header says height " + std::to_string(h.height));
  if (h.chain_id != chain_id) return Bad(height, "chain id '" + h.chain_id + "' is not the genesis chain id");
  if (h.prev_hash != parent_hash) return Bad(height, "prev_hash does not match the previous block's hash");
  if (Status s = consensus::CheckBlockContents(block); !s.ok()) return Bad(height, s.message());
  if (producer != nullptr && h.producer != *producer) return Bad(height, "signed by a different producer than block 0");
  if (Status s = consensus::VerifyBlockSignature(h); !s.ok()) return Bad(height, "producer signature: " + s.message());
  return Status::Ok();
}

}  // namespace

Result<ChainReport> VerifyChain(const consensus::ChainStore& stored, const GenesisFile& genesis,
                                const std::string& scratch_dir) {
  const std::optional<consensus::ChainTip> tip = stored.tip();
  if (!tip) return Status::FailedPrecondition("the store holds no blocks");
  if (std::filesystem::exists(scratch_dir)) {
    return Status::FailedPrecondition("scratch directory " + scratch_dir + " already exists");
  }
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<consensus::ChainStore> scratch,
                           consensus::ChainStore::Open(scratch_dir, consensus::ChainStoreOptions{.sync = false}));
  contracts::Application app;
  const std::string& chain_id = genesis.spec.chain_id();
  // Generous limits: verification checks what the state machine allows, not producer settings.
  const contracts::ProposalLimits limits{consensus::kMaxBlockTxs, consensus::kMaxBlockBytes};
  ChainReport report;
  Hash256 parent_hash{};
  Hash256 parent_randomness{};
  std::array<std::uint8_t, 32> producer{};

  for (std::uint64_t height = 0; height <= tip->height; ++height) {
    POLNODE_ASSIGN_OR_RETURN(std::string bytes, stored.GetEncodedBlock(height));
    Result<Block> decoded = consensus::DecodeBlock(bytes);
    if (!decoded.ok()) return Bad(height, decoded.status().ToString());
    const Block& block = *decoded;
    POLNODE_RETURN_IF_ERROR(CheckLinks(block, height, chain_id, parent_hash, height == 0 ? nullptr : &producer));
    if (height == 0) producer = block.header.producer;
    if (Status s = consensus::VerifyBlockRandomness(block.header, parent_randomness); !s.ok()) {
      return Bad(height, s.message());
    }
    parent_randomness = block.header.randomness;

    BlockState state(*scratch);
    if (height == 0) {
      if (Status s = app.InitChain(genesis.spec, state); !s.ok()) return s.WithContext("genesis");
    } else {
      std::vector<contracts::VerifiedTx> txs;
      txs.reserve(block.txs.size());
      for (std::size_t i = 0; i < block.txs.size(); ++i) {
        Result<consensus::TxEnvelope> env = consensus::DecodeEnvelope(block.txs[i]);
        if (!env.ok()) return Bad(height, "tx " + std::to_string(i) + ": " + env.status().ToString());
        if (env->chain_id != chain_id) return Bad(height, "tx " + std::to_string(i) + " is for chain '" + env->chain_id + "'");
        if (Status s = consensus::VerifyEnvelope(*env); !s.ok()) {
          return Bad(height, "tx " + std::to_string(i) + " signature: " + s.ToString());
        }
        txs.push_back(contracts::MakeVerifiedTx(*env, consensus::TxId(block.txs[i]), block.txs[i].size()));
      }
      contracts::BlockContext context;
      context.height = height;
      context.time_unix_ms = block.header.time_unix_ms;
      context.randomness = block.header.randomness;
      context.proposer = block.header.producer;
      if (Status s = app.ProcessProposal(txs, context, state, limits); !s.ok()) {
        return Bad(height, "the state machine rejects the block: " + s.ToString());
      }
      Result<contracts::BlockResult> result = app.FinalizeBlock(context, txs, state);
      if (!result.ok()) return Bad(height, "re-execution failed: " + result.status().ToString());
      report.transactions += txs.size();
    }
    POLNODE_ASSIGN_OR_RETURN(Hash256 root, scratch->StateRoot(state.delta()));
    if (root != block.header.state_root) {
      return Bad(height, "state root mismatch: header has " + consensus::ToHex(block.header.state_root) +
                             ", re-execution gives " + consensus::ToHex(root));
    }
    consensus::BlockRecord record;
    record.height = height;
    record.hash = consensus::BlockHash(block.header);
    record.encoded_block = std::move(bytes);
    POLNODE_ASSIGN_OR_RETURN(consensus::PreparedCommit commit, scratch->Prepare(record, state.delta()));
    POLNODE_RETURN_IF_ERROR(scratch->Write(std::move(commit)));
    if (height > 0) POLNODE_RETURN_IF_ERROR(app.Commit().status());
    parent_hash = record.hash;
    report.state_root = root;
    ++report.blocks;
  }
  if (parent_hash != tip->hash) return Status::Corruption("the stored tip record does not name the last block's hash");
  POLNODE_ASSIGN_OR_RETURN(Hash256 stored_root, stored.StateRoot({}));
  if (stored_root != report.state_root) {
    return Status::Corruption("the stored state differs from the re-executed state (root " +
                              consensus::ToHex(stored_root) + " vs " + consensus::ToHex(report.state_root) + ")");
  }
  report.tip_hash = parent_hash;
  return report;
}

}  // namespace polnode::node
