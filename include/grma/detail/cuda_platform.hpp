// The CUDA backend's platform: a rank is one thread block of a persistent
// kernel; the block's threads call the rank API together. Every function is
// __host__ __device__ so that basic_rank<cuda_platform> can be instantiated in
// any translation unit nvcc compiles; the host versions are never called.
#pragma once

#if defined(__CUDACC__)

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "grma/detail/atomic.hpp"
#include "grma/detail/device_state.hpp"
#include "grma/error.hpp"

namespace grma::detail {

struct cuda_warp_platform;

struct cuda_platform {
  // The platform of calls made by one warp of a rank alone (basic_rank::one_warp).
  using warp_platform = cuda_warp_platform;

  // Ranks of one GPU share device memory: device scope suffices (peer GPUs
  // and the host use system scope explicitly).
  static constexpr scope memory_scope = scope::device;
  // Spins before a waiting rank publishes its state for the watchdog, and
  // between its looks at the job's abort flag once it has: both cross PCIe
  // (writes that a later release fence waits for; reads), and hundreds of
  // waiting ranks doing so every millisecond or two slowed every copy and
  // proxy operation of their GPU 20-fold (measured: 527 pairs of 64 KiB puts
  // across nodes, 0.04 GB/s; with no such traffic, 1.03 GB/s). At relax()'s
  // pace about 50 ms and 14 ms; the watchdog waits seconds.
  static constexpr std::uint32_t quiet_spins = 32768;
  static constexpr std::uint32_t abort_spins = 8192;
  // Calls between a rank's publications of its progress (a PCIe write
  // each, as above).
  static constexpr std::uint64_t progress_publish_interval = 1024;

  // The rank's block state lives at fixed shared-memory addresses, set up by
  // the rank kernel (cuda_launch.hpp), and rank code reaches it there rather
  // than through the rank object: the compiler may keep a rank program out
  // of the kernel (a call), and the rank object it is passed then sits in
  // local memory, with a load from there before each access to the view,
  // the rank's state or its place (measured: 7 % of an 8-byte notified
  // put's round trip on an H100). The host versions (never run) return
  // what the rank object holds.
  __device__ __forceinline__ static device_view& kernel_view() {
    __shared__ device_view block_view;
    return block_view;
  }
  __device__ __forceinline__ static rank_local& kernel_local() {
    __shared__ rank_local block_local;
    return block_local;
  }
  GRMA_INLINE static const device_view& view(const device_view& mine) {
#if GRMA_DEVICE_CODE
    (void)mine;
    return kernel_view();
#else
    return mine;
#endif
  }
  GRMA_INLINE static rank_local& local(rank_local& mine) {
#if GRMA_DEVICE_CODE
    (void)mine;
    return kernel_local();
#else
    return mine;
#endif
  }
  GRMA_INLINE static int device_rank(int mine) {
#if GRMA_DEVICE_CODE
    (void)mine;
    return int(blockIdx.x);  // one block per rank, a one-dimensional grid (rank_kernel)
#else
    return mine;
#endif
  }

  GRMA_INLINE static int thread_index() {
#if GRMA_DEVICE_CODE
    return int(threadIdx.x);
#else
    return 0;
#endif
  }
  GRMA_INLINE static int thread_count() {
#if GRMA_DEVICE_CODE
    return int(blockDim.x);
#else
    return 1;
#endif
  }
  GRMA_INLINE static void sync() {
#if GRMA_DEVICE_CODE
    __syncthreads();
#endif
  }

  // Thread 0's value, to every thread of the block. The first barrier keeps
  // thread 0 from overwriting the slot while others still read the last one;
  // the barriers also order thread 0's memory operations before it with
  // the others' after it (broadcast_meets).
  static constexpr bool broadcast_meets = true;
  template <class T>
  GRMA_INLINE static T broadcast(T value) {
#if GRMA_DEVICE_CODE
    __shared__ T slot;
    __syncthreads();
    if (threadIdx.x == 0) slot = value;
    __syncthreads();
    return slot;
#else
    return value;
#endif
  }
  // The threads meet (as sync()) and learn whether any of them held
  // `value`: one barrier where broadcast takes two.
  GRMA_INLINE static bool any_thread(bool value) {
#if GRMA_DEVICE_CODE
    return __syncthreads_or(value) != 0;
#else
    return value;
#endif
  }

