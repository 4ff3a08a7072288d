// Runtime settings: defaults, overridden by GRMA_* environment variables, then
// by --grma-* command-line arguments (see docs/configuration.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grma/types.hpp"

namespace grma {

// What joins the network engines of a job's nodes (docs/configuration.md).
// automatic: loopback for the nodes of one process (GRMA_NODES), else ucx
// where grma was built with UCX, else mpi.
enum class transport_kind { automatic, mpi, ucx, loopback };
const char* to_string(transport_kind t);
// The transports this grma was built with (loopback always), as grma-info lists them.
std::vector<transport_kind> transports_built();

struct settings {
  backend_kind backend = backend_kind::automatic;  // GRMA_BACKEND=auto|cpu|cuda
  int ranks_per_device = 0;                  // GRMA_RANKS_PER_DEVICE; 0 = backend default
  int devices = 1;                           // GRMA_DEVICES; 0 = every visible GPU (CPU: 1)
  std::uint64_t heap_size = 64ull << 20;     // GRMA_HEAP_SIZE, bytes per device (K/M/G suffixes)
  std::uint64_t symmetric_size = 64ull << 20;  // GRMA_SYMMETRIC_SIZE, symmetric heap bytes per device, split evenly among its ranks
  std::uint32_t queue_capacity = 1024;       // GRMA_QUEUE_CAPACITY, notifications per rank (power of 2)
  std::uint32_t match_capacity = 256;        // GRMA_MATCH_CAPACITY, unmatched notifications held per rank
  std::uint32_t max_windows = 64;  // GRMA_MAX_WINDOWS, live windows at once: one table for the
                                   // job's devices (each node its own)
  double timeout_seconds = 60;               // GRMA_TIMEOUT, watchdog; 0 disables it
  std::string node_id;                       // GRMA_NODE_ID; empty = the host name
  int nodes = 1;                             // GRMA_NODES: nodes one process plays (CPU backend, loopback)
  transport_kind transport = transport_kind::automatic;  // GRMA_TRANSPORT=auto|mpi|ucx|loopback
  bool engine_proxy = true;                  // GRMA_ENGINE_PROXY=1|0, GPUs across nodes: see docs/configuration.md
  waits_kind waits = waits_kind::automatic;  // GRMA_WAITS=auto|spin|yield|sleep, CPU backend

  // Settings from name/value pairs named like the environment variables
  // ("GRMA_HEAP_SIZE"); unknown GRMA_ names and bad values are errors. A
  // name given again takes its last value (only that one is read).
  static settings parse(const std::vector<std::pair<std::string, std::string>>& values);

  // GRMA_* from the environment, then --grma-name=value arguments, which are
  // removed from argv (argc shrinks accordingly).
  static settings from_environment(int* argc = nullptr, char** argv = nullptr);

  // Throws grma::error (errc::invalid_config) naming the first value out of
  // its range (docs/configuration.md), as parse does for a variable's text.
  // runtime's constructor checks the settings it is given.
  void check() const;
};

}  // namespace grma
