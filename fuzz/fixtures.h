// Set-up shared by the fuzz targets that serve real proof-of-learning artefacts: a scratch
// directory that outlives the fixture and is removed at exit, and the tiny synthetic task of
// tests/solver/proof_test_util.h, small enough that a real proof of it is made in milliseconds at
// start-up.
#ifndef POLNODE_FUZZ_FIXTURES_H_
#define POLNODE_FUZZ_FIXTURES_H_

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../tests/solver/proof_test_util.h"

namespace polnode::fuzz {

/// A fresh directory named after `name` under the system temp dir, removed with its contents when
/// the process exits normally. Aborts when it cannot be created: a fixture without its files
/// would make every input look wrong.
inline std::string FixtureDir(std::string_view name) {
  static std::mutex mu;
  static std::vector<std::string>* dirs = nullptr;
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("polnode-fuzz-" + std::string(name) + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
  std::lock_guard<std::mutex> lock(mu);
  if (dirs == nullptr) {
    // Leaked on purpose: the exit handler below reads it after static destructors may have run.
    dirs = new std::vector<std::string>();
    std::atexit([] {
      std::error_code ec;
      for (const std::string& dir : *dirs) std::filesystem::remove_all(dir, ec);
    });
  }
  dirs->push_back(tmpl);
  return tmpl;
}

// The tiny synthetic data set and task of the solver tests (header-only, no test framework).
using solver::testing::TinyDataset;
using solver::testing::TinyTask;

}  // namespace polnode::fuzz

#endif  // POLNODE_FUZZ_FIXTURES_H_
