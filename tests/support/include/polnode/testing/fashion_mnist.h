// Debian's Fashion-MNIST (dataset-fashion-mnist, which scripts/install-deps.sh installs) for the
// tests whose golden values were computed on it.
#ifndef POLNODE_TESTING_FASHION_MNIST_H_
#define POLNODE_TESTING_FASHION_MNIST_H_

#include <gtest/gtest.h>

#include <string>

#include "polnode/solver/dataset.h"

namespace polnode::testing {

/// The data set, loaded on first use and kept for the process; nullptr (with `why` set) when it is
/// not installed or does not load.
const solver::ImageDataset* FashionMnist(std::string* why);

}  // namespace polnode::testing

/// Declares `var`, the loaded data set, or FAILS the test when it is missing: a golden test that
/// skipped would pass on a machine that checked nothing.
#define POLNODE_REQUIRE_FASHION_MNIST(var)                                                              \
  std::string polnode_fm_why_;                                                                           \
  const ::polnode::solver::ImageDataset* var = ::polnode::testing::FashionMnist(&polnode_fm_why_);       \
  if (var == nullptr)                                                                                    \
  GTEST_FAIL() << "Fashion-MNIST is missing (install Debian's dataset-fashion-mnist: scripts/install-deps.sh): " \
               << polnode_fm_why_

#endif  // POLNODE_TESTING_FASHION_MNIST_H_
