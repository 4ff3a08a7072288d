// The one place where grma touches atomics. Every shared word of the runtime is
// accessed through these functions, so the memory scope and order of each access
// is visible at the call site and the same code compiles for the CPU backend
// (std::atomic_ref) and for CUDA (cuda::atomic_ref with an explicit thread scope).
#pragma once

#include <cstdint>
#include <type_traits>

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

// A lock among the threads of one rank, on a word of the rank's own state:
// shared memory on a GPU, where the global atomics below would fault, so
// generic atomics at block scope (all the rank's threads need).
GRMA_INLINE bool rank_try_lock(std::uint32_t& word) {
#if defined(__CUDACC__)
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> a(word);
#else
  std::atomic_ref<std::uint32_t> a(word);
#endif
  std::uint32_t expected = 0;
  return a.compare_exchange_strong(expected, 1u, order::memory_order_acquire, order::memory_order_relaxed);
}
GRMA_INLINE void rank_unlock(std::uint32_t& word) {
#if defined(__CUDACC__)
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block>(word).store(0u, order::memory_order_release);
#else
  std::atomic_ref<std::uint32_t>(word).store(0u, order::memory_order_release);
#endif
}

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

#if GRMA_DEVICE_CODE
// Read-modify-writes in device code name the global state space. Every word
// grma updates atomically is global (device memory or mapped host memory),
// and a generic atomic (what cuda::atomic_ref emits) comes back with a
// predicate for the shared-memory case that the next branch waits for: the
// atomic's round trip could not overlap anything.
template <scope S>
GRMA_INLINE std::uint64_t global_add(std::uint64_t& word, std::uint64_t value, bool acq_rel) {
  const std::size_t at = __cvta_generic_to_global(&word);
  std::uint64_t old;
  if (acq_rel) {
    if constexpr (S == scope::system)
      asm volatile("atom.acq_rel.sys.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(at), "l"(value) : "memory");
    else
      asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(at), "l"(value) : "memory");
  } else {
    if constexpr (S == scope::system)
      asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(at), "l"(value) : "memory");
    else
      asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(at), "l"(value) : "memory");
  }
  return old;
}

// Two adjacent words, 16-byte aligned, stored or loaded by one 16-byte
// access of global memory. Each word is still single-copy atomic on its
// own, not the pair. One thread's strong scalar accesses are issued one
// after another, a vector's halves together: a notification slot's four
// words as two 16-byte stores and two loads took 1.2 us off a stand-alone
// 8-byte ping-pong's round trip on an H200 pair (decisions 028, 029).
#define GRMA_PAIR_ACCESS(op, sem, ...)                                     \
  if constexpr (S == scope::system)                                        \
    asm volatile(op "." sem ".sys.global.v2.u64 " __VA_ARGS__ : "memory"); \
  else                                                                     \
    asm volatile(op "." sem ".gpu.global.v2.u64 " __VA_ARGS__ : "memory");
template <scope S>
GRMA_INLINE void store_relaxed_pair(std::uint64_t* words, std::uint64_t first,
                                    std::uint64_t second) {
  const std::size_t at = __cvta_generic_to_global(words);
  GRMA_PAIR_ACCESS("st", "relaxed", "[%0], {%1, %2};" ::"l"(at), "l"(first), "l"(second))
}
template <scope S>
GRMA_INLINE void load_relaxed_pair(std::uint64_t* words, std::uint64_t& first,
                                   std::uint64_t& second) {
  const std::size_t at = __cvta_generic_to_global(words);
  GRMA_PAIR_ACCESS("ld", "relaxed", "{%0, %1}, [%2];" : "=l"(first), "=l"(second) : "l"(at))
}
// Acquire: accesses after it in program order are not performed before it.
template <scope S>
GRMA_INLINE void load_acquire_pair(std::uint64_t* words, std::uint64_t& first,
                                   std::uint64_t& second) {
  const std::size_t at = __cvta_generic_to_global(words);
  GRMA_PAIR_ACCESS("ld", "acquire", "{%0, %1}, [%2];" : "=l"(first), "=l"(second) : "l"(at))
}
#undef GRMA_PAIR_ACCESS
#endif

// Reserving a ticket or counting an event: no data is published by the
// increment itself, so relaxed suffices.
template <scope S = scope::device>
GRMA_INLINE std::uint64_t fetch_add_relaxed(std::uint64_t& word, std::uint64_t value) {
#if GRMA_DEVICE_CODE
  return global_add<S>(word, value, false);
#else
  return atomic_ref_t<std::uint64_t, S>(word).fetch_add(value, order::memory_order_relaxed);
#endif
}

