#include "polnode/solver/blob_store.h"

#include <algorithm>
#include <filesystem>

#include "polnode/consensus/hex.h"

namespace polnode::solver {

Result<BlobStore> BlobStore::Open(std::string dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("creating blob directory " + dir + ": " + ec.message());
  return BlobStore(std::move(dir));
}

Result<BlobStore> BlobStore::OpenExisting(std::string dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Status::NotFound("no blob directory " + dir);
  return BlobStore(std::move(dir));
}

std::string BlobStore::PathOf(const consensus::Hash256& hash) const {
  return dir_ + "/" + consensus::ToHex(hash);
}

namespace {

// The blob's bytes, read without the name check (each caller checks them its way).
Result<std::vector<std::uint8_t>> ReadBlob(const std::string& path, const consensus::Hash256& hash,
                                           const std::string& dir, std::uint64_t max_bytes) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, std::min(max_bytes, kMaxBlobBytes));
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("blob " + consensus::ToHex(hash) + " is not in " + dir);
  }
  return bytes;
}

Status WrongHash(const consensus::Hash256& hash) {
  return Status::Corruption("blob " + consensus::ToHex(hash) + " holds bytes with another hash");
}

}  // namespace

bool BlobHasName(const consensus::Hash256& name, std::span<const std::uint8_t> bytes) {
  if (Result<TrainState> state = DecodeState(bytes); state.ok() && StateHash(*state) == name) return true;
  return consensus::Sha256(bytes) == name;
}

Result<consensus::Hash256> BlobStore::Put(std::span<const std::uint8_t> bytes) {
  const consensus::Hash256 hash = consensus::Sha256(bytes);
  POLNODE_RETURN_IF_ERROR(PutNamed(hash, bytes));
  return hash;
}

Status BlobStore::PutNamed(const consensus::Hash256& name, std::span<const std::uint8_t> bytes) const {
  return WriteFileAtomically(PathOf(name), bytes);
}

Result<StagedFile> BlobStore::Stage() const { return StagedFile::Create(StagedFile::TempPathBeside(dir_ + "/blob")); }

Status BlobStore::Commit(StagedFile file, const consensus::Hash256& name) const { return file.Commit(PathOf(name)); }

Status BlobStore::CommitAll(std::span<StagedFile> files, std::span<const consensus::Hash256> names) const {
  for (std::size_t i = 0; i < files.size(); ++i) POLNODE_RETURN_IF_ERROR(files[i].Publish(PathOf(names[i])));
  return SyncDirectory(dir_);
}

Result<std::vector<std::uint8_t>> BlobStore::Get(const consensus::Hash256& hash, std::uint64_t max_bytes) const {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadBlob(PathOf(hash), hash, dir_, max_bytes));
  if (!BlobHasName(hash, bytes)) return WrongHash(hash);
  return bytes;
}

Result<StoredState> BlobStore::GetState(const consensus::Hash256& hash, std::uint64_t max_bytes) const {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadBlob(PathOf(hash), hash, dir_, max_bytes));
  StoredState stored;
  POLNODE_ASSIGN_OR_RETURN(stored.state, DecodeState(bytes));
  stored.state_hash = StateHash(stored.state);
  // Named by its state hash, or (proofs written before that naming) by its bytes' SHA-256.
  if (stored.state_hash != hash && consensus::Sha256(bytes) != hash) return WrongHash(hash);
  return stored;
}

bool BlobStore::Contains(const consensus::Hash256& hash) const {
  std::error_code ec;
  return std::filesystem::is_regular_file(PathOf(hash), ec);
}

}  // namespace polnode::solver
