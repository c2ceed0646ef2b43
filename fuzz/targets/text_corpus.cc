// Target text_corpus: MakeTextCorpus on arbitrary bytes (a GPT task's corpus is any file), then
// the batch windows of a few steps. Properties: never crashes; failures are kInvalidArgument and
// only for an empty or single-symbol corpus; an accepted corpus has a sorted, duplicate-free
// vocabulary of at least 2 symbols that maps every byte back to itself, a 90/10 split, and every
// window of a context that fits reads ids inside the training split with targets shifted by one.
#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/solver/text_data.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  std::vector<std::uint8_t> bytes(input.begin(), input.end());
  const std::set<std::uint8_t> distinct(bytes.begin(), bytes.end());
  Result<solver::TextCorpus> c = solver::MakeTextCorpus(bytes);
  if (!c.ok()) {
    POLNODE_FUZZ_CHECK(c.status().code() == StatusCode::kInvalidArgument,
                       "MakeTextCorpus failed with a code other than kInvalidArgument");
    POLNODE_FUZZ_CHECK(distinct.size() < 2, "a corpus of two or more symbols was refused");
    return;
  }
  POLNODE_FUZZ_CHECK(c->vocab.size() == distinct.size() && c->vocab.size() >= 2,
                     "the vocabulary is not the distinct bytes");
  POLNODE_FUZZ_CHECK(std::is_sorted(c->vocab.begin(), c->vocab.end()), "the vocabulary is not sorted");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    POLNODE_FUZZ_CHECK(c->vocab[c->ids[i]] == bytes[i], "a token id does not map back to its byte");
  }
  POLNODE_FUZZ_CHECK(c->train_size == c->size() - c->size() / 10, "the split is not 90/10");
  const std::int64_t context = std::min<std::int64_t>(8, c->train_size - 1);
  if (context < 1) return;
  kernels::Tensor ids, targets;
  for (std::int64_t step = 0; step < 3; ++step) {
    const Status s = solver::GatherTextBatch(*c, 11, step, 2, context, ids, targets);
    POLNODE_FUZZ_CHECK(s.ok(), "a context that fits the training split was refused");
    for (std::int64_t b = 0; b < 2; ++b) {
      const std::int64_t start = solver::TextWindowStart(*c, 11, step, 2, b, context);
      POLNODE_FUZZ_CHECK(start >= 0 && start + context < c->train_size,
                         "a window leaves the training split");
      for (std::int64_t i = 0; i < context; ++i) {
        POLNODE_FUZZ_CHECK(ids.data()[b * context + i] ==
                               static_cast<float>(c->ids[static_cast<std::size_t>(start + i)]) &&
                               targets.data()[b * context + i] ==
                                   static_cast<float>(c->ids[static_cast<std::size_t>(start + i + 1)]),
                           "a window's ids or targets are not the corpus's");
      }
    }
  }
}

std::vector<Seed> Seeds() {
  const auto seed = [](std::string name, std::string_view body) {
    return Seed{std::move(name), std::vector<std::uint8_t>(body.begin(), body.end())};
  };
  return {
      seed("text", "The quick brown fox jumps over the lazy dog.\nAnd runs far away.\n"),
      seed("two-symbols", "abababababab"),
      seed("one-symbol", "aaaaaaaa"),
      seed("empty", ""),
      seed("binary", std::string_view("\x00\xff\x10\x00\x01\xfe", 6)),
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(text_corpus, Run, Seeds);

}  // namespace polnode::fuzz