  // Is `p` one thread's own memory (a local array), which the block's other
  // threads cannot reach?
  GRMA_INLINE static bool thread_private(const void* p) {
#if GRMA_DEVICE_CODE
    return __isLocal(p) != 0;
#else
    (void)p;
    return false;
#endif
  }

  // The widest lane group combine_lanes may take: a warp where the block's
  // threads fill whole warps (every lane of a warp must take part).
  GRMA_INLINE static int lane_group_limit() {
#if GRMA_DEVICE_CODE
    return blockDim.x % 32 == 0 ? 32 : 1;
#else
    return 1;
#endif
  }

  // Combines the values of each aligned group of `lanes` lanes of a warp
  // (a power of two up to lane_group_limit()) with f, in a butterfly, then
  // gives every lane of a group its first lane's result: f need not be
  // commutative bit for bit (a float min of -0 and +0, or of a NaN), and
  // every lane must hold the same value. Every lane of the warp calls.
  template <class T, class F>
  GRMA_INLINE static T combine_lanes(T value, int lanes, F&& f) {
#if GRMA_DEVICE_CODE
    const int first = int(threadIdx.x & 31u) & ~(lanes - 1);
    if constexpr (sizeof(T) < 4) {  // integers of 1 or 2 bytes travel widened to an int and back
      static_assert(std::is_integral_v<T>, "lanes exchange integers of 1 or 2 bytes");
      for (int o = lanes / 2; o > 0; o /= 2)
        value = f(value, T(__shfl_xor_sync(0xffffffffu, int(value), o)));
      value = T(__shfl_sync(0xffffffffu, int(value), first));
    } else {
      static_assert(sizeof(T) == 4 || sizeof(T) == 8,
                    "lanes exchange values of 1, 2, 4 or 8 bytes");
      for (int o = lanes / 2; o > 0; o /= 2)
        value =
            f(value, word_cast<T>(__shfl_xor_sync(0xffffffffu, word_cast<word_bits<T>>(value), o)));
      value = word_cast<T>(__shfl_sync(0xffffffffu, word_cast<word_bits<T>>(value), first));
    }
#else
    (void)lanes;
    (void)f;
#endif
    return value;
  }

  // Copy by all threads of the block: 16-byte vectors when both ends are
  // 16-byte aligned, else bytes. The caller's publish_fence() completes it
  // before one thread publishes it. Reads bypass L1 (ld.cg): the source may
  // be another rank's window, written on another SM. Ranges that partly
  // overlap are copied as memmove does (the CPU backend's semantics).
  GRMA_INLINE static void copy(void* destination, const void* source, std::size_t bytes) {
    copy_by<cuda_platform>(destination, source, bytes);
  }
  // What one step of the copy moves (copy_by): a copy cut into pieces at
  // multiples of it takes as many steps, each with its loads in flight
  // together, as in one piece.
  GRMA_INLINE static std::size_t copy_step_bytes() { return copy_step_of<cuda_platform>(); }

 protected:
  // 16-byte vectors per thread per step of a copy: their loads are in
  // flight together, which a bandwidth-bound copy needs.
  static constexpr std::size_t copy_unroll = 8;
  template <class Group>
  GRMA_INLINE static std::size_t copy_step_of() {
    return std::size_t(Group::thread_count()) * copy_unroll * 16;
  }

