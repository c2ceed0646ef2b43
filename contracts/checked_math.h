// Checked uint64 arithmetic for every amount the contracts move. An overflow or underflow is a
// value (kOutOfRange) that fails the transaction, never undefined behaviour or a silent wrap.
#ifndef POLNODE_CONTRACTS_CHECKED_MATH_H_
#define POLNODE_CONTRACTS_CHECKED_MATH_H_

#include <cstdint>
#include <string_view>

#include "polnode/base/status.h"

namespace polnode::contracts {

/// Basis points in one whole (100%).
inline constexpr std::uint64_t kBpsDenominator = 10'000;

/// a + b, or kOutOfRange naming `what` when the sum exceeds uint64.
inline Result<std::uint64_t> CheckedAdd(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return Status::OutOfRange(std::string(what) + " overflows uint64");
  return sum;
}

/// a - b, or kOutOfRange naming `what` when b > a.
inline Result<std::uint64_t> CheckedSub(std::uint64_t a, std::uint64_t b, std::string_view what) {
  if (b > a) return Status::OutOfRange(std::string(what) + " would go below zero");
  return a - b;
}

/// a * b, or kOutOfRange naming `what` when the product exceeds uint64.
inline Result<std::uint64_t> CheckedMul(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return Status::OutOfRange(std::string(what) + " overflows uint64");
  return product;
}

/// floor(amount * bps / 10000) for bps <= 10000, exact and overflow-free: with
/// amount = q * 10000 + r the result is q * bps + floor(r * bps / 10000), and both terms are at
/// most `amount`.
constexpr std::uint64_t BpsOf(std::uint64_t amount, std::uint32_t bps) {
  const std::uint64_t q = amount / kBpsDenominator;
  const std::uint64_t r = amount % kBpsDenominator;
  return q * bps + (r * bps) / kBpsDenominator;
}

/// floor(amount * bps / 10000) for any bps (above 10000 too), saturating at 2^64 - 1 instead of
/// wrapping: with amount = q * 10000 + r it is q * bps + floor(r * bps / 10000), where the second
/// term cannot overflow (r * bps < 10000 * 2^32).
constexpr std::uint64_t ScaleBpsSaturating(std::uint64_t amount, std::uint32_t bps) {
  const std::uint64_t q = amount / kBpsDenominator;
  const std::uint64_t r = amount % kBpsDenominator;
  std::uint64_t whole = 0;
  if (__builtin_mul_overflow(q, std::uint64_t{bps}, &whole)) return UINT64_MAX;
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(whole, (r * bps) / kBpsDenominator, &sum)) return UINT64_MAX;
  return sum;
}

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_CHECKED_MATH_H_
