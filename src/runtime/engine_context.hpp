// What every piece of a network engine (remote_engine) works with: the
// job's layout, its process's devices as the engine reaches them
// (engine_memory), its endpoint of the transport, and a request's bytes
// moving in chunks through the data lanes (data_lanes). The engine's pieces:
// engine_intake (the ranks' commands, headers out), engine_operations
// (messages in, checked and served), engine_completion (requests ending in
// order, acknowledgements), engine_arrivals (world collectives),
// engine_liveness (beats, aborts, failures).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "data_lanes.hpp"
#include "engine_memory.hpp"
#include "remote_engine.hpp"
#include "transport.hpp"

namespace grma::detail {

using engine_clock = std::chrono::steady_clock;

// Messages only engines exchange, beside the ranks' remote_op (same header).
inline constexpr auto wire_get_reply = remote_op(16);  // a get's data (inline or following)
inline constexpr auto wire_ack = remote_op(17);        // `bytes` operations of `origin` are in place
inline constexpr auto wire_abort = remote_op(18);      // an error_record and `bytes` of report follow
inline constexpr auto wire_done = remote_op(19);       // the sender's ranks are done and acknowledged
inline constexpr auto wire_beat = remote_op(20);       // the sender is alive
// A host's request refused alone (engine_operations::check): its header
// back, the refusal in `tag` and the bytes registered in `signal_value`.
inline constexpr auto wire_refused = remote_op(21);

struct engine_context {
  engine_context(const job_nodes& n, std::vector<const device_view*> v,
                 std::unique_ptr<engine_memory> m, std::unique_ptr<transport> t);
  engine_context(const engine_context&) = delete;
  engine_context& operator=(const engine_context&) = delete;

  job_nodes nodes;
  std::vector<const device_view*> views;  // by device; null off this node
  std::vector<const device_view*> own;    // this process's devices
  const device_view* first = nullptr;     // this node's first device: what the node shares
  int ranks_per_device = 0;
  int world_size = 0;
  // Before `memory` and `net`: staging buffers that copies and sends in
  // flight hold return their room to it, and their memory to `memory`.
  data_lanes lanes;
  std::unique_ptr<engine_memory> memory;
  std::unique_ptr<transport> net;
  // When the engine loop's current turn began: the pieces read the clock
  // here, once a turn (a clock read per batch of headers and per piece
  // costs a busy engine much of its time).
  engine_clock::time_point now = engine_clock::now();

  int device_of(int rank) const { return rank / ranks_per_device; }
  int process_of_rank(int rank) const { return device_of(rank) / nodes.devices_per_process; }
  bool remote_process(int p) const {
    return nodes.node_of[std::size_t(p)] != nodes.node_of[std::size_t(nodes.process)];
  }
  // The engines this one exchanges messages with: other nodes' processes,
  // and every other process where host threads issue operations.
  bool peer(int p) const { return p != nodes.process && (nodes.host_access || remote_process(p)); }

  // An operation's origin: a world rank, or a process's host threads,
  // numbered after the world's ranks (a host notification's source).
  int host_origin(int process) const { return world_size + process; }
  bool is_host_origin(int origin) const { return origin >= world_size; }
  int origins() const { return world_size + nodes.processes; }
  int process_of_origin(int origin) const {
    return is_host_origin(origin) ? origin - world_size : process_of_rank(origin);
  }
  bool mine(int rank) const {
    return rank >= 0 && rank < world_size && process_of_rank(rank) == nodes.process;
  }
  const device_view& view_of(int rank) const { return *views[std::size_t(device_of(rank))]; }
  int first_rank() const { return nodes.process * nodes.devices_per_process * ranks_per_device; }

  // Where the bytes of a transfer are: a device's memory, or a host
  // thread's buffer (a host operation's), which the network reads and
  // writes itself.
  enum class memory_kind { device, host };
  // Sends `bytes` at `at`; `released` runs once the engine no longer reads
  // them (every chunk sent, or staged).
  void send_data(int to, const unsigned char* at, std::uint64_t bytes, std::function<void()> released,
                 memory_kind kind = memory_kind::device);
  // Receives `bytes` into `at`, then runs `done`.
  void receive_data(int from, unsigned char* at, std::uint64_t bytes, std::function<void()> done,
                    memory_kind kind = memory_kind::device);
  // Receives `bytes` from `from` and drops them (a refused put's), then runs
  // `done`: a chunk at a time in buffers the lane's staging limit bounds.
  void drop_data(int from, std::uint64_t bytes, std::function<void()> done);
};

}  // namespace grma::detail
