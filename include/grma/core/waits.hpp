// Waiting on words of this rank's memory that other ranks write with p,
// put or atomics (OpenSHMEM's wait_until and test families): one word, or
// all, any or some of an array of words, each compared by `c` with `value`
// (or, in the _vector forms, with its own element of `values`). Any thread
// may call them alone. A word is loaded with acquire at the job's scope:
// what the writer ordered before its write (a fence or quiet, then the p or
// atomic) is visible once the wait returns.
//
// `status` (may be null) excludes word i where status[i] != 0. Every wait
// has a form with a time limit (grma::within) that returns
// wait_result::timed_out when the limit passes; a wait without one blocks
// until its condition holds, bounded by the watchdog (GRMA_TIMEOUT) like
// every grma wait. The words: numbers, enums or pointers of 4 or 8 bytes,
// aligned to their size, anywhere the rank may read (its symmetric slice,
// its windows' memory, userdata).
#pragma once

#include <cstddef>
#include <cstdint>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/detail/atomic.hpp"

namespace grma::core {

// What wait_until_any and test_any return when no word is ready (or every
// word is excluded).
inline constexpr std::size_t no_word = ~std::size_t{0};

template <class Rank>
class wait_calls {
 public:
  // ---- one word ----
  template <class T>
  GRMA_INLINE T wait_until(T* word, cmp c, T value) {
    T seen{};
    wait(call::wait_until, word, 1, c, value, -1, [&] { return ready(word, c, value, seen); });
    return seen;
  }
  template <class T>
  GRMA_INLINE wait_result wait_until(T* word, cmp c, T value, within limit) {
    T seen{};
    return wait(call::wait_until, word, 1, c, value, limit.left(),
                [&] { return ready(word, c, value, seen); });
  }
  template <class T>
  GRMA_INLINE bool test(T* word, cmp c, T value) {
    check<T>(call::test, word, 1, c);
    T seen{};
    return ready(word, c, value, seen);
  }

  // ---- all of an array ----
  template <class T>
  GRMA_INLINE void wait_until_all(T* words, std::size_t n, const int* status, cmp c, T value) {
    wait(call::wait_until_all, words, n, c, value, -1,
         [&] { return all_ready(words, n, status, c, value); });
  }
  template <class T>
  GRMA_INLINE wait_result wait_until_all(T* words, std::size_t n, const int* status, cmp c,
                                         T value, within limit) {
    return wait(call::wait_until_all, words, n, c, value, limit.left(),
                [&] { return all_ready(words, n, status, c, value); });
  }
  template <class T>
  GRMA_INLINE bool test_all(T* words, std::size_t n, const int* status, cmp c, T value) {
    check<T>(call::test_all, words, n, c);
    return all_ready(words, n, status, c, value);
  }

  // ---- any of an array: the index of a ready word (no_word when every word is excluded) ----
  template <class T>
  GRMA_INLINE std::size_t wait_until_any(T* words, std::size_t n, const int* status, cmp c, T value) {
    std::size_t found = no_word;
    if (included(n, status) == 0) return no_word;
    wait(call::wait_until_any, words, n, c, value, -1,
         [&] { return (found = any_ready(words, n, status, c, value)) != no_word; });
    return found;
  }
  template <class T>
  GRMA_INLINE wait_result wait_until_any(T* words, std::size_t n, const int* status, cmp c,
                                         T value, std::size_t& index, within limit) {
    index = no_word;
    if (included(n, status) == 0) return wait_result::met;
    return wait(call::wait_until_any, words, n, c, value, limit.left(),
                [&] { return (index = any_ready(words, n, status, c, value)) != no_word; });
  }
  template <class T>
  GRMA_INLINE std::size_t test_any(T* words, std::size_t n, const int* status, cmp c, T value) {
    check<T>(call::test_any, words, n, c);
    return any_ready(words, n, status, c, value);
  }

  // ---- some of an array: the indices of every ready word into `indices`
  // (room for n), their count returned; waits for at least one (none when
  // every word is excluded) ----
  template <class T>
  GRMA_INLINE std::size_t wait_until_some(T* words, std::size_t n, std::size_t* indices,
                                          const int* status, cmp c, T value) {
    check_values(call::wait_until_some, n, indices);
    std::size_t found = 0;
    if (included(n, status) == 0) return 0;
    wait(call::wait_until_some, words, n, c, value, -1,
         [&] { return (found = some_ready(words, n, indices, status, c, value)) != 0; });
    return found;
  }
  template <class T>
  GRMA_INLINE wait_result wait_until_some(T* words, std::size_t n, std::size_t* indices,
                                          const int* status, cmp c, T value, std::size_t& count,
                                          within limit) {
    check_values(call::wait_until_some, n, indices);
    count = 0;
    if (included(n, status) == 0) return wait_result::met;
    return wait(call::wait_until_some, words, n, c, value, limit.left(),
                [&] { return (count = some_ready(words, n, indices, status, c, value)) != 0; });
  }
  template <class T>
  GRMA_INLINE std::size_t test_some(T* words, std::size_t n, std::size_t* indices,
                                    const int* status, cmp c, T value) {
    check<T>(call::test_some, words, n, c);
    check_values(call::test_some, n, indices);
    return some_ready(words, n, indices, status, c, value);
  }

