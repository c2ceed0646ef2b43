// The blob store serves only bytes that have their name (SHA-256, or a checkpoint's state hash);
// and the manifest's wire form.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "polnode/consensus/merkle.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/train_state.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::solver {
namespace {

std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

TEST(ProofBlobStoreTest, StoresUnderTheHashAndRefusesTamperedBytes) {
  polnode::testing::TempDir dir("blobs");
  Result<BlobStore> store = BlobStore::Open(dir.File("b"));
  ASSERT_TRUE(store.ok());
  Result<consensus::Hash256> h = store->Put(Bytes("checkpoint"));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, consensus::Sha256("checkpoint"));
  EXPECT_TRUE(store->Contains(*h));
  EXPECT_EQ(*store->Get(*h), Bytes("checkpoint"));
  EXPECT_TRUE(store->Put(Bytes("checkpoint")).ok());  // idempotent
  std::ofstream(store->PathOf(*h), std::ios::trunc) << "forged";
  EXPECT_EQ(store->Get(*h).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(store->Get(consensus::Sha256("absent")).status().code(), StatusCode::kNotFound);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.File("b"))) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TrainState SmallState(float first) {
  TrainState state;
  state.step = 7;
  state.tensors.push_back({"w", *kernels::Tensor::FromValues({2, 3}, {first, 2, 3, 4, 5, 6})});
  state.tensors.push_back({"b", *kernels::Tensor::FromValues({3}, {0.5f, -1, 2})});
  return state;
}

// A checkpoint blob is named by its state hash, which Get checks by decoding it; a checkpoint
// stored under the SHA-256 of its bytes (proofs written before) is still served.
TEST(ProofBlobStoreTest, CheckpointsAreNamedByTheirStateHash) {
  polnode::testing::TempDir dir("blobs-state");
  Result<BlobStore> store = BlobStore::Open(dir.File("b"));
  ASSERT_TRUE(store.ok());
  const std::vector<std::uint8_t> bytes = EncodeState(SmallState(1));
  const consensus::Hash256 state_hash = StateHash(SmallState(1));
  EXPECT_TRUE(BlobHasName(state_hash, bytes));
  EXPECT_TRUE(BlobHasName(consensus::Sha256(bytes), bytes));
  EXPECT_FALSE(BlobHasName(StateHash(SmallState(9)), bytes));

  ASSERT_TRUE(store->PutNamed(state_hash, bytes).ok());
  EXPECT_EQ(*store->Get(state_hash), bytes);
  ASSERT_TRUE(store->Put(bytes).ok());
  EXPECT_EQ(*store->Get(consensus::Sha256(bytes)), bytes);
  // GetState decodes once and hands back the state hash its check computed, under either name.
  for (const consensus::Hash256& name : {state_hash, consensus::Sha256(bytes)}) {
    Result<StoredState> stored = store->GetState(name);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->state_hash, state_hash);
    EXPECT_EQ(EncodeState(stored->state), bytes);
  }
  Result<consensus::Hash256> not_a_state = store->Put(Bytes("not a state"));
  ASSERT_TRUE(not_a_state.ok());
  EXPECT_EQ(store->GetState(*not_a_state).status().code(), StatusCode::kCorruption);
  ASSERT_TRUE(std::filesystem::remove(store->PathOf(*not_a_state)));

  // Another state's bytes under this name, or bytes changed by one bit, are refused.
  const std::vector<std::uint8_t> other = EncodeState(SmallState(9));
  ASSERT_TRUE(store->PutNamed(state_hash, other).ok());
  EXPECT_EQ(store->Get(state_hash).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(store->GetState(state_hash).status().code(), StatusCode::kCorruption);
  std::vector<std::uint8_t> flipped = bytes;
  flipped[flipped.size() - 1] ^= 1;
  ASSERT_TRUE(store->PutNamed(state_hash, flipped).ok());
  EXPECT_EQ(store->Get(state_hash).status().code(), StatusCode::kCorruption);

  // A staged blob, written in two pieces, becomes the blob at Commit.
  Result<StagedFile> staged = store->Stage();
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  const std::span<const std::uint8_t> all(bytes);
  ASSERT_TRUE(staged->WriteAt(10, all.subspan(10)).ok());
  ASSERT_TRUE(staged->WriteAt(0, all.first(10)).ok());
  ASSERT_TRUE(store->Commit(std::move(*staged), state_hash).ok());
  EXPECT_EQ(*store->Get(state_hash), bytes);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.File("b"))) files += entry.is_regular_file();
  EXPECT_EQ(files, 2);  // the two names; no temporary file left
}

