// retrograd's f32 GEMM against OpenBLAS cblas_sgemm, and the thread pool's fork-join cost.
//
// Built and run by bench/gemm_vs_openblas.sh (direct g++ line, links build/libretrograd_core.a
// and OpenBLAS). Two modes:
//
//   gemm_bench compare --threads T [--isas LIST] [--sizes LIST] [--ref-max N] [--mlp 0|1]
//                      [--reps R] [--min-time S]
//     For each case (square sizes, then the MLP's shapes) and each repetition: OpenBLAS once,
//     then ours at each ISA level, so the two sides alternate and share the machine's drift.
//     A repetition repeats the call enough times to run >= --min-time seconds; GFLOP/s is
//     2mnk / (seconds per call). Every measured result is checked against OpenBLAS's (loose
//     relative tolerance): a mismatch is reported and the process exits 1.
//     The OpenBLAS thread count must already be in OPENBLAS_NUM_THREADS (read at load time);
//     it is also set with openblas_set_num_threads and checked with openblas_get_num_threads.
//
//   gemm_bench forkjoin [--isas LIST] [--reps R] [--min-time S] [--part trivial|gemm|all]
//
//   Both take --quiet-max S: before each repetition wait up to S seconds for a 0.5 s window in
//   which other processes use < 0.1 cores, and measure a repetition again (up to 3 times) when
//   they used > 0.15 cores during it. The per-case load and the number of redone repetitions
//   are reported; without the option nothing waits and nothing is redone.
//     ThreadPool::parallel_for with a trivial body at 1 and T threads (--threads, at least 2;
//     default 2; one chunk per thread) vs a plain call, then
//     small GEMMs at 1 thread vs a forced 2-way split (the library's own split, done here
//     with parallel_for over f32_gemm on sub-blocks, whatever the library's threshold says)
//     vs f32_gemm with a 2-thread pool (what the library does now); timed back to back, and
//     as single calls 10 us and 200 us of busy work on the caller after the previous call (a pool that
//     spins after a job has stopped spinning after 200 us; between a training step's GEMMs
//     there is other work).
//
// Each case also reports how many cores other processes kept busy meanwhile (/proc/stat minus
// this process's CPU time): the machine is shared.
// Output: human-readable lines, plus tab-separated machine lines starting with "CMP", "FJ",
// "FJP", "FJL", "SPLIT", "INFO" that the script turns into tables. Failures go to stderr with exit 1.
#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/cpuid.h"
#include "cpu/isa.h"
#include "cpu/kernel_tables.h"
#include "ops/gemm.h"

namespace {

using rg::GemmShape;
using rg::Isa;
using rg::Trans;
using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "gemm_bench: FAILED: %s\n", msg.c_str());
  std::exit(1);
}

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// How busy the machine's other processes kept its CPUs over an interval, in cores: busy time of
// all CPUs from /proc/stat minus this process's own CPU time (getrusage, all its threads),
// divided by the wall time. Steal (time the hypervisor gave to other guests) is kept apart.
class LoadMeter {
 public:
  LoadMeter() { start(); }
  void start() {
    read_stat(busy0_, steal0_);
    self0_ = self_cpu_s();
    wall0_ = now_s();
  }
  // {other processes' cores, steal cores} since start()
  std::pair<double, double> read() const {
    double busy, steal;
    read_stat(busy, steal);
    const double wall = std::max(1e-9, now_s() - wall0_);
    const double other = (busy - busy0_) - (self_cpu_s() - self0_);
    return {std::max(0.0, other) / wall, std::max(0.0, steal - steal0_) / wall};
  }

 private:
  static void read_stat(double& busy, double& steal) {
    std::ifstream f("/proc/stat");
    std::string cpu;
    double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    f >> cpu;
    for (double& x : v) f >> x;
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    // user nice system idle iowait irq softirq steal
    busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / hz;
    steal = v[7] / hz;
  }
  static double self_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  }
  double busy0_ = 0, steal0_ = 0, self0_ = 0, wall0_ = 0;
};

