// Shared by the OpenCL test programs (test_opencl: the runtime, devices and buffers;
// test_opencl_ops: the op kernels against the CPU): the devices opened once, skipping without
// one, temp files, uploads and downloads, guarded output buffers and the bit comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "base/memory.h"
#include "base/rng.h"
#include "portable.h"
#include "nn/batch_norm.h"
#include "nn/dropout.h"
#include "nn/pooling.h"
#include "nn/shape_layers.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "ops/loss.h"
#include "ops/pool2d.h"
#include "opencl/activation.h"
#include "opencl/batch_norm.h"
#include "opencl/buffer.h"
#include "opencl/cl_error.h"
#include "opencl/device.h"
#include "opencl/device_choice.h"
#include "opencl/dropout.h"
#include "opencl/elementwise.h"
#include "opencl/fill_copy.h"
#include "opencl/gemm.h"
#include "opencl/im2col.h"
#include "opencl/kernel_args.h"
#include "opencl/kernel_sources.h"
#include "opencl/launch_1d.h"
#include "opencl/loss.h"
#include "opencl/optimizer.h"
#include "opencl/pool.h"
#include "opencl/shape_ops.h"


namespace rg::ocl {
namespace {


// A small graph model of conv branches joined by add and concat (test_opencl_layers_conv,
// test_opencl_fusion): c2's output read by r2 and by the add (so c2 must not take r2 into its
// GEMM: fusion would leave c2's own output unwritten), r1's by c2 and c4, and r4 reading b3 though
// it follows c4.
inline const char* graph_branches_cfg() {
  return "[net]\ninput = 6x6x2\n[conv]\nname = c1\nfilters = 4\nsize = 3\npad = 1\nbias = false\n"
         "[batchnorm]\nname = b1\n[relu]\nname = r1\n[conv]\nname = c2\nfilters = 4\nsize = 3\npad = 1\n"
         "[relu]\nname = r2\n[add]\nname = sum\ninputs = c2, r2\n[batchnorm]\nname = b3\n"
         "[conv]\nname = c4\ninputs = r1\nfilters = 3\nsize = 1\n[relu]\nname = r4\ninputs = b3\n"
         "[concat]\ninputs = r4, c4\n[global_avgpool]\n[dense]\nunits = 10\n";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string temp_dir() {
  static const std::string dir = make_temp_folder("retrograd_opencl_");
  return dir;
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Allocation tests stop at this cap here; `retrograd probe` tries the real limit.
constexpr int64_t kAllocTestCap = int64_t{16} << 20;

struct OpenDevices {
  std::vector<Device*> devices;
  std::vector<std::string> failures;  // devices that exist but did not open
};

// Every OpenCL device, opened once for the whole program and kept until exit (a driver's
// own exit handlers may run before a static destructor would close them).
inline const OpenDevices& open_devices() {
  static const OpenDevices* open = [] {
    auto* result = new OpenDevices;
    auto platforms = list_platforms();
    if (!platforms.ok()) return result;
    for (const PlatformInfo& platform : platforms.value()) {
      for (const DeviceInfo& info : platform.devices) {
        DeviceOptions options;
        options.capability.max_alloc_test_bytes = kAllocTestCap;
        options.capability.cache = false;  // every program tests its devices for itself
        auto device = Device::open(DeviceChoice{true, info.platform_index, info.device_index}, options);
        if (device.ok()) {
          result->devices.push_back(device.take().release());
        } else {
          result->failures.push_back(device.status().message());
        }
      }
    }
    return result;
  }();
  return *open;
}

#define SKIP_WITHOUT_OPENCL()                                                                   \
  do {                                                                                          \
    if (open_devices().devices.empty() && open_devices().failures.empty()) {                    \
      GTEST_SKIP() << "no OpenCL device, so nothing to test: " << opencl_status().message();    \
    }                                                                                           \
  } while (0)

inline std::vector<float> random_floats(Rng& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * rng.uniform_f32();
  return v;
}

template <class T>
Buffer upload_or_die(Device& device, const std::vector<T>& values, const std::string& what) {
  auto buffer = upload(device, values, what);
  RG_CHECK(buffer.ok(), "" << buffer.status().message());
  return buffer.take();
}

template <class T>
std::vector<T> download_all(const Buffer& buffer) {
  auto values = download<T>(buffer, buffer.bytes() / static_cast<int64_t>(sizeof(T)));
  RG_CHECK(values.ok(), "" << values.status().message());
  return values.take();
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every f32 of `buffer` set to NaN, so a kernel that leaves a word unwritten (or a sum that reads
// a stale partial) cannot pass on what an earlier product left there.
inline void poison_f32(const Buffer& buffer) {
  const std::vector<float> nans(static_cast<size_t>(buffer.bytes() / 4), std::numeric_limits<float>::quiet_NaN());
  RG_CHECK(write_buffer(buffer, 0, nans.data(), buffer.bytes()).ok(), "poisoning a buffer");
}
// The device's GEMM scratch (split products' partials) poisoned the same way; none reserved: nothing.
inline void poison_gemm_scratch(Device& device) {
  if (device.gemm_scratch_slot()) poison_f32(*device.gemm_scratch_slot());
}

// Sizes below, at and above the 256-item work-group, and a buffer offset: each output buffer
// has `kGuard` sentinels on each side that no kernel may touch.
const int64_t kSizes[] = {1, 7, 255, 256, 257, 1000};
constexpr int64_t kGuard = 5;
constexpr float kSentinel = -12345.0f;

// A buffer of kGuard sentinels, `values`, kGuard sentinels; its span covers `values`.
struct Guarded {
  Buffer buffer;
  DeviceSpan span;
};
inline Guarded guarded_f32(Device& device, const std::vector<float>& values, const std::string& what) {
  std::vector<float> all(kGuard, kSentinel);
  all.insert(all.end(), values.begin(), values.end());
  all.insert(all.end(), kGuard, kSentinel);
  Guarded g{upload_or_die(device, all, what), {}};
  g.span = g.buffer.f32(kGuard, static_cast<int64_t>(values.size()));
  return g;
}
// The values between the guards; the guards must still be sentinels.
inline std::vector<float> unguard(const Guarded& g) {
  std::vector<float> all = download_all<float>(g.buffer);
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(all[i], kSentinel) << "written before the span";
    EXPECT_EQ(all[all.size() - 1 - i], kSentinel) << "written after the span";
  }
  return std::vector<float>(all.begin() + kGuard, all.end() - kGuard);
}

// Tolerance per op: OpenCL requires + and * on float correctly rounded, and the kernels keep
// FP_CONTRACT off, so axpy, scale, add and relu match the CPU's two roundings bit for bit. A NaN
// that arithmetic makes matches any NaN: IEEE 754 leaves its sign and payload to the hardware
// (NVIDIA's GPUs give their canonical 0x7FFFFFFF where x86 passes the input's NaN on).
inline void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const char* op) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    ASSERT_TRUE(both_nan || same_bits(got[i], want[i])) << op << " element " << i << ": " << got[i] << " want "
                                                        << want[i];
  }
}

}  // namespace
}  // namespace rg::ocl
