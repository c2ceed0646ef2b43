// Multi-buffer SHA-256: many independent messages of one length hashed side by side, one
// message per 32-bit lane of a vector register (16 with AVX-512, 8 with AVX2), two registers at
// a time. Bit for bit the SHA-256 of sha256.h; faster than it when there are many messages to
// hash, such as the 64 x 64 block leaves of a tensor (pinpoint.h): each message still goes
// through SHA-256's serial chain of blocks, but 16 chains advance per instruction (on Zen 5 the
// leaves of a training state hash 2.3 to 2.9 times as fast as through OpenSSL on the SHA
// extensions, bench/state_hash_bench).
//
// The instruction-set level is chosen at run time (sha256_lanes.cc): the vector code sits in its
// own translation units, compiled with that ISA's flags, and is called only after the CPU has said
// it runs them; elsewhere everything goes through OpenSSL one message at a time.
#ifndef POLNODE_CONSENSUS_SHA256_LANES_H_
#define POLNODE_CONSENSUS_SHA256_LANES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// The instruction-set levels of the multi-buffer SHA-256. kOpenSsl is one message at a time
/// through sha256.h, which every machine runs.
enum class Sha256Isa { kOpenSsl, kAvx2, kAvx512 };

/// "openssl", "avx2" or "avx512".
std::string_view Sha256IsaName(Sha256Isa isa);

/// The levels this CPU runs: kOpenSsl, then kAvx2 and kAvx512 where the CPU has them.
std::span<const Sha256Isa> AvailableSha256Isas();

/// The level the hashes of pinpoint.h use: kAvx512 where the CPU has it; else kAvx2 where the
/// CPU has it but lacks the SHA extensions (with them OpenSSL is faster than eight lanes);
/// else kOpenSsl.
Sha256Isa BestSha256Isa();

/// How many messages `isa` hashes side by side: 1 for kOpenSsl, 16 for kAvx2, 32 for kAvx512.
std::size_t Sha256LaneCount(Sha256Isa isa);

/// out[i] = Sha256(messages[i]) for every i, computed at `isa`. Preconditions: every message has
/// the length of messages[0]; out.size() == messages.size(); `isa` is one of
/// AvailableSha256Isas() (tests and benchmarks name each level to compare them).
void Sha256Lanes(Sha256Isa isa, std::span<const std::span<const std::uint8_t>> messages, std::span<Hash256> out);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_SHA256_LANES_H_
