// UCX's own figures between MPI_COMM_WORLD process 0 and process `peer`, in
// the same run as grma's across nodes (built where grma has the UCX
// transport): process 0 puts (ucp_put_nbx) into memory the peer mapped
// (ucp_mem_map), and a flush ends each measurement, so every put has landed.
// Only those two processes make one (its figures are process 0's, NaN at the
// peer); its own UCX context, apart from the transport's, lives between
// grma's jobs.
#pragma once

#include <cstddef>
#include <memory>

namespace bench {

class ucx_puts {
 public:
  // Collective over the two processes. Each maps `bytes` of host memory, and
  // `device_region` (`bytes` of its GPU's memory) where one is given and
  // UCX reaches GPU memory (on_device()).
  ucx_puts(int peer, std::size_t bytes, void* device_region);
  ~ucx_puts();
  ucx_puts(const ucx_puts&) = delete;
  ucx_puts& operator=(const ucx_puts&) = delete;

  // Whether gbs() moves GPU memory (CUDA IPC between a node's GPUs).
  bool on_device() const;
  // 8-byte puts between host buffers, `window` in flight, then a flush:
  // puts per second.
  double rate(int puts, int window);
  // Puts of `bytes` (at most the mapped size), `iterations` of them in
  // flight, then a flush: GB/s.
  double gbs(std::size_t bytes, int iterations);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace bench
