// Checkpoints: the model's cfg text, its weights, the optimizer's state and where training
// stands, in one versioned binary file with a CRC-32, written atomically.
//
// Layout (little-endian), version 1:
//   "RETROGRD" | u32 version | u32 flags (0) | u64 payload bytes | payload | u32 crc32(payload)
//   payload: str cfg name | str cfg text | u32 n, n x (str key, str value)   training settings
//            u32 m, m x (str name, u32 dtype, u32 rank, rank x i64 dim, raw data) tensors
// Tensors: each param ("dense1.weight"), each buffer ("batchnorm1.running_mean"), then
// "optimizer.<i>" for the optimizer's state.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "nn/model.h"
#include "nn/optimizer.h"

namespace rg {

constexpr uint32_t kCheckpointVersion = 1;

struct Checkpoint {
  std::string cfg_name;  // where the cfg came from ("preset:mlp", a path)
  std::string cfg_text;
  std::map<std::string, std::string> settings;  // "epochs_done", "seed", "optimizer", "lr", ...
  std::vector<std::pair<std::string, Tensor>> tensors;
};

// Model params and optimizer state (when given) with the settings, to `path` atomically.
Status save_checkpoint(const std::string& path, Model& model, const Optimizer* optimizer,
                       const std::map<std::string, std::string>& settings);

// The same content held in memory (tensors cloned, counted as host memory): a run's state to
// continue from later in the same process (the int8-qat row continues the fp32 run's).
Result<Checkpoint> checkpoint_in_memory(Model& model, const Optimizer* optimizer,
                                        const std::map<std::string, std::string>& settings);

// A checkpoint file's bytes, read only after its header identified it: a regular file
// (input_file.h), the magic, version and flags, a payload size that fills the file exactly, and
// room in host memory (check_host_memory) for the bytes and the tensors parsed out of them.
Result<std::vector<uint8_t>> read_checkpoint_bytes(const std::string& path);

// Reads (read_checkpoint_bytes) and verifies a whole checkpoint (CRC, structure) into memory.
// Nothing of the caller's changes if it fails.
Result<Checkpoint> read_checkpoint(const std::string& path);

// The same checks on a checkpoint file's bytes held in memory; `path` names them in errors.
Result<Checkpoint> parse_checkpoint(const uint8_t* bytes, size_t size, const std::string& path);

// Copies the checkpoint's tensors into the model's params and buffers (and the optimizer's state when
// given); names, shapes and dtypes must match exactly. The convolutions' algorithms too
// (restore_conv_algorithms), so the model computes as the run that wrote it did.
Status restore_checkpoint(const Checkpoint& checkpoint, const std::string& path, Model& model, Optimizer* optimizer);

// The setting "conv_algorithms" onto the model's auto convolutions (nn/conv_tuning.h); a
// checkpoint without it (written before the choice existed) ran them all on the GEMM.
Status restore_conv_algorithms(const Checkpoint& checkpoint, const std::string& path, Model& model);

}  // namespace rg