// Waits (up to max_s) for a 0.5 s window in which other processes used < 0.1 cores.
// Returns false if none came. max_s <= 0: returns at once.
bool wait_quiet(double max_s) {
  if (max_s <= 0) return true;
  const double until = now_s() + max_s;
  do {
    const LoadMeter m;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (m.read().first < 0.1) return true;
  } while (now_s() < until);
  return false;
}

// With --quiet-max: a repetition during which other processes used more than this many cores
// is measured again (at most kMaxRedo times per repetition; the last try is kept regardless).
constexpr double kBusyRep = 0.15;
constexpr int kMaxRedo = 3;

// A GEMM case: shape plus a label ("1024", "mlp_l1_fwd 64x256x784 NT").
struct Case {
  std::string label;
  GemmShape s;
};

GemmShape make_shape(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k) {
  // Densely stored operands: op(A) m x k, op(B) k x n, C m x n.
  const int64_t lda = ta == Trans::no ? k : m;
  const int64_t ldb = tb == Trans::no ? n : k;
  return GemmShape{ta, tb, m, n, k, lda, ldb, n};
}

std::string shape_text(const GemmShape& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lld %s%s", static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), s.trans_a == Trans::yes ? "T" : "N", s.trans_b == Trans::yes ? "T" : "N");
  return buf;
}

double flops(const GemmShape& s) { return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k); }

struct Operands {
  std::vector<float> a, b;
  Operands(const GemmShape& s, uint32_t seed) {
    const size_t a_rows = s.trans_a == Trans::no ? s.m : s.k;
    const size_t b_rows = s.trans_b == Trans::no ? s.k : s.n;
    a.resize(a_rows * static_cast<size_t>(s.lda));
    b.resize(b_rows * static_cast<size_t>(s.ldb));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
  }
};

void openblas_gemm(const GemmShape& s, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, s.trans_a == Trans::yes ? CblasTrans : CblasNoTrans,
              s.trans_b == Trans::yes ? CblasTrans : CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), 1.0f, a, static_cast<int>(s.lda), b, static_cast<int>(s.ldb), 0.0f, c,
              static_cast<int>(s.ldc));
}

// max |x - y| / max |y|; NaN or Inf anywhere gives +inf.
double rel_error(const std::vector<float>& x, const std::vector<float>& y) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) return INFINITY;
    diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(y[i])));
  }
  return scale > 0 ? diff / scale : (diff > 0 ? INFINITY : 0.0);
}

// Relative tolerance for float GEMMs of random [-1, 1] data against another float GEMM:
// rounding differences are ~1e-7 * sqrt(k) relative; a wrong result is O(0.1..1).
constexpr double kTol = 1e-4;

// Calls fn enough times to take >= min_time, chosen once per (case, side) by calibrate().
int64_t calibrate(const std::function<void()>& fn, double min_time) {
  fn();  // warm-up: workspace, page faults, caches
  int64_t iters = 1;
  for (;;) {
    const double t0 = now_s();
    for (int64_t i = 0; i < iters; ++i) fn();
    const double t = now_s() - t0;
    if (t >= 0.05 || iters >= (int64_t{1} << 30)) {
      const double per_call = t / static_cast<double>(iters);
      return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(min_time / per_call)));
    }
    iters *= 2;
  }
}

double time_per_call(const std::function<void()>& fn, int64_t iters) {
  const double t0 = now_s();
  for (int64_t i = 0; i < iters; ++i) fn();
  return (now_s() - t0) / static_cast<double>(iters);
}

Isa parse_isa(const std::string& name) {
  auto r = rg::isa_from_name(name);
  if (!r.ok()) fail("bad ISA '" + name + "'");
  return r.value();
}

