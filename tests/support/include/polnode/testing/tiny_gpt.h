// A tiny text corpus and GPT task for the tests: text with structure to learn (words from a small
// list, in sentences), written by the test itself, so no test depends on files outside the
// repository or on the network; and a text of nanoGPT's vocabulary size for its CPU configuration
// (tests/dispute and bench/referee_bench.cc).
#ifndef POLNODE_TESTING_TINY_GPT_H_
#define POLNODE_TESTING_TINY_GPT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver::testing {

/// About `bytes` bytes of text: sentences of 3 to 8 words drawn by a fixed linear congruential
/// generator from 12 words, each sentence capitalised and ended by ". " (a newline every 4th).
inline std::string TinyCorpusText(std::size_t bytes = 4000) {
  static const char* const kWords[] = {"the", "quick", "brown", "fox", "jumps", "over",
                                       "lazy", "dog", "and", "runs", "far", "away"};
  std::string text;
  std::uint32_t x = 12345;
  const auto next = [&x](std::uint32_t n) {
    x = x * 1664525u + 1013904223u;
    return (x >> 16) % n;
  };
  int sentence = 0;
  while (text.size() < bytes) {
    const std::uint32_t words = 3 + next(6);
    for (std::uint32_t w = 0; w < words; ++w) {
      std::string word = kWords[next(12)];
      if (w == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      text += word;
      text += w + 1 < words ? " " : ".";
    }
    text += ++sentence % 4 == 0 ? "\n" : " ";
  }
  return text;
}

/// TinyCorpusText as a text data set.
inline ImageDataset TinyTextDataset(std::size_t bytes = 4000) {
  const std::string text = TinyCorpusText(bytes);
  Result<TextCorpus> corpus = MakeTextCorpus(std::vector<std::uint8_t>(text.begin(), text.end()));
  return TextDataset(std::move(*corpus));
}

/// 20,000 bytes over the 65 symbols 32..96 (each at least once, then drawn by a fixed xorshift):
/// nanoGPT's shakespeare_char vocabulary size, so a GPT on it has that run's tensor shapes.
inline Result<ImageDataset> Text65Dataset() {
  std::vector<std::uint8_t> bytes;
  std::uint32_t x = 2463534242u;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    bytes.push_back(static_cast<std::uint8_t>(32 + (i < 65 ? i : static_cast<int>(x % 65))));
  }
  POLNODE_ASSIGN_OR_RETURN(TextCorpus corpus, MakeTextCorpus(std::move(bytes)));
  return TextDataset(std::move(corpus));
}

/// nanoGPT's CPU configuration (issue 12): 4 layers, 4 heads, width 128, context 64 (batch 12).
inline constexpr const char* kNanoGptCpuSpec = "gpt:layers=4,heads=4,width=128,context=64";

/// The smallest useful GPT: 1 layer, 2 heads, width 16, context 8.
inline constexpr const char* kTinyGptSpec = "gpt:layers=1,heads=2,width=16,context=8";

/// kTinyGptSpec on `data`: AdamW lr 1e-2, weight decay 0.1, batch 4, 24 steps, k = 6 (4 segments),
/// Q = 2, exact mode.
inline TaskSpec TinyGptTask(const ImageDataset& data) {
  TaskSpec t;
  t.model = kTinyGptSpec;
  t.data_location = "synthetic-text";
  t.dataset_hash = DatasetContentHash(data);
  t.optimizer.kind = OptimizerKind::kAdam;
  t.optimizer.lr = 1e-2f;
  t.optimizer.weight_decay = 0.1f;
  t.batch = 4;
  t.steps = 24;
  t.checkpoint_interval = 6;
  t.seed = 7;
  t.segments_per_check = 2;
  return t;
}

}  // namespace polnode::solver::testing

#endif  // POLNODE_TESTING_TINY_GPT_H_
