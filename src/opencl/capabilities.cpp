// The capability tests: each runs a small kernel (kernels/probe.cl, probe_fp16.cl) or a real
// allocation and checks the result on the host against base/fp16.h's converter.
#include "opencl/capabilities.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "base/files.h"
#include "base/fp16.h"
#include "base/memory.h"
#include "base/serial.h"
#include "base/text_format.h"
#include "opencl/cl_error.h"
#include "opencl/device.h"
#include "opencl/kernel_args.h"
#include "opencl/kernel_sources.h"

namespace rg::ocl {

namespace {

// A raw cl_mem outside the device's account (the tests run before anything is counted).
class RawBuffer {
 public:
  RawBuffer(const Device& device, size_t bytes, cl_int* code)
      : api_(device.api()), mem_(api_.clCreateBuffer(device.context(), CL_MEM_READ_WRITE, bytes, nullptr, code)) {}
  ~RawBuffer() {
    if (mem_ != nullptr) api_.clReleaseMemObject(mem_);
  }
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;
  cl_mem mem() const { return mem_; }

 private:
  const ClApi& api_;
  cl_mem mem_;
};

Status write(const Device& d, cl_mem mem, size_t offset, size_t bytes, const void* host) {
  RG_CL_TRY(d.api(), clEnqueueWriteBuffer, d.queue(), mem, CL_TRUE, offset, bytes, host, 0, nullptr, nullptr);
  return Status();
}
Status read(const Device& d, cl_mem mem, size_t offset, size_t bytes, void* host) {
  RG_CL_TRY(d.api(), clEnqueueReadBuffer, d.queue(), mem, CL_TRUE, offset, bytes, host, 0, nullptr, nullptr);
  return Status();
}
Result<RawBuffer*> make_buffer(const Device& d, size_t bytes, std::vector<std::unique_ptr<RawBuffer>>* keep) {
  cl_int code = CL_SUCCESS;
  auto buffer = std::make_unique<RawBuffer>(d, bytes, &code);
  if (code != CL_SUCCESS) return cl_status("clCreateBuffer", code);
  keep->push_back(std::move(buffer));
  return keep->back().get();
}

// One work-item per element, in groups of at most 64.
Status run_1d(Device& device, const Kernel& kernel, size_t n) {
  const size_t local = std::min<size_t>(64, kernel.max_work_group_size);
  const size_t global = (n + local - 1) / local * local;
  RG_ASSIGN(Event event, device.run(kernel, 1, &global, &local));
  return event.wait();
}

bool same_half(uint16_t got, uint16_t want) {
  const bool got_nan = (got & 0x7c00) == 0x7c00 && (got & 0x03ff) != 0;
  const bool want_nan = (want & 0x7c00) == 0x7c00 && (want & 0x03ff) != 0;
  return want_nan ? got_nan : got == want;  // a NaN's payload and sign are free
}

std::string hex16(uint16_t bits) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%04x", bits);
  return text;
}

// fp16 storage: every rounding case (ties both ways, overflow to Inf, subnormals, NaN).
Status test_fp16_storage(Device& device, Capabilities* caps) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 1.0f / 3.0f, 65504.0f, 65519.0f, 65520.0f, -65536.0f,
                          1e-5f, -6.1e-5f, 5.9604645e-8f, 2.9802322e-8f, 4.4703484e-8f, 1e-10f,
                          1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f, 1000.5f, 2049.0f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  uint32_t state = 12345;
  for (int i = 0; i < 233; ++i) {  // normal floats from 2^-30 to 2^20, both signs
    state = state * 1664525u + 1013904223u;
    const float mantissa = 1.0f + static_cast<float>(state >> 9) / 8388608.0f;
    x.push_back((state & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, static_cast<int>(state % 51) - 30));
  }
  const cl_uint n = static_cast<cl_uint>(x.size());
  RG_ASSIGN(const Kernel* kernel, device.kernel("probe.cl", "f16_storage_probe"));
  std::vector<std::unique_ptr<RawBuffer>> keep;
  RG_ASSIGN(RawBuffer * x_buffer, make_buffer(device, n * 4, &keep));
  RG_ASSIGN(RawBuffer * h_buffer, make_buffer(device, n * 2, &keep));
  RG_ASSIGN(RawBuffer * back_buffer, make_buffer(device, n * 4, &keep));
  RG_TRY(write(device, x_buffer->mem(), 0, n * 4, x.data()));
  RG_TRY(set_kernel_args(device, *kernel, n, x_buffer->mem(), h_buffer->mem(), back_buffer->mem()));
  RG_TRY(run_1d(device, *kernel, n));
  std::vector<uint16_t> h(n);
  std::vector<float> back(n);
  RG_TRY(read(device, h_buffer->mem(), 0, n * 2, h.data()));
  RG_TRY(read(device, back_buffer->mem(), 0, n * 4, back.data()));
  for (cl_uint i = 0; i < n; ++i) {
    const uint16_t want = f32_to_f16(x[i]);
    const float want_back = f16_to_f32(h[i]);
    const bool back_ok = std::isnan(want_back) ? std::isnan(back[i]) : std::memcmp(&back[i], &want_back, 4) == 0;
    if (!same_half(h[i], want) || !back_ok) {
      caps->fp16_storage_note = "vstore_half_rte(" + std::to_string(x[i]) + ") gave " + hex16(h[i]) + ", want " +
                                hex16(want) + "; vload_half gave " + std::to_string(back[i]);
      return Status();
    }
  }
  caps->fp16_storage = true;
  caps->fp16_storage_note = "bit-exact on " + std::to_string(n) + " values (ties, overflow, subnormals, Inf, NaN)";
  return Status();
}

