// The communicator of a build without MPI (meson -Dmpi=disabled, or no MPI found): no job can
// be joined, so no Communicator is ever made; a run that an MPI launcher started says so
// instead of training alone while believing it trains with the others.
#include "dist/communicator.h"

#include <cstdlib>

namespace rg {

namespace {
Status no_mpi() { return Status::error("this retrograd was built without MPI (meson setup -Dmpi=enabled)"); }
}  // namespace

bool Communicator::available() { return false; }
std::string Communicator::library_version() { return ""; }

Result<std::unique_ptr<Communicator>> Communicator::join_launched_job() {
  const std::string launcher = mpi_launcher_in_environment();
  if (launcher.empty()) return std::unique_ptr<Communicator>();
  return Status::error("started by " + launcher + ", but " + no_mpi().message() +
                       ": every process would train alone; install libopenmpi-dev (bash tools/setup.sh --mpi) "
                       "and build again");
}

// Unreachable: nothing makes a Communicator in this build.
Communicator::~Communicator() = default;
Status Communicator::sum(float*, int64_t, GradientWire) { return no_mpi(); }
Status Communicator::sum(double*, int64_t) { return no_mpi(); }
Status Communicator::broadcast(void*, int64_t) { return no_mpi(); }
Status Communicator::broadcast(std::vector<uint8_t>*) { return no_mpi(); }
Result<std::vector<std::string>> Communicator::gather(const std::string&) { return no_mpi(); }
Result<bool> Communicator::all_ok(bool) { return no_mpi(); }
void Communicator::abort(int code) { std::exit(code); }

}  // namespace rg
