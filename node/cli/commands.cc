#include "polnode/cli/commands.h"

#include <ostream>
#include <string_view>

namespace polnode::node {
namespace {

constexpr Command kCommands[] = {
    {"init", "create a node home: node key, genesis.json and config.toml for a new chain", RunInitCommand},
    {"ledger", "run the embedded ledger (block producer + HTTP API); 'ledger verify-chain' checks it", RunLedgerCommand},
    {"abci", "run polnode as a CometBFT ABCI 2.0 application (CometBFT orders blocks, the contracts execute them)", RunAbciCommand},
    {"tx", "sign a transaction (transfer, stake, submit-task, ...) and send it to a ledger", RunTxCommand},
    {"keygen", "create a key file (mode 0600) and print its BIP-340 x-only public key", RunKeygenCommand},
    {"sign", "sign a transaction file with a key file, writing the signed envelope", RunSignCommand},
    {"verify", "verify a signed transaction envelope (--tx) or a proof of learning (--proof)", RunVerifyCommand},
    {"prove", "train a task with proof of learning (checkpoint blobs + signed manifest), resumable", RunProveCommand},
    {"profile", "replay proof segments on every backend/thread count and print distance thresholds", RunProfileCommand},
    {"submitter", "post training tasks with escrowed payment, follow them to settlement, fetch the model",
     RunSubmitterCommand},
    {"solver", "daemon: stake, claim tasks, train with proof, serve the proof, commit its root, answer disputes",
     RunSolverCommand},
    {"verifier", "daemon: stake, replay the segments assigned to it, post verdicts, answer disputes",
     RunVerifierCommand},
    {"whistleblower", "daemon: stake, re-check verifiers' verdicts, open and play disputes",
     RunWhistleblowerCommand},
    {"devnet", "run the whole protocol on this machine: ledger, submitter, solvers, verifiers, whistleblower",
     RunDevnetCommand},
    {"status", "print a ledger's tasks and disputes in flight", RunStatusCommand},
    {"account", "print an account's balance, stakes (bonded, locked, free) and every task it took part in",
     RunAccountCommand},
    {"dispute", "'dispute replay TASK_ID': re-execute a task's dispute games and check the ledger's rulings",
     RunDisputeCommand},
    {"econ", "simulate every strategy over the real contracts and print its payoff against honest play",
     RunEconCommand},
    {"train", "train a model on Fashion-MNIST (or a GPT on text) deterministically and print its state hash",
     RunTrainCommand},
    {"sample", "generate text from a trained GPT state (seed, temperature, prompt)", RunSampleCommand},
    {"evaluate", "evaluate a delivered model (a training state) on its task's test split; --predict N shows predictions",
     RunEvaluateCommand},
    {"export", "write a delivered model (a training state) as an ONNX file for onnxruntime or PyTorch", RunExportCommand},
    {"import", "check an ONNX model file and print the layers, parameters and task model it maps to", RunImportCommand},
    {"version", "print the version, the compiled kernel backends and the build's determinism flags",
     RunVersionCommand},
};

void PrintUsage(std::ostream& out) {
  out << "usage: polnode <command> [flags]   (every command takes --help and --json)\n\n"
         "polnode takes part in a proof-of-learning protocol: solvers train models with a\n"
         "verifiable proof, verifiers replay segments of it, disputes are settled on a ledger.\n\n"
         "Commands:\n";
  for (const Command& c : AllCommands()) out << "  " << c.name << std::string(14 - std::min<size_t>(13, c.name.size()), ' ') << c.summary << "\n";
}

}  // namespace

std::span<const Command> AllCommands() { return kCommands; }

int RunCli(const std::vector<std::string>& args, Io& io) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintUsage(args.empty() ? io.err : io.out);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string& name = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const Command& c : AllCommands()) {
    if (c.name == name) return c.run(rest, io);
  }
  io.err << "polnode: error: unknown command '" << name << "'; run 'polnode --help' for the list\n";
  return kExitUsage;
}

}  // namespace polnode::node
