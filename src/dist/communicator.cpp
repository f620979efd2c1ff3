// What every build has of the communicator: names, and the launcher seen in the environment.
#include "dist/communicator.h"

#include <cstdlib>
#include <vector>

#ifndef _WIN32
extern char** environ;
#endif

namespace rg {

const char* gradient_wire_name(GradientWire wire) { return wire == GradientWire::f16 ? "f16" : "f32"; }

Result<GradientWire> gradient_wire_from_name(const std::string& name) {
  if (name == "f32") return GradientWire::f32;
  if (name == "f16") return GradientWire::f16;
  return Status::error("unknown gradient format '" + name + "' (known: f32, f16)");
}

std::string mpi_launcher_in_environment() {
  // Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; MPICH's Hydra (and Intel MPI) PMI_SIZE; PMIx
  // launchers (srun, prterun) PMIX_RANK.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) return "mpirun (Open MPI)";
  if (std::getenv("PMI_SIZE") != nullptr) return "mpiexec (MPICH)";
  if (std::getenv("PMIX_RANK") != nullptr) return "a PMIx launcher";
  return "";
}

void hide_launcher_from_children() {
#ifndef _WIN32
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    for (const char* prefix : {"OMPI_", "PMI_", "PMIX_"}) {
      if (entry.rfind(prefix, 0) == 0) names.push_back(entry.substr(0, entry.find('=')));
    }
  }
  for (const std::string& name : names) unsetenv(name.c_str());
#endif
}

std::string Communicator::describe_rank() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

}  // namespace rg
