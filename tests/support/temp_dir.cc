#include "polnode/testing/temp_dir.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace polnode::testing {

TempDir::TempDir(std::string_view tag) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / ("polnode-" + std::string(tag) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror(pattern.c_str());
    std::abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace polnode::testing
