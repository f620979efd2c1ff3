// The OpenCL runtime (src/opencl/): the loader and its errors, error names, --device parsing,
// the embedded kernel sources, the program cache and build logs, device buffers and budgets,
// copies and events, the capability tests, `retrograd probe`, and the device layer makers
// against the layer kinds. Where no OpenCL device exists, each device test is skipped and says
// why (PoCL runs them in CI). The kernels: test_opencl_ops.cpp.
#include <sys/stat.h>  // mkfifo

#include <chrono>
#include <filesystem>

#include "base/serial.h"
#include "nn/layer_registry.h"
#include "opencl/activation.h"
#include "opencl/kernel_sources.h"
#include "opencl/program_binary_file.h"
#include "opencl/model/cl_layer.h"
#include "opencl_test_util.h"
#include "test_paths.h"

namespace rg::ocl {
namespace {

// ---------------------------------------------------------------- without a device

TEST(OpenclErrors, MessagesNameTheCallAndTheCode) {
  EXPECT_EQ(cl_status("clBuildProgram", CL_BUILD_PROGRAM_FAILURE).message(),
            "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)");
  EXPECT_EQ(cl_status("clCreateBuffer", CL_MEM_OBJECT_ALLOCATION_FAILURE).message(),
            "clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)");
  EXPECT_EQ(cl_status("clGetPlatformIDs", -1001).message(), "clGetPlatformIDs failed: CL_PLATFORM_NOT_FOUND_KHR (-1001)");
  EXPECT_EQ(cl_status("clFinish", -9999).message(), "clFinish failed: unknown OpenCL error (-9999)");
  EXPECT_TRUE(cl_status("clFinish", CL_SUCCESS).ok());
  EXPECT_STREQ(cl_error_name(CL_INVALID_KERNEL_ARGS), "CL_INVALID_KERNEL_ARGS");
  EXPECT_TRUE(is_out_of_memory(CL_OUT_OF_RESOURCES));
  EXPECT_TRUE(is_out_of_memory(CL_MEM_OBJECT_ALLOCATION_FAILURE));
  EXPECT_FALSE(is_out_of_memory(CL_INVALID_VALUE));
}

TEST(OpenclLoader, AMissingLibraryIsAnErrorThatNamesIt) {
  auto api = load_opencl_library("libretrograd-no-such-opencl.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(contains(api.status().message(), "no OpenCL loader: cannot load libretrograd-no-such-opencl.so.1"))
      << api.status().message();
}

TEST(OpenclLoader, ALibraryWithoutTheEntryPointsIsRefused) {
  // A real library that is not OpenCL, there wherever retrograd runs: the C library or
  // Windows's kernel32.
#if defined(_WIN32)
  const std::string library = "kernel32.dll";
#else
  const std::string library = "libc.so.6";
#endif
  auto api = load_opencl_library(library);
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(contains(api.status().message(), library + " has no clGetPlatformIDs")) << api.status().message();
}

TEST(OpenclLoader, TheProcessTableAndTheStatusAgree) {
  const auto api = opencl_api();
  const Status status = opencl_status();
  if (!api.ok()) {
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.message(), api.status().message());
  }
  if (status.ok()) {
    EXPECT_TRUE(api.ok());
    EXPECT_FALSE(open_devices().devices.empty() && open_devices().failures.empty());
  }
}

// A listing with one platform of two devices, for the parser.
Result<std::vector<PlatformInfo>> fake_listing() {
  PlatformInfo platform;
  platform.name = "Fake Platform";
  for (int d = 0; d < 2; ++d) {
    DeviceInfo device;
    device.device_index = d;
    device.label = "cl:0:" + std::to_string(d);
    device.name = d == 0 ? "Fake GPU" : "Fake CPU";
    device.type = d == 0 ? "GPU" : "CPU";
    platform.devices.push_back(device);
  }
  return std::vector<PlatformInfo>{platform};
}

// ---------------------------------------------------------------- device layer makers (no device needed)

// Every layer kind the rows (nn/layer_registry.h) say the device runs has a maker, and no more.
TEST(DeviceLayerMakers, CoverEveryKindTheRowsGiveTheDevice) {
  const Status checked = check_cl_layer_makers(cl_layer_makers());
  EXPECT_TRUE(checked.ok()) << checked.message();
  for (const LayerKind& row : layer_kinds()) EXPECT_NE(row.device, DeviceRun::unset) << row.name;
}

// The check fails on a table that lacks a kind, names one that is no kind, or names one twice.
TEST(DeviceLayerMakers, AnIncompleteTableFailsNamingWhatIsWrong) {
  std::vector<ClLayerMaker> makers;
  for (const ClLayerMaker& maker : cl_layer_makers()) {
    if (std::string(maker.kind) != "upsample") makers.push_back(maker);
  }
  const Status missing = check_cl_layer_makers(makers);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.message(), "upsample: its row says it runs on the device, but no maker is registered"))
      << missing.message();
  makers.push_back({"upsample", cl_layer_makers().front().make});
  ASSERT_TRUE(check_cl_layer_makers(makers).ok());
  makers.push_back({"no_such_kind", cl_layer_makers().front().make});
  makers.push_back({"dense", cl_layer_makers().front().make});
  const Status stray = check_cl_layer_makers(makers);
  ASSERT_FALSE(stray.ok());
  EXPECT_TRUE(contains(stray.message(), "no_such_kind: a maker for no layer kind")) << stray.message();
  EXPECT_TRUE(contains(stray.message(), "dense: a second maker")) << stray.message();
}

