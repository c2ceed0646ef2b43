// Fetch throughput of data and model files (issue 13 item 3): a submitter's FileServer behind a
// real HttpServer on loopback, fetched by FetchFileSet into a fresh FileStore (streamed, hashed as
// it arrives, written to a temporary file, fsynced, renamed), against the peer measured in the
// same run: hashing the same file from the local disk (HashLocalFile), the least any fetch must
// do. Best and median of R repeats, alternating, each on a fresh store.
//
// Usage: file_fetch_bench [--mib N] [--repeats R]   (defaults: 100 MiB, 5 repeats)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/rpc/file_http.h"
#include "polnode/rpc/http_server.h"

namespace {

namespace node = polnode::node;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Fail(const polnode::Status& s) {
  std::fprintf(stderr, "file_fetch_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  long mib = 100;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib") mib = std::strtol(argv[i + 1], nullptr, 10);
    else if (flag == "--repeats") repeats = static_cast<int>(std::strtol(argv[i + 1], nullptr, 10));
  }
  if (mib < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: file_fetch_bench [--mib N] [--repeats R]\n");
    return 2;
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("file_fetch_bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "data.bin").string();
  {
    std::string bytes(static_cast<std::size_t>(mib) << 20, '\0');
    std::uint64_t x = 88172645463325252ull;  // xorshift: incompressible, so no layer can shortcut it
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      bytes[i] = static_cast<char>(x);
    }
    if (polnode::Status s = polnode::WriteFileAtomically(file, bytes); !s.ok()) return Fail(s);
  }
  node::FileServer files;
  polnode::Result<polnode::consensus::Hash256> manifest = files.AddSet({file});
  if (!manifest.ok()) return Fail(manifest.status());
  auto server = node::HttpServer::Start(
      node::HttpServerOptions{},
      [&files](const node::HttpRequest& r) {
        std::optional<node::HttpResponse> a = files.Handle(r);
        return a ? std::move(*a) : node::JsonErrorResponse(404, "no route");
      },
      nullptr);
  if (!server.ok()) return Fail(server.status());
  polnode::Result<node::FetchPolicy> policy =
      node::FetchPolicy::Make("http", "loopback", node::FetchPolicy::kMaxMaxBytes, 0);
  if (!policy.ok()) return Fail(policy.status());
  const std::string uri = node::FileSetUri("http://127.0.0.1:" + std::to_string((*server)->port()), *manifest);

  std::vector<double> fetch_s, hash_s;
  for (int r = 0; r < repeats; ++r) {
    const std::string store_dir = (dir / ("store-" + std::to_string(r))).string();
    polnode::Result<node::FileStore> store = node::FileStore::Open(store_dir);
    if (!store.ok()) return Fail(store.status());
    Clock::time_point start = Clock::now();
    polnode::Result<std::string> local = node::FetchFileSet(*policy, *store, uri);
    fetch_s.push_back(Seconds(start));
    if (!local.ok()) return Fail(local.status());
    std::filesystem::remove_all(store_dir);

    start = Clock::now();
    polnode::Result<node::FileEntry> hashed = node::HashLocalFile(file);
    hash_s.push_back(Seconds(start));
    if (!hashed.ok()) return Fail(hashed.status());
  }
  (*server)->Stop();
  std::filesystem::remove_all(dir);

  const double mb = static_cast<double>(mib) * 1048576.0 / 1e6;
  const double fetch_best = mb / *std::min_element(fetch_s.begin(), fetch_s.end());
  const double hash_best = mb / *std::min_element(hash_s.begin(), hash_s.end());
  std::printf("file: %ld MiB (%.1f MB), %d repeats\n", mib, mb, repeats);
  std::printf("fetch over loopback HTTP (stream, SHA-256, temp file, fsync, rename): best %.1f MB/s, median %.1f MB/s\n",
              fetch_best, mb / Median(fetch_s));
  std::printf("peer: SHA-256 of the same file from local disk:                     best %.1f MB/s, median %.1f MB/s\n",
              hash_best, mb / Median(hash_s));
  std::printf("ratio fetch / local hash (best): %.2f\n", fetch_best / hash_best);
  return 0;
}
