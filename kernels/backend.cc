// Backend selection by name (backend.h), and the host-memory buffers every CPU backend uses for
// device-resident execution. The GPU factories exist only when the build compiled them
// (kernels/gpu/gpu.cmake defines POLNODE_HAVE_CUDA / POLNODE_HAVE_HIP on polnode_kernels).
#include <array>
#include <cstring>
#include <string>

#include "polnode/kernels/backend.h"
#include "polnode/kernels/validate_run.h"

#if defined(POLNODE_HAVE_CUDA) || defined(POLNODE_HAVE_HIP)
#include "gpu/gpu_backend.h"
#endif

namespace polnode::kernels {
namespace {

// A buffer of a host backend: a tensor in host memory, run through Backend::Run.
class HostBuffer final : public Buffer {
 public:
  HostBuffer(const Backend* owner, const Shape& shape) : Buffer(owner, shape), tensor_(shape) {}

  // The storage, shaped as the buffer is now (Buffer::Reshape changes the buffer's shape only, and
  // checked that the element count stays). Mutable: a const Buffer is one the caller only reads,
  // and the backend writes it only where an operator's contract says so.
  Tensor& tensor() const {
    if (tensor_.shape() != shape()) (void)tensor_.Reshape(shape());
    return tensor_;
  }

 private:
  mutable Tensor tensor_;
};

// The tensor behind `buffer`, or kInvalidArgument when it is null or another backend made it.
Result<Tensor*> HostTensorOf(const Backend& backend, const Buffer* buffer, const std::string& what) {
  if (buffer == nullptr) return Status::InvalidArgument(what + " is null");
  const auto* host = dynamic_cast<const HostBuffer*>(buffer);
  if (host == nullptr || buffer->owner() != &backend) {
    return Status::InvalidArgument(what + " was not allocated by backend " + backend.name());
  }
  return &host->tensor();
}

constexpr std::size_t kMaxOperands = 5;  // kLayerNormGrad's inputs; no operator has more outputs

// Enqueue's checks from the buffers alone (any backend's): counts, nulls, aliasing, and that every
// output is shaped as the operator writes it.
Status CheckBufferCall(Op op, const OpAttrs& attrs, std::span<const Buffer* const> inputs,
                       std::span<Buffer* const> outputs) {
  const std::string name(OpName(op));
  if (inputs.size() > kMaxOperands || outputs.size() > kMaxOperands) {
    return Status::InvalidArgument(name + ": too many operands");
  }
  POLNODE_RETURN_IF_ERROR(CheckRunOutputs<Buffer>(op, inputs, outputs));
  std::array<const Shape*, kMaxOperands> in_shapes{};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) return Status::InvalidArgument(name + ": input " + std::to_string(i) + " is null");
    in_shapes[i] = &inputs[i]->shape();
  }
  POLNODE_ASSIGN_OR_RETURN(const std::vector<Shape> shapes,
                           InferOutputShapesOf(op, attrs, std::span<const Shape* const>(in_shapes.data(), inputs.size())));
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o]->shape() != shapes[o]) {
      return Status::InvalidArgument(name + ": output " + std::to_string(o) + " is a buffer of " +
                                     ShapeToString(outputs[o]->shape()) + ", the operator writes " +
                                     ShapeToString(shapes[o]));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Buffer::Reshape(Shape shape) {
  for (std::int64_t d : shape) {
    if (d < 0) return Status::InvalidArgument("a buffer cannot be viewed as " + ShapeToString(shape));
  }
  if (NumElements(shape) != NumElements(shape_)) {
    return Status::InvalidArgument("a buffer of " + ShapeToString(shape_) + " cannot be viewed as " +
                                   ShapeToString(shape));
  }
  shape_ = std::move(shape);
  return Status::Ok();
}

Result<std::unique_ptr<Buffer>> Backend::Allocate(const Shape& shape) {
  for (std::int64_t d : shape) {
    if (d < 0) return Status::InvalidArgument("cannot allocate a buffer of " + ShapeToString(shape));
  }
  return std::unique_ptr<Buffer>(new HostBuffer(this, shape));
}

Status Backend::Upload(std::span<const float> values, Buffer& to) {
  POLNODE_ASSIGN_OR_RETURN(Tensor * host, HostTensorOf(*this, &to, "the upload's buffer"));
  if (static_cast<std::int64_t>(values.size()) != to.numel()) {
    return Status::InvalidArgument("uploading " + std::to_string(values.size()) + " values to a buffer of " +
                                   ShapeToString(to.shape()));
  }
  if (!values.empty()) std::memcpy(host->data(), values.data(), values.size_bytes());
  CountUpload(static_cast<std::int64_t>(values.size_bytes()));
  return Status::Ok();
}

Status Backend::Download(const Buffer& from, std::span<float> to) {
  POLNODE_ASSIGN_OR_RETURN(const Tensor* host, HostTensorOf(*this, &from, "the download's buffer"));
  if (static_cast<std::int64_t>(to.size()) != from.numel()) {
    return Status::InvalidArgument("downloading a buffer of " + ShapeToString(from.shape()) + " into " +
                                   std::to_string(to.size()) + " values");
  }
  if (!to.empty()) std::memcpy(to.data(), host->data(), to.size_bytes());
  CountDownload(static_cast<std::int64_t>(to.size_bytes()));
  return Status::Ok();
}

Status Backend::Enqueue(Op op, const OpAttrs& attrs, std::span<const Buffer* const> inputs,
                        std::span<Buffer* const> outputs) {
  std::array<const Tensor*, kMaxOperands> in{};
  std::array<Tensor*, kMaxOperands> out{};
  if (inputs.size() > kMaxOperands || outputs.size() > kMaxOperands) {
    return Status::InvalidArgument(std::string(OpName(op)) + ": too many operands");
  }
  const std::span<const Tensor*> in_span(in.data(), inputs.size());
  const std::span<Tensor*> out_span(out.data(), outputs.size());
  // Counts, aliasing and shapes here, to hold the buffers to their shapes; Run then checks the
  // whole call, index values included, once.
  POLNODE_RETURN_IF_ERROR(HostOperands(op, attrs, inputs, outputs, in_span, out_span));
  return Run(op, attrs, in_span, out_span);
}

Status Backend::EnqueueFused(Fusion fusion, std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) {
  const auto [first, second] = FusedOps(fusion);
  const std::size_t first_outputs = static_cast<std::size_t>(NumOutputs(first));
  if (outputs.size() != first_outputs + static_cast<std::size_t>(NumOutputs(second))) {
    return Status::InvalidArgument(std::string(OpName(first)) + " + " + std::string(OpName(second)) + " have " +
                                   std::to_string(first_outputs + static_cast<std::size_t>(NumOutputs(second))) +
                                   " outputs, got " + std::to_string(outputs.size()));
  }
  // Both operators are checked before either runs, so a refused pair writes nothing.
  const Buffer* const between[] = {outputs[0]};
  POLNODE_RETURN_IF_ERROR(CheckBufferCall(first, OpAttrs{}, inputs, outputs.first(first_outputs)));
  POLNODE_RETURN_IF_ERROR(CheckBufferCall(second, OpAttrs{}, between, outputs.subspan(first_outputs)));
  POLNODE_RETURN_IF_ERROR(Enqueue(first, OpAttrs{}, inputs, outputs.first(first_outputs)));
  return Enqueue(second, OpAttrs{}, between, outputs.subspan(first_outputs));
}

Status Backend::HostOperands(Op op, const OpAttrs& attrs, std::span<const Buffer* const> inputs,
                             std::span<Buffer* const> outputs, std::span<const Tensor*> in,
                             std::span<Tensor*> out) const {
  const std::string name(OpName(op));
  if (in.size() != inputs.size() || out.size() != outputs.size()) {
    return Status::InvalidArgument(name + ": operand spans of different lengths");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    POLNODE_ASSIGN_OR_RETURN(in[i], HostTensorOf(*this, inputs[i], name + ": input " + std::to_string(i)));
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    POLNODE_ASSIGN_OR_RETURN(out[o], HostTensorOf(*this, outputs[o], name + ": output " + std::to_string(o)));
  }
  return CheckBufferCall(op, attrs, inputs, outputs);
}

Status Backend::Synchronize() { return Status::Ok(); }

void Backend::RunHostTasks(std::int64_t tasks, const std::function<void(std::int64_t)>& task) {
  for (std::int64_t i = 0; i < tasks; ++i) task(i);
}

std::array<Op, 2> FusedOps(Fusion fusion) {
  switch (fusion) {
    case Fusion::kBiasAddRelu: return {Op::kBiasAdd, Op::kRelu};
    case Fusion::kReluGradBiasGrad: return {Op::kReluGrad, Op::kBiasGrad};
  }
  return {Op::kBiasAdd, Op::kRelu};  // unreachable: every enumerator is handled above
}

Result<std::unique_ptr<Backend>> MakeBackend(std::string_view name, int threads) {
  if (threads < 1) {
    return Status::InvalidArgument("backend \"" + std::string(name) + "\" needs threads >= 1, got " +
                                   std::to_string(threads));
  }
  if (name == "reference") return MakeReferenceBackend();
  if (name == "cpu") return MakeCpuBackend(threads);
  if (name == "cuda") {
#if defined(POLNODE_HAVE_CUDA)
    return MakeCudaBackend();
#else
    return Status::Unavailable(
        "this polnode was built without CUDA (nvcc not found at configure time)");
#endif
  }
  if (name == "hip") {
#if defined(POLNODE_HAVE_HIP)
    return MakeHipBackend();
#else
    return Status::Unavailable(
        "this polnode was built without HIP (hipcc not found at configure time)");
#endif
  }
  return Status::InvalidArgument("unknown backend \"" + std::string(name) +
                                 "\"; expected reference, cpu, cuda or hip");
}

std::vector<std::string> CompiledBackends() {
  std::vector<std::string> names = {"reference", "cpu"};
#if defined(POLNODE_HAVE_CUDA)
  names.emplace_back("cuda");
#endif
#if defined(POLNODE_HAVE_HIP)
  names.emplace_back("hip");
#endif
  return names;
}

}  // namespace polnode::kernels