TEST(OpenclDeviceChoice, ParsesCpuAndExistingDevices) {
  auto cpu = parse_device_choice("cpu", fake_listing());
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu.value().opencl);
  EXPECT_EQ(cpu.value().text(), "cpu");
  auto second = parse_device_choice("cl:0:1", fake_listing());
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(second.value().opencl);
  EXPECT_EQ(second.value().platform, 0);
  EXPECT_EQ(second.value().device, 1);
  EXPECT_EQ(second.value().text(), "cl:0:1");
}

TEST(OpenclDeviceChoice, ErrorsNameTheTextAndListTheDevices) {
  const std::string listed = "devices here: cpu, cl:0:0 (Fake GPU, GPU), cl:0:1 (Fake CPU, CPU)";
  for (const char* bad : {"gpu", "cl:0", "cl:a:0", "cl:-1:0", "cl:0:0:0", "cl::0", "CL:0:0", "cl:0:99999", ""}) {
    auto choice = parse_device_choice(bad, fake_listing());
    ASSERT_FALSE(choice.ok()) << bad;
    EXPECT_TRUE(contains(choice.status().message(), std::string("device '") + bad + "': expected cpu or cl:P:D"))
        << choice.status().message();
    EXPECT_TRUE(contains(choice.status().message(), listed)) << choice.status().message();
  }
  auto platform = parse_device_choice("cl:1:0", fake_listing());
  ASSERT_FALSE(platform.ok());
  EXPECT_TRUE(contains(platform.status().message(), "device 'cl:1:0': there is no OpenCL platform 1; " + listed))
      << platform.status().message();
  auto device = parse_device_choice("cl:0:2", fake_listing());
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(contains(device.status().message(), "platform 0 (Fake Platform) has no device 2; " + listed))
      << device.status().message();
}

TEST(OpenclDeviceChoice, WithOpenclOffOnlyTheCpuExists) {
  const Result<std::vector<PlatformInfo>> off = Status::error("no OpenCL loader: cannot load libOpenCL.so.1: gone");
  EXPECT_TRUE(parse_device_choice("cpu", off).ok());
  auto choice = parse_device_choice("cl:0:0", off);
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.status().message(), "device 'cl:0:0': OpenCL is off: no OpenCL loader: cannot load libOpenCL.so.1: gone");
  auto bad = parse_device_choice("cuda", off);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.status().message(), "devices here: cpu only (OpenCL is off: no OpenCL loader"))
      << bad.status().message();
}

TEST(OpenclKernelSources, EmbeddedCopiesAreTheFilesByteForByte) {
  ScopedEnv env("RETROGRAD_KERNELS_DIR", nullptr);
  const std::vector<std::string> names = embedded_kernel_file_names();
  for (const char* expected : {"elementwise.cl", "gemm.cl", "activation.cl", "optimizer.cl", "loss.cl", "pool.cl", "im2col.cl", "batch_norm.cl", "probe.cl", "probe_fp16.cl"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    auto source = kernel_source(name);
    ASSERT_TRUE(source.ok()) << source.status().message();
    EXPECT_EQ(source.value().origin, "embedded");
    EXPECT_EQ(source.value().text, read_file(std::string(retrograd_source_dir) + "/kernels/" + name)) << name;
  }
  auto missing = kernel_source("nosuch.cl");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.status().message(), "kernel file nosuch.cl is not embedded in this binary (it has: "))
      << missing.status().message();
  EXPECT_TRUE(contains(missing.status().message(), "gemm.cl")) << missing.status().message();
}

TEST(OpenclKernelSources, TheDevelopmentDirectoryComesFirst) {
  const std::string dir = temp_dir() + "/kernels_dev";
  std::filesystem::create_directories(dir);
  write_file(dir + "/gemm.cl", "// edited\n");
  ScopedEnv env("RETROGRAD_KERNELS_DIR", dir);
  auto edited = kernel_source("gemm.cl");
  ASSERT_TRUE(edited.ok()) << edited.status().message();
  EXPECT_EQ(edited.value().text, "// edited\n");
  EXPECT_EQ(edited.value().origin, dir + "/gemm.cl");
  auto missing = kernel_source("elementwise.cl");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "kernel file elementwise.cl: cannot read " + dir + "/elementwise.cl (RETROGRAD_KERNELS_DIR is set)");
}

