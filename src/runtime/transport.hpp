// How the network engines of a job's nodes reach each other: nonblocking
// byte messages between the job's processes. The engine (remote_engine)
// uses only these calls; which transport joins a job is a setting
// (GRMA_TRANSPORT, make_transport):
//  - mpi: MPI point-to-point on a communicator of grma's own (mpi_transport);
//  - ucx: UCP tagged messages (ucx_transport);
//  - loopback: the nodes of a job that one process plays (GRMA_NODES),
//    joined by queues in memory (loopback_transport), so that everything
//    the engines do runs in tests without a launcher.
//
// Messages on one channel between two processes arrive in the order they
// were sent. Only one thread uses an endpoint at a time (the engine's).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "grma/settings.hpp"

namespace grma::detail {

enum class channel : int {
  header = 1,  // fixed-size headers (remote_command), received from any process
  data = 2,    // the bytes that follow a header, between one pair in order
  record = 3,  // the engines' own records that follow a header (a node's
               // arrivals, an abort's error record): never behind data
};

// Where a buffer the transport reads or writes is. UCX must be told: it
// looks a pointer up in a cache of the allocations it saw, and takes one
// it never saw (the job's heap, allocated before it started) for host
// memory.
enum class memory_place { host, device };

class transport {
 public:
  virtual ~transport() = default;

  // The name GRMA_TRANSPORT gives it.
  virtual const char* name() const = 0;

  // Whether every endpoint is in this process (loopback: the nodes one
  // process plays), which lives and dies with them.
  virtual bool in_one_process() const = 0;

  // Whether sends and receives take GPU memory (a CUDA-aware MPI; UCX
  // with its CUDA transports); otherwise the engine stages GPU data in host
  // memory.
  virtual bool reaches_cuda_memory() const = 0;

  // Start sending or receiving `bytes` (any size) at `buffer`, which is in
  // `place` (a device's memory only where reaches_cuda_memory()). `done`
  // runs inside poll() once the buffer is the caller's again; for a receive
  // it gets the sender and the bytes that came (a message may be shorter
  // than its receive; a longer one is an error of poll()). `from` < 0: any
  // process (header channel only).
  virtual void send(int to, channel c, const void* buffer, std::size_t bytes, memory_place place,
                    std::function<void()> done) = 0;
  virtual void receive(int from, channel c, void* buffer, std::size_t bytes, memory_place place,
                       std::function<void(int from, std::size_t bytes)> done) = 0;

  // Completes what finished and runs its `done`, in the order the sends and
  // receives were started. Returns whether anything completed. Throws
  // grma::error when the network reports an error.
  virtual bool poll() = 0;
  // Nothing outstanding except receives posted with `from` < 0.
  virtual bool idle() const = 0;
  // Gives up on everything outstanding (the job is ending in failure).
  virtual void abandon() = 0;
};

struct loopback_hub;

// The nodes one process plays (GRMA_NODES), checked: only a job of one
// process plays several, and they split its `devices` evenly.
int nodes_in_process(const settings& s, int processes, int devices);

// The transport that joins a job's nodes (GRMA_TRANSPORT, resolved), where
// the job is on several: `nodes_in_process` > 1 (GRMA_NODES), or its
// processes on different nodes. An unusable choice is an error that says why.
transport_kind choose_transport(const settings& s, int nodes_in_process);

class process_group;

// Collective over `group`'s processes: the transport every one of them
// chose (choose_transport). Where they chose differently (GRMA_TRANSPORT
// set on some processes only), every process throws an error that names
// both choices; where one could not choose, it throws why and the others
// that it failed. Transports meet in collectives of their own: processes
// that made different ones would wait for ever.
transport_kind agree_on_transport(const process_group& group, const settings& s,
                                  int nodes_in_process);

// Endpoint `index` of `kind`, which choose_transport gave: mpi (collective:
// see make_mpi_transport), or loopback over `hub`.
std::unique_ptr<transport> make_transport(transport_kind kind, std::shared_ptr<loopback_hub> hub,
                                          int index);

}  // namespace grma::detail
