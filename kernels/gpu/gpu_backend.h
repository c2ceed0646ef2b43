// The CUDA and HIP backends: every operator of op.h on a GPU, with the bits of the canonical
// evaluation order (DESIGN.md section 3). Both are built from the same source,
// kernels/gpu/gpu_backend.cu, compiled by nvcc and by hipcc (kernels/gpu/gpu.cmake).
//
// Tensors stay host tensors: each Run copies its inputs to the device, computes, and copies the
// outputs back. A backend object owns one device stream and a set of reusable device buffers, so
// it must be used from one thread at a time (like the other backends, callers own one per thread).
#ifndef POLNODE_KERNELS_GPU_GPU_BACKEND_H_
#define POLNODE_KERNELS_GPU_GPU_BACKEND_H_

#include <memory>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"

namespace polnode::kernels {

#if defined(POLNODE_HAVE_CUDA)
/// The CUDA backend on device 0 (name() is "cuda"). kUnavailable, with a sentence saying why,
/// when no CUDA device or driver is present, or when this build carries no code that the device
/// can run (the device self-test, a vector fma checked against the host's std::fma, fails).
/// Defined only when the build compiled the CUDA backend (POLNODE_HAVE_CUDA).
Result<std::unique_ptr<Backend>> MakeCudaBackend();
#endif

#if defined(POLNODE_HAVE_HIP)
/// The HIP backend on device 0 (name() is "hip"); same contract as MakeCudaBackend, for ROCm
/// devices. Defined only when the build compiled the HIP backend (POLNODE_HAVE_HIP).
Result<std::unique_ptr<Backend>> MakeHipBackend();
#endif

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_GPU_GPU_BACKEND_H_
