// The MPI transport (transport.hpp): MPI point-to-point on a communicator
// of grma's own, so nothing mixes with the program's messages. MPI is
// initialized with MPI_THREAD_SERIALIZED (process_group): only the engine's
// thread calls it while a job runs.
#pragma once

#include <memory>

#include "transport.hpp"

namespace grma::detail {

// Collective over the job's processes: every process makes its transport
// at the same step of each job across nodes (the first one duplicates the
// world communicator). Each numbers its job alike on every process, so a
// message left over from an earlier job that failed never matches this
// one's. An error when grma was built without MPI.
std::unique_ptr<transport> make_mpi_transport();

// Whether this MPI takes GPU memory (a CUDA-aware build, asked at run time).
bool mpi_reaches_cuda_memory();

}  // namespace grma::detail
