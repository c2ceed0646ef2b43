#include "publication.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "dispatch.h"
#include "keys.h"
#include "move_fields.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "records.h"
#include "settlement.h"
#include "task_ops.h"
#include "verification.h"

namespace polnode::contracts {
namespace {

using consensus::Hash256;

std::uint64_t ChunkCount(std::int64_t elements) {
  return (static_cast<std::uint64_t>(elements) + payload::kPublishChunkElements - 1) / payload::kPublishChunkElements;
}

std::int64_t Elements(const proto::PublishedTensorHeader& tensor) {
  std::int64_t n = 1;
  for (std::int64_t d : tensor.dims()) n *= d;
  return n;
}

// The checkpoints the unavailable slots need: both ends of each of their segments and of the final
// segment, ascending.
std::set<std::uint64_t> NeededCheckpoints(const proto::Task& task) {
  const std::uint64_t final_segment = SegmentCount(task.spec()) - 1;
  std::set<std::uint64_t> needed;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.absent() || slot.verdict() != proto::VERDICT_UNAVAILABLE) continue;
    for (std::uint64_t s : slot.segments()) needed.insert({s, s + 1});
    needed.insert({final_segment, final_segment + 1});
  }
  return needed;
}

bool Complete(const proto::PublishedCheckpoint& published) {
  return published.tensors_size() > 0 &&
         std::all_of(published.verified().begin(), published.verified().end(), [](bool v) { return v; });
}

// Checks `header` and returns the state hash its tensors give, which its proof proves.
Result<Hash256> CheckHeader(const proto::Task& task, std::uint64_t checkpoint, const proto::PublishHeader& header) {
  if (header.tensors_size() != static_cast<int>(task.spec().state_tensor_count())) {
    return Status::InvalidArgument("the header must list the task's " + std::to_string(task.spec().state_tensor_count()) +
                                   " state tensors");
  }
  std::vector<std::string> names;
  std::vector<Hash256> hashes;
  for (const proto::PublishedTensorHeader& tensor : header.tensors()) {
    if (tensor.name().empty() || tensor.name().size() > kMaxTextBytes) {
      return Status::InvalidArgument("a tensor name must be 1.." + std::to_string(kMaxTextBytes) + " bytes");
    }
    if (tensor.dims_size() < 1 || tensor.dims_size() > 8) return Status::InvalidArgument("a tensor needs rank 1..8");
    std::int64_t elements = 1;
    for (std::int64_t d : tensor.dims()) {
      if (d < 1 || d > payload::kMaxPublishedElements || elements > payload::kMaxPublishedElements / d) {
        return Status::InvalidArgument("a tensor is empty or larger than " + std::to_string(payload::kMaxPublishedElements) +
                                       " elements");
      }
      elements *= d;
    }
    POLNODE_ASSIGN_OR_RETURN(Hash256 hash, HashField(tensor.hash(), "tensor hash"));
    names.push_back(tensor.name());
    hashes.push_back(hash);
  }
  const std::uint64_t step = checkpoint * task.spec().checkpoint_interval();
  const Hash256 state_hash = consensus::StateHashFromTensorHashes(step, names, hashes);
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, ProofField(header.proof(), "proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(task.proof_root(), "proof_root"));
  if (proof.leaf_index != checkpoint || proof.leaf_count != SegmentCount(task.spec()) + 1 ||
      !consensus::VerifyMerkleProof(root, state_hash, proof).ok()) {
    return Status::InvalidArgument("the header's tensors do not give checkpoint " + std::to_string(checkpoint) +
                                   " of the committed proof");
  }
  return state_hash;
}

// Reads every chunk of tensor `t` back and checks the whole against the header's hash.
Status VerifyTensor(const ExecContext& ctx, const proto::Task& task, std::uint64_t checkpoint, std::uint32_t t,
                    const proto::PublishedTensorHeader& header) {
  const std::int64_t elements = Elements(header);
  std::vector<float> values(static_cast<std::size_t>(elements));
  const std::uint64_t chunks = ChunkCount(elements);
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const std::string key = PublishChunkKey(task.id(), checkpoint, t, static_cast<std::uint32_t>(c));
    POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes, ctx.state.Get(key));
    if (!bytes) return Status::Internal("a counted chunk is missing: " + key);
    std::memcpy(values.data() + c * payload::kPublishChunkElements, bytes->data(), bytes->size());
  }
  std::vector<std::int64_t> dims(header.dims().begin(), header.dims().end());
  if (ToBytes(consensus::TensorHashOf(dims, values)) != header.hash()) {
    return Status::InvalidArgument("tensor " + std::to_string(t) + " (" + header.name() +
                                   ") does not hash to its header's hash; send its chunks again");
  }
  return Status::Ok();
}

