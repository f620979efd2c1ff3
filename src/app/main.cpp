// The retrograd program: the command line, dispatched by run_command (app/run_command.cpp).
#include "app/commands.h"

int main(int argc, char** argv) { return rg::run_command(argc, argv); }
