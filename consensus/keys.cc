#include "polnode/consensus/keys.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "secp_context.h"

namespace polnode::consensus {
namespace {

// Wipes a secret from memory in a way the optimizer may not elide.
template <typename T>
void Wipe(T& secret) {
  OPENSSL_cleanse(&secret, sizeof(secret));
}

const secp256k1_context* Context() { return SecpContext(); }

static_assert(sizeof(secp256k1_xonly_pubkey) == 64, "XOnlyPublicKey::parsed_ holds a secp256k1_xonly_pubkey");

// A keypair that wipes itself: it holds the secret key too.
struct ScopedKeypair {
  secp256k1_keypair keypair{};
  ~ScopedKeypair() { Wipe(keypair); }
};

}  // namespace

// The shared context. Randomization blinds the secret-dependent computations in signing and
// key derivation against timing and power side channels; it needs 32 fresh random bytes once.
// Without a working CSPRNG no key could be generated safely either, so that failure aborts
// instead of continuing with an unblinded context.
const secp256k1_context* SecpContext() {
  static secp256k1_context* const context = [] {
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    std::array<unsigned char, 32> seed{};
    if (ctx == nullptr || RAND_bytes(seed.data(), static_cast<int>(seed.size())) != 1 ||
        secp256k1_context_randomize(ctx, seed.data()) != 1) {
      std::fputs("polnode: cannot set up libsecp256k1 (OpenSSL's random generator failed)\n", stderr);
      std::abort();
    }
    Wipe(seed);
    return ctx;
  }();
  return context;
}

Result<XOnlyPublicKey> XOnlyPublicKey::FromBytes(std::span<const std::uint8_t, 32> bytes) {
  secp256k1_xonly_pubkey parsed;
  if (secp256k1_xonly_pubkey_parse(Context(), &parsed, bytes.data()) != 1) {
    return Status::InvalidArgument("not a valid x-only public key (no curve point has this x coordinate)");
  }
  XOnlyPublicKey key;
  std::copy(bytes.begin(), bytes.end(), key.bytes_.begin());
  std::memcpy(key.parsed_.data(), &parsed, sizeof(parsed));
  return key;
}

XOnlyKeyCache::XOnlyKeyCache(std::size_t slots) {
  std::size_t n = 2;
  while (n < slots) n *= 2;
  slots_.resize(n);
}

Result<XOnlyPublicKey> XOnlyKeyCache::Parse(std::span<const std::uint8_t, 32> bytes) {
  // Two ways per set: slots 2s (the more recently used) and 2s+1. An x coordinate's low bytes are
  // as good as random for an honest key, and the set count is a power of two, so the set is a mask.
  std::uint64_t low = 0;
  std::memcpy(&low, bytes.data(), sizeof(low));
  const std::size_t set = static_cast<std::size_t>(low) & (slots_.size() / 2 - 1);
  Slot* ways = &slots_[2 * set];
  std::mutex& stripe = stripes_[set % kStripes];
  auto holds = [&](const Slot& slot) {
    return slot.used && std::equal(bytes.begin(), bytes.end(), slot.key.bytes_.begin());
  };
  {
    std::lock_guard<std::mutex> lock(stripe);
    if (holds(ways[1])) std::swap(ways[0], ways[1]);  // now the more recently used
    if (holds(ways[0])) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return ways[0].key;
    }
  }
  // The parse runs outside the lock: it is the slow part, and two threads parsing the same new
  // key at once both store the same value.
  POLNODE_ASSIGN_OR_RETURN(XOnlyPublicKey key, XOnlyPublicKey::FromBytes(bytes));
  std::lock_guard<std::mutex> lock(stripe);
  if (!holds(ways[0])) {
    ways[1] = ways[0];  // the least recently used goes
    ways[0] = Slot{true, key};
  }
  return key;
}

std::uint64_t XOnlyKeyCache::hits() const { return hits_.load(std::memory_order_relaxed); }