struct Args {
  std::string mode;
  int threads = 1;
  std::vector<std::string> isas;
  std::vector<int64_t> sizes{128, 256, 512, 1024, 2048};
  int64_t ref_max = 512;
  bool mlp = true;
  int reps = 5;
  double min_time = 0.3;
  std::string part = "all";  // forkjoin: trivial, gemm or all
  double gap = 0.2;
  double quiet_max = 0;  // seconds to wait for a quiet machine before each repetition (0: don't)  // seconds of sleep after OpenBLAS at > 1 thread (its idle threads spin-wait a while)
};

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) fail("usage: gemm_bench compare|forkjoin [options] (see the source's header)");
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) fail("option " + k + " needs a value");
    const std::string v = argv[++i];
    if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--isas") a.isas = split_list(v);
    else if (k == "--sizes") {
      a.sizes.clear();
      for (auto& s : split_list(v)) a.sizes.push_back(std::atoll(s.c_str()));
    } else if (k == "--ref-max") a.ref_max = std::atoll(v.c_str());
    else if (k == "--mlp") a.mlp = v != "0";
    else if (k == "--reps") a.reps = std::atoi(v.c_str());
    else if (k == "--min-time") a.min_time = std::atof(v.c_str());
    else if (k == "--part") a.part = v;
    else if (k == "--quiet-max") a.quiet_max = std::atof(v.c_str());
    else if (k == "--gap") a.gap = std::atof(v.c_str());
    else fail("unknown option " + k);
  }
  if (a.threads < 1 || a.reps < 1 || a.min_time <= 0) fail("bad --threads/--reps/--min-time");
  return a;
}

std::vector<Isa> chosen_isas(const Args& args, std::vector<Isa> dflt) {
  std::vector<Isa> isas;
  if (!args.isas.empty())
    for (auto& n : args.isas) isas.push_back(parse_isa(n));
  else
    isas = std::move(dflt);
  const auto features = rg::detect_cpu().features;
  std::vector<Isa> out;
  for (Isa isa : isas) {
    if (rg::isa_supported(isa, features)) out.push_back(isa);
    else std::printf("INFO\tskip\t%s\tnot supported by this CPU\n", rg::isa_name(isa));
  }
  return out;
}

void print_machine() {
  const auto cpu = rg::detect_cpu();
  std::printf("INFO\tcpu\t%s\t%s\n", cpu.brand.c_str(), rg::features_string(cpu.features).c_str());
  std::printf("INFO\topenblas\t%s\tcore %s\tthreads %d\tparallel %d\n", openblas_get_config(), openblas_get_corename(),
              openblas_get_num_threads(), openblas_get_parallel());
}

