// Key files: mode 0600 on creation, refusal of files other users can access, refusal to
// overwrite, and rejection of malformed contents.
#include "polnode/consensus/key_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "consensus_test_util.h"

namespace polnode::consensus {
namespace {

using testing::ScratchDir;

void WriteRaw(const std::string& path, const std::string& contents, mode_t mode) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << contents;
  }
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}

TEST(KeyFileTest, RoundTripWithMode0600) {
  ScratchDir dir;
  const std::string path = dir.File("node.key");
  Result<SecretKey> key = SecretKey::Generate();
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(WriteKeyFile(path, *key).ok());
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ReadRaw(path), ToHex(key->bytes()) + "\n");

  Result<SecretKey> loaded = ReadKeyFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(ToHex(loaded->bytes()), ToHex(key->bytes()));
  EXPECT_EQ(loaded->PublicKey(), key->PublicKey());

  // Only the key file is left: the temporary file was removed.
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "node.key");
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(KeyFileTest, ModeIsExactRegardlessOfUmask) {
  ScratchDir dir;
  const mode_t old = ::umask(0277);  // would leave 0400 if the code relied on open()'s mode alone
  Result<SecretKey> key = SecretKey::Generate();
  ASSERT_TRUE(key.ok());
  Status written = WriteKeyFile(dir.File("k"), *key);
  ::umask(old);
  ASSERT_TRUE(written.ok()) << written.ToString();
  EXPECT_EQ(ModeOf(dir.File("k")), 0600u);
}

TEST(KeyFileTest, NeverOverwrites) {
  ScratchDir dir;
  const std::string path = dir.File("node.key");
  Result<SecretKey> first = SecretKey::Generate();
  Result<SecretKey> second = SecretKey::Generate();
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(WriteKeyFile(path, *first).ok());
  EXPECT_EQ(WriteKeyFile(path, *second).code(), StatusCode::kAlreadyExists);
  Result<SecretKey> loaded = ReadKeyFile(path);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->PublicKey(), first->PublicKey());
}

TEST(KeyFileTest, RefusesFilesOthersCanAccess) {
  ScratchDir dir;
  const std::string path = dir.File("node.key");
  Result<SecretKey> key = SecretKey::Generate();
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(WriteKeyFile(path, *key).ok());
  for (mode_t mode : {0644, 0640, 0604, 0660, 0620, 0602, 0601, 0610, 0777}) {
    SCOPED_TRACE(::testing::Message() << "mode " << std::oct << mode);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    Result<SecretKey> loaded = ReadKeyFile(path);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), StatusCode::kPermissionDenied);
    // The message names the fix.
    EXPECT_NE(loaded.status().message().find("chmod 600 " + path), std::string::npos)
        << loaded.status().message();
  }
  ASSERT_EQ(::chmod(path.c_str(), 0400), 0);
  EXPECT_TRUE(ReadKeyFile(path).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(ReadKeyFile(path).ok());
}

TEST(KeyFileTest, MissingFileAndDirectory) {
  ScratchDir dir;
  EXPECT_EQ(ReadKeyFile(dir.File("absent.key")).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
  EXPECT_EQ(ReadKeyFile(dir.path().string()).status().code(), StatusCode::kInvalidArgument);
  Result<SecretKey> key = SecretKey::Generate();
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(WriteKeyFile(dir.File("no/such/dir.key"), *key).code(), StatusCode::kNotFound);
}

TEST(KeyFileTest, AcceptsUppercaseAndMissingNewline) {
  ScratchDir dir;
  const std::string hex = "B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF";
  WriteRaw(dir.File("upper"), hex, 0600);
  Result<SecretKey> key = ReadKeyFile(dir.File("upper"));
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(ToHex(key->PublicKey().bytes()), "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659");
}

TEST(KeyFileTest, RejectsMalformedContents) {
  ScratchDir dir;
  const std::string good = "b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfef";
  const std::string cases[] = {
      "",
      "\n",
      good.substr(1) + "\n",                  // 63 characters
      good + "00\n",                          // 66 characters
      good + "\n\n",                          // two newlines
      good + " \n",                           // trailing space
      good + "\r\n",                          // CRLF
      " " + good.substr(1),                   // leading space
      "g" + good.substr(1) + "\n",            // non-hex
      std::string(64, '0') + "\n",            // zero is not a key
      "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141\n",  // the curve order
      std::string(4096, 'a'),                 // far too long
  };
  int i = 0;
  for (const std::string& contents : cases) {
    const std::string path = dir.File("bad" + std::to_string(i++));
    WriteRaw(path, contents, 0600);
    Result<SecretKey> key = ReadKeyFile(path);
    ASSERT_FALSE(key.ok()) << "accepted: '" << contents << "'";
    EXPECT_EQ(key.status().code(), StatusCode::kCorruption) << key.status().ToString();
    // The message must not echo the file's contents, which could be a real secret.
    EXPECT_EQ(key.status().message().find(good), std::string::npos);
  }
}

}  // namespace
}  // namespace polnode::consensus
