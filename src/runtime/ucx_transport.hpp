// The UCX transport (transport.hpp): UCP tagged messages between the job's
// processes, one worker per process and job, its endpoints made from
// worker addresses gathered through the process group (MPI, the
// bootstrap). A tag carries the job, the channel and the sender, so a
// receive names its sender (or any) and its channel as MPI's do, and UCP
// matches one sender's messages of one tag in the order they were sent.
// Host memory only: the engine stages a GPU's data, as over MPI.
#pragma once

#include <memory>

#include "transport.hpp"

namespace grma::detail {

// Collective over the job's processes (each gathers the others' worker
// addresses); an error that says why where UCX cannot start, or when grma
// was built without it.
std::unique_ptr<transport> make_ucx_transport();

}  // namespace grma::detail
