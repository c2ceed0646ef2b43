// The command-line framework every `polnode` subcommand uses: a declared flag set that parses
// `--name value`, `--name=value` and boolean `--name`, generates `--help`, and rejects unknown
// flags with a sentence naming the valid ones. Commands report failure by returning a Status;
// the dispatcher prints it to stderr and picks the exit code.
#ifndef POLNODE_CLI_CLI_H_
#define POLNODE_CLI_CLI_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::node {

/// Declares the flags of one command, parses them, and answers typed lookups.
///
/// Every FlagSet has `--json` (machine-readable output) and `--help` built in.
class FlagSet {
 public:
  /// `command` is the full command path ("polnode tx sign"), `summary` one sentence for --help.
  FlagSet(std::string command, std::string summary);

  /// Declares a flag taking a value. `value_name` is shown in help ("FILE"). A flag with a
  /// non-empty `default_value` is optional; a flag declared `required` must be given.
  void Value(std::string name, std::string value_name, std::string help,
             std::string default_value = "", bool required = false);

  /// Declares a boolean flag (present = true).
  void Bool(std::string name, std::string help);

  /// Declares that the command takes positional arguments, named in help as `names`.
  void Positional(std::string names, std::string help);

  /// Parses `args` (the words after the command name). kInvalidArgument for an unknown flag, a
  /// missing value, a missing required flag or unexpected positional arguments. When --help is
  /// present, returns ok without checking required flags; check help_requested() first.
  [[nodiscard]] Status Parse(const std::vector<std::string>& args);

  bool help_requested() const { return help_; }
  bool json() const { return GetBool("json"); }

  /// The value of a declared value flag: the given one, else its default ("" if none).
  std::string Get(std::string_view name) const;
  /// Whether a value flag was given on the command line (defaults do not count).
  bool Given(std::string_view name) const;
  bool GetBool(std::string_view name) const;
  /// Typed lookups; kInvalidArgument naming the flag when the text is not a number in range.
  Result<std::int64_t> GetInt(std::string_view name, std::int64_t min, std::int64_t max) const;
  Result<double> GetDouble(std::string_view name) const;

  const std::vector<std::string>& positional() const { return positional_; }
  const std::string& command() const { return command_; }

  /// The --help text: usage line, summary, one line per flag with its default.
  std::string Help() const;

 private:
  struct Spec {
    std::string value_name;  // empty for booleans
    std::string help;
    std::string default_value;
    bool required = false;
  };

  std::string command_;
  std::string summary_;
  std::string positional_names_;
  std::string positional_help_;
  std::vector<std::string> order_;  // declaration order, for help
  std::map<std::string, Spec, std::less<>> specs_;
  std::map<std::string, std::string, std::less<>> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

/// Where a command writes. Tests substitute string streams.
struct Io {
  std::ostream& out;
  std::ostream& err;
};

/// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and the answer is "no" or it failed
inline constexpr int kExitUsage = 2;    // bad flags or arguments
inline constexpr int kExitMismatch = 3;  // an audit found the ledger's record differs from a re-execution

/// A subcommand: `run` gets the words after its name.
struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>& args, Io& io);
};

/// Prints `status` as "polnode <command>: error: <message>" on io.err and returns the exit code
/// (kExitUsage for kInvalidArgument, kExitFailure otherwise).
int ReportError(Io& io, std::string_view command, const Status& status);

/// Parses `flags` from `args`; on --help prints help to io.out and returns kExitOk; on a parse
/// error prints it and the usage hint and returns kExitUsage; returns nullopt to continue.
std::optional<int> ParseOrExit(FlagSet& flags, const std::vector<std::string>& args, Io& io);

}  // namespace polnode::node

#endif  // POLNODE_CLI_CLI_H_