// ----------------------------------------------------------------------------------------------
int run_compare(const Args& args) {
  const std::vector<Isa> isas = chosen_isas(args, rg::all_isas());
  openblas_set_num_threads(args.threads);
  if (openblas_get_num_threads() != args.threads)
    fail("openblas_get_num_threads() = " + std::to_string(openblas_get_num_threads()) + ", asked for " +
         std::to_string(args.threads) + " (set OPENBLAS_NUM_THREADS too)");
  print_machine();
  rg::ThreadPool pool(args.threads);

  std::vector<Case> cases;
  for (int64_t n : args.sizes) cases.push_back({std::to_string(n), make_shape(Trans::no, Trans::no, n, n, n)});
  if (args.mlp) {
    // Dense layer 784 -> 256 at batch 64 (src/nn/dense.cpp): forward y = x W^T, dW = dy^T x, dx = dy W.
    cases.push_back({"mlp fwd", make_shape(Trans::no, Trans::yes, 64, 256, 784)});
    cases.push_back({"mlp dW", make_shape(Trans::yes, Trans::no, 256, 784, 64)});
    cases.push_back({"mlp dx", make_shape(Trans::no, Trans::no, 64, 784, 256)});
  }

  std::printf("INFO\tthreads\t%d\treps %d\tmin_time %.3f s\n", args.threads, args.reps, args.min_time);
  bool all_ok = true;
  uint32_t seed = 1;
  for (const Case& cs : cases) {
    const GemmShape& s = cs.s;
    const bool square = cs.label.find("mlp") == std::string::npos;
    std::vector<Isa> case_isas;
    for (Isa isa : isas)
      if (!(isa == Isa::reference && square && s.m > args.ref_max)) case_isas.push_back(isa);
    Operands op(s, seed++);
    std::vector<float> c_blas(static_cast<size_t>(s.m * s.ldc)), c_ours(c_blas.size());

    auto blas_call = [&] { openblas_gemm(s, op.a.data(), op.b.data(), c_blas.data()); };
    std::vector<std::function<void()>> ours_calls;
    for (size_t i = 0; i < case_isas.size(); ++i)
      ours_calls.emplace_back([&] { rg::f32_gemm(s, 1.0f, op.a.data(), op.b.data(), 0.0f, c_ours.data(), &pool); });

    const int64_t blas_iters = calibrate(blas_call, args.min_time);
    std::vector<int64_t> ours_iters;
    for (size_t i = 0; i < case_isas.size(); ++i) {
      rg::set_active_isa(case_isas[i]);
      ours_iters.push_back(calibrate(ours_calls[i], args.min_time));
    }
    const std::vector<float> c_expect = c_blas;  // OpenBLAS's answer, checked for finiteness below
    for (float x : c_expect)
      if (!std::isfinite(x)) fail("OpenBLAS produced a non-finite value for " + cs.label);

    std::vector<double> rep_load;
    int redone = 0;
    std::vector<double> blas_t;
    std::vector<std::vector<double>> ours_t(case_isas.size());
    std::vector<double> worst_err(case_isas.size(), 0.0);
    for (int r = 0; r < args.reps; ++r) {
      for (int attempt = 0;; ++attempt) {
        wait_quiet(args.quiet_max);
        const LoadMeter meter;
        const double tb = time_per_call(blas_call, blas_iters);
        const double e_blas = rel_error(c_blas, c_expect);
        if (!(e_blas <= kTol)) fail("OpenBLAS's result changed between calls for " + cs.label);
        if (args.threads > 1 && args.gap > 0)
          std::this_thread::sleep_for(std::chrono::duration<double>(args.gap));
        std::vector<double> to(case_isas.size());
        for (size_t i = 0; i < case_isas.size(); ++i) {
          rg::set_active_isa(case_isas[i]);
          std::fill(c_ours.begin(), c_ours.end(), NAN);  // beta 0 must overwrite every element
          to[i] = time_per_call(ours_calls[i], ours_iters[i]);
          const double e = rel_error(c_ours, c_expect);  // the last timed call's result
          worst_err[i] = std::max(worst_err[i], e);     // every try is checked, kept or not
        }
        const double busy = meter.read().first;
        if (args.quiet_max > 0 && busy > kBusyRep && attempt < kMaxRedo) {
          ++redone;
          continue;
        }
        blas_t.push_back(tb);
        for (size_t i = 0; i < case_isas.size(); ++i) ours_t[i].push_back(to[i]);
        rep_load.push_back(busy);
        break;
      }
    }

    double load_sum = 0;
    for (double x : rep_load) load_sum += x;
    const std::pair<double, double> load{load_sum / static_cast<double>(rep_load.size()), static_cast<double>(redone)};
    const double f = flops(s);
    const auto bstats = [&](const std::vector<double>& t) {
      std::vector<double> g;
      for (double x : t) g.push_back(f / x * 1e-9);
      return std::vector<double>{median(g), *std::min_element(g.begin(), g.end()), *std::max_element(g.begin(), g.end())};
    };
    const auto bs = bstats(blas_t);
    std::printf("\n%s (%s), %d thread(s): OpenBLAS %.1f GFLOP/s (%.1f-%.1f), %lld calls/rep; "
                "other processes used %.2f cores (mean over kept repetitions), %.0f repetitions redone\n",
                cs.label.c_str(), shape_text(s).c_str(), args.threads, bs[0], bs[1], bs[2],
                static_cast<long long>(blas_iters), load.first, load.second);
    for (size_t i = 0; i < case_isas.size(); ++i) {
      const auto os = bstats(ours_t[i]);
      const auto& kernel = rg::f32_gemm_kernel(case_isas[i]);
      const bool ok = worst_err[i] <= kTol;
      all_ok = all_ok && ok;
      std::printf("  %-9s %-26s %7.2f GFLOP/s (%.2f-%.2f)  ratio %.3f  max rel err %.2e %s  %lld calls/rep\n",
                  rg::isa_name(case_isas[i]), kernel.name, os[0], os[1], os[2], os[0] / bs[0], worst_err[i],
                  ok ? "ok" : "MISMATCH", static_cast<long long>(ours_iters[i]));
      // CMP threads case shape isa kernel ours_med ours_min ours_max blas_med blas_min blas_max ratio err ok other redone
      std::printf("CMP\t%d\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.4f\t%.3e\t%s\t%.2f\t%d\n",
                  args.threads, cs.label.c_str(), shape_text(s).c_str(), rg::isa_name(case_isas[i]), kernel.name, os[0],
                  os[1], os[2], bs[0], bs[1], bs[2], os[0] / bs[0], worst_err[i], ok ? "ok" : "MISMATCH", load.first, redone);
    }
    std::fflush(stdout);
  }
  if (!all_ok) fail("some results differ from OpenBLAS by more than relative " + std::to_string(kTol));
  return 0;
}

