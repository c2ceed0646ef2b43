#include "checkpoint_fixture.h"

#include <algorithm>
#include <cstring>

#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/payloads.h"

namespace polnode::contracts::testing {

CheckpointFixture::CheckpointFixture(std::uint64_t segments, std::uint64_t k, int tensors, std::int64_t elements)
    : k_(k) {
  for (std::uint64_t c = 0; c <= segments; ++c) {
    std::vector<FixtureTensor> state;
    std::vector<std::string> names;
    std::vector<consensus::Hash256> hashes;
    for (int t = 0; t < tensors; ++t) {
      FixtureTensor tensor;
      tensor.name = "t" + std::to_string(t);
      tensor.dims = {elements};
      for (std::int64_t i = 0; i < elements; ++i) {
        tensor.values.push_back(static_cast<float>(c + static_cast<std::uint64_t>(t)) + 0.5f * static_cast<float>(i));
      }
      tensor.hash = consensus::TensorHashOf(tensor.dims, tensor.values);
      names.push_back(tensor.name);
      hashes.push_back(tensor.hash);
      state.push_back(std::move(tensor));
    }
    leaves_.push_back(consensus::StateHashFromTensorHashes(c * k_, names, hashes));
    checkpoints_.push_back(std::move(state));
  }
}

proto::PublishTx CheckpointFixture::Header(const std::string& task_id, std::uint64_t checkpoint) const {
  proto::PublishTx msg;
  msg.set_task_id(task_id);
  msg.set_checkpoint(checkpoint);
  proto::PublishHeader* header = msg.mutable_header();
  for (const FixtureTensor& tensor : checkpoints_[checkpoint]) {
    proto::PublishedTensorHeader* t = header->add_tensors();
    t->set_name(tensor.name);
    for (std::int64_t d : tensor.dims) t->add_dims(d);
    t->set_hash(std::string(reinterpret_cast<const char*>(tensor.hash.data()), tensor.hash.size()));
  }
  const std::vector<std::uint8_t> proof =
      consensus::SerializeMerkleProof(*consensus::MerkleTree(leaves_).Prove(checkpoint));
  header->set_proof(std::string(proof.begin(), proof.end()));
  return msg;
}

std::vector<proto::PublishTx> CheckpointFixture::Chunks(const std::string& task_id, std::uint64_t checkpoint) const {
  std::vector<proto::PublishTx> chunks;
  const std::vector<FixtureTensor>& state = checkpoints_[checkpoint];
  for (std::size_t t = 0; t < state.size(); ++t) {
    const std::vector<float>& values = state[t].values;
    for (std::size_t begin = 0, c = 0; begin < values.size(); begin += payload::kPublishChunkElements, ++c) {
      const std::size_t count = std::min<std::size_t>(payload::kPublishChunkElements, values.size() - begin);
      proto::PublishTx msg;
      msg.set_task_id(task_id);
      msg.set_checkpoint(checkpoint);
      msg.mutable_chunk()->set_tensor(static_cast<std::uint32_t>(t));
      msg.mutable_chunk()->set_chunk(static_cast<std::uint32_t>(c));
      msg.mutable_chunk()->set_data(std::string(reinterpret_cast<const char*>(values.data() + begin), count * sizeof(float)));
      chunks.push_back(std::move(msg));
    }
  }
  return chunks;
}

}  // namespace polnode::contracts::testing
