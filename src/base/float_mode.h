// How the CPU treats subnormal floats (magnitudes below 2^-126, about 1.18e-38), chosen once
// for the process and applied in every thread that computes. On Intel x86 an SSE/AVX operation
// with a subnormal input or result can take a microcode assist of about 100 cycles; softmax
// probabilities and gradients underflow that far as a network's logits grow, and training at a
// high learning rate then ran 2.5x slower on a Xeon (issue 30). Flushing sets MXCSR's FTZ
// (results below the normal range become 0) and DAZ (subnormal inputs are read as 0): the
// assists never happen, and results stay deterministic (the same mode gives the same bits).
// The mode is a per-thread CPU register: set_denormals() applies it to the calling thread at
// once; ThreadPool workers, parallel_for's callers and the batch prefetch thread follow it
// (follow_denormals_on_this_thread) before each job. Other CPUs: nothing to set (see .cpp).
#pragma once

#include <string>

#include "base/status.h"

namespace rg {

enum class Denormals {
  flush,  // FTZ and DAZ set: subnormal results and inputs are 0 (the default)
  keep,   // IEEE gradual underflow: subnormals computed as such (slow on Intel)
};

const char* denormals_name(Denormals mode);                           // "flush" | "keep"
Result<Denormals> denormals_from_name(const std::string& name);      // the names above

// The process-wide choice: applied to the calling thread now, and to every other computing
// thread before its next job.
void set_denormals(Denormals mode);
Denormals denormals();

// Sets this thread's floating-point mode to the process's choice.
void apply_denormals_on_this_thread();
// apply_denormals_on_this_thread() when the choice changed since this thread last applied it
// (or never did): one atomic load and a compare otherwise, cheap enough for every job.
void follow_denormals_on_this_thread();

// Whether this CPU reads subnormal inputs as 0 under `flush` (DAZ): every x86-64 CPU does; the
// first SSE CPUs (Pentium III, early Pentium 4) only flush results (FTZ). False off x86.
bool cpu_has_denormals_are_zero();

}  // namespace rg
