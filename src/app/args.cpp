// Strict option parsing and --help text.
#include "app/args.h"

#include "base/check.h"

#include "base/float_mode.h"
#include "base/thread_pool.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace rg {

Args::Args(std::string command, std::string usage, std::string summary)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)) {}

void Args::flag(const std::string& name, const std::string& help) { specs_.push_back({name, "", help, "", true}); }

void Args::option(const std::string& name, const std::string& metavar, const std::string& help,
                  const std::string& fallback) {
  specs_.push_back({name, metavar, help, fallback, false});
}

const Args::Spec* Args::find(const std::string& name) const {
  for (const auto& spec : specs_)
    if (spec.name == name) return &spec;
  return nullptr;
}

void Args::assume(const std::string& name, const std::string& value) {
  RG_CHECK(find(name) != nullptr, "assume() of undeclared option " << name);
  values_.emplace(name, value);
}

Status Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return Status::error("retrograd " + command_ + ": unexpected argument '" + arg + "' (options start with --; see --help)");
    }
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Spec* spec = find(name);
    if (spec == nullptr) return Status::error("retrograd " + command_ + ": unknown option --" + name + " (see --help)");
    if (spec->is_flag) {
      if (inline_value) return Status::error("retrograd " + command_ + ": --" + name + " takes no value");
      value = "1";
    } else if (!inline_value) {
      if (i + 1 >= argc) return Status::error("retrograd " + command_ + ": --" + name + " needs a value (" + spec->metavar + ")");
      value = argv[++i];
    }
    if (values_.count(name)) return Status::error("retrograd " + command_ + ": --" + name + " given twice");
    values_[name] = value;
  }
  return Status();
}

std::string Args::text(const std::string& name) const {
  const auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const Spec* spec = find(name);
  RG_CHECK(spec != nullptr, "undeclared option " << name);
  return spec->fallback;
}

Result<int64_t> Args::integer(const std::string& name, int64_t min, int64_t max) const {
  const std::string value = text(name);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0) {
    return Status::error("--" + name + ": '" + value + "' is not an integer");
  }
  if (v < min || v > max) {
    return Status::error("--" + name + ": " + value + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int64_t>(v);
}

Result<double> Args::number(const std::string& name, double min, double max) const {
  const std::string value = text(name);
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(v)) {
    return Status::error("--" + name + ": '" + value + "' is not a number");
  }
  if (v < min || v > max) {
    std::ostringstream os;
    os << "--" << name << ": " << value << " is outside [" << min << ", " << max << "]";
    return Status::error(os.str());
  }
  return v;
}

std::string Args::help() const {
  std::ostringstream os;
  os << "usage: retrograd " << command_ << " " << usage_ << "\n\n" << summary_ << "\n\noptions:\n";
  for (const auto& spec : specs_) {
    std::string left = "  --" + spec.name + (spec.is_flag ? "" : " " + spec.metavar);
    if (left.size() < 26) left.resize(26, ' ');
    else left += "\n" + std::string(26, ' ');
    os << left << spec.help;
    if (!spec.fallback.empty()) os << " (default: " << spec.fallback << ")";
    os << "\n";
  }
  os << "  --help                  this text\n";
  return os.str();
}

void add_common_options(Args& args) {
  args.option("threads", "N", "worker threads", "all cores");
  args.option("seed", "S", "random seed: same seed and threads, same result", "1");
}

void add_denormals_option(Args& args) {
  args.option("denormals", "flush|keep",
              "floats below 1.18e-38 (subnormals): flush makes them 0, keep computes them, slowly on Intel CPUs "
              "(docs/kernels.md)", "flush");
}

}  // namespace rg

namespace rg {

Result<int> threads_option(const Args& args) {
  if (!args.given("threads")) return hardware_threads();
  RG_ASSIGN(const int64_t threads, args.integer("threads", 1, 1024));
  return static_cast<int>(threads);
}

Result<uint64_t> seed_option(const Args& args) {
  RG_ASSIGN(const int64_t seed, args.integer("seed", 0, INT64_MAX));
  return static_cast<uint64_t>(seed);
}

Status apply_denormals_option(const Args& args) {
  auto mode = denormals_from_name(args.text("denormals"));
  if (!mode.ok()) return mode.status().with_context("--denormals: ");
  set_denormals(mode.value());
  return Status();
}

}  // namespace rg
