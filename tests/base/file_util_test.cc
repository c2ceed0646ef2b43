// Staged files (written in pieces from several threads, committed under a name chosen later, alone
// or published in a batch sharing one directory sync) and the atomic whole-file write built on
// them.
#include "polnode/base/file_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "polnode/testing/temp_dir.h"

namespace polnode {
namespace {

int FilesIn(const std::string& dir) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file();
  return files;
}

TEST(StagedFileTest, PiecesWrittenFromSeveralThreadsLandAtTheirOffsets) {
  polnode::testing::TempDir dir("staged");
  std::vector<std::uint8_t> bytes(100'003);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 131 + 7);
  Result<StagedFile> file = StagedFile::Create(StagedFile::TempPathBeside(dir.File("out")));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  // Four threads write interleaved 1000-byte pieces, the last piece short.
  std::vector<std::thread> writers;
  std::vector<Status> results(4);
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (std::size_t offset = 1000 * static_cast<std::size_t>(t); offset < bytes.size(); offset += 4000) {
        const std::size_t n = std::min<std::size_t>(1000, bytes.size() - offset);
        Status s = file->WriteAt(offset, std::span<const std::uint8_t>(bytes).subspan(offset, n));
        if (!s.ok()) results[static_cast<std::size_t>(t)] = s;
      }
    });
  }
  for (std::thread& w : writers) w.join();
  for (const Status& s : results) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.File("out")));  // not visible before Commit
  ASSERT_TRUE(file->StartWriteback().ok());
  ASSERT_TRUE(file->Commit(dir.File("out")).ok());
  Result<std::vector<std::uint8_t>> back = ReadWholeFile(dir.File("out"), 1 << 20);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_EQ(FilesIn(dir.path()), 1);  // the temporary name is gone
  EXPECT_EQ(file->Commit(dir.File("again")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(file->WriteAt(0, bytes).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(file->StartWriteback().code(), StatusCode::kFailedPrecondition);
}

TEST(StagedFileTest, AnUncommittedFileLeavesNothingAndAMovedOneKeepsItsBytes) {
  polnode::testing::TempDir dir("staged-drop");
  const std::vector<std::uint8_t> bytes = {1, 2, 3};
  {
    Result<StagedFile> dropped = StagedFile::Create(StagedFile::TempPathBeside(dir.File("dropped")));
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(dropped->WriteAt(0, bytes).ok());
    EXPECT_EQ(FilesIn(dir.path()), 1);
  }
  EXPECT_EQ(FilesIn(dir.path()), 0);

  Result<StagedFile> first = StagedFile::Create(StagedFile::TempPathBeside(dir.File("kept")));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->WriteAt(0, bytes).ok());
  StagedFile moved = std::move(*first);
  Result<StagedFile> other = StagedFile::Create(StagedFile::TempPathBeside(dir.File("other")));
  ASSERT_TRUE(other.ok());
  *other = std::move(moved);  // drops the file `other` held
  EXPECT_EQ(FilesIn(dir.path()), 1);
  ASSERT_TRUE(other->Commit(dir.File("kept")).ok());
  EXPECT_EQ(*ReadWholeFile(dir.File("kept"), 16), bytes);
}

TEST(StagedFileTest, AnExistingTemporaryPathOrAMissingDirectoryIsAnIoError) {
  polnode::testing::TempDir dir("staged-errors");
  ASSERT_TRUE(WriteFileAtomically(dir.File("taken"), std::string_view("x")).ok());
  Result<StagedFile> taken = StagedFile::Create(dir.File("taken"));
  EXPECT_EQ(taken.status().code(), StatusCode::kIOError);
  EXPECT_EQ(*ReadWholeFile(dir.File("taken"), 16), std::vector<std::uint8_t>{'x'});  // untouched
  EXPECT_EQ(StagedFile::Create(dir.File("no/such/dir.tmp")).status().code(), StatusCode::kIOError);
  EXPECT_EQ(WriteFileAtomically(dir.File("no/such/file"), std::string_view("x")).code(), StatusCode::kIOError);
  EXPECT_EQ(FilesIn(dir.path()), 1);
}

// Publish names a file with its bytes durable, and one SyncDirectory afterwards makes every name
// published into that directory durable: Commit's two halves, for batches.
TEST(StagedFileTest, PublishedFilesShareOneDirectorySync) {
  polnode::testing::TempDir dir("staged-publish");
  std::vector<StagedFile> files;
  for (int i = 0; i < 3; ++i) {
    Result<StagedFile> file = StagedFile::Create(StagedFile::TempPathBeside(dir.File("f")));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    const std::vector<std::uint8_t> bytes(static_cast<std::size_t>(100 * (i + 1)), static_cast<std::uint8_t>(i));
    ASSERT_TRUE(file->WriteAt(0, bytes).ok());
    files.push_back(std::move(*file));
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(files[static_cast<std::size_t>(i)].Publish(dir.File("f" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(SyncDirectory(dir.path()).ok());
  EXPECT_EQ(FilesIn(dir.path()), 3);  // the three names, no temporary one
  for (int i = 0; i < 3; ++i) {
    Result<std::vector<std::uint8_t>> back = ReadWholeFile(dir.File("f" + std::to_string(i)), 1024);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, std::vector<std::uint8_t>(static_cast<std::size_t>(100 * (i + 1)), static_cast<std::uint8_t>(i)));
  }
  EXPECT_EQ(files[0].Publish(dir.File("again")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(files[0].Commit(dir.File("again")).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(dir.File("again")));
  EXPECT_EQ(SyncDirectory(dir.File("no/such/dir")).code(), StatusCode::kIOError);
}

TEST(WriteFileAtomicallyTest, ReplacesTheWholeFile) {
  polnode::testing::TempDir dir("atomic");
  ASSERT_TRUE(WriteFileAtomically(dir.File("f"), std::string_view("a longer first version")).ok());
  ASSERT_TRUE(WriteFileAtomically(dir.File("f"), std::string_view("second")).ok());
  Result<std::vector<std::uint8_t>> back = ReadWholeFile(dir.File("f"), 64);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::string(back->begin(), back->end()), "second");
  EXPECT_EQ(FilesIn(dir.path()), 1);
}

}  // namespace
}  // namespace polnode
