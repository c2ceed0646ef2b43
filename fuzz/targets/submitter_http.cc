// Target submitter_http: raw bytes as one HTTP request to the submitter daemon's document route
// (HandleRawRequest -> SubmitterRole::Handle, GET /v1/specs/{TaskId hex}) over real task files:
// the IDX data set and task documents (TOML and protobuf forms) are written to a temporary
// directory at start-up and read with PrepareSubmitterTasks, as `polnode submitter` does; no sockets.
// Properties: never crashes or throws; every answer has a valid status and never a 5xx; a 405
// names what is allowed; a 200 body decodes to the task document whose TaskId is the requested
// id, byte for byte the encoding the submitter posted.
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fixtures.h"
#include "fuzz.h"
#include "http_properties.h"
#include "http_server.h"
#include "polnode/consensus/hex.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/task_spec.h"
#include "submitter_role.h"

namespace polnode::fuzz {
namespace {

constexpr std::string_view kSpecPrefix = "/v1/specs/";

struct Fixture {
  std::unique_ptr<node::SubmitterRole> role;
  std::map<std::string, std::string> encoded;  // TaskId hex -> the document's protobuf bytes
  node::HttpLimits limits;
};

// An IDX file (the MNIST container LoadImageDataset reads): magic, dimensions, bytes.
void WriteIdx(const std::string& path, const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& data) {
  std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  bytes.append(data.begin(), data.end());
  std::ofstream(path, std::ios::binary) << bytes;
}

// The tiny task's TOML form over the data in `data_dir`, with `seed` (distinct seeds: distinct ids).
std::string TaskToml(const std::string& data_dir, const solver::ImageDataset& data, std::uint64_t seed) {
  return "model = \"mlp:16-8-3\"\ndata = \"" + data_dir + "\"\ndataset_hash = \"" +
         consensus::ToHex(solver::DatasetContentHash(data)) + "\"\nlr = 0.1\nbatch = 8\nsteps = 40\n" +
         "checkpoint_interval = 5\nseed = " + std::to_string(seed) + "\nsegments = 2\n";
}

Fixture& Shared() {
  static Fixture* fixture = [] {
    auto* f = new Fixture();
    const std::string dir = FixtureDir("submitter");
    const solver::ImageDataset data = TinyDataset();
    const std::string data_dir = dir + "/data";
    std::filesystem::create_directory(data_dir);
    const auto split = [&](const std::string& name, const solver::ImageSplit& s) {
      const auto n = static_cast<std::uint32_t>(s.count);
      WriteIdx(data_dir + "/" + name + "-images-idx3-ubyte", {n, 4, 4}, s.pixels);
      WriteIdx(data_dir + "/" + name + "-labels-idx1-ubyte", {n}, s.labels);
    };
    split("train", data.train);
    split("t10k", data.test);
    const std::vector<std::string> files = {dir + "/a.toml", dir + "/b.toml", dir + "/c.pb"};
    std::ofstream(files[0]) << TaskToml(data_dir, data, 42);
    std::ofstream(files[1]) << TaskToml(data_dir, data, 43);
    solver::TaskSpec third = TinyTask(data);
    third.data_location = data_dir;
    third.seed = 44;
    std::ofstream(files[2], std::ios::binary) << solver::EncodeTaskProto(third);
    Result<std::vector<node::SubmitterTask>> tasks = node::PrepareSubmitterTasks(files, node::TaskTerms{1000, 20, 40});
    if (!tasks.ok() || tasks->size() != files.size()) std::abort();
    for (const node::SubmitterTask& task : *tasks) f->encoded[task.document_hex] = task.encoded;
    f->role = std::make_unique<node::SubmitterRole>(std::move(tasks).value(), kernels::MakeReferenceBackend(),
                                                    std::chrono::seconds(0));
    f->limits.max_body_bytes = 1 << 16;  // as the role daemons serve
    return f;
  }();
  return *fixture;
}

// Checks a 200 answer to `target`: the document named by the id in the path, and nothing else.
void CheckServedDocument(const Fixture& f, std::string_view target, std::string_view body) {
  const std::string_view path = target.substr(0, target.find('?'));
  POLNODE_FUZZ_CHECK(path.starts_with(kSpecPrefix), "200 for a target outside /v1/specs/");
  const std::string id(path.substr(kSpecPrefix.size()));
  Result<solver::TaskSpec> document =
      solver::DecodeTaskProto(std::span(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
  POLNODE_FUZZ_CHECK(document.ok(), "200 body is not a task document");
  POLNODE_FUZZ_CHECK(consensus::ToHex(solver::TaskId(*document)) == id,
                     "served document's TaskId is not the requested id");
  const auto it = f.encoded.find(id);
  POLNODE_FUZZ_CHECK(it != f.encoded.end() && it->second == body,
                     "served bytes are not the posted document's encoding");
}

void Run(FuzzInput input) {
  Fixture& f = Shared();
  const std::string_view raw(reinterpret_cast<const char*>(input.data()), input.size());
  std::string target;
  const node::HttpResponse r =
      AnswerAsRole(raw, f.limits, [&](const node::HttpRequest& request) { return f.role->Handle(request); }, target);
  CheckAnswer(r);
  if (r.status == 200) CheckServedDocument(f, target, r.body);
}

std::vector<Seed> Seeds() {
  using std::string_view_literals::operator""sv;
  const Fixture& f = Shared();
  const std::string id = f.encoded.begin()->first;
  std::string upper = id;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return {
      {"get-spec", Get(std::string(kSpecPrefix) + id)},
      {"get-spec-query", Get(std::string(kSpecPrefix) + std::next(f.encoded.begin())->first + "?v=1")},
      {"head-spec", Get(std::string(kSpecPrefix) + id, "HEAD")},
      {"get-spec-upper-hex", Get(std::string(kSpecPrefix) + upper)},
      {"get-unknown-spec", Get(std::string(kSpecPrefix) + std::string(64, '0'))},
      {"post-spec",
       Bytes("POST " + std::string(kSpecPrefix) + id + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")},
      {"traversal", Get(std::string(kSpecPrefix) + "../" + id)},
      {"trailing-slash", Get(std::string(kSpecPrefix) + id + "/")},
      {"overlong-id", Get(std::string(kSpecPrefix) + id + "0")},
      {"other-path", Get("/metrics")},
      {"garbage", Bytes("GET /v1/specs/\x00\xff HTTP/1.1\r\n\r\n"sv)},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(submitter_http, Run, Seeds);

}  // namespace polnode::fuzz
