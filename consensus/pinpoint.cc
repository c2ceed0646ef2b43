#include "polnode/consensus/pinpoint.h"

#include <bit>
#include <cstring>

#include "polnode/consensus/encoding.h"

namespace polnode::consensus {

static_assert(std::endian::native == std::endian::little,
              "TensorHashOf hashes float storage as little-endian U32 bits directly");

Hash256 TensorHashOf(std::span<const std::int64_t> dims, std::span<const float> data) {
  HashWriter w;
  constexpr std::string_view kTag = "polnode.tensor.v1\n";
  w.Fixed(std::span(reinterpret_cast<const std::uint8_t*>(kTag.data()), kTag.size()));
  w.U32(static_cast<std::uint32_t>(dims.size()));
  for (std::int64_t d : dims) w.U64(static_cast<std::uint64_t>(d));
  // On a little-endian host the float storage already is the U32 bits, little-endian.
  w.Fixed(std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size_bytes()));
  return w.Finalize();
}

Hash256 StateHashFromTensorHashes(std::uint64_t step, std::span<const std::string> names,
                                  std::span<const Hash256> tensor_hashes) {
  HashWriter w;
  constexpr std::string_view kTag = "polnode.state.v2\n";
  w.Fixed(std::span(reinterpret_cast<const std::uint8_t*>(kTag.data()), kTag.size()));
  w.U64(step);
  w.U32(static_cast<std::uint32_t>(names.size()));
  for (std::size_t i = 0; i < names.size(); ++i) {
    w.String(names[i]);
    w.Fixed(tensor_hashes[i]);
  }
  return w.Finalize();
}

Hash256 BatchLeaf(const Hash256& images_hash, const Hash256& labels_hash) {
  HashWriter w;
  constexpr std::string_view kTag = "polnode.batch.v1\n";
  w.Fixed(std::span(reinterpret_cast<const std::uint8_t*>(kTag.data()), kTag.size()));
  w.Fixed(images_hash);
  w.Fixed(labels_hash);
  return w.Finalize();
}

}  // namespace polnode::consensus
