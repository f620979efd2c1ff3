// The CPU's clock as it runs now, measured: /proc/cpuinfo's "cpu MHz" is the nominal clock on
// many virtual machines and misses turbo on others, which would put efficiencies above 100%.
#pragma once

namespace rg {

// MHz from a chain of dependent integer adds (one cycle each on every x86 since the 486) run on
// `threads` threads at once, so the figure is the clock with that many cores busy (turbo drops
// as cores wake). The best of a few repetitions per thread, averaged over threads; about 0.1 s.
// 0 off x86 or when the timer is too coarse.
double measure_cpu_mhz(int threads);

}  // namespace rg
