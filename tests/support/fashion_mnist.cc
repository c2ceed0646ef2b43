#include "polnode/testing/fashion_mnist.h"

namespace polnode::testing {

const solver::ImageDataset* FashionMnist(std::string* why) {
  static const Result<solver::ImageDataset> data = solver::LoadImageDataset("fashion-mnist");
  if (!data.ok()) {
    *why = data.status().ToString();
    return nullptr;
  }
  return &data.value();
}

}  // namespace polnode::testing
