// Target pol_task: the task decoders on arbitrary bytes, both the protobuf form (DecodeTaskProto)
// and the TOML form (ParseTaskToml). Properties: never crashes; failures carry only the documented
// codes; an accepted task is valid and its protobuf form decodes back to the same task id.
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/solver/task_spec.h"

namespace polnode::fuzz {
namespace {

void CheckAccepted(const solver::TaskSpec& task) {
  POLNODE_FUZZ_CHECK(solver::ValidateTask(task).ok(), "a decoded task fails validation");
  const std::string wire = solver::EncodeTaskProto(task);
  Result<solver::TaskSpec> again = solver::DecodeTaskProto(
      std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()));
  POLNODE_FUZZ_CHECK(again.ok(), "a decoded task does not re-decode from its own encoding");
  POLNODE_FUZZ_CHECK(solver::TaskId(*again) == solver::TaskId(task), "re-decoding changed the task id");
}

void Run(FuzzInput input) {
  Result<solver::TaskSpec> proto = solver::DecodeTaskProto(input);
  if (proto.ok()) {
    CheckAccepted(*proto);
  } else {
    const StatusCode code = proto.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument ||
                           code == StatusCode::kResourceExhausted,
                       "DecodeTaskProto failed with an undocumented status code");
  }
  Result<solver::TaskSpec> toml =
      solver::ParseTaskToml(std::string_view(reinterpret_cast<const char*>(input.data()), input.size()));
  if (toml.ok()) {
    CheckAccepted(*toml);
  } else {
    const StatusCode code = toml.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kResourceExhausted,
                       "ParseTaskToml failed with an undocumented status code");
  }
}

std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

constexpr std::string_view kToml =
    "model = \"mlp:784-64-10\"\ndataset_hash = "
    "\"38d6d7e03e97342ea8c436c657cc3511156956bebf1551d93a26b82e876e6dc6\"\n"
    "lr = 0.05 # comment\nbatch = 64\nsteps = 300\ncheckpoint_interval = 50\nseed = 7\nsegments = 2\n";

std::vector<Seed> Seeds() {
  Result<solver::TaskSpec> task = solver::ParseTaskToml(kToml);
  const std::string wire = task.ok() ? solver::EncodeTaskProto(*task) : std::string();
  std::string truncated = wire.substr(0, wire.size() / 2);
  return {
      {"valid-toml", Bytes(kToml)},
      {"valid-proto", Bytes(wire)},
      {"truncated-proto", Bytes(truncated)},
      {"toml-unknown-key", Bytes("model = \"mlp:4-2\"\ncolour = 3\n")},
      {"toml-unterminated-string", Bytes("model = \"mlp:4-2\n")},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(pol_task, Run, Seeds);

}  // namespace polnode::fuzz
