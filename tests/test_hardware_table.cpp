// The published hardware table: the embedded copy parses, every row is matched by the names its
// hardware reports (CPU brand strings, OpenCL device names) and by no other row, and bad CSV is
// refused with its line.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "report/embedded_data.h"
#include "report/hardware_table.h"
#include "report/peak.h"
#include "test_paths.h"

namespace rg {
namespace {

TEST(HardwareTable, TheEmbeddedCopyIsTheSourceFileParsed) {
  std::ifstream file(std::string(retrograd_source_dir) + "/data/hardware_specs.csv", std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  auto embedded = embedded_data("hardware_specs.csv");
  ASSERT_TRUE(embedded.ok()) << embedded.status().message();
  EXPECT_EQ(embedded.value(), text.str());
  const std::vector<HardwareSpec>& table = hardware_table();
  ASSERT_EQ(table.size(), 24u);  // 14 GPUs, 10 CPUs (docs/hardware_specs.md)
  int cpus = 0;
  for (const HardwareSpec& spec : table) {
    cpus += spec.is_cpu();
    EXPECT_GT(spec.fp32_peak_gflops, 0) << spec.device;
    EXPECT_FALSE(spec.sources.empty()) << spec.device;
    if (spec.is_cpu()) {  // the CPU peak is cores x boost clock x flops per cycle, as the table derives it
      EXPECT_NEAR(spec.fp32_peak_gflops, spec.cores * spec.boost_mhz * spec.flops_per_cycle_core / 1000, 0.05)
          << spec.device;
    }
  }
  EXPECT_EQ(cpus, 10);
  EXPECT_FALSE(embedded_data("nothing.csv").ok());
  EXPECT_NE(embedded_data("nothing.csv").status().message().find("hardware_specs.csv"), std::string::npos);
}

// Names as the hardware reports them (CPUID brand strings; OpenCL CL_DEVICE_NAME).
TEST(HardwareTable, ReportedNamesFindTheirRow) {
  const std::vector<std::pair<const char*, const char*>> cpus = {
      {"Intel(R) Core(TM)2 Duo CPU     E8400  @ 3.00GHz", "Intel Core 2 Duo E8400"},
      {"Intel(R) Core(TM)2 CPU          6600  @ 2.40GHz", nullptr},  // E6600's brand string lacks the E
      {"Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz", "Intel Core 2 Quad Q6600"},
      {"AMD Athlon(tm) 64 X2 Dual Core Processor 4200+", "AMD Athlon 64 X2 4200+"},
      {"AMD Athlon(tm) II X2 250 Processor", "AMD Athlon II X2 250"},
      {"AMD Athlon(tm) 7750 Dual-Core Processor", "AMD Athlon X2 7750 Black Edition"},
      {"AMD Ryzen 5 3600 6-Core Processor", "AMD Ryzen 5 3600"},
      {"AMD Ryzen 5 3600X 6-Core Processor", nullptr},  // another part
      {"Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", "Intel Core i7-8650U"},
      {"Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz", "Intel Core i5-8250U"},
      {"AMD EPYC 7763 64-Core Processor", "AMD EPYC 7763"},
      {"AMD EPYC", nullptr},  // this VM's: no model number, no guess
  };
  for (const auto& [name, want] : cpus) {
    const HardwareSpec* got = match_hardware(hardware_table(), name, true);
    EXPECT_EQ(got ? got->device : "none", want ? want : "none") << name;
  }
  const std::vector<std::pair<const char*, const char*>> gpus = {
      {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"},
      {"NVIDIA H100 PCIe", "NVIDIA H100 PCIe 80GB"},
      {"NVIDIA H200", "NVIDIA H200 SXM 141GB"},
      {"NVIDIA GeForce GTX 1060 6GB", "NVIDIA GeForce GTX 1060 6GB"},
      {"NVIDIA GeForce MX150", "NVIDIA GeForce MX150 (N17S-G1, 25 W)"},
      {"NVIDIA GeForce GT 1030", "NVIDIA GeForce GT 1030 (GDDR5)"},
      {"Tesla T4", "NVIDIA Tesla T4"},
      {"AMD Radeon RX 6500 XT", "AMD Radeon RX 6500 XT"},
      {"GeForce GTX 460", "NVIDIA GeForce GTX 460 1GB"},
      {"GeForce 9600 GT", "NVIDIA GeForce 9600 GT (512 MB)"},
      {"NVIDIA GeForce RTX 2060", nullptr},  // the desktop part is not the table's laptop one
      {"pthread-skylake-avx512-AMD EPYC", nullptr},  // PoCL
  };
  for (const auto& [name, want] : gpus) {
    const HardwareSpec* got = match_hardware(hardware_table(), name, false);
    EXPECT_EQ(got ? got->device : "none", want ? want : "none") << name;
  }
  EXPECT_EQ(match_hardware(hardware_table(), "NVIDIA H100 80GB HBM3", true), nullptr);  // not a CPU
}

// The columns parse_hardware_table needs, in the order of the made-up tables below.
constexpr const char* kHeader =
    "match,device,type,architecture,cores,threads,base_clock_mhz,boost_clock_mhz,fp32_peak_gflops_num,"
    "fp32_base_gflops_num,fp32_peak_basis,fp16_gflops,memory,mem_bw_gbs,simd_isa,flops_per_cycle_core,benchmarks,"
    "derived,notes,sources\n";

TEST(HardwareTable, RulesAndAmbiguity) {
  EXPECT_TRUE(hardware_name_matches("h100&hbm3|h100&sxm5", "NVIDIA H100 SXM5"));  // the second alternative
  EXPECT_FALSE(hardware_name_matches("h100&sxm", "NVIDIA H100 SXM5"));            // words match whole
  EXPECT_TRUE(hardware_name_matches("e8400", "E8400"));
  EXPECT_FALSE(hardware_name_matches("e8400", "E84000"));
  EXPECT_FALSE(hardware_name_matches("", "anything"));
  const std::string csv =
      std::string(kHeader) +
      "x1,Part One,GPU,a,,,1000,1500,100,,\"published, \"\"quoted\"\"\",none,1 GB,10.5 (x),,,,,\"two\nlines\",s\n"
      "x1&pro,Part One Pro,GPU,a,,,1000,1500,200,,b,50,1 GB,10,,,,,,s\n";
  auto table = parse_hardware_table(csv, "t.csv");
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_EQ(table.value().size(), 2u);
  EXPECT_EQ(table.value()[0].fp32_peak_basis, "published, \"quoted\"");
  EXPECT_EQ(table.value()[0].notes, "two\nlines");
  EXPECT_EQ(table.value()[0].fp16_gflops, 0);
  EXPECT_EQ(table.value()[0].mem_bw_gbs, 10.5);
  EXPECT_EQ(match_hardware(table.value(), "Part X1 Pro", false), nullptr);  // both rules hold: no guess
  EXPECT_EQ(match_hardware(table.value(), "Part X1", false)->device, "Part One");
}

TEST(HardwareTable, BadCsvNamesTheLineAndTheRule) {
  const std::string header = kHeader;
  const std::string good = "x,P,GPU,a,,,1,1,100,,b,,m,1,,,,,,s\n";
  auto message = [](const std::string& csv) {
    auto parsed = parse_hardware_table(csv, "t.csv");
    return parsed.ok() ? std::string("accepted") : parsed.status().message();
  };
  EXPECT_EQ(message(header + good + "x,P,GPU\n"), "t.csv:3: 3 cells where the header has 20");
  EXPECT_EQ(message(header + good + "x,\"P,GPU\n"), "t.csv:3: a quoted cell is never closed");
  EXPECT_EQ(message(header + "x,P\"x,GPU,a,,,1,1,100,,b,,m,1,,,,,,s\n"), "t.csv:2: a quote inside an unquoted cell");
  EXPECT_EQ(message(header + ",P,GPU,a,,,1,1,100,,b,,m,1,,,,,,s\n"), "t.csv:2: P has no match rule");
  EXPECT_EQ(message(header + "x,P,GPU,a,,,1,1,n/f,,b,,m,1,,,,,,s\n"), "t.csv:2: P has no FP32 peak (fp32_peak_gflops_num)");
  EXPECT_EQ(message("match,device\n"), "t.csv:1: the header has no column 'type'");
  EXPECT_EQ(message(""), "t.csv: no header line");
}

// Peaks: the table's flops per cycle at the clock measured here (or its base clock), the SIMD
// features' for an unlisted CPU, the table's peak for a listed GPU and none for an unlisted one.
TEST(HardwarePeak, FromTheTableTheFeaturesOrNothing) {
  CpuInfo e8400;
  e8400.brand = "Intel(R) Core(TM)2 Duo CPU     E8400  @ 3.00GHz";
  e8400.features.sse2 = e8400.features.ssse3 = e8400.features.sse41 = true;
  PeakFigure peak = cpu_fp32_peak(hardware_table(), e8400, 2, 2000);
  EXPECT_DOUBLE_EQ(peak.gflops, 2 * 2000 * 8 / 1000.0);
  EXPECT_TRUE(peak.from_table);
  EXPECT_EQ(peak.basis, "2 cores x 2000 MHz (measured) x 8 FP32 flops/cycle (table: Intel Core 2 Duo E8400)");
  EXPECT_EQ(peak.source.rfind("data/hardware_specs.csv: Intel Core 2 Duo E8400 (http", 0), 0u) << peak.source;
  peak = cpu_fp32_peak(hardware_table(), e8400, 1, 0);  // no clock read: the table's base clock
  EXPECT_DOUBLE_EQ(peak.gflops, 24.0);
  EXPECT_NE(peak.basis.find("3000 MHz (base clock, table)"), std::string::npos) << peak.basis;

  CpuInfo vm;  // this machine's kind: "AMD EPYC", no model number
  vm.brand = "AMD EPYC";
  vm.features.sse2 = vm.features.avx = vm.features.avx2 = vm.features.fma = true;
  peak = cpu_fp32_peak(hardware_table(), vm, 2, 2596);
  EXPECT_DOUBLE_EQ(peak.gflops, 2 * 2596 * 32 / 1000.0);
  EXPECT_FALSE(peak.from_table);
  EXPECT_EQ(peak.source, "derived here: AMD EPYC is not in data/hardware_specs.csv");
  vm.features.avx2 = vm.features.fma = false;
  EXPECT_DOUBLE_EQ(cpu_fp32_peak(hardware_table(), vm, 1, 1000).gflops, 16.0);
  vm.features.avx = false;
  EXPECT_DOUBLE_EQ(cpu_fp32_peak(hardware_table(), vm, 1, 1000).gflops, 8.0);
  EXPECT_EQ(cpu_fp32_peak(hardware_table(), vm, 1, 0).gflops, 0);  // nothing to derive from

  // AVX-512: two 512-bit FMA units assumed (64), but AMD's Zen 4 and mobile Zen 5 run 512 bits as two halves (32).
  CpuInfo xeon;
  xeon.vendor = "GenuineIntel";
  xeon.brand = "Intel(R) Xeon(R) Unlisted CPU";
  xeon.family = 6;
  xeon.features = vm.features;
  xeon.features.avx = xeon.features.avx2 = xeon.features.fma = xeon.features.avx512f = true;
  peak = cpu_fp32_peak(hardware_table(), xeon, 1, 1000);
  EXPECT_DOUBLE_EQ(peak.gflops, 64.0);
  EXPECT_NE(peak.basis.find("two 512-bit FMA units assumed"), std::string::npos) << peak.basis;
  CpuInfo zen4 = xeon;
  zen4.vendor = "AuthenticAMD";
  zen4.brand = "AMD EPYC";
  zen4.family = 0x19;
  peak = cpu_fp32_peak(hardware_table(), zen4, 1, 1000);
  EXPECT_DOUBLE_EQ(peak.gflops, 32.0);
  EXPECT_NE(peak.basis.find("two 256-bit halves"), std::string::npos) << peak.basis;
  CpuInfo zen5 = zen4;  // full-width units on the desktop and in servers, halves in Ryzen AI 300
  zen5.family = 0x1A;
  EXPECT_DOUBLE_EQ(cpu_fp32_peak(hardware_table(), zen5, 1, 1000).gflops, 64.0);
  zen5.brand = "AMD Ryzen AI Max+ PRO 395";
  EXPECT_DOUBLE_EQ(cpu_fp32_peak(hardware_table(), zen5, 1, 1000).gflops, 64.0);
  zen5.brand = "AMD Ryzen AI 9 HX 370 w/ Radeon 890M";
  peak = cpu_fp32_peak(hardware_table(), zen5, 1, 1000);
  EXPECT_DOUBLE_EQ(peak.gflops, 32.0);
  EXPECT_NE(peak.basis.find("two 256-bit halves"), std::string::npos) << peak.basis;
  CpuInfo tiger = xeon;  // Intel's client AVX-512 cores: one 512-bit FMA unit
  tiger.brand = "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz";
  peak = cpu_fp32_peak(hardware_table(), tiger, 1, 1000);
  EXPECT_DOUBLE_EQ(peak.gflops, 32.0);
  EXPECT_NE(peak.basis.find("one 512-bit FMA unit assumed"), std::string::npos) << peak.basis;
  EXPECT_DOUBLE_EQ(isa_flops_per_cycle(Isa::avx512, tiger), 32);

  peak = gpu_fp32_peak(hardware_table(), "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(peak.gflops, 66900);
  EXPECT_NE(peak.basis.find("(table: NVIDIA H100 SXM5 80GB)"), std::string::npos) << peak.basis;
  peak = gpu_fp32_peak(hardware_table(), "pthread-skylake-avx512-AMD EPYC");
  EXPECT_EQ(peak.gflops, 0);
  EXPECT_EQ(peak.basis, "unknown: pthread-skylake-avx512-AMD EPYC is not in data/hardware_specs.csv");
}

// A level's flops a cycle: its own SIMD width, never above what the core has.
TEST(HardwarePeak, IsaLevelFlopsPerCycleAreCappedByTheCore) {
  CpuInfo xeon;
  xeon.vendor = "GenuineIntel";
  CpuFeatures& f = xeon.features;
  f.sse2 = f.sse3 = f.ssse3 = f.sse41 = f.avx = f.avx2 = f.fma = f.avx512f = true;
  const struct {
    Isa level;
    double flops;
  } xeon_levels[] = {{Isa::reference, 2}, {Isa::sse2, 8},       {Isa::sse3, 8},      {Isa::ssse3, 8},
                     {Isa::sse41, 8},     {Isa::avx, 16},       {Isa::avx2_fma, 32}, {Isa::avx512, 64}};
  static_assert(std::size(xeon_levels) == 8, "every level");
  for (const auto& level : xeon_levels)
    EXPECT_DOUBLE_EQ(isa_flops_per_cycle(level.level, xeon), level.flops) << isa_name(level.level);
  CpuInfo zen4 = xeon;
  zen4.vendor = "AuthenticAMD";
  zen4.family = 0x19;
  EXPECT_DOUBLE_EQ(isa_flops_per_cycle(Isa::avx512, zen4), 32);
  EXPECT_DOUBLE_EQ(isa_flops_per_cycle(Isa::avx2_fma, zen4), 32);
  CpuInfo core2;  // a level above the core's units is capped at the core's figure
  core2.features.sse2 = core2.features.ssse3 = true;
  EXPECT_DOUBLE_EQ(isa_flops_per_cycle(Isa::avx2_fma, core2), 8);
  EXPECT_DOUBLE_EQ(isa_flops_per_cycle(Isa::avx512, core2), 8);
  EXPECT_DOUBLE_EQ(isa_flops_per_cycle(Isa::reference, core2), 2);
}

}  // namespace
}  // namespace rg
