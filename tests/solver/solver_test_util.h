// Helpers shared by the solver tests: the installed Fashion-MNIST (loaded once per process) and
// scratch directories.
#ifndef POLNODE_TESTS_SOLVER_SOLVER_TEST_UTIL_H_
#define POLNODE_TESTS_SOLVER_SOLVER_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <string>

#include "polnode/solver/dataset.h"

namespace polnode::solver::testing {

/// Debian's dataset-fashion-mnist, loaded on first use; nullptr (with `why` set) if it is not
/// installed or fails to load.
inline const ImageDataset* FashionMnist(std::string* why) {
  static const Result<ImageDataset> data = LoadImageDataset("fashion-mnist");
  if (!data.ok()) {
    *why = data.status().ToString();
    return nullptr;
  }
  return &data.value();
}

/// Skips the test (with the reason) when Fashion-MNIST is not installed.
#define POLNODE_REQUIRE_FASHION_MNIST(var)                        \
  std::string polnode_fm_why_;                                    \
  const ::polnode::solver::ImageDataset* var =                    \
      ::polnode::solver::testing::FashionMnist(&polnode_fm_why_); \
  if (var == nullptr) GTEST_SKIP() << "Fashion-MNIST unavailable: " << polnode_fm_why_

/// A fresh empty directory under the system temp dir, removed when the object dies.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("polnode-" + tag + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace polnode::solver::testing

#endif  // POLNODE_TESTS_SOLVER_SOLVER_TEST_UTIL_H_