// A kernel file's `#include "NAME"` lines are pasted in from kernels/NAME before the build (one
// level); an include that cannot be read names both files.
TEST(OpenclKernelSources, ProgramSourcesPasteTheirIncludes) {
  const std::string dir = temp_dir() + "/kernels_include";
  std::filesystem::create_directories(dir);
  write_file(dir + "/main.cl", "// top\n#include \"part.h\"\n__kernel void k() {}\n");
  write_file(dir + "/part.h", "#define PART 1");  // no newline at its end
  write_file(dir + "/broken.cl", "#include \"nosuch.h\"\n");
  ScopedEnv env("RETROGRAD_KERNELS_DIR", dir);
  auto expanded = kernel_program_source("main.cl");
  ASSERT_TRUE(expanded.ok()) << expanded.status().message();
  EXPECT_EQ(expanded.value().text, "// top\n#define PART 1\n__kernel void k() {}\n");
  EXPECT_EQ(kernel_source("main.cl").value().text, read_file(dir + "/main.cl")) << "kernel_source stays the file";
  auto broken = kernel_program_source("broken.cl");
  ASSERT_FALSE(broken.ok());
  EXPECT_TRUE(contains(broken.status().message(), "kernel file broken.cl includes nosuch.h: ")) << broken.status().message();
}

TEST(OpenclMemory, TheAccountReservesAgainstItsBudget) {
  MemoryAccount account("device test");
  account.set_budget(1000);
  ASSERT_TRUE(account.reserve(600, "weights").ok());
  const Status refused = account.reserve(500, "activations");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            "out of device test memory budget: activations needs 500 B, 600 B of the 1000 B budget are in use");
  EXPECT_EQ(account.current_bytes(), 600);
  account.unreserve(600);
  EXPECT_TRUE(account.reserve(1000, "all").ok());
  EXPECT_EQ(account.peak_bytes(), 1000);
  account.unreserve(1000);
  EXPECT_EQ(account.current_bytes(), 0);
}

// ---------------------------------------------------------------- `retrograd probe`

TEST(OpenclProbe, WithoutALoaderTheProbeSaysWhyTheGpuIsOff) {
  ScopedEnv env("RETROGRAD_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1");
  const Outcome off = run("probe");
  EXPECT_EQ(off.code, 0) << off.output;
  EXPECT_TRUE(contains(off.output, "opencl     off: no OpenCL loader: cannot load /nonexistent/libOpenCL.so.1"))
      << off.output;
  EXPECT_TRUE(contains(off.output, "gpu        off: no OpenCL loader")) << off.output;
  EXPECT_TRUE(contains(off.output, "isa        best")) << off.output;  // the rest of the probe is there
}

TEST(OpenclProbe, WithoutAPlatformTheProbeSaysSo) {
#if defined(_WIN32)
  GTEST_SKIP() << "Windows's ICD loader lists its drivers in the registry: no folder to empty for one process";
#endif
  // ocl-icd reads the drivers from OCL_ICD_VENDORS (a directory) instead of /etc/OpenCL/vendors.
  const std::string empty = temp_dir() + "/no_vendors";
  std::filesystem::create_directories(empty);
  ScopedEnv env("OCL_ICD_VENDORS", empty);
  ScopedEnv no_files("OCL_ICD_FILENAMES", "");
  const Outcome o = run("probe");
  EXPECT_EQ(o.code, 0) << o.output;
  if (contains(o.output, "no OpenCL loader")) GTEST_SKIP() << "no OpenCL loader here: " << o.output;
  EXPECT_TRUE(contains(o.output, "opencl     off: no OpenCL platform: the loader libOpenCL.so.1 found no driver"))
      << o.output;
}

TEST(OpenclProbe, ABadDeviceIsRefusedWithTheDevicesThereAre) {
  const Outcome o = run("probe --device gpu0");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "--device: device 'gpu0': expected cpu or cl:P:D")) << o.output;
  EXPECT_TRUE(contains(o.output, "devices here: cpu")) << o.output;
  const Outcome budget = run("probe --device-mem lots");
  EXPECT_EQ(budget.code, 2) << budget.output;
  EXPECT_TRUE(contains(budget.output, "--device-mem: 'lots' is not a size")) << budget.output;
}

TEST(OpenclProbe, ListsEachDeviceWithItsTestedCapabilities) {
  SKIP_WITHOUT_OPENCL();
  const std::string cache = make_temp_folder("retrograd_probe_cache_");
  const ScopedEnv cached("RETROGRAD_CACHE", cache.c_str());
  const Outcome o = run("probe --device cl:0:0 --device-mem 256M");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "  cl:0:0   ")) << o.output;
  EXPECT_TRUE(contains(o.output, "allocated, every page written and read back (reported ")) << o.output;
  EXPECT_TRUE(contains(o.output, "used by a kernel")) << o.output;
  EXPECT_TRUE(contains(o.output, "fp16 storage (vload_half/vstore_half) ")) << o.output;
  EXPECT_TRUE(contains(o.output, "fp16 arithmetic ")) << o.output;
  EXPECT_TRUE(contains(o.output, "budget 256.0 MiB (--device-mem)")) << o.output;
  EXPECT_TRUE(contains(o.output, "\ngpu        ")) << o.output;
  EXPECT_TRUE(contains(o.output, "capability tests tested now: a ")) << o.output;
  const Outcome again = run("probe --device cl:0:0 --device-mem 256M");
  EXPECT_TRUE(contains(again.output, "capability tests read from " + cache)) << again.output;
  std::filesystem::remove_all(cache);
}

// ---------------------------------------------------------------- devices

