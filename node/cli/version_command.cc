#include <ostream>

#include "polnode/cli/commands.h"
#include "polnode/kernels/backend.h"
#include "polnode/rpc/json.h"

namespace polnode::node {

int RunVersionCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags("polnode version", "Print the version, the kernel backends compiled in, and the "
                                   "floating-point rules the build enforces.");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;

  std::vector<std::string> backends = kernels::CompiledBackends();
  // The determinism flags are fixed by the build (DESIGN.md section 3); printing them lets an
  // auditor confirm that two nodes were built under the same floating-point rules.
  constexpr const char* kFpRules = "-ffp-contract=off, no fast-math, nvcc --fmad=false";
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("version", POLNODE_VERSION).Key("backends").BeginArray();
    for (const auto& b : backends) w.String(b);
    w.EndArray().Field("fp_rules", kFpRules).EndObject();
    io.out << w.str() << "\n";
    return kExitOk;
  }
  io.out << "polnode " << POLNODE_VERSION << "\nbackends:";
  for (const auto& b : backends) io.out << " " << b;
  io.out << "\nfloating point: " << kFpRules << "\n";
  return kExitOk;
}

}  // namespace polnode::node
