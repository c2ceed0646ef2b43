// Data and model files by content hash (file_store.h, file_http.h) over real loopback HTTP: a
// FileServer behind a real HttpServer, fetched into a real FileStore on disk under a real fetch
// policy. Bad servers are the same server with one answer altered by the test.
#include "polnode/rpc/file_http.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/http_server.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/pol_files.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::node {
namespace {

namespace fs = std::filesystem;
using polnode::testing::IsOk;
using polnode::testing::StatusIs;

FetchPolicy Loopback() {
  Result<FetchPolicy> policy = FetchPolicy::Make("http", "loopback", FetchPolicy::kDefaultMaxBytes, 2);
  EXPECT_TRUE(policy.ok());
  return policy.ok() ? *policy : FetchPolicy();
}

std::string Bytes(std::size_t n, std::uint8_t seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

void WriteText(const std::string& path, std::string_view bytes) { ASSERT_TRUE(IsOk(WriteFileAtomically(path, bytes))); }

std::size_t FilesIn(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() || e.is_directory() ? 1 : 0;
  return n;
}

// A FileServer on a real loopback HttpServer. `alter`, when set, may rewrite any answer (the
// test's bad server); `requests` counts what reached it.
class ServedFiles {
 public:
  using Alter = std::function<void(const std::string& target, HttpResponse& response)>;

  explicit ServedFiles(Alter alter = nullptr) : alter_(std::move(alter)) {
    auto server = HttpServer::Start(
        HttpServerOptions{},
        [this](const HttpRequest& request) {
          ++requests_;
          std::optional<HttpResponse> r = files_.Handle(request);
          HttpResponse response = r ? std::move(*r) : JsonErrorResponse(404, "no route");
          if (alter_) alter_(request.target, response);
          return response;
        },
        nullptr);
    EXPECT_TRUE(server.ok());
    if (server.ok()) server_ = std::move(*server);
  }

  FileServer& files() { return files_; }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int requests() const { return requests_.load(); }
  void Stop() { server_->Stop(); }

 private:
  FileServer files_;
  Alter alter_;
  std::atomic<int> requests_{0};
  std::unique_ptr<HttpServer> server_;
};

class FileHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.path() + "/src";
    fs::create_directories(src_);
    WriteText(src_ + "/a.bin", Bytes(300000, 1));
    WriteText(src_ + "/b.bin", Bytes(17, 2));
  }
  FileStore OpenStore() {
    Result<FileStore> store = FileStore::Open(dir_.path() + "/store");
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }
  // Nothing was stored under any name, and no temporary file is left.
  void ExpectNothingStored(const FileStore& store) {
    EXPECT_EQ(FilesIn(store.dir() + "/objects"), 0u);
    EXPECT_EQ(FilesIn(store.dir() + "/sets"), 0u);
    EXPECT_EQ(FilesIn(store.dir() + "/tmp"), 0u);
  }

  polnode::testing::TempDir dir_{"file-http"};
  std::string src_;
};

TEST_F(FileHttpTest, FetchesASetByItsManifestAndNeverFetchesItTwice) {
  ServedFiles served;
  Result<consensus::Hash256> manifest = served.files().AddSet({src_ + "/a.bin", src_ + "/b.bin"});
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  FileStore store = OpenStore();
  const std::string uri = FileSetUri(served.base(), *manifest);
  Result<std::string> local = FetchFileSet(Loopback(), store, uri);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(polnode::testing::ReadFileText(*local + "/a.bin"), Bytes(300000, 1));
  EXPECT_EQ(polnode::testing::ReadFileText(*local + "/b.bin"), Bytes(17, 2));
  EXPECT_EQ(served.requests(), 3);  // the manifest and two files
  EXPECT_EQ(FilesIn(store.dir() + "/objects"), 3u);
  EXPECT_EQ(FilesIn(store.dir() + "/tmp"), 0u);

  // A second task on the same data, even in a restarted process, finds everything in the store:
  // the server may be gone.
  served.Stop();
  FileStore reopened = OpenStore();
  Result<std::string> again = FetchFileSet(Loopback(), reopened, uri);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *local);
  EXPECT_EQ(served.requests(), 3);
}

