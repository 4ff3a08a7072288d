#include "cuda_arena.hpp"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <vector>

#include "grma/error.hpp"

namespace grma::detail {

void cuda_check(int status, const char* what) {
  if (status == 0) return;
  const auto e = static_cast<cudaError_t>(status);
  throw error(errc::device_error, -1, call::runtime,
              std::string("grma: ") + what + " failed: " + cudaGetErrorName(e) + ": " +
                  cudaGetErrorString(e));
}

cuda_arena::cuda_arena(const arena_params& p, unsigned char* shared_host)
    : layout_(layout_arena(p)) {
  try {
    cuda_check(cudaGetDevice(&device_), "cudaGetDevice");
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&heap_), layout_.heap_bytes),
               ("cudaMalloc of the " + std::to_string(layout_.heap_bytes) + "-byte heap").c_str());
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&control_), layout_.control_bytes),
               "cudaMalloc of the control block");
    if (shared_host != nullptr) {
      cuda_check(cudaHostRegister(shared_host, layout_.host_bytes,
                                  cudaHostRegisterMapped | cudaHostRegisterPortable),
                 "cudaHostRegister of the host-visible block");
      host_ = shared_host;
      host_registered_ = true;
    } else {
      cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&host_), layout_.host_bytes,
                               cudaHostAllocMapped | cudaHostAllocPortable),
                 "cudaHostAlloc of the host-visible block");
    }
    std::memset(host_, 0, layout_.host_bytes);
    unsigned char* host_on_device = nullptr;
    cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_on_device), host_, 0),
               "cudaHostGetDevicePointer");

    view_ = make_view(layout_, p, heap_, control_, host_on_device);
    host_view_ = make_view(layout_, p, heap_, control_, host_);
    std::vector<unsigned char> image(layout_.control_bytes, 0);
    const heap_block first = init_arena(layout_, p, image.data(), host_);
    cuda_check(cudaMemcpy(control_, image.data(), image.size(), cudaMemcpyHostToDevice),
               "cudaMemcpy of the control block");
    cuda_check(cudaMemset(heap_, 0, layout_.heap_bytes), "cudaMemset of the heap");
    cuda_check(cudaMemcpy(heap_ + layout_.allocatable_start, &first, sizeof first,
                          cudaMemcpyHostToDevice),
               "cudaMemcpy of the heap header");
    // Other GPUs and processes start using these blocks after host-side
    // ordering only: the copies must have landed.
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after setting up the arena");
  } catch (...) {
    release();
    throw;
  }
}

cuda_arena::~cuda_arena() { release(); }

void cuda_arena::release() {
  cudaSetDevice(device_);
  if (heap_ != nullptr) cudaFree(heap_);
  if (control_ != nullptr) cudaFree(control_);
  if (host_ != nullptr) {
    if (host_registered_)
      cudaHostUnregister(host_);
    else
      cudaFreeHost(host_);
  }
  heap_ = control_ = host_ = nullptr;
}

void cuda_arena::copy_to_heap(std::uint64_t offset, const void* source, std::size_t bytes,
                              void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cuda_check(cudaMemcpyAsync(heap_ + offset, source, bytes, cudaMemcpyHostToDevice, s),
             "copying userdata to the device");
  cuda_check(cudaStreamSynchronize(s), "copying userdata to the device");
}

void cuda_arena::copy_from_heap(std::uint64_t offset, void* destination, std::size_t bytes,
                                void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cuda_check(cudaMemcpyAsync(destination, heap_ + offset, bytes, cudaMemcpyDeviceToHost, s),
             "copying userdata back to the host");
  cuda_check(cudaStreamSynchronize(s), "copying userdata back to the host");
}

cuda_peer_arena::handles cuda_peer_arena::export_handles(const cuda_arena& arena) {
  static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(handles::heap), "an IPC handle is 64 bytes");
  handles h{};
  cudaIpcMemHandle_t heap, control;
  cuda_check(cudaIpcGetMemHandle(&heap, arena.heap_memory()), "cudaIpcGetMemHandle of the heap");
  cuda_check(cudaIpcGetMemHandle(&control, arena.control_memory()),
             "cudaIpcGetMemHandle of the control block");
  std::memcpy(h.heap, &heap, sizeof heap);
  std::memcpy(h.control, &control, sizeof control);
  return h;
}

cuda_peer_arena::cuda_peer_arena(const handles& h, unsigned char* host, std::size_t host_bytes) {
  try {
    cudaIpcMemHandle_t heap, control;
    std::memcpy(&heap, h.heap, sizeof heap);
    std::memcpy(&control, h.control, sizeof control);
    cuda_check(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&heap_), heap,
                                    cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle of a peer's heap");
    cuda_check(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&control_), control,
                                    cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle of a peer's control block");
    cuda_check(cudaHostRegister(host, host_bytes, cudaHostRegisterMapped | cudaHostRegisterPortable),
               "cudaHostRegister of a peer's host-visible block");
    host_ = host;
    cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_on_device_), host, 0),
               "cudaHostGetDevicePointer");
  } catch (...) {
    release();
    throw;
  }
}

cuda_peer_arena::~cuda_peer_arena() { release(); }

void cuda_peer_arena::release() {
  if (heap_ != nullptr) cudaIpcCloseMemHandle(heap_);
  if (control_ != nullptr) cudaIpcCloseMemHandle(control_);
  if (host_ != nullptr) cudaHostUnregister(host_);
  heap_ = control_ = host_ = nullptr;
}

}  // namespace grma::detail