// fp16 arithmetic: out = a * b + a in half. a, b are k/16 with |k| <= 128: the f32 product
// is exact, so rounding it to half is the correctly rounded half product, and the f32 sum of
// that and a (multiples of 1/256 below 2^7) is exact too: the expected bits need no half ALU.
Status test_fp16_arithmetic(Device& device, Capabilities* caps) {
  auto kernel = device.kernel("probe_fp16.cl", "f16_arithmetic_probe");
  if (!kernel.ok()) {
    std::string why = kernel.status().message();
    const size_t log = why.find("build log:\n");
    // The first line of the log says why (usually: half or the extension is unknown).
    if (log != std::string::npos) why = why.substr(log + 11, why.find('\n', log + 11) - (log + 11));
    caps->fp16_arithmetic_note = std::string("a kernel using half does not build") +
                                 (caps->fp16_reported ? "" : " (cl_khr_fp16 is not listed)") + ": " + why;
    return Status();
  }
  std::vector<uint16_t> a, b, want;
  uint32_t state = 777;
  for (int i = 0; i < 256; ++i) {
    state = state * 1664525u + 1013904223u;
    const float x = static_cast<float>(static_cast<int>(state >> 16) % 257 - 128) / 16.0f;
    const float y = static_cast<float>(static_cast<int>(state & 0xffff) % 257 - 128) / 16.0f;
    a.push_back(f32_to_f16(x));
    b.push_back(f32_to_f16(y));
    const float product = f16_to_f32(f32_to_f16(x * y));
    want.push_back(f32_to_f16(product + x));
  }
  const cl_uint n = static_cast<cl_uint>(a.size());
  std::vector<std::unique_ptr<RawBuffer>> keep;
  RG_ASSIGN(RawBuffer * a_buffer, make_buffer(device, n * 2, &keep));
  RG_ASSIGN(RawBuffer * b_buffer, make_buffer(device, n * 2, &keep));
  RG_ASSIGN(RawBuffer * out_buffer, make_buffer(device, n * 2, &keep));
  RG_TRY(write(device, a_buffer->mem(), 0, n * 2, a.data()));
  RG_TRY(write(device, b_buffer->mem(), 0, n * 2, b.data()));
  RG_TRY(set_kernel_args(device, *kernel.value(), n, a_buffer->mem(), b_buffer->mem(), out_buffer->mem()));
  RG_TRY(run_1d(device, *kernel.value(), n));
  std::vector<uint16_t> out(n);
  RG_TRY(read(device, out_buffer->mem(), 0, n * 2, out.data()));
  for (cl_uint i = 0; i < n; ++i) {
    if (out[i] != want[i]) {
      const float x = f16_to_f32(a[i]), y = f16_to_f32(b[i]);
      // x * y + x is exact in f32 here: one rounding to half at the end is what a device that
      // does half arithmetic in f32 gives (NVIDIA's H100 does, unlisted cl_khr_fp16 and all).
      const bool rounded_once = out[i] == f32_to_f16(x * y + x);
      caps->fp16_arithmetic_note = "builds, but " + std::to_string(x) + " * " + std::to_string(y) + " + " +
                                   std::to_string(x) + " gave " + hex16(out[i]) + ", want " + hex16(want[i]) +
                                   (rounded_once ? " (the product was not rounded to half: f32 arithmetic)" : "");
      return Status();
    }
  }
  caps->fp16_arithmetic = true;
  caps->fp16_arithmetic_note = "exact on " + std::to_string(n) + " products and sums" +
                               (caps->fp16_reported ? "" : " (though cl_khr_fp16 is not listed)");
  return Status();
}