  // ---- the _vector forms: word i compared with values[i] ----
  template <class T>
  GRMA_INLINE void wait_until_all_vector(T* words, std::size_t n, const int* status, cmp c,
                                         const T* values) {
    check_values(call::wait_until_all_vector, n, values);
    wait(call::wait_until_all_vector, words, n, c, each<T>{values}, -1,
         [&] { return all_ready(words, n, status, c, each<T>{values}); });
  }
  template <class T>
  GRMA_INLINE wait_result wait_until_all_vector(T* words, std::size_t n, const int* status, cmp c,
                                                const T* values, within limit) {
    check_values(call::wait_until_all_vector, n, values);
    return wait(call::wait_until_all_vector, words, n, c, each<T>{values}, limit.left(),
                [&] { return all_ready(words, n, status, c, each<T>{values}); });
  }
  template <class T>
  GRMA_INLINE bool test_all_vector(T* words, std::size_t n, const int* status, cmp c,
                                   const T* values) {
    check<T>(call::test_all_vector, words, n, c);
    check_values(call::test_all_vector, n, values);
    return all_ready(words, n, status, c, each<T>{values});
  }
  template <class T>
  GRMA_INLINE std::size_t wait_until_any_vector(T* words, std::size_t n, const int* status, cmp c,
                                                const T* values) {
    check_values(call::wait_until_any_vector, n, values);
    std::size_t found = no_word;
    if (included(n, status) == 0) return no_word;
    wait(call::wait_until_any_vector, words, n, c, each<T>{values}, -1,
         [&] { return (found = any_ready(words, n, status, c, each<T>{values})) != no_word; });
    return found;
  }
  template <class T>
  GRMA_INLINE wait_result wait_until_any_vector(T* words, std::size_t n, const int* status, cmp c,
                                                const T* values, std::size_t& index, within limit) {
    check_values(call::wait_until_any_vector, n, values);
    index = no_word;
    if (included(n, status) == 0) return wait_result::met;
    return wait(call::wait_until_any_vector, words, n, c, each<T>{values}, limit.left(), [&] {
      return (index = any_ready(words, n, status, c, each<T>{values})) != no_word;
    });
  }
  template <class T>
  GRMA_INLINE std::size_t test_any_vector(T* words, std::size_t n, const int* status, cmp c,
                                          const T* values) {
    check<T>(call::test_any_vector, words, n, c);
    check_values(call::test_any_vector, n, values);
    return any_ready(words, n, status, c, each<T>{values});
  }
  template <class T>
  GRMA_INLINE std::size_t wait_until_some_vector(T* words, std::size_t n, std::size_t* indices,
                                                 const int* status, cmp c, const T* values) {
    check_values(call::wait_until_some_vector, n, values);
    check_values(call::wait_until_some_vector, n, indices);
    std::size_t found = 0;
    if (included(n, status) == 0) return 0;
    wait(call::wait_until_some_vector, words, n, c, each<T>{values}, -1,
         [&] { return (found = some_ready(words, n, indices, status, c, each<T>{values})) != 0; });
    return found;
  }
  template <class T>
  GRMA_INLINE wait_result wait_until_some_vector(T* words, std::size_t n, std::size_t* indices,
                                                 const int* status, cmp c, const T* values,
                                                 std::size_t& count, within limit) {
    check_values(call::wait_until_some_vector, n, values);
    check_values(call::wait_until_some_vector, n, indices);
    count = 0;
    if (included(n, status) == 0) return wait_result::met;
    return wait(call::wait_until_some_vector, words, n, c, each<T>{values}, limit.left(), [&] {
      return (count = some_ready(words, n, indices, status, c, each<T>{values})) != 0;
    });
  }
  template <class T>
  GRMA_INLINE std::size_t test_some_vector(T* words, std::size_t n, std::size_t* indices,
                                           const int* status, cmp c, const T* values) {
    check<T>(call::test_some_vector, words, n, c);
    check_values(call::test_some_vector, n, values);
    check_values(call::test_some_vector, n, indices);
    return some_ready(words, n, indices, status, c, each<T>{values});
  }

