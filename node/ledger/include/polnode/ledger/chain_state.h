// The contracts' StateStore over the ledger's RocksDB store (consensus::ChainStore).
//
// BlockState is the state a block executes against: reads fall through to the committed state,
// writes collect in a StateDelta that ChainStore::Prepare puts into the block's single atomic
// WriteBatch. Dropping a BlockState drops the block's writes; nothing reaches RocksDB before the
// block does.
#ifndef POLNODE_LEDGER_CHAIN_STATE_H_
#define POLNODE_LEDGER_CHAIN_STATE_H_

#include <string>
#include <string_view>

#include "polnode/consensus/chain_store.h"
#include "polnode/contracts/state_store.h"

namespace polnode::node {

class BlockState final : public contracts::StateStore {
 public:
  /// `store` must outlive this object and must not commit a block while it holds writes.
  explicit BlockState(const consensus::ChainStore& store) : store_(store) {}

  [[nodiscard]] Result<std::optional<std::string>> Get(std::string_view key) const override;
  void Put(std::string key, std::string value) override;
  void Delete(std::string key) override;
  [[nodiscard]] Status Scan(std::string_view prefix, const contracts::StateVisitor& visit) const override;

  /// The buffered writes (what the block changes), sorted by key.
  const consensus::StateDelta& delta() const { return delta_; }

 private:
  const consensus::ChainStore& store_;
  consensus::StateDelta delta_;
};

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_CHAIN_STATE_H_