TEST(OpenclDevice, EveryDeviceOpensAndPassesItsCapabilityTests) {
  SKIP_WITHOUT_OPENCL();
  for (const std::string& failure : open_devices().failures) ADD_FAILURE() << failure;
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    const Capabilities& c = device->capabilities();
    // The allocation test started at the cap and worked there.
    EXPECT_EQ(c.max_alloc_tried, std::min(kAllocTestCap, c.max_alloc_reported / 4 * 4));
    EXPECT_EQ(c.max_alloc_works, c.max_alloc_tried) << c.max_alloc_note;
    EXPECT_EQ(device->max_buffer_bytes(), c.max_alloc_reported);  // a capped test disproves nothing
    // vload_half / vstore_half are core OpenCL 1.2: every device must round-trip exactly.
    EXPECT_TRUE(c.fp16_storage) << c.fp16_storage_note;
    EXPECT_GT(c.local_mem_works, 0) << c.local_mem_note;
    EXPECT_LE(c.local_mem_works, c.local_mem_reported);
    EXPECT_FALSE(c.fp16_arithmetic_note.empty());
    EXPECT_EQ(c.fp16_reported, device->info().has_extension("cl_khr_fp16"));
  }
}

TEST(OpenclDevice, OpensAndClosesWithItsBudget) {
  SKIP_WITHOUT_OPENCL();
  DeviceOptions options;
  options.test_capabilities = false;
  options.memory_budget_bytes = int64_t{3} << 20;
  auto device = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ(device.value()->memory().budget_bytes(), int64_t{3} << 20);
  EXPECT_EQ(device.value()->max_buffer_bytes(), device.value()->info().max_alloc_bytes);  // untested: as reported
  {
    auto buffer = Buffer::allocate(*device.value(), 1 << 20, "scratch");
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    EXPECT_EQ(device.value()->memory().current_bytes(), 1 << 20);
  }
  EXPECT_EQ(device.value()->memory().current_bytes(), 0);
  device.value().reset();  // closes the context with nothing left allocated
}

TEST(OpenclDevice, AKernelRunWithoutItsArgumentsNamesTheKernelAndTheCode) {
  SKIP_WITHOUT_OPENCL();
  DeviceOptions options;
  options.test_capabilities = false;
  auto device = Device::open(DeviceChoice{true, 0, 0}, options);  // its own cache: no argument set yet
  ASSERT_TRUE(device.ok()) << device.status().message();
  auto kernel = device.value()->kernel("elementwise.cl", "f32_scale");
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  const size_t global = 64;
  auto event = device.value()->run(*kernel.value(), 1, &global, nullptr);
  ASSERT_FALSE(event.ok());
  EXPECT_TRUE(contains(event.status().message(),
                       "running kernel f32_scale of kernels/elementwise.cl: clEnqueueNDRangeKernel failed: "
                       "CL_INVALID_KERNEL_ARGS (-52)"))
      << event.status().message();
  // An argument of the wrong size names the kernel and the argument.
  const Status wrong = set_kernel_args(*device.value(), *kernel.value(), cl_ulong{7});
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(contains(wrong.message(), "kernel f32_scale argument 0: clSetKernelArg failed: CL_INVALID_ARG_SIZE (-51)"))
      << wrong.message();
}

TEST(OpenclPrograms, AKernelThatFailsToBuildGivesTheLogAndIsNotCached) {
  SKIP_WITHOUT_OPENCL();
  const std::string dir = temp_dir() + "/kernels_broken";
  std::filesystem::create_directories(dir);
  write_file(dir + "/broken.cl", "__kernel void broken(__global float* x) { x[0] = undeclared_value_here; }\n");
  ScopedEnv env("RETROGRAD_KERNELS_DIR", dir);
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    const size_t programs = device->programs().program_count();
    auto failed = device->kernel("broken.cl", "broken");
    ASSERT_FALSE(failed.ok());
    const std::string message = failed.status().message();
    EXPECT_TRUE(contains(message, "building kernels/broken.cl (read from " + dir + "/broken.cl) for " + device->label()))
        << message;
    EXPECT_TRUE(contains(message, "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11) with options '-cl-std=CL1.2'"))
        << message;
    EXPECT_TRUE(contains(message, "build log:\n")) << message;
    EXPECT_TRUE(contains(message, "undeclared_value_here")) << message;  // the compiler's own words
    EXPECT_EQ(device->programs().program_count(), programs);

    write_file(dir + "/broken.cl", "__kernel void broken(__global float* x) { x[0] = 1.0f; }\n");
    auto fixed = device->kernel("broken.cl", "broken");
    ASSERT_TRUE(fixed.ok()) << fixed.status().message();
    EXPECT_EQ(device->programs().program_count(), programs + 1);
    auto again = device->kernel("broken.cl", "broken");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value(), fixed.value());  // from the cache
    auto missing = device->kernel("broken.cl", "no_such_kernel");
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(contains(missing.status().message(), "clCreateKernel failed: CL_INVALID_KERNEL_NAME (-46)"))
        << missing.status().message();
    write_file(dir + "/broken.cl", "__kernel void broken(__global float* x) { x[0] = undeclared_value_here; }\n");
  }
}

