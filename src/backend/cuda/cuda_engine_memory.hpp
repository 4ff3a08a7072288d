// The network engine's access to a GPU (engine_memory): reads and writes up
// to 4 KiB, and the atomics the host cannot make on device memory, through a
// proxy warp on the GPU; larger ones as copies on a stream of its own, beside
// the running rank kernel (without the proxy, everything as copies and
// one-thread kernels).
#pragma once

#include <memory>
#include <span>

#include "../../runtime/engine_memory.hpp"

namespace grma::detail {

// For the process's GPU `device`. `heap_reached`: the GPU's heap where the
// network reaches GPU memory (a CUDA-aware MPI; UCX with CUDA), which then
// moves large chunks of it itself; empty otherwise. `peers`: the process
// drives other GPUs too, which the engine reaches from `device` through
// peer access (host access under GRMA_DEVICES).
// The proxy (`use_proxy`: settings::engine_proxy), or the atomics' kernels,
// need room beside the rank kernel: jobs across nodes leave one rank's worth
// (plan_cuda).
std::unique_ptr<engine_memory> make_cuda_engine_memory(int device,
                                                       std::span<const unsigned char> heap_reached,
                                                       bool use_proxy, bool peers);

}  // namespace grma::detail
