// Target proof_http: raw bytes as one HTTP request to a solver's proof routes (HandleRawRequest ->
// ProofServer::Handle) serving a real proof of the tiny task, made by solver::Prove into a
// temporary directory at start-up; no sockets.
// Properties: never crashes or throws; every answer has a valid status and never a 5xx (the
// proof on disk is intact, so any 5xx would blame bad input on storage); a 405 names what is
// allowed; a 200 is either GET {root}/manifest with exactly manifest.pb's bytes, or
// GET {root}/blobs/{hash} with exactly the stored blob whose SHA-256 is {hash}: no spelling of a
// path ("..", "%2e", absolute paths, overlong hex) reaches any other file.
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixtures.h"
#include "fuzz.h"
#include "http_properties.h"
#include "http_server.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/prover.h"
#include "proof_http.h"

namespace polnode::fuzz {
namespace {

constexpr std::string_view kPrefix = "/v1/proofs/";

struct Fixture {
  node::ProofServer server;
  std::string root_hex;
  std::vector<std::uint8_t> manifest;                        // manifest.pb as written
  std::map<consensus::Hash256, std::vector<std::uint8_t>> blobs;  // every file in blobs/
  node::HttpLimits limits;
};

Fixture& Shared() {
  static Fixture* fixture = [] {
    auto* f = new Fixture();
    const std::string dir = FixtureDir("proof") + "/proof";
    const solver::ImageDataset data = TinyDataset();
    std::array<std::uint8_t, 32> key_bytes{};
    key_bytes.fill(0x51);
    const consensus::SecretKey key = *consensus::SecretKey::FromBytes(key_bytes);
    std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
    solver::ProveOptions options;
    options.out_dir = dir;
    options.key = &key;
    if (!solver::Prove(TinyTask(data), data, *backend, options).ok()) std::abort();
    Result<consensus::Hash256> root = f->server.Add(dir);
    if (!root.ok()) std::abort();
    f->root_hex = consensus::ToHex(*root);
    Result<std::vector<std::uint8_t>> manifest =
        ReadWholeFile(dir + "/" + std::string(solver::kManifestFile), solver::kMaxManifestBytes);
    if (!manifest.ok()) std::abort();
    f->manifest = std::move(manifest).value();
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/" + std::string(solver::kBlobDir))) {
      Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(entry.path().string(), solver::kMaxBlobBytes);
      if (!bytes.ok()) std::abort();
      f->blobs[consensus::Sha256(*bytes)] = std::move(bytes).value();
    }
    if (f->blobs.empty()) std::abort();
    f->limits.max_body_bytes = 1 << 16;  // as the role daemons serve
    return f;
  }();
  return *fixture;
}

// Checks a 200 answer against the one file its target may name.
void CheckServedFile(const Fixture& f, std::string_view target, std::string_view body) {
  const std::string proof = std::string(kPrefix) + f.root_hex;
  const std::vector<std::uint8_t> bytes(body.begin(), body.end());
  if (target == proof + "/manifest") {
    POLNODE_FUZZ_CHECK(bytes == f.manifest, "manifest body differs from manifest.pb");
    return;
  }
  const std::string blobs = proof + "/blobs/";
  POLNODE_FUZZ_CHECK(target.starts_with(blobs), "200 for a target naming none of the proof's files");
  consensus::Hash256 hash{};
  POLNODE_FUZZ_CHECK(consensus::HexToFixed(target.substr(blobs.size()), hash).ok(),
                     "200 for a blob name that is not 64 hex characters");
  POLNODE_FUZZ_CHECK(consensus::Sha256(bytes) == hash, "blob body does not hash to the requested name");
  const auto it = f.blobs.find(hash);
  POLNODE_FUZZ_CHECK(it != f.blobs.end() && it->second == bytes, "blob body is not a stored blob");
}

void Run(FuzzInput input) {
  Fixture& f = Shared();
  const std::string_view raw(reinterpret_cast<const char*>(input.data()), input.size());
  std::string target;
  const node::HttpResponse r =
      AnswerAsRole(raw, f.limits, [&](const node::HttpRequest& request) { return f.server.Handle(request); }, target);
  CheckAnswer(r);
  if (r.status == 200) CheckServedFile(f, target, r.body);
}

std::vector<Seed> Seeds() {
  using std::string_view_literals::operator""sv;
  const Fixture& f = Shared();
  const std::string proof = std::string(kPrefix) + f.root_hex;
  const std::string blob = consensus::ToHex(f.blobs.begin()->first);
  std::string upper_blob = blob;
  for (char& c : upper_blob) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return {
      {"get-manifest", Get(proof + "/manifest")},
      {"head-manifest", Get(proof + "/manifest", "HEAD")},
      {"get-blob", Get(proof + "/blobs/" + blob)},
      {"get-blob-upper-hex", Get(proof + "/blobs/" + upper_blob)},
      {"get-missing-blob", Get(proof + "/blobs/" + std::string(64, '0'))},
      {"get-unknown-root", Get(std::string(kPrefix) + std::string(64, 'a') + "/manifest")},
      {"post-manifest", Bytes("POST " + proof + "/manifest HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")},
      {"traversal-dotdot", Get(proof + "/blobs/../manifest")},
      {"traversal-encoded", Get(proof + "/blobs/%2e%2e%2f%2e%2e%2ftask.pb")},
      {"traversal-root", Get(std::string(kPrefix) + "../../etc/passwd")},
      {"absolute-blob", Get(proof + "/blobs//etc/passwd")},
      {"overlong-hex", Get(proof + "/blobs/" + blob + "00")},
      {"manifest-query", Get(proof + "/manifest?x=1")},
      {"garbage", Bytes("GET /v1/proofs/\x00\xff HTTP/1.1\r\n\r\n"sv)},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(proof_http, Run, Seeds);

}  // namespace polnode::fuzz
