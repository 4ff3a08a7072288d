// What a job's devices are and how each pair of them communicates (grma-info
// prints it; runs use the same paths).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grma/types.hpp"

namespace grma {

// How ranks of one device reach the memory of another.
enum class path_kind {
  same_device,     // device memory (or, on the CPU backend, the arena)
  process_memory,  // CPU backend: another arena of the same process
  peer_nvlink,     // peer access with native atomics (NVLink class)
  peer_pcie,       // peer access without native atomics (PCIe)
  no_peer_access,  // not peer-reachable: with a process per GPU the network engines connect them
  shared_memory,   // CPU backend: another process's arena on this node, mapped
  other_node,      // another node: the processes' network engines move the data
  not_visible,     // a GPU of this node that this process cannot see (its launcher's choice)
};

const char* to_string(path_kind p);

struct device_description {
  int index = 0;  // in the job
  int process = 0;  // the process that drives it
  int node = 0;     // the node that process is on
  int ordinal = 0;  // CUDA device ordinal (GPUs)
  std::string name;
  std::string bus_id;  // PCI bus id (GPUs)
  std::uint64_t memory_bytes = 0;
  int multiprocessors = 0;  // CPU backend: hardware threads
  std::size_t shared_memory_per_block = 0;
};

// The devices of the job and the path between each pair: in a job of
// several processes every process's devices (every call is then collective
// on the CUDA backend, the first on the CPU backend).
struct topology {
  backend_kind backend = backend_kind::cpu;
  std::vector<device_description> devices;
  std::vector<std::vector<path_kind>> paths;  // [from][to]
};

}  // namespace grma
