// The retrograd command line: dispatches argv to a subcommand. main() is only this; the
// command-line fuzz target (tests/fuzz/fuzz_cli.cpp) calls it the same way.
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "app/commands.h"
#include "cpu/isa.h"

namespace rg {

namespace {
const char* kUsage =
    "usage: retrograd <command> [options]\n"
    "\n"
    "commands:\n"
    "  train    train a model (default: mlp on Fashion-MNIST) and report accuracy, speed and memory\n"
    "  precision  train a model, then run it in fp32, fp16, int8, int8-qat and int8-train: one row each of\n"
    "           speed, accuracy and memory (train's options; --precision LIST picks the precisions)\n"
    "  eval     score a checkpoint on test data\n"
    "  probe    show the CPU, its caches and SIMD features, and memory\n"
    "  make-data  write generated images as IDX files, of any size (for streaming studies)\n"
    "  study    measure every network on every device and precision here, sweep batch size and learning\n"
    "           rate, compare with the hardware's peaks, advise; writes an HTML report (--quick: minutes)\n"
    "  advise   how to train a model here (device, precision, batch, threads) from a study's measurements\n"
    "  compare  two studies of this machine side by side: which figures differ beyond the noise, and the load\n"
    "\n"
    "retrograd <command> --help lists a command's options.\n";

int dispatch(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  // Start-up is baseline code: a bad RETROGRAD_ISA (or one above this CPU) stops here with a message.
  if (const Status isa = isa_choice_status(); !isa.ok()) return fail(isa.message());
  const std::string command = argv[1];
  if (command == "train") return run_train(argc, argv);
  if (command == "eval") return run_eval(argc, argv);
  if (command == "precision") return run_precision(argc, argv);
  if (command == "probe") return run_probe(argc, argv);
  if (command == "make-data") return run_make_data(argc, argv);
  if (command == "study") return run_study(argc, argv);
  if (command == "advise") return run_advise(argc, argv);
  if (command == "compare") return run_compare(argc, argv);
  if (command == "--version") {
    std::printf("retrograd %s\n", kRetrogradVersion);
    return 0;
  }
  std::fprintf(stderr, "retrograd: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
}  // namespace

int run_command(int argc, char** argv) {
  // Tensors come from the counted allocator, whose failures are messages naming the tensor;
  // what is left (vectors, strings, the standard library's own) throws std::bad_alloc: still
  // a message and an exit code, never an abort. Files already written stay as they were.
  try {
    return dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "retrograd: out of memory outside the counted tensors (std::bad_alloc): the machine, "
                         "or ulimit -v, has too little for this run; lower --batch or --mem-budget\n");
    return 2;
  }
}

}  // namespace rg
