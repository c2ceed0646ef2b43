#include "polnode/cli/cli.h"

#include <cerrno>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <utility>

namespace polnode::node {

FlagSet::FlagSet(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {
  Bool("json", "print the result as one JSON object on stdout");
  Bool("help", "show this help");
}

void FlagSet::Value(std::string name, std::string value_name, std::string help,
                    std::string default_value, bool required) {
  order_.push_back(name);
  specs_[std::move(name)] = Spec{std::move(value_name), std::move(help), std::move(default_value), required};
}

void FlagSet::Bool(std::string name, std::string help) {
  order_.push_back(name);
  specs_[std::move(name)] = Spec{"", std::move(help), "", false};
}

void FlagSet::Positional(std::string names, std::string help) {
  positional_names_ = std::move(names);
  positional_help_ = std::move(help);
}

Status FlagSet::Parse(const std::vector<std::string>& args) {
  values_.clear();
  positional_.clear();
  help_ = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      if (positional_names_.empty()) {
        return Status::InvalidArgument("unexpected argument '" + arg + "' (flags start with --)");
      }
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    auto it = specs_.find(name);
    if (it == specs_.end()) {
      std::string valid;
      for (const auto& n : order_) valid += (valid.empty() ? "--" : ", --") + n;
      return Status::InvalidArgument("unknown flag --" + name + "; valid flags: " + valid);
    }
    if (it->second.value_name.empty()) {
      if (inline_value) return Status::InvalidArgument("flag --" + name + " takes no value");
      values_[name] = "true";
      if (name == "help") help_ = true;
      continue;
    }
    if (inline_value) {
      values_[name] = *inline_value;
    } else if (i + 1 < args.size()) {
      values_[name] = args[++i];
    } else {
      return Status::InvalidArgument("flag --" + name + " needs a value (" + it->second.value_name + ")");
    }
  }
  if (help_) return Status::Ok();
  for (const auto& name : order_) {
    const Spec& spec = specs_.at(name);
    if (spec.required && values_.find(name) == values_.end()) {
      return Status::InvalidArgument("missing required flag --" + name + " " + spec.value_name);
    }
  }
  return Status::Ok();
}

std::string FlagSet::Get(std::string_view name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (auto it = specs_.find(name); it != specs_.end()) return it->second.default_value;
  return "";
}

bool FlagSet::Given(std::string_view name) const { return values_.find(name) != values_.end(); }

bool FlagSet::GetBool(std::string_view name) const { return values_.find(name) != values_.end(); }

Result<std::int64_t> FlagSet::GetInt(std::string_view name, std::int64_t min, std::int64_t max) const {
  std::string text = Get(name);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || v < min || v > max) {
    return Status::InvalidArgument("--" + std::string(name) + " must be an integer in [" +
                                   std::to_string(min) + ", " + std::to_string(max) + "], got '" + text + "'");
  }
  return static_cast<std::int64_t>(v);
}

Result<double> FlagSet::GetDouble(std::string_view name) const {
  std::string text = Get(name);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    return Status::InvalidArgument("--" + std::string(name) + " must be a number, got '" + text + "'");
  }
  return v;
}

std::string FlagSet::Help() const {
  std::ostringstream out;
  out << "usage: " << command_ << " [flags]";
  if (!positional_names_.empty()) out << " " << positional_names_;
  out << "\n\n" << summary_ << "\n\n";
  if (!positional_names_.empty()) out << "  " << positional_names_ << "\n      " << positional_help_ << "\n";
  for (const auto& name : order_) {
    const Spec& spec = specs_.at(name);
    std::string head = "--" + name + (spec.value_name.empty() ? "" : " " + spec.value_name);
    out << "  " << head << "\n      " << spec.help;
    if (spec.required) out << " (required)";
    if (!spec.default_value.empty()) out << " (default: " << spec.default_value << ")";
    out << "\n";
  }
  return out.str();
}

int ReportError(Io& io, std::string_view command, const Status& status) {
  io.err << command << ": error: " << status.message() << "\n";
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

std::optional<int> ParseOrExit(FlagSet& flags, const std::vector<std::string>& args, Io& io) {
  Status s = flags.Parse(args);
  if (flags.help_requested()) {
    io.out << flags.Help();
    return kExitOk;
  }
  if (!s.ok()) {
    io.err << flags.command() << ": error: " << s.message() << "\n(run '" << flags.command()
           << " --help' for usage)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace polnode::node
