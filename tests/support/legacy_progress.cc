#include "polnode/testing/legacy_progress.h"

#include "polnode/consensus/encoding.h"

namespace polnode::solver::testing {

std::vector<std::uint8_t> LegacyProgressBytes(const ProveProgress& progress) {
  consensus::BufferWriter w;
  w.String("polnode/pol-progress/v2");
  w.Fixed(progress.task_id);
  w.U64(progress.hashes.size());
  for (std::size_t i = 0; i < progress.hashes.size(); ++i) {
    w.Fixed(progress.hashes[i]);
    w.Fixed(progress.blobs[i]);
  }
  w.U64(progress.loss_bits.size());
  for (std::uint32_t bits : progress.loss_bits) w.U32(bits);
  return w.Take();
}

}  // namespace polnode::solver::testing