// As kernels/probe.cl's allocation_probe_value.
uint32_t allocation_probe_value(uint64_t w, uint32_t seed) {
  return static_cast<uint32_t>(w) ^ (static_cast<uint32_t>(w >> 32) * 0x9e3779b9u) ^ seed;
}

// One try of the largest-allocation test: write a word in every 4 KiB page of `bytes` with a
// kernel (64-bit indices), check words sampled across the buffer (both sides of 2^32 words
// when it is that large), then write and read back a marker at its last word through the
// host copies.
Status try_allocation(Device& device, size_t bytes) {
  RG_ASSIGN(const Kernel* kernel, device.kernel("probe.cl", "allocation_probe_fill"));
  cl_int code = CL_SUCCESS;
  RawBuffer buffer(device, bytes, &code);
  RG_TRY(cl_status("clCreateBuffer", code));
  const cl_ulong words = bytes / 4;
  const cl_uint seed = 0xa55aa55au;
  RG_TRY(set_kernel_args(device, *kernel, buffer.mem(), words, seed));
  // One item per page up to 2^20 items (4 GiB), in groups of up to 256; past that they loop.
  const cl_ulong pages = (words + 1023) / 1024;
  const size_t local = std::min<size_t>(256, kernel->max_work_group_size);
  const size_t items = static_cast<size_t>(std::min<cl_ulong>(pages, cl_ulong{1} << 20));
  const size_t global = (items + local - 1) / local * local;
  RG_ASSIGN(Event filled, device.run(*kernel, 1, &global, &local));
  RG_TRY(filled.wait());
  const uint64_t two32 = uint64_t{1} << 32;
  auto page_start = [](uint64_t w) { return w / 1024 * 1024; };
  const uint64_t samples[] = {0, page_start(words / 3), page_start(words / 2), two32 - 1024, two32,
                              page_start(words - 1), words - 1};
  for (uint64_t w : samples) {
    if (w >= words) continue;
    cl_uint got = 0;
    RG_TRY(read(device, buffer.mem(), static_cast<size_t>(w * 4), 4, &got));
    if (got != allocation_probe_value(w, seed)) {
      return Status::error("read back wrong data at word " + std::to_string(w) + " of " + std::to_string(words));
    }
  }
  const cl_uint marker = 0x600dcafeu;
  cl_uint back = 0;
  RG_TRY(write(device, buffer.mem(), bytes - 4, 4, &marker));
  RG_TRY(read(device, buffer.mem(), bytes - 4, 4, &back));
  if (back != marker) return Status::error("a marker written at byte " + std::to_string(bytes - 4) + " read back wrong");
  return Status();
}

Status test_max_allocation(Device& device, const CapabilityOptions& options, Capabilities* caps) {
  constexpr int64_t kSmallest = int64_t{1} << 20;  // below 1 MiB the device is not worth using
  int64_t bytes = allocation_test_start(device, options);
  caps->max_alloc_tried = bytes;
  for (; bytes >= std::min(kSmallest, caps->max_alloc_tried) && bytes > 0; bytes = bytes / 2 / 4 * 4) {
    caps->test_bytes = std::max(caps->test_bytes, bytes);
    const Status tried = try_allocation(device, static_cast<size_t>(bytes));
    if (tried.ok()) {
      caps->max_alloc_works = bytes;
      return Status();
    }
    if (caps->max_alloc_note.empty()) caps->max_alloc_note = format_bytes(bytes) + ": " + tried.message();
  }
  return Status::error("no buffer of " + format_bytes(kSmallest) + " or more could be allocated, written and read back (" +
                       caps->max_alloc_note + ")");
}

