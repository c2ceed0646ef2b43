// End to end: the real polnode binary creates keys, signs a transaction file and verifies it,
// as a user would run it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The value of "key":"..." in a flat JSON object.
std::string JsonString(const std::string& json, const std::string& key) {
  std::string needle = "\"" + key + "\":\"";
  auto start = json.find(needle);
  if (start == std::string::npos) return "";
  start += needle.size();
  return json.substr(start, json.find('"', start) - start);
}

class KeysCliTest : public ::testing::Test {
 protected:
  ProcessResult Polnode(std::vector<std::string> args) {
    args.insert(args.begin(), PolnodeBinary());
    return RunProcess(args, dir_.path());
  }

  TempDir dir_;
};

TEST_F(KeysCliTest, KeygenJsonPrintsXOnlyPublicKeyAndWritesPrivateFile) {
  ProcessResult r = Polnode({"keygen", "--json", "--out", "k.key"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string pubkey = JsonString(r.out, "pubkey");
  EXPECT_EQ(pubkey.size(), 64u) << r.out;
  EXPECT_EQ(pubkey.find_first_not_of("0123456789abcdef"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(dir_.File("k.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  ProcessResult again = Polnode({"keygen", "--out", "k.key"});
  EXPECT_NE(again.exit_code, 0) << "an existing key file is never overwritten";
  EXPECT_NE(again.err.find("k.key"), std::string::npos);
}

TEST_F(KeysCliTest, KeygenWithoutOutPicksAFileNamedByTheKey) {
  ProcessResult r = Polnode({"keygen", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string file = JsonString(r.out, "key_file");
  EXPECT_EQ(file, "key-" + JsonString(r.out, "pubkey").substr(0, 16) + ".key");
  EXPECT_FALSE(ReadAll(dir_.File(file)).empty());
}

TEST_F(KeysCliTest, SignThenVerifyAndEveryTamperingIsCaught) {
  ASSERT_EQ(Polnode({"keygen", "--out", "k.key"}).exit_code, 0);
  WriteAll(dir_.File("tx.json"),
           R"({"chain_id":"polnode-local","nonce":3,"payload_type":"transfer","payload_hex":"0102030405"})");
  ProcessResult sign = Polnode({"sign", "--key", "k.key", "--tx", "tx.json", "--out", "tx.bin", "--json"});
  ASSERT_EQ(sign.exit_code, 0) << sign.err;
  ProcessResult verify = Polnode({"verify", "--tx", "tx.bin", "--json"});
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find("\"valid\":true"), std::string::npos);
  EXPECT_EQ(JsonString(verify.out, "tx_id"), JsonString(sign.out, "tx_id"));
  EXPECT_EQ(JsonString(verify.out, "signer_pubkey"), JsonString(sign.out, "signer"));

  // Flip every bit position's byte in turn: each altered envelope must be rejected (exit 1),
  // whether the change lands in a field, a length, a tag or the signature.
  std::string wire = ReadAll(dir_.File("tx.bin"));
  ASSERT_FALSE(wire.empty());
  for (std::size_t i = 0; i < wire.size(); ++i) {
    std::string bad = wire;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    WriteAll(dir_.File("bad.bin"), bad);
    ProcessResult r = Polnode({"verify", "--tx", "bad.bin"});
    EXPECT_EQ(r.exit_code, 1) << "byte " << i << " altered but accepted";
  }
}

TEST_F(KeysCliTest, ReadableKeyFileIsRefusedWithAFix) {
  ASSERT_EQ(Polnode({"keygen", "--out", "k.key"}).exit_code, 0);
  ASSERT_EQ(::chmod(dir_.File("k.key").c_str(), 0644), 0);
  WriteAll(dir_.File("tx.json"), R"({"chain_id":"c","nonce":1,"payload_type":"t","payload_hex":""})");
  ProcessResult r = Polnode({"sign", "--key", "k.key", "--tx", "tx.json", "--out", "tx.bin"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
}

TEST_F(KeysCliTest, UsageErrorsExitTwoWithASentence) {
  ProcessResult r = Polnode({"sign", "--key", "k.key"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing required flag"), std::string::npos) << r.err;
  ProcessResult missing = Polnode({"verify", "--tx", "nope.bin"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.bin"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace polnode::testing