TEST_F(FileHttpTest, ASetOfOneFileResolvesToTheFileAndTaskLocationsAreRewritten) {
  ServedFiles served;
  Result<consensus::Hash256> data = served.files().AddSet({src_ + "/b.bin"});
  Result<consensus::Hash256> model = served.files().AddSet({src_ + "/a.bin"});
  ASSERT_TRUE(data.ok() && model.ok());
  FileStore store = OpenStore();
  solver::TaskSpec task;
  task.data_location = FileSetUri(served.base(), *data);
  task.model_location = FileSetUri(served.base(), *model);
  ASSERT_TRUE(IsOk(ResolveTaskFiles(Loopback(), store, task)));
  EXPECT_EQ(fs::path(task.data_location).filename(), "b.bin");
  EXPECT_EQ(polnode::testing::ReadFileText(task.data_location), Bytes(17, 2));
  EXPECT_EQ(polnode::testing::ReadFileText(task.model_location), Bytes(300000, 1));

  solver::TaskSpec local;
  local.data_location = src_;
  ASSERT_TRUE(IsOk(ResolveTaskFiles(Loopback(), store, local)));
  EXPECT_EQ(local.data_location, src_);  // a local path is left as it is
}

TEST_F(FileHttpTest, AnIdxDataSetLoadsFromTheFetchedSetWithItsContentHash) {
  const solver::ImageDataset data = solver::testing::TinyDataset();
  const std::string idx = dir_.path() + "/idx";
  fs::create_directories(idx);
  ASSERT_TRUE(IsOk(polnode::testing::WriteIdxDataset(idx, data)));
  Result<std::vector<std::string>> files = solver::DatasetFiles("mlp:16-8-3", idx);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->size(), 4u);
  ServedFiles served;
  Result<consensus::Hash256> manifest = served.files().AddSet(*files);
  ASSERT_TRUE(manifest.ok());
  FileStore store = OpenStore();
  solver::TaskSpec task = solver::testing::TinyTask(data);
  task.data_location = FileSetUri(served.base(), *manifest);
  ASSERT_TRUE(IsOk(ResolveTaskFiles(Loopback(), store, task)));
  Result<solver::ImageDataset> loaded = solver::LoadTaskData(task);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(solver::DatasetContentHash(*loaded), solver::DatasetContentHash(data));
}

TEST_F(FileHttpTest, BytesThatDoNotHashToTheirNameAreRefusedAndNotStored) {
  Result<FileEntry> b = HashLocalFile(src_ + "/b.bin");
  ASSERT_TRUE(b.ok());
  const std::string b_hex = consensus::ToHex(b->hash);
  ServedFiles served([&](const std::string& target, HttpResponse& r) {
    if (target.ends_with(b_hex)) r.body[3] ^= 1;  // same size, one bit off
  });
  Result<consensus::Hash256> manifest = served.files().AddSet({src_ + "/b.bin"});
  ASSERT_TRUE(manifest.ok());
  FileStore store = OpenStore();
  Result<std::string> local = FetchFileSet(Loopback(), store, FileSetUri(served.base(), *manifest));
  EXPECT_TRUE(StatusIs(local.status(), StatusCode::kCorruption));
  EXPECT_NE(local.status().message().find("hash"), std::string::npos) << local.status().ToString();
  EXPECT_FALSE(store.Contains(b->hash));
  EXPECT_TRUE(fs::is_empty(store.dir() + "/tmp"));
  EXPECT_TRUE(fs::is_empty(store.dir() + "/sets"));
}

