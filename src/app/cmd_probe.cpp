// retrograd probe: what this machine is, as the engine sees it.
#include <cstdio>

#include "app/args.h"
#include "app/commands.h"
#include "report/sysinfo.h"

namespace rg {

int run_probe(int argc, char** argv) {
  Args args("probe", "[options]", "Shows the CPU (model, cores, caches, SIMD features), memory and compute devices.");
  add_common_options(args);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  auto threads = threads_option(args);
  if (!threads.ok()) return fail(threads.status().message());
  const SystemInfo info = read_system_info();
  std::fputs(format_system_info(info).c_str(), stdout);
  std::printf("threads    %d (of %d logical CPUs)\n", threads.value(), info.logical_cpus);
  std::printf("kernels    portable C++ built for the %s baseline; per-ISA kernels are not built yet\n",
#if defined(__x86_64__) || defined(_M_X64)
              "x86-64 (SSE2)"
#elif defined(__i386__) || defined(_M_IX86)
              "i686 + SSE2"
#else
              "host"
#endif
  );
  std::printf("gpu        off: this build has no OpenCL backend yet\n");
  return 0;
}

}  // namespace rg