// ----------------------------------------------------------------------------------------------
double m1_hint(const std::vector<double>& t_us) { return median(t_us); }

// The library's 2-way split (src/ops/gemm_f32.cpp), forced: rows when m >= n (grain MR), else
// columns (grain NR), each part an f32_gemm on one thread over a sub-block.
void split_gemm(const GemmShape& s, const float* a, const float* b, float* c, rg::ThreadPool& pool) {
  const auto& kernel = rg::f32_gemm_kernel(rg::active_isa());
  if (s.m >= s.n) {
    pool.parallel_for(s.m, kernel.mr, [&](int64_t i0, int64_t i1) {
      GemmShape sub = s;
      sub.m = i1 - i0;
      const float* a0 = s.trans_a == Trans::no ? a + i0 * s.lda : a + i0;
      rg::f32_gemm(sub, 1.0f, a0, b, 0.0f, c + i0 * s.ldc, nullptr);
    });
  } else {
    pool.parallel_for(s.n, kernel.nr, [&](int64_t j0, int64_t j1) {
      GemmShape sub = s;
      sub.n = j1 - j0;
      const float* b0 = s.trans_b == Trans::no ? b + j0 : b + j0 * s.ldb;
      rg::f32_gemm(sub, 1.0f, a, b0, 0.0f, c + j0, nullptr);
    });
  }
}

