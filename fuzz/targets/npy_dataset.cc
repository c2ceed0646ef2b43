// Target npy_dataset: DecodeNpy on arbitrary bytes (a tabular data set's .npy file comes from the
// submitter), then, for a float32 matrix, NpySplit with as many labels. Properties: never
// crashes; failures are kCorruption or kInvalidArgument; a decoded array's payload is exactly its
// shape's size; an accepted split holds count x features finite features equal to the payload's
// floats, and its labels.
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/solver/dataset_npy.h"

namespace polnode::fuzz {
namespace {

std::size_t ItemSize(const std::string& descr) { return descr == "<i8" ? 8 : (descr == "|u1" || descr == "<u1") ? 1 : 4; }

void Run(FuzzInput input) {
  Result<solver::NpyArray> a = solver::DecodeNpy(input);
  if (!a.ok()) {
    POLNODE_FUZZ_CHECK(a.status().code() == StatusCode::kCorruption || a.status().code() == StatusCode::kInvalidArgument,
                       "DecodeNpy failed with a code other than kCorruption or kInvalidArgument");
    return;
  }
  std::size_t elements = 1;
  for (std::int64_t d : a->shape) elements *= static_cast<std::size_t>(d);
  POLNODE_FUZZ_CHECK(a->data.size() == elements * ItemSize(a->descr), "the payload is not the shape's size");
  if (a->shape.size() != 2 || a->shape[0] < 1) return;
  solver::NpyArray labels;
  labels.descr = "|u1";
  labels.shape = {a->shape[0]};
  labels.data.assign(static_cast<std::size_t>(a->shape[0]), 1);
  Result<solver::ImageSplit> split = solver::NpySplit(*a, labels);
  if (!split.ok()) {
    POLNODE_FUZZ_CHECK(split.status().code() == StatusCode::kInvalidArgument, "NpySplit failed with another code");
    return;
  }
  POLNODE_FUZZ_CHECK(split->count == a->shape[0] && split->cols == a->shape[1] &&
                         split->features.size() == elements && split->labels.size() == static_cast<std::size_t>(split->count),
                     "the split's sizes are not the array's");
  for (std::size_t i = 0; i < elements; ++i) {
    std::uint32_t bits = 0;
    for (int b = 3; b >= 0; --b) bits = (bits << 8) | a->data[i * 4 + static_cast<std::size_t>(b)];
    POLNODE_FUZZ_CHECK(std::bit_cast<std::uint32_t>(split->features[i]) == bits && std::isfinite(split->features[i]),
                       "a feature is not the payload's finite float");
  }
}

// A version 1.0 .npy file as numpy.save writes it: the header padded with spaces to a multiple of
// 64 bytes, ending in a newline.
std::vector<std::uint8_t> Npy(const std::string& dict, const std::vector<std::uint8_t>& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<std::uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<std::uint8_t>(header.size() & 0xff),
                                   static_cast<std::uint8_t>(header.size() >> 8)};
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<Seed> Seeds() {
  // 2 x 3 float32: 0.5, -1, 2, 0, 1.5, 3 (little-endian IEEE bits).
  const std::vector<std::uint8_t> floats = {0, 0, 0, 0x3f, 0, 0, 0x80, 0xbf, 0, 0, 0, 0x40,
                                            0, 0, 0, 0,    0, 0, 0xc0, 0x3f, 0, 0, 0x40, 0x40};
  std::vector<std::uint8_t> truncated = Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats);
  truncated.resize(truncated.size() - 3);
  std::vector<std::uint8_t> nan = floats;
  nan[2] = 0xc0;
  nan[3] = 0x7f;
  return {
      {"features", Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats)},
      {"labels-i8", Npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                        {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})},
      {"truncated", truncated},
      {"fortran", Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", floats)},
      {"float64", Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", floats)},
      {"nan", Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", nan)},
      {"empty", {}},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(npy_dataset, Run, Seeds);

}  // namespace polnode::fuzz