// An add that publishes the writer's earlier stores (a signal word) and whose
// result may be used to read others' data: acquire + release.
template <scope S = scope::device>
GRMA_INLINE std::uint64_t fetch_add_acq_rel(std::uint64_t& word, std::uint64_t value) {
#if GRMA_DEVICE_CODE
  return global_add<S>(word, value, true);
#else
  return atomic_ref_t<std::uint64_t, S>(word).fetch_add(value, order::memory_order_acq_rel);
#endif
}

// An add that publishes the writer's earlier stores (and, release being
// cumulative, what it has acquired) and whose result nobody needs: on a GPU
// a reduction (red), so the thread goes on without the atomic's round trip.
template <scope S = scope::device>
GRMA_INLINE void add_release(std::uint64_t& word, std::uint64_t value) {
#if GRMA_DEVICE_CODE
  const std::size_t at = __cvta_generic_to_global(&word);
  if constexpr (S == scope::system)
    asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(at), "l"(value) : "memory");
  else
    asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(at), "l"(value) : "memory");
#else
  atomic_ref_t<std::uint64_t, S>(word).fetch_add(value, order::memory_order_release);
#endif
}

// Lock acquisition: on success the critical section's reads see the previous
// holder's writes (acquire); failure needs no ordering.
template <scope S = scope::device>
GRMA_INLINE bool compare_exchange_acquire(std::uint32_t& word, std::uint32_t expected,
                                          std::uint32_t desired) {
#if GRMA_DEVICE_CODE
  const std::size_t at = __cvta_generic_to_global(&word);
  std::uint32_t old;
  if constexpr (S == scope::system)
    asm volatile("atom.acquire.sys.global.cas.b32 %0, [%1], %2, %3;"
                 : "=r"(old) : "l"(at), "r"(expected), "r"(desired) : "memory");
  else
    asm volatile("atom.acquire.gpu.global.cas.b32 %0, [%1], %2, %3;"
                 : "=r"(old) : "l"(at), "r"(expected), "r"(desired) : "memory");
  return old == expected;
#else
  return atomic_ref_t<std::uint32_t, S>(word).compare_exchange_strong(
      expected, desired, order::memory_order_acquire, order::memory_order_relaxed);
#endif
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

// The order of the core's one-word operations on symmetric memory (p, g,
// atomics): relaxed in device code, as OpenSHMEM's, where fence and quiet
// order them; acquire/release on the CPU backend, because ThreadSanitizer
// sees no fences and would take a program that orders them with a fence
// for a race. Never weaker than the documented rule.
#if GRMA_DEVICE_CODE
inline constexpr auto word_load_order = order::memory_order_relaxed;
inline constexpr auto word_store_order = order::memory_order_relaxed;
inline constexpr auto word_update_order = order::memory_order_relaxed;
#else
inline constexpr auto word_load_order = order::memory_order_acquire;
inline constexpr auto word_store_order = order::memory_order_release;
inline constexpr auto word_update_order = order::memory_order_acq_rel;
#endif

// Whether T is one machine word that atomics handle: a number, enum or
// pointer of 4 or 8 bytes.
template <class T>
inline constexpr bool is_atomic_word =
    (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) &&
    (sizeof(T) == 4 || sizeof(T) == 8);

// The read-modify-writes of the core's atomics on a word of symmetric memory.
enum class word_op { add, bit_and, bit_or, bit_xor, exchange };

#if GRMA_DEVICE_CODE
// The unsigned word of T's size, which the PTX below names (.u32/.b32 or
// .u64/.b64): two's complement makes add and the bitwise ops the same on
// signed integers, and exchange moves bits.
template <class T>
using word_bits = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;

// The PTX of a relaxed read-modify-write of a global word at scope S:
// `atom` (returns the old value) or, with no result, `red` (the thread goes
// on without waiting for the atomic). cuda::atomic_ref would emit generic
// atomics whose shared-memory case costs a predicate and a branch that
// waits for the result.
#define GRMA_WORD_RMW(kind, suffix)                                                              \
  if constexpr (sizeof(T) == 4) {                                                                \
    if constexpr (S == scope::system)                                                            \
      asm volatile(kind ".relaxed.sys.global." suffix "32 " GRMA_WORD_OPERANDS("r"));            \
    else                                                                                         \
      asm volatile(kind ".relaxed.gpu.global." suffix "32 " GRMA_WORD_OPERANDS("r"));            \
  } else {                                                                                       \
    if constexpr (S == scope::system)                                                            \
      asm volatile(kind ".relaxed.sys.global." suffix "64 " GRMA_WORD_OPERANDS("l"));            \
    else                                                                                         \
      asm volatile(kind ".relaxed.gpu.global." suffix "64 " GRMA_WORD_OPERANDS("l"));            \
  }

template <word_op Op, scope S, class T>
GRMA_INLINE word_bits<T> global_fetch_op(T& word, word_bits<T> value) {
  const std::size_t at = __cvta_generic_to_global(&word);
  word_bits<T> old;
#define GRMA_WORD_OPERANDS(reg) "%0, [%1], %2;" : "=" reg(old) : "l"(at), reg(value) : "memory"
  if constexpr (Op == word_op::add) { GRMA_WORD_RMW("atom", "add.u") }
  else if constexpr (Op == word_op::bit_and) { GRMA_WORD_RMW("atom", "and.b") }
  else if constexpr (Op == word_op::bit_or) { GRMA_WORD_RMW("atom", "or.b") }
  else if constexpr (Op == word_op::bit_xor) { GRMA_WORD_RMW("atom", "xor.b") }
  else { GRMA_WORD_RMW("atom", "exch.b") }
#undef GRMA_WORD_OPERANDS
  return old;
}

template <word_op Op, scope S, class T>
GRMA_INLINE void global_reduce_op(T& word, word_bits<T> value) {
  const std::size_t at = __cvta_generic_to_global(&word);
#define GRMA_WORD_OPERANDS(reg) "[%0], %1;" ::"l"(at), reg(value) : "memory"
  if constexpr (Op == word_op::add) { GRMA_WORD_RMW("red", "add.u") }
  else if constexpr (Op == word_op::bit_and) { GRMA_WORD_RMW("red", "and.b") }
  else if constexpr (Op == word_op::bit_or) { GRMA_WORD_RMW("red", "or.b") }
  else { static_assert(Op == word_op::bit_xor, "red has no exchange"); GRMA_WORD_RMW("red", "xor.b") }
#undef GRMA_WORD_OPERANDS
}
#undef GRMA_WORD_RMW

template <class To, class From>
GRMA_INLINE To word_cast(From v) {
  To out;
  __builtin_memcpy(&out, &v, sizeof(To));
  return out;
}
#endif

// Op on a word of symmetric memory (the core's atomics): the old value.
// Relaxed on a GPU, word_update_order on the host.
template <word_op Op, scope S, class T>
GRMA_INLINE T word_fetch_op(T& word, T value) {
#if GRMA_DEVICE_CODE
  return word_cast<T>(global_fetch_op<Op, S>(word, word_cast<word_bits<T>>(value)));
#else
  atomic_ref_t<T, S> a(word);
  if constexpr (Op == word_op::exchange) return a.exchange(value, word_update_order);
  else if constexpr (Op == word_op::add) return a.fetch_add(value, word_update_order);
  else if constexpr (Op == word_op::bit_and) return a.fetch_and(value, word_update_order);
  else if constexpr (Op == word_op::bit_or) return a.fetch_or(value, word_update_order);
  else return a.fetch_xor(value, word_update_order);
#endif
}

// The same where nobody needs the old value: on a GPU the thread does not
// wait for the atomic (quiet completes it).
template <word_op Op, scope S, class T>
GRMA_INLINE void word_apply_op(T& word, T value) {
#if GRMA_DEVICE_CODE
  global_reduce_op<Op, S>(word, word_cast<word_bits<T>>(value));
#else
  word_fetch_op<Op, S>(word, value);
#endif
}

// One element of another rank's memory, stored or loaded whole: an atomic
// access where T is a word (so a flag written with p and polled with
// wait_until is no data race), else a volatile one.
template <scope S, class T>
GRMA_INLINE void store_word(T& word, T value) {
  if constexpr (is_atomic_word<T>)
    atomic_ref_t<T, S>(word).store(value, word_store_order);
  else
    *static_cast<volatile T*>(&word) = value;
}
template <scope S, class T>
GRMA_INLINE T load_word(const T& word) {
  if constexpr (is_atomic_word<T>)
    return atomic_ref_t<T, S>(const_cast<T&>(word)).load(word_load_order);
  else
    return *static_cast<const volatile T*>(&word);
}

// Orders this thread's earlier accesses before its later ones as seen from
// scope S (and, cumulatively, what it has observed): quiet and fence of the
// core. On the host it is a sequentially consistent read-modify-write of a
// word of the thread's own (a full fence in hardware): ThreadSanitizer
// rejects atomic_thread_fence, and the CPU backend's programs get their
// happens-before from the acquire/release atomics and collectives around
// it anyway.
template <scope S = scope::device>
GRMA_INLINE void fence_full() {
#if defined(__CUDACC__)
  cuda::atomic_thread_fence(order::memory_order_seq_cst,
                            S == scope::system ? cuda::thread_scope_system : cuda::thread_scope_device);
#else
  static thread_local std::uint64_t own_word = 0;
  std::atomic_ref<std::uint64_t>(own_word).fetch_add(0, std::memory_order_seq_cst);
#endif
}

}  // namespace grma::detail
