// The network engine of a job across nodes (DESIGN.md §2, the third path):
// one thread per process. Ranks never touch the network; the engine
//  - takes the commands the process's ranks queue for other nodes (put, get,
//    signal, a node's arrival at a world collective) and sends them;
//  - checks every request from another node against this node's window
//    table (a target trusts nothing it receives), writes or reads the data,
//    and only then publishes the notification or signal and acknowledges;
//  - forwards an abort to the other nodes (with the report a watchdog left
//    in the node's control block), and ends the job with a message when
//    another node's process stops answering or the network fails.
// The ranks' side is in rank.hpp (issue_remote, await_remote_delivered, collective_at).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "engine_memory.hpp"
#include "transport.hpp"

namespace grma::detail {

struct job_nodes {
  int processes;
  int process;  // this one
  int devices_per_process;
  std::vector<int> node_of;  // per process
  // Host threads may issue operations into the job (launch_options::
  // host_access): every process's engine is a peer of every other, those
  // of its node too, since a host operation goes to the engine of its
  // target's process.
  bool host_access = false;
};

class host_port;

class remote_engine {
 public:
  // `views`: every device of the job as this process addresses it, null for
  // devices on other nodes; `memory`: how the engine reaches its process's
  // devices; `net`: its endpoint of the transport that joins the nodes. A
  // process that stays silent for silence_limit_seconds is taken for lost.
  // (`nodes.process` is the process the engine serves: where one process
  // plays several nodes, each has its engine, and each engine a process
  // number of its own.)
  // `port`: where this process's host threads hand it their operations
  // (null: none; one engine of a process that plays several nodes).
  remote_engine(const job_nodes& nodes, std::vector<const device_view*> views,
                std::unique_ptr<engine_memory> memory, std::unique_ptr<transport> net,
                std::shared_ptr<host_port> port = nullptr);
  // Starts the engine's thread, which uses the transport from then on (an
  // MPI one: only once the thread in run() makes no MPI calls,
  // MPI_THREAD_SERIALIZED).
  void start();
  ~remote_engine();
  remote_engine(const remote_engine&) = delete;
  remote_engine& operator=(const remote_engine&) = delete;

  // The process's ranks have all returned: serve the other processes until
  // they are done too (or the job failed), then stop. ranks_done() says so
  // without waiting: every engine of a process that plays several nodes
  // must hear it before any can stop.
  void ranks_done();
  void finish();

  // Why the engine ended the job (a lost process, a network error), else
  // empty. A process named here may not take part in collectives any more.
  std::string failure() const;

  // A count that grows whenever a process on another node reports that its
  // ranks moved (with its beats): the watchdog's view of the other nodes.
  const std::atomic<std::uint64_t>& others_progress() const;

 private:
  struct state;
  std::unique_ptr<state> s_;
  std::thread thread_;
};

}  // namespace grma::detail