// CommitAll makes many staged checkpoints blobs at once; a failing file stops it there: the ones
// before it are blobs, it and the ones after it are not, and no temporary file outlives them.
TEST(ProofBlobStoreTest, CommitAllNamesEveryStagedBlobOrStopsAtTheFirstFailure) {
  polnode::testing::TempDir dir("blobs-commit-all");
  Result<BlobStore> store = BlobStore::Open(dir.File("b"));
  ASSERT_TRUE(store.ok());
  const auto stage = [&](const std::vector<std::uint8_t>& bytes) {
    Result<StagedFile> file = store->Stage();
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_TRUE(file->WriteAt(0, bytes).ok());
    return std::move(*file);
  };
  std::vector<StagedFile> files;
  std::vector<consensus::Hash256> names;
  for (float first : {1.0f, 2.0f, 3.0f}) {
    files.push_back(stage(EncodeState(SmallState(first))));
    names.push_back(StateHash(SmallState(first)));
  }
  ASSERT_TRUE(store->CommitAll(files, names).ok());
  for (float first : {1.0f, 2.0f, 3.0f}) {
    EXPECT_EQ(*store->Get(StateHash(SmallState(first))), EncodeState(SmallState(first)));
  }

  // The second file was committed already: the first becomes a blob, the third stays staged.
  std::vector<StagedFile> batch;
  batch.push_back(stage(EncodeState(SmallState(4))));
  batch.push_back(std::move(files[1]));
  batch.push_back(stage(EncodeState(SmallState(5))));
  const std::vector<consensus::Hash256> batch_names = {StateHash(SmallState(4)), consensus::Sha256("x"),
                                                       StateHash(SmallState(5))};
  EXPECT_EQ(store->CommitAll(batch, batch_names).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store->Get(StateHash(SmallState(4))).ok());
  EXPECT_FALSE(store->Contains(consensus::Sha256("x")));
  EXPECT_FALSE(store->Contains(StateHash(SmallState(5))));
  batch.clear();
  files.clear();
  int left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.File("b"))) left += entry.is_regular_file();
  EXPECT_EQ(left, 4);  // the four blobs; no temporary file
}

ProofManifest SampleManifest() {
  ProofManifest m;
  m.task_id = consensus::Sha256("task");
  m.checkpoint_interval = 2;
  m.steps = 4;
  m.checkpoint_hashes = {consensus::Sha256("a"), consensus::Sha256("b"), consensus::Sha256("c")};
  m.checkpoint_blobs = {consensus::Sha256("blob a"), consensus::Sha256("blob b"), consensus::Sha256("blob c")};
  m.merkle_root = consensus::MerkleRoot(m.checkpoint_hashes);
  m.loss_bits = {1, 2, 3, 0x7fc00000};
  m.backend = "reference";
  return m;
}

TEST(ProofManifestTest, RoundTripsSignsAndDetectsTampering) {
  ProofManifest m = SampleManifest();
  std::array<std::uint8_t, 32> key_bytes{};
  key_bytes.fill(0x44);
  ASSERT_TRUE(SignManifest(m, *consensus::SecretKey::FromBytes(key_bytes)).ok());
  EXPECT_TRUE(CheckManifestIntegrity(m).ok());
  const std::string wire = EncodeManifest(m);
  Result<ProofManifest> back =
      DecodeManifest(std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(EncodeManifest(*back), wire);
  EXPECT_EQ(back->checkpoint_hashes, m.checkpoint_hashes);
  EXPECT_EQ(back->checkpoint_blobs, m.checkpoint_blobs);
  EXPECT_TRUE(CheckManifestIntegrity(*back).ok());
  ProofManifest tampered = *back;
  tampered.loss_bits[0] ^= 1;
  EXPECT_EQ(CheckManifestIntegrity(tampered).code(), StatusCode::kCorruption);
  tampered = *back;
  tampered.merkle_root[0] ^= 1;
  EXPECT_EQ(CheckManifestIntegrity(tampered).code(), StatusCode::kCorruption);
  // The signature covers the blob hashes too (they are outside the Merkle root).
  tampered = *back;
  tampered.checkpoint_blobs[1][0] ^= 1;
  EXPECT_NE(CheckManifestIntegrity(tampered).message().find("signature"), std::string::npos);
}

TEST(ProofManifestTest, NeedsOneBlobHashPerCheckpoint) {
  ProofManifest m = SampleManifest();
  EXPECT_TRUE(CheckManifestIntegrity(m).ok());
  m.checkpoint_blobs.pop_back();
  const Status s = CheckManifestIntegrity(m);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("blob hashes"), std::string::npos) << s.ToString();
  // Still decodes (structure only), and the count check is CheckManifestIntegrity's.
  const std::string wire = EncodeManifest(m);
  Result<ProofManifest> back =
      DecodeManifest(std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->checkpoint_blobs.size(), 2u);
  EXPECT_EQ(CheckManifestIntegrity(*back).code(), StatusCode::kCorruption);
}

TEST(ProofManifestTest, MalformedBytesAreCorruption) {
  const std::uint8_t garbage[] = {0x0a, 0x05, 0x01};
  EXPECT_EQ(DecodeManifest(garbage).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeManifest({}).status().code(), StatusCode::kCorruption);  // no task id
  ProofManifest m = SampleManifest();
  std::string wire = EncodeManifest(m);
  wire.resize(wire.size() - 5);
  EXPECT_FALSE(DecodeManifest(std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size())).ok());
}

}  // namespace
}  // namespace polnode::solver
