// Backend: the one operator interface that every implementation (scalar reference, fast CPU,
// CUDA, HIP) provides. Callers hold a Backend and never branch on which one it is.
#ifndef POLNODE_KERNELS_BACKEND_H_
#define POLNODE_KERNELS_BACKEND_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {

class Backend;

/// Two operators in a row of a step graph that a backend may evaluate in one pass over memory.
/// Fusion hides nothing and changes no bits: both operators keep their graph nodes, and every
/// output of both is written with the bits the two give when enqueued one after the other. In
/// each pair the second operator reads only the first's output 0.
enum class Fusion : std::uint8_t {
  /// kBiasAdd(X, b) -> Y, then kRelu(Y) -> R: inputs {X, b}, outputs {Y, R}.
  kBiasAddRelu,
  /// kReluGrad(X, dY) -> dX, then kBiasGrad(dX) -> db: inputs {X, dY}, outputs {dX, db}.
  kReluGradBiasGrad,
};

/// The operators `fusion` stands for, in order.
std::array<Op, 2> FusedOps(Fusion fusion);

/// A tensor held where a backend computes: device memory for the GPU backends, host memory for
/// the CPU ones. Made by Backend::Allocate and only usable with the backend that made it, which
/// must outlive it. Its contents cross to the host only through Backend::Upload and Download.
class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return NumElements(shape_); }
  /// The backend that made this buffer.
  const Backend* owner() const { return owner_; }
  /// Views the same elements with `shape` (a graph's reshape); kInvalidArgument, and no change,
  /// when the element count differs.
  [[nodiscard]] Status Reshape(Shape shape);

 protected:
  Buffer(const Backend* owner, Shape shape) : owner_(owner), shape_(std::move(shape)) {}

 private:
  const Backend* owner_;
  Shape shape_;
};

/// What crossed between the host and a backend's buffers since the backend was made: what a
/// device backend copies (a host backend counts the same calls, which cost it a memcpy at most).
struct TransferCounts {
  std::int64_t uploads = 0;
  std::int64_t upload_bytes = 0;
  std::int64_t downloads = 0;
  std::int64_t download_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// "reference", "cpu-avx512", "cpu-avx2", "cpu-scalar", "cuda", "hip": what actually runs.
  virtual std::string name() const = 0;

  /// Runs `op` on `inputs`, writing `outputs` (resized as needed). Returns kInvalidArgument for
  /// shapes that break the operator's contract (outputs untouched), kUnavailable/kInternal for a
  /// device failure. Bits are those of the canonical order in op.h.
  [[nodiscard]] virtual Status Run(Op op, const OpAttrs& attrs,
                                   std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs) = 0;

  // Device-resident execution: buffers stay where the backend computes, operators are enqueued on
  // them without waiting, and only what the caller asks for crosses to the host (a training step:
  // its batch up, its loss down; the state at checkpoints). Every operator gives the bits Run
  // gives. The defaults, used by the CPU backends, keep buffers in host memory and run each
  // operator at once through Run; the GPU backends keep them in device memory.

