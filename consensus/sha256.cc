#include "polnode/consensus/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <memory>
#include <utility>

#include "polnode/consensus/hex.h"

namespace polnode::consensus {
namespace {

// EVP calls on SHA-256 fail only on allocation failure or a broken OpenSSL install; neither can
// be handled meaningfully by a caller, so they abort instead of returning a digest of garbage.
void CheckEvp(int rc) {
  if (rc != 1) std::abort();
}

// SHA-256 fetched from the default provider once. EVP_sha256() hands OpenSSL 3 a name to look up
// on every EVP_DigestInit_ex/EVP_Digest (a locked provider query, about as costly as hashing a
// transaction); a fetched EVP_MD skips that. Never freed: it lives as long as the process.
const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (fetched == nullptr) std::abort();
    return fetched;
  }();
  return md;
}

}  // namespace

struct Sha256Hasher::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Impl() {
    if (ctx == nullptr) std::abort();
  }
  ~Impl() { EVP_MD_CTX_free(ctx); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

namespace {

// This thread's spare context (see TakeImpl). A plain pointer, freed by a guard at thread exit, so
// that a hasher that outlives the guard (destroyed later in thread or process teardown) finds
// `alive` false and frees its own context instead of parking it in a slot nobody frees.
struct SpareSlot {
  void* impl = nullptr;  // a Sha256Hasher::Impl*, which this file alone can name
  bool alive = true;
  void (*free_impl)(void*) = nullptr;
  ~SpareSlot() {
    if (impl != nullptr && free_impl != nullptr) free_impl(impl);
    impl = nullptr;
    alive = false;
  }
};
thread_local SpareSlot spare_slot;

}  // namespace

std::unique_ptr<Sha256Hasher::Impl> Sha256Hasher::TakeImpl() {
  std::unique_ptr<Impl> impl;
  if (spare_slot.alive && spare_slot.impl != nullptr) {
    impl.reset(static_cast<Impl*>(std::exchange(spare_slot.impl, nullptr)));
  } else {
    impl = std::make_unique<Impl>();
  }
  CheckEvp(EVP_DigestInit_ex(impl->ctx, Sha256Md(), nullptr));
  return impl;
}

void Sha256Hasher::ReturnImpl(std::unique_ptr<Impl> impl) {
  if (spare_slot.alive && spare_slot.impl == nullptr) {
    spare_slot.free_impl = [](void* p) { delete static_cast<Impl*>(p); };
    spare_slot.impl = impl.release();
  }
  // Otherwise `impl` is freed here.
}

Sha256Hasher::Sha256Hasher() : impl_(TakeImpl()) {}

Sha256Hasher::~Sha256Hasher() { ReturnImpl(std::move(impl_)); }

void Sha256Hasher::Update(std::span<const std::uint8_t> data) {
  CheckEvp(EVP_DigestUpdate(impl_->ctx, data.data(), data.size()));
}

void Sha256Hasher::Update(std::string_view data) {
  CheckEvp(EVP_DigestUpdate(impl_->ctx, data.data(), data.size()));
}

Hash256 Sha256Hasher::Finalize() {
  Hash256 out{};
  unsigned int len = 0;
  CheckEvp(EVP_DigestFinal_ex(impl_->ctx, out.data(), &len));
  if (len != out.size()) std::abort();
  CheckEvp(EVP_DigestInit_ex(impl_->ctx, Sha256Md(), nullptr));
  return out;
}

Hash256 Sha256(std::span<const std::uint8_t> data) {
  Sha256Hasher hasher;  // a recycled context (see TakeImpl): EVP_Digest allocated one per call
  hasher.Update(data);
  return hasher.Finalize();
}

Hash256 Sha256(std::string_view data) {
  return Sha256(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
}

Result<Hash256> HashFromHex(std::string_view hex) {
  if (hex.size() != 64) {
    return Status::InvalidArgument("a hash is 64 hex characters, got " + std::to_string(hex.size()));
  }
  Hash256 out{};
  if (!HexToFixed(hex, out).ok()) return Status::InvalidArgument("non-hex character in hash");
  return out;
}

}  // namespace polnode::consensus