TEST(OpenclPrograms, EachFileAndOptionSetIsBuiltOnce) {
  SKIP_WITHOUT_OPENCL();
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    auto first = device->programs().program("elementwise.cl", "");
    ASSERT_TRUE(first.ok()) << first.status().message();
    const size_t programs = device->programs().program_count();
    auto second = device->programs().program("elementwise.cl", "");
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(first.value(), second.value());
    auto other = device->programs().program("elementwise.cl", "-DUNUSED_OPTION=1");
    ASSERT_TRUE(other.ok()) << other.status().message();
    EXPECT_NE(other.value(), first.value());
    EXPECT_EQ(device->programs().program_count(), programs + 1);
  }
}

// build_all: the programs not cached yet, several threads at once, each once however often it is
// listed; the cached ones are not built again, and one that fails is left out for program() to
// report (with the log, as above).
TEST(OpenclPrograms, BuildAllBuildsEachMissingProgramOnceAndLeavesFailuresToProgram) {
  SKIP_WITHOUT_OPENCL();
  const std::string dir = temp_dir() + "/kernels_build_all";
  std::filesystem::create_directories(dir);
  write_file(dir + "/some.cl",
             "__kernel void some(__global float* x) { x[0] = VALUE; }\n"
             "#ifdef BROKEN\n__kernel void bad(__global float* x) { x[0] = undeclared_value_here; }\n#endif\n");
  ScopedEnv env("RETROGRAD_KERNELS_DIR", dir);
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    ProgramCache& programs = device->programs();
    auto kept = programs.program("some.cl", "-DVALUE=1.0f");
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    const size_t before = programs.program_count();
    std::vector<std::string> options = {"-DVALUE=1.0f", "-DVALUE=2.0f -DBROKEN"};
    for (int v = 2; v <= 7; ++v) options.push_back("-DVALUE=" + std::to_string(v) + ".0f");
    options.push_back("-DVALUE=3.0f");  // twice
    programs.build_all("some.cl", options);
    EXPECT_EQ(programs.program_count(), before + 6) << "values 2-7 built once each; 1 was cached; BROKEN left out";
    auto again = programs.program("some.cl", "-DVALUE=1.0f");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value(), kept.value());
    auto broken = programs.program("some.cl", "-DVALUE=2.0f -DBROKEN");
    ASSERT_FALSE(broken.ok());
    EXPECT_TRUE(contains(broken.status().message(), "undeclared_value_here")) << broken.status().message();
    EXPECT_EQ(programs.program_count(), before + 6);
    auto seven = programs.kernel("some.cl", "some", "-DVALUE=7.0f");
    ASSERT_TRUE(seven.ok()) << seven.status().message();
    EXPECT_EQ(programs.program_count(), before + 6) << "the kernel comes from the program build_all made";
  }
}

// The program binary file's header: a file made for the key gives its bytes back; another key, a
// wrong magic, a byte count that is not the file's, a changed byte (the checksum) or a missing
// line are each refused naming the rule.
TEST(OpenclPrograms, ABinaryFileGivesItsBytesOnlyToItsKeyAndWhole) {
  const std::vector<uint8_t> binary = {0, 1, 2, 255, '\n', 'x'};
  const std::vector<uint8_t> file = program_binary_file("dev | gemm.cl | -DX=1 | abc", binary);
  auto back = program_binary_of(file, "dev | gemm.cl | -DX=1 | abc");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), binary);
  auto refused = [&](const std::vector<uint8_t>& bytes, const std::string& key, const std::string& rule) {
    auto r = program_binary_of(bytes, key);
    ASSERT_FALSE(r.ok()) << rule;
    EXPECT_TRUE(contains(r.status().message(), rule)) << r.status().message();
  };
  refused(file, "dev | gemm.cl | -DX=2 | abc", "made for another program");
  std::vector<uint8_t> changed = file;
  changed.back() ^= 1;
  refused(changed, "dev | gemm.cl | -DX=1 | abc", "do not match their checksum");
  std::vector<uint8_t> shorter(file.begin(), file.end() - 1);
  refused(shorter, "dev | gemm.cl | -DX=1 | abc", "says 6 bytes, holds 5");
  std::vector<uint8_t> magic = file;
  magic[0] = 'R';
  refused(magic, "dev | gemm.cl | -DX=1 | abc", "not a program binary file");
  const std::string header = std::string(kProgramBinaryMagic) + "\nfor k\nbytes six fnv1a 0\n";
  refused(std::vector<uint8_t>(header.begin(), header.end()), "k", "want 'bytes N fnv1a HASH'");
  refused({}, "k", "not a program binary file");
}

