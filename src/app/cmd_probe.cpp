// retrograd probe: what this machine is, as the engine sees it.
#include <cstdio>

#include "app/args.h"
#include "app/commands.h"
#include "base/memory.h"
#include "cpu/kernel_tables.h"
#include "dist/communicator.h"
#include "opencl/probe_report.h"
#include "report/sysinfo.h"

namespace rg {

int run_probe(int argc, char** argv) {
  Args args("probe", "[options]", "Shows the CPU (model, cores, caches, SIMD features), memory and compute devices.");
  add_common_options(args);
  args.option("device", "cpu|cl:P:D", "test only this OpenCL device", "every device");
  args.option("device-mem", "BYTES", "a device memory budget to show, e.g. 256M", "none");
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  auto threads = threads_option(args);
  if (!threads.ok()) return fail(threads.status().message());
  int64_t device_budget = 0;
  if (args.given("device-mem")) {
    auto budget = parse_bytes(args.text("device-mem"));
    if (!budget.ok()) return fail("--device-mem: " + budget.status().message());
    device_budget = budget.value();
  }
  const SystemInfo info = read_system_info();
  std::fputs(format_system_info(info).c_str(), stdout);
  std::printf("threads    %d (of %d logical CPUs)\n", threads.value(), info.logical_cpus);
  const IsaChoice& isa = active_isa_choice();
  std::printf("isa        best %s, chosen %s%s\n", isa_name(isa.best), isa_name(isa.chosen),
              isa.cap.empty() ? "" : (" (RETROGRAD_ISA=" + isa.cap + ")").c_str());
  std::printf("kernels    %s\n", f32_gemm_kernel(isa.chosen).name);
  const std::string mpi = Communicator::library_version();
  std::printf("mpi        %s\n", mpi.empty() ? "not in this build (training over MPI: meson setup -Dmpi=enabled, docs/distributed.md)"
                                              : (mpi + ": mpirun -np N retrograd train trains over N processes").c_str());
  // The OpenCL devices with their tested capabilities, or why OpenCL is off.
  auto opencl = ocl::opencl_probe_report(args.given("device") ? args.text("device") : "", device_budget);
  if (!opencl.ok()) return fail("--device: " + opencl.status().message());
  std::fputs(opencl.value().c_str(), stdout);
  return 0;
}

}  // namespace rg
