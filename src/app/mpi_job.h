// The command line's side of a data-parallel run (docs/distributed.md): joining the job that
// mpirun started, what only the root prints or writes, and the run's summary of its traffic.
#pragma once

#include <functional>
#include <string>

#include "app/args.h"
#include "dist/communicator.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace rg {

// Runs `command` as this process's part of the MPI job it was started in (comm null: a plain
// run). Ranks other than the root print nothing to stdout; a rank that fails stops every rank
// (the others may be waiting for it in a collective).
int run_in_job(const std::function<int(Communicator* comm)>& command);

// --grad-format, for `train`.
void add_mpi_options(Args& args);
// A data-parallel run's settings: the gradients' format, and threads shared among the ranks of
// one host unless --threads says. `threads` is this rank's pool.
Status apply_mpi_options(const Args& args, Communicator* comm, TrainOptions* options, int* threads);
// Options a data-parallel run refuses, with the reason; empty when none is given.
std::string refused_in_job(const Args& args);

// A checkpoint the root reads and sends to every rank (the other PCs need not have the file).
Result<Checkpoint> read_checkpoint_in_job(const std::string& path, Communicator* comm);

// "2 ranks (Open MPI v4.1.4), 2 on this host; gradients f32, 0.43 MB a step: 1.2 ms a step summing
// them (9% of a step)"
std::string describe_job(const Communicator& comm, const TrainOptions& options, int64_t param_count,
                         const std::vector<EpochRecord>& records);

}  // namespace rg
