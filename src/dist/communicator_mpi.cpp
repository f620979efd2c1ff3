// The communicator on MPI's C API (Open MPI or MPICH). Errors come back as Status (the world's
// error handler returns them) so a rank that cannot reach the others says which call failed.
#define OMPI_SKIP_MPICXX 1   // the C API only: no C++ bindings to link
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cpu/kernel_tables.h"
#include "dist/communicator.h"

namespace rg {

namespace {
constexpr int64_t kChunk = int64_t(1) << 28;  // MPI counts are ints: larger data goes in pieces

MPI_Op f16_sum_op = MPI_OP_NULL;

// A user reduction for f16 values carried as MPI_UINT16_T: each pair added in f32, rounded to
// f16; converted in blocks by the CPU's f16 converters (F16C where there is one).
void sum_f16(void* in, void* inout, int* count, MPI_Datatype*) {
  constexpr int kBlock = 1024;
  const HalfConvertKernels& convert = f16_convert();
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  float fa[kBlock], fb[kBlock];
  for (int at = 0; at < *count; at += kBlock) {
    const int n = std::min(kBlock, *count - at);
    convert.to_f32(n, a + at, fa);
    convert.to_f32(n, b + at, fb);
    for (int i = 0; i < n; ++i) fb[i] += fa[i];
    convert.from_f32(n, fb, b + at);
  }
}

Status mpi_status(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::error(std::string("MPI: ") + call + " failed: " + std::string(text, static_cast<size_t>(length)) +
                       " (a rank stopped, or the network between the PCs failed)");
}

// Times one collective into *totals.
class Timed {
 public:
  Timed(CommTotals* totals, int64_t bytes) : totals_(totals), start_(std::chrono::steady_clock::now()) {
    totals_->calls += 1;
    totals_->payload_bytes += bytes;
  }
  ~Timed() { totals_->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  CommTotals* totals_;
  std::chrono::steady_clock::time_point start_;
};

template <typename T>
Status allreduce_in_place(T* data, int64_t n, MPI_Datatype type, MPI_Op op, const char* what) {
  for (int64_t at = 0; at < n; at += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, n - at));
    RG_TRY(mpi_status(MPI_Allreduce(MPI_IN_PLACE, data + at, count, type, op, MPI_COMM_WORLD), what));
  }
  return Status();
}
}  // namespace

bool Communicator::available() { return true; }

Result<std::unique_ptr<Communicator>> Communicator::join_launched_job() {
  if (mpi_launcher_in_environment().empty()) return std::unique_ptr<Communicator>();
  int provided = 0;
  // Only the main thread calls MPI; the thread pool's workers never do.
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return Status::error("MPI: MPI_Init_thread failed (see the MPI library's message above)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1, local_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm local;  // the ranks sharing this host's memory: they share its cores too
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
  }
  MPI_Op_create(&sum_f16, /*commute=*/1, &f16_sum_op);
  return std::unique_ptr<Communicator>(new Communicator(rank, size, local_size));
}

Communicator::~Communicator() {
  MPI_Op_free(&f16_sum_op);
  MPI_Finalize();
}

std::string Communicator::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  const size_t line = version.find_first_of(",\n");  // the first clause: name and version
  return version.substr(0, line);
}

Status Communicator::sum(double* data, int64_t n) {
  Timed timed(&totals_, n * static_cast<int64_t>(sizeof(double)));
  return allreduce_in_place(data, n, MPI_DOUBLE, MPI_SUM, "MPI_Allreduce (sum of doubles)");
}

Status Communicator::sum(float* data, int64_t n, GradientWire wire) {
  if (wire == GradientWire::f32) {
    Timed timed(&totals_, n * static_cast<int64_t>(sizeof(float)));
    return allreduce_in_place(data, n, MPI_FLOAT, MPI_SUM, "MPI_Allreduce (sum of f32 gradients)");
  }
  // f16: agree on the largest magnitude (and whether any value is not finite) first.
  float largest = 0;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {  // branch-free, so the compiler vectorizes it
    const float v = std::fabs(data[i]);
    largest = v > largest ? v : largest;
    nan = nan | (v != v);
  }
  double agreed[2] = {largest, nan || std::isinf(largest) ? 1.0 : 0.0};  // max |v|, 1 when a value is not finite
  {
    Timed timed(&totals_, sizeof agreed);
    RG_TRY(allreduce_in_place(agreed, 2, MPI_DOUBLE, MPI_MAX, "MPI_Allreduce (the gradients' largest value)"));
  }
  if (agreed[1] != 0) return sum(data, n, GradientWire::f32);  // an Inf or NaN travels as it is, for the guard
  // The sum of `size` values below max stays under 2^14, clear of f16's 65504 after rounding.
  const int exponent = agreed[0] > 0 ? std::clamp(static_cast<int>(std::floor(std::log2(16384.0 / (size_ * agreed[0])))), -126, 126) : 0;
  const float scale = std::ldexp(1.0f, exponent), unscale = std::ldexp(1.0f, -exponent);
  wire16_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) data[i] *= scale;  // a power of two: exact
  f16_convert().from_f32(n, data, wire16_.data());
  {
    Timed timed(&totals_, n * static_cast<int64_t>(sizeof(uint16_t)));
    RG_TRY(allreduce_in_place(wire16_.data(), n, MPI_UINT16_T, f16_sum_op, "MPI_Allreduce (sum of f16 gradients)"));
  }
  f16_convert().to_f32(n, wire16_.data(), data);
  for (int64_t i = 0; i < n; ++i) data[i] *= unscale;
  return Status();
}

Status Communicator::broadcast(void* bytes, int64_t size) {
  Timed timed(&totals_, size);
  auto* p = static_cast<char*>(bytes);
  for (int64_t at = 0; at < size; at += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, size - at));
    RG_TRY(mpi_status(MPI_Bcast(p + at, count, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast"));
  }
  return Status();
}

Status Communicator::broadcast(std::vector<uint8_t>* bytes) {
  int64_t length = static_cast<int64_t>(bytes->size());
  RG_TRY(broadcast(&length, sizeof length));
  bytes->resize(static_cast<size_t>(length));
  return broadcast(bytes->data(), length);
}

Result<std::vector<std::string>> Communicator::gather(const std::string& text) {
  if (text.size() > INT_MAX) return Status::error("MPI: a text of " + std::to_string(text.size()) + " bytes is too long to gather");
  Timed timed(&totals_, static_cast<int64_t>(text.size()));
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  RG_TRY(mpi_status(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather"));
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    if (total + lengths[static_cast<size_t>(r)] > INT_MAX) return Status::error("MPI: the gathered texts exceed 2 GiB");
    offsets[static_cast<size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(is_root() ? total : 0), '\0');
  RG_TRY(mpi_status(MPI_Gatherv(text.data(), length, MPI_CHAR, &all[0], lengths.data(), offsets.data(), MPI_CHAR, 0,
                                MPI_COMM_WORLD),
                    "MPI_Gatherv"));
  std::vector<std::string> texts;
  if (!is_root()) return texts;
  for (int r = 0; r < size_; ++r) texts.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]), static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return texts;
}

Result<bool> Communicator::all_ok(bool ok) {
  int value = ok ? 1 : 0;
  Timed timed(&totals_, sizeof value);
  RG_TRY(allreduce_in_place(&value, 1, MPI_INT, MPI_MIN, "MPI_Allreduce (every rank ready)"));
  return value == 1;
}

void Communicator::abort(int code) {
  std::fflush(nullptr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);  // MPI_Abort does not return; if it did, stop this rank at least
}

}  // namespace rg