 private:
  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }

  template <class T>
  GRMA_INLINE void check_values(call where, std::size_t n, const T* values) {
    if (n != 0 && values == nullptr)
      self().fail(errc::null_buffer, where, std::int64_t(n * sizeof(T)));
  }

  template <class T>
  GRMA_INLINE void check(call where, const T* words, std::size_t n, cmp c) {
    static_assert(detail::is_atomic_word<T>, "waits take words of 4 or 8 bytes");
    Rank& r = self();
    if (n != 0 && words == nullptr) r.fail(errc::null_buffer, where, std::int64_t(n * sizeof(T)));
    if (reinterpret_cast<std::uintptr_t>(words) % sizeof(T) != 0)
      r.fail(errc::word_misaligned, where, std::int64_t(reinterpret_cast<std::uintptr_t>(words)),
             std::int64_t(sizeof(T)));
    if (std::uint32_t(c) > std::uint32_t(cmp::le)) r.fail(errc::invalid_enum, where, std::int64_t(c));
  }

  // Loads the word with acquire (other devices' ranks may write it).
  template <class T>
  GRMA_INLINE bool ready(T* word, cmp c, T value, T& seen) {
    seen = Rank::at_scope(self().wide(), [&](auto scope) { return detail::load_acquire<scope.value>(*word); });
    return compare(seen, c, value);
  }
  GRMA_INLINE static bool excluded(const int* status, std::size_t i) {
    return status != nullptr && status[i] != 0;
  }
  GRMA_INLINE static std::size_t included(std::size_t n, const int* status) {
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) k += excluded(status, i) ? 0 : 1;
    return k;
  }
  // What word i is compared with: one value for every word, or (the
  // _vector forms) a value each. A tag, not the pointer's type, tells them
  // apart: words may be pointers themselves.
  template <class T>
  struct each {
    const T* values;
  };
  template <class T>
  GRMA_INLINE static T value_at(T value, std::size_t) {
    return value;
  }
  template <class T>
  GRMA_INLINE static T value_at(each<T> v, std::size_t i) {
    return v.values[i];
  }
  // The value a blocked wait shows the watchdog: the one value, or where
  // the values are.
  template <class T>
  GRMA_INLINE static std::int64_t shown(T value) {
    return std::int64_t(value);
  }
  template <class T>
  GRMA_INLINE static std::int64_t shown(each<T> v) {
    return std::int64_t(reinterpret_cast<std::uintptr_t>(v.values));
  }

  template <class T, class V>
  GRMA_INLINE bool all_ready(T* words, std::size_t n, const int* status, cmp c, V values) {
    T seen{};
    for (std::size_t i = 0; i < n; ++i)
      if (!excluded(status, i) && !ready(words + i, c, value_at(values, i), seen)) return false;
    return true;
  }
  template <class T, class V>
  GRMA_INLINE std::size_t any_ready(T* words, std::size_t n, const int* status, cmp c, V values) {
    T seen{};
    for (std::size_t i = 0; i < n; ++i)
      if (!excluded(status, i) && ready(words + i, c, value_at(values, i), seen)) return i;
    return no_word;
  }
  template <class T, class V>
  GRMA_INLINE std::size_t some_ready(T* words, std::size_t n, std::size_t* indices,
                                     const int* status, cmp c, V values) {
    T seen{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!excluded(status, i) && ready(words + i, c, value_at(values, i), seen)) indices[k++] = i;
    return k;
  }

  // Polls `done` until it holds, or until `seconds` pass (seconds < 0: no
  // limit), as a waiting rank: published to the watchdog, left when the job
  // is aborted. The calling thread alone.
  template <class T, class V, class Done>
  GRMA_INLINE wait_result wait(call where, T* words, std::size_t n, cmp c, V values, double seconds,
                               Done&& done) {
    check<T>(where, words, n, c);
    Rank& r = self();
    if (done()) return wait_result::met;
    const double deadline = seconds < 0 ? -1 : r.wtime() + seconds;
    typename Rank::template waiter<> wait(r, where,
                                          {std::int64_t(reinterpret_cast<std::uintptr_t>(words)),
                                           std::int64_t(n), std::int64_t(c), shown(values)},
                                          true);
    for (;;) {
      wait();
      if (done()) return wait_result::met;
      if (deadline >= 0 && r.wtime() >= deadline) return wait_result::timed_out;
    }
  }
};

}  // namespace grma::core
