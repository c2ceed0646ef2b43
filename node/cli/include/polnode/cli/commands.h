// The table of `polnode` subcommands and the top-level dispatcher.
#ifndef POLNODE_CLI_COMMANDS_H_
#define POLNODE_CLI_COMMANDS_H_

#include <span>
#include <string>
#include <vector>

#include "polnode/cli/cli.h"

namespace polnode::node {

/// Every subcommand this binary runs, in the order --help lists them.
std::span<const Command> AllCommands();

/// Runs `polnode` with `args` (argv without the program name); returns the exit code.
int RunCli(const std::vector<std::string>& args, Io& io);

// Each command's entry point lives in its own <name>_command.cc.
int RunVersionCommand(const std::vector<std::string>& args, Io& io);
int RunInitCommand(const std::vector<std::string>& args, Io& io);
int RunLedgerCommand(const std::vector<std::string>& args, Io& io);
int RunAbciCommand(const std::vector<std::string>& args, Io& io);
int RunTxCommand(const std::vector<std::string>& args, Io& io);
int RunKeygenCommand(const std::vector<std::string>& args, Io& io);
int RunSignCommand(const std::vector<std::string>& args, Io& io);
int RunVerifyCommand(const std::vector<std::string>& args, Io& io);
int RunTrainCommand(const std::vector<std::string>& args, Io& io);
int RunSampleCommand(const std::vector<std::string>& args, Io& io);
int RunEvaluateCommand(const std::vector<std::string>& args, Io& io);
int RunExportCommand(const std::vector<std::string>& args, Io& io);
int RunImportCommand(const std::vector<std::string>& args, Io& io);
int RunProveCommand(const std::vector<std::string>& args, Io& io);
int RunProfileCommand(const std::vector<std::string>& args, Io& io);
int RunDisputeCommand(const std::vector<std::string>& args, Io& io);
int RunSubmitterCommand(const std::vector<std::string>& args, Io& io);
int RunSolverCommand(const std::vector<std::string>& args, Io& io);
int RunVerifierCommand(const std::vector<std::string>& args, Io& io);
int RunWhistleblowerCommand(const std::vector<std::string>& args, Io& io);
int RunDevnetCommand(const std::vector<std::string>& args, Io& io);
int RunStatusCommand(const std::vector<std::string>& args, Io& io);
int RunAccountCommand(const std::vector<std::string>& args, Io& io);
int RunEconCommand(const std::vector<std::string>& args, Io& io);

}  // namespace polnode::node

#endif  // POLNODE_CLI_COMMANDS_H_
