// polnode: one binary for every role of the proof-of-learning protocol. This file stays thin:
// all behaviour lives in the node library and the layers below it.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "polnode/cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  polnode::node::Io io{std::cout, std::cerr};
  try {
    return polnode::node::RunCli(args, io);
  } catch (const std::exception& e) {
    // The CLI edge is the only place exceptions are caught (std::bad_alloc, library throws).
    std::cerr << "polnode: error: " << e.what() << "\n";
    return polnode::node::kExitFailure;
  }
}
