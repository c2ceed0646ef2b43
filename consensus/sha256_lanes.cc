// Run-time choice of the multi-buffer SHA-256's instruction-set level (sha256_lanes.h).
#include "polnode/consensus/sha256_lanes.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "sha256_lane_kernels.h"

namespace polnode::consensus {
namespace {

// The levels this CPU runs and the one the hashes use, found once. __builtin_cpu_supports also
// checks that the OS saves the wider registers (XGETBV), so a level listed here cannot fault.
struct IsaList {
  std::array<Sha256Isa, 3> isas{};
  std::size_t count = 0;
  Sha256Isa best = Sha256Isa::kOpenSsl;
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Whether the CPU has the SHA extensions (CPUID leaf 7, EBX bit 29), which OpenSSL uses; clang 14's
// __builtin_cpu_supports does not know them.
bool HasShaExtensions() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ebx & (1u << 29)) != 0;
}
#endif

IsaList DetectIsas() {
  IsaList list;
  list.isas[list.count++] = Sha256Isa::kOpenSsl;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) {
    list.isas[list.count++] = Sha256Isa::kAvx2;
    // Eight lanes without rotates or three-input logic lose to OpenSSL on the SHA extensions (on
    // Zen 5, state_hash_bench: 0.55x), so AVX2 hashes only where those are missing.
    if (!HasShaExtensions()) list.best = Sha256Isa::kAvx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
      list.isas[list.count++] = Sha256Isa::kAvx512;
      list.best = Sha256Isa::kAvx512;
    }
  }
#endif
  return list;
}

const IsaList& Detected() {
  static const IsaList list = DetectIsas();
  return list;
}

}  // namespace

std::string_view Sha256IsaName(Sha256Isa isa) {
  switch (isa) {
    case Sha256Isa::kOpenSsl: return "openssl";
    case Sha256Isa::kAvx2: return "avx2";
    case Sha256Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

std::span<const Sha256Isa> AvailableSha256Isas() {
  const IsaList& list = Detected();
  return std::span(list.isas.data(), list.count);
}

Sha256Isa BestSha256Isa() { return Detected().best; }

const Sha256LaneKernels& LaneKernelsFor(Sha256Isa isa) {
  // A level the CPU lacks would fault on its first instruction; stop here instead.
  const std::span<const Sha256Isa> available = AvailableSha256Isas();
  if (std::find(available.begin(), available.end(), isa) == available.end()) std::abort();
#if defined(__x86_64__)
  if (isa == Sha256Isa::kAvx512) return avx512::LaneKernels();
  if (isa == Sha256Isa::kAvx2) return avx2::LaneKernels();
#endif
  std::abort();  // kOpenSsl has no lane kernels
}

std::size_t Sha256LaneCount(Sha256Isa isa) { return isa == Sha256Isa::kOpenSsl ? 1 : 2 * LaneKernelsFor(isa).lanes; }

void Sha256Lanes(Sha256Isa isa, std::span<const std::span<const std::uint8_t>> messages, std::span<Hash256> out) {
  if (isa == Sha256Isa::kOpenSsl) {
    for (std::size_t i = 0; i < messages.size(); ++i) out[i] = Sha256(messages[i]);
    return;
  }
  const Sha256LaneKernels& kernels = LaneKernelsFor(isa);
  const std::size_t per_call = 2 * kernels.lanes;
  const std::size_t length = messages.empty() ? 0 : messages[0].size();
  std::vector<const std::uint8_t*> lanes(per_call);
  std::vector<std::uint8_t> digests(32 * per_call);
  for (std::size_t first = 0; first < messages.size(); first += per_call) {
    const std::size_t count = std::min(per_call, messages.size() - first);
    // A last, partial group fills its idle lanes with its first message; their digests are dropped.
    for (std::size_t l = 0; l < per_call; ++l) lanes[l] = messages[first + (l < count ? l : 0)].data();
    kernels.hash_messages(lanes.data(), length, digests.data());
    for (std::size_t l = 0; l < count; ++l) std::copy_n(digests.data() + 32 * l, 32, out[first + l].begin());
  }
}

}  // namespace polnode::consensus
