// Writing, verifying and restoring checkpoints.
#include "train/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/input_file.h"
#include "base/memory.h"
#include "base/output_file.h"
#include "base/serial.h"
#include "nn/conv_tuning.h"

namespace rg {

namespace {
constexpr char kCheckpointMagic[8] = {'R', 'E', 'T', 'R', 'O', 'G', 'R', 'D'};
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8;  // magic, version, flags, payload size
constexpr size_t kChecksumBytes = 4;
constexpr size_t kMaxString = 1 << 20;
constexpr uint32_t kMaxEntries = 1 << 16;

// Reads and checks the header (magic, version, flags) from `header`, and the payload size it
// gives against `rest`, the bytes that follow the header: the payload and the checksum must fill
// them exactly.
Result<uint64_t> checked_payload_size(ByteReader& header, uint64_t rest, const std::string& path) {
  char magic[8];
  RG_TRY(header.raw(magic, sizeof magic, "the magic number"));
  if (std::memcmp(magic, kCheckpointMagic, sizeof kCheckpointMagic) != 0) {
    return Status::error(path + ": not a retrograd checkpoint (the file does not start with \"RETROGRD\")");
  }
  RG_ASSIGN(const uint32_t version, header.u32("the version"));
  if (version != kCheckpointVersion) {
    return Status::error(path + ": checkpoint version " + std::to_string(version) + ", this build reads version " +
                         std::to_string(kCheckpointVersion));
  }
  RG_ASSIGN(const uint32_t flags, header.u32("the flags"));
  if (flags != 0) return header.error("unknown flags " + std::to_string(flags));
  RG_ASSIGN(const uint64_t payload_size, header.u64("the payload size"));
  if (payload_size > rest || rest - payload_size != kChecksumBytes) {  // no sum that could wrap
    return Status::error(path + ": the header says " + std::to_string(payload_size) + " payload bytes + 4 checksum bytes, the file has " +
                         std::to_string(rest) + " after the header (truncated or appended to)");
  }
  return payload_size;
}

// What a checkpoint holds, in order: the model's params and buffers, then the optimizer's state.
std::vector<std::pair<std::string, Tensor>> checkpoint_tensors(Model& model, const Optimizer* optimizer) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (Param* p : model.params()) tensors.emplace_back(p->name, p->value);
  for (Param* p : model.buffers()) tensors.emplace_back(p->name, p->value);
  if (optimizer != nullptr) {
    for (size_t i = 0; i < optimizer->state().size(); ++i)
      tensors.emplace_back("optimizer." + std::to_string(i), optimizer->state()[i]);
  }
  return tensors;
}
}  // namespace

Status save_checkpoint(const std::string& path, Model& model, const Optimizer* optimizer,
                       const std::map<std::string, std::string>& settings) {
  ByteWriter payload;
  payload.str(model.cfg().file);
  payload.str(model.cfg().text);
  payload.u32(static_cast<uint32_t>(settings.size()));
  for (const auto& [key, value] : settings) {
    payload.str(key);
    payload.str(value);
  }
  const std::vector<std::pair<std::string, Tensor>> tensors = checkpoint_tensors(model, optimizer);
  payload.u32(static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    payload.str(name);
    payload.u32(static_cast<uint32_t>(t.dtype()));
    payload.u32(static_cast<uint32_t>(t.shape().rank()));
    for (int i = 0; i < t.shape().rank(); ++i) payload.i64(t.shape()[i]);
    payload.raw(t.raw_data(), t.bytes());
  }

  ByteWriter file;
  file.raw(kCheckpointMagic, sizeof kCheckpointMagic);
  file.u32(kCheckpointVersion);
  file.u32(0);
  file.u64(payload.bytes().size());
  file.raw(payload.bytes().data(), payload.bytes().size());
  file.u32(crc32_of(payload.bytes().data(), payload.bytes().size()));
  return write_file_atomic(path, file.bytes());
}

Result<Checkpoint> checkpoint_in_memory(Model& model, const Optimizer* optimizer,
                                        const std::map<std::string, std::string>& settings) {
  Checkpoint out;
  out.cfg_name = model.cfg().file;
  out.cfg_text = model.cfg().text;
  out.settings = settings;
  for (const auto& [name, t] : checkpoint_tensors(model, optimizer)) {
    RG_ASSIGN(Tensor copy, t.clone("the snapshot of " + name));
    out.tensors.emplace_back(name, copy);
  }
  return out;
}

Result<std::vector<uint8_t>> read_checkpoint_bytes(const std::string& path) {
  RG_ASSIGN(const InputFile in, open_input_file(path, "a checkpoint"));
  const auto size = static_cast<uint64_t>(in.size);
  uint8_t first[kHeaderBytes];
  const size_t head = static_cast<size_t>(std::min<uint64_t>(size, kHeaderBytes));
  RG_TRY(in.read(first, head, "the header"));
  ByteReader header(first, head, path);
  RG_TRY(checked_payload_size(header, size - head, path).status());
  // The file's bytes, and the tensors parsed out of them, live side by side until parsing ends.
  if (size > std::numeric_limits<size_t>::max() / 2) {
    return Status::error(path + ": " + format_bytes(in.size) + ", more than this process can address");
  }
  RG_TRY(check_host_memory(2 * in.size, path + ": reading the checkpoint (its " + format_bytes(in.size) +
                                            " and the tensors parsed out of them)"));
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  std::memcpy(bytes.data(), first, head);
  RG_TRY(in.read(bytes.data() + head, bytes.size() - head, "the payload"));
  if (std::fgetc(in.file.get()) != EOF) return Status::error(path + ": the file grew while being read; read it again");
  return bytes;
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  RG_ASSIGN(const std::vector<uint8_t> bytes, read_checkpoint_bytes(path));
  return parse_checkpoint(bytes.data(), bytes.size(), path);
}

