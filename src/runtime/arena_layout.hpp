// Where one device's shared state (device_state.hpp) lives: three blocks, the
// heap, the control block (allocator, window table, queues, collectives,
// per-rank state) and the host-visible block (status, errors, log). The
// layout and the initial contents are the same for every backend; only where
// the blocks are allocated differs (cpu_arena, cuda_arena).
#pragma once

#include <cstdint>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

// Log slots per device: lines wait for the host thread when it falls behind.
inline constexpr std::uint32_t log_capacity = 256;

struct arena_params {
  int ranks;       // on this device (every device of a job has as many)
  int world_size;  // in the job
  int first_rank;  // world rank of this device's rank 0
  int devices;     // in the job
  int device_index;
  std::uint64_t heap_size;       // allocatable bytes
  std::uint64_t symmetric_size;  // the symmetric heap's bytes on the device (all its ranks' slices)
  std::uint64_t userdata_size;
  std::uint32_t queue_capacity;
  std::uint32_t match_capacity;
  std::uint32_t max_windows;
  std::uint32_t log_capacity;
  // Processes whose host threads notify the ranks (launch_options::
  // host_access), else 0: the sources after the world ranks.
  int host_sources = 0;
};

struct arena_layout {
  std::uint64_t heap_bytes;         // userdata area + symmetric heap + allocatable heap
  std::uint64_t userdata_area;      // the heap's first bytes, userdata rounded up
  std::uint64_t symmetric_area;     // the ranks' symmetric slices, after the userdata area
  std::uint64_t symmetric_slice;    // a rank's bytes of the symmetric heap
  std::uint64_t allocatable_start;  // alloc's first block header, up to 192 bytes past the slices
  std::uint64_t control_bytes;
  std::uint64_t host_bytes;
  std::uint64_t queue_stride;
  // offsets in the control block
  std::uint64_t allocator, slots, entries, queues, tickets, collectives, world_arrivals,
      device_arrivals, words, completion, symmetric_count, symmetric_blocks, teams;
  // offsets in the host-visible block
  std::uint64_t status, control, log, commands, payloads, window_states;
};

arena_layout layout_arena(const arena_params& p);

// The pointers ranks use, for blocks at these addresses. What the job shares
// points at this device's own state until link_views.
device_view make_view(const arena_layout& l, const arena_params& p, unsigned char* heap,
                      unsigned char* control, unsigned char* host);

// Makes the views of a node's devices (bit d of node_devices: views[d] is
// device d's) reach each other: peers' heaps and queues, and the node's first
// device's window table, symmetric heap and team tables, world collective,
// abort flag and error claim.
// `views` must be addresses that device `d` can use (peer mappings on GPUs);
// devices of other nodes (no bit) have no view and stay unreachable. Each
// process keeps its userdata on its first device: devices_per_process tells
// which that is. `nodes`: how many the job spans.
void link_views(device_view* const* views, int devices, int devices_per_process,
                std::uint32_t node_devices, int nodes);
// The node_devices of a job on one node of `devices` devices.
constexpr std::uint32_t all_devices(int devices) { return (1u << devices) - 1u; }

// Writes the initial state, which holds no pointers (so any process may map
// it anywhere). `control_image` receives the control block's bytes (the block
// itself when it is host memory, else a zeroed staging copy the caller then
// copies to the device); `host` is the zeroed host-visible block. Returns the
// heap's first block header, to be stored at heap + allocatable_start.
heap_block init_arena(const arena_layout& l, const arena_params& p, unsigned char* control_image,
                      unsigned char* host);

}  // namespace grma::detail
