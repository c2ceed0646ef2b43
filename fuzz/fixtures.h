// Set-up shared by the fuzz targets that serve real artefacts: a scratch directory that lives as
// long as the process, and the tiny synthetic task of the test-support library
// (polnode/testing/tiny_task.h), small enough that a real proof of it is made in milliseconds at
// start-up.
#ifndef POLNODE_FUZZ_FIXTURES_H_
#define POLNODE_FUZZ_FIXTURES_H_

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::fuzz {

/// A fresh directory named after `name` under the system temp dir, removed with its contents when
/// the process exits normally (a fixture lives as long as the fuzzing run). Aborts when it cannot be
/// created: a fixture without its files would make every input look wrong.
inline std::string FixtureDir(std::string_view name) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<testing::TempDir>>* dirs = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (dirs == nullptr) {
    // Leaked on purpose: the exit handler below reads it after static destructors may have run.
    dirs = new std::vector<std::unique_ptr<testing::TempDir>>();
    std::atexit([] { dirs->clear(); });
  }
  dirs->push_back(std::make_unique<testing::TempDir>("fuzz-" + std::string(name)));
  return dirs->back()->path();
}

// The tiny synthetic data set and task of the tests (polnode_test_fixtures: no test framework).
using solver::testing::TinyDataset;
using solver::testing::TinyTask;

}  // namespace polnode::fuzz

#endif  // POLNODE_FUZZ_FIXTURES_H_
