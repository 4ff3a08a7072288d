// The CPU backend's platform: a rank is one thread, memory is ordinary memory
// shared by the process's threads. Its functions are host+device only so that
// a translation unit compiled by nvcc can instantiate basic_rank for both
// backends; their bodies exist on the host alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "grma/error.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/device_state.hpp"

namespace grma::detail {

struct cpu_platform {
  // A rank is one thread: it is its own warp (basic_rank::one_warp).
  using warp_platform = cpu_platform;

  static constexpr scope memory_scope = scope::device;
  // Spins before a waiting rank publishes its state for the watchdog, and
  // between its looks at the abort flag: cheap here, so soon and often
  // (a wait that sleeps, under a quota, sees an abort within 32 ms).
  static constexpr std::uint32_t quiet_spins = 64;
  static constexpr std::uint32_t abort_spins = 64;
  // Calls between a rank's publications of its progress: every one (a
  // store to memory the watchdog's thread reads), so that a rank that
  // sends slowly to one that waits long counts as progress.
  static constexpr std::uint64_t progress_publish_interval = 1;

  // The rank's block state (device view, private state, place on its
  // device) is where the rank object says: each rank thread has its own.
  GRMA_INLINE static const device_view& view(const device_view& mine) { return mine; }
  GRMA_INLINE static rank_local& local(rank_local& mine) { return mine; }
  GRMA_INLINE static int device_rank(int mine) { return mine; }

  GRMA_INLINE static int thread_index() { return 0; }
  GRMA_INLINE static int thread_count() { return 1; }
  GRMA_INLINE static void sync() {}
  static constexpr bool broadcast_meets = true;  // one thread
  template <class T>
  GRMA_INLINE static T broadcast(T value) { return value; }
  GRMA_INLINE static bool any_thread(bool value) { return value; }
  // A rank is one thread: every memory it reaches is the rank's.
  GRMA_INLINE static bool thread_private(const void*) { return false; }
  // One thread per rank: no lanes to combine (the CUDA platform's calls).
  GRMA_INLINE static int lane_group_limit() { return 1; }
  template <class T, class F>
  GRMA_INLINE static T combine_lanes(T value, int, F&&) { return value; }

  // Ranges of two windows may overlap; memmove keeps that defined.
  GRMA_INLINE static void copy(void* destination, const void* source, std::size_t bytes) {
#if !GRMA_DEVICE_CODE
    if (bytes != 0) std::memmove(destination, source, bytes);
#endif
  }
  // Where a copy may be cut into pieces without slowing it (the CUDA
  // platform's steps): anywhere 16-byte aligned.
  GRMA_INLINE static std::size_t copy_step_bytes() { return 16; }
  // One thread did the copy; the release store that publishes it orders it.
  GRMA_INLINE static void publish_fence() {}

  GRMA_INLINE static double now_seconds() {
#if !GRMA_DEVICE_CODE
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
#else
    return 0;
#endif
  }

  // Spin briefly, then as `style` says (waits_kind): with a core for every
  // waiting thread keep spinning and yield only now and then (another
  // process may share them); otherwise give the core away, and where the
  // job chose sleep (a CPU quota), past sleep_after turns, sleep, 20 us
  // longer each turn up to 500 us: every wake spends the quota too (a few
  // microseconds; 32 threads that each woke every 70 us, what a 20 us
  // sleep lasts, would spend more than a core). Decision 047.
  static constexpr std::uint32_t sleep_after = 256;
  static constexpr std::uint32_t sleep_steps = 25;
  GRMA_INLINE static void relax(std::uint32_t& spins, waits_kind style) {
#if !GRMA_DEVICE_CODE
    if (++spins < 32 || (style == waits_kind::spin && spins % 1024 != 0)) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else if (style != waits_kind::sleep || spins < sleep_after) {
      std::this_thread::yield();
    } else {
      const std::uint32_t step = spins - sleep_after + 1;
      std::this_thread::sleep_for(std::chrono::microseconds(20) *
                                  (step < sleep_steps ? step : sleep_steps));
    }
#else
    (void)spins;
    (void)style;
#endif
  }

  // A failure of the job: the job's record where it is the first, and every
  // other rank stopped.
  GRMA_INLINE static void record_failure(std::uint32_t& claim, job_control& control,
                                         const error_record& record) {
#if !GRMA_DEVICE_CODE
    if (compare_exchange_acquire(claim, 0u, 1u)) {
      control.error = record;
      store_release(control.error_claimed, 1u);
    }
    // Release: the error record is complete before anyone sees the abort.
    store_release(control.abort, 1u);
#else
    (void)claim;
    (void)control;
    (void)record;
#endif
  }

  // First failure of the job: record it, stop every other rank, unwind.
  [[noreturn]] GRMA_INLINE static void fail(std::uint32_t& claim, job_control& control,
                                            const error_record& record) {
#if !GRMA_DEVICE_CODE
    record_failure(claim, control, record);
    throw error(record);
#else
    (void)claim;
    (void)control;
    (void)record;
    __builtin_unreachable();
#endif
  }

  // Leave a wait because the job was aborted elsewhere.
  [[noreturn]] GRMA_INLINE static void leave(const error_record& record) {
#if !GRMA_DEVICE_CODE
    throw error(record);
#else
    (void)record;
    __builtin_unreachable();
#endif
  }
};

}  // namespace grma::detail
