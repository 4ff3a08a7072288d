// Atomic operations on one 4- or 8-byte word of a rank's symmetric memory
// (OpenSHMEM 1.5's AMOs): fetch, set, swap, compare_swap, fetch_add, add,
// fetch_inc, inc, fetch_and/or/xor, and/or/xor.
//
// Any thread may call them alone; each call is one operation (all threads
// of a rank calling make as many). They are atomic with respect to each
// other and to the target's own atomics on the word, from every device of
// the job; to another node, the target's network engine applies them (on a
// GPU through its proxy's atomics, never the network's own). Fetching forms return the old value; the others return at once
// and are complete after quiet. Like OpenSHMEM's they order nothing else:
// fence or quiet orders them with puts (on the CPU backend they are
// acquire/release, which is stronger). T: integers of 4 or 8 bytes (set,
// fetch and swap also float, double, enums and pointers). The word must be
// aligned to its size.
#pragma once

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
class atomic_calls {
 public:
  template <class T>
  GRMA_INLINE T atomic_fetch(const T* word, int target, context ctx = default_context) {
    return apply<T>(call::atomic_fetch, const_cast<T*>(word), target, ctx, detail::remote_atomic::fetch, T{}, T{}, true,
                    [](auto scope, T& w) { return detail::atomic_ref_t<T, scope.value>(w).load(detail::word_load_order); });
  }
  template <class T>
  GRMA_INLINE void atomic_set(T* word, T value, int target, context ctx = default_context) {
    apply<T>(call::atomic_set, word, target, ctx, detail::remote_atomic::set, value, T{}, false,
             [&](auto scope, T& w) {
               detail::atomic_ref_t<T, scope.value>(w).store(value, detail::word_store_order);
               return T{};
             });
  }
  template <class T>
  GRMA_INLINE T atomic_swap(T* word, T value, int target, context ctx = default_context) {
    return fetch_op<detail::word_op::exchange>(call::atomic_swap, word, value, target, ctx,
                                               detail::remote_atomic::swap);
  }
  // Stores `value` where the word equals `expected`; returns the old word.
  template <class T>
  GRMA_INLINE T atomic_compare_swap(T* word, T expected, T value, int target,
                                    context ctx = default_context) {
    static_assert(std::is_integral_v<T>, "compare_swap takes integers");
    return apply<T>(call::atomic_compare_swap, word, target, ctx, detail::remote_atomic::compare_swap,
                    value, expected, true, [&](auto scope, T& w) {
      T old = expected;
      detail::atomic_ref_t<T, scope.value>(w).compare_exchange_strong(old, value, detail::word_update_order,
                                                                      detail::word_load_order);
      return old;
    });
  }

