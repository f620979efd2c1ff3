// LayerProfile: the clock of train --profile (nn/layer_profile.h).
#include "nn/layer_profile.h"

#include <algorithm>

#include "base/check.h"
#include "nn/layer.h"

namespace rg {

namespace {
// Each phase's name in the table and its key in --json, in LayerPhase's order.
struct PhaseNames {
  const char* name;
  const char* key;
};
constexpr PhaseNames kPhaseNames[kLayerPhases] = {
    {"forward", "forward"}, {"weight gradient", "weight_grad"}, {"input gradient", "input_grad"}};
}  // namespace

const char* layer_phase_name(LayerPhase phase) { return kPhaseNames[static_cast<int>(phase)].name; }
const char* layer_phase_key(LayerPhase phase) { return kPhaseNames[static_cast<int>(phase)].key; }

void LayerProfile::open(size_t layer, LayerPhase phase, int64_t rows, int64_t dx_rows, ThreadPool* pool) {
  RG_CHECK(!open_, "layer profile: layer " << layer << " opened inside layer " << layer_);
  if (entries_.size() <= layer) entries_.resize(layer + 1);
  open_ = true;
  layer_ = layer;
  phase_ = phase;
  rows_ = rows;
  dx_rows_ = dx_rows;
  pool_ = clock_ == Clock::host ? pool : nullptr;
  if (pool_ != nullptr) {
    pool_->time_regions(true);
    pool_since_ = pool_->region_times();
    threads_ = std::max(threads_, pool_->threads());
  }
  since_ = std::chrono::steady_clock::now();
}

void LayerProfile::stop_clock() {
  if (clock_ == Clock::device) return;  // add_device_seconds brings the time
  const auto now = std::chrono::steady_clock::now();
  Entry& entry = entries_[layer_];
  const int p = static_cast<int>(phase_);
  entry.seconds[p] += std::chrono::duration<double>(now - since_).count();
  since_ = now;
  if (pool_ == nullptr) return;
  const ThreadPool::RegionTimes& times = pool_->region_times();
  entry.region_seconds[p] += times.region_seconds - pool_since_.region_seconds;
  entry.chunk_seconds[p] += times.chunk_seconds - pool_since_.chunk_seconds;
  pool_since_ = times;
}

void LayerProfile::close() {
  RG_CHECK(open_, "layer profile: close without open");
  stop_clock();
  // Rows are counted once per call, for each phase the call ran (a backward: both gradients).
  Entry& entry = entries_[layer_];
  if (phase_ == LayerPhase::forward) {
    entry.samples[static_cast<int>(LayerPhase::forward)] += rows_;
  } else {
    entry.samples[static_cast<int>(LayerPhase::weight_grad)] += rows_;
    entry.samples[static_cast<int>(LayerPhase::input_grad)] += dx_rows_;
  }
  open_ = false;
}

void LayerProfile::add_device_seconds(double seconds) {
  if (clock_ != Clock::device || !open_) return;
  entries_[layer_].seconds[static_cast<int>(phase_)] += seconds;
}

double LayerProfile::seconds() const {
  double total = 0;
  for (const Entry& entry : entries_)
    for (double s : entry.seconds) total += s;
  return total;
}

LayerPhase LayerProfile::switch_to(LayerPhase phase) {
  RG_CHECK(open_, "layer profile: a phase switch outside a layer");
  const LayerPhase before = phase_;
  stop_clock();
  phase_ = phase;
  return before;
}

LayerPhaseScope::LayerPhaseScope(const LayerContext& ctx, size_t layer, LayerPhase phase, int64_t rows,
                                 int64_t dx_rows)
    : profile_(ctx.profile) {
  if (profile_ != nullptr) profile_->open(layer, phase, rows, dx_rows, ctx.pool);
}

LayerPhaseScope::~LayerPhaseScope() {
  if (profile_ != nullptr) profile_->close();
}

LayerPhaseScope backward_phase_scope(const LayerContext& ctx, const Layer& layer, size_t index, int64_t rows,
                                     bool computes_dx) {
  const LayerPhase phase = layer.parameter_count() > 0 ? LayerPhase::weight_grad : LayerPhase::input_grad;
  return LayerPhaseScope(ctx, index, phase, rows, computes_dx ? rows : 0);
}

InputGradScope::InputGradScope(const LayerContext& ctx) : profile_(ctx.profile) {
  if (profile_ != nullptr) before_ = profile_->switch_to(LayerPhase::input_grad);
}

InputGradScope::~InputGradScope() {
  if (profile_ != nullptr) profile_->switch_to(before_);
}

}  // namespace rg
