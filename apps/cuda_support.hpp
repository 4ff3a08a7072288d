// What the applications' CUDA baselines share: errors and the current GPU.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace apps {

// Throws std::runtime_error naming `what` and CUDA's reason.
inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

inline int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// Lets the current device reach `peer`'s memory (grma's runtime in this
// process may have let it already).
inline void enable_peer_access(int peer) {
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e != cudaErrorPeerAccessAlreadyEnabled) check_cuda(e, "cudaDeviceEnablePeerAccess");
  cudaGetLastError();  // clears the error that says it was
}

// Gives the caller back its current device (grma's runtime starts from it).
class device_restorer {
 public:
  device_restorer() { check_cuda(cudaGetDevice(&device_), "cudaGetDevice"); }
  ~device_restorer() { cudaSetDevice(device_); }
  device_restorer(const device_restorer&) = delete;
  device_restorer& operator=(const device_restorer&) = delete;

 private:
  int device_ = 0;
};

}  // namespace apps
