// The fuzz target registry of polnode_fuzz: one libFuzzer binary, many named targets, the target
// picked at run time by the FUZZ environment variable (as in Bitcoin Core; POLNODE_FUZZ_TARGET
// is read when FUZZ is unset). Not a command-line argument: libFuzzer owns argv.
//
//   FUZZ=tx_envelope build/fuzz/fuzz/polnode_fuzz fuzz/corpus/tx_envelope
//   polnode_fuzz --list                  prints every target name, one per line
//   polnode_fuzz --write-seeds=DIR       writes every target's seed inputs to DIR/<target>/
//
// Adding a target: create fuzz/targets/<name>.cc defining a run function and a seeds function,
// end it with POLNODE_REGISTER_FUZZ_TARGET(<name>, Run, Seeds), generate its corpus with --write-seeds and
// commit fuzz/corpus/<name>/. The CMake glob compiles target files straight into the executable,
// so their static registration objects are always linked in (a static library would let the
// linker drop them). If the target needs another layer's library, add it to fuzz/CMakeLists.txt.
#ifndef POLNODE_FUZZ_FUZZ_H_
#define POLNODE_FUZZ_FUZZ_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polnode::fuzz {

using FuzzInput = std::span<const std::uint8_t>;

/// Runs one input. Returning normally means "fine"; a broken property must call FuzzFail (or hit a
/// sanitizer), which aborts so libFuzzer records the input as a crash.
using RunFn = void (*)(FuzzInput input);

/// One committed seed input: a file name (letters, digits, '-', '_', '.') and its bytes.
struct Seed {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

/// The target's seed corpus: a few valid inputs and a few malformed ones. Must be deterministic
/// (same bytes every run), so regenerating the committed corpus gives no spurious changes.
using SeedsFn = std::vector<Seed> (*)();

/// Registers a target; used through POLNODE_REGISTER_FUZZ_TARGET at namespace scope. A duplicate name
/// aborts at start-up, since two files claiming one name is a build mistake.
struct Registration {
  Registration(std::string_view name, RunFn run, SeedsFn seeds);
};

/// Reports a violated property of the code under test and aborts (a libFuzzer crash).
[[noreturn]] void FuzzFail(const char* file, int line, const char* what);

}  // namespace polnode::fuzz

/// Checks a property that must hold for every input; a failure is a crash with the reason.
#define POLNODE_FUZZ_CHECK(cond, what)                               \
  do {                                                               \
    if (!(cond)) ::polnode::fuzz::FuzzFail(__FILE__, __LINE__, what); \
  } while (false)

/// Defines the registration of target `name` (an identifier; it is also the FUZZ value).
#define POLNODE_REGISTER_FUZZ_TARGET(name, run, seeds) \
  static const ::polnode::fuzz::Registration polnode_fuzz_registration_##name(#name, run, seeds)

#endif  // POLNODE_FUZZ_FUZZ_H_
