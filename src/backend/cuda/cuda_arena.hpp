// A device's shared state on a GPU: heap and control block in device memory,
// the host-visible block in mapped pinned host memory.
#pragma once

#include <cstddef>

#include "../../runtime/arena_layout.hpp"

namespace grma::detail {

// Throws grma::error (device_error) naming `what` unless `status` is 0.
void cuda_check(int status, const char* what);

class cuda_arena {
 public:
  explicit cuda_arena(const arena_params& p);
  ~cuda_arena();  // after a kernel trap the context is gone; frees what it can
  cuda_arena(const cuda_arena&) = delete;
  cuda_arena& operator=(const cuda_arena&) = delete;

  // Addresses for the ranks (device memory; the host-visible block as the
  // device sees it).
  device_view& view() { return view_; }
  // The same state with the host-visible block at its host addresses, for the
  // progress thread.
  device_view& host_view() { return host_view_; }

  void copy_to_heap(std::uint64_t offset, const void* source, std::size_t bytes, void* stream);
  void copy_from_heap(std::uint64_t offset, void* destination, std::size_t bytes, void* stream);

 private:
  void release();

  int device_ = 0;  // the GPU it was made on (current at construction)
  arena_layout layout_{};
  unsigned char* heap_ = nullptr;
  unsigned char* control_ = nullptr;
  unsigned char* host_ = nullptr;
  device_view view_{};
  device_view host_view_{};
};

}  // namespace grma::detail
