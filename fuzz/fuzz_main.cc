// libFuzzer entry points of polnode_fuzz: target selection, --list and --write-seeds.
// See fuzz.h for how targets register.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <system_error>

#include "fuzz.h"

namespace polnode::fuzz {
namespace {

struct Target {
  RunFn run;
  SeedsFn seeds;
};

// A function-local static, so registrations from other files' static initializers find the map
// constructed whatever the initialization order between files.
std::map<std::string, Target, std::less<>>& Registry() {
  static std::map<std::string, Target, std::less<>> registry;
  return registry;
}

RunFn g_selected = nullptr;

void PrintTargets(std::FILE* out) {
  for (const auto& entry : Registry()) std::fprintf(out, "%s\n", entry.first.c_str());
}

bool ValidSeedName(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Writes DIR/<target>/<seed> for every target; returns the process exit code.
int WriteSeeds(const std::filesystem::path& dir) {
  for (const auto& [name, target] : Registry()) {
    const std::filesystem::path target_dir = dir / name;
    std::error_code ec;
    std::filesystem::create_directories(target_dir, ec);
    if (ec) {
      std::fprintf(stderr, "polnode_fuzz: cannot create %s: %s\n", target_dir.c_str(), ec.message().c_str());
      return 1;
    }
    for (const Seed& seed : target.seeds()) {
      if (!ValidSeedName(seed.name)) {
        std::fprintf(stderr, "polnode_fuzz: target %s has a seed with a bad file name '%s'\n", name.c_str(),
                     seed.name.c_str());
        return 1;
      }
      const std::filesystem::path file = target_dir / seed.name;
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(seed.bytes.data()), static_cast<std::streamsize>(seed.bytes.size()));
      if (!out.flush()) {
        std::fprintf(stderr, "polnode_fuzz: cannot write %s\n", file.c_str());
        return 1;
      }
    }
    std::printf("%s: %zu seeds in %s\n", name.c_str(), target.seeds().size(), target_dir.c_str());
  }
  return 0;
}

const char* SelectedName() {
  if (const char* name = std::getenv("FUZZ"); name != nullptr && *name != '\0') return name;
  if (const char* name = std::getenv("POLNODE_FUZZ_TARGET"); name != nullptr && *name != '\0') return name;
  return nullptr;
}

}  // namespace

Registration::Registration(std::string_view name, RunFn run, SeedsFn seeds) {
  if (!Registry().emplace(std::string(name), Target{run, seeds}).second) {
    std::fprintf(stderr, "polnode_fuzz: two fuzz targets are named %.*s\n", static_cast<int>(name.size()),
                 name.data());
    std::abort();
  }
}

void FuzzFail(const char* file, int line, const char* what) {
  std::fprintf(stderr, "polnode_fuzz: property violated at %s:%d: %s\n", file, line, what);
  std::abort();
}

}  // namespace polnode::fuzz

// libFuzzer calls this before parsing its own flags, so our options never reach it.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace polnode::fuzz;
  constexpr std::string_view kWriteSeeds = "--write-seeds=";
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = (*argv)[i];
    if (arg == "--list") {
      PrintTargets(stdout);
      std::exit(0);
    }
    if (arg.starts_with(kWriteSeeds)) std::exit(WriteSeeds(std::string(arg.substr(kWriteSeeds.size()))));
  }
  const char* name = SelectedName();
  if (name == nullptr) {
    std::fprintf(stderr,
                 "polnode_fuzz: choose a target with the FUZZ environment variable, e.g.\n"
                 "  FUZZ=tx_envelope %s fuzz/corpus/tx_envelope\nTargets:\n",
                 (*argv)[0]);
    PrintTargets(stderr);
    std::exit(1);
  }
  auto it = Registry().find(std::string_view(name));
  if (it == Registry().end()) {
    std::fprintf(stderr, "polnode_fuzz: no fuzz target named '%s'. Targets:\n", name);
    PrintTargets(stderr);
    std::exit(1);
  }
  g_selected = it->second.run;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  polnode::fuzz::g_selected(polnode::fuzz::FuzzInput(data, size));
  return 0;
}