Result<Checkpoint> parse_checkpoint(const uint8_t* bytes, size_t size, const std::string& path) {
  ByteReader header(bytes, size, path);
  const uint64_t rest = size > kHeaderBytes ? size - kHeaderBytes : 0;
  RG_ASSIGN(const uint64_t payload_size, checked_payload_size(header, rest, path));
  const uint8_t* payload_data = bytes + header.offset();
  uint32_t stored_crc = 0;
  for (int i = 0; i < 4; ++i) stored_crc |= static_cast<uint32_t>(payload_data[payload_size + i]) << (8 * i);
  if (crc32_of(payload_data, payload_size) != stored_crc) {
    return Status::error(path + ": checksum mismatch: the file is corrupt (a byte changed since it was written)");
  }

  ByteReader r(payload_data, payload_size, path + " (payload)");
  Checkpoint ck;
  RG_ASSIGN(ck.cfg_name, r.str("the cfg name", kMaxString));
  RG_ASSIGN(ck.cfg_text, r.str("the cfg text", kMaxString));
  RG_ASSIGN(const uint32_t settings, r.u32("the settings count"));
  if (settings > kMaxEntries) return r.error("too many settings: " + std::to_string(settings));
  for (uint32_t i = 0; i < settings; ++i) {
    RG_ASSIGN(std::string key, r.str("a setting's key", kMaxString));
    RG_ASSIGN(std::string value, r.str("a setting's value", kMaxString));
    if (!ck.settings.emplace(key, value).second) return r.error("the setting '" + key + "' appears twice");
  }
  RG_ASSIGN(const uint32_t count, r.u32("the tensor count"));
  if (count > kMaxEntries) return r.error("too many tensors: " + std::to_string(count));
  for (uint32_t i = 0; i < count; ++i) {
    RG_ASSIGN(std::string name, r.str("a tensor name", kMaxString));
    RG_ASSIGN(const uint32_t code, r.u32("a tensor dtype"));
    DType dtype;
    if (!dtype_from_code(code, &dtype)) return r.error("tensor " + name + " has unknown dtype code " + std::to_string(code));
    RG_ASSIGN(const uint32_t rank, r.u32("a tensor rank"));
    if (rank > static_cast<uint32_t>(Shape::kMaxRank)) return r.error("tensor " + name + " has rank " + std::to_string(rank));
    int64_t dims[Shape::kMaxRank];
    uint64_t elements = 1;  // stays at most the bytes left, so the next product cannot overflow
    for (uint32_t d = 0; d < rank; ++d) {
      RG_ASSIGN(dims[d], r.i64("a tensor dimension"));
      if (dims[d] < 0 || dims[d] > (int64_t{1} << 40)) return r.error("tensor " + name + " has dimension " + std::to_string(dims[d]));
      if (dims[d] != 0 && elements > r.remaining() / static_cast<uint64_t>(dims[d])) {
        return r.error("tensor " + name + " is larger than the rest of the file");
      }
      elements *= static_cast<uint64_t>(dims[d]);
    }
    RG_ASSIGN(Tensor t, Tensor::zeros(Shape::from_dims(dims, static_cast<int>(rank)), dtype, "checkpoint " + name));
    RG_TRY(r.raw(t.raw_data(), t.bytes(), "tensor data"));
    ck.tensors.emplace_back(name, t);
  }
  if (r.remaining() != 0) return r.error(std::to_string(r.remaining()) + " unexpected bytes after the last tensor");
  return ck;
}

Status restore_checkpoint(const Checkpoint& ck, const std::string& path, Model& model, Optimizer* optimizer) {
  const std::vector<std::pair<std::string, Tensor>> targets = checkpoint_tensors(model, optimizer);
  const size_t expected = targets.size();
  const size_t model_only = checkpoint_tensors(model, nullptr).size();
  if (ck.tensors.size() != expected && !(optimizer == nullptr && ck.tensors.size() >= model_only)) {
    return Status::error(path + ": holds " + std::to_string(ck.tensors.size()) + " tensors, the model and optimizer need " +
                         std::to_string(expected) + " (was it written with another optimizer?)");
  }
  // Check everything before changing anything.
  for (size_t i = 0; i < expected; ++i) {
    const auto& [name, t] = ck.tensors[i];
    const auto& [want_name, want] = targets[i];
    if (name != want_name || t.shape() != want.shape() || t.dtype() != want.dtype()) {
      return Status::error(path + ": tensor " + std::to_string(i) + " is " + name + " " + t.shape().str() + " " +
                           dtype_name(t.dtype()) + ", the model expects " + want_name + " " + want.shape().str() + " " +
                           dtype_name(want.dtype()));
    }
  }
  RG_TRY(restore_conv_algorithms(ck, path, model));  // changes nothing on an error
  for (size_t i = 0; i < expected; ++i) targets[i].second.copy_from(ck.tensors[i].second);
  return Status();
}

Status restore_conv_algorithms(const Checkpoint& ck, const std::string& path, Model& model) {
  const auto it = ck.settings.find("conv_algorithms");
  std::string text = it != ck.settings.end() ? it->second : "";
  if (it == ck.settings.end()) {  // written before the choice existed: every auto conv ran the GEMM
    for (Conv2D* conv : auto_convs(model)) text += (text.empty() ? "" : ",") + conv->name() + "=gemm";
  }
  return set_conv_algorithms(model, text, path + ": setting 'conv_algorithms': ");
}

}  // namespace rg