int run_forkjoin(const Args& args) {
  print_machine();
  rg::ThreadPool pool1(1), pool2(2);
  const int fj = std::max(2, args.threads);  // the trivial part's pool
  rg::ThreadPool pool_fj(fj);
  const int reps = std::max(args.reps, 5);

  // 1. Fork-join with a trivial body.
  if (args.part == "all" || args.part == "trivial") {
    wait_quiet(args.quiet_max);
    const LoadMeter meter;
    std::vector<int64_t> sink(static_cast<size_t>(fj), 0);
    const std::function<void(int64_t, int64_t)> body = [&](int64_t b, int64_t e) { sink[static_cast<size_t>(b)] += e; };
    std::function<void()> plain = [&] { body(0, 2); };
    std::function<void()> inline1 = [&] { pool1.parallel_for(2, 1, body); };
    std::function<void()> fork2 = [&] { pool_fj.parallel_for(fj, 1, body); };
    const double mt = std::min(args.min_time, 0.2);
    const int64_t it_plain = calibrate(plain, mt), it_inline = calibrate(inline1, mt), it_fork = calibrate(fork2, mt);
    std::vector<double> t_plain, t_inline, t_fork;
    for (int r = 0; r < reps; ++r) {
      t_plain.push_back(time_per_call(plain, it_plain) * 1e6);
      t_inline.push_back(time_per_call(inline1, it_inline) * 1e6);
      t_fork.push_back(time_per_call(fork2, it_fork) * 1e6);
    }
    // Single calls with a pause before each, as between a training step's GEMMs: the worker has gone to sleep.
    std::vector<double> single_hot, single_cold, single_busy;
    for (int i = 0; i < 2000; ++i) {
      const double t0 = now_s();
      pool_fj.parallel_for(fj, 1, body);
      single_hot.push_back((now_s() - t0) * 1e6);
    }
    for (int i = 0; i < 300; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      const double t0 = now_s();
      pool_fj.parallel_for(fj, 1, body);
      single_cold.push_back((now_s() - t0) * 1e6);
    }
    // ... and after 0.2 ms of busy work on the caller (the worker idle), as in training between GEMMs.
    for (int i = 0; i < 1000; ++i) {
      const double until = now_s() + 200e-6;
      while (now_s() < until) {
      }
      const double t0 = now_s();
      pool_fj.parallel_for(fj, 1, body);
      single_busy.push_back((now_s() - t0) * 1e6);
    }
    for (int64_t v : sink) if (v == 0) fail("parallel_for did not run every chunk");
    auto line = [&](const char* name, const std::vector<double>& t) {
      std::printf("FJ\t%s\t%.3f\t%.3f\t%.3f\n", name, median(t), *std::min_element(t.begin(), t.end()),
                  *std::max_element(t.begin(), t.end()));
    };
    const auto load = meter.read();
    std::printf("fork-join, trivial body, microseconds per call (median of %d batches, min-max); "
                "other processes used %.2f cores, steal %.2f:\n", reps, load.first, load.second);
    std::printf("FJL\t%.2f\t%.2f\n", load.first, load.second);
    line("plain call of the body", t_plain);
    line("parallel_for, 1-thread pool (inline)", t_inline);
    line(("parallel_for, " + std::to_string(fj) + "-thread pool, back-to-back").c_str(), t_fork);
    std::printf("FJP\tparallel_for %d threads, back-to-back single calls (n=%zu)\t%.2f\t%.2f\t%.2f\t%.2f\n", fj,
                single_hot.size(), percentile(single_hot, 0.1), percentile(single_hot, 0.5), percentile(single_hot, 0.9),
                percentile(single_hot, 0.99));
    std::printf("FJP\tparallel_for %d threads, after a 0.5 ms pause (n=%zu)\t%.2f\t%.2f\t%.2f\t%.2f\n", fj,
                single_cold.size(), percentile(single_cold, 0.1), percentile(single_cold, 0.5),
                percentile(single_cold, 0.9), percentile(single_cold, 0.99));
    std::printf("FJP\tparallel_for %d threads, after 0.2 ms of busy work on the caller (n=%zu)\t%.2f\t%.2f\t%.2f\t%.2f\n", fj,
                single_busy.size(), percentile(single_busy, 0.1), percentile(single_busy, 0.5),
                percentile(single_busy, 0.9), percentile(single_busy, 0.99));
    std::fflush(stdout);
  }

  // 2. Small GEMMs: 1 thread vs forced 2-way split vs what f32_gemm does with a 2-thread pool.
  if (args.part == "trivial") return 0;
  const std::vector<Isa> isas = chosen_isas(args, {Isa::avx2_fma, Isa::sse2});
  std::vector<Case> cases;
  for (int64_t n : {32, 48, 64, 80, 96, 112, 128, 160, 192, 256})
    cases.push_back({std::to_string(n), make_shape(Trans::no, Trans::no, n, n, n)});
  // The MLP 784-256-128-10 at batch 64, every layer's three GEMMs (src/nn/dense.cpp).
  const int64_t widths[] = {784, 256, 128, 10};
  for (int l = 0; l < 3; ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    const std::string p = "mlp L" + std::to_string(l + 1);
    cases.push_back({p + " fwd", make_shape(Trans::no, Trans::yes, 64, out, in)});
    cases.push_back({p + " dW", make_shape(Trans::yes, Trans::no, out, in, 64)});
    cases.push_back({p + " dx", make_shape(Trans::no, Trans::no, 64, in, out)});
  }
  const double mt = std::min(args.min_time, 0.1);
  bool all_ok = true;
  for (Isa isa : isas) {
    rg::set_active_isa(isa);
    std::printf("\nsmall GEMMs, %s (%s): microseconds per call, median of %d reps of >= %.2f s, alternating\n",
                rg::isa_name(isa), rg::f32_gemm_kernel(isa).name, reps, mt);
    uint32_t seed = 100;
    for (const Case& cs : cases) {
      const GemmShape& s = cs.s;
      Operands op(s, seed++);
      std::vector<float> c1(static_cast<size_t>(s.m * s.ldc)), c2(c1.size()), c3(c1.size());
      std::function<void()> one = [&] { rg::f32_gemm(s, 1.0f, op.a.data(), op.b.data(), 0.0f, c1.data(), nullptr); };
      std::function<void()> split = [&] { split_gemm(s, op.a.data(), op.b.data(), c2.data(), pool2); };
      std::function<void()> lib = [&] { rg::f32_gemm(s, 1.0f, op.a.data(), op.b.data(), 0.0f, c3.data(), &pool2); };
      const int64_t i1 = calibrate(one, mt), i2 = calibrate(split, mt), i3 = calibrate(lib, mt);
      std::vector<double> t1, t2, t3, rep_load;
      int redone = 0;
      for (int r = 0; r < reps; ++r) {
        for (int attempt = 0;; ++attempt) {
          if (r == 0 || attempt > 0) wait_quiet(args.quiet_max);
          const LoadMeter meter;
          const double a1 = time_per_call(one, i1) * 1e6;
          const double a2 = time_per_call(split, i2) * 1e6;
          const double a3 = time_per_call(lib, i3) * 1e6;
          const double busy = meter.read().first;
          if (args.quiet_max > 0 && busy > kBusyRep && attempt < kMaxRedo) {
            ++redone;
            continue;
          }
          t1.push_back(a1), t2.push_back(a2), t3.push_back(a3), rep_load.push_back(busy);
          break;
        }
      }
      // Check against OpenBLAS (1 thread) and that the split gives the 1-thread result.
      std::vector<float> cb(c1.size());
      openblas_gemm(s, op.a.data(), op.b.data(), cb.data());
      const double e1 = rel_error(c1, cb), e2 = rel_error(c2, cb), e3 = rel_error(c3, cb);
      const bool same = c1 == c2 && c1 == c3;
      const bool ok = e1 <= kTol && e2 <= kTol && e3 <= kTol;
      all_ok = all_ok && ok;
      // The timed loops above call back to back, so a pool worker that spins a while after a job
      // is still spinning when the next comes. In training other work runs between GEMMs: time
      // single calls, each `gap` us of busy work on the caller after an untimed call of the same
      // kind (so the previous parallel job ended exactly `gap` us earlier), 1 thread and split
      // alternately.
      auto gapped = [&](double gap_us, double& one_us, double& split_us) {
        std::vector<double> g1, g2;
        const int n = static_cast<int>(std::clamp(0.15 / ((gap_us + 2 * m1_hint(t1)) * 1e-6), 41.0, 301.0));
        for (int i = 0; i < n; ++i) {
          for (int side = 0; side < 2; ++side) {
            (side == 0 ? one : split)();
            const double until = now_s() + gap_us * 1e-6;
            while (now_s() < until) {
            }
            const double t0 = now_s();
            (side == 0 ? one : split)();
            (side == 0 ? g1 : g2).push_back((now_s() - t0) * 1e6);
          }
        }
        one_us = median(g1), split_us = median(g2);
      };
      double g10_1, g10_2, g200_1, g200_2;
      gapped(10, g10_1, g10_2);
      gapped(200, g200_1, g200_2);
      double load = 0;
      for (double x : rep_load) load += x / static_cast<double>(rep_load.size());
      const double m1 = median(t1), m2 = median(t2), m3 = median(t3);
      const bool lib_splits = flops(s) >= static_cast<double>(int64_t{1} << 21);
      // SPLIT isa case shape mflop t1 t1min t1max t2 t2min t2max t3 speedup lib_splits bitwise ok other redone
      //       g10_1 g10_2 g200_1 g200_2
      std::printf("SPLIT\t%s\t%s\t%s\t%.3f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%s\t%s\t%s\t%.2f\t%d"
                  "\t%.2f\t%.2f\t%.2f\t%.2f\n",
                  rg::isa_name(isa), cs.label.c_str(), shape_text(s).c_str(), flops(s) * 1e-6, m1,
                  *std::min_element(t1.begin(), t1.end()), *std::max_element(t1.begin(), t1.end()), m2,
                  *std::min_element(t2.begin(), t2.end()), *std::max_element(t2.begin(), t2.end()), m3, m1 / m2,
                  lib_splits ? "split" : "1 thread", same ? "same" : "DIFFERENT", ok ? "ok" : "MISMATCH", load, redone, g10_1, g10_2, g200_1,
                  g200_2);
      std::fflush(stdout);
    }
  }
  if (!all_ok) fail("a small GEMM differs from OpenBLAS by more than relative " + std::to_string(kTol));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  if (args.mode == "compare") return run_compare(args);
  if (args.mode == "forkjoin") return run_forkjoin(args);
  fail("unknown mode " + args.mode);
}
