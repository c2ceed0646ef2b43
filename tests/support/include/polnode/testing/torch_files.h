// What the PyTorch agreement tests share: the Python that has torch (python3-torch, which
// scripts/install-deps.sh installs) and the raw float32 files they exchange with their scripts.
#ifndef POLNODE_TESTING_TORCH_FILES_H_
#define POLNODE_TESTING_TORCH_FILES_H_

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "polnode/kernels/tensor.h"

namespace polnode::testing {

inline constexpr const char* kTorchPython = "/usr/bin/python3";

/// Whether kTorchPython imports torch and numpy.
inline bool TorchAvailable() {
  const std::string probe = std::string(kTorchPython) + " -c 'import torch, numpy' >/dev/null 2>&1";
  return std::system(probe.c_str()) == 0;
}

/// Writes `t`'s elements to `path` as raw little-endian float32, row-major.
inline void WriteRawFloats(const std::string& path, const kernels::Tensor& t) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.numel() * 4));
}

/// Reads a file of raw float32 elements (empty when it cannot be read).
inline std::vector<float> ReadRawFloats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_TORCH_FILES_H_
