// libFuzzer target: checkpoint files (train/checkpoint.h). The first byte picks how the rest is
// taken: even, as a whole file (magic, version, sizes and the CRC are checked first); odd, as
// the payload of a file whose header and CRC are made to fit, so mutations reach the payload's
// parser. What parses is restored into a small model (a dense layer, 4 -> 3), which checks
// every name, shape and dtype before it changes anything.
#include <cstdint>
#include <memory>

#include "base/serial.h"
#include "fuzz_input.h"
#include "nn/model.h"
#include "train/checkpoint.h"

namespace {

// "RETROGRD", version, flags, payload size, payload, CRC-32: the layout checkpoint.h gives.
std::vector<uint8_t> framed(const std::string& payload) {
  rg::ByteWriter file;
  file.raw("RETROGRD", 8);
  file.u32(rg::kCheckpointVersion);
  file.u32(0);
  file.u64(payload.size());
  file.raw(payload.data(), payload.size());
  file.u32(rg::crc32_of(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
  return file.bytes();
}

// A model small enough for a seed to hold all its tensors (tests/fuzz/make_seeds.py writes them).
rg::Model& model() {
  static std::unique_ptr<rg::Model> model = [] {
    auto cfg = rg::parse_cfg("[net]\ninput = 4\n[dense]\nunits = 3\n", "fuzz.cfg");
    auto built = rg::Model::from_cfg(cfg.value());
    if (!built.ok() || !built.value()->init(1).ok()) std::abort();
    return built.take();
  }();
  return *model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::fuzz::InputParts input(data, size);
  const bool whole_file = input.byte() % 2 == 0;
  const std::string rest = input.rest();
  const std::vector<uint8_t> bytes = whole_file ? std::vector<uint8_t>(rest.begin(), rest.end()) : framed(rest);
  auto checkpoint = rg::parse_checkpoint(bytes.data(), bytes.size(), "fuzz.ckpt");
  rg::fuzz::report("parse", checkpoint.status());
  if (checkpoint.ok()) rg::fuzz::report("restore", rg::restore_checkpoint(checkpoint.value(), "fuzz.ckpt", model(), nullptr));
  return 0;
}
