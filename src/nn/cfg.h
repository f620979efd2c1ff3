// The model cfg format: INI-like, one [section] per layer, `key = value` lines,
// `#` or `;` comments; UTF-8 text of at most 1 MiB and 10000 sections. Strict: every key must be read by the layer that owns the
// section, so an unknown key is an error naming the file, the line and the key.
//
//   [net]            input = 28x28x1    loss = softmax_cross_entropy
//   [dense]          units = 256        init = he
//   [relu]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/shape.h"

namespace rg {

struct CfgEntry {
  std::string key;
  std::string value;
  int line = 0;
  mutable bool used = false;
};

class CfgSection {
 public:
  CfgSection(std::string file, std::string kind, int line) : file_(std::move(file)), kind_(std::move(kind)), line_(line) {}

  const std::string& kind() const { return kind_; }
  int line() const { return line_; }
  std::vector<CfgEntry>& entries() { return entries_; }
  const std::vector<CfgEntry>& entries() const { return entries_; }

  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Each getter marks the key used; a missing key gives the default, or an error when required.
  Result<int64_t> get_int(const std::string& key, int64_t min, int64_t max) const;
  Result<int64_t> get_int_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) const;
  Result<double> get_float_or(const std::string& key, double fallback, double min, double max) const;
  Result<bool> get_bool_or(const std::string& key, bool fallback) const;
  Result<std::string> get_string_or(const std::string& key, const std::string& fallback) const;
  // "28x28x1" (h x w x c) or "784" -> a per-sample shape ([h, w, c] or [n]).
  Result<Shape> get_shape(const std::string& key) const;

  // After a layer has read what it knows: the first key nobody read is an error.
  Status check_all_used() const;
  // "file:line: [kind] " prefix for messages about this section or one of its keys.
  std::string where(const std::string& key = "") const;

 private:
  const CfgEntry* find(const std::string& key) const;

  std::string file_;
  std::string kind_;
  int line_;
  std::vector<CfgEntry> entries_;
};

struct CfgDocument {
  std::string file;  // for messages: a path, or "preset:mlp"
  std::string text;  // the source, kept for checkpoints
  std::vector<CfgSection> sections;
};

// What a cfg may be: a model description is a few KiB of text, and ten thousand sections are past
// any model retrograd trains. Past either, it is refused before it is read whole or built.
constexpr int64_t kMaxCfgBytes = int64_t{1} << 20;  // 1 MiB
constexpr size_t kMaxCfgSections = 10000;           // [net], [train] and the layers
// The values a model may hold: in one sample (its input; the outputs of all its layers, summed)
// and in its parameters, 2^32 each (16 GiB in f32). Past any memory retrograd runs in, and it
// keeps every size computed from them (times a batch, a dtype's bytes) far from overflowing.
constexpr int64_t kMaxModelValues = int64_t{1} << 32;

// Splits text (UTF-8 or ASCII; a leading byte-order mark is skipped) into sections; syntax
// errors name the file and line.
Result<CfgDocument> parse_cfg(const std::string& text, const std::string& file);
// A cfg file: a regular file (input_file.h) of at most kMaxCfgBytes, refused as binary on its
// first bytes, then parsed.
Result<CfgDocument> load_cfg_file(const std::string& path);

}  // namespace rg
