// A device's shared state on a GPU: heap and control block in device memory,
// the host-visible block in mapped pinned host memory (its own, or shared
// memory that other processes map too).
#pragma once

#include <cstddef>

#include "../../runtime/arena_layout.hpp"

namespace grma::detail {

// Throws grma::error (device_error) naming `what` unless `status` is 0.
void cuda_check(int status, const char* what);

class cuda_arena {
 public:
  // With `shared_host` (zeroed, layout.host_bytes), the host-visible block is
  // that memory, registered with CUDA; else grma allocates it.
  explicit cuda_arena(const arena_params& p, unsigned char* shared_host = nullptr);
  ~cuda_arena();  // after a kernel trap the context is gone; frees what it can
  cuda_arena(const cuda_arena&) = delete;
  cuda_arena& operator=(const cuda_arena&) = delete;

  // Addresses for the ranks (device memory; the host-visible block as the
  // device sees it).
  device_view& view() { return view_; }
  // The same state with the host-visible block at its host addresses, for the
  // progress thread.
  device_view& host_view() { return host_view_; }

  const arena_layout& layout() const { return layout_; }
  // The device allocations, for CUDA IPC handles.
  void* heap_memory() const { return heap_; }
  void* control_memory() const { return control_; }

  void copy_to_heap(std::uint64_t offset, const void* source, std::size_t bytes, void* stream);
  void copy_from_heap(std::uint64_t offset, void* destination, std::size_t bytes, void* stream);

 private:
  void release();

  int device_ = 0;  // the GPU it was made on (current at construction)
  arena_layout layout_{};
  unsigned char* heap_ = nullptr;
  unsigned char* control_ = nullptr;
  unsigned char* host_ = nullptr;
  bool host_registered_ = false;  // shared_host: unregister, do not free
  device_view view_{};
  device_view host_view_{};
};

// Another process's GPU arena, mapped into this process for the current GPU:
// heap and control block through CUDA IPC handles (peer access enabled on
// first use), the host-visible block from shared memory, registered with CUDA.
class cuda_peer_arena {
 public:
  struct handles {
    unsigned char heap[64];  // cudaIpcMemHandle_t, opaque here
    unsigned char control[64];
  };
  static handles export_handles(const cuda_arena& arena);

  cuda_peer_arena(const handles& h, unsigned char* host, std::size_t host_bytes);
  ~cuda_peer_arena();
  cuda_peer_arena(const cuda_peer_arena&) = delete;
  cuda_peer_arena& operator=(const cuda_peer_arena&) = delete;

  unsigned char* heap() const { return heap_; }
  unsigned char* control() const { return control_; }
  unsigned char* host_on_device() const { return host_on_device_; }

 private:
  void release();

  unsigned char* heap_ = nullptr;
  unsigned char* control_ = nullptr;
  unsigned char* host_ = nullptr;
  unsigned char* host_on_device_ = nullptr;
};

}  // namespace grma::detail
