// The task builder of the tests and fuzz targets: a tiny synthetic data set and task, small enough
// that a whole proof trains and replays in milliseconds, so suites can verify it hundreds of times.
#ifndef POLNODE_TESTING_TINY_TASK_H_
#define POLNODE_TESTING_TINY_TASK_H_

#include <cstdint>
#include <string>

#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver::testing {

/// 64 training and 8 test images of 4 x 4 pixels, 3 classes; pixels follow the label (so the
/// model learns something) plus a fixed pseudo-random pattern.
inline ImageDataset TinyDataset() {
  ImageDataset d;
  auto fill = [](ImageSplit& s, std::int64_t count, std::uint32_t salt) {
    s.count = count;
    s.rows = 4;
    s.cols = 4;
    s.pixels.resize(static_cast<std::size_t>(count * 16));
    s.labels.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint8_t label = static_cast<std::uint8_t>(i % 3);
      s.labels[static_cast<std::size_t>(i)] = label;
      for (std::int64_t p = 0; p < 16; ++p) {
        const std::uint32_t noise = (static_cast<std::uint32_t>(i * 16 + p) * 2654435761u + salt) >> 24;
        const std::uint32_t signal = (p % 3 == label) ? 160u : 0u;
        s.pixels[static_cast<std::size_t>(i * 16 + p)] = static_cast<std::uint8_t>(std::min(255u, signal + noise / 3));
      }
    }
  };
  fill(d.train, 64, 7);
  fill(d.test, 8, 11);
  d.num_classes = 3;
  return d;
}

/// mlp:16-8-3, SGD lr 0.1, batch 8, 40 steps, k = 5 (8 segments), Q = 2, exact mode.
inline TaskSpec TinyTask(const ImageDataset& data) {
  TaskSpec t;
  t.model = "mlp:16-8-3";
  t.data_location = "synthetic";
  t.dataset_hash = DatasetContentHash(data);
  t.optimizer.lr = 0.1f;
  t.batch = 8;
  t.steps = 40;
  t.checkpoint_interval = 5;
  t.seed = 42;
  t.segments_per_check = 2;
  return t;
}

/// The TOML form of a task built from TinyTask (data_location, dataset hash, lr, batch, steps,
/// checkpoint interval, seed and segments; every other field must keep its default), as a task
/// file for the commands and daemons.
std::string TinyTaskToml(const TaskSpec& task);

}  // namespace polnode::solver::testing

#endif  // POLNODE_TESTING_TINY_TASK_H_
