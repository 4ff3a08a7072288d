// The network transport of the inter-node path: nonblocking byte messages
// between the job's processes, over MPI (a communicator of grma's own, so
// nothing mixes with the program's messages). The network engine uses only
// these calls, so another transport (UCX, libfabric) can take its place.
//
// Messages on one channel between two processes arrive in the order they
// were sent. Only one thread uses a transport at a time (MPI is initialized
// with MPI_THREAD_SERIALIZED; see process_group).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace grma::detail {

enum class channel : int {
  header = 1,  // fixed-size headers (remote_command), received from any process
  data = 2,    // the bytes that follow a header, between one pair in order
  record = 3,  // the engines' own records that follow a header (a node's
               // arrivals, an abort's error record): never behind data
};

class mpi_transport {
 public:
  // Collective over the job's processes the first time (it duplicates the
  // world communicator once per process). `run` numbers the job's runs
  // alike on every process: a message left over from an earlier run that
  // failed never matches this run's.
  explicit mpi_transport(unsigned run);
  ~mpi_transport();
  mpi_transport(const mpi_transport&) = delete;
  mpi_transport& operator=(const mpi_transport&) = delete;

  // Whether sends and receives take GPU memory (a CUDA-aware MPI, asked at
  // run time); otherwise the engine stages GPU data in host memory.
  static bool reaches_cuda_memory();

  // Start sending or receiving `bytes` (any size: split into messages MPI
  // can count, the same way on both sides). `done` runs inside poll() once
  // the buffer is the caller's again; for a receive it gets the sender.
  // `from` < 0: any process (header channel only).
  void send(int to, channel c, const void* buffer, std::size_t bytes, std::function<void()> done);
  void receive(int from, channel c, void* buffer, std::size_t bytes,
               std::function<void(int from)> done);

  // Completes what finished and runs its `done`. Returns whether anything
  // completed. Throws grma::error when MPI reports an error.
  bool poll();
  // Nothing outstanding except receives posted with `from` < 0.
  bool idle() const;
  // Gives up on everything outstanding (the job is ending in failure).
  void abandon();

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace grma::detail
