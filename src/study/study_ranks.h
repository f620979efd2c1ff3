// A study spread over the ranks of an MPI job (docs/distributed.md): each rank, one lab PC,
// measures its share of the plan's runs as child processes of its own; the root gathers the
// records and writes the one report. The PCs are taken to be alike (the report is the root's
// machine's); ranks that share a host disturb each other's timings, and the study says so.
#pragma once

#include <string>
#include <vector>

#include "dist/communicator.h"
#include "study/study_plan.h"
#include "study/study_result.h"

namespace rg {

// The rank that measures each of the plan's runs. A run sized from a time target follows the
// fp32 run of its network and device (it takes that run's sample count and speed), so each such
// network@device group stays on one rank; the groups, and the sweeps' runs one by one, are
// dealt out in turn.
std::vector<int> study_run_owners(const StudyPlan& plan, int ranks);

// Every rank's records on the root, in the plan's order: this rank's are result->runs and
// result->commands, whose plan indexes are `plan_indexes`; the root's `result` gets every
// rank's in place of its own.
Status gather_study_runs(Communicator& comm, const std::vector<size_t>& plan_indexes, StudyResult* result);

}  // namespace rg
