// The subcommands of the retrograd program. Each returns the process exit code:
// 0 success, 2 bad input or a failed run (the message went to stderr).
#pragma once

#include <string>

namespace rg {

// The whole command line: argv[1] names the subcommand. Never calls exit(); the process's
// exit code is what it returns.
int run_command(int argc, char** argv);

int run_train(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_probe(int argc, char** argv);
int run_make_data(int argc, char** argv);
int run_study(int argc, char** argv);
int run_advise(int argc, char** argv);
int run_compare(int argc, char** argv);

constexpr const char* kRetrogradVersion = "0.1.0";
// `train` with the per-precision table: --precision fp32,fp16,int8,int8-qat,int8-train unless given.
int run_precision(int argc, char** argv);

// Prints "retrograd: <message>" to stderr and returns 2.
int fail(const std::string& message);

}  // namespace rg