Result<SecretKey> SecretKey::Generate() {
  // A uniformly random 32-byte string is >= n or 0 with probability below 2^-127; the loop
  // bound only exists so a broken generator that returns constant garbage cannot spin forever.
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::array<std::uint8_t, 32> candidate{};
    if (RAND_bytes(candidate.data(), static_cast<int>(candidate.size())) != 1) {
      return Status::Unavailable("OpenSSL's random generator failed; cannot create a key");
    }
    Result<SecretKey> key = FromBytes(candidate);
    Wipe(candidate);
    if (key.ok()) return key;
  }
  return Status::Unavailable("the random generator kept producing invalid secret keys");
}

Result<SecretKey> SecretKey::FromBytes(std::span<const std::uint8_t, 32> bytes) {
  ScopedKeypair kp;
  if (secp256k1_keypair_create(Context(), &kp.keypair, bytes.data()) != 1) {
    return Status::InvalidArgument("secret key is zero or not below the curve order");
  }
  secp256k1_xonly_pubkey xonly;
  if (secp256k1_keypair_xonly_pub(Context(), &xonly, nullptr, &kp.keypair) != 1) {
    return Status::Internal("libsecp256k1 could not derive the public key of a valid keypair");
  }
  SecretKey key;
  std::copy(bytes.begin(), bytes.end(), key.bytes_.begin());
  if (secp256k1_xonly_pubkey_serialize(Context(), key.public_key_.bytes_.data(), &xonly) != 1) {
    return Status::Internal("libsecp256k1 could not serialize a public key");
  }
  std::memcpy(key.public_key_.parsed_.data(), &xonly, sizeof(xonly));
  return key;
}

SecretKey& SecretKey::operator=(const SecretKey& other) {
  bytes_ = other.bytes_;
  public_key_ = other.public_key_;
  return *this;
}

SecretKey::~SecretKey() { Wipe(bytes_); }

Result<SchnorrSignature> SignSchnorr(const SecretKey& key, std::span<const std::uint8_t> msg,
                                     std::span<const std::uint8_t, 32> aux_rand) {
  ScopedKeypair kp;
  if (secp256k1_keypair_create(Context(), &kp.keypair, key.bytes().data()) != 1) {
    return Status::Internal("libsecp256k1 rejected a validated secret key");
  }
  // libsecp256k1 takes ndata as void* but secp256k1_nonce_function_bip340 only reads it.
  std::array<std::uint8_t, 32> aux{};
  std::copy(aux_rand.begin(), aux_rand.end(), aux.begin());
  secp256k1_schnorrsig_extraparams params = SECP256K1_SCHNORRSIG_EXTRAPARAMS_INIT;
  params.ndata = aux.data();
  SchnorrSignature sig{};
  if (secp256k1_schnorrsig_sign_custom(Context(), sig.data(), msg.data(), msg.size(), &kp.keypair, &params) != 1) {
    return Status::Internal("libsecp256k1 failed to sign");
  }
  if (!VerifySchnorr(key.PublicKey(), msg, sig)) {
    return Status::Internal("a freshly made signature does not verify (hardware or memory fault?)");
  }
  return sig;
}

Result<SchnorrSignature> SignSchnorr(const SecretKey& key, std::span<const std::uint8_t> msg) {
  std::array<std::uint8_t, 32> aux{};
  if (RAND_bytes(aux.data(), static_cast<int>(aux.size())) != 1) {
    return Status::Unavailable("OpenSSL's random generator failed; cannot sign");
  }
  return SignSchnorr(key, msg, aux);
}

bool VerifySchnorr(const XOnlyPublicKey& key, std::span<const std::uint8_t> msg, const SchnorrSignature& sig) {
  secp256k1_xonly_pubkey parsed;
  std::memcpy(&parsed, key.parsed_.data(), sizeof(parsed));  // FromBytes or SecretKey made it
  return secp256k1_schnorrsig_verify(Context(), sig.data(), msg.data(), msg.size(), &parsed) == 1;
}

}  // namespace polnode::consensus