// A program built on a device is kept in the cache folder as its binary; a second device object
// (a later run) loads it instead of compiling, and its kernel computes the same values. A damaged
// file, a truncated one, a folder in its place or one past the size limit is built from source
// again (and the file rewritten where it can be); the folder is pruned past its size;
// RETROGRAD_CL_BINARIES=0 keeps none, and without it a CPU device keeps none.
TEST(OpenclPrograms, BuiltProgramsAreKeptAsBinariesAndLoadedByALaterRun) {
  SKIP_WITHOUT_OPENCL();
  const std::string dir = temp_dir() + "/program_binaries";
  std::filesystem::remove_all(dir);
  ScopedEnv cache("RETROGRAD_CACHE", dir);
  ScopedEnv any_device("RETROGRAD_CL_BINARIES", "1");  // a GPU's default; PoCL's is off
  const DeviceInfo info = open_devices().devices.at(0)->info();
  DeviceOptions quick;
  quick.test_capabilities = false;
  auto open = [&]() { return Device::open(DeviceChoice{true, info.platform_index, info.device_index}, quick).take(); };
  auto add_bias_of = [&](Device& device) {  // f32_add_bias through the device: 2 x 3 plus a bias
    Buffer y = upload_or_die(device, std::vector<float>{1, 2, 3, 4, 5, 6}, "y");
    Buffer bias = upload_or_die(device, std::vector<float>{10, 20, 30}, "bias");
    EXPECT_TRUE(f32_add_bias(device, 2, 3, bias.f32(), y.f32()).ok());
    return download<float>(y, 6).take();
  };
  const std::vector<float> want = {11, 22, 33, 14, 25, 36};
  auto files = [&]() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind("opencl-program-", 0) == 0) out.push_back(e.path().string());
    return out;
  };
  {
    auto first = open();
    EXPECT_EQ(add_bias_of(*first), want);
    EXPECT_EQ(first->programs().binaries_loaded(), 0);
    EXPECT_EQ(first->programs().binaries_written(), 1);
  }
  ASSERT_EQ(files().size(), 1u);
  const std::string path = files()[0];
  {  // other options, another binary; the source changed (a comment), another again, none loaded
    auto other = open();
    ASSERT_TRUE(other->programs().program("activation.cl", "-DUNUSED_OPTION=1").ok());
    const std::string kernels = temp_dir() + "/kernels_binary";
    std::filesystem::create_directories(kernels);
    write_file(kernels + "/activation.cl", "// changed\n" + kernel_source("activation.cl").take().text);
    write_file(kernels + "/fused_activation.h", kernel_source("fused_activation.h").take().text);  // its include
    ScopedEnv edited("RETROGRAD_KERNELS_DIR", kernels);
    ASSERT_TRUE(other->programs().program("activation.cl", "").ok());
    EXPECT_EQ(other->programs().binaries_loaded(), 0);
    EXPECT_EQ(other->programs().binaries_written(), 2);
    EXPECT_EQ(files().size(), 3u);
  }
  {
    auto later = open();
    EXPECT_EQ(add_bias_of(*later), want);
    EXPECT_EQ(later->programs().binaries_loaded(), 1);
    EXPECT_EQ(later->programs().binaries_written(), 0);
  }
  const std::vector<uint8_t> good = read_file_bytes(path).take();
  std::vector<uint8_t> damaged = good;
  damaged[damaged.size() / 2 + 40] ^= 0x10;
  const std::vector<uint8_t> truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  for (const auto& [bytes, what] : {std::make_pair(damaged, "a damaged file"), std::make_pair(truncated, "a truncated one")}) {
    SCOPED_TRACE(what);
    write_file(path, std::string(bytes.begin(), bytes.end()));
    auto again = open();
    EXPECT_EQ(add_bias_of(*again), want);
    EXPECT_EQ(again->programs().binaries_loaded(), 0);
    EXPECT_EQ(again->programs().binaries_written(), 1);
    EXPECT_EQ(read_file_bytes(path).take(), good) << "written again whole";
  }
#if !defined(_WIN32)
  std::filesystem::remove(path);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);  // a FIFO there: built, nothing written, no wait on it
  {
    auto fifo = open();
    EXPECT_EQ(add_bias_of(*fifo), want);
    EXPECT_EQ(fifo->programs().binaries_loaded() + fifo->programs().binaries_written(), 0);
  }
  EXPECT_TRUE(std::filesystem::is_fifo(path));
