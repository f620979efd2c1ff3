// The retrograd program: the command line, dispatched by run_command (app/run_command.cpp).
#include "app/commands.h"
#include "base/float_mode.h"

int main(int argc, char** argv) {
  rg::apply_denormals_on_this_thread();  // the default (flush) until a command's --denormals says otherwise
  return rg::run_command(argc, argv);
}
