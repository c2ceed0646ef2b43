// Backend selection by name (backend.h). The GPU factories exist only when the build compiled
// them (kernels/gpu/gpu.cmake defines POLNODE_HAVE_CUDA / POLNODE_HAVE_HIP on polnode_kernels).
#include <string>

#include "polnode/kernels/backend.h"

#if defined(POLNODE_HAVE_CUDA) || defined(POLNODE_HAVE_HIP)
#include "gpu/gpu_backend.h"
#endif

namespace polnode::kernels {

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
