// What a device can do, found by running small kernels (kernels/probe.cl, probe_fp16.cl)
// rather than trusting its flags: fp16 arithmetic, fp16 storage through vload_half /
// vstore_half, the largest single buffer that really holds data, and the local memory a
// kernel can really use.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace rg::ocl {

class Device;

struct Capabilities {
  bool fp16_arithmetic = false;  // a kernel doing half arithmetic (cl_khr_fp16) builds and is exact
  std::string fp16_arithmetic_note;  // how it was found: "exact on N values", or why not
  bool fp16_reported = false;        // cl_khr_fp16 is in the extension list

  bool fp16_storage = false;  // vstore_half_rte / vload_half round-trip bit-exactly
  std::string fp16_storage_note;

  int64_t max_alloc_reported = 0;  // CL_DEVICE_MAX_MEM_ALLOC_SIZE
  int64_t max_alloc_tried = 0;     // where the test started: the reported size, or the cap asked for
  int64_t max_alloc_works = 0;     // the largest buffer allocated, written (a word a page) and read back
  std::string max_alloc_note;      // the first failure, when there was one

  int64_t local_mem_reported = 0;  // CL_DEVICE_LOCAL_MEM_SIZE
  int64_t local_mem_works = 0;     // the largest __local array a kernel used correctly
  std::string local_mem_note;

  // What finding this out cost: the largest buffer the tests held (every page written: host
  // memory, on a device that shares it) and their time; 0 when read from the cache. `source`:
  // "tested now", "tested now; written to PATH" or "read from PATH".
  int64_t test_bytes = 0;
  double test_seconds = 0;
  std::string source;

  // The largest buffer the device account lets one allocation have: what was tested to
  // work, or the reported limit where a capped test never tried beyond the cap.
  int64_t max_buffer_bytes() const;
};

struct CapabilityOptions {
  // Start the allocation test at this many bytes instead of the reported maximum (0: the
  // reported maximum). Tests use a few MiB; `retrograd probe` tries the real limit.
  int64_t max_alloc_test_bytes = 0;
  // --mem-budget: on a device that shares host memory, the allocation test stays within it
  // (and within half the host memory available), whatever the device reports. 0: none.
  int64_t host_budget_bytes = 0;
  // Read and write the results in cache_folder()/opencl-capabilities-<device>-<start>.txt: the
  // same device, driver, probe kernels and starting size need no second test.
  bool cache = true;
};

// Runs every test on `device` (its buffers bypass the device's memory account: nothing else
// is allocated yet), or reads what an earlier run found (options.cache). Only a failure to run
// the tests at all is an error; a capability that does not work is a `false` with its note.
Result<Capabilities> test_capabilities(Device& device, const CapabilityOptions& options);

// Where the allocation test starts on `device`: the reported maximum, capped by
// options.max_alloc_test_bytes and the device's budget; on a device that shares host memory,
// also by options.host_budget_bytes and half the host memory available (rounded down to a
// power of two, so that the cache keeps its key while the free memory moves a little).
int64_t allocation_test_start(Device& device, const CapabilityOptions& options);

// "tested now: a 2.0 GiB buffer at most (every page written), 4.1 s; written to PATH", or
// "read from PATH: nothing tested": what finding the capabilities cost this run.
std::string describe_test_cost(const Capabilities& capabilities);

}  // namespace rg::ocl