Status ExecuteChunk(ExecContext& ctx, const proto::Task& task, std::uint64_t checkpoint,
                    proto::PublishedCheckpoint& published, const proto::PublishChunk& chunk) {
  if (published.tensors_size() == 0) return Status::FailedPrecondition("publish the checkpoint's header first");
  if (chunk.tensor() >= static_cast<std::uint32_t>(published.tensors_size())) {
    return Status::InvalidArgument("the header has no tensor " + std::to_string(chunk.tensor()));
  }
  const int t = static_cast<int>(chunk.tensor());
  if (published.verified(t)) return Status::AlreadyExists("that tensor is already published");
  const std::int64_t elements = Elements(published.tensors(t));
  const std::uint64_t chunks = ChunkCount(elements);
  if (chunk.chunk() >= chunks) return Status::InvalidArgument("the tensor has no chunk " + std::to_string(chunk.chunk()));
  const std::uint64_t begin = std::uint64_t{chunk.chunk()} * payload::kPublishChunkElements;
  const std::uint64_t count = std::min<std::uint64_t>(payload::kPublishChunkElements, static_cast<std::uint64_t>(elements) - begin);
  if (chunk.data().size() != count * sizeof(float)) {
    return Status::InvalidArgument("chunk " + std::to_string(chunk.chunk()) + " must hold " + std::to_string(count) +
                                   " float32 elements");
  }
  const std::string key = PublishChunkKey(task.id(), checkpoint, chunk.tensor(), chunk.chunk());
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> previous, ctx.state.Get(key));
  ctx.state.Put(key, chunk.data());
  if (!previous) published.set_chunks_received(t, published.chunks_received(t) + 1);
  if (published.chunks_received(t) == chunks) {
    POLNODE_RETURN_IF_ERROR(VerifyTensor(ctx, task, checkpoint, chunk.tensor(),
                                         published.tensors(t)));
    published.set_verified(t, true);
  }
  return Status::Ok();
}

}  // namespace

Status EnterPublishing(ExecContext& ctx, proto::Task& task) {
  task.clear_publish_required();
  for (std::uint64_t checkpoint : NeededCheckpoints(task)) {
    POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, LoadPublished(ctx.state, task.id(), checkpoint));
    if (!Complete(published)) task.add_publish_required(checkpoint);
  }
  if (task.publish_required().empty()) return ReopenVerification(ctx, task);
  ctx.Emit("publication_required", {{"task", ToHex(task.id())},
                                    {"checkpoints", std::to_string(task.publish_required_size())}});
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_PUBLISHING, ctx.params.publish_window(), proto::DUE_PUBLISH_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecutePublish(ExecContext& ctx, std::string_view signer, const proto::PublishTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.solver() != signer) return Status::PermissionDenied("only the task's solver publishes its checkpoints");
  if (task.status() != proto::TASK_PUBLISHING) return Status::FailedPrecondition("the task is not publishing");
  const auto& pending = task.publish_required();
  const auto required = std::find(pending.begin(), pending.end(), msg.checkpoint());
  if (required == pending.end()) {
    return Status::FailedPrecondition("checkpoint " + std::to_string(msg.checkpoint()) + " is not required");
  }
  POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, LoadPublished(ctx.state, task.id(), msg.checkpoint()));
  if (msg.has_header()) {
    if (published.tensors_size() > 0) return Status::AlreadyExists("the checkpoint's header is already published");
    POLNODE_ASSIGN_OR_RETURN(Hash256 state_hash, CheckHeader(task, msg.checkpoint(), msg.header()));
    *published.mutable_tensors() = msg.header().tensors();
    // Kept so that a challenger can open a game with only the ledger's data (publication.h).
    published.set_state_hash(ToBytes(state_hash));
    published.set_proof(msg.header().proof());
    task.add_published(msg.checkpoint());
    published.mutable_chunks_received()->Resize(msg.header().tensors_size(), 0);
    published.mutable_verified()->Resize(msg.header().tensors_size(), false);
  } else if (msg.has_chunk()) {
    POLNODE_RETURN_IF_ERROR(ExecuteChunk(ctx, task, msg.checkpoint(), published, msg.chunk()));
  } else {
    return Status::InvalidArgument("a publication carries a header or a chunk");
  }
  StorePublished(ctx.state, task.id(), msg.checkpoint(), published);
  if (!Complete(published)) {
    if (msg.has_header()) StoreTask(ctx.state, task);
    return Status::Ok();
  }
  ctx.Emit("checkpoint_published", {{"task", ToHex(task.id())}, {"checkpoint", std::to_string(msg.checkpoint())}});
  const int index = static_cast<int>(required - pending.begin());
  task.mutable_publish_required()->erase(task.mutable_publish_required()->begin() + index);
  if (!task.publish_required().empty()) {
    StoreTask(ctx.state, task);
    return Status::Ok();
  }
  return ReopenVerification(ctx, task);
}

Status OnPublishDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_PUBLISHING || task.deadline() != ctx.block.height) return Status::Ok();
  return SettleUnavailable(ctx, task);
}

}  // namespace polnode::contracts
