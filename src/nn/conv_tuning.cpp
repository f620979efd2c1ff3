// The measured choice of each auto Conv2D's algorithm (nn/conv_tuning.h): the timing of one
// layer, the cache file's lines, and the checkpoint's text form.
// Cache file: a first line "# retrograd conv algorithm timings v1", then one line a case,
//   <cpu brand>|<isa>|<h>x<w>x<c> -> <filters> pad <p>|batch <n timed>|with dx (or |no dx)
//   <TAB> <gemm ms> <TAB> <winograd ms>
// Timed on one thread: the choice, and so the results, do not depend on the thread count.
// A file that is not this (or too large) is neither used nor overwritten, and the choice says so.
#include "nn/conv_tuning.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "base/files.h"
#include "base/input_file.h"
#include "base/serial.h"
#include "base/text_format.h"
#include "cpu/cpuid.h"
#include "cpu/isa.h"
#include "nn/recurrent_conv.h"

namespace rg {

namespace {
constexpr const char* kCacheHeader = "# retrograd conv algorithm timings v1";
constexpr int64_t kCacheMaxBytes = int64_t{1} << 20;
// At most this many samples are timed (a larger micro-batch's per-sample costs are the same, and
// its timing buffers would only take memory and seconds).
constexpr int64_t kTimedSamples = 64;
// Timings above this (11 days) are no timing: it also bounds what write_cache prints.
constexpr double kCacheMaxMs = 1e9;
using Timings = std::map<std::string, std::pair<double, double>>;  // key -> (gemm ms, winograd ms)

std::string conv_cache_path() { return join_path(cache_folder(), "conv-algorithms.txt"); }

// `with_dx`: whether the timing included the input gradient (a model's first layer has none):
// the same shape timed both ways is two cases.
std::string cache_key(const Conv2D& conv, int64_t batch, bool with_dx) {
  static const std::string brand = detect_cpu().brand;
  const ConvGeometry& g = conv.geometry();
  std::ostringstream key;
  key << brand << "|" << isa_name(active_isa()) << "|" << g.height << "x" << g.width << "x" << g.channels << " -> "
      << conv.options().filters << " pad " << g.pad << "|batch " << batch << (with_dx ? "|with dx" : "|no dx");
  return key.str();
}

// The cache's lines; an error says why the file cannot be used (a missing file is no entries).
Result<Timings> read_cache(const std::string& path) {
  if (!path_exists(path)) return Timings{};
  RG_ASSIGN(const std::vector<uint8_t> bytes, read_file_bytes(path, "the conv algorithm cache", kCacheMaxBytes));
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line;
  if (!read_line(in, line) || line != kCacheHeader) return Status::error(path + ": line 1 is not '" + kCacheHeader + "'");
  Timings timings;
  for (int number = 2; read_line(in, line); ++number) {  // a file saved on Windows reads too
    const size_t tab1 = line.find('\t'), tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    double gemm = 0, winograd = 0;
    char end = 0;
    if (tab2 == std::string::npos ||
        std::sscanf(line.c_str() + tab1 + 1, "%lf\t%lf%c", &gemm, &winograd, &end) != 2 ||
        !(gemm > 0 && gemm < kCacheMaxMs) || !(winograd > 0 && winograd < kCacheMaxMs)) {
      return Status::error(path + ":" + std::to_string(number) +
                           ": not '<case> TAB <gemm ms> TAB <winograd ms>' with times over 0 and under 1e9 ms");
    }
    timings[line.substr(0, tab1)] = {gemm, winograd};
  }
  return timings;
}

// The new timings over what the file holds now (another run may have added some since it was
// read), written whole; a file that is not a cache is left as it is (nothing of it is lost).
Status write_cache(const std::string& path, const Timings& measured) {
  Result<Timings> now = read_cache(path);
  if (!now.ok()) return Status::error(path + " is left as it is (remove it to start a new cache)");
  Timings timings = now.value();
  for (const auto& [key, ms] : measured) timings[key] = ms;
  std::string text = std::string(kCacheHeader) + "\n";
  char numbers[64];
  for (const auto& [key, ms] : timings) {
    std::snprintf(numbers, sizeof numbers, "\t%.4f\t%.4f\n", ms.first, ms.second);
    text += key + numbers;
  }
  return write_cache_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// Winograd only when it is at least 5% faster: a near tie (4.53 against 4.54 ms) would flip with
// the machine's noise between runs that measure afresh, and with it the results' last bits.
bool winograd_wins(double gemm_ms, double winograd_ms) { return winograd_ms < 0.95 * gemm_ms; }

// Milliseconds of the layer's forward and backward under `algorithm`: the median of 3 after a
// warm-up (which also grows the workspace to what this algorithm takes).
Result<double> time_layer(Conv2D& conv, ConvAlgorithm algorithm, int64_t batch, bool with_dx, const LayerContext& ctx) {
  RG_TRY(conv.set_algorithm(algorithm));
  const ConvGeometry& g = conv.geometry();
  const Shape in{batch, g.height, g.width, g.channels}, out{batch, g.out_h, g.out_w, conv.options().filters};
  RG_ASSIGN(Tensor x, Tensor::zeros(in, DType::f32, conv.name() + " timing input"));
  RG_ASSIGN(Tensor y, Tensor::zeros(out, DType::f32, conv.name() + " timing output"));
  RG_ASSIGN(Tensor dy, Tensor::zeros(out, DType::f32, conv.name() + " timing gradient"));
  Tensor dx;
  if (with_dx) {
    RG_ASSIGN(dx, Tensor::zeros(in, DType::f32, conv.name() + " timing input gradient"));
  }
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  for (int64_t i = 0; i < dy.numel(); ++i) dy.data<float>()[i] = static_cast<float>(i % 5) * 0.125f - 0.25f;
  std::vector<double> ms;
  for (int run = 0; run < 4; ++run) {
    const auto start = std::chrono::steady_clock::now();
    conv.forward(x, y, ctx);
    conv.backward(x, y, dy, dx, ctx);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (run > 0) ms.push_back(took.count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[1];
}

}  // namespace

std::vector<Conv2D*> auto_convs(Model& model) {
  std::vector<Conv2D*> convs;
  auto add = [&](Conv2D* conv) {
    if (conv != nullptr && !conv->options().algorithm && conv->winograd_candidate()) convs.push_back(conv);
  };
  for (const auto& layer : model.layers()) {
    add(dynamic_cast<Conv2D*>(layer.get()));
    if (auto* rcl = dynamic_cast<RecurrentConv2D*>(layer.get())) {
      add(&rcl->feed_forward());
      add(rcl->recurrent());
    }
  }
  return convs;
}

namespace {
// The precision `conv`'s products run in: its own layer's (or its rcl's) over the run's `ctx`.
GemmPrecision precision_of(const Model& model, const Conv2D* conv, const LayerContext& ctx) {
  for (const auto& layer : model.layers()) {
    const auto* rcl = dynamic_cast<const RecurrentConv2D*>(layer.get());
    const bool holds = layer.get() == conv || (rcl != nullptr && (&rcl->feed_forward() == conv || rcl->recurrent() == conv));
    if (holds) return layer->in_own_precision(ctx).gemm;
  }
  return ctx.gemm;
}
}  // namespace

Result<std::vector<ConvChoice>> choose_conv_algorithms(Model& model, int64_t batch, const LayerContext& ctx,
                                                       const std::string& why_gemm) {
  std::vector<Conv2D*> convs;
  std::vector<ConvChoice> choices;
  for (Conv2D* conv : auto_convs(model)) {  // fixed-point products run on the GEMM, nothing timed
    const bool fixed = precision_of(model, conv, ctx) != GemmPrecision::f32;
    if (why_gemm.empty() && !fixed) {
      convs.push_back(conv);
      continue;
    }
    RG_TRY(conv->set_algorithm(ConvAlgorithm::gemm));
    choices.push_back(ConvChoice{conv->name(), ConvAlgorithm::gemm, 0, 0,
                                 why_gemm.empty() ? "fixed-point products run on the GEMM" : why_gemm});
  }
  if (convs.empty()) return choices;
  const std::string path = conv_cache_path();
  Result<Timings> cached = read_cache(path);
  Timings timings = cached.ok() ? cached.value() : Timings{};
  std::string unread = cached.ok() ? "" : "; the cache was not used: " + cached.status().message();  // said once
  LayerContext timing = ctx;
  timing.pool = nullptr;  // one thread: see the file-top comment
  timing.training = true;
  timing.accumulate_grads = false;
  timing.profile = nullptr;
  timing.gemm = GemmPrecision::f32;  // only convs whose products are f32 are timed
  Timings measured;
  const int64_t timed = std::min(batch, kTimedSamples);
  for (Conv2D* conv : convs) {
    const bool with_dx = model.layers().front().get() != conv;  // the first layer has no dx to compute
    const std::string key = cache_key(*conv, timed, with_dx);
    ConvChoice choice{conv->name(), ConvAlgorithm::gemm, 0, 0, "cached"};
    if (auto it = timings.find(key); it != timings.end()) {
      std::tie(choice.gemm_ms, choice.winograd_ms) = it->second;
    } else {
      RG_ASSIGN(choice.gemm_ms, time_layer(*conv, ConvAlgorithm::gemm, timed, with_dx, timing));
      RG_ASSIGN(choice.winograd_ms, time_layer(*conv, ConvAlgorithm::winograd, timed, with_dx, timing));
      timings[key] = measured[key] = {choice.gemm_ms, choice.winograd_ms};
      choice.source = "measured" + unread;
      unread.clear();
    }
    choice.algorithm = winograd_wins(choice.gemm_ms, choice.winograd_ms) ? ConvAlgorithm::winograd : ConvAlgorithm::gemm;
    RG_TRY(conv->set_algorithm(choice.algorithm));
    choices.push_back(choice);
  }
  if (!measured.empty()) {
    const Status written = write_cache(path, measured);
    for (ConvChoice& c : choices) {  // the first measured one says why nothing was cached
      if (!written.ok() && c.source.rfind("measured", 0) == 0) {
        c.source += "; not cached: " + written.message();
        break;
      }
    }
  }
  const std::vector<Conv2D*> order = auto_convs(model);  // the model's order, as callers list them
  const auto place = [&](const ConvChoice& c) {
    return std::find_if(order.begin(), order.end(), [&](const Conv2D* conv) { return conv->name() == c.layer; });
  };
  std::stable_sort(choices.begin(), choices.end(),
                   [&](const ConvChoice& x, const ConvChoice& y) { return place(x) < place(y); });
  return choices;
}

std::string conv_algorithms_text(Model& model) {
  std::string text;
  for (Conv2D* conv : auto_convs(model)) {
    text += (text.empty() ? "" : ",") + conv->name() + "=" + conv_algorithm_name(conv->algorithm());
  }
  return text;
}

Status set_conv_algorithms(Model& model, const std::string& text, const std::string& where) {
  std::map<std::string, ConvAlgorithm> named;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq), algorithm = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (algorithm != "gemm" && algorithm != "winograd") {
      return Status::error(where + "'" + item + "' is not <layer>=gemm or <layer>=winograd");
    }
    if (!named.emplace(name, algorithm == "gemm" ? ConvAlgorithm::gemm : ConvAlgorithm::winograd).second) {
      return Status::error(where + "layer '" + name + "' is named twice");
    }
  }
  const std::vector<Conv2D*> convs = auto_convs(model);
  for (Conv2D* conv : convs) {
    if (named.count(conv->name()) == 0) return Status::error(where + "no algorithm for layer '" + conv->name() + "'");
  }
  if (named.size() != convs.size()) {  // every auto conv is named: some other name is not one
    std::string autos;
    for (Conv2D* conv : convs) autos += (autos.empty() ? "" : ", ") + conv->name();
    for (const auto& entry : named) {
      if (std::none_of(convs.begin(), convs.end(), [&](Conv2D* c) { return c->name() == entry.first; })) {
        return Status::error(where + "layer '" + entry.first + "' is not one of the convolutions whose algorithm is auto (" +
                             autos + ")");
      }
    }
  }
  for (Conv2D* conv : convs) RG_TRY(conv->set_algorithm(named.at(conv->name())));
  return Status();
}

std::string conv_choices_text(const std::vector<ConvChoice>& choices) {
  std::string text;
  char line[160];
  for (const ConvChoice& c : choices) {
    if (c.gemm_ms > 0) {
      std::snprintf(line, sizeof line, "%s %s (gemm %.2f ms, winograd %.2f ms a step, ", c.layer.c_str(),
                    conv_algorithm_name(c.algorithm), c.gemm_ms, c.winograd_ms);
    } else {
      std::snprintf(line, sizeof line, "%s %s (", c.layer.c_str(), conv_algorithm_name(c.algorithm));
    }
    text += (text.empty() ? "" : "; ") + std::string(line) + c.source + ")";
  }
  return text;
}

}  // namespace rg