// Runs local_memory_probe with a __local array of `bytes` and checks every item's sum.
Status try_local_memory(Device& device, const Kernel& kernel, cl_mem sums_buffer, size_t items, int64_t bytes) {
  const cl_uint words = static_cast<cl_uint>(bytes / 4);
  RG_TRY(set_kernel_args(device, kernel, words, LocalBytes{static_cast<size_t>(bytes)}, sums_buffer));
  RG_ASSIGN(Event event, device.run(kernel, 1, &items, &items));
  RG_TRY(event.wait());
  std::vector<cl_uint> sums(items);
  RG_TRY(read(device, sums_buffer, 0, items * 4, sums.data()));
  for (size_t l = 0; l < items; ++l) {
    cl_uint want = 0;
    for (cl_uint w = static_cast<cl_uint>(l); w < words; w += static_cast<cl_uint>(items)) {
      want += (words - 1u - w) * 2654435761u + 12345u;
    }
    if (sums[l] != want) return Status::error("work-item " + std::to_string(l) + " read wrong values");
  }
  return Status();
}

// Halves from the reported size until a size works (the runtime may keep some local memory
// for itself: NVIDIA's H100 reports 48 KiB and refuses a 48 KiB array), then bisects between
// that and the smallest failure to the nearest KiB.
Status test_local_memory(Device& device, Capabilities* caps) {
  RG_ASSIGN(const Kernel* kernel, device.kernel("probe.cl", "local_memory_probe"));
  const size_t items = std::min<size_t>(64, kernel->max_work_group_size);
  std::vector<std::unique_ptr<RawBuffer>> keep;
  RG_ASSIGN(RawBuffer * sums, make_buffer(device, items * 4, &keep));
  auto works = [&](int64_t bytes) {
    const Status status = try_local_memory(device, *kernel, sums->mem(), items, bytes);
    if (!status.ok() && caps->local_mem_note.empty()) caps->local_mem_note = format_bytes(bytes) + ": " + status.message();
    return status.ok();
  };
  int64_t failed = 0;
  for (int64_t bytes = caps->local_mem_reported / 4 * 4; bytes >= 1024; bytes = bytes / 2 / 4 * 4) {
    if (works(bytes)) {
      caps->local_mem_works = bytes;
      break;
    }
    failed = bytes;
  }
  if (caps->local_mem_works == 0 || failed == 0) return Status();
  int64_t lo = caps->local_mem_works, hi = failed;  // lo works, hi does not
  while (hi - lo > 1024) {
    const int64_t mid = (lo + hi) / 2 / 4 * 4;
    (works(mid) ? lo : hi) = mid;
  }
  caps->local_mem_works = lo;
  return Status();
}

// The cache file: what the tests found, for this device, driver, probe kernels and start size.
constexpr const char* kCacheMagic = "retrograd-opencl-capabilities 1";

std::string capability_identity(const Device& device) {
  return measured_identity(device.info().name, device.info().driver_version, {"probe.cl", "probe_fp16.cl"});
}

std::string cache_path(const Device& device, int64_t start) {
  return join_path(cache_folder(), "opencl-capabilities-" + fnv1a_hex(capability_identity(device)) + "-" + std::to_string(start) +
                                       ".txt");
}

std::string cache_text(const Device& device, const Capabilities& c) {
  std::ostringstream out;
  out << kCacheMagic << "\nfor " << capability_identity(device) << "\nmax_alloc " << c.max_alloc_reported << " "
      << c.max_alloc_tried << " " << c.max_alloc_works << "\nlocal_mem " << c.local_mem_reported << " "
      << c.local_mem_works << "\nfp16 " << c.fp16_reported << " " << c.fp16_storage << " " << c.fp16_arithmetic
      << "\nmax_alloc_note " << c.max_alloc_note << "\nlocal_mem_note " << c.local_mem_note
      << "\nfp16_storage_note " << c.fp16_storage_note << "\nfp16_arithmetic_note " << c.fp16_arithmetic_note << "\n";
  return out.str();
}

