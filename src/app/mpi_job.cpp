// The command line's side of a data-parallel run.
#include "app/mpi_job.h"

#include <algorithm>
#include <cstdio>

#include "app/commands.h"
#include "base/memory.h"
#include "base/serial.h"
#include "base/text_format.h"

namespace rg {

int run_in_job(const std::function<int(Communicator* comm)>& command) {
  auto joined = Communicator::join_launched_job();
  if (!joined.ok()) return fail(joined.status().message());
  const std::unique_ptr<Communicator> comm = joined.take();
  const bool many = comm && comm->size() > 1;
  if (many && !comm->is_root()) {  // one report: the root's
#ifdef _WIN32
    const char* null_device = "NUL";
#else
    const char* null_device = "/dev/null";
#endif
    if (std::freopen(null_device, "w", stdout) == nullptr) return fail(comm->describe_rank() + ": cannot silence stdout");
  }
  const int code = command(comm.get());
  if (code != 0 && many) {
    std::fprintf(stderr, "retrograd: %s stopped; stopping every rank\n", comm->describe_rank().c_str());
    comm->abort(code);
  }
  return code;
}

void add_mpi_options(Args& args) {
  args.option("grad-format", "f32|f16",
              "under mpirun: how gradients travel between the ranks (f16 halves the traffic, scaled to keep "
              "small values)", "f32");
}

Status apply_mpi_options(const Args& args, Communicator* comm, TrainOptions* options, int* threads) {
  auto wire = gradient_wire_from_name(args.text("grad-format"));
  if (!wire.ok()) return wire.status().with_context("--grad-format: ");
  options->gradient_wire = wire.value();
  if (comm == nullptr || comm->size() == 1) return Status();
  options->comm = comm;
  // Ranks on one host share its cores: each takes its part unless --threads says.
  if (!args.given("threads")) *threads = std::max(1, *threads / comm->ranks_on_this_host());
  return Status();
}

std::string refused_in_job(const Args& args) {
  if (args.given("precision")) return "--precision trains every precision in turn on one process: run it without mpirun";
  if (args.given("profile")) return "--profile times the layers of one process: run it without mpirun";
  if (args.given("device") && args.text("device") != "cpu") return "training over MPI runs on the CPU (for now): drop --device";
  return "";
}

Result<Checkpoint> read_checkpoint_in_job(const std::string& path, Communicator* comm) {
  if (comm == nullptr || comm->size() == 1) return read_checkpoint(path);
  Result<std::vector<uint8_t>> bytes = comm->is_root() ? read_checkpoint_bytes(path) : std::vector<uint8_t>();
  RG_ASSIGN(const bool read, comm->all_ok(bytes.ok()));
  if (!bytes.ok()) return bytes.status();
  if (!read) return Status::error(comm->describe_rank() + ": rank 0 could not read " + path + " (see its message)");
  std::vector<uint8_t> shared = bytes.take();
  RG_TRY(comm->broadcast(&shared));
  return parse_checkpoint(shared.data(), shared.size(), path);
}

std::string describe_job(const Communicator& comm, const TrainOptions& options, int64_t param_count,
                         const std::vector<EpochRecord>& records) {
  double comm_seconds = 0, seconds = 0;
  int64_t steps = 0;
  for (const EpochRecord& r : records) {
    comm_seconds += r.comm_seconds;
    seconds += r.seconds;
    steps += r.steps;
  }
  const int64_t wire_bytes = gradient_wire_bytes(options.gradient_wire, param_count);
  std::string text = std::to_string(comm.size()) + " ranks (" + comm.library_version() + "), " +
                     std::to_string(comm.ranks_on_this_host()) + " on this host; gradients " +
                     gradient_wire_name(options.gradient_wire) + ", " + format_bytes(wire_bytes) + " a step";
  if (steps > 0 && seconds > 0) {
    text += ": " + format_fixed(1e3 * comm_seconds / static_cast<double>(steps), 2) + " ms a step summing them (" +
            format_fixed(100.0 * comm_seconds / seconds, 1) + "% of training, waiting for the slowest rank included)";
  }
  return text;
}

}  // namespace rg
