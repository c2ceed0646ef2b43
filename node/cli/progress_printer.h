// Training progress on stderr for `polnode train` and `polnode prove`: the step, the loss, the
// speed and the time left, so a long run shows it is alive and when it will end.
#ifndef POLNODE_CLI_PROGRESS_PRINTER_H_
#define POLNODE_CLI_PROGRESS_PRINTER_H_

#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

#include "polnode/solver/trainer.h"

namespace polnode::node {

/// `seconds` as "1h02m03s", "2m03s" or "3s".
std::string FormatDuration(double seconds);

/// On a terminal one line redrawn in place (at most ten times a second, so drawing never slows
/// training), otherwise a plain line every `every` steps and at the last one:
///   step S/T epoch E loss L steps/s R eta D
/// The speed counts only the steps of this run (a resumed proof's earlier steps are not in its
/// elapsed time). Note() prints a line of its own (a saved checkpoint) from any thread without
/// tearing a redrawn progress line.
class ProgressPrinter : public solver::ProgressSink {
 public:
  ProgressPrinter(std::ostream& err, bool terminal, std::int64_t every)
      : err_(err), terminal_(terminal), every_(every) {}

  void OnStep(const solver::StepProgress& p) override;
  void Note(const std::string& line);

 private:
  std::mutex mu_;
  std::ostream& err_;
  bool terminal_;
  std::int64_t every_;
  std::int64_t first_step_ = -1;  // steps already done when this run started; -1 before the first
  double last_draw_ = -1.0;
  bool drawn_ = false;  // a redrawn line is on the terminal, not ended yet
};

}  // namespace polnode::node

#endif  // POLNODE_CLI_PROGRESS_PRINTER_H_
