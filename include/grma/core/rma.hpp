// One-sided access to symmetric memory without notification (papers/001:
// put, get, p, g, iput, iget, put_signal, the _nbi forms, quiet and fence),
// on a context.
//
// Addresses: `dest` of a put and `source` of a get are symmetric (from
// alloc_symmetric), named by this rank's copy; the target's copy is written
// or read. The local buffer may be any memory the rank can read or write.
// A transfer of 0 bytes moves nothing, whatever its addresses.
//
// Completion (OpenSHMEM's rules): put returns when its source may be reused,
// get when its destination holds the data; the _nbi forms return at once,
// their buffers the program's again after quiet. quiet(ctx) returns when
// every operation the rank issued on ctx is complete at its target and
// visible to it (to a reader that synchronizes with this rank afterwards:
// a barrier, or a flag written after the quiet and read with acquire).
// fence(ctx) orders the puts, p and atomics issued on ctx to one target
// before those issued after it.
//
// Levels: put, get, iput, iget, put_signal and their _nbi forms are called by all
// threads of the rank together (or of one warp: one_warp()); p, g, quiet
// and fence by any thread alone. On the two device paths (same device,
// peer) every operation is done when its call returns, so quiet and fence
// are memory fences (a thread's fence covers what the threads it met at the
// end of a rank-level call wrote). To another node the network engine
// carries them: a put of at most 4 KiB (and p) returns at once (its bytes
// travel in the command or its payload slot), a larger one once the engine
// has read its source, a get (and g) with its data; an
// _nbi form returns once the engine has the command (many are in flight at
// once), and quiet waits for their sources to be read, their data to land
// and the targets' engines to acknowledge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/device_state.hpp"

namespace grma::core {

template <class Rank>
class rma_calls {
 public:
  GRMA_INLINE void put(void* dest, const void* source, std::size_t bytes, int target,
                       context ctx = default_context) {
    transfer(call::put, dest, source, bytes, target, ctx, true);
  }
  GRMA_INLINE void get(void* dest, const void* source, std::size_t bytes, int target,
                       context ctx = default_context) {
    transfer(call::get, dest, source, bytes, target, ctx, false);
  }
  GRMA_INLINE void put_nbi(void* dest, const void* source, std::size_t bytes, int target,
                           context ctx = default_context) {
    transfer(call::put_nbi, dest, source, bytes, target, ctx, true);
  }
  GRMA_INLINE void get_nbi(void* dest, const void* source, std::size_t bytes, int target,
                           context ctx = default_context) {
    transfer(call::get_nbi, dest, source, bytes, target, ctx, false);
  }

  // A put, then `value` set into (or added to) the 64-bit word `signal`
  // (symmetric, 8-byte aligned) of the target's copy: a reader that sees the
  // word's new value with acquire (wait_until) sees the data (OpenSHMEM's
  // put_signal). Completion as put's and put_nbi's; the signal is complete
  // with the data. To another node: a put, then an atomic on the signal
  // word, which the target applies after the put's data has landed (a
  // rank's operations are applied in order).
  GRMA_INLINE void put_signal(void* dest, const void* source, std::size_t bytes,
                              std::uint64_t* signal, std::uint64_t value, signal_op op, int target,
                              context ctx = default_context) {
    signalled(call::put_signal, dest, source, bytes, signal, value, op, target, ctx);
  }
  GRMA_INLINE void put_signal_nbi(void* dest, const void* source, std::size_t bytes,
                                  std::uint64_t* signal, std::uint64_t value, signal_op op,
                                  int target, context ctx = default_context) {
    signalled(call::put_signal_nbi, dest, source, bytes, signal, value, op, target, ctx);
  }

