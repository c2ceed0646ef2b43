#include "polnode/solver/dataset_npy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "polnode/base/file_util.h"

namespace polnode::solver {
namespace {

constexpr std::uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

int ItemSize(std::string_view descr) {
  if (descr == "<f4" || descr == "<i4") return 4;
  if (descr == "<i8") return 8;
  if (descr == "|u1" || descr == "<u1") return 1;
  return 0;
}

// A cursor over the header's dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  void SkipSpace() {
    while (!s_.empty() && (s_.front() == ' ' || s_.front() == '\n')) s_.remove_prefix(1);
  }
  bool Eat(char c) {
    SkipSpace();
    if (s_.empty() || s_.front() != c) return false;
    s_.remove_prefix(1);
    return true;
  }
  bool EatWord(std::string_view w) {
    SkipSpace();
    if (!s_.starts_with(w)) return false;
    s_.remove_prefix(w.size());
    return true;
  }
  // A quoted string without escapes.
  bool String(std::string& out) {
    SkipSpace();
    if (s_.empty() || (s_.front() != '\'' && s_.front() != '"')) return false;
    const char quote = s_.front();
    const std::size_t end = s_.find(quote, 1);
    if (end == std::string_view::npos) return false;
    out = std::string(s_.substr(1, end - 1));
    if (out.find('\\') != std::string::npos) return false;
    s_.remove_prefix(end + 1);
    return true;
  }
  bool Int(std::int64_t& out) {
    SkipSpace();
    std::size_t n = 0;
    out = 0;
    while (n < s_.size() && s_[n] >= '0' && s_[n] <= '9') {
      if (n == 18) return false;  // beyond any real dimension; keeps the product below overflow checks
      out = out * 10 + (s_[n] - '0');
      ++n;
    }
    if (n == 0) return false;
    s_.remove_prefix(n);
    return true;
  }
  bool AtEnd() {
    SkipSpace();
    return s_.empty();
  }

 private:
  std::string_view s_;
};

Result<NpyArray> ParseHeader(std::string_view header) {
  const auto bad = [](std::string_view why) { return Status::Corruption(".npy header: " + std::string(why)); };
  HeaderParser p(header);
  if (!p.Eat('{')) return bad("not a dict");
  NpyArray array;
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  while (!p.Eat('}')) {
    std::string key;
    if (!p.String(key) || !p.Eat(':')) return bad("expected 'key':");
    if (key == "descr" && !have_descr) {
      if (!p.String(array.descr)) return bad("descr is not a string");
      have_descr = true;
    } else if (key == "fortran_order" && !have_order) {
      if (p.EatWord("False")) fortran = false;
      else if (p.EatWord("True")) fortran = true;
      else return bad("fortran_order is not True or False");
      have_order = true;
    } else if (key == "shape" && !have_shape) {
      if (!p.Eat('(')) return bad("shape is not a tuple");
      while (!p.Eat(')')) {
        std::int64_t d = 0;
        if (!p.Int(d)) return bad("a dimension is not a non-negative integer");
        array.shape.push_back(d);
        if (array.shape.size() > 8) return bad("more than 8 dimensions");
        if (!p.Eat(',')) {
          if (!p.Eat(')')) return bad("shape tuple not closed");
          break;
        }
      }
      have_shape = true;
    } else {
      return bad("unexpected or repeated key '" + key.substr(0, 40) + "'");
    }
    if (!p.Eat(',')) {
      if (!p.Eat('}')) return bad("dict not closed");
      break;
    }
  }
  if (!p.AtEnd()) return bad("bytes after the dict");
  if (!have_descr || !have_order || !have_shape) return bad("needs descr, fortran_order and shape");
  if (fortran) return Status::InvalidArgument(".npy array is in Fortran order; polnode reads C order only");
  if (ItemSize(array.descr) == 0) {
    return Status::InvalidArgument(".npy dtype '" + array.descr.substr(0, 40) +
                                   "' is not one polnode reads ('<f4' features; '<i8', '<i4', '|u1' labels)");
  }
  return array;
}

