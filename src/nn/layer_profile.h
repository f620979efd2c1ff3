// Time per layer and phase (forward, weight gradient, input gradient) over the steps a model
// ran with a profile attached (train --profile): what each layer costs, so a kernel change is
// aimed at the layer that pays and checked there. The model opens a layer's phase around each
// forward and backward call; a layer's backward marks where its input gradient (dx) runs with
// an InputGradScope, the rest of its backward counting as the weight gradient (a layer without
// parameters: all of it as the input gradient). A layer run inside another (a recurrent layer's
// convolution) marks its own dx the same way, so the outer layer's split stays true.
// With a thread pool, each phase also gets what the pool's parallel regions took in it
// (ThreadPool::RegionTimes: the open phase turns the pool's timing on): their wall time and
// their chunks' own times summed over the threads, so a phase that scales badly shows whether
// its threads wait (few busy thread-seconds) or work longer than one thread alone would.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"

namespace rg {

class Layer;
struct LayerContext;

enum class LayerPhase { forward = 0, weight_grad = 1, input_grad = 2 };
constexpr int kLayerPhases = 3;
const char* layer_phase_name(LayerPhase phase);  // "forward", "weight gradient", "input gradient"
const char* layer_phase_key(LayerPhase phase);   // "forward", "weight_grad", "input_grad" (JSON)

class LayerProfile {
 public:
  // host: each phase's wall time between its marks (train --profile). device: only what
  // add_device_seconds brings while a phase is open (train --profile-device: the OpenCL commands'
  // own times, attributed to the layer that enqueued them).
  enum class Clock { host, device };
  explicit LayerProfile(Clock clock = Clock::host) : clock_(clock) {}

  struct Entry {
    double seconds[kLayerPhases] = {};
    int64_t samples[kLayerPhases] = {};  // rows the phase ran on (input gradient: only where dx was computed)
    // The pool's parallel regions inside the phase (ThreadPool::RegionTimes), host clock only.
    double region_seconds[kLayerPhases] = {}, chunk_seconds[kLayerPhases] = {};
  };

  // Opens `layer`'s `phase` for `rows` samples; `dx_rows`: the rows an input gradient runs on in
  // this call (0 where the layer's dx is not computed); `pool`: the threads it runs on (null: the
  // caller alone). Phases do not nest across layers.
  void open(size_t layer, LayerPhase phase, int64_t rows, int64_t dx_rows, ThreadPool* pool);
  void close();
  // Inside an open backward: the time from here on counts to `phase`; returns the phase before.
  LayerPhase switch_to(LayerPhase phase);
  // Clock::device: `seconds` of device time to the open phase (none open: not a layer's).
  void add_device_seconds(double seconds);
  Clock clock() const { return clock_; }

  // The trainer counts each optimizer step the profile covered (a step's rows may be micro-batches).
  void count_step() { ++steps_; }
  int64_t steps() const { return steps_; }
  double seconds() const;  // every layer's phases together
  int threads() const { return threads_; }  // the most threads a phase ran on (1 without a pool)

  const std::vector<Entry>& entries() const { return entries_; }

 private:
  void stop_clock();

  Clock clock_;
  std::vector<Entry> entries_;
  int64_t steps_ = 0;
  bool open_ = false;
  size_t layer_ = 0;
  LayerPhase phase_ = LayerPhase::forward;
  int64_t rows_ = 0, dx_rows_ = 0;
  std::chrono::steady_clock::time_point since_;
  ThreadPool* pool_ = nullptr;         // the open phase's
  ThreadPool::RegionTimes pool_since_;  // its region times at since_
  int threads_ = 1;
};

// The model's scope around one layer's forward or backward call (nothing without a profile).
// A backward opens as the weight gradient when the layer has parameters, else as the input gradient.
class LayerPhaseScope {
 public:
  LayerPhaseScope(const LayerContext& ctx, size_t layer, LayerPhase phase, int64_t rows, int64_t dx_rows);
  ~LayerPhaseScope();
  LayerPhaseScope(const LayerPhaseScope&) = delete;
  LayerPhaseScope& operator=(const LayerPhaseScope&) = delete;

 private:
  LayerProfile* profile_;
};

// The scope of layer `index`'s backward over `rows` rows: it opens as the weight gradient when
// the layer has parameters, else as the input gradient; `computes_dx`: whether dx is computed.
LayerPhaseScope backward_phase_scope(const LayerContext& ctx, const Layer& layer, size_t index, int64_t rows,
                                     bool computes_dx);

// A layer's backward around the code that computes dx: that time counts as the input gradient,
// then the phase before resumes (nothing without a profile).
class InputGradScope {
 public:
  explicit InputGradScope(const LayerContext& ctx);
  ~InputGradScope();
  InputGradScope(const InputGradScope&) = delete;
  InputGradScope& operator=(const InputGradScope&) = delete;

 private:
  LayerProfile* profile_;
  LayerPhase before_ = LayerPhase::input_grad;
};

}  // namespace rg
