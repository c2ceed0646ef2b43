// Runs a real child process for end-to-end tests: argv in, exit code and captured output out.
#ifndef POLNODE_TESTING_SUBPROCESS_H_
#define POLNODE_TESTING_SUBPROCESS_H_

#include <string>
#include <vector>

namespace polnode::testing {

struct ProcessResult {
  int exit_code = -1;  // the child's exit status, or 128 + signal number if it was killed
  std::string out;     // everything it wrote to stdout
  std::string err;     // everything it wrote to stderr
};

/// Runs argv[0] (a path) with the given arguments in `cwd` (empty: inherit), stdin from
/// /dev/null, and waits for it. Aborts the test binary if the process cannot be started.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& cwd = "");

/// Path of the polnode binary built alongside the tests.
std::string PolnodeBinary();

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_SUBPROCESS_H_
