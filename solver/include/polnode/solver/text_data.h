// Text corpora for language models (a GPT task's data, model_spec.h): byte-level symbols, a fixed
// train/validation split, batches of random windows as a pure function of (seed, step), and the
// corpus named by its content hash (DESIGN.md section 4, as for image data sets).
#ifndef POLNODE_SOLVER_TEXT_DATA_H_
#define POLNODE_SOLVER_TEXT_DATA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/kernels/tensor.h"

namespace polnode::solver {

/// A corpus: its bytes, the vocabulary (the distinct bytes in ascending order; a symbol's token id
/// is its position there), every byte's token id, and the split: ids [0, train_size) train,
/// [train_size, size) validation, train_size = size - size / 10 (nanoGPT's 90/10 split).
struct TextCorpus {
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint8_t> vocab;
  std::vector<std::uint8_t> ids;
  std::int64_t train_size = 0;

  std::int64_t size() const { return static_cast<std::int64_t>(bytes.size()); }
  std::int64_t val_size() const { return size() - train_size; }
  std::int64_t vocab_size() const { return static_cast<std::int64_t>(vocab.size()); }
};

/// Largest corpus accepted (decompressed): windows are drawn with 32-bit choices.
inline constexpr std::int64_t kMaxCorpusBytes = std::int64_t{1} << 30;

/// The default corpus: the Jargon File, public domain, from Debian's jargon-text package
/// (scripts/install-deps.sh installs it). A data location of "jargon" means this file.
inline constexpr std::string_view kJargonPath = "/usr/share/doc/jargon-text/jargon.txt.gz";

/// Builds a corpus from bytes. kInvalidArgument for an empty corpus, one with a single distinct
/// symbol (nothing to learn), or more than kMaxCorpusBytes bytes.
Result<TextCorpus> MakeTextCorpus(std::vector<std::uint8_t> bytes);

/// Reads a corpus from a file, gunzipping it when it starts with the gzip magic; "jargon" means
/// kJargonPath. Errors name the path (kNotFound, with the package to install for "jargon";
/// kCorruption for a damaged gzip stream) or pass MakeTextCorpus's through.
Result<TextCorpus> LoadTextCorpus(std::string_view location);

/// Reads a whole file, inflating it when it starts with the gzip magic (every member of a
/// multi-member stream). kResourceExhausted beyond `max_bytes` (before or after inflating).
Result<std::vector<std::uint8_t>> ReadFileGunzipped(const std::string& path,
                                                    std::uint64_t max_bytes);

/// SHA-256 of "polnode.text-dataset.v1\n", u64 size (little-endian) and the bytes: the corpus's
/// name in a task (the split, vocabulary and ids follow from the bytes).
consensus::Hash256 TextContentHash(const TextCorpus& corpus);

/// kInvalidArgument unless a window of `context` + 1 symbols fits in the training split (and
/// context >= 1): the model's context must be shorter than the training text.
[[nodiscard]] Status CheckContextFits(const TextCorpus& corpus, std::int64_t context);

/// The start of row `row` of step `step`'s batch in the training split:
/// UniformIndex(RandomU64(seed, kTextWindow, 0, step * batch + row), train_size - context).
/// Preconditions: CheckContextFits, 0 <= row < batch, step * batch + batch fits in int64.
std::int64_t TextWindowStart(const TextCorpus& corpus, std::uint64_t seed, std::int64_t step,
                             std::int64_t batch, std::int64_t row, std::int64_t context);

/// Fills `ids` [batch, context] with the windows of step `step` (TextWindowStart, as exact
/// floats) and `targets` [batch * context] with each position's next symbol. kInvalidArgument
/// for batch < 1, step < 0 or a context that does not fit (CheckContextFits).
[[nodiscard]] Status GatherTextBatch(const TextCorpus& corpus, std::uint64_t seed,
                                     std::int64_t step, std::int64_t batch, std::int64_t context,
                                     kernels::Tensor& ids, kernels::Tensor& targets);

/// Steps that see about as many windows as the training split has symbols:
/// max(1, train_size / (batch * context)). What "an epoch" means for text.
std::int64_t TextStepsPerEpoch(const TextCorpus& corpus, std::int64_t batch,
                               std::int64_t context);

/// Token ids of `text`, or kInvalidArgument naming the first byte not in the vocabulary.
Result<std::vector<std::uint8_t>> EncodeText(const TextCorpus& corpus, std::string_view text);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TEXT_DATA_H_