  template <class T>
  GRMA_INLINE T atomic_fetch_add(T* word, T value, int target, context ctx = default_context) {
    return fetch_op<detail::word_op::add>(call::atomic_fetch_add, word, value, target, ctx, detail::remote_atomic::add);
  }
  template <class T>
  GRMA_INLINE void atomic_add(T* word, T value, int target, context ctx = default_context) {
    apply_op<detail::word_op::add>(call::atomic_add, word, value, target, ctx, detail::remote_atomic::add);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_inc(T* word, int target, context ctx = default_context) {
    return fetch_op<detail::word_op::add>(call::atomic_fetch_inc, word, T{1}, target, ctx, detail::remote_atomic::add);
  }
  template <class T>
  GRMA_INLINE void atomic_inc(T* word, int target, context ctx = default_context) {
    apply_op<detail::word_op::add>(call::atomic_inc, word, T{1}, target, ctx, detail::remote_atomic::add);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_and(T* word, T value, int target, context ctx = default_context) {
    return fetch_op<detail::word_op::bit_and>(call::atomic_fetch_and, word, value, target, ctx, detail::remote_atomic::bit_and);
  }
  template <class T>
  GRMA_INLINE void atomic_and(T* word, T value, int target, context ctx = default_context) {
    apply_op<detail::word_op::bit_and>(call::atomic_and, word, value, target, ctx, detail::remote_atomic::bit_and);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_or(T* word, T value, int target, context ctx = default_context) {
    return fetch_op<detail::word_op::bit_or>(call::atomic_fetch_or, word, value, target, ctx, detail::remote_atomic::bit_or);
  }
  template <class T>
  GRMA_INLINE void atomic_or(T* word, T value, int target, context ctx = default_context) {
    apply_op<detail::word_op::bit_or>(call::atomic_or, word, value, target, ctx, detail::remote_atomic::bit_or);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_xor(T* word, T value, int target, context ctx = default_context) {
    return fetch_op<detail::word_op::bit_xor>(call::atomic_fetch_xor, word, value, target, ctx, detail::remote_atomic::bit_xor);
  }
  template <class T>
  GRMA_INLINE void atomic_xor(T* word, T value, int target, context ctx = default_context) {
    apply_op<detail::word_op::bit_xor>(call::atomic_xor, word, value, target, ctx, detail::remote_atomic::bit_xor);
  }

 private:
  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }

  // A read-modify-write that returns the old value; the arithmetic and
  // bitwise ones take integers only.
  template <detail::word_op Op, class T>
  GRMA_INLINE T fetch_op(call where, T* word, T value, int target, context ctx, detail::remote_atomic remote) {
    static_assert(Op == detail::word_op::exchange || std::is_integral_v<T>,
                  "arithmetic and bitwise atomics take integers");
    return apply<T>(where, word, target, ctx, remote, value, T{}, true, [&](auto scope, T& w) {
      return detail::word_fetch_op<Op, scope.value>(w, value);
    });
  }
  // The same with no result: the calling thread need not wait for it.
  template <detail::word_op Op, class T>
  GRMA_INLINE void apply_op(call where, T* word, T value, int target, context ctx, detail::remote_atomic remote) {
    static_assert(std::is_integral_v<T>, "arithmetic and bitwise atomics take integers");
    apply<T>(where, word, target, ctx, remote, value, T{}, false, [&](auto scope, T& w) {
      detail::word_apply_op<Op, scope.value>(w, value);
      return T{};
    });
  }

  // op(scope, word) on the target's copy of `word`, at system scope where
  // the job spans devices (another device's ranks may update it too). On
  // another node the target's engine applies `remote` (operand, compare)
  // atomically with the target's own atomics on the word; a fetching one's
  // old value comes back, the others return at once (complete at quiet).
  template <class T, class Op>
  GRMA_INLINE T apply(call where, T* word, int target, context ctx, detail::remote_atomic remote, T operand,
                      T compare, bool fetching, Op&& op) {
    static_assert(detail::is_atomic_word<T>, "atomics take words of 4 or 8 bytes");
    Rank& r = self();
    r.check_context(ctx, where);
    const auto at = r.place_symmetric(word, sizeof(T), target, where);
    // Slices are page-aligned: the word's alignment is the same in every copy.
    if (reinterpret_cast<std::uintptr_t>(word) % sizeof(T) != 0)
      r.fail(errc::word_misaligned, where, std::int64_t(reinterpret_cast<std::uintptr_t>(word)),
             std::int64_t(sizeof(T)));
    if (at.address == nullptr) {
      std::uint64_t operand_bits = 0, compare_bits = 0;
      std::memcpy(&operand_bits, &operand, sizeof(T));
      std::memcpy(&compare_bits, &compare, sizeof(T));
      const std::uint64_t answer =
          r.issue_symmetric_alone(detail::remote_op::atomic, target, at.offset, sizeof(T), where,
                                  {operand_bits, compare_bits, remote, fetching});
      T old;
      std::memcpy(&old, &answer, sizeof(T));
      return old;
    }
    return Rank::at_scope(r.wide(), [&](auto scope) { return op(scope, *reinterpret_cast<T*>(at.address)); });
  }
};

}  // namespace grma::core
