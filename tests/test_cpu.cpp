// CPU detection and the probe's system facts, checked against this machine: our CPUID
// flags must agree with each other and with the kernel's view in /proc/cpuinfo.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cpu/cpuid.h"
#include "cpu/isa.h"
#include "report/sysinfo.h"

namespace rg {
namespace {

// The words of the first "flags" line of /proc/cpuinfo; empty if there is none.
std::set<std::string> proc_cpuinfo_flags() {
  std::set<std::string> flags;
  std::ifstream file("/proc/cpuinfo");
  std::string line;
  while (file && std::getline(file, line)) {
    if (line.compare(0, 5, "flags") != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    std::string word;
    while (words >> word) flags.insert(word);
    break;
  }
  return flags;
}

std::set<std::string> words_of(const std::string& text) {
  std::set<std::string> words;
  std::istringstream stream(text);
  std::string word;
  while (stream >> word) words.insert(word);
  return words;
}

#if defined(__x86_64__) || defined(_M_X64)
TEST(Cpu, Sse2IsAlwaysThereOnX86_64) {
  const CpuInfo cpu = detect_cpu();
  EXPECT_TRUE(cpu.features.sse2);
  EXPECT_FALSE(cpu.brand.empty());
  EXPECT_GT(cpu.family, 0);
}
#endif

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
TEST(Cpu, VendorIsTwelveCharacters) {
  const CpuInfo cpu = detect_cpu();
  EXPECT_EQ(cpu.vendor.size(), 12u) << "vendor '" << cpu.vendor << "'";
}

TEST(Cpu, BrandHasNoPaddingLeft) {
  const std::string brand = detect_cpu().brand;
  if (brand.empty()) GTEST_SKIP() << "no brand string leaves on this CPU";
  EXPECT_NE(brand.front(), ' ');
  EXPECT_NE(brand.back(), ' ');
  EXPECT_EQ(brand.find('\0'), std::string::npos);
}
#else
TEST(Cpu, EmptyOffX86) {
  const CpuInfo cpu = detect_cpu();
  EXPECT_TRUE(cpu.vendor.empty());
  EXPECT_EQ(features_string(cpu.features), "");
}
#endif

// "a implies b" is !a || b; each line names the pair that broke.
TEST(Cpu, FeaturesImplyTheirPrerequisites) {
  const CpuFeatures f = detect_cpu().features;
  EXPECT_TRUE(!f.avx512f || f.os_saves_avx512) << "avx512f without OS support";
  EXPECT_TRUE(!f.avx512f || f.avx) << "avx512f without avx";
  for (const bool extension : {f.avx512bw, f.avx512dq, f.avx512vl, f.avx512vnni})
    EXPECT_TRUE(!extension || f.avx512f) << "an AVX-512 extension without avx512f: '" << features_string(f) << "'";
  EXPECT_TRUE(!f.os_saves_avx512 || f.os_saves_avx) << "AVX-512 state saved without AVX state";
  EXPECT_TRUE(!f.avx2 || f.avx) << "avx2 without avx";
  EXPECT_TRUE(!f.fma || f.avx) << "fma without avx";
  EXPECT_TRUE(!f.f16c || f.avx) << "f16c without avx";
  EXPECT_TRUE(!f.avx || f.os_saves_avx) << "avx without OS support";
  EXPECT_TRUE(!f.sse42 || f.sse41) << "sse4.2 without sse4.1";
  EXPECT_TRUE(!f.sse41 || f.ssse3) << "sse4.1 without ssse3";
  EXPECT_TRUE(!f.ssse3 || f.sse3) << "ssse3 without sse3";
  EXPECT_TRUE(!f.sse3 || f.sse2) << "sse3 without sse2";
}

TEST(Cpu, FeaturesStringListsFlagsInOrder) {
  CpuFeatures f;
  EXPECT_EQ(features_string(f), "");
  f.sse2 = f.sse3 = f.ssse3 = true;
  EXPECT_EQ(features_string(f), "sse2 sse3 ssse3");
  f.avx = f.avx2 = f.fma = f.f16c = f.avx512f = f.sse41 = f.sse42 = f.popcnt = true;
  EXPECT_EQ(features_string(f), "sse2 sse3 ssse3 sse4.1 sse4.2 popcnt avx avx2 fma f16c avx512f");
  f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vnni = true;
  EXPECT_EQ(features_string(f),
            "sse2 sse3 ssse3 sse4.1 sse4.2 popcnt avx avx2 fma f16c avx512f avx512bw avx512dq avx512vl avx512vnni");
}

// The kernel clears AVX flags it does not save state for, so its list matches our usable set.
TEST(Cpu, FeaturesMatchProcCpuinfo) {
  if (std::getenv("RETROGRAD_QEMU_CPU") != nullptr) GTEST_SKIP() << "under qemu-user /proc/cpuinfo is the host's";
  const std::set<std::string> flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags here";
  const std::set<std::string> ours = words_of(features_string(detect_cpu().features));
  const struct {
    const char* kernel;  // /proc/cpuinfo spelling ("pni" is Prescott New Instructions, i.e. SSE3)
    const char* ours;
  } pairs[] = {
      {"sse2", "sse2"}, {"pni", "sse3"},       {"ssse3", "ssse3"}, {"sse4_1", "sse4.1"},
      {"sse4_2", "sse4.2"}, {"popcnt", "popcnt"}, {"avx", "avx"}, {"avx2", "avx2"},
      {"fma", "fma"},   {"f16c", "f16c"},      {"avx512f", "avx512f"}, {"avx512bw", "avx512bw"},
      {"avx512dq", "avx512dq"}, {"avx512vl", "avx512vl"}, {"avx512_vnni", "avx512vnni"},
  };
  for (const auto& pair : pairs) {
    EXPECT_EQ(flags.count(pair.kernel) == 1, ours.count(pair.ours) == 1)
        << pair.kernel << " in /proc/cpuinfo vs " << pair.ours << " in '" << features_string(detect_cpu().features)
        << "'";
  }
}

// tools/cross_test.sh runs the i686 suite through qemu as a Core 2 or an Athlon 64, naming the
// model in RETROGRAD_QEMU_CPU: a run that was not emulated (Meson starting the program directly,
// as it will for i686 on x86-64 unless told otherwise) must not pass for one.
TEST(Cpu, AnEmulatedOldCpuHasNoSse41OrAvx) {
  const char* model = std::getenv("RETROGRAD_QEMU_CPU");
  if (model == nullptr) GTEST_SKIP() << "not run as an old CPU (RETROGRAD_QEMU_CPU is not set)";
  const CpuFeatures f = detect_cpu().features;
  EXPECT_FALSE(f.sse41 || f.avx) << "RETROGRAD_QEMU_CPU=" << model << " but this CPU has '" << features_string(f)
                                 << "': the program did not run under qemu";
}

// The avx512 level (x86-64-v4) needs AVX-512F, BW, DQ and VL, the OS saving ZMM state, and
// everything avx2 needs; RETROGRAD_ISA=avx512 is refused, naming the best level, where one is missing.
TEST(Isa, Avx512NeedsFBwDqVlAndTheOsState) {
  CpuFeatures f;
  f.sse2 = f.sse3 = f.ssse3 = f.sse41 = f.sse42 = f.popcnt = f.avx = f.avx2 = f.fma = f.os_saves_avx = true;
  EXPECT_EQ(best_supported_isa(f), Isa::avx2_fma);
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.os_saves_avx512 = true;
  EXPECT_EQ(best_supported_isa(f), Isa::avx512);
  EXPECT_EQ(choose_isa(f, "avx512").value().chosen, Isa::avx512);
  EXPECT_EQ(choose_isa(f, "avx2").value().chosen, Isa::avx2_fma);
  for (bool CpuFeatures::*flag : {&CpuFeatures::avx512f, &CpuFeatures::avx512bw, &CpuFeatures::avx512dq,
                                  &CpuFeatures::avx512vl, &CpuFeatures::os_saves_avx512, &CpuFeatures::fma}) {
    CpuFeatures lacking = f;
    lacking.*flag = false;
    EXPECT_FALSE(isa_supported(Isa::avx512, lacking)) << features_string(lacking);
    const auto refused = choose_isa(lacking, "avx512");
    ASSERT_FALSE(refused.ok()) << features_string(lacking);
    EXPECT_EQ(refused.status().message(), std::string("RETROGRAD_ISA=avx512: this CPU supports up to ") +
                                              isa_name(best_supported_isa(lacking)));
  }
  EXPECT_EQ(isa_from_name("avx512").value(), Isa::avx512);
  EXPECT_STREQ(isa_name(Isa::avx512), "avx512");
  EXPECT_EQ(all_isas().back(), Isa::avx512);
}

TEST(SystemInfo, CountsCpusAndMemory) {
  const SystemInfo info = read_system_info();
  EXPECT_GE(info.logical_cpus, 1);
  EXPECT_GE(info.physical_cores, 0);
  EXPECT_LE(info.physical_cores, info.logical_cpus);
  EXPECT_GE(info.cpu_mhz, 0.0);
#if defined(__linux__)
  EXPECT_GT(info.mem_total_bytes, 0);
  EXPECT_GT(info.mem_available_bytes, 0);
  EXPECT_LE(info.mem_available_bytes, info.mem_total_bytes);
  EXPECT_EQ(info.os.compare(0, 6, "Linux "), 0) << info.os;
#endif
}

TEST(SystemInfo, HasAnL1DataCacheWhenSysListsCaches) {
  std::ifstream level("/sys/devices/system/cpu/cpu0/cache/index0/level");
  if (!level) GTEST_SKIP() << "no cache information in /sys";
  const SystemInfo info = read_system_info();
  ASSERT_FALSE(info.caches.empty());
  EXPECT_EQ(info.caches.front().level, 1);
  EXPECT_EQ(info.caches.front().type, "data");
  EXPECT_GE(info.caches.front().size_bytes, 1024);
  for (const CacheLevel& cache : info.caches) {
    EXPECT_GE(cache.level, 1);
    EXPECT_GT(cache.size_bytes, 0);
    EXPECT_TRUE(cache.type == "data" || cache.type == "instruction" || cache.type == "unified") << cache.type;
  }
}

TEST(SystemInfo, FormatNamesTheCpuAndItsFeatures) {
  const SystemInfo info = read_system_info();
  const std::string text = format_system_info(info);
  EXPECT_NE(text.find(info.cpu.brand), std::string::npos) << text;
  EXPECT_NE(text.find("features"), std::string::npos) << text;
  EXPECT_NE(text.find(features_string(info.cpu.features)), std::string::npos) << text;
  for (const char* name : {"cpu ", "caches ", "memory ", "os "}) EXPECT_NE(text.find(name), std::string::npos) << name;
  EXPECT_EQ(text.back(), '\n');
}

TEST(SystemInfo, FormatSaysUnknownForAnEmptyRecord) {
  SystemInfo info;
  const std::string text = format_system_info(info);
  EXPECT_NE(text.find("cpu        unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("features   unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("caches     unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("os         unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("total unknown"), std::string::npos) << text;
}

TEST(SystemInfo, FormatPrintsWholeCacheSizesWithoutDecimals) {
  SystemInfo info;
  info.caches.push_back({1, "data", 32 * 1024, 64, 1});
  info.caches.push_back({1, "instruction", 64 * 1024, 64, 1});
  info.caches.push_back({2, "unified", 512 * 1024, 64, 2});
  info.caches.push_back({3, "unified", 32 * 1024 * 1024, 64, 16});
  info.mem_total_bytes = int64_t{3} << 30;
  info.mem_available_bytes = int64_t{1} << 30;
  const std::string text = format_system_info(info);
  EXPECT_NE(text.find("caches     L1d 32 KiB, L1i 64 KiB, L2 512 KiB, L3 32 MiB\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memory     3.0 GiB total, 1.0 GiB available\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace rg