std::uint64_t ElementCount(const NpyArray& a) {
  std::uint64_t n = 1;
  for (std::int64_t d : a.shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::int64_t LabelAt(const NpyArray& a, std::size_t i) {
  const std::uint8_t* p = a.data.data();
  if (a.descr == "<i8") {
    std::uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = (v << 8) | p[i * 8 + static_cast<std::size_t>(b)];
    return static_cast<std::int64_t>(v);
  }
  if (a.descr == "<i4") {
    std::uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = (v << 8) | p[i * 4 + static_cast<std::size_t>(b)];
    return static_cast<std::int32_t>(v);
  }
  return p[i];
}

}  // namespace

Result<NpyArray> DecodeNpy(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 10 || !std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin())) {
    return Status::Corruption("not a .npy file (no \\x93NUMPY magic)");
  }
  const std::uint8_t major = bytes[6];
  if (major < 1 || major > 3) return Status::Corruption(".npy format version " + std::to_string(major) + " is unknown");
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8);
    start = 10;
  } else {
    if (bytes.size() < 12) return Status::Corruption(".npy file truncated in its header length");
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8) | (std::size_t{bytes[10]} << 16) | (std::size_t{bytes[11]} << 24);
    start = 12;
  }
  if (header_len > bytes.size() - start) return Status::Corruption(".npy file truncated in its header");
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  POLNODE_ASSIGN_OR_RETURN(NpyArray array, ParseHeader(header));
  const std::uint64_t item = static_cast<std::uint64_t>(ItemSize(array.descr));
  const std::uint64_t payload = bytes.size() - start - header_len;
  // Checked by division, so a shape whose product overflows cannot pass.
  std::uint64_t elements = 1;
  for (std::int64_t d : array.shape) {
    if (d != 0 && elements > payload / static_cast<std::uint64_t>(d)) {
      return Status::Corruption(".npy payload is shorter than its shape");
    }
    elements *= static_cast<std::uint64_t>(d);
  }
  if (elements * item != payload) {
    return Status::Corruption(".npy payload is " + std::to_string(payload) + " bytes, not the " +
                              std::to_string(elements * item) + " its shape and dtype need");
  }
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(start + header_len), bytes.end());
  return array;
}

Result<ImageSplit> NpySplit(const NpyArray& features, const NpyArray& labels) {
  if (features.descr != "<f4") {
    return Status::InvalidArgument("features have dtype '" + features.descr + "'; polnode takes float32 ('<f4')");
  }
  if (features.shape.size() != 2 || features.shape[0] < 1 || features.shape[1] < 1) {
    return Status::InvalidArgument("features must be a [samples, features] array with both at least 1");
  }
  if (labels.descr == "<f4") return Status::InvalidArgument("labels are float32; polnode takes integer labels");
  if (labels.shape.size() != 1 || labels.shape[0] != features.shape[0]) {
    return Status::InvalidArgument("labels must be a [samples] array of the features' " + std::to_string(features.shape[0]) +
                                   " samples");
  }
  ImageSplit split;
  split.count = features.shape[0];
  split.rows = 1;
  split.cols = features.shape[1];
  split.features.resize(ElementCount(features));
  for (std::size_t i = 0; i < split.features.size(); ++i) {
    std::uint32_t bits = 0;
    for (int b = 3; b >= 0; --b) bits = (bits << 8) | features.data[i * 4 + static_cast<std::size_t>(b)];
    const float v = std::bit_cast<float>(bits);
    if (!std::isfinite(v)) {
      return Status::InvalidArgument("feature " + std::to_string(i) + " is not finite");
    }
    split.features[i] = v;
  }
  split.labels.resize(static_cast<std::size_t>(split.count));
  for (std::size_t i = 0; i < split.labels.size(); ++i) {
    const std::int64_t l = LabelAt(labels, i);
    if (l < 0 || l > 255) return Status::InvalidArgument("label " + std::to_string(i) + " is " + std::to_string(l) + ", not in 0..255");
    split.labels[i] = static_cast<std::uint8_t>(l);
  }
  return split;
}

bool IsNpyDataset(std::string_view dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / std::string(kNpyFiles[0]), ec);
}

Result<ImageDataset> LoadNpyDataset(std::string_view dir) {
  NpyArray arrays[4];
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string path = (std::filesystem::path(dir) / std::string(kNpyFiles[i])).string();
    Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxNpyBytes);
    if (!bytes.ok()) return bytes.status().WithContext("data set");
    Result<NpyArray> decoded = DecodeNpy(*bytes);
    if (!decoded.ok()) return decoded.status().WithContext(path);
    arrays[i] = std::move(*decoded);
  }
  ImageDataset data;
  Result<ImageSplit> train = NpySplit(arrays[0], arrays[1]);
  if (!train.ok()) return train.status().WithContext(std::string(dir) + " train split");
  Result<ImageSplit> test = NpySplit(arrays[2], arrays[3]);
  if (!test.ok()) return test.status().WithContext(std::string(dir) + " test split");
  data.train = std::move(*train);
  data.test = std::move(*test);
  if (data.train.cols != data.test.cols) {
    return Status::InvalidArgument("data set " + std::string(dir) + ": train samples have " + std::to_string(data.train.cols) +
                                   " features, test samples " + std::to_string(data.test.cols));
  }
  std::uint8_t max_label = 0;
  for (std::uint8_t l : data.train.labels) max_label = std::max(max_label, l);
  for (std::uint8_t l : data.test.labels) max_label = std::max(max_label, l);
  data.num_classes = max_label + 1;
  return data;
}

}  // namespace polnode::solver
