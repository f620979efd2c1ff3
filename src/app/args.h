// Command-line options of one subcommand: declared with their help, parsed strictly
// (an unknown option or a missing value is an error that names it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

class Args {
 public:
  Args(std::string command, std::string usage, std::string summary);

  void flag(const std::string& name, const std::string& help);
  void option(const std::string& name, const std::string& metavar, const std::string& help,
              const std::string& fallback = "");

  // argv[first..argc): "--name value", "--name=value", "--flag", "-h"/"--help".
  Status parse(int argc, char** argv, int first);

  bool help_requested() const { return help_; }
  // Sets an option as if it had been given, unless it was (defaults from a model's cfg).
  void assume(const std::string& name, const std::string& value);
  bool given(const std::string& name) const { return values_.count(name) != 0; }
  std::string text(const std::string& name) const;  // the value, or the fallback
  Result<int64_t> integer(const std::string& name, int64_t min, int64_t max) const;
  Result<double> number(const std::string& name, double min, double max) const;
  std::string help() const;

 private:
  struct Spec {
    std::string name, metavar, help, fallback;
    bool is_flag;
  };
  const Spec* find(const std::string& name) const;

  std::string command_, usage_, summary_;
  std::vector<Spec> specs_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

// --threads and --seed, which every command takes.
void add_common_options(Args& args);
// --denormals flush|keep, for the commands that compute (train, precision, eval).
void add_denormals_option(Args& args);

}  // namespace rg

namespace rg {
// --threads (default: every logical CPU) and --seed.
Result<int> threads_option(const Args& args);
Result<uint64_t> seed_option(const Args& args);
// Sets the process's subnormal-float mode (base/float_mode.h) from --denormals.
Status apply_denormals_option(const Args& args);
}  // namespace rg
