// The on-disk form of a built OpenCL program (ProgramCache's binaries, for drivers that keep no
// compiled programs of their own): what the driver made, under a header naming what it was made
// for, so that a file for another device, driver, source or options, or a damaged one, is never
// handed to the driver:
//   retrograd-opencl-program 1
//   for <key>                          (device, platform, versions, kernel file, options, source hash)
//   bytes <N> fnv1a <16 hex digits>    (the binary's length and FNV-1a)
//   <the N bytes>
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg::ocl {

constexpr const char* kProgramBinaryMagic = "retrograd-opencl-program 1";
// Larger files are not read (NVIDIA's gemm.cl binaries are some hundred KB).
constexpr int64_t kMaxProgramBinaryFileBytes = int64_t{64} << 20;
// The binaries a cache folder may hold (each kernel source of each version leaves its own):
// past this, the oldest written go until three quarters of it are left.
constexpr int64_t kMaxProgramBinaryFolderBytes = int64_t{256} << 20;
// "opencl-program-<16 hex digits>.bin": the names prune_program_binaries may remove.
bool is_program_binary_name(const std::string& name);
// Removes the oldest program binaries of `folder` (by modification time) while they hold more
// than kMaxProgramBinaryFolderBytes, down to three quarters of it; never `keep` (a name). And
// any binary's write temporary an hour old (left by a process killed while writing it).
void prune_program_binaries(const std::string& folder, const std::string& keep);

// The file's bytes for `binary`, made for `key` (one line: no newline in it).
std::vector<uint8_t> program_binary_file(const std::string& key, const std::vector<uint8_t>& binary);
// The binary a file holds, when its header is this key's and its length and checksum hold; else
// an error naming the rule the file breaks.
Result<std::vector<uint8_t>> program_binary_of(const std::vector<uint8_t>& file, const std::string& key);

}  // namespace rg::ocl