  // Strided: element i of `source` (at i * source_stride elements) to
  // element i * dest_stride of the target's `dest`, for i < count. T is a
  // number, enum or pointer of 1, 2, 4 or 8 bytes.
  template <class T>
  GRMA_INLINE void iput(T* dest, const T* source, std::size_t dest_stride,
                        std::size_t source_stride, std::size_t count, int target,
                        context ctx = default_context) {
    strided<T>(call::iput, dest, source, dest_stride, source_stride, count, target, ctx, true);
  }
  template <class T>
  GRMA_INLINE void iget(T* dest, const T* source, std::size_t dest_stride,
                        std::size_t source_stride, std::size_t count, int target,
                        context ctx = default_context) {
    strided<T>(call::iget, dest, source, dest_stride, source_stride, count, target, ctx, false);
  }

  // One element, by the calling thread: one store (or load) of the whole
  // element for 4- and 8-byte numbers, so a p of a flag and a wait_until
  // on it need nothing else.
  template <class T>
  GRMA_INLINE void p(T* dest, T value, int target, context ctx = default_context) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t), "p moves one element of at most 8 bytes");
    Rank& r = self();
    r.check_context(ctx, call::p);
    const auto at = r.place_symmetric(dest, sizeof(T), target, call::p);
    if (at.address == nullptr) {  // another node: the value travels inside the command
      std::uint64_t bits = 0;
      std::memcpy(&bits, &value, sizeof(T));
      r.issue_symmetric_alone(detail::remote_op::put, target, at.offset, sizeof(T), call::p,
                              {bits});
      return;
    }
    T* to = reinterpret_cast<T*>(at.address);
    Rank::at_scope(r.wide(), [&](auto scope) { detail::store_word<scope.value>(*to, value); });
  }
  template <class T>
  GRMA_INLINE T g(const T* source, int target, context ctx = default_context) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t), "g moves one element of at most 8 bytes");
    Rank& r = self();
    r.check_context(ctx, call::g);
    const auto at = r.place_symmetric(source, sizeof(T), target, call::g);
    if (at.address == nullptr) {  // another node: the element comes back in the reply word
      const std::uint64_t answer =
          r.issue_symmetric_alone(detail::remote_op::get, target, at.offset, sizeof(T), call::g);
      T value;
      std::memcpy(&value, &answer, sizeof(T));
      return value;
    }
    const T* from = reinterpret_cast<const T*>(at.address);
    return Rank::at_scope(r.wide(), [&](auto scope) { return detail::load_word<scope.value>(*from); });
  }

  // Across nodes quiet also waits until the targets' engines have
  // acknowledged everything the rank handed its engine (on every context:
  // a rank's remote operations complete in order).
  GRMA_INLINE void quiet(context ctx = default_context) {
    Rank& r = self();
    r.check_context(ctx, call::quiet);
    Rank::at_scope(r.wide(), [](auto scope) { detail::fence_full<scope.value>(); });
    if (r.view().nodes > 1) r.await_remote_delivered(call::quiet);
  }
  // A target on another node applies one rank's operations in the order it
  // issued them: fence needs only the memory fence for the others.
  GRMA_INLINE void fence(context ctx = default_context) {
    Rank& r = self();
    r.check_context(ctx, call::fence);
    Rank::at_scope(r.wide(), [](auto scope) { detail::fence_full<scope.value>(); });
  }

 private:
  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }

  GRMA_INLINE void transfer(call where, void* dest, const void* source, std::size_t bytes,
                            int target, context ctx, bool is_put) {
    Rank& r = self();
    r.check_context(ctx, where);
    if (bytes == 0) {  // moves nothing: any addresses (OpenSHMEM's nelems 0), the target checked
      r.device_of_target(target, where);
      return r.rank_level_done();
    }
    if ((is_put ? source : dest) == nullptr) r.fail(errc::null_buffer, where, std::int64_t(bytes));
    const auto at = r.place_symmetric(is_put ? dest : source, bytes, target, where);
    if (at.address == nullptr)  // another node: the engine moves it (and the call ends there)
      return r.issue_symmetric(
          is_put ? detail::remote_op::put : detail::remote_op::get, target, at.offset, bytes,
          is_put ? source : dest, where,
          where != call::put_nbi && where != call::get_nbi && where != call::put_signal_nbi);
    if (is_put)
      r.copy(at.address, source, bytes);
    else
      r.copy(dest, at.address, bytes);
    r.rank_level_done();
  }

  GRMA_INLINE void signalled(call where, void* dest, const void* source, std::size_t bytes,
                             std::uint64_t* signal, std::uint64_t value, signal_op op, int target,
                             context ctx) {
    Rank& r = self();
    if (op != signal_op::set && op != signal_op::add)
      r.fail(errc::invalid_enum, where, std::int64_t(op));
    const auto at = r.place_symmetric(signal, sizeof(std::uint64_t), target, where);
    if (reinterpret_cast<std::uintptr_t>(signal) % sizeof(std::uint64_t) != 0)
      r.fail(errc::word_misaligned, where, std::int64_t(reinterpret_cast<std::uintptr_t>(signal)),
             std::int64_t(sizeof(std::uint64_t)));
    transfer(where, dest, source, bytes, target, ctx, true);  // ends with the rank's threads met
    if (r.leader()) {
      if (at.address == nullptr) {  // another node: the atomic's command follows the put's
        r.issue_symmetric_alone(
            detail::remote_op::atomic, target, at.offset, sizeof(std::uint64_t), where,
            {value, 0,
             op == signal_op::set ? detail::remote_atomic::set : detail::remote_atomic::add});
      } else {
        auto& word = *reinterpret_cast<std::uint64_t*>(at.address);
        Rank::at_scope(r.wide(), [&](auto scope) {
          // Release, by the thread that met the others after their copies:
          // the data is visible before the signal's new value.
          if (op == signal_op::set)
            detail::store_release<scope.value>(word, value);
          else
            detail::add_release<scope.value>(word, value);
        });
      }
    }
    // No thread returns before the signal is issued: a quiet or fence by any
    // thread after the call covers it.
    r.sync_threads();
  }

  template <class T>
  GRMA_INLINE void strided(call where, T* dest, const T* source, std::size_t dest_stride,
                           std::size_t source_stride, std::size_t count, int target, context ctx,
                           bool is_put) {
    static_assert((std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) &&
                      (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8),
                  "iput and iget move numbers, enums or pointers of 1, 2, 4 or 8 bytes");
    Rank& r = self();
    r.check_context(ctx, where);
    // A stride above PTRDIFF_MAX is a negative one (OpenSHMEM's are signed).
    if (std::int64_t(dest_stride) < 0 || std::int64_t(source_stride) < 0)
      r.fail(errc::invalid_stride, where, std::int64_t(dest_stride), std::int64_t(source_stride));
    if (count == 0) r.device_of_target(target, where);  // moves nothing, the target checked
    if (count != 0) {
      // The symmetric side's extent: its first to its last element.
      const std::size_t stride = is_put ? dest_stride : source_stride;
      const std::uint64_t extent = detail::strided_extent(count, stride, sizeof(T));
      if ((is_put ? source : dest) == nullptr) r.fail(errc::null_buffer, where, std::int64_t(extent));
      const auto at = r.place_symmetric(is_put ? static_cast<const void*>(dest) : source, extent, target, where);
      if (at.address == nullptr) {  // another node: an element per command, in order
        for (std::size_t i = 0; i < count; ++i) {
          const std::uint64_t offset = at.offset + i * stride * sizeof(T);
          r.issue_symmetric(is_put ? detail::remote_op::put : detail::remote_op::get, target,
                            offset, sizeof(T),
                            is_put ? static_cast<const void*>(source + i * source_stride)
                                   : dest + i * dest_stride,
                            where, true);
        }
        return;
      }
      if (is_put)
        dest = reinterpret_cast<T*>(at.address);
      else
        source = reinterpret_cast<const T*>(at.address);
      // Volatile loads: the other side's memory may have changed since this
      // thread last read it (on a GPU, a load past L1).
      for (std::size_t i = std::size_t(r.thread()); i < count; i += std::size_t(r.threads()))
        dest[i * dest_stride] = *static_cast<const volatile T*>(source + i * source_stride);
    }
    r.rank_level_done();
  }
};

}  // namespace grma::core