#endif
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);  // a folder where the file goes: built, nothing written
  {
    auto folder = open();
    EXPECT_EQ(add_bias_of(*folder), want);
    EXPECT_EQ(folder->programs().binaries_loaded() + folder->programs().binaries_written(), 0);
  }
  std::filesystem::remove(path);
  write_file(path, "");
  std::filesystem::resize_file(path, static_cast<uintmax_t>(kMaxProgramBinaryFileBytes) + 1);  // sparse: not read
  {
    auto large = open();
    EXPECT_EQ(add_bias_of(*large), want);
    EXPECT_EQ(large->programs().binaries_loaded(), 0);
  }
  // Past 256 MiB of binaries the oldest written go, down to 192 MiB: three old ones of 100 MiB
  // (sparse) beside the one just written lose their two oldest; other names are not touched.
  std::filesystem::remove(path);
  const auto now = std::filesystem::file_time_type::clock::now();
  std::vector<std::string> old;
  for (int k = 0; k < 3; ++k) {
    old.push_back(dir + "/opencl-program-000000000000000" + std::to_string(k) + ".bin");
    write_file(old.back(), "");
    std::filesystem::resize_file(old.back(), uintmax_t{100} << 20);
    std::filesystem::last_write_time(old.back(), now - std::chrono::hours(30 - k));
  }
  const std::string other = dir + "/opencl-program-notes.bin";
  write_file(other, "");
  std::filesystem::resize_file(other, uintmax_t{100} << 20);
  std::filesystem::last_write_time(other, now - std::chrono::hours(40));
  // A binary's write temporary two hours old goes; one just begun, and an old one of another
  // name, stay.
  const std::string stale = old[2] + ".tmp-123-0123abcd", fresh = old[2] + ".tmp-124-0123abcd";
  const std::string not_ours = other + ".tmp-123-0123abcd";
  for (const std::string& t : {stale, fresh, not_ours}) write_file(t, "partial");
  std::filesystem::last_write_time(stale, now - std::chrono::hours(2));
  std::filesystem::last_write_time(not_ours, now - std::chrono::hours(2));
  {
    auto pruning = open();
    EXPECT_EQ(add_bias_of(*pruning), want);
    EXPECT_EQ(pruning->programs().binaries_written(), 1);
  }
  EXPECT_FALSE(std::filesystem::exists(old[0]));
  EXPECT_FALSE(std::filesystem::exists(old[1]));
  EXPECT_TRUE(std::filesystem::exists(old[2]));
  EXPECT_TRUE(std::filesystem::exists(path)) << "the binary just written stays";
  EXPECT_TRUE(std::filesystem::exists(other)) << "not a binary's name";
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::exists(not_ours));

  std::filesystem::remove_all(dir);
  for (const char* setting : {"0", static_cast<const char*>(nullptr)}) {
    ScopedEnv off("RETROGRAD_CL_BINARIES", setting);  // null: unset
    if (setting == nullptr && info.is_gpu()) continue;  // a GPU keeps them by default
    auto none = open();
    EXPECT_EQ(add_bias_of(*none), want);
    EXPECT_EQ(none->programs().binaries_written(), 0) << (setting != nullptr ? "=0" : "unset, on a CPU device");
  }
  EXPECT_FALSE(std::filesystem::exists(dir) && !files().empty());
  ScopedEnv bad("RETROGRAD_CL_BINARIES", "yes");
  auto refused = Device::open(DeviceChoice{true, info.platform_index, info.device_index}, quick);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.status().message(), "RETROGRAD_CL_BINARIES='yes': 1 (keep")) << refused.status().message();
}

// ---------------------------------------------------------------- buffers, budgets, copies

TEST(OpenclBuffers, TheBudgetRefusesWithTheSizes) {
  SKIP_WITHOUT_OPENCL();
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    MemoryAccount& memory = device->memory();
    const int64_t before = memory.current_bytes();
    memory.set_budget(before + (int64_t{1} << 20));
    {
      auto first = Buffer::allocate(*device, 768 << 10, "the weights");
      ASSERT_TRUE(first.ok()) << first.status().message();
      auto second = Buffer::allocate(*device, 512 << 10, "the activations");
      ASSERT_FALSE(second.ok());
      EXPECT_TRUE(contains(second.status().message(), "out of device " + device->info().label +
                                                          " memory budget: the activations needs 512.0 KiB, "))
          << second.status().message();
      EXPECT_TRUE(contains(second.status().message(), "budget are in use")) << second.status().message();
      EXPECT_EQ(memory.current_bytes(), before + (768 << 10));
      first.value().reset();
      auto third = Buffer::allocate(*device, 512 << 10, "the activations");
      EXPECT_TRUE(third.ok()) << third.status().message();
    }
    memory.set_budget(0);
    EXPECT_EQ(memory.current_bytes(), before);
  }
}

TEST(OpenclBuffers, OneBufferAboveTheLargestAllocationIsRefused) {
  SKIP_WITHOUT_OPENCL();
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    const int64_t largest = device->max_buffer_bytes();
    auto buffer = Buffer::allocate(*device, largest + 1, "a huge layer");
    ASSERT_FALSE(buffer.ok());
    EXPECT_TRUE(contains(buffer.status().message(), device->label() + ": a huge layer needs one buffer of ")) << buffer.status().message();
    EXPECT_TRUE(contains(buffer.status().message(), "(" + std::to_string(largest + 1) + " bytes), above the largest single "
                                                    "allocation the device allows, "))
        << buffer.status().message();
    EXPECT_TRUE(contains(buffer.status().message(), "(" + std::to_string(largest) + " bytes)")) << buffer.status().message();
    EXPECT_EQ(device->memory().current_bytes(), 0);
  }
}

TEST(OpenclBuffers, OutOfMemoryCodesSayWhatTheAccountHolds) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  const Status status = device.error("allocating 1.0 GiB for conv1", "clCreateBuffer", CL_MEM_OBJECT_ALLOCATION_FAILURE);
  EXPECT_TRUE(contains(status.message(), device.label() + ": allocating 1.0 GiB for conv1: clCreateBuffer failed: "
                                                          "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4): the device is out of memory "
                                                          "with 0 B of buffers counted"))
      << status.message();
  EXPECT_TRUE(contains(status.message(), "--device-mem")) << status.message();
  const Status launch = device.error("running kernel f32_gemm", "clEnqueueNDRangeKernel", CL_OUT_OF_RESOURCES);
  EXPECT_TRUE(contains(launch.message(), "CL_OUT_OF_RESOURCES (-5): the device ran out of a resource (memory, or a "
                                         "kernel's local memory or registers)"))
      << launch.message();
  const Status other = device.error("running x", "clEnqueueNDRangeKernel", CL_INVALID_WORK_GROUP_SIZE);
  EXPECT_FALSE(contains(other.message(), "out of memory")) << other.message();
}

