// The one place where grma touches atomics. Every shared word of the runtime is
// accessed through these functions, so the memory scope and order of each access
// is visible at the call site and the same code compiles for the CPU backend
// (std::atomic_ref) and for CUDA (cuda::atomic_ref with an explicit thread scope).
#pragma once

#include <cstdint>

#include "grma/config.hpp"

#if defined(__CUDACC__)
#include <cuda/atomic>
#else
#include <atomic>
#endif

namespace grma::detail {

// device: ranks of one device (and the CPU backend's threads of one process).
// system: the device plus the host and peer devices (mapped or peer memory).
enum class scope { device, system };

#if defined(__CUDACC__)
namespace order = cuda::std;
template <class T, scope S>
using atomic_ref_t = cuda::atomic_ref<
    T, S == scope::system ? cuda::thread_scope_system : cuda::thread_scope_device>;
#else
namespace order = std;
template <class T, scope S>
using atomic_ref_t = std::atomic_ref<T>;
#endif

template <scope S = scope::device, class T>
GRMA_INLINE T load_acquire(T& word) {
  return atomic_ref_t<T, S>(word).load(order::memory_order_acquire);
}

template <scope S = scope::device, class T>
GRMA_INLINE T load_relaxed(T& word) {
  return atomic_ref_t<T, S>(word).load(order::memory_order_relaxed);
}

template <scope S = scope::device, class T>
GRMA_INLINE void store_release(T& word, T value) {
  atomic_ref_t<T, S>(word).store(value, order::memory_order_release);
}

template <scope S = scope::device, class T>
GRMA_INLINE void store_relaxed(T& word, T value) {
  atomic_ref_t<T, S>(word).store(value, order::memory_order_relaxed);
}

// Reserving a ticket or counting an event: no data is published by the
// increment itself, so relaxed suffices.
template <scope S = scope::device, class T>
GRMA_INLINE T fetch_add_relaxed(T& word, T value) {
  return atomic_ref_t<T, S>(word).fetch_add(value, order::memory_order_relaxed);
}

// An add that publishes the writer's earlier stores (a signal word) and whose
// result may be used to read others' data: acquire + release.
template <scope S = scope::device, class T>
GRMA_INLINE T fetch_add_acq_rel(T& word, T value) {
  return atomic_ref_t<T, S>(word).fetch_add(value, order::memory_order_acq_rel);
}

template <scope S = scope::device, class T>
GRMA_INLINE T exchange_acq_rel(T& word, T value) {
  return atomic_ref_t<T, S>(word).exchange(value, order::memory_order_acq_rel);
}

// Lock acquisition: on success the critical section's reads see the previous
// holder's writes (acquire); failure needs no ordering.
template <scope S = scope::device, class T>
GRMA_INLINE bool compare_exchange_acquire(T& word, T expected, T desired) {
  return atomic_ref_t<T, S>(word).compare_exchange_strong(
      expected, desired, order::memory_order_acquire, order::memory_order_relaxed);
}

// Orders this thread's earlier accesses (and, being cumulative, those it has
// observed, such as its block's writes before a barrier) before its later
// stores. Device code only: on the host a release store is used instead,
// which ThreadSanitizer understands.
template <scope S = scope::device>
GRMA_INLINE void fence_release() {
#if defined(__CUDACC__)
  cuda::atomic_thread_fence(order::memory_order_release,
                            S == scope::system ? cuda::thread_scope_system : cuda::thread_scope_device);
#else
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

}  // namespace grma::detail
