// The CPU backend's platform: a rank is one thread, memory is ordinary memory
// shared by the process's threads.
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
  static constexpr scope memory_scope = scope::device;

  static int thread_index() { return 0; }
  static int thread_count() { return 1; }
  static void sync() {}
  template <class T>
  static T broadcast(T value) { return value; }

  // Ranges of two windows may overlap; memmove keeps that defined.
  static void copy(void* destination, const void* source, std::size_t bytes) {
    if (bytes != 0) std::memmove(destination, source, bytes);
  }
  // One thread did the copy; the release store that publishes it orders it.
  static void publish_fence() {}

  static double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // Spin briefly, then give the core away: ranks usually outnumber cores.
  static void relax(std::uint32_t& spins) {
    if (++spins < 32) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }

  // First failure of the job: record it, stop every other rank, unwind.
  [[noreturn]] static void fail(job_control& control, const error_record& record) {
    if (compare_exchange_acquire(control.error_claimed, 0u, 1u)) control.error = record;
    // Release: the error record is complete before anyone sees the abort.
    store_release(control.abort, 1u);
    throw error(record);
  }

  // Leave a wait because the job was aborted elsewhere.
  [[noreturn]] static void leave(const error_record& record) { throw error(record); }
};

}  // namespace grma::detail