  /// A buffer of `shape` holding +0.0f. kInvalidArgument for a negative dimension; a device's
  /// allocation error (kResourceExhausted or kInternal).
  [[nodiscard]] virtual Result<std::unique_ptr<Buffer>> Allocate(const Shape& shape);
  /// Copies `values` into `to` (row-major, exactly to.numel() values: kInvalidArgument otherwise,
  /// or for a buffer of another backend). May return before the copy is done; `values` may be
  /// reused at once (a device backend stages them).
  [[nodiscard]] virtual Status Upload(std::span<const float> values, Buffer& to);
  /// Waits for every operator enqueued before, then copies `from` into `to` (exactly from.numel()
  /// values: kInvalidArgument otherwise). Returns a device error of an earlier enqueued operator.
  [[nodiscard]] virtual Status Download(const Buffer& from, std::span<float> to);
  /// Enqueues `op` on buffers of this backend: the same operator, contract and bits as Run, with
  /// every output buffer already shaped as the operator writes it (kInvalidArgument otherwise: a
  /// buffer is never resized), and the same checks of counts, aliasing and shapes. Index-valued
  /// inputs (labels, pool taps, token ids: IndexBound) must hold valid indices: a host backend
  /// checks them as Run does; a device backend cannot read its memory without waiting, so the
  /// caller checks the indices it uploads (solver::ResidentTraining checks every batch), and the
  /// only indices made on the device, pool taps, are valid by construction. A device failure may
  /// surface at the next Synchronize or Download instead.
  [[nodiscard]] virtual Status Enqueue(Op op, const OpAttrs& attrs, std::span<const Buffer* const> inputs,
                                       std::span<Buffer* const> outputs);
  /// Enqueues `fusion`'s two operators (inputs: the first's; outputs: the first's, then the
  /// second's): the contract, checks and bits of Enqueue of the first followed by Enqueue of the
  /// second on the first's output 0. R of kBiasAddRelu may be X's buffer (X is read up before R is
  /// written, as in the two operators in a row). The default enqueues the two in a row; a backend
  /// overrides it where one pass over memory is cheaper.
  [[nodiscard]] virtual Status EnqueueFused(Fusion fusion, std::span<const Buffer* const> inputs,
                                            std::span<Buffer* const> outputs);
  /// Waits for every enqueued operator and returns the first device error since the last call.
  [[nodiscard]] virtual Status Synchronize();

  /// The host threads this backend computes on, the caller's included: a CPU backend's pool size
  /// (1 for the single-threaded reference); 0 for a device backend, whose host thread only
  /// enqueues and waits.
  virtual int host_threads() const { return 0; }
  /// Calls task(i) once for every i in [0, tasks), each index on whichever of the host_threads()
  /// threads comes free first, and returns when all have finished; the calling thread takes part.
  /// For host work between operators that should share the cores the operators use instead of
  /// competing with them (a checkpoint's hashing and write, solver::Prove), so tasks must write
  /// disjoint outputs and their results must not depend on which thread ran them. Not
  /// reentrant, and not while operators run (a host backend's Enqueue runs them at once). The
  /// default, for device backends, runs the tasks on the calling thread in index order.
  virtual void RunHostTasks(std::int64_t tasks, const std::function<void(std::int64_t)>& task);

  /// Uploads and downloads so far (Upload and Download calls; Run's own copies are not counted).
  const TransferCounts& transfers() const { return transfers_; }

 protected:
  /// A host backend's checks for Enqueue and EnqueueFused: those of Enqueue (counts, aliasing,
  /// shapes) for `op` on this backend's host buffers; then the tensors behind `inputs` and
  /// `outputs` in `in` and `out` (as long as the spans). Nothing is modified.
  [[nodiscard]] Status HostOperands(Op op, const OpAttrs& attrs, std::span<const Buffer* const> inputs,
                                    std::span<Buffer* const> outputs, std::span<const Tensor*> in,
                                    std::span<Tensor*> out) const;

  /// Counts one Upload or Download of `bytes` (every override of Upload and Download calls it).
  void CountUpload(std::int64_t bytes) {
    ++transfers_.uploads;
    transfers_.upload_bytes += bytes;
  }
  void CountDownload(std::int64_t bytes) {
    ++transfers_.downloads;
    transfers_.download_bytes += bytes;
  }

 private:
  TransferCounts transfers_;
};

/// The scalar reference: a direct transcription of op.h, single-threaded. The ledger's referee
/// uses it; every other backend is tested against it bit for bit.
std::unique_ptr<Backend> MakeReferenceBackend();

/// The fast CPU backend: AVX-512 or AVX2 kernels chosen at run time (scalar where neither is
/// present), split over `threads` worker threads by output. threads >= 1.
std::unique_ptr<Backend> MakeCpuBackend(int threads);

/// A backend by name: "reference", "cpu" (with `threads`), "cuda", "hip". kUnavailable when this
/// build or this machine lacks it (no toolchain at build time, no device at run time), with a
/// sentence saying which.
Result<std::unique_ptr<Backend>> MakeBackend(std::string_view name, int threads);

/// Names of the backends compiled into this binary ("reference", "cpu", then "cuda"/"hip").
std::vector<std::string> CompiledBackends();

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_BACKEND_H_
