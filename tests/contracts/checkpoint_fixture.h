// Checkpoints with real state tensors, for tests that publish them on the ledger (publication.h):
// checkpoint c of a task with `tensors` state tensors holds tensor t = [c + t, c * t + 0.5, ...]
// with `elements` values each, named "t<t>"; its leaf is the v2 state hash after c * k steps.
#ifndef POLNODE_TESTS_CONTRACTS_CHECKPOINT_FIXTURE_H_
#define POLNODE_TESTS_CONTRACTS_CHECKPOINT_FIXTURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "polnode/consensus/merkle.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts::testing {

struct FixtureTensor {
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<float> values;
  consensus::Hash256 hash{};
};

class CheckpointFixture {
 public:
  CheckpointFixture(std::uint64_t segments, std::uint64_t k, int tensors, std::int64_t elements);

  const std::vector<consensus::Hash256>& leaves() const { return leaves_; }
  const std::vector<FixtureTensor>& tensors(std::uint64_t checkpoint) const { return checkpoints_[checkpoint]; }

  /// The PublishTx header of `checkpoint` for task `task_id`.
  proto::PublishTx Header(const std::string& task_id, std::uint64_t checkpoint) const;
  /// Every chunk of `checkpoint`, in tensor and chunk order.
  std::vector<proto::PublishTx> Chunks(const std::string& task_id, std::uint64_t checkpoint) const;

 private:
  std::uint64_t k_;
  std::vector<std::vector<FixtureTensor>> checkpoints_;
  std::vector<consensus::Hash256> leaves_;
};

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTS_CONTRACTS_CHECKPOINT_FIXTURE_H_
