// `polnode profile`: trains the task's first segment under every backend and thread count this
// machine offers and prints the per-metric distance thresholds verifiers judge tolerant-mode replays
// by (all 0 in exact mode). It needs the task alone: thresholds profiled from a solver's proof
// would let a cheat in the sampled segment widen them.
#include <ostream>

#include "flag_groups.h"
#include "polnode/cli/commands.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/pol_files.h"
#include "polnode/verifier/profile.h"

namespace polnode::node {
namespace {

constexpr const char* kCommand = "polnode profile";

void WriteThresholds(JsonWriter& w, const verifier::Thresholds& t) {
  w.BeginObject()
      .Field("l1", t.l1)
      .Field("l2", t.l2)
      .Field("linf", t.linf)
      .Field("cosine", t.cosine)
      .Field("loss", t.loss)
      .EndObject();
}

int Profile(const FlagSet& flags, Io& io) {
  Result<solver::TaskSpec> task = solver::ReadTaskFile(flags.Get("task"));
  if (!task.ok()) return ReportError(io, kCommand, task.status());
  Result<solver::ImageDataset> data = solver::LoadTaskData(*task);
  if (!data.ok()) return ReportError(io, kCommand, data.status());
  const std::vector<verifier::ProfileVariation> variations = verifier::AllVariations();
  Result<verifier::Profile> profile = verifier::ProfileTask(*task, *data, variations);
  if (!profile.ok()) return ReportError(io, kCommand, profile.status());
  const bool exact = task->mode == solver::ReproMode::kExact;
  const verifier::Thresholds& t = profile->thresholds;
  const bool exact_ok = !exact || (t.l1 == 0 && t.l2 == 0 && t.linf == 0 && t.cosine == 0);
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("mode", std::string(solver::ReproModeName(task->mode))).Key("thresholds");
    WriteThresholds(w, t);
    w.Field("exact_mode_holds", exact_ok).Key("observations").BeginArray();
    for (const verifier::ProfileObservation& o : profile->observations) {
      w.BeginObject()
          .Field("backend", o.backend_impl)
          .Field("threads", o.variation.threads)
          .Field("segment", o.segment)
          .Field("hash_equal", o.hash_equal)
          .Field("l1", o.distances.l1)
          .Field("linf", o.distances.linf)
          .EndObject();
    }
    w.EndArray().Key("skipped").BeginArray();
    for (const std::string& s : profile->skipped) w.String(s);
    w.EndArray().EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "profiled " << profile->observations.size() << " trainings of segment 0 ("
           << (variations.size() - profile->skipped.size()) << " variations)\n"
           << "thresholds  l1 " << t.l1 << "  l2 " << t.l2 << "  linf " << t.linf << "  cosine " << t.cosine
           << "  loss " << t.loss << "\n";
    for (const std::string& s : profile->skipped) io.out << "skipped " << s << "\n";
  }
  if (!exact_ok) {
    io.err << kCommand << ": exact-mode task replays differently across variations; the build is not deterministic\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int RunProfileCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kCommand,
                "Train the task's first segment under every backend and thread count present and print the "
                "per-metric thresholds verifiers judge tolerant replays by (L1, L2, L-inf, cosine, loss); "
                "exact mode must give 0. Exit 1 when an exact-mode task does not train bit for bit.");
  DeclareTaskFileFlag(flags, true);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  return Profile(flags, io);
}

}  // namespace polnode::node