TEST(OpenclBuffers, CopiesBlockingAndNotAtOffsets) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(3);
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    const std::vector<float> values = random_floats(rng, 1000);
    auto buffer = Buffer::allocate(*device, 4000, "copies");
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    ASSERT_TRUE(write_buffer(buffer.value(), 0, values.data(), 4000).ok());
    // Overwrite floats [100, 300) without blocking, then read [50, 350) without blocking.
    const std::vector<float> patch = random_floats(rng, 200);
    auto written = write_buffer_async(buffer.value(), 400, patch.data(), 800);
    ASSERT_TRUE(written.ok()) << written.status().message();
    std::vector<float> back(300);
    auto read = read_buffer_async(buffer.value(), 200, back.data(), 1200);
    ASSERT_TRUE(read.ok()) << read.status().message();
    ASSERT_TRUE(read.value().wait().ok());
    ASSERT_TRUE(written.value().wait().ok());
    for (int i = 0; i < 300; ++i) {
      const int at = 50 + i;
      const float want = at >= 100 && at < 300 ? patch[at - 100] : values[at];
      ASSERT_TRUE(same_bits(back[i], want)) << "float " << at;
    }
    auto seconds = read.value().seconds();
    ASSERT_TRUE(seconds.ok()) << seconds.status().message();
    EXPECT_GE(seconds.value(), 0.0);
    std::vector<float> tail(10);
    ASSERT_TRUE(read_buffer(buffer.value(), 3960, tail.data(), 40).ok());
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(same_bits(tail[i], values[990 + i]));
  }
}

// Issue 29, section 3: probing costs memory too. A device that shares host memory tests its
// largest buffer within --mem-budget and half the host memory available; what it found is
// cached, so the next run tests nothing, and the cost is stated.
TEST(OpenclProbe, TheAllocationTestStaysWithinHostMemoryAndIsCached) {
  SKIP_WITHOUT_OPENCL();
  const std::string cache = make_temp_folder("retrograd_capability_cache_");
  const ScopedEnv cached("RETROGRAD_CACHE", cache.c_str());
  const ScopedEnv available("RETROGRAD_MEM_AVAILABLE", "6M");  // half: 3 MiB, a power of two below: 2 MiB
  DeviceOptions options;
  options.capability.max_alloc_test_bytes = kAllocTestCap;
  options.capability.host_budget_bytes = int64_t{12} << 20;
  auto first = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const Capabilities tested = first.value()->capabilities();
  const bool shared = first.value()->info().shares_host_memory();
  const int64_t start = shared ? int64_t{2} << 20 : std::min(kAllocTestCap, tested.max_alloc_reported / 4 * 4);
  EXPECT_EQ(allocation_test_start(*first.value(), options.capability), start);
  EXPECT_EQ(tested.max_alloc_tried, start);
  EXPECT_EQ(tested.test_bytes, start) << "the largest buffer the tests held";
  EXPECT_EQ(tested.source.rfind("tested now; written to " + cache, 0), 0u) << tested.source;
  EXPECT_TRUE(contains(describe_test_cost(tested), "tested now: a " + format_bytes(start) + " buffer at most"));
  first.value().reset();

  auto second = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(second.ok()) << second.status().message();
  const Capabilities& read = second.value()->capabilities();
  EXPECT_EQ(read.source.rfind("read from " + cache, 0), 0u) << read.source;
  EXPECT_EQ(read.test_bytes, 0) << "nothing tested";
  EXPECT_EQ(read.max_alloc_works, tested.max_alloc_works);
  EXPECT_EQ(read.local_mem_works, tested.local_mem_works);
  EXPECT_EQ(read.fp16_storage, tested.fp16_storage);
  EXPECT_EQ(read.fp16_arithmetic_note, tested.fp16_arithmetic_note);
  second.value().reset();

  // A damaged cache file is not trusted: the tests run again and say why.
  for (const auto& entry : std::filesystem::directory_iterator(cache)) {
    std::ofstream(entry.path(), std::ios::binary) << "retrograd-opencl-capabilities 1\nfor something else\n";
  }
  auto third = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_TRUE(contains(third.value()->capabilities().source, "the cache was not used")) << third.value()->capabilities().source;
  EXPECT_EQ(third.value()->capabilities().test_bytes, start);
  third.value().reset();
#if !defined(_WIN32)
  // The cache file a link (to /dev/zero, or to a file of the user's): tested again, nothing
  // written through it, the link left.
  std::string path;
  for (const auto& entry : std::filesystem::directory_iterator(cache)) path = entry.path().string();
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/zero", path);
  auto fourth = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(fourth.ok()) << fourth.status().message();
  EXPECT_TRUE(contains(fourth.value()->capabilities().source,
                       "not cached: " + path + " is a symbolic link, not a cache file: left as it is"))
      << fourth.value()->capabilities().source;
  EXPECT_TRUE(std::filesystem::is_symlink(path));
  fourth.value().reset();
#endif
  std::filesystem::remove_all(cache);
}

}  // namespace
}  // namespace rg::ocl
