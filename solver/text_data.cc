#include "polnode/solver/text_data.h"

#include <algorithm>
#include <array>
#include <filesystem>

#include "polnode/solver/philox.h"

namespace polnode::solver {

Result<TextCorpus> MakeTextCorpus(std::vector<std::uint8_t> bytes) {
  if (bytes.empty()) return Status::InvalidArgument("text corpus is empty");
  if (static_cast<std::int64_t>(bytes.size()) > kMaxCorpusBytes) {
    return Status::InvalidArgument("text corpus has " + std::to_string(bytes.size()) +
                                   " bytes, more than " + std::to_string(kMaxCorpusBytes));
  }
  std::array<bool, 256> seen{};
  for (std::uint8_t b : bytes) seen[b] = true;
  TextCorpus c;
  std::array<std::uint8_t, 256> id_of{};
  for (int v = 0; v < 256; ++v) {
    if (!seen[static_cast<std::size_t>(v)]) continue;
    id_of[static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(c.vocab.size());
    c.vocab.push_back(static_cast<std::uint8_t>(v));
  }
  if (c.vocab.size() < 2) {
    return Status::InvalidArgument("text corpus has a single distinct symbol: nothing to learn");
  }
  c.ids.resize(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) c.ids[i] = id_of[bytes[i]];
  c.bytes = std::move(bytes);
  c.train_size = c.size() - c.size() / 10;
  return c;
}

Result<TextCorpus> LoadTextCorpus(std::string_view location) {
  const std::string path = location == "jargon" ? std::string(kJargonPath) : std::string(location);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string msg = "text corpus " + path + " is not a readable file";
    if (location == "jargon") msg += " (install Debian's jargon-text package)";
    return Status::NotFound(msg);
  }
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes,
                           ReadFileGunzipped(path, static_cast<std::uint64_t>(kMaxCorpusBytes)));
  Result<TextCorpus> corpus = MakeTextCorpus(std::move(bytes));
  if (!corpus.ok()) return corpus.status().WithContext(path);
  return corpus;
}

consensus::Hash256 TextContentHash(const TextCorpus& corpus) {
  consensus::Sha256Hasher h;
  h.Update(std::string_view("polnode.text-dataset.v1\n"));
  std::array<std::uint8_t, 8> le;
  const auto n = static_cast<std::uint64_t>(corpus.bytes.size());
  for (int i = 0; i < 8; ++i) le[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  h.Update(le);
  h.Update(corpus.bytes);
  return h.Finalize();
}

Status CheckContextFits(const TextCorpus& corpus, std::int64_t context) {
  if (context < 1 || context + 1 > corpus.train_size) {
    return Status::InvalidArgument(
        "context " + std::to_string(context) + " does not fit the training text: a window needs " +
        std::to_string(context + 1) + " symbols and the training split has " +
        std::to_string(corpus.train_size) + " (of " + std::to_string(corpus.size()) + ")");
  }
  return Status::Ok();
}

std::int64_t TextWindowStart(const TextCorpus& corpus, std::uint64_t seed, std::int64_t step,
                             std::int64_t batch, std::int64_t row, std::int64_t context) {
  const std::uint64_t r = RandomU64(seed, RandomPurpose::kTextWindow, 0,
                                    static_cast<std::uint64_t>(step * batch + row));
  return UniformIndex(r, static_cast<std::uint64_t>(corpus.train_size - context));
}

Status GatherTextBatch(const TextCorpus& corpus, std::uint64_t seed, std::int64_t step,
                       std::int64_t batch, std::int64_t context, kernels::Tensor& ids,
                       kernels::Tensor& targets) {
  if (batch < 1 || step < 0 || step > (INT64_MAX - batch) / batch) {
    return Status::InvalidArgument("text batch of " + std::to_string(batch) + " at step " +
                                   std::to_string(step) + " is out of range");
  }
  POLNODE_RETURN_IF_ERROR(CheckContextFits(corpus, context));
  ids.Resize({batch, context});
  targets.Resize({batch * context});
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t start = TextWindowStart(corpus, seed, step, batch, b, context);
    const std::uint8_t* src = corpus.ids.data() + start;
    for (std::int64_t i = 0; i < context; ++i) {
      ids.data()[b * context + i] = static_cast<float>(src[i]);
      targets.data()[b * context + i] = static_cast<float>(src[i + 1]);
    }
  }
  return Status::Ok();
}

std::int64_t TextStepsPerEpoch(const TextCorpus& corpus, std::int64_t batch,
                               std::int64_t context) {
  return std::max<std::int64_t>(1, corpus.train_size / (batch * context));
}

Result<std::vector<std::uint8_t>> EncodeText(const TextCorpus& corpus, std::string_view text) {
  std::vector<std::uint8_t> out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto byte = static_cast<std::uint8_t>(ch);
    const auto it = std::lower_bound(corpus.vocab.begin(), corpus.vocab.end(), byte);
    if (it == corpus.vocab.end() || *it != byte) {
      return Status::InvalidArgument("symbol " + std::to_string(byte) +
                                     " is not in the corpus's vocabulary");
    }
    out.push_back(static_cast<std::uint8_t>(it - corpus.vocab.begin()));
  }
  return out;
}

}  // namespace polnode::solver
