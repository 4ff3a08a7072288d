// Lays out and owns the memory of one device's shared state (device_state.hpp):
// the heap, the control block (allocator, window table, queues, collectives,
// per-rank state) and the host-visible block (status, errors, log).
#pragma once

#include <cstdint>
#include <memory>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

struct arena_params {
  int ranks;       // on this device
  int world_size;  // in the job
  int first_rank;  // world rank of this device's rank 0
  int threads_per_rank;
  std::uint64_t heap_size;  // allocatable bytes
  std::uint64_t userdata_size;
  std::uint32_t queue_capacity;
  std::uint32_t match_capacity;
  std::uint32_t max_windows;
  std::uint32_t log_capacity;
};

// Host-memory arena for the CPU backend.
class device_arena {
 public:
  explicit device_arena(const arena_params& p);
  ~device_arena();
  device_arena(const device_arena&) = delete;
  device_arena& operator=(const device_arena&) = delete;

  const device_view& view() const { return view_; }

 private:
  struct block_deleter {
    void operator()(unsigned char* p) const;
  };
  std::unique_ptr<unsigned char, block_deleter> heap_, control_, host_;
  device_view view_{};
};

}  // namespace grma::detail