  // The copy by the threads of `Group` (the block, or one warp): its
  // thread_index(), thread_count() and sync().
  template <class Group>
  GRMA_INLINE static void copy_by(void* destination, const void* source, std::size_t bytes) {
#if GRMA_DEVICE_CODE
    auto* db = static_cast<unsigned char*>(destination);
    const auto* sb = static_cast<const unsigned char*>(source);
    const std::size_t distance = db > sb ? std::size_t(db - sb) : std::size_t(sb - db);
    if (distance < bytes) return copy_overlapping<Group>(db, sb, bytes, distance);
    const auto d = reinterpret_cast<std::uintptr_t>(destination);
    const auto s = reinterpret_cast<std::uintptr_t>(source);
    const std::size_t me = std::size_t(Group::thread_index()), count = std::size_t(Group::thread_count());
    std::size_t done = 0;
    if (((d | s) & 15u) == 0) {
      constexpr std::size_t unroll = copy_unroll;
      const std::size_t vectors = bytes / 16;
      auto* dv = static_cast<uint4*>(destination);
      const auto* sv = static_cast<const uint4*>(source);
      const std::size_t step = count * unroll;
      std::size_t i = me;
      for (; i + step - count < vectors; i += step) {
        uint4 v[unroll];
#pragma unroll
        for (std::size_t k = 0; k < unroll; ++k) v[k] = __ldcg(sv + i + k * count);
#pragma unroll
        for (std::size_t k = 0; k < unroll; ++k) dv[i + k * count] = v[k];
      }
      for (; i < vectors; i += count) dv[i] = __ldcg(sv + i);
      done = vectors * 16;
    }
    for (std::size_t i = done + me; i < bytes; i += count) db[i] = __ldcg(sb + i);
#else
    (void)destination;
    (void)source;
    (void)bytes;
#endif
  }

 private:
  // Partly overlapping ranges: pieces no longer than the distance between
  // them, so a piece's reads and writes never meet, in the order that reads
  // every byte before it is overwritten; the group meets between pieces.
  template <class Group>
  GRMA_INLINE static void copy_overlapping(unsigned char* d, const unsigned char* s,
                                           std::size_t bytes, std::size_t distance) {
#if GRMA_DEVICE_CODE
    const bool backwards = d > s;
    const std::size_t me = std::size_t(Group::thread_index()), count = std::size_t(Group::thread_count());
    for (std::size_t done = 0; done < bytes; done += distance) {
      const std::size_t n = bytes - done < distance ? bytes - done : distance;
      const std::size_t at = backwards ? bytes - done - n : done;
      for (std::size_t i = me; i < n; i += count) d[at + i] = __ldcg(s + at + i);
      Group::sync();
    }
#else
    (void)d;
    (void)s;
    (void)bytes;
    (void)distance;
#endif
  }

 public:
  // Before one thread publishes data that all threads wrote: the barrier makes
  // their writes happen before the publishing thread's release, and release
  // is cumulative, so the target sees them when it acquires the publication.
  GRMA_INLINE static void publish_fence() { sync(); }

  GRMA_INLINE static double now_seconds() {
#if GRMA_DEVICE_CODE
    std::uint64_t ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return double(ns) * 1e-9;
#else
    return 0;
#endif
  }

  // Spin (a wait that ends soon ends at memory speed), then sleep in growing
  // steps up to a microsecond, so long waits leave issue slots and memory
  // bandwidth to working blocks. (The wait style is the CPU backend's.)
  GRMA_INLINE static void relax(std::uint32_t& spins, waits_kind) {
#if GRMA_DEVICE_CODE
    constexpr std::uint32_t spin_only = 4096;
    if (++spins > spin_only) __nanosleep(spins - spin_only < 1024 ? spins - spin_only : 1024);
#else
    ++spins;
#endif
  }

