// The rank API: what rank code calls. One template over the platform (the CPU
// backend's threads, later CUDA blocks), so a rank program written as
//
//   template <class Rank> GRMA_HOST_DEVICE void operator()(Rank& r) const;
//
// runs unchanged on every backend. Calling convention (papers/000 §2.3.3):
// all threads of a rank call each function together with the same arguments
// and see the same results; rank(), size(), thread(), threads() and userdata()
// may be called by single threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "grma/config.hpp"
#include "grma/core/atomics.hpp"
#include "grma/core/collectives.hpp"
#include "grma/core/contexts.hpp"
#include "grma/core/rma.hpp"
#include "grma/core/symmetric_heap.hpp"
#include "grma/core/teams.hpp"
#include "grma/core/waits.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/device_state.hpp"
#include "grma/detail/heap.hpp"
#include "grma/detail/log_line.hpp"
#include "grma/detail/matching.hpp"
#include "grma/detail/ring.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"

namespace grma {

namespace detail {
template <class Rank>
struct rank_test_access;  // defined by tests that must get past a rank's own checks
}  // namespace detail

// The core's calls (include/grma/core/) are bases of the rank, one per
// concern; they reach the rank's state through the private members below.
template <class Platform>
class basic_rank : public core::symmetric_heap_calls<basic_rank<Platform>>,
                   public core::rma_calls<basic_rank<Platform>>,
                   public core::atomic_calls<basic_rank<Platform>>,
                   public core::wait_calls<basic_rank<Platform>>,
                   public core::context_calls<basic_rank<Platform>>,
                   public core::team_calls<basic_rank<Platform>>,
                   public core::collective_calls<basic_rank<Platform>> {
  using P = Platform;
  static constexpr detail::scope S = P::memory_scope;
  friend class core::symmetric_heap_calls<basic_rank>;
  friend class core::rma_calls<basic_rank>;
  friend class core::atomic_calls<basic_rank>;
  friend class core::wait_calls<basic_rank>;
  friend class core::context_calls<basic_rank>;
  friend class core::team_calls<basic_rank>;
  friend class core::collective_calls<basic_rank>;

 public:
  // barrier(team) beside barrier(comm), and the symmetric put_signal beside the window's.
  using core::collective_calls<basic_rank>::barrier;
  using core::rma_calls<basic_rank>::put_signal;

  // `local` is the rank's private state. `view` and `local` outlive the
  // rank. On a GPU only the rank kernel makes a rank, from its block's
  // shared-memory copies (which an acquire's L1 invalidation does not touch)
  // and blockIdx.x: rank code finds them there by address
  // (cuda_platform::view), not through these members.
  GRMA_INLINE basic_rank(const detail::device_view& view, int device_rank,
                         detail::rank_local& local)
      : v_(&view), local_(&local), device_rank_(device_rank) {}
  basic_rank(const basic_rank&) = delete;
  basic_rank& operator=(const basic_rank&) = delete;

  // ---- who am I ------------------------------------------------------------

  GRMA_INLINE int rank(comm c) const { return layout(c).rank; }
  GRMA_INLINE int size(comm c) const { return layout(c).size; }
  // The source of notifications that the host threads of process `process`
  // put into world windows (runtime::launch with host_access; job::
  // host_source on that host): a number after every world rank, to match
  // with as a rank's.
  GRMA_INLINE int host_source(int process) const {
    if (process < 0 || process >= view().host_sources)
      fail(errc::no_host_source, call::host_source, process, view().host_sources);
    return view().world_size + process;
  }
  GRMA_INLINE int thread() const { return P::thread_index(); }
  GRMA_INLINE int threads() const { return P::thread_count(); }
  GRMA_INLINE void sync_threads() const { P::sync(); }
  // Thread 0's `value` to every thread of the rank, all of which call
  // together: a result one thread computed for all. It meets them, so what
  // thread 0 wrote or acquired before it the others see after it (a
  // block's broadcast meets them already; a warp's shuffle does not).
  template <class T>
  GRMA_INLINE T from_leader(T value) const {
    if constexpr (!P::broadcast_meets) P::sync();
    return P::broadcast(value);
  }
  // Seconds from an arbitrary start, for timing inside rank code.
  GRMA_INLINE double wtime() const { return P::now_seconds(); }

  // The host's userdata buffer, copied to the process's first device for the
  // run (ranks of its other devices reach it there); the host sees what ranks
  // wrote once the run returns.
  GRMA_INLINE void* userdata() const {
    return view().peer_heaps[view().userdata_device] + view().userdata_offset;
  }
  template <class T>
  GRMA_INLINE T* userdata() const { return static_cast<T*>(userdata()); }
  GRMA_INLINE std::size_t userdata_size() const { return view().userdata_size; }

  // ---- one warp alone ----------------------------------------------------------

  // The rank's calls made by one warp of its threads while the others do
  // other work (NVSHMEM's _warp calls): a rank puts one data set's halos
  // while its other warps compute the next. The handle follows the calling
  // convention over the warp's threads: all of them call each function
  // together (on a GPU a whole warp: 32 threads of the rank, as NVSHMEM's
  // warp calls need), and thread() and threads() count its lanes. While a
  // warp uses it, no other thread of the rank makes a grma call; a warp
  // other than the rank's first (threads 0-31) begins and ends its turn at a
  // sync_threads() with the rank's other threads (a call's leading thread,
  // thread 0, may still be finishing it on the rank's state when the others
  // return). What other warps wrote is behind a sync_threads() with the
  // warp before the warp puts it, and what the warp's wait delivered is
  // behind one before they read it. On the CPU backend a rank is one
  // thread: its own warp.
  GRMA_INLINE basic_rank<typename P::warp_platform> one_warp() const {
    return {*v_, device_rank_, *local_};
  }

  // ---- memory ----------------------------------------------------------------

  // Rank-private memory from the device heap, 256-byte aligned (as
  // cudaMalloc's: copies between such blocks move whole lines); may be
  // registered in windows.
  GRMA_INLINE void* alloc(std::size_t bytes) { return alloc_for(bytes, call::alloc); }
  // alloc for a call's own use (a collective's buffer): a heap too full
  // for it fails that call.
  GRMA_INLINE void* alloc_for(std::size_t bytes, call where) {
    const std::uint64_t offset = P::broadcast(leader() ? alloc_offset(bytes, where) : 0);
    return view().heap + offset;
  }

  GRMA_INLINE void free(void* pointer) {
    if (pointer == nullptr) return;
    P::sync();  // no thread of the rank still uses the block
    if (leader()) free_offset(pointer, call::free);
    P::sync();
  }

  // Collective over grma::device: one block of this device's heap that every
  // rank of the device gets, at the same address (a field the device's ranks
  // split into bands, overlapping windows over it). Every rank asks for the
  // same size.
  GRMA_INLINE void* alloc_shared(std::size_t bytes) {
    const comm_layout l = layout(device);
    // The device's rank 0 allocates before the collective, so running out is
    // reported with the heap's figures as alloc reports it (the other ranks
    // leave the collective through the job's abort).
    const std::uint64_t offset = l.rank == 0 ? P::broadcast(leader() ? alloc_offset(bytes, call::alloc_shared) : 0) : 0;
    const std::uint64_t result = collective(
        device, l, call::alloc_shared, bytes, offset, [&](const detail::collective_arrival* arrivals) {
          return shared_block_agreed(arrivals, arrivals[0].payload[1], l.size);
        });
    if (result >> 63)
      fail(errc::shared_size_mismatch, call::alloc_shared, std::int64_t(bytes),
           std::int64_t((result >> 40) & 0x7fffff), std::int64_t(result & shared_value_mask));
    return view().heap + result;
  }

  // Collective over grma::device: returns a block from alloc_shared. Every
  // rank passes the same pointer; none uses the block any more.
  GRMA_INLINE void free_shared(void* pointer) {
    const comm_layout l = layout(device);
    const auto address = std::uint64_t(reinterpret_cast<std::uintptr_t>(pointer));
    const std::uint64_t result = collective(
        device, l, call::free_shared, address, 0, [&](const detail::collective_arrival* arrivals) {
          return shared_block_agreed(arrivals, 0, l.size);
        });
    if (result >> 63)
      fail(errc::shared_pointer_mismatch, call::free_shared, std::int64_t(address),
           std::int64_t((result >> 40) & 0x7fffff));
    // After the collective: every rank has stopped using the block.
    if (l.rank == 0 && leader() && pointer != nullptr) free_offset(pointer, call::free_shared);
    P::sync();
  }

  // Reads window memory that other ranks may write, past any stale cache line
  // (papers/000 readNoCache). Polling a signal word that another rank sets
  // with put_signal is no data race: on the CPU backend a number, enum or
  // pointer of up to 8 bytes, aligned to its size, is read with one relaxed
  // atomic load (what ThreadSanitizer and the C++ memory model ask for); on
  // a GPU a volatile load is already one uncached load. Relaxed: it orders
  // nothing around it; the data a signal or notification guards is read
  // after wait_signal or wait_notifications (acquire). A put's data is
  // copied with plain stores: read it after its notification.
  template <class T>
  GRMA_INLINE T read(const T* p) const {
#if !GRMA_DEVICE_CODE
    // Numbers of 1, 2, 4 or 8 bytes (not long double, not __int128): lock-free
    // atomics where aligned to their size.
    using word = std::remove_cv_t<T>;
    if constexpr ((std::is_arithmetic_v<word> || std::is_enum_v<word> || std::is_pointer_v<word>) &&
                  sizeof(word) <= 8)
      if (reinterpret_cast<std::uintptr_t>(p) % sizeof(word) == 0)
        return detail::load_relaxed<detail::scope::system>(*const_cast<word*>(p));
#endif
    return *static_cast<const volatile T*>(p);
  }

  // ---- windows ---------------------------------------------------------------

  // Collective over `c`: each rank registers [base, base + bytes) of grma
  // memory (alloc or userdata); bytes may be 0.
  GRMA_INLINE window window_create(comm c, void* base, std::size_t bytes) {
    const comm_layout l = layout(c, call::window_create);
    std::uint64_t offset = 0;
    std::uint32_t owner = std::uint32_t(view().device_index);
    if (bytes != 0) {
      // Memory from alloc (this device's heap) or userdata (the process's first device's).
      auto* p = static_cast<unsigned char*>(base);
      auto* u = static_cast<unsigned char*>(userdata());
      if (p >= u && p < u + view().userdata_size &&
          bytes <= std::uint64_t(u + view().userdata_size - p))
        owner = std::uint32_t(view().userdata_device);
      const unsigned char* heap = view().peer_heaps[owner];
      if (p < heap || p >= heap + view().heap_size ||
          bytes > std::uint64_t(heap + view().heap_size - p))
        fail(errc::window_memory_not_managed, call::window_create,
             std::int64_t(reinterpret_cast<std::uintptr_t>(base)), std::int64_t(bytes));
      offset = std::uint64_t(p - heap);
    }
    // The owning device rides in the offset's top byte (heaps are far smaller).
    const std::uint64_t placed = offset | (std::uint64_t(owner) << 56);
    const detail::window_table& t = view().windows;
    const std::uint64_t result = collective(
        c, l, call::window_create, placed, bytes, [&](const detail::collective_arrival* arrivals) {
          // The entries are written before the slot is taken, under the
          // lock: a network engine may check a request for this window as
          // soon as the slot is active (with the lock, or on a GPU by
          // copies that find `active` set last: window_slot_take).
          lock_window_table(call::window_create);
          const std::uint32_t s = c == world && spans_nodes()
                                      ? detail::window_table_find_across_nodes(t, c.id)
                                      : detail::window_table_find(t);
          if (s != t.capacity) {
            for (int i = 0; i < l.size; ++i) {
              const std::uint64_t at = arrivals[i].payload[0];
              t.entry(s, i) = {at & ((std::uint64_t{1} << 56) - 1), arrivals[i].payload[1],
                               std::uint32_t(at >> 56), 0};
            }
            detail::window_slot_take(t, s, c.id, std::uint32_t(l.size));
          }
          unlock_window_table();
          if (s == t.capacity) return ~std::uint64_t{0};
          return (std::uint64_t(t.slots[s].generation) << 32) | s;
        });
    if (result == ~std::uint64_t{0})
      fail(errc::window_table_full, call::window_create, std::int64_t(t.capacity));
    return window{std::uint32_t(result & 0xffffffffu), std::uint32_t(result >> 32)};
  }

  // Collective over the window's communicator. The handle becomes window_none.
  GRMA_INLINE void window_free(window& w) {
    const access a = lookup(w, -1, call::window_free);
    const comm c{a.comm};
    const std::uint64_t key = detail::window_key(w.slot, w.generation);
    const std::uint64_t mismatch = collective(
        c, layout(c), call::window_free, key, 0, [&](const detail::collective_arrival* arrivals) {
          for (std::uint32_t i = 0; i < a.comm_size; ++i)
            if (arrivals[i].payload[0] != key) return std::uint64_t(i) + 1;
          lock_window_table(call::window_free);
          detail::window_table_release(view().windows, w.slot);
          unlock_window_table();
          return std::uint64_t{0};
        });
    if (mismatch != 0)
      fail(errc::collective_mismatch, call::window_free, c.id, world_rank_in(c, int(mismatch - 1)),
           std::int64_t(call::window_free), local().epoch[comm_index(c)]);
    // Every put to this window was published before its origin entered the
    // collective, so all its notifications are here now: drop them.
    forget_window(w.slot, std::uint32_t(key));
    if (leader())
      at_scope(wide(), [&](auto scope) {
        detail::purge_notifications<scope.value>(local().pending, inbox(), local().inbox,
                                                 std::uint32_t(key));
      });
    w = window_none;
  }

  // ---- notified access -------------------------------------------------------

  // Writes `bytes` from `source` to [offset, offset + bytes) of the range
  // `target` registered with `w`, then adds a notification with `tag` (and
  // `immediate`, which the target's wait_notification returns) to the
  // target's queue. The data is visible to the target before the notification.
  GRMA_INLINE void put_notify(window w, int target, std::size_t offset, std::size_t bytes,
                              const void* source, int tag, std::uint64_t immediate = 0) {
    const access a = check_access(w, target, offset, bytes, source, call::put_notify);
    check_tag(tag, call::put_notify);
    if (a.path == detail::route::other_node)
      return remote_access(detail::remote_op::put_notify, w, a, offset, bytes, tag, source,
                           call::put_notify, 0, immediate);
    unsigned char* destination = a.base + offset;
    notify(a, w, tag, immediate, copy_taking_ticket(a, destination, source, bytes), call::put_notify);
  }

  // Writes `value` (a trivially copyable type of 1, 2, 4 or 8 bytes) at
  // `offset`, a multiple of its size, of the range `target` registered
  // with `w` (whose start must be aligned to that size too), its bytes
  // carried in the notification (with `tag`; the envelope's immediate
  // holds them, zero-extended), with no fence between data and
  // notification: the leading thread alone stores the slot. It promises
  // less than put_notify:
  // - the value is in the target's range once the target's call that
  //   matches the notification returns, and before that the bytes may hold
  //   their old contents: nothing but that match may read or write them in
  //   between (not another rank, not after a barrier, not another put or
  //   value put: one call that matches two stores them at once);
  // - nothing the origin wrote before is ordered before it (where
  //   something must be: sync_threads(), then fence(), then this call);
  // - a notification never matched (its window freed first) may leave the
  //   old bytes.
  // Across nodes the engine writes the value, then notifies. The leading
  // thread's value counts.
  template <class T>
  GRMA_INLINE void put_value_notify(window w, int target, std::size_t offset, T value, int tag) {
    static_assert(std::is_trivially_copyable_v<T> &&
                      (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8),
                  "put_value_notify carries a trivially copyable value of 1, 2, 4 or 8 bytes");
    constexpr unsigned size_log2 = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
    const access a = check_access(w, target, offset, sizeof(T), &value, call::put_value_notify);
    check_tag(tag, call::put_value_notify);
    // The notification names the place in units of the value's size, and
    // the target stores it whole: both the offset and the range's start
    // must be aligned to it.
    if (offset % sizeof(T) != 0 || a.offset % sizeof(T) != 0)
      fail(errc::word_misaligned, call::put_value_notify, std::int64_t(offset),
           std::int64_t(sizeof(T)), 2, target, w.slot);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    if (a.path == detail::route::other_node) return put_value_remote(w, a, offset, sizeof(T), tag, bits);
    if ((offset >> size_log2) >= detail::carried_units) {
      // Farther than a notification can say: written here, then notified
      // as put_notify's data is.
      if (leader()) std::memcpy(a.base + offset, &bits, sizeof(T));
      notify(a, w, tag, bits, no_ticket, call::put_value_notify);
      return;
    }
    if (leader())
      publish_notification<false>(a, w, tag, detail::carried_value(offset, size_log2), bits,
                                  no_ticket, call::put_value_notify);
    completed();
  }

  // Reads [offset, offset + bytes) of the target's range into `destination`,
  // then notifies the target (our reads complete before it sees the tag).
  GRMA_INLINE void get_notify(window w, int target, std::size_t offset, std::size_t bytes,
                              void* destination, int tag, std::uint64_t immediate = 0) {
    const access a = check_access(w, target, offset, bytes, destination, call::get_notify);
    check_tag(tag, call::get_notify);
    if (a.path == detail::route::other_node)
      return remote_access(detail::remote_op::get_notify, w, a, offset, bytes, tag, destination,
                           call::get_notify, 0, immediate);
    const unsigned char* source = a.base + offset;
    notify(a, w, tag, immediate, copy_taking_ticket(a, destination, source, bytes), call::get_notify);
  }

  // True (and the matched notifications removed) when `count` notifications of
  // `w` from `source` (or any_source) with `tag` (or any_tag) are queued.
  GRMA_INLINE bool test_notifications(window w, int source, int tag, int count = 1) {
    const detail::match_query q = check_query(w, source, tag, count, call::test_notifications);
    const bool matched = match_waiting(call::test_notifications, q, false, 0, nullptr) != 0;
    if (matched) completed();
    return matched;
  }

  GRMA_INLINE void wait_notifications(window w, int source, int tag, int count = 1) {
    const detail::match_query q = check_query(w, source, tag, count, call::wait_notifications);
    match_waiting(call::wait_notifications, q, true, -1, nullptr);
    completed();
  }

  // The same, returning wait_result::timed_out (nothing removed) when `limit`
  // passes first.
  GRMA_INLINE wait_result wait_notifications(window w, int source, int tag, int count, within limit) {
    const detail::match_query q = check_query(w, source, tag, count, call::wait_notifications);
    const bool met = match_waiting(call::wait_notifications, q, true, limit.left(), nullptr) != 0;
    completed();
    return met ? wait_result::met : wait_result::timed_out;
  }

  // One notification, with what it carried: the oldest of `w` from `source`
  // (or any_source) with `tag` (or any_tag), so a wildcard receive learns
  // its origin, tag and immediate.
  GRMA_INLINE envelope wait_notification(window w, int source, int tag) {
    const detail::match_query q = check_query(w, source, tag, 1, call::wait_notifications);
    envelope e{};
    match_waiting(call::wait_notifications, q, true, -1, &e);
    completed();
    return P::broadcast(e);
  }
  GRMA_INLINE wait_result wait_notification(window w, int source, int tag, envelope& out, within limit) {
    const detail::match_query q = check_query(w, source, tag, 1, call::wait_notifications);
    envelope e{};
    const bool met = match_waiting(call::wait_notifications, q, true, limit.left(), &e) != 0;
    completed();
    out = P::broadcast(e);
    return met ? wait_result::met : wait_result::timed_out;
  }
  GRMA_INLINE bool test_notification(window w, int source, int tag, envelope& out) {
    const detail::match_query q = check_query(w, source, tag, 1, call::test_notifications);
    envelope e{};
    if (match_waiting(call::test_notifications, q, false, 0, &e) == 0) return false;
    completed();
    out = P::broadcast(e);
    return true;
  }

  // Many notifications in one call (MPI's Waitsome): every match of `w`
  // from `source` (or any_source) with `tag` (or any_tag) that the rank can
  // take now, oldest first, at most `most`, into out[0, k); returns k.
  // Where there is none, it waits and returns the first to arrive alone
  // (k = 1): a wait as quick as wait_notification's, and the next call
  // takes what came after it. `out` is memory the rank's threads share (from
  // alloc, a window, userdata, or a GPU block's shared memory), aligned as
  // an envelope: the first warp's lanes write it, and every thread reads it
  // after the call; the call meets the rank's threads before it writes, so
  // a loop may call again as soon as its threads have read the last batch.
  // The matches the rank can take are those its pending list holds, then
  // its arrivals as far as the list has room (GRMA_MATCH_CAPACITY).
  GRMA_INLINE int wait_some_notifications(window w, int source, int tag, envelope* out, int most) {
    const detail::match_query q =
        check_some_query(w, source, tag, out, most, call::wait_some_notifications);
    const std::uint32_t k = match_waiting<true>(call::wait_some_notifications, q, true, -1, out);
    completed();
    return int(k);
  }
  // The same within `limit`: wait_result::timed_out (and `taken` 0) when it
  // passes before the first match.
  GRMA_INLINE wait_result wait_some_notifications(window w, int source, int tag, envelope* out,
                                                  int most, int& taken, within limit) {
    const detail::match_query q =
        check_some_query(w, source, tag, out, most, call::wait_some_notifications);
    taken = int(match_waiting<true>(call::wait_some_notifications, q, true, limit.left(), out));
    completed();
    return taken != 0 ? wait_result::met : wait_result::timed_out;
  }
  // The same without waiting: 0 where nothing matches.
  GRMA_INLINE int test_some_notifications(window w, int source, int tag, envelope* out, int most) {
    const detail::match_query q =
        check_some_query(w, source, tag, out, most, call::test_some_notifications);
    const std::uint32_t k = match_waiting<true>(call::test_some_notifications, q, false, 0, out);
    if (k != 0) completed();
    return int(k);
  }

  // ---- signals ---------------------------------------------------------------

  // Like put_notify, but instead of a notification it sets or adds `value` to
  // the 64-bit word at `signal_offset` of the target's range, after the data.
  GRMA_INLINE void put_signal(window w, int target, std::size_t offset, std::size_t bytes,
                              const void* source, std::size_t signal_offset, std::uint64_t value,
                              signal_op op) {
    const access a = check_access(w, target, offset, bytes, source, call::put_signal);
    check_signal(a, target, w, signal_offset, call::put_signal);
    if (op != signal_op::set && op != signal_op::add)
      fail(errc::invalid_enum, call::put_signal, std::int64_t(op));
    if (a.path == detail::route::other_node)
      return remote_access(detail::remote_op::put_signal, w, a, offset, bytes, 0, source,
                           call::put_signal, signal_offset, value, op);
    unsigned char* destination = a.base + offset;
    if (destination != source) P::copy(destination, source, bytes);
    std::uint64_t& word = *reinterpret_cast<std::uint64_t*>(a.base + signal_offset);
    P::publish_fence();
    if (leader()) at_scope(a.path != detail::route::same_device, [&](auto scope) {
      // Release: the data above is visible before the new signal value.
      if (op == signal_op::set)
        detail::store_release<scope.value>(word, value);
      else
        detail::add_release<scope.value>(word, value);
    });
    completed();
  }

  // The same within a time limit: wait_result::timed_out when it passes
  // first; `seen`, where not null, receives the word's last value.
  GRMA_INLINE wait_result wait_signal(window w, std::size_t signal_offset, cmp c, std::uint64_t value,
                                      within limit, std::uint64_t* seen = nullptr) {
    std::uint64_t last = 0;
    const bool met = signal_wait(w, signal_offset, c, value, limit.left(), last);
    if (seen != nullptr) *seen = last;
    return met ? wait_result::met : wait_result::timed_out;
  }

  // Waits until (word at signal_offset of my range in w) <c> value and returns
  // the word's value then. Acquire: data put before the signal is visible.
  GRMA_INLINE std::uint64_t wait_signal(window w, std::size_t signal_offset, cmp c,
                                        std::uint64_t value) {
    std::uint64_t seen = 0;
    signal_wait(w, signal_offset, c, value, -1, seen);
    return seen;
  }

 private:
  // wait_signal's work; seconds < 0: no time limit. True when the word
  // compared true.
  GRMA_INLINE bool signal_wait(window w, std::size_t signal_offset, cmp c, std::uint64_t value,
                               double seconds, std::uint64_t& result) {
    const int me = layout(comm{lookup(w, -1, call::wait_signal).comm}).rank;
    const access a = lookup(w, me, call::wait_signal);
    check_signal(a, me, w, signal_offset, call::wait_signal);
    std::uint64_t& word = *reinterpret_cast<std::uint64_t*>(a.base + signal_offset);
    if (std::uint32_t(c) > std::uint32_t(cmp::le))
      fail(errc::invalid_enum, call::wait_signal, std::int64_t(c));
    std::uint64_t seen = 0;
    auto done = [&] {
      // Signals may come from other devices: acquire at their scope.
      seen = at_scope(wide(), [&](auto scope) { return detail::load_acquire<scope.value>(word); });
      return compare(seen, c, value);
    };
    const std::int64_t args[4] = {w.slot, std::int64_t(signal_offset), std::int64_t(c), std::int64_t(value)};
    bool met = true;
    if (seconds < 0)
      leader_waits_until(call::wait_signal, args, done);
    else
      met = leader_waits_within(call::wait_signal, args, seconds, done);
    completed();
    result = P::broadcast(seen);
    return met;
  }

 public:

  // ---- synchronization, log, assert ------------------------------------------------

  GRMA_INLINE void barrier(comm c) {
    collective(c, layout(c, call::barrier), call::barrier, 0, 0,
               [](const detail::collective_arrival*) { return std::uint64_t{0}; });
  }

  GRMA_INLINE detail::log_line<basic_rank> log() { return detail::log_line<basic_rank>(*this); }

  // Fails the job with "dir/file:line: expression" unless `holds` (the
  // file's last two path components, so the expression fits whatever the
  // folder). Use GRMA_ASSERT.
  GRMA_INLINE void check(bool holds, const char* expression, const char* file, int line) {
    if (!holds) assertion_failed(expression, file, line);
  }

 private:
  [[noreturn]] GRMA_COLD void assertion_failed(const char* expression, const char* file, int line) {
    detail::basic_line_buffer<error_text_bytes - 1> text;  // the record's zero after it
    text.append(detail::source_tail(file));
    text.append(':');
    text.append_signed(line);
    text.append(": ");
    text.append(expression);
    fail(errc::assertion_failed, call::rank_assert, line, 0, 0, 0, 0, text.data(), text.size());
  }

 public:

  // Called by the backend when the rank program has returned.
  GRMA_INLINE void finish() {
    P::sync();
    if (!leader()) return;
    detail::rank_status& st = status();
    detail::store_relaxed<detail::scope::system>(st.progress, local().progress);
    detail::store_relaxed<detail::scope::system>(st.state, std::int32_t(detail::rank_state::finished));
  }

  // Used by log_line: one thread sends the finished line to the host.
  GRMA_INLINE void send_log(const detail::line_buffer& line) {
    if (!leader()) return;
    detail::log_record record;
    record.rank = world_rank();
    record.length = line.size();
    for (std::uint32_t i = 0; i < line.size(); ++i) record.text[i] = line.data()[i];
    waiter<> wait(*this, call::none, {0, 0, 0, 0});
    // The ticket comes from device memory; the slot is written to host memory.
    const std::uint64_t ticket = detail::ring_take_ticket<S>(view().words->log_tickets);
    // Host memory, but logging is not a fast path.
    const std::uint32_t capacity = view().log->capacity;
    detail::ring_wait_credit<detail::scope::system>(*view().log, capacity, ticket,
                                                    local().log_credit, wait);
    detail::ring_publish<detail::scope::system>(*view().log, capacity, ticket, record);
  }

 private:
  template <class>
  friend struct detail::rank_test_access;

  struct comm_layout {
    int size;
    int rank;
  };

  using access = detail::window_route;

  // Marks the rank blocked while it waits (for the watchdog), backs off, and
  // leaves the wait if the job is aborted. The leading thread publishes, or
  // in a wait of one thread (`publishes`) that thread. A waiter that
  // `Drains` (a put's wait for room at a ring) has the leading thread take
  // the rank's own arrivals every drain_spins turns (take_own_arrivals).
  template <bool Drains = false>
  class waiter {
   public:
    GRMA_INLINE waiter(basic_rank& r, call where, const std::int64_t (&args)[4],
                       bool publishes = false)
        : r_(r), where_(where), publishes_(publishes || r.leader()) {
      for (int i = 0; i < 4; ++i) args_[i] = args[i];
    }
    waiter(const waiter&) = delete;
    GRMA_INLINE ~waiter() {
      if (!published_) return;
      detail::rank_status& st = r_.status();
      // An ended wait is progress.
      detail::store_relaxed<detail::scope::system>(st.progress, ++r_.local().progress);
      detail::store_relaxed<detail::scope::system>(st.state, std::int32_t(detail::rank_state::running));
    }
    // Publishing goes to host memory (over PCIe from a GPU), and a later
    // release fence would wait for it: a wait that ends soon publishes nothing.
    GRMA_INLINE void operator()() {
      if (publishes_ && spins_ >= P::quiet_spins) {
        if (!published_) publish_blocked();
        if (r_.local().pending.size != unmatched_) publish_unmatched();
        if (spins_ % P::abort_spins == 0) r_.check_abort();
      }
      if constexpr (Drains)
        if (publishes_ && spins_ % drain_spins == drain_spins - 1) r_.take_own_arrivals();
      P::relax(spins_, r_.view().waits);
    }

   private:
    GRMA_COLD void publish_blocked() {
      published_ = true;
      detail::rank_status& st = r_.status();
      detail::store_relaxed<detail::scope::system>(st.progress, r_.local().progress);
      detail::store_relaxed<detail::scope::system>(st.where, std::int32_t(where_));
      for (int i = 0; i < 4; ++i) detail::store_relaxed<detail::scope::system>(st.args[i], args_[i]);
      publish_unmatched();
      detail::store_relaxed<detail::scope::system>(st.state, std::int32_t(detail::rank_state::blocked));
    }
    GRMA_COLD void publish_unmatched() {
      const detail::pending_list& pending = r_.local().pending;
      detail::rank_status& st = r_.status();
      unmatched_ = pending.size;
      int i = 0;
      detail::pending_for_each(pending, [&](const detail::notification& n) {
        detail::notification& shown = st.unmatched_head[i];
        detail::store_relaxed<detail::scope::system>(shown.window, n.window);
        detail::store_relaxed<detail::scope::system>(shown.source, n.source);
        detail::store_relaxed<detail::scope::system>(shown.tag, n.tag);
        return ++i < detail::unmatched_shown;
      });
      detail::store_relaxed<detail::scope::system>(st.unmatched, std::int32_t(pending.size));
    }

    basic_rank& r_;
    call where_;
    bool publishes_;
    std::int64_t args_[4];
    std::uint32_t spins_ = 0;
    std::uint32_t unmatched_ = 0;
    bool published_ = false;
  };

  GRMA_INLINE bool leader() const { return P::thread_index() == 0; }
  // The rank's state, through the platform (on a GPU at fixed shared-memory
  // addresses: cuda_platform::view).
  GRMA_INLINE const detail::device_view& view() const { return P::view(*v_); }
  GRMA_INLINE detail::rank_local& local() const { return P::local(*local_); }
  GRMA_INLINE int device_rank() const { return P::device_rank(device_rank_); }
  GRMA_INLINE int world_rank() const { return view().first_rank + device_rank(); }
  GRMA_INLINE detail::rank_status& status() const { return view().status[device_rank()]; }

  // Counts a completed call; publishes the count now and then (a store to
  // host memory from a GPU crosses PCIe: not on every call).
  GRMA_INLINE void completed() {
    if (!leader()) return;
    const std::uint64_t n = ++local().progress;
    if (n % P::progress_publish_interval == 0)
      detail::store_relaxed<detail::scope::system>(status().progress, n);
  }

  // A valid communicator's place in per-communicator arrays.
  GRMA_INLINE static int comm_index(comm c) { return c == world ? 0 : 1; }

  // `where`: the call that names the communicator, for the error.
  GRMA_INLINE comm_layout layout(comm c, call where = call::comm_query) const {
    // One device per job on the CPU backend so far: world is this device's ranks.
    if (c == world) return {view().world_size, world_rank()};
    if (c == device) return {view().ranks, device_rank()};
    fail(errc::invalid_comm, where, c.id);
  }
  // Rank i of communicator c as the world numbers it (errors and the
  // watchdog name world ranks): a device's ranks are numbered from its first.
  GRMA_INLINE int world_rank_in(comm c, int i) const {
    return c == world ? i : view().first_rank + i;
  }

 public:
  // Ends the job with a bad argument's error: the record names this rank,
  // the call and the values (the layers, grma/shmem.hpp and grma/gaspi.hpp,
  // report theirs through it).
  //
  // Fills the record here (a few stores at the failing branch) and leaves
  // the rest (claiming the job's error, trapping) to one out-of-line copy:
  // an out-of-line call with all of fail's arguments made the kernels
  // around it spill registers (64 at most per thread) on their fast paths.
  [[noreturn]] GRMA_INLINE void fail(errc code, call where, std::int64_t v0 = 0, std::int64_t v1 = 0,
                                     std::int64_t v2 = 0, std::int64_t v3 = 0, std::int64_t v4 = 0,
                                     const char* text = nullptr, std::uint32_t text_length = 0) const {
    error_record r{};
    r.code = std::int32_t(code);
    r.rank = world_rank();
    r.where = std::int32_t(where);
    r.values[0] = v0;
    r.values[1] = v1;
    r.values[2] = v2;
    r.values[3] = v3;
    r.values[4] = v4;
    const std::uint32_t n = text_length < sizeof(r.text) - 1 ? text_length : sizeof(r.text) - 1;
    for (std::uint32_t i = 0; i < n; ++i) r.text[i] = text[i];
    fail_with(r);
  }

 private:
  [[noreturn]] GRMA_COLD void fail_with(const error_record& r) const {
    detail::store_relaxed<detail::scope::system>(status().state, std::int32_t(detail::rank_state::failed));
    P::fail(*view().error_claim, *view().control, r);
  }

  GRMA_COLD void check_abort() {
    if (detail::load_acquire<detail::scope::system>(view().control->abort) != 0) {
      error_record r{};
      r.code = std::int32_t(errc::aborted);
      r.rank = world_rank();
      r.where = status().where;
      // Acquire: pairs with the failing rank's release of error_claimed,
      // after it wrote the record this reads.
      r.values[0] = detail::load_acquire<detail::scope::system>(view().control->error_claimed) != 0
                        ? view().control->error.rank
                        : -1;
      P::leave(r);
    }
  }

  // The waiting lanes `g` (the leading thread alone, or the matching lanes)
  // poll `done` by themselves until it holds or `deadline` (P::now_seconds;
  // < 0: none) passes; true when it held. Lane 0's clock decides, so that
  // the lanes leave together. The caller's threads meet once after it, not
  // at every poll: the pollers see the event sooner, the others sleep at
  // that barrier, and the pollers' acquire orders the others' later reads.
  template <class Done>
  GRMA_INLINE bool poll_until(detail::lane_group g, call where, const std::int64_t (&args)[4],
                              double deadline, Done&& done) {
    if (g.index < 0 || done()) return true;
    waiter<> wait(*this, where, args);
    for (;;) {
      wait();
      if (done()) return true;
      if (deadline >= 0 && (g.ballot(P::now_seconds() >= deadline) & 1u) != 0) return false;
    }
  }

  // This thread alone polls `done` until it holds.
  template <class Done>
  GRMA_INLINE void block_until(call where, const std::int64_t (&args)[4], Done&& done) {
    poll_until(detail::lane_group{}, where, args, -1, done);
  }

  // The leading thread polls `done`, then the rank's threads meet.
  template <class Done>
  GRMA_INLINE void leader_waits_until(call where, const std::int64_t (&args)[4], Done&& done) {
    poll_until(leader_alone(), where, args, -1, done);
    P::sync();
  }

  // leader_waits_until within `seconds`: false (to every thread) when they
  // passed before `done` held.
  template <class Done>
  GRMA_INLINE bool leader_waits_within(call where, const std::int64_t (&args)[4], double seconds,
                                       Done&& done) {
    return from_leader(poll_until(leader_alone(), where, args, P::now_seconds() + seconds, done));
  }

  // The leading thread as a lane group of one (index -1 in the others).
  GRMA_INLINE detail::lane_group leader_alone() const {
    return {1, leader() ? 0 : -1};
  }

  // Matches `q` (see detail::match_at_head for the steps), waiting where
  // `waits` up to `seconds` (< 0: no limit); the number of matches removed
  // (to every thread; 0: none). The leading thread takes the first step
  // alone and polls there while the rank's other threads wait at its
  // barrier; where the list must be searched, the lanes of the first warp
  // (where the rank's threads fill whole warps, else the leading thread)
  // take the second together. Where that finds no match for one wanted,
  // the leading thread waits for it alone at the rings' heads. Only a lone
  // thread polls fast (decision 034). One warp's wait (one_warp(); a CPU
  // rank is its own warp) is its leading lane's alone, one entry at a time
  // (match_serially): there the lanes' steps cost more than they save, the
  // warp's lists being short and its neighbours warps that compute
  // (decision 034). `taken` receives the matches, a lone one in thread 0's
  // place. A query for some (`Some`, q.some) wanting more than one goes
  // straight to a lanes' step of its own (detail::take_some), compiled only
  // into programs that make one (decision 042); where that finds none, it
  // waits as one wanted does, the leading thread alone at the rings' heads
  // (one warp's: its leading lane, for one match), and takes the first
  // match to arrive.
  template <bool Some = false>
  GRMA_INLINE std::uint32_t match_waiting(call where, const detail::match_query& q, bool waits,
                                          double seconds, envelope* taken) {
    const std::int64_t args[4] = {q.window & 0xffff, q.source, q.tag, q.count};
    const double deadline = waits && seconds >= 0 ? P::now_seconds() + seconds : -1;
    // A wait without a limit for an exact count ends only matched: where
    // the others need only one bit, the barrier that releases them carries
    // it (one barrier where from_leader takes two). A query for some needs
    // the number taken: from_leader.
    const bool unlimited = waits && deadline < 0 && !Some;
    const std::uint32_t exact = std::uint32_t(q.count);
    return at_scope(wide(), [&](auto scope) {
      detail::rank_local& l = local();
      if constexpr (std::is_same_v<P, typename P::warp_platform>) {
        // One warp's wait: the leading lane alone, one entry at a time. A
        // query for some that found none at its first look waits for one.
        std::uint32_t removed = 0;
        detail::match_query now = q;
        const auto serially = [&] {
          removed = detail::match_serially<scope.value>(l.pending, inbox(), l.inbox, now, taken);
          if constexpr (Some) now.count = 1;
          return removed != 0;
        };
        if (waits)
          poll_until(leader_alone(), where, args, deadline, serially);
        else if (leader())
          serially();
        if (unlimited) {
          P::sync();  // the leader's acquire orders the lanes' reads after it
          return exact;
        }
        return from_leader(removed);
      } else {
        // The lanes `g` try `done` once, or poll it.
        const auto attempt = [&](detail::lane_group g, bool polls, auto&& done) {
          return polls ? poll_until(g, where, args, deadline, done) : g.index < 0 || done();
        };
        // The leading thread's step for `one` (one match wanted), to every thread.
        const auto at_head = [&](const detail::match_query& one, bool held_unmatched) {
          auto step = detail::head_match::empty;
          attempt(leader_alone(), waits, [&] {
            step = detail::match_at_head<scope.value>(l.pending, inbox(), l.inbox, one, taken,
                                                      held_unmatched);
            return step != detail::head_match::empty;
          });
          if (!unlimited) return from_leader(step);
          return P::any_thread(step == detail::head_match::search) ? detail::head_match::search
                                                                   : detail::head_match::matched;
        };
        // The lanes' step: the number it removed, to every thread.
        const int limit = P::lane_group_limit();
        const detail::lane_group g{limit, P::thread_index() < limit ? P::thread_index() : -1};
        const auto in_list = [&](bool polls) {
          std::uint32_t removed = 0;
          attempt(g, polls, [&] {
            if constexpr (Some)
              removed = detail::take_some<scope.value>(l.pending, inbox(), l.inbox, q, taken, g);
            else
              removed =
                  detail::match_in_list<scope.value>(l.pending, inbox(), l.inbox, q, taken, g);
            return removed != 0;
          });
          return unlimited ? (P::any_thread(leader() && removed != 0) ? exact : 0u)
                           : from_leader(removed);
        };
        // The leading thread's step takes one match only. A query for
        // some whose lanes found none waits as one wanted does: the
        // leading thread alone at the rings' heads, for the first match.
        if constexpr (Some)
          if (q.count > 1) {
            if (const std::uint32_t removed = in_list(false); removed != 0 || !waits)
              return removed;
            detail::match_query first = q;
            first.count = 1;
            const auto step = at_head(first, true);
            if (step == detail::head_match::search) return in_list(true);
            return step == detail::head_match::matched ? 1u : 0u;
          }
        auto step = at_head(q, false);
        if (step != detail::head_match::search)
          return step == detail::head_match::matched ? 1u : 0u;
        if (waits && q.count == 1) {
          if (const std::uint32_t removed = in_list(false)) return removed;
          step = at_head(q, true);
          if (step != detail::head_match::search)
            return step == detail::head_match::matched ? 1u : 0u;
        }
        return in_list(waits);
      }
    });
  }

  // Gather at the communicator's leader, run `act` there, release everyone
  // with its result. Also checks that every rank made the same call. The
  // leader rank's threads watch the arrivals in parallel.
  // The world's collective spans devices when the job does: system scope.
  template <class LeaderAction>
  GRMA_INLINE std::uint64_t collective(comm c, comm_layout l, call what, std::uint64_t p0,
                                       std::uint64_t p1, LeaderAction&& act) {
    return at_scope(c == world && wide(), [&](auto scope) {
      return collective_at<scope.value>(c, l, what, p0, p1, act);
    });
  }

  template <detail::scope Sc, class LeaderAction>
  GRMA_OUT_OF_LINE std::uint64_t collective_at(comm c, comm_layout l, call what, std::uint64_t p0,
                                          std::uint64_t p1, LeaderAction& act) {
    detail::collective_state& st = *view().collectives[comm_index(c)];
    detail::collective_arrival* arrivals = view().arrivals[comm_index(c)];
    // A job across nodes gathers each node at its lowest world rank, whose
    // network engine forwards the node's arrivals to the other nodes'.
    const bool across = c == world && spans_nodes();
    const int gatherer = across ? view().node_leader : 0;
    std::uint64_t epoch = 0;
    // What the rank wrote to other nodes is in place before it arrives.
    if (spans_nodes() && leader()) await_remote_delivered(what);
    P::publish_fence();  // the rank's threads' writes come before its arrival
    if (leader()) {
      epoch = ++local().epoch[comm_index(c)];
      detail::collective_arrival& mine = arrivals[l.rank];
      mine.payload[0] = p0;
      mine.payload[1] = p1;
      // Release: payload and everything this rank wrote before the collective
      // are visible to the leader once it sees the stamp.
      detail::store_release<Sc>(mine.stamp, detail::collective_stamp(epoch, what));
    }
    epoch = P::broadcast(epoch);
    std::uint64_t result = 0;
    if (l.rank == gatherer) {
      // Waits for rank i's arrival; for ranks on other nodes the network
      // engine writes it.
      auto await = [&](int i) {
        std::uint64_t stamp = 0;
        block_until(what, {c.id, world_rank_in(c, i), std::int64_t(epoch), 0}, [&] {
          stamp = detail::load_acquire<Sc>(arrivals[i].stamp);
          return (stamp >> 8) >= epoch;
        });
        if (stamp != detail::collective_stamp(epoch, what))
          fail(errc::collective_mismatch, what, c.id, world_rank_in(c, i),
               std::int64_t(stamp & 0xff), std::int64_t(epoch));
      };
      for (int i = P::thread_index(); i < l.size; i += P::thread_count())
        if (!across || view().on_node(view().device_of(i))) await(i);
      if (across) {
        P::sync();  // the node has arrived
        if (leader()) announce_arrival(epoch, what);
        for (int i = P::thread_index(); i < l.size; i += P::thread_count())
          if (!view().on_node(view().device_of(i))) await(i);
      }
      P::sync();  // every arrival seen (and acquired by some thread) before acting
      if (leader()) {
        result = act(arrivals);
        // The world's ranks wait on their own device's copy: a wait that
        // polled one device's word from every device of the node would
        // keep their links busy with reads while puts cross them.
        if (c == world) {
          for (int d = 0; d < view().devices; ++d)
            if (view().world_releases[d] != nullptr)
              release_epoch<Sc>(*view().world_releases[d], epoch, result);
        } else {
          release_epoch<Sc>(st, epoch, result);
        }
      }
    } else if (leader()) {
      // -1 - the rank that releases it, for the watchdog.
      block_until(what, {c.id, -1 - world_rank_in(c, gatherer), std::int64_t(epoch), 0},
                  [&] { return detail::load_acquire<Sc>(st.release) >= epoch; });
      result = detail::load_relaxed<Sc>(st.result);
    }
    completed();
    return P::broadcast(result);
  }

  template <detail::scope Sc>
  GRMA_INLINE static void release_epoch(detail::collective_state& st, std::uint64_t epoch,
                                        std::uint64_t result) {
    detail::store_relaxed<Sc>(st.result, result);
    // Release: the action's writes (window table) and, transitively, every
    // rank's pre-collective writes reach all ranks that see this epoch.
    detail::store_release<Sc>(st.release, epoch);
  }

  // The window's communicator and, for target >= 0, the target's range and
  // route; from the rank's cache when it can. Fails for a window that is
  // not alive and for a target outside its communicator.
  GRMA_INLINE access lookup(window w, int target, call where) {
    const std::uint32_t key = detail::window_key(w.slot, w.generation);
    detail::window_cache_set& set = local().windows[detail::window_cache_set_of(w.slot)];
    for (const access& line : set.lines)
      if (line.key == key && w.generation != 0 && line.target == target) return line;
    return lookup_table(w, target, where);
  }

  // lookup's miss: the window table, checked and resolved, then a cache line.
  GRMA_COLD access lookup_table(window w, int target, call where) {
    const std::uint32_t key = detail::window_key(w.slot, w.generation);
    detail::window_cache_set& set = local().windows[detail::window_cache_set_of(w.slot)];
    switch (detail::window_lookup(view().windows, w.slot, w.generation)) {
      case detail::window_check::ok: break;
      case detail::window_check::not_created: fail(errc::window_not_created, where, w.slot, w.generation);
      case detail::window_check::freed: fail(errc::window_freed, where, w.slot, w.generation);
    }
    const detail::window_slot& slot = view().windows.slots[w.slot];
    if (target < -1 || (target >= 0 && std::uint32_t(target) >= slot.comm_size))
      fail(errc::rank_out_of_range, where, target, slot.comm_size, slot.comm);
    // Target -1 (no target): the rank's own range, for its waits.
    const int entry = target >= 0 ? target : int(layout(comm{slot.comm}, where).rank);
    const access a =
        resolve(key, target, slot.comm, slot.comm_size, view().windows.entry(w.slot, entry));
    // Every thread has read the set: only then may the leader replace a line.
    P::sync();
    if (leader()) {
      set.lines[set.next] = a;
      set.next = (set.next + 1) % detail::window_cache_ways;
    }
    P::sync();
    return a;
  }

  // The route of a target's range: on another node where the range is (only
  // world windows span nodes); a peer where the range or the target rank,
  // which reads the data and its notification there, is on another device.
  GRMA_INLINE access resolve(std::uint32_t key, int target, std::uint32_t comm,
                             std::uint32_t comm_size, const detail::window_entry& entry) const {
    access a{key, target, comm, comm_size, -1, detail::route::same_device, entry.offset, entry.size, nullptr};
    if (target < 0) {
      // `entry` is the rank's own range: where value puts to it land
      // (match_query::range); its own node's.
      a.base = view().peer_heaps[entry.device] + entry.offset;
      return a;
    }
    a.world_target = comm == device.id ? view().first_rank + target : target;
    if (spans_nodes() && !view().on_node(int(entry.device))) {
      a.path = detail::route::other_node;
      return a;
    }
    a.base = view().peer_heaps[entry.device] + entry.offset;
    if (wide() && (int(entry.device) != view().device_index ||
                   view().device_of(a.world_target) != view().device_index))
      a.path = detail::route::peer;
    return a;
  }

  GRMA_INLINE void forget_window(std::uint32_t slot, std::uint32_t key) {
    if (leader())
      for (access& c : local().windows[detail::window_cache_set_of(slot)].lines)
        if (c.key == key) c.key = 0;
    P::sync();  // before any thread scans the lines again
  }

  GRMA_INLINE void check_tag(int tag, call where) const {
    if (tag < 0) fail(errc::negative_tag, where, tag);
  }

  GRMA_INLINE access check_access(window w, int target, std::size_t offset, std::size_t bytes,
                                  const void* buffer, call where) {
    if (target < 0) {
      const access any = lookup(w, -1, where);
      fail(errc::rank_out_of_range, where, target, any.comm_size, any.comm);
    }
    const access a = lookup(w, target, where);
    if (offset > a.size || bytes > a.size - offset)
      fail(errc::range_outside_window, where, std::int64_t(offset), std::int64_t(bytes),
           std::int64_t(a.size), target, w.slot);
    if (bytes != 0 && buffer == nullptr) fail(errc::null_buffer, where, std::int64_t(bytes));
    return a;
  }

  // Checks that the signal word at signal_offset of the target's range is
  // in the range and aligned (in its heap, whose start is aligned).
  GRMA_INLINE void check_signal(const access& a, int target, window w, std::size_t signal_offset,
                                call where) const {
    if (signal_offset > a.size || a.size - signal_offset < sizeof(std::uint64_t)) {
      constexpr char what[] = "signal";  // the message's offset is the signal's, not the data's
      fail(errc::range_outside_window, where, std::int64_t(signal_offset),
           std::int64_t(sizeof(std::uint64_t)), std::int64_t(a.size), target, w.slot, what,
           sizeof what - 1);
    }
    if ((a.offset + signal_offset) % sizeof(std::uint64_t) != 0)
      fail(errc::signal_misaligned, where, std::int64_t(signal_offset));
  }

  GRMA_INLINE detail::match_query check_query(window w, int source, int tag, int count,
                                              call where) {
    const access a = lookup(w, -1, where);
    if (source != any_source && (source < 0 || std::uint32_t(source) >= a.comm_size))
      check_host_source(a.comm, a.comm_size, source, where);
    if (tag != any_tag && tag < 0) fail(errc::negative_tag, where, tag);
    if (count < 1) fail(errc::invalid_count, where, count);
    if (std::uint32_t(count) > view().match_capacity)
      fail(errc::count_exceeds_match_capacity, where, count, view().match_capacity);
    return {detail::window_key(w.slot, w.generation), source, tag, count, false, a.base};
  }

  // A query for some: at most `most` (no more than the pending list can
  // hold, which bounds what one call can see), into `out`, which the rank's
  // threads share. The threads meet first, so that none still reads what
  // the last call wrote there when the lanes write it again.
  GRMA_INLINE detail::match_query check_some_query(window w, int source, int tag, envelope* out,
                                                   int most, call where) {
    if (most < 1) fail(errc::invalid_count, where, most);
    const auto address = std::int64_t(reinterpret_cast<std::uintptr_t>(out));
    if (out == nullptr)
      fail(errc::null_buffer, where, std::int64_t(most) * std::int64_t(sizeof(envelope)));
    if (address % std::int64_t(alignof(envelope)) != 0)
      fail(errc::word_misaligned, where, address, std::int64_t(alignof(envelope)));
    if (P::thread_private(out)) fail(errc::buffer_not_shared, where, address);
    const std::uint32_t capacity = view().match_capacity;
    detail::match_query q =
        check_query(w, source, tag, std::uint32_t(most) < capacity ? most : int(capacity), where);
    q.some = true;
    P::sync();
    return q;
  }

  // A source past the communicator's ranks is a host's, where the window is
  // a world window and the job has host access (hosts notify world windows
  // only), else out of range. Out of line, off the path of every wait:
  // code added to a wait in line moves the rank program's spills.
  GRMA_COLD void check_host_source(std::uint32_t comm, std::uint32_t comm_size, int source,
                                   call where) const {
    const std::uint32_t hosts =
        comm == std::uint32_t(world.id) ? std::uint32_t(view().host_sources) : 0;
    if (source < 0 || std::uint32_t(source) >= comm_size + hosts)
      fail(errc::rank_out_of_range, where, source, comm_size, comm, hosts);
  }

  // This rank's rings, one per device of the job.
  GRMA_INLINE detail::inbox_rings inbox() const {
    return {reinterpret_cast<unsigned char*>(&view().queue(world_rank(), 0)), view().queue_stride,
            view().devices};
  }

  // Does the job span devices (so that shared words need system scope)?
  GRMA_INLINE bool wide() const { return view().devices > 1; }

  // Calls f(scope) with system scope where `system` holds, else the
  // platform's: other devices' threads take part in what f does.
  template <class F>
  GRMA_INLINE static decltype(auto) at_scope(bool system, F&& f) {
    if (system) return f(std::integral_constant<detail::scope, detail::scope::system>{});
    return f(std::integral_constant<detail::scope, S>{});
  }

  // Copies a put's or get's data with every thread of the rank and takes
  // its notification's ticket on the way: the leader's ticket, or no_ticket
  // (notify takes it then). The target takes its ring's entries in ticket
  // order, so a ticket held during a long copy would hide every later
  // origin's notification until the copy ended (behind a 256 MiB put: tens
  // of milliseconds). The ticket is therefore taken before the copy's last
  // piece: the last ticket_lead_bytes and what is left over up to a
  // multiple of the copy's step (the whole of a small copy), whose time the
  // atomic's round trip overlaps. Taken after a copy instead, it cost a peer
  // put of 64 KiB a quarter of one rank's bandwidth; cut where the step's
  // loads were not all in flight together, a 32 KiB put 1.9 us a round trip
  // (two H100s). Ranges that overlap are copied in one piece, in memmove's
  // order, and take the ticket after. A copy onto itself is none
  // (papers/000 §3.2.3).
  static constexpr std::size_t ticket_lead_bytes = 4096;
  static constexpr std::uint64_t no_ticket = ~std::uint64_t{0};
  GRMA_INLINE std::uint64_t copy_taking_ticket(const access& a, void* destination,
                                               const void* source, std::size_t bytes) {
    auto* d = static_cast<unsigned char*>(destination);
    const auto* s = static_cast<const unsigned char*>(source);
    const std::size_t distance = d > s ? std::size_t(d - s) : std::size_t(s - d);
    std::size_t head = 0;
    if (bytes > ticket_lead_bytes) {
      if (distance != 0 && distance < bytes) {
        P::copy(d, s, bytes);
        return no_ticket;
      }
      const std::size_t step = P::copy_step_bytes();
      head = (bytes - ticket_lead_bytes) / step * step;
    }
    if (distance != 0 && head != 0) P::copy(d, s, head);
    const std::uint64_t ticket =
        leader() ? detail::ring_take_ticket<S>(view().tickets[a.world_target]) : no_ticket;
    if (distance != 0) P::copy(d + head, s + head, bytes - head);
    return ticket;
  }

  // Publishes the notification of a put or get whose data every thread has
  // copied, with the ticket taken during the copy or, failing that, now.
  GRMA_INLINE void notify(const access& a, window w, int tag, std::uint64_t immediate,
                          std::uint64_t ticket, call where) {
    P::publish_fence();
    if (leader()) publish_notification<true>(a, w, tag, 0, immediate, ticket, where);
    completed();
  }

  // The leading thread's part: the ticket (no_ticket: taken now), room in
  // the target's ring, the slot. `Ordered`: a release fence first, so that
  // what the rank's threads wrote before (the data; publish_fence met them)
  // is visible before the notification. Otherwise the slot alone: a value
  // put's, whose bytes it carries (`carried`).
  template <bool Ordered>
  GRMA_INLINE void publish_notification(const access& a, window w, int tag, std::uint32_t carried,
                                        std::uint64_t immediate, std::uint64_t ticket, call where) {
    const int t = a.world_target;
    if (ticket == no_ticket) ticket = detail::ring_take_ticket<S>(view().tickets[t]);
    detail::notification_ring& q = view().queue(t, view().device_index);
    waiter<true> wait(*this, where, {w.slot, a.target, tag, 0});
    const detail::notification n{detail::window_key(w.slot, w.generation),
                                 layout(comm{a.comm}).rank, tag, carried, immediate};
    // A peer's ring: the release that orders the data, and the words, must
    // reach that device.
    at_scope(a.path != detail::route::same_device, [&](auto scope) {
      detail::ring_wait_credit<scope.value>(q, view().queue_capacity, ticket, credit(t), wait);
      detail::ring_publish<scope.value, Ordered>(q, view().queue_capacity, ticket, n);
    });
  }

  // A rank whose put waits for room at a ring moves its own arrivals into
  // its pending list now and then, as far as the list has room (they keep
  // their order: the list holds the oldest): ranks that send to each other
  // (or a rank to itself) before they wait would otherwise block each
  // other for good once the rings are full. Only the leading thread uses
  // the list outside a call's meeting of the rank's threads. Every
  // drain_spins turns of the wait, so that a wait that ends soon costs
  // nothing more; out of line: a rank rarely waits that long.
  static constexpr std::uint32_t drain_spins = 16;
  GRMA_COLD void take_own_arrivals() {
    at_scope(wide(), [&](auto scope) {
      detail::take_arrivals<scope.value>(local().pending, inbox(), local().inbox,
                                         detail::no_window);
    });
  }

  // The producer credit (known consumed count) for a target's ring.
  GRMA_INLINE std::uint64_t& credit(int world_target) {
    detail::rank_local& l = local();
    const int i = world_target % detail::credit_cache_size;
    if (l.credit_target[i] != world_target) {
      l.credit_target[i] = world_target;
      l.credit_known[i] = 0;  // never above the true count: safe, re-read on demand
    }
    return l.credit_known[i];
  }

  // ---- the inter-node path: the process's network engine does the work ----

  // Whether the job spans nodes.
  GRMA_INLINE bool spans_nodes() const { return view().nodes > 1; }

  // A value put to another node: a put_notify of its bytes, which travel
  // inside the command (issue_remote), the immediate holding them as on
  // the node. Out of line, with its own copy of the bytes: the address
  // taken here would keep the caller's in local memory.
  GRMA_COLD void put_value_remote(window w, const access& a, std::size_t offset, std::size_t bytes,
                                  int tag, std::uint64_t bits) {
    const std::uint64_t source = bits;
    remote_access(detail::remote_op::put_notify, w, a, offset, bytes, tag, &source,
                  call::put_value_notify, 0, bits);
  }

  // A put, get or signal to another node: the engine's command.
  GRMA_COLD void remote_access(detail::remote_op op, window w, const access& a,
                                   std::size_t offset, std::size_t bytes, int tag, const void* buffer,
                                   call where, std::size_t signal_offset = 0,
                                   std::uint64_t signal_value = 0, signal_op sop = signal_op::set) {
    detail::remote_command c{};
    c.op = op;
    c.origin = world_rank();
    c.window = detail::window_key(w.slot, w.generation);
    c.target = a.target;
    c.tag = tag;
    c.offset = offset;
    c.bytes = bytes;
    c.address = std::uint64_t(reinterpret_cast<std::uintptr_t>(buffer));
    c.signal_op = std::uint8_t(sop);
    c.signal_offset = signal_offset;
    c.signal_value = signal_value;
    issue_remote(c, where);
  }

  // Queues a command for the engine (the leading thread). The ring is in host
  // memory; the engine sees the command once every word of its slot has
  // arrived, and what the rank wrote before (a put's source) is then in its
  // device's memory, where the engine reads it (ring_slot<remote_command>).
  GRMA_INLINE std::uint64_t take_command_ticket() {
    return detail::ring_take_ticket<S>(view().words->command_tickets);
  }
  // Waits until the engine has taken the command a ring's capacity of
  // tickets before this one (the slot and its payload slot are then the
  // rank's to write).
  GRMA_INLINE void await_command_slot(const detail::remote_command& c, call where,
                                      std::uint64_t ticket) {
    waiter<> wait(
        *this, where,
        {c.target, std::int64_t(c.offset), std::int64_t(c.bytes), detail::command_slot_wait});
    // The ring's consumed count is device_words::commands_consumed, in the
    // device's memory, which the engine releases after taking the slots.
    detail::ring_wait_credit<detail::scope::system>(view().words->commands_consumed,
                                                    detail::command_capacity, ticket,
                                                    local().command_credit, wait);
  }
  GRMA_INLINE void publish_command(const detail::remote_command& c, std::uint64_t ticket) {
    detail::ring_publish<detail::scope::system>(*view().commands, detail::command_capacity, ticket,
                                                c);
  }
  GRMA_INLINE void push_command(const detail::remote_command& c, call where, std::uint64_t ticket) {
    await_command_slot(c, where, ticket);
    publish_command(c, ticket);
  }

  // A put, get or signal to another node, by all threads of the rank: the
  // leader hands it to the engine. A put of at most remote_inline_bytes
  // travels inside the command, and one of at most remote_payload_bytes in
  // its payload slot: both return at once. A larger put returns when the
  // engine has sent its source, a get when its destination holds the data
  // (both calls are blocking, as locally).
  // `wait` false (the _nbi forms): returns once the engine has the command;
  // the rank's quiet waits for the source to be read, or the data to land.
  GRMA_INLINE void issue_remote(detail::remote_command& c, call where, bool wait = true) {
    P::publish_fence();  // every thread's writes to the source come before the command
    if (detail::remote_fits_payload(c)) return issue_with_payload(c, where);
    if (leader()) {
      lock_remote(where);
      hand_to_engine(c, where, wait);
      unlock_remote();
    }
    P::sync();  // a get's destination is the rank's to read
    completed();
  }

  // A put too large for its command and small enough for the payload slot:
  // the rank's threads copy its bytes into the slot (host memory) and the
  // call returns, as a small put's does. The engine sends them from there,
  // with no read of the device's memory, and the rank's buffer is free at
  // once (the engine never counts it in `landed`).
  GRMA_INLINE void issue_with_payload(detail::remote_command& c, call where) {
    std::uint64_t ticket = 0;
    if (leader()) {
      lock_remote(where);
      ticket = take_command_ticket();
      await_command_slot(c, where, ticket);
    }
    ticket = P::broadcast(ticket);
    P::copy(view().payload(ticket), reinterpret_cast<const void*>(std::uintptr_t(c.address)),
            c.bytes);
    P::sync();
    if (leader()) {
#if GRMA_DEVICE_CODE
      // Release at system scope, by the thread that met the others after
      // their copies (cumulative): the whole payload is in host memory
      // before any word of the command. (On the host the command's release
      // store orders it: sequenced_slot.)
      detail::fence_release<detail::scope::system>();
#endif
      c.flags |= detail::remote_flag_payload;
      publish_command(c, ticket);
      count_handed(c, where, false);
      unlock_remote();
    }
    P::sync();  // as issue_remote: no thread returns before the command is out
    completed();
  }

  // The same by the calling thread alone (p, g, atomics): returns the
  // answer of a g or fetching atomic, which the engine leaves in the rank's
  // reply word.
  GRMA_INLINE std::uint64_t issue_remote_alone(detail::remote_command& c, call where) {
    lock_remote(where);
    if (detail::remote_answered(c))
      c.address = reinterpret_cast<std::uintptr_t>(&view().completion[device_rank()].reply);
    hand_to_engine(c, where);
    std::uint64_t answer = 0;
    // After hand_to_engine's acquire of `landed`, which the engine released
    // after writing the word.
    if (detail::remote_answered(c))
      answer = detail::load_relaxed<detail::scope::system>(view().completion[device_rank()].reply);
    unlock_remote();
    return answer;
  }

  // One thread of the rank at a time hands the engine commands: the rank's
  // counts of them (rank_local) and its reply word have one user.
  GRMA_INLINE void lock_remote(call where) {
    if (detail::rank_try_lock(local().remote_lock)) return;
    waiter<> wait(*this, where, {std::int64_t(detail::lock_kind::remote), 0, 0, detail::lock_wait},
                  true);
    do wait();
    while (!detail::rank_try_lock(local().remote_lock));
  }
  GRMA_INLINE void unlock_remote() { detail::rank_unlock(local().remote_lock); }

  // Under the remote lock: queues `c` for the engine and, where the call
  // waits (an answer comes, or the engine reads the source), waits until
  // the engine says the origin's buffer is done (`landed`, acquire: a get's
  // data, an answer, are visible after it).
  GRMA_INLINE void hand_to_engine(detail::remote_command& c, call where, bool wait = true) {
    // The ticket first: its atomic's round trip (about 1 us) overlaps the copy.
    const std::uint64_t ticket = take_command_ticket();
    if (detail::remote_is_put(c.op) && c.bytes <= detail::remote_inline_bytes) {
      const auto* from = reinterpret_cast<const unsigned char*>(std::uintptr_t(c.address));
      std::uint64_t i = 0;
      if (c.address % 8 == 0)  // whole words: their loads in flight together
        for (; i + 8 <= c.bytes; i += 8) std::memcpy(c.data + i, __builtin_assume_aligned(from + i, 8), 8);
      for (; i < c.bytes; ++i) c.data[i] = from[i];
      c.inline_bytes = std::uint16_t(c.bytes);
    }
    push_command(c, where, ticket);
    count_handed(c, where, wait);
  }

  // Counts a command handed to the engine. A get or fetching atomic waits
  // for its answer (a get of 0 bytes, for its reply); a large put, until
  // the engine has read its source (remote_lands): the blocking forms here
  // (`wait`), an _nbi form at its quiet.
  GRMA_INLINE void count_handed(const detail::remote_command& c, call where, bool wait) {
    detail::rank_local& l = local();
    // Relaxed stores: a thread's quiet reads the counts without the lock.
    detail::store_relaxed<detail::scope::device>(l.remote_issued, l.remote_issued + 1);
    if (!detail::remote_lands(c)) return;
    const std::uint64_t n = l.remote_waited + 1;
    detail::store_relaxed<detail::scope::device>(l.remote_waited, n);
    if (wait)
      block_until(
          where,
          {c.target, std::int64_t(c.offset), std::int64_t(c.bytes), detail::remote_answer_wait},
          [&] {
            return detail::load_acquire<detail::scope::system>(
                       view().completion[device_rank()].landed) >= n;
          });
  }

  // A thread's quiet: waits until everything the rank handed the engine
  // so far is in place at its target (acknowledged), and every source of
  // an _nbi put read and every _nbi get's data landed (acquire).
  GRMA_INLINE void await_remote_delivered(call where) {
    const std::uint64_t issued = detail::load_relaxed<detail::scope::device>(local().remote_issued);
    const std::uint64_t waited = detail::load_relaxed<detail::scope::device>(local().remote_waited);
    const detail::remote_completion& done = view().completion[device_rank()];
    auto complete = [&] {
      return detail::load_acquire<detail::scope::system>(done.delivered) >= issued &&
             detail::load_acquire<detail::scope::system>(done.landed) >= waited;
    };
    if (complete()) return;
    waiter<> wait(*this, where,
                  {std::int64_t(issued), std::int64_t(waited), 0, detail::remote_delivery_wait},
                  true);
    do wait();
    while (!complete());
  }

  // The node's ranks have arrived at world collective `epoch`: the engine
  // tells the other nodes.
  GRMA_INLINE void announce_arrival(std::uint64_t epoch, call what) {
    detail::remote_command arrive{};
    arrive.op = detail::remote_op::arrive;
    arrive.origin = world_rank();
    arrive.offset = epoch;
    push_command(arrive, what, take_command_ticket());
  }

  // ---- the core's symmetric memory and contexts ---------------------------------

  // This rank's slice of the symmetric heap.
  GRMA_INLINE unsigned char* symmetric_slice_base() const {
    return view().heap + view().symmetric_offset + std::uint64_t(device_rank()) * view().symmetric_slice;
  }

  // The offset of [p, p + bytes) in this rank's slice; fails for memory
  // outside it.
  GRMA_INLINE std::uint64_t symmetric_offset_of(const void* p, std::size_t bytes, call where) const {
    const auto* at = static_cast<const unsigned char*>(p);
    const unsigned char* base = symmetric_slice_base();
    const std::uint64_t slice = view().symmetric_slice;
    if (at < base || std::uint64_t(at - base) >= slice || bytes > slice - std::uint64_t(at - base))
      fail(errc::not_symmetric, where, std::int64_t(reinterpret_cast<std::uintptr_t>(p)),
           std::int64_t(bytes), std::int64_t(slice));
    return std::uint64_t(at - base);
  }

  // The device of world rank `target`; fails for a rank outside world.
  GRMA_INLINE int device_of_target(int target, call where) const {
    if (target < 0 || target >= view().world_size)
      fail(errc::rank_out_of_range, where, target, view().world_size, world.id);
    return view().device_of(target);
  }

  // Byte `offset` of the target's slice on device `d` (one of this node's).
  GRMA_INLINE unsigned char* symmetric_address(int d, int target, std::uint64_t offset) const {
    return view().peer_heaps[d] + view().symmetric_offset +
           std::uint64_t(target - d * view().ranks) * view().symmetric_slice + offset;
  }

  // Where the target's copy of [p, p + bytes) is: an address this rank
  // loads and stores, or (null) on another node, at `offset` of the
  // target's slice, where the network engine carries the call.
  struct symmetric_place {
    unsigned char* address;
    std::uint64_t offset;
  };
  GRMA_INLINE symmetric_place place_symmetric(const void* p, std::size_t bytes, int target,
                                              call where) const {
    const std::uint64_t offset = symmetric_offset_of(p, bytes, where);
    device_of_target(target, where);  // checks the target
    return place_at(target, offset);
  }
  // The same for byte `offset` of world rank w's slice (w checked).
  GRMA_INLINE symmetric_place place_at(int w, std::uint64_t offset) const {
    const int d = view().device_of(w);
    if (!view().on_node(d)) return {nullptr, offset};
    return {symmetric_address(d, w, offset), offset};
  }

  // A core operation on the target's symmetric slice on another node,
  // handed to the network engine. Out of line, as remote_access: inlined,
  // building and handing over the command took the registers of the rank
  // program around the call on its device paths too, and a loop of puts
  // spilled its own values to local memory (decision 037).
  // By all threads of the rank (put, get and their forms): issue_remote.
  GRMA_OUT_OF_LINE void issue_symmetric(detail::remote_op op, int target, std::uint64_t offset,
                                        std::uint64_t bytes, const void* local_buffer, call where,
                                        bool wait) {
    detail::remote_command c = symmetric_command(op, target, offset, bytes, local_buffer);
    issue_remote(c, where, wait);
  }
  // What a one-thread operation to another node carries, by value (a
  // pointer to the caller's variable would keep it in local memory on the
  // device paths too): a put's element, or an atomic's operation and
  // operands (the bits of a 4-byte one in the low half).
  struct remote_operands {
    std::uint64_t value = 0;  // a put's element, an atomic's operand
    std::uint64_t compare = 0;
    detail::remote_atomic atomic = detail::remote_atomic::fetch;
    bool fetching = false;
  };
  // By the calling thread alone (p, g, atomics, a signal, a team's word):
  // issue_remote_alone; returns the answer of a g or a fetching atomic.
  GRMA_OUT_OF_LINE std::uint64_t issue_symmetric_alone(detail::remote_op op, int target,
                                                       std::uint64_t offset, std::uint64_t bytes,
                                                       call where, remote_operands o = {}) {
    // A put's source: the command carries its bytes inline (hand_to_engine).
    detail::remote_command c = symmetric_command(op, target, offset, bytes,
                                                 op == detail::remote_op::put ? &o.value : nullptr);
    if (op == detail::remote_op::atomic) {
      c.signal_op = std::uint8_t(o.atomic);
      c.tag = o.fetching ? 1 : 0;
      c.signal_value = o.value;
      c.signal_offset = o.compare;
    }
    return issue_remote_alone(c, where);
  }
  GRMA_INLINE detail::remote_command symmetric_command(detail::remote_op op, int target,
                                                       std::uint64_t offset, std::uint64_t bytes,
                                                       const void* local_buffer) const {
    detail::remote_command c{};
    c.op = op;
    c.origin = world_rank();
    c.target = target;
    c.offset = offset;
    c.bytes = bytes;
    c.address = reinterpret_cast<std::uintptr_t>(local_buffer);
    return c;
  }

  GRMA_INLINE void check_context(context ctx, call where) const {
    if (ctx.slot == 0 && ctx.generation == 0) return;
    if (ctx.slot > std::uint32_t(detail::max_contexts) || ctx.generation == 0 ||
        local().contexts[ctx.slot] != ctx.generation)
      fail(errc::context_invalid, where, ctx.slot, ctx.generation);
  }

  GRMA_INLINE static void copy(void* destination, const void* source, std::size_t bytes) {
    P::copy(destination, source, bytes);
  }

  // The end of a call all threads of the rank make: they meet (a thread's
  // fence after it covers every thread's accesses) and it counts as progress.
  GRMA_INLINE void rank_level_done() {
    P::sync();
    completed();
  }

  // ---- the core's teams ---------------------------------------------------------------

  // A team handle checked and resolved for this rank: a live team (a
  // split's slot still holds its generation) with members inside its base.
  GRMA_INLINE detail::team_members resolve_team(team t, call where) const {
    bool valid = t.slot < detail::max_teams && t.base <= 2 && t.stride >= 1 && t.start >= 0;
    if (valid && t.slot < detail::predefined_teams)
      valid = t.generation == 0 && t.base == t.slot;
    else if (valid)
      valid = t.generation != 0 && at_scope(wide(), [&](auto scope) {
                return detail::load_relaxed<scope.value>(view().teams->generation[t.slot]);
              }) == t.generation;
    const int base = valid ? detail::team_base_size(view(), t.base) : 0;
    const int size = t.size < 0 ? base : t.size;
    if (!valid || size < 1 || t.start + (size - 1) * t.stride >= base)
      fail(errc::team_invalid, where, std::int64_t(t.slot), t.generation);
    return {t.slot, t.base, t.start, t.stride, size};
  }

  // This rank's workspace of team slot `slot`.
  GRMA_INLINE detail::team_workspace& team_workspace(std::uint32_t slot) const {
    return *reinterpret_cast<detail::team_workspace*>(symmetric_slice_base() +
                                                      std::uint64_t(slot) * sizeof(detail::team_workspace));
  }

  // Member i's copy of what is at `offset` in every slice, for a team that
  // stays on this node.
  GRMA_INLINE unsigned char* team_address(const detail::team_members& m, int i, std::uint64_t offset) const {
    return team_place(m, i, offset).address;
  }
  // Where member i's copy of `offset` is: an address, or null on another node.
  GRMA_INLINE symmetric_place team_place(const detail::team_members& m, int i, std::uint64_t offset) const {
    return place_at(m.world_of(view(), i), offset);
  }

  // My member number in m; fails where I am not one.
  GRMA_INLINE int team_member(const detail::team_members& m, call where) const {
    const int me = m.member_of(view(), world_rank());
    if (me < 0) fail(errc::team_not_member, where, std::int64_t(m.slot), m.size);
    return me;
  }

  // Whether a member of m is on another node.
  GRMA_INLINE bool team_spans_nodes(const detail::team_members& m) const {
    if (!spans_nodes() || m.base != 0) return false;  // team_device and team_node splits stay here
    for (int i = 0; i < m.size; ++i)
      if (!view().on_node(view().device_of(m.world_of(view(), i)))) return true;
    return false;
  }
  // Whether member `me` is the first of m's members on this node: the one
  // that changes the node's tables for the team.
  GRMA_INLINE bool team_first_here(const detail::team_members& m, int me) const {
    for (int i = 0; i < me; ++i)
      if (view().on_node(view().device_of(m.world_of(view(), i)))) return false;
    return true;
  }
  // m's members on this node.
  GRMA_INLINE std::uint64_t team_members_here(const detail::team_members& m) const {
    std::uint64_t n = 0;
    for (int i = 0; i < m.size; ++i) n += view().on_node(view().device_of(m.world_of(view(), i))) ? 1 : 0;
    return n;
  }

  // Word `word` of world rank w's workspace of team slot `slot` becomes
  // `value` (the leading thread): a release store on this node; on another
  // node the engine stores it after every operation this rank handed it
  // before for that node (it applies one origin's operations in order; for
  // the others, team_exchange first waits for their acknowledgements).
  GRMA_INLINE void team_word_store(int w, std::uint32_t slot, std::size_t word, std::uint64_t value, call where) {
    const std::uint64_t offset = std::uint64_t(slot) * sizeof(detail::team_workspace) + word * sizeof(std::uint64_t);
    if (unsigned char* here = place_at(w, offset).address) {
      auto* at = reinterpret_cast<std::uint64_t*>(here);
      at_scope(wide(), [&](auto scope) { detail::store_release<scope.value>(*at, value); });
      return;
    }
    issue_symmetric_alone(detail::remote_op::put, w, offset, sizeof value, where, {value});
  }

  // A dissemination barrier over the team's members (every thread of each)
  // that also spreads the largest of their values: each member passes one
  // (below detail::team_value_none, which stands for "none"; the leading
  // thread's counts) and every member gets the largest. In round k a member
  // stores its round word (the barrier's epoch, the largest value it has
  // seen) in the member 2^k after it and waits for its own, from the member
  // 2^k before: after ceil(log2(size)) rounds each has seen every member's
  // value. The stores are releases and the waits acquires (a chain that
  // carries, release being cumulative), so everything a member did or saw
  // before the barrier is visible to every member after it. Across nodes a
  // member first waits until its earlier remote operations are in place
  // (acknowledged): the engine's acknowledgement stands for the release.
  GRMA_OUT_OF_LINE std::uint64_t team_exchange(const detail::team_members& m, std::uint64_t value, call where) {
    const int me = team_member(m, where);
    P::sync();  // the threads' accesses come before the leader's release
    std::uint64_t largest = value;
    // Also before any lock team_agree takes: a lock holder then waits only
    // for acknowledgements of its round words. A team of one too: its
    // barrier still completes the member's _nbi operations.
    if (leader() && spans_nodes()) await_remote_delivered(where);
    if (leader() && m.size > 1) {
      detail::team_workspace& mine = team_workspace(m.slot);
      const std::uint64_t epoch = ++mine.epoch;
      const std::size_t set = std::size_t(epoch % 2);
      at_scope(wide(), [&](auto scope) {
        for (int k = 0; k < detail::team_rounds && (std::int64_t{1} << k) < m.size; ++k) {
          const int partner = int((std::int64_t(me) + (std::int64_t{1} << k)) % m.size);
          team_word_store(m.world_of(view(), partner), m.slot, set * detail::team_rounds + std::size_t(k),
                          detail::team_round_word(epoch, largest), where);
          // The watchdog names the member whose store this round waits for
          // (2^k before: 2^k < size here).
          const int back = 1 << k, from = me >= back ? me - back : me - back + m.size;
          std::uint64_t word = 0;
          block_until(where,
                      {std::int64_t(m.slot), m.world_of(view(), from), std::int64_t(epoch),
                       detail::team_exchange_wait},
                      [&] {
                        word = detail::load_acquire<scope.value>(mine.rounds[set][k]);
                        return word >> detail::team_value_bits == (epoch & 0xffffffu);
                      });
          if ((word & detail::team_value_none) > largest) largest = word & detail::team_value_none;
        }
      });
    }
    // The leader's acquires order the threads' later reads.
    largest = P::broadcast(largest);
    completed();
    return largest;
  }
  GRMA_INLINE void team_barrier(const detail::team_members& m, call where) { team_exchange(m, 0, where); }

  // A value the members of m agree on in the tables of every node of them
  // (a team slot, a symmetric block's offset), by the first member on each
  // node (where `first`): it locks its node's team table (team_lock_nodes);
  // `find(from)` gives its node's candidate at or after `from` (in its bits
  // `shift` and up; team_value_none where there is none), a team_exchange
  // the largest, the next round's `from`, until every node found the same
  // (the largest is then `from`); the locked tables stay as they are, so
  // candidates only grow: two rounds where the nodes' first candidates
  // agree, one more for each time a node's next one is further on.
  // `take(agreed)` then changes the node's table (not for none), and the
  // lock goes. Returns the agreed value, or team_value_none.
  template <class Find, class Take>
  GRMA_INLINE std::uint64_t team_agree(const detail::team_members& m, bool first, int shift, call where,
                                       Find&& find, Take&& take) {
    team_lock_nodes(m, first, where);
    std::uint64_t from = 0, agreed = 0;
    for (;;) {
      const std::uint64_t largest = team_exchange(m, first && leader() ? find(from) : 0, where);
      if (largest == 0 || largest == detail::team_value_none) {  // 0: no node of them
        agreed = detail::team_value_none;
        break;
      }
      if (from != 0 && largest >> shift == from) {
        agreed = largest;
        break;
      }
      from = largest >> shift;
    }
    if (first && leader()) {
      if (agreed != detail::team_value_none) take(agreed);
      unlock_team_table();
    }
    return agreed;
  }

  // Locks the team table of every node of m's members (its first member
  // there, where `first`), one node after the other in the order of the
  // nodes' lowest world ranks: a barrier names the next node, whose member
  // locks before it enters the next barrier. Every team takes the locks in
  // that order, so a team that holds a node's lock waits only for nodes
  // after it, never for a team that waits for this one; and a lock is
  // taken only after the first barrier, once every member is in the call
  // (a member still in another team's call could wait for this lock).
  GRMA_INLINE void team_lock_nodes(const detail::team_members& m, bool first, call where) {
    // A node's place in the order, as a value whose largest is the first.
    const std::uint64_t place = detail::team_value_none - 1 - std::uint64_t(view().node_leader);
    bool locked = false;
    for (;;) {
      const std::uint64_t next = team_exchange(m, first && !locked ? place : 0, where);
      if (next == 0) return;  // every node locked
      if (first && next == place) {
        if (leader()) lock_team_table(where);
        locked = true;
      }
    }
  }

  // A data collective's first barrier, with its call and arguments handed
  // to the next member (cyclically), which checks them against its own
  // once the barrier is over: a load of its own workspace, so the check
  // adds no round trip, and where every member agrees with the one before
  // it all agree. The store comes before the barrier's first round word,
  // which goes to that same member. The signature carries the barrier's
  // epoch, so a signature from another barrier checks nothing rather than
  // something wrong. The arguments the signature has no room for (`more`:
  // a reduction's operation and type, detail::reduction_kind; a split's
  // stride; alltoalls' strides, detail::strides_more) go in a word of their
  // own beside it, with the same epoch, where they are not 0.
  GRMA_INLINE void team_collective_begin(const detail::team_members& m, int me, call where,
                                         std::size_t size, int root, std::uint64_t more = 0) {
    detail::team_workspace& mine = team_workspace(m.slot);
    const std::uint64_t epoch_tag = ((mine.epoch + 1) & 0xffu) << 56;
    constexpr std::uint64_t more_bits = (std::uint64_t{1} << 56) - 1;
    more &= more_bits;  // as stored and compared (a negative stride: its low 56 bits)
    const std::uint64_t own = epoch_tag | ((std::uint64_t(where) & 0xffu) << 48) |
                              ((std::uint64_t(root) & 0xffffu) << 32) |
                              (std::uint64_t(size) & 0xffffffffu);
    P::sync();  // every thread has read mine.epoch before the barrier changes it
    if (leader() && m.size > 1) {
      const int next = m.world_of(view(), (me + 1) % m.size);
      constexpr std::size_t word =
          offsetof(detail::team_workspace, signature) / sizeof(std::uint64_t);
      if (more != 0) team_word_store(next, m.slot, word + 1, epoch_tag | more, where);
      team_word_store(next, m.slot, word, own, where);
    }
    team_barrier(m, where);
    if (m.size == 1) return;
    const std::uint64_t stored =
        P::broadcast(leader() ? at_scope(wide(),
                                         [&](auto scope) {
                                           return detail::load_relaxed<scope.value>(mine.signature);
                                         })
                              : std::uint64_t{0});
    // None (cleared after the last check, below) or another barrier's: the
    // member before signed nothing in this one, so it made a call that
    // hands nothing (a barrier, or a later step of another call).
    const bool signed_here =
        (stored >> 56) == (own >> 56) && ((stored >> 48) & 0xffu) != std::uint64_t(call::none);
    const std::uint64_t before =
        signed_here ? stored : epoch_tag | std::uint64_t(call::barrier) << 48;
    // The member before's more where it stored one in this barrier (0:
    // none), read where this call has one to compare, or where the calls
    // differ (the message shows the member before's).
    std::uint64_t before_more = 0;
    if (more != 0 || before != own) {
      const std::uint64_t k = P::broadcast(
          leader() ? at_scope(wide(),
                              [&](auto scope) {
                                return detail::load_relaxed<scope.value>(mine.signature_more);
                              })
                   : std::uint64_t{0});
      if ((k >> 56) == (own >> 56)) before_more = k & more_bits;
    }
    // The values: the slot and this rank's more, the member before's call
    // and more, its size, its root and this rank's (16 bits each), and that
    // member with this rank's size.
    if (before != own || before_more != more)
      fail(errc::team_collective_mismatch, where, std::int64_t(m.slot | more << 8),
           std::int64_t(((before >> 48) & 0xffu) | before_more << 8),
           std::int64_t(before & 0xffffffffu),
           std::int64_t((before >> 32) & 0xffffu) | std::int64_t((own >> 32) & 0xffffu) << 16,
           (std::int64_t((me + m.size - 1) % m.size) << 32) | std::int64_t(own & 0xffffffffu));
    // Checked: cleared, so that a signature is never taken for one of a
    // barrier 256 epochs later. The member before stores its next one only
    // after this member has entered the call's next exchange, which comes
    // after these stores.
    if (leader())
      at_scope(wide(), [&](auto scope) {
        detail::store_relaxed<scope.value>(mine.signature, std::uint64_t{0});
        detail::store_relaxed<scope.value>(mine.signature_more, std::uint64_t{0});
      });
  }

  // The symmetric table's owner of a team's blocks: its generation, slot
  // and member 0's world rank, which tell apart the live teams that share a
  // slot and generation (the rows of a 2D split, every device's
  // team_device); world's is 0 (generation 0, slot 0, world rank 0).
  GRMA_INLINE std::uint64_t symmetric_owner(const detail::team_members& m, std::uint32_t generation) const {
    return (std::uint64_t(generation) << 32) | (std::uint64_t(m.slot) << 24) |
           std::uint64_t(std::uint32_t(m.world_of(view(), 0)));
  }

  // Changes of the node's team table, and a team's symmetric blocks, exclude
  // each other (any device's ranks).
  GRMA_INLINE void lock_team_table(call where) {
    waiter<> wait(*this, where,
                  {std::int64_t(detail::lock_kind::team_table), 0, 0, detail::lock_wait}, true);
    at_scope(wide(), [&](auto scope) {
      while (!detail::compare_exchange_acquire<scope.value>(view().teams->lock, 0u, 1u)) wait();
    });
  }
  GRMA_INLINE void unlock_team_table() {
    at_scope(wide(), [&](auto scope) { detail::store_release<scope.value>(view().teams->lock, 0u); });
  }

  // Window table changes of different devices' collectives exclude each other.
  GRMA_INLINE void lock_window_table(call where) {
    waiter<> wait(*this, where,
                  {std::int64_t(detail::lock_kind::window_table), 0, 0, detail::lock_wait});
    at_scope(wide(), [&](auto scope) {
      while (!detail::compare_exchange_acquire<scope.value>(*view().windows.lock, 0u, 1u)) wait();
    });
  }
  GRMA_INLINE void unlock_window_table() {
    at_scope(wide(),
             [&](auto scope) { detail::store_release<scope.value>(*view().windows.lock, 0u); });
  }

  // For alloc_shared and free_shared, at the collective's leader: `agreed`
  // when every rank passed rank 0's value (payload 0); else bit 63, the
  // first rank that differs (bits 40..62) and rank 0's value (its low 40 bits).
  static constexpr std::uint64_t shared_value_mask = (std::uint64_t{1} << 40) - 1;
  GRMA_INLINE static std::uint64_t shared_block_agreed(const detail::collective_arrival* arrivals,
                                                       std::uint64_t agreed, int size) {
    for (int i = 1; i < size; ++i)
      if (arrivals[i].payload[0] != arrivals[0].payload[0])
        return (std::uint64_t{1} << 63) | (std::uint64_t(i) << 40) |
               (arrivals[0].payload[0] & shared_value_mask);
    return agreed;
  }

  // alloc_offset and free_offset: the heap's walk under its lock is no
  // fast path. Out of line, its code stays out of the register allocation
  // of every program that allocates, put paths included (decision 030).
  GRMA_OUT_OF_LINE std::uint64_t alloc_offset(std::size_t bytes, call where) {
    detail::heap_allocator& a = *view().allocator;
    waiter<> wait(*this, where, {std::int64_t(detail::lock_kind::heap), 0, 0, detail::lock_wait});
    detail::heap_lock<S>(a, wait);
    detail::heap_failure why{};
    const std::uint64_t offset = detail::heap_allocate(a, view().heap, bytes, world_rank(), why);
    const std::uint64_t managed = a.end - a.begin;
    detail::heap_unlock<S>(a);
    if (offset == 0)
      fail(errc::heap_exhausted, where, std::int64_t(bytes), std::int64_t(managed),
           std::int64_t(why.free_bytes), std::int64_t(why.largest_free));
    completed();
    return offset;
  }

  GRMA_OUT_OF_LINE void free_offset(void* pointer, call where) {
    auto* p = static_cast<unsigned char*>(pointer);
    const std::int64_t address = std::int64_t(reinterpret_cast<std::uintptr_t>(pointer));
    if (p < view().heap || p >= view().heap + view().heap_size)
      fail(errc::invalid_free, where, address);
    detail::heap_allocator& a = *view().allocator;
    waiter<> wait(*this, where, {std::int64_t(detail::lock_kind::heap), 0, 0, detail::lock_wait});
    detail::heap_lock<S>(a, wait);
    const detail::heap_free_result result =
        detail::heap_release(a, view().heap, std::uint64_t(p - view().heap));
    detail::heap_unlock<S>(a);
    if (result == detail::heap_free_result::already_free) fail(errc::double_free, where, address);
    if (result != detail::heap_free_result::ok) fail(errc::invalid_free, where, address);
    completed();
  }

  const detail::device_view* v_;
  detail::rank_local* local_;
  int device_rank_;
};

// The rank one_warp() makes from a Rank: the layers' warp handles hold one.
template <class Rank>
using warp_rank_of = decltype(std::declval<const Rank&>().one_warp());

// Holds a warp's rank, as a base made before the handle that points to it.
template <class WarpRank>
struct warp_rank_holder {
  WarpRank held;
};

}  // namespace grma

// Fails the job with the rank, file, line and expression when `expr` is false.
#define GRMA_ASSERT(rank, expr) (rank).check(static_cast<bool>(expr), #expr, __FILE__, __LINE__)