TEST_F(FileHttpTest, AServerSendingMoreOrFewerBytesThanDeclaredIsRefused) {
  Result<FileEntry> a = HashLocalFile(src_ + "/a.bin");
  ASSERT_TRUE(a.ok());
  const std::string a_hex = consensus::ToHex(a->hash);
  for (const std::int64_t delta : {1000000, 1, -1}) {
    SCOPED_TRACE(delta);
    ServedFiles served([&](const std::string& target, HttpResponse& r) {
      if (!target.ends_with(a_hex)) return;
      if (delta > 0) r.body += std::string(static_cast<std::size_t>(delta), 'x');
      else r.body.pop_back();
    });
    Result<consensus::Hash256> manifest = served.files().AddSet({src_ + "/a.bin"});
    ASSERT_TRUE(manifest.ok());
    polnode::testing::TempDir store_dir("file-store");
    Result<FileStore> store = FileStore::Open(store_dir.path());
    ASSERT_TRUE(store.ok());
    Result<std::string> local = FetchFileSet(Loopback(), *store, FileSetUri(served.base(), *manifest));
    EXPECT_TRUE(StatusIs(local.status(), delta > 0 ? StatusCode::kResourceExhausted : StatusCode::kCorruption))
        << local.status().ToString();
    EXPECT_FALSE(store->Contains(a->hash));
    EXPECT_TRUE(fs::is_empty(store->dir() + "/tmp"));
  }
}

TEST_F(FileHttpTest, AFileDeclaredLargerThanThePolicyAllowsIsNeverAsked) {
  ServedFiles served;
  Result<consensus::Hash256> manifest = served.files().AddSet({src_ + "/a.bin"});
  ASSERT_TRUE(manifest.ok());
  Result<FetchPolicy> small = FetchPolicy::Make("http", "loopback", 1000, 2);
  ASSERT_TRUE(small.ok());
  FileStore store = OpenStore();
  Result<std::string> local = FetchFileSet(*small, store, FileSetUri(served.base(), *manifest));
  EXPECT_TRUE(StatusIs(local.status(), StatusCode::kResourceExhausted)) << local.status().ToString();
  EXPECT_NE(local.status().message().find("fetch.max_bytes"), std::string::npos);
  EXPECT_EQ(served.requests(), 1);  // the manifest only
  EXPECT_TRUE(fs::is_empty(store.dir() + "/tmp"));
}

TEST_F(FileHttpTest, AManifestThatIsNotTheLocationsIsRefused) {
  ServedFiles served([&](const std::string& target, HttpResponse& r) {
    if (r.body.starts_with("polnode.files.v1")) r.body[r.body.size() - 2] = 'X';  // rename a file
    (void)target;
  });
  Result<consensus::Hash256> manifest = served.files().AddSet({src_ + "/b.bin"});
  ASSERT_TRUE(manifest.ok());
  FileStore store = OpenStore();
  Result<std::string> local = FetchFileSet(Loopback(), store, FileSetUri(served.base(), *manifest));
  EXPECT_TRUE(StatusIs(local.status(), StatusCode::kCorruption));
  ExpectNothingStored(store);
}

TEST_F(FileHttpTest, AUrlThePolicyRefusesIsNeverFetched) {
  ServedFiles served;
  Result<consensus::Hash256> manifest = served.files().AddSet({src_ + "/b.bin"});
  ASSERT_TRUE(manifest.ok());
  FileStore store = OpenStore();
  solver::TaskSpec task;
  task.data_location = FileSetUri(served.base(), *manifest);
  const Status refused = ResolveTaskFiles(FetchPolicy(), store, task);  // default: public only
  EXPECT_TRUE(StatusIs(refused, StatusCode::kPermissionDenied)) << refused.ToString();
  EXPECT_NE(refused.message().find("data set"), std::string::npos);
  EXPECT_EQ(served.requests(), 0);
  ExpectNothingStored(store);

  task.data_location = "https://127.0.0.1:1/v1/files/" + consensus::ToHex(*manifest);
  EXPECT_TRUE(StatusIs(ResolveTaskFiles(Loopback(), store, task), StatusCode::kPermissionDenied));
  task.data_location = served.base() + "/v1/files/../../etc/passwd";
  EXPECT_TRUE(StatusIs(ResolveTaskFiles(Loopback(), store, task), StatusCode::kInvalidArgument));
  EXPECT_EQ(served.requests(), 0);
}