  // A rank's failure ends the kernel (DESIGN.md §6): the first failing rank
  // records its error in host-mapped memory, raises the abort flag and traps;
  // the host reads the record once the kernel has ended.
  //
  // A trap by any thread ends the whole grid at once, the claiming thread's
  // stores in flight included. Every thread that fails (all threads of a
  // rank call fail together, and several ranks may fail at once) therefore
  // traps only once the record is in host memory: one that lost the claim
  // waits for `error_claimed` first. The wait is bounded, for a claim taken
  // by a network engine that is itself stopped.
  [[noreturn]] GRMA_INLINE static void fail(std::uint32_t& claim, job_control& control,
                                            const error_record& record) {
#if GRMA_DEVICE_CODE
    // Device 0's memory, claimed by ranks of every device of the job.
    if (compare_exchange_acquire<scope::system>(claim, 0u, 1u)) {
      control.error = record;
      __threadfence_system();  // the record reaches host memory before the flag
      store_relaxed<scope::system>(control.error_claimed, 1u);
      __threadfence_system();  // and the flag before the trap
    } else {
      // About a second at most; the winner needs microseconds.
      for (std::uint32_t i = 0; i < (1u << 20) && load_relaxed<scope::system>(control.error_claimed) == 0; ++i)
        __nanosleep(1000);
    }
    store_release<scope::system>(control.abort, 1u);
    __trap();
#else
    (void)claim;
    (void)control;
    (void)record;
#endif
    __builtin_unreachable();
  }

  // Leave because the job was aborted elsewhere: end the kernel too.
  [[noreturn]] GRMA_INLINE static void leave(const error_record&) {
#if GRMA_DEVICE_CODE
    __trap();
#endif
    __builtin_unreachable();
  }
};

// One warp of a rank making the rank's calls alone while its other warps do
// other work (basic_rank::one_warp; NVSHMEM's _warp calls). The same
// operations over the warp's 32 lanes: lane 0 leads, the lanes meet at
// __syncwarp, values go round by shuffles. The rank's state is the block's
// (shared memory), so one warp at a time may use it. Like NVSHMEM's, the
// calls need a whole warp: 32 threads of the block, all calling.
struct cuda_warp_platform : cuda_platform {
  using warp_platform = cuda_warp_platform;

  GRMA_INLINE static int thread_index() {
#if GRMA_DEVICE_CODE
    return int(threadIdx.x & 31u);
#else
    return 0;
#endif
  }
  GRMA_INLINE static int thread_count() {
#if GRMA_DEVICE_CODE
    return 32;
#else
    return 1;
#endif
  }
  GRMA_INLINE static void sync() {
#if GRMA_DEVICE_CODE
    __syncwarp();
#endif
  }
  // Lane 0's value, to every lane, a 32-bit word at a time. A shuffle
  // orders no memory (broadcast_meets false).
  static constexpr bool broadcast_meets = false;
  template <class T>
  GRMA_INLINE static T broadcast(T value) {
#if GRMA_DEVICE_CODE
    constexpr int words = int((sizeof(T) + 3) / 4);
    unsigned word[words] = {};
    std::memcpy(word, &value, sizeof(T));
    for (int i = 0; i < words; ++i) word[i] = __shfl_sync(0xffffffffu, word[i], 0);
    std::memcpy(&value, word, sizeof(T));
#endif
    return value;
  }
  // The vote orders no memory; the warp barrier before it does.
  GRMA_INLINE static bool any_thread(bool value) {
#if GRMA_DEVICE_CODE
    __syncwarp();
    return __any_sync(0xffffffffu, value) != 0;
#else
    return value;
#endif
  }
  GRMA_INLINE static void copy(void* destination, const void* source, std::size_t bytes) {
    copy_by<cuda_warp_platform>(destination, source, bytes);
  }
  GRMA_INLINE static std::size_t copy_step_bytes() { return copy_step_of<cuda_warp_platform>(); }
  // The calls need the whole warp.
  GRMA_INLINE static int lane_group_limit() { return 32; }
  // The lanes' writes happen before lane 0's release (cumulative).
  GRMA_INLINE static void publish_fence() { sync(); }
};

}  // namespace grma::detail

#endif  // __CUDACC__
