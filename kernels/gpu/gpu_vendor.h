// gpu_vendor.h: one spelling of the GPU runtime for CUDA (nvcc) and HIP (hipcc).
//
// The .cu files in kernels/gpu/ are compiled twice from the same text: by nvcc as CUDA and by
// hipcc as HIP (kernels/gpu/gpu.cmake). They never name cuda* or hip* runtime entry points
// directly; they use the gpu* names below, which this header maps to the vendor's runtime.
// Kernel launches use the triple-chevron syntax, which both compilers accept.
//
// Everything a .cu file defines lives in POLNODE_GPU_NS (polnode::kernels::cuda or
// polnode::kernels::hip), so the CUDA object and the HIP object can be linked into one binary
// without duplicate symbols.
#ifndef POLNODE_KERNELS_GPU_GPU_VENDOR_H_
#define POLNODE_KERNELS_GPU_GPU_VENDOR_H_

#if defined(__HIPCC__)

#include <hip/hip_runtime.h>

#define POLNODE_GPU_NS hip
#define POLNODE_GPU_VENDOR_NAME "hip"
#define POLNODE_GPU_RUNTIME_NAME "HIP (ROCm)"

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuDeviceProp_t = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuMemsetAsync hipMemsetAsync
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
using gpuEvent_t = hipEvent_t;
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventDestroy hipEventDestroy

#elif defined(__CUDACC__)

#include <cuda_runtime.h>

#define POLNODE_GPU_NS cuda
#define POLNODE_GPU_VENDOR_NAME "cuda"
#define POLNODE_GPU_RUNTIME_NAME "CUDA"

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuDeviceProp_t = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
using gpuEvent_t = cudaEvent_t;
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventDestroy cudaEventDestroy

#else
#error "gpu_vendor.h is for .cu files compiled by nvcc or hipcc (see kernels/gpu/gpu.cmake)"
#endif

#endif  // POLNODE_KERNELS_GPU_GPU_VENDOR_H_
