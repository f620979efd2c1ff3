// The processes of one data-parallel run (docs/distributed.md): an MPI job that mpirun or
// mpiexec started, one rank per process, usually one per PC. Only what training needs:
// sums of gradients and tallies over every rank, the root's state sent to every rank, texts
// gathered on the root. Built on MPI's collectives (Open MPI or MPICH), never on sockets of our own.
// Without MPI in the build (meson -Dmpi=disabled) the class exists but no job can be joined.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

// How gradients travel: f32, or f16 at half the bytes (scaled by a power of two that every
// rank agrees on first, so the largest sum fits f16's range and small values keep their bits).
enum class GradientWire { f32, f16 };
const char* gradient_wire_name(GradientWire wire);
// The bytes `values` gradients take on the wire.
inline int64_t gradient_wire_bytes(GradientWire wire, int64_t values) { return values * (wire == GradientWire::f16 ? 2 : 4); }
Result<GradientWire> gradient_wire_from_name(const std::string& name);

// What the collectives cost this process so far.
struct CommTotals {
  int64_t calls = 0;
  int64_t payload_bytes = 0;  // the data each rank contributed, in its wire format
  double seconds = 0;         // wall time inside the collectives: transfers and waiting for slower ranks
};

// The name of the MPI launcher this process was started by ("mpirun (Open MPI)"), or empty:
// read from the environment variables launchers set, so a build without MPI can say it cannot join.
std::string mpi_launcher_in_environment();
// Removes the launcher's variables from this process's environment (after joining), so the
// child processes it starts (a study's `retrograd train` runs) train alone, not as ranks.
void hide_launcher_from_children();

class Communicator {
 public:
  // Joins the job that an MPI launcher started this process in; null when none did (a plain run).
  // The error: launched by one, but this build has no MPI, or MPI failed to start.
  static Result<std::unique_ptr<Communicator>> join_launched_job();
  // True when this build can join an MPI job.
  static bool available();
  ~Communicator();  // leaves the job (MPI_Finalize)
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  int ranks_on_this_host() const { return local_size_; }
  // "rank 1 of 3"
  std::string describe_rank() const;
  // The MPI library's name and version ("Open MPI v4.1.4"), or empty in a build without MPI
  // (callable before joining a job).
  static std::string library_version();

  // data[0..n) on every rank becomes the sum over every rank.
  Status sum(float* data, int64_t n, GradientWire wire);
  Status sum(double* data, int64_t n);
  // The root's bytes[0..size) into every rank's (every rank passes the same size).
  Status broadcast(void* bytes, int64_t size);
  // The root's vector into every rank's, its length first.
  Status broadcast(std::vector<uint8_t>* bytes);
  // Every rank's text, in rank order, on the root; the other ranks get an empty list.
  Result<std::vector<std::string>> gather(const std::string& text);
  // True on every rank when `ok` is true on every rank (one rank's failure stops them all at the
  // same point, so none is left waiting in a collective).
  Result<bool> all_ok(bool ok);
  // Ends every rank's process with `code` (a rank failed where the others may be waiting).
  [[noreturn]] void abort(int code);

  const CommTotals& totals() const { return totals_; }

 private:
  Communicator(int rank, int size, int local_size) : rank_(rank), size_(size), local_size_(local_size) {}
  int rank_ = 0, size_ = 1, local_size_ = 1;
  CommTotals totals_;
  std::vector<uint16_t> wire16_;  // the f16 wire's buffer, kept between steps
};

}  // namespace rg
