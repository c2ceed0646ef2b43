#include "gpu/amd_targets.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace polnode::kernels::amd {
namespace {

// "gfx90a:xnack-" -> "gfx90a".
std::string_view WithoutFeatures(std::string_view target) { return target.substr(0, target.find(':')); }

std::string Joined(std::span<const std::string> names) {
  std::string out;
  for (const std::string& n : names) out.append(out.empty() ? "" : ", ").append(n);
  return out;
}

// Reads the gfx_target_version value of a KFD properties file's text; false when it has none.
bool ReadTargetVersion(const std::string& text, std::uint32_t* version) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    constexpr std::string_view kKey = "gfx_target_version ";
    if (line.compare(0, kKey.size(), kKey) != 0) continue;
    const char* begin = line.data() + kKey.size();
    const char* end = line.data() + line.size();
    const auto [ptr, ec] = std::from_chars(begin, end, *version);
    return ec == std::errc() && ptr == end;
  }
  return false;
}

}  // namespace

std::string TargetName(std::uint32_t gfx_target_version) {
  if (gfx_target_version == 0) return "";
  const std::uint32_t major = gfx_target_version / 10000;
  const std::uint32_t minor = gfx_target_version / 100 % 100;
  const std::uint32_t stepping = gfx_target_version % 100;
  if (minor > 15 || stepping > 15) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  return "gfx" + std::to_string(major) + kHex[minor] + kHex[stepping];
}

Result<std::vector<std::string>> GpuTargets(const std::string& nodes_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(nodes_dir, ec)) {
    return Status::NotFound("no AMD GPU driver topology at " + nodes_dir + " (amdgpu not loaded)");
  }
  std::vector<std::pair<std::uint64_t, fs::path>> nodes;
  for (const fs::directory_entry& entry : fs::directory_iterator(nodes_dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::uint64_t number = 0;
    const auto [ptr, parse] = std::from_chars(name.data(), name.data() + name.size(), number);
    if (parse != std::errc() || ptr != name.data() + name.size()) continue;  // not a node
    nodes.emplace_back(number, entry.path());
  }
  if (ec) return Status::Corruption("cannot list " + nodes_dir + ": " + ec.message());
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> targets;
  for (const auto& [number, path] : nodes) {
    const fs::path properties = path / "properties";
    std::ifstream in(properties);
    std::stringstream text;
    text << in.rdbuf();
    std::uint32_t version = 0;
    if (!in.good() && !in.eof()) return Status::Corruption("cannot read " + properties.string());
    if (!ReadTargetVersion(text.str(), &version)) {
      return Status::Corruption(properties.string() + " has no readable gfx_target_version line");
    }
    if (version == 0) continue;  // a CPU node
    const std::string target = TargetName(version);
    if (target.empty()) {
      return Status::Corruption(properties.string() + ": gfx_target_version " + std::to_string(version) +
                                " names no gfx target");
    }
    targets.push_back(target);
  }
  return targets;
}

Status CheckTargets(std::span<const std::string> present, std::span<const std::string> compiled) {
  if (present.empty()) return Status::Unavailable("no AMD GPU on this machine");
  std::vector<std::string> missing;
  for (const std::string& gpu : present) {
    const bool covered = std::any_of(compiled.begin(), compiled.end(), [&](const std::string& c) {
      return WithoutFeatures(c) == WithoutFeatures(gpu);
    });
    if (!covered) missing.push_back(gpu);
  }
  if (missing.empty()) return Status::Ok();
  return Status::Unavailable("this build's HIP code runs on " + Joined(compiled) + ", not on this machine's " +
                             Joined(missing) + " (ROCm would abort at the first HIP call); rebuild with " +
                             (missing.size() == 1 ? "that target" : "those targets") +
                             " in POLNODE_HIP_ARCHITECTURES");
}

std::vector<std::string> SplitTargets(std::string_view list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t space = std::min(list.find(' ', at), list.size());
    if (space > at) out.emplace_back(list.substr(at, space - at));
    at = space + 1;
  }
  return out;
}

}  // namespace polnode::kernels::amd
