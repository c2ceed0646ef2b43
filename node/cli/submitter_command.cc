// `polnode submitter`: the model owner's daemon (submitter_role.h). Exits 0 once every task is
// closed and every model due is delivered, 1 when a submission failed or a model could not be
// had, and 0 without a final verdict when stopped by SIGINT/SIGTERM (a restart picks up).
#include <ostream>

#include "flag_groups.h"
#include "polnode/base/cpus.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/roles/submitter_role.h"
#include "polnode/solver/task_binding.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode submitter";

Result<std::vector<std::string>> TaskFiles(const std::string& list) {
  std::vector<std::string> files;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    std::string file = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (file.empty()) return Status::InvalidArgument("--task has an empty file name in '" + list + "'");
    files.push_back(std::move(file));
    if (comma == std::string::npos) return files;
    start = comma + 1;
  }
}

Status Run(const FlagSet& flags, Io& io) {
  StopSignals stop;  // before the evaluation backend starts its threads
  POLNODE_ASSIGN_OR_RETURN(RoleOptions options, ReadRoleFlags(flags));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t payment, flags.GetInt("payment", 0, INT64_MAX));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskTerms terms, ReadTaskTermsFlags(flags, static_cast<std::uint64_t>(payment)));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t model_wait, flags.GetInt("model-wait-s", 0, 86400));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> files, TaskFiles(flags.Get("task")));
  POLNODE_ASSIGN_OR_RETURN(std::vector<SubmitterTask> tasks, PrepareSubmitterTasks(files, terms));
  for (SubmitterTask& task : tasks) task.serve_files = flags.GetBool("serve-files");
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<kernels::Backend> backend, kernels::MakeBackend("cpu", AvailableCpus()));

  SubmitterRole role(std::move(tasks), std::move(backend), std::chrono::seconds(model_wait));
  POLNODE_RETURN_IF_ERROR(RunRoleDaemon(
      "submitter", role, options, [&role](RoleContext& ctx) { return role.Start(ctx); }, flags.json(), stop, io.out));
  if (!role.Done()) return Status::Ok();  // stopped by a signal
  if (flags.json()) {
    io.out << SubmitterReportJson(role.report()) << std::endl;
  } else {
    io.out << SubmitterReportText(role.report()) << std::flush;
  }
  return role.Outcome();
}

}  // namespace

int RunSubmitterCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Post training tasks with escrowed payment and serve their documents, follow them to settlement, "
                "take delivery of each trained model (checked against the ledger's result root, evaluated on the "
                "test split, written to DIR/models) and keep DIR/report.json current. Exits when every task is "
                "done; a restart with the same home follows the tasks it posted instead of posting them again, and "
                "without --listen serves where that home served before (DIR/listen), since the ledger's spec URIs "
                "name that address.");
  DeclareRoleFlags(flags);
  flags.Value("task", "FILE[,FILE...]", "task documents (TOML, or protobuf when the name ends in .pb)", "", true);
  flags.Value("payment", "AMOUNT", "payment escrowed per task", "", true);
  DeclareTaskTermsFlags(flags);
  flags.Bool("serve-files",
             "serve each task's data set files and onnx: model file over HTTP (GET /v1/files/<sha256>) and name them "
             "by URL in the posted documents, so solvers and verifiers fetch them from here (checked by hash)");
  flags.Value("model-wait-s", "SECONDS", "how long to keep trying an unreachable solver for a model", "300");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Run(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