// The cache file's capabilities, when it was written for this device and start; else why not.
Result<Capabilities> parse_cache(const Device& device, int64_t start, const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string magic, made_for, max_alloc, local_mem, fp16;
  Capabilities c;
  const bool lines = read_line(in, magic) && read_line(in, made_for) && read_line(in, max_alloc) &&
                     read_line(in, local_mem) && read_line(in, fp16);
  if (!lines || magic != kCacheMagic) return Status::error(path + ": not a capabilities cache file");
  if (made_for != "for " + capability_identity(device)) return Status::error(path + ": made for another device, driver or kernel");
  std::istringstream a(max_alloc), l(local_mem), f(fp16);
  std::string key_a, key_l, key_f;
  const bool numbers = (a >> key_a >> c.max_alloc_reported >> c.max_alloc_tried >> c.max_alloc_works) && key_a == "max_alloc" &&
                       (l >> key_l >> c.local_mem_reported >> c.local_mem_works) && key_l == "local_mem" &&
                       (f >> key_f >> c.fp16_reported >> c.fp16_storage >> c.fp16_arithmetic) && key_f == "fp16";
  if (!numbers || c.max_alloc_tried != start || c.max_alloc_reported != device.info().max_alloc_bytes ||
      c.max_alloc_works <= 0 || c.max_alloc_works > start) {
    return Status::error(path + ": its figures do not fit this device");
  }
  for (std::string* note : {&c.max_alloc_note, &c.local_mem_note, &c.fp16_storage_note, &c.fp16_arithmetic_note}) {
    std::string line;
    if (!read_line(in, line)) return Status::error(path + ": truncated");
    const size_t space = line.find(' ');
    *note = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return c;
}

Result<Capabilities> run_tests(Device& device, const CapabilityOptions& options) {
  const auto began = std::chrono::steady_clock::now();
  Capabilities caps;
  caps.max_alloc_reported = device.info().max_alloc_bytes;
  caps.local_mem_reported = device.info().local_mem_bytes;
  caps.fp16_reported = device.info().has_extension("cl_khr_fp16");
  // A device with no usable buffer is an error; a failure inside another test only marks that
  // capability missing, with the error as its note.
  RG_TRY(test_max_allocation(device, options, &caps));
  if (Status s = test_fp16_storage(device, &caps); !s.ok()) caps.fp16_storage_note = s.message();
  if (Status s = test_fp16_arithmetic(device, &caps); !s.ok()) caps.fp16_arithmetic_note = s.message();
  if (Status s = test_local_memory(device, &caps); !s.ok()) caps.local_mem_note = s.message();
  RG_TRY(device.finish());
  caps.test_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  caps.source = "tested now";
  return caps;
}

}  // namespace

int64_t allocation_test_start(Device& device, const CapabilityOptions& options) {
  int64_t bytes = device.info().max_alloc_bytes;
  auto cap = [&bytes](int64_t limit) {
    if (limit > 0) bytes = std::min(bytes, limit);
  };
  cap(options.max_alloc_test_bytes);
  cap(device.memory().budget_bytes());
  if (device.info().shares_host_memory()) {
    cap(options.host_budget_bytes);
    const int64_t half_free = available_host_memory().bytes / 2;
    if (half_free > 0) {
      int64_t power = int64_t{1} << 20;
      while (power * 2 <= half_free) power *= 2;
      cap(power);
    }
  }
  return bytes / 4 * 4;
}

std::string describe_test_cost(const Capabilities& c) {
  if (c.test_bytes == 0) return c.source + ": nothing tested";
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", c.test_seconds);
  const std::size_t tail = c.source.find(';');
  return c.source.substr(0, tail) + ": a " + format_bytes(c.test_bytes) + " buffer at most (every page written), " +
         seconds + (tail == std::string::npos ? "" : c.source.substr(tail));
}

int64_t Capabilities::max_buffer_bytes() const {
  if (max_alloc_works <= 0) return max_alloc_reported;     // untested
  if (max_alloc_works < max_alloc_tried) return max_alloc_works;  // the try failed: what worked
  if (max_alloc_tried < max_alloc_reported) return max_alloc_reported;  // capped test: not disproved
  return max_alloc_works;
}

Result<Capabilities> test_capabilities(Device& device, const CapabilityOptions& options) {
  const int64_t start = allocation_test_start(device, options);
  const std::string path = cache_path(device, start);
  std::string cache_note;
  if (options.cache) {
    constexpr int64_t kMaxCacheBytes = int64_t{64} << 10;  // a few lines: never a large file read whole
    if (auto bytes = read_file_bytes(path, "a capabilities cache", kMaxCacheBytes); bytes.ok()) {
      auto cached = parse_cache(device, start, std::string(bytes.value().begin(), bytes.value().end()), path);
      if (cached.ok()) {
        cached.value().source = "read from " + path;
        return cached;
      }
      cache_note = "; the cache was not used: " + cached.status().message();
    }
  }
  RG_ASSIGN(Capabilities caps, run_tests(device, options));
  caps.source += cache_note;
  if (!options.cache) return caps;
  const std::string text = cache_text(device, caps);
  const Status made = write_cache_file(path, std::vector<uint8_t>(text.begin(), text.end()));
  caps.source += made.ok() ? "; written to " + path : "; not cached: " + made.message();
  return caps;
}

}  // namespace rg::ocl
