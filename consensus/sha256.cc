#include "polnode/consensus/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

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
  EVP_MD_CTX* ctx = nullptr;
};

Sha256Hasher::Sha256Hasher() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx == nullptr) std::abort();
  CheckEvp(EVP_DigestInit_ex(impl_->ctx, Sha256Md(), nullptr));
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(impl_->ctx); }

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
  Hash256 out{};
  unsigned int len = 0;
  CheckEvp(EVP_Digest(data.data(), data.size(), out.data(), &len, Sha256Md(), nullptr));
  return out;
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