TEST_F(FileHttpTest, TheServerAnswersOnlyRegisteredHashesAndNoPath) {
  FileServer server;
  Result<consensus::Hash256> manifest = server.AddSet({src_ + "/b.bin"});
  ASSERT_TRUE(manifest.ok());
  const auto get = [&](const std::string& target, const std::string& method = "GET") {
    HttpRequest request;
    request.method = method;
    request.target = target;
    std::optional<HttpResponse> r = server.Handle(request);
    return r ? r->status : 0;
  };
  EXPECT_EQ(get("/v1/files/" + consensus::ToHex(*manifest)), 200);
  for (const std::string& escape : std::vector<std::string>{"/v1/files/../../etc/passwd", "/v1/files/%2e%2e%2fetc%2fpasswd", "/v1/files/b.bin",
                                   "/v1/files/" + src_ + "/b.bin", "/v1/files/",
                                   "/v1/files/" + std::string(64, 'A')}) {
    EXPECT_EQ(get(escape), 400) << escape;
  }
  EXPECT_EQ(get("/v1/files/" + std::string(64, 'a')), 404);
  EXPECT_EQ(get("/v1/files/" + consensus::ToHex(*manifest), "PUT"), 405);
  EXPECT_EQ(get("/v1/specs/x"), 0);  // not this server's route

  WriteText(src_ + "/.hidden", "x");
  EXPECT_TRUE(StatusIs(server.AddSet({src_ + "/.hidden"}).status(), StatusCode::kInvalidArgument));
  EXPECT_TRUE(StatusIs(server.AddSet({src_ + "/missing"}).status(), StatusCode::kNotFound));
}

TEST(FileManifestTest, DecodesOnlyTheCanonicalForm) {
  FileEntry a{"a.idx", consensus::Sha256(std::string_view("a")), 12};
  FileEntry b{"b.idx", consensus::Sha256(std::string_view("b")), 0};
  Result<std::string> text = EncodeFileManifest({b, a});
  ASSERT_TRUE(text.ok());
  Result<std::vector<FileEntry>> back = DecodeFileManifest(*text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "a.idx");
  EXPECT_EQ((*back)[0].size, 12u);
  EXPECT_EQ((*back)[1].hash, b.hash);

  const std::string h = consensus::ToHex(a.hash);
  for (const std::string& bad : std::vector<std::string>{
           std::string(""),                                                    // no header
           std::string("polnode.files.v1\n"),                                  // no file
           "polnode.files.v1\n" + h + " 12 a.idx",                             // no final newline
           "polnode.files.v1\n" + h + " 12 ../a.idx\n",                        // a path
           "polnode.files.v1\n" + h + " 12 sub/a.idx\n",                       // a path
           "polnode.files.v1\n" + h + " 012 a.idx\n",                          // leading zero
           "polnode.files.v1\n" + h + " -1 a.idx\n",                           // negative
           "polnode.files.v1\n" + h + " 99999999999999999999 a.idx\n",         // too large
           "polnode.files.v1\n" + consensus::ToHex(b.hash).substr(1) + " 1 a\n",  // short hash
           "polnode.files.v1\n" + h + " 1 b\n" + h + " 1 a\n",                 // unsorted
           "polnode.files.v1\n" + h + " 1 a\n" + h + " 1 a\n",                 // repeated
       }) {
    EXPECT_TRUE(StatusIs(DecodeFileManifest(bad).status(), StatusCode::kCorruption)) << bad;
  }
  EXPECT_FALSE(EncodeFileManifest({FileEntry{"..", a.hash, 1}}).ok());
  EXPECT_FALSE(EncodeFileManifest({a, a}).ok());
}

TEST(FileStoreTest, OpeningTheStoreDropsWhatAKilledFetchLeftBehind) {
  polnode::testing::TempDir dir("file-store");
  {
    Result<FileStore> store = FileStore::Open(dir.path());
    ASSERT_TRUE(store.ok());
  }
  WriteText(dir.path() + "/tmp/0123.partial", "half a file");
  Result<FileStore> store = FileStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(fs::is_empty(dir.path() + "/tmp"));
  Result<consensus::Hash256> put = store->Put("hello");
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(*put, consensus::Sha256(std::string_view("hello")));
  EXPECT_EQ(polnode::testing::ReadFileText(store->ObjectPath(*put)), "hello");
}

}  // namespace
}  // namespace polnode::node
