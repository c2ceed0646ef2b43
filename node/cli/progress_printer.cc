#include "progress_printer.h"

#include <iomanip>
#include <sstream>

namespace polnode::node {

std::string FormatDuration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << "h";
  out << std::setfill('0');
  if (s >= 60) out << (s >= 3600 ? std::setw(2) : std::setw(1)) << (s / 60) % 60 << "m";
  out << (s >= 60 ? std::setw(2) : std::setw(1)) << s % 60 << "s";
  return out.str();
}

void ProgressPrinter::OnStep(const solver::StepProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_step_ < 0) first_step_ = p.step - 1;
  const double done_here = static_cast<double>(p.step - first_step_);
  const double rate = p.elapsed_seconds > 0.0 ? done_here / p.elapsed_seconds : 0.0;
  const double eta = rate > 0.0 ? static_cast<double>(p.total - p.step) / rate : 0.0;
  const bool last = p.step == p.total;
  if (terminal_) {
    if (!last && p.elapsed_seconds - last_draw_ < 0.1) return;
    last_draw_ = p.elapsed_seconds;
    std::ostringstream line;
    line << "\rstep " << p.step << "/" << p.total << "  epoch " << p.epoch + 1 << "  loss " << std::fixed
         << std::setprecision(4) << p.loss << "  " << std::setprecision(1) << rate << " steps/s  ETA "
         << FormatDuration(eta) << "   ";
    err_ << line.str() << (last ? "\n" : "") << std::flush;
    drawn_ = !last;
    return;
  }
  if (p.step % every_ != 0 && !last) return;
  std::ostringstream line;
  line << "step " << p.step << "/" << p.total << " epoch " << p.epoch + 1 << " loss " << std::fixed
       << std::setprecision(4) << p.loss << " steps/s " << std::setprecision(1) << rate << " eta "
       << FormatDuration(eta) << "\n";
  err_ << line.str() << std::flush;
}

void ProgressPrinter::Note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  // A redrawn line has no newline yet: end it first, the next step draws it again below.
  err_ << (drawn_ ? "\n" : "") << line << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace polnode::node
