// The OpenSHMEM layer (grma/shmem.hpp), portable: every call of the layer
// on every path of the matrix, its data checked element for element, its
// signals and atomics counted exactly, its statuses checked (suite Shmem).
#include <cstddef>
#include <cstdint>
#include <grma/shmem.hpp>

#include "support.hpp"

namespace conformance {
namespace {

namespace shmem = grma::shmem;

class Shmem : public testing::TestWithParam<config> {};

// Element i of PE `pe`'s data in part `part`: differs between PEs, parts
// and neighbouring elements.
template <class T>
GRMA_HOST_DEVICE T element(int pe, std::size_t i, int part) {
  return T(mix(std::uint64_t(pe), std::uint64_t(i), std::uint64_t(part)));
}

// Fills source[0, count) with PE `pe`'s elements of `part`, by all threads.
template <class T, class Rank>
GRMA_HOST_DEVICE void fill_elements(Rank& r, T* source, std::size_t count, int pe, int part) {
  for (std::size_t i = std::size_t(r.thread()); i < count; i += std::size_t(r.threads()))
    source[i] = element<T>(pe, i, part);
  r.sync_threads();
}

// Checks data[k * stride] == PE `pe`'s element k * from_stride of `part`,
// k < count, by all threads.
template <class T, class Rank>
GRMA_HOST_DEVICE void check_elements(Rank& r, rank_record& rec, int line, const T* data,
                                     std::size_t count, int pe, int part, std::size_t stride = 1,
                                     std::size_t from_stride = 1) {
  for (std::size_t k = std::size_t(r.thread()); k < count; k += std::size_t(r.threads()))
    if (data[k * stride] != element<T>(pe, k * from_stride, part)) {
      record_failure(rec, line, part, (long long)k, (long long)data[k * stride]);
      break;
    }
  r.sync_threads();
}
#define SHMEM_CHECK(r, rec, data, count, pe, part, ...) \
  check_elements((r), (rec), __LINE__, (data), (count), (pe), (part), ##__VA_ARGS__)

// ---- RMA ----------------------------------------------------------------------------------

// Typed put and get (blocking, nbi, on a context), putmem and getmem at odd
// sizes, p and g, iput and iget with strides, and a put by one warp while
// the other threads work: all to the next PE of the ring or from it.
struct shmem_rma {
  static constexpr std::size_t count = 301;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    shmem::handle sh(r);
    const int me = sh.my_pe(), n = sh.n_pes();
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    auto* inbox = static_cast<long long*>(sh.calloc(count, sizeof(long long)));
    auto* outbox = static_cast<long long*>(sh.malloc(count * sizeof(long long)));
    auto* doubles = static_cast<double*>(sh.malloc(count * sizeof(double)));
    auto* bytes = static_cast<unsigned char*>(sh.malloc(count + 64));
    auto* words = static_cast<int*>(sh.calloc(4, sizeof(int)));
    // Local buffers from the symmetric heap too: with thousands of ranks a
    // device's rank heap is small, and its allocations slow.
    auto* local = static_cast<long long*>(
        sh.malloc(count * sizeof(long long) + 8 * std::size_t(r.threads())));

    // put, then get of what the next PE put to its own next.
    fill_elements(r, outbox, count, me, 1);
    sh.put(inbox, outbox, count, next);
    sh.barrier_all();
    SHMEM_CHECK(r, rec, inbox, count, previous, 1);
    sh.get(local, inbox, count, next);
    SHMEM_CHECK(r, rec, local, count, me, 1);
    sh.barrier_all();

    // The nbi forms on a context of the PE's own, completed by its quiet.
    shmem::ctx_t ctx;
    CONF_EXPECT(r, rec, sh.ctx_create(shmem::ctx_private, &ctx) == 0, 0, 0, 0);
    auto* mine = reinterpret_cast<double*>(local);
    fill_elements(r, mine, count, me, 2);
    sh.ctx_put_nbi(ctx, doubles, mine, count, next);
    sh.ctx_quiet(ctx);
    sh.barrier_all();
    SHMEM_CHECK(r, rec, doubles, count, previous, 2);
    sh.ctx_get_nbi(ctx, mine, doubles, count, next);
    sh.ctx_quiet(ctx);
    r.sync_threads();
    SHMEM_CHECK(r, rec, mine, count, me, 2);
    sh.ctx_destroy(ctx);
    sh.barrier_all();

    // putmem and getmem at sizes that end inside a word, at odd offsets.
    for (int part = 0; part < 3; ++part) {
      const std::size_t size = part == 0   ? 1
                               : part == 1 ? 13
                                           : count,
                        at = std::size_t(part) * 7 % 16;
      auto* from = reinterpret_cast<unsigned char*>(local);
      fill(r, from + 3, size, mix(std::uint64_t(me), std::uint64_t(part)));
      if (part == 1)
        sh.putmem_nbi(bytes + at, from + 3, size, next);
      else
        sh.putmem(bytes + at, from + 3, size, next);
      sh.barrier_all();
      CONF_CHECK_PATTERN(r, rec, bytes + at, size,
                         mix(std::uint64_t(previous), std::uint64_t(part)), 0, part);
      if (part == 1) {
        sh.getmem_nbi(from + 5, bytes + at, size, next);
        sh.quiet();
        r.sync_threads();
      } else {
        sh.getmem(from + 5, bytes + at, size, next);
      }
      CONF_CHECK_PATTERN(r, rec, from + 5, size, mix(std::uint64_t(me), std::uint64_t(part)), 0,
                         10 + part);
      sh.barrier_all();
    }

    // p and g by one thread; the value parameter takes the pointer's type.
    if (r.thread() == 0) sh.p(words, me + 1, next);
    sh.barrier_all();
    CONF_EXPECT(r, rec, words[0] == previous + 1, words[0], previous + 1, 0);
    if (r.thread() == 0) {
      const int got = sh.g(words, next);
      if (got != me + 1) record_failure(rec, __LINE__, got, me + 1, 0);
    }
    sh.barrier_all();

    // iput: element 2i of my outbox to element 3i of the next PE's inbox;
    // iget: element 3i of the next PE's inbox (mine, put there) to element i.
    const std::size_t strided = count / 3;
    sh.iput(inbox, outbox, 3, 2, strided, next);
    sh.barrier_all();
    SHMEM_CHECK(r, rec, inbox, strided, previous, 1, 3, 2);
    sh.iget(local, inbox, 1, 3, strided, next);
    SHMEM_CHECK(r, rec, local, strided, me, 1, 1, 2);
    sh.barrier_all();

    // One warp puts while the other threads write words of their own.
    {
      auto warp = sh.one_warp();
      const warp_split split(r, warp.rank());
      fill_elements(r, outbox, count, me, 3);
      if (split.calls) warp.put(inbox, outbox, count, next);
      auto* work = reinterpret_cast<std::uint64_t*>(local + count);
      split.work(r, work, 3);
      r.sync_threads();
      split.check_work(r, rec, work, 3);
      sh.barrier_all();
      if (split.has_warp) SHMEM_CHECK(r, rec, inbox, count, previous, 3);
    }
    tally(r, rec, 0);
    sh.barrier_all();
    sh.free(local);
    sh.free(words);
    sh.free(bytes);
    sh.free(doubles);
    sh.free(outbox);
    sh.free(inbox);
  }
};

TEST_P(Shmem, PutsAndGetsMoveEveryElement) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(shmem_rma{});
  j.prepare();
  if (j.run(shmem_rma{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- signals ------------------------------------------------------------------------------

// Rounds of put_signal (set) to the next PE, each round's data in its own
// part of the inbox at its own size, blocking and nbi alternately; then a
// put_signal_nbi (add) from each neighbour into slots of its own, on a
// context: the signal counts both arrivals exactly, and signal_fetch reads it.
struct shmem_signals {
  static constexpr int rounds = 4;
  GRMA_HOST_DEVICE static std::size_t size_of(int round) {
    const std::size_t sizes[rounds] = {1, 7, 130, 2049};
    return sizes[round];
  }
  GRMA_HOST_DEVICE static std::size_t place_of(int round) {
    std::size_t at = 0;
    for (int k = 0; k < round; ++k) at += size_of(k);
    return at;
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    shmem::handle sh(r);
    const int me = sh.my_pe(), n = sh.n_pes();
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    const std::size_t total = place_of(rounds);
    auto* inbox =
        static_cast<long long*>(sh.calloc(total + 2 * size_of(rounds - 1), sizeof(long long)));
    auto* signals = static_cast<std::uint64_t*>(sh.calloc(2, sizeof(std::uint64_t)));
    auto* outbox = static_cast<long long*>(sh.malloc(size_of(rounds - 1) * sizeof(long long)));
    for (int round = 0; round < rounds; ++round) {
      const std::size_t size = size_of(round), at = place_of(round);
      fill_elements(r, outbox, size, me, round);
      if (round % 2 == 0) {
        sh.put_signal(inbox + at, outbox, size, signals, std::uint64_t(round + 1),
                      shmem::signal_set, next);
      } else {
        sh.put_signal_nbi(inbox + at, outbox, size, signals, std::uint64_t(round + 1),
                          shmem::signal_set, next);
        sh.quiet();  // the outbox is refilled next round
      }
      // The previous PE may be rounds ahead: its signal only grows.
      const std::uint64_t seen =
          sh.signal_wait_until(signals, shmem::cmp_ge, std::uint64_t(round + 1));
      CONF_EXPECT(r, rec, seen >= std::uint64_t(round + 1) && seen <= std::uint64_t(rounds), seen,
                  round, 0);
      SHMEM_CHECK(r, rec, inbox + at, size, previous, round);
    }
    sh.barrier_all();
    CONF_EXPECT(r, rec, sh.signal_fetch(signals) == std::uint64_t(rounds), sh.signal_fetch(signals),
                rounds, 0);

    // Fan-in with SIGNAL_ADD: the left neighbour's data in the first slot,
    // the right one's in the second.
    shmem::ctx_t ctx;
    CONF_EXPECT(r, rec, sh.ctx_create(0, &ctx) == 0, 0, 0, 0);
    const std::size_t size = size_of(rounds - 1);
    fill_elements(r, outbox, size, me, 7);
    sh.ctx_put_signal_nbi(ctx, inbox + total, outbox, size, signals + 1, 1, shmem::signal_add,
                          next);
    sh.ctx_putmem_signal_nbi(ctx, inbox + total + size, outbox, size * sizeof(long long),
                             signals + 1, 1, shmem::signal_add, previous);
    sh.ctx_quiet(ctx);
    sh.signal_wait_until(signals + 1, shmem::cmp_eq, 2);
    SHMEM_CHECK(r, rec, inbox + total, size, previous, 7);
    SHMEM_CHECK(r, rec, inbox + total + size, size, next, 7);
    sh.ctx_destroy(ctx);
    sh.barrier_all();
    const std::uint64_t arrivals = sh.signal_fetch(signals + 1);
    CONF_EXPECT(r, rec, arrivals == 2, arrivals, 0, 0);
    tally(r, rec, 0, arrivals);
    sh.barrier_all();
    sh.free(outbox);
    sh.free(signals);
    sh.free(inbox);
  }
};

TEST_P(Shmem, PutSignalDeliversTheDataWithEachSignal) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(shmem_signals{});
  j.prepare();
  if (j.run(shmem_signals{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 2u; }, "signal additions");
  }
}

// ---- atomics ------------------------------------------------------------------------------

// Every atomic of the layer, by thread 0 of each PE, with results that count
// each operation exactly once: fetch_inc on the next PE (old values 0, 1,
// ...), fetch_add and one compare_swap winner on PE 0, swap, and/or/xor on
// PE 0, a 4-byte fetch_add_nbi, set and fetch of a double.
struct shmem_atomics {
  static constexpr int incs = 5;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    shmem::handle sh(r);
    const int me = sh.my_pe(), n = sh.n_pes();
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    auto* words = static_cast<unsigned long long*>(sh.calloc(8, sizeof(unsigned long long)));
    auto* small = static_cast<int*>(sh.calloc(2, sizeof(int)));
    auto* real = static_cast<double*>(sh.calloc(1, sizeof(double)));
    words[7] = ~0ull;  // cleared bit by bit with and
    sh.barrier_all();
    const unsigned long long bit = 1ull << (me % 64);
    if (r.thread() == 0) {
      for (int k = 0; k < incs; ++k) {
        const unsigned long long old = sh.atomic_fetch_inc(words, next);
        if (old != (unsigned long long)k) record_failure(rec, __LINE__, k, (long long)old, 0);
      }
      sh.atomic_inc(words, next);
      sh.atomic_fetch_add(words + 1, (unsigned long long)me + 1, 0);
      sh.atomic_add(words + 1, 1, 0);
      const unsigned long long won =
          sh.atomic_compare_swap(words + 2, 0, (unsigned long long)me + 1, 0);
      if (won == 0) sh.atomic_inc(words + 3, 0);
      const unsigned long long swapped =
          sh.atomic_swap(words + 4, (unsigned long long)me + 1, next);
      if (swapped != 0) record_failure(rec, __LINE__, (long long)swapped, 0, 0);
      sh.atomic_or(words + 5, bit, 0);
      sh.atomic_fetch_xor(words + 6, (unsigned long long)mix(std::uint64_t(me)), 0);
      sh.atomic_fetch_and(words + 7, ~bit, 0);
      int fetched = -1;
      sh.atomic_fetch_add_nbi(&fetched, small, 3, next);
      sh.quiet();
      if (fetched != 0) record_failure(rec, __LINE__, fetched, 0, 0);
      sh.atomic_set(real, 1.5 * me, next);
    }
    sh.barrier_all();
    CONF_EXPECT(r, rec, words[0] == incs + 1, (long long)words[0], incs + 1, 0);
    CONF_EXPECT(r, rec, words[4] == (unsigned long long)previous + 1, (long long)words[4], previous,
                0);
    CONF_EXPECT(r, rec, small[0] == 3, small[0], 0, 0);
    CONF_EXPECT(r, rec, sh.atomic_fetch(real, me) == 1.5 * previous, previous, 0, 0);
    if (me == 0) {
      const unsigned long long expected_sum =
          (unsigned long long)n * (n + 1) / 2 + (unsigned long long)n;
      CONF_EXPECT(r, rec, words[1] == expected_sum, (long long)words[1], (long long)expected_sum,
                  0);
      CONF_EXPECT(r, rec, words[2] >= 1 && words[2] <= (unsigned long long)n, (long long)words[2],
                  n, 0);
      CONF_EXPECT(r, rec, words[3] == 1, (long long)words[3], 0, 0);
      unsigned long long bits = 0, mixed = 0;
      for (int k = 0; k < n; ++k) {
        bits |= 1ull << (k % 64);
        mixed ^= (unsigned long long)mix(std::uint64_t(k));
      }
      CONF_EXPECT(r, rec, words[5] == bits, (long long)words[5], (long long)bits, 5);
      CONF_EXPECT(r, rec, words[6] == mixed, (long long)words[6], (long long)mixed, 6);
      CONF_EXPECT(r, rec, words[7] == ~bits, (long long)words[7], (long long)~bits, 7);
    }
    tally(r, rec, 0);
    sh.barrier_all();
    sh.free(real);
    sh.free(small);
    sh.free(words);
  }
};

TEST_P(Shmem, AtomicsCountEveryOperationOnce) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(shmem_atomics{});
  j.prepare();
  if (j.run(shmem_atomics{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- waits and tests ----------------------------------------------------------------------

// Thread 0 stores a value of its own into each of the next PE's words with
// p, the last word last after a fence; the next PE waits for them with
// each form: one word, all (a value each), any and some, with statuses that
// exclude words, and the tests.
struct shmem_waits {
  static constexpr int words_count = 12;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    shmem::handle sh(r);
    const int me = sh.my_pe(), n = sh.n_pes();
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    auto* words = static_cast<std::uint64_t*>(sh.calloc(words_count, sizeof(std::uint64_t)));
    auto* pointers = static_cast<const std::uint64_t**>(sh.calloc(2, sizeof(std::uint64_t*)));
    if (r.thread() == 0) {
      std::uint64_t expected[words_count];
      int status[words_count];
      std::size_t indices[words_count];
      for (int i = 0; i < words_count; ++i) {
        expected[i] = mix(std::uint64_t(previous), std::uint64_t(i)) | 1;
        status[i] = i < words_count / 2 ? 1 : 0;  // the first half excluded
      }
      for (int i = 0; i < words_count - 1; ++i)
        sh.p(words + i, mix(std::uint64_t(me), std::uint64_t(i)) | 1, next);
      sh.fence();
      sh.p(words + words_count - 1, mix(std::uint64_t(me), std::uint64_t(words_count - 1)) | 1,
           next);
      sh.wait_until(words + words_count - 1, shmem::cmp_eq, expected[words_count - 1]);
      // The fence put every earlier word before the last: they are all here.
      if (sh.test_all_vector(words, words_count, nullptr, shmem::cmp_eq, expected) != 1)
        record_failure(rec, __LINE__, 8, 0, 0);
      if (sh.test(words + words_count - 1, shmem::cmp_eq, expected[words_count - 1]) != 1)
        record_failure(rec, __LINE__, 0, 0, 0);
      // After the fence every earlier word is there too.
      sh.wait_until_all_vector(words, words_count, nullptr, shmem::cmp_eq, expected);
      if (sh.test_all_vector(words, words_count, status, shmem::cmp_eq, expected) != 1)
        record_failure(rec, __LINE__, 1, 0, 0);
      const std::size_t any =
          sh.wait_until_any_vector(words, words_count, status, shmem::cmp_eq, expected);
      if (any < std::size_t(words_count / 2) || any >= std::size_t(words_count))
        record_failure(rec, __LINE__, 2, (long long)any, 0);
      const std::size_t some =
          sh.wait_until_some_vector(words, words_count, indices, status, shmem::cmp_eq, expected);
      if (some != std::size_t(words_count / 2) || indices[0] != std::size_t(words_count / 2))
        record_failure(rec, __LINE__, 3, (long long)some, (long long)indices[0]);
      // The scalar forms against one value: every word is odd, so not 0.
      sh.wait_until_all(words, words_count, nullptr, shmem::cmp_ne, std::uint64_t(0));
      if (sh.wait_until_any(words, words_count, status, shmem::cmp_ne, std::uint64_t(0)) !=
          std::size_t(words_count / 2))
        record_failure(rec, __LINE__, 4, 0, 0);
      if (sh.wait_until_some(words, words_count, indices, nullptr, shmem::cmp_gt,
                             std::uint64_t(0)) != std::size_t(words_count))
        record_failure(rec, __LINE__, 5, 0, 0);
      if (sh.test_some(words, words_count, indices, status, shmem::cmp_eq, std::uint64_t(0)) != 0 ||
          sh.test_any(words, words_count, status, shmem::cmp_eq, std::uint64_t(0)) !=
              shmem::none_ready ||
          sh.test_all(words, words_count, status, shmem::cmp_ne, std::uint64_t(0)) != 1 ||
          sh.test_some_vector(words, words_count, indices, nullptr, shmem::cmp_eq, expected) !=
              std::size_t(words_count))
        record_failure(rec, __LINE__, 6, 0, 0);
      // Every word excluded: any returns none_ready, some 0, at once.
      int all_excluded[words_count];
      for (int i = 0; i < words_count; ++i) all_excluded[i] = 1;
      if (sh.wait_until_any(words, words_count, all_excluded, shmem::cmp_eq, std::uint64_t(0)) !=
              shmem::none_ready ||
          sh.wait_until_some(words, words_count, indices, all_excluded, shmem::cmp_eq,
                             std::uint64_t(0)) != 0)
        record_failure(rec, __LINE__, 7, 0, 0);
      // Words that are pointers: null until set, then this PE's own words.
      if (sh.test_any(pointers, 2, nullptr, shmem::cmp_ne,
                      static_cast<const std::uint64_t*>(nullptr)) != shmem::none_ready)
        record_failure(rec, __LINE__, 9, 0, 0);
      sh.p(pointers + 1, static_cast<const std::uint64_t*>(words), me);
      sh.wait_until_all(pointers + 1, 1, nullptr, shmem::cmp_eq,
                        static_cast<const std::uint64_t*>(words));
      tally(r, rec, 0);
    }
    sh.barrier_all();
    sh.free(pointers);
    sh.free(words);
  }
};

TEST_P(Shmem, WaitsAndTestsSeeEveryWord) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(shmem_waits{});
  j.prepare();
  if (j.run(shmem_waits{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- contexts -----------------------------------------------------------------------------

// ctx_create gives 16 contexts, then returns nonzero and ctx_invalid; after
// ctx_destroy of one a new one is made again. Puts on each context complete
// with its quiet.
struct shmem_contexts {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    shmem::handle sh(r);
    const int me = sh.my_pe(), n = sh.n_pes();
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    constexpr int most = 16;
    auto* inbox = static_cast<int*>(sh.calloc(most, sizeof(int)));
    shmem::ctx_t ctx[most + 1];
    int made = 0;
    for (int k = 0; k <= most; ++k)
      made += sh.ctx_create(shmem::ctx_serialized, &ctx[k]) == 0 ? 1 : 0;
    CONF_EXPECT(r, rec, made == most, made, most, 0);
    CONF_EXPECT(r, rec, ctx[most] == shmem::ctx_invalid, ctx[most].slot, 0, 0);
    for (int k = 0; k < most; ++k)
      if (r.thread() == 0) sh.ctx_p(ctx[k], inbox + k, me * most + k, next);
    for (int k = 0; k < most; ++k) sh.ctx_quiet(ctx[k]);
    sh.sync_all();
    for (int k = 0; k < most; ++k)
      CONF_EXPECT(r, rec, inbox[k] == previous * most + k, inbox[k], k, 0);
    sh.ctx_destroy(ctx[3]);
    CONF_EXPECT(r, rec, sh.ctx_create(0, &ctx[3]) == 0, 0, 0, 0);
    for (int k = 0; k < most; ++k) sh.ctx_destroy(ctx[k]);
    tally(r, rec, 0, std::uint64_t(made));
    sh.barrier_all();
    sh.free(inbox);
  }
};

TEST_P(Shmem, ContextsAreMadeUntilThePeHasAll) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(shmem_contexts{});
  j.prepare();
  if (j.run(shmem_contexts{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 16u; }, "contexts made");
  }
}

// ---- collectives --------------------------------------------------------------------------

// Reductions of one type over team t: each PE's elements are small values
// of its own, so the sum, product, min and max are known exactly (a
// product of +1 and -1; 1- and 2-byte sums wrap as the type does).
// `scratch`: symmetric, reduction_scratch bytes.
constexpr std::size_t reduction_count = 5;
constexpr std::size_t reduction_scratch = 2 * reduction_count * 8;

template <class T, class Rank>
GRMA_HOST_DEVICE void check_reductions(Rank& r, rank_record& rec, shmem::handle<Rank>& sh,
                                       shmem::team_t t, void* scratch, int part) {
  constexpr std::size_t count = reduction_count;
  const int me = sh.team_my_pe(t), n = sh.team_n_pes(t);
  auto* source = static_cast<T*>(scratch);
  T* dest = source + count;
  auto value = [](int pe_in_team, std::size_t i) { return T((pe_in_team * 7 + int(i)) % 5); };
  for (int op = 0; op < 4; ++op) {
    for (std::size_t i = std::size_t(r.thread()); i < count; i += std::size_t(r.threads()))
      source[i] = op == 1 ? T((me + int(i)) % 2 == 0 ? 1 : -1) : value(me, i);
    r.sync_threads();
    if (op == 0) sh.sum_reduce(t, dest, source, count);
    if (op == 1) sh.prod_reduce(t, dest, source, count);
    if (op == 2) sh.min_reduce(t, dest, source, count);
    if (op == 3) sh.max_reduce(t, dest, source, count);
    for (std::size_t i = std::size_t(r.thread()); i < count; i += std::size_t(r.threads())) {
      T expected = op == 0 ? T(0) : op == 1 ? T(1) : value(0, i);
      for (int k = op == 2 || op == 3 ? 1 : 0; k < n; ++k) {
        const T v = op == 1 ? T((k + int(i)) % 2 == 0 ? 1 : -1) : value(k, i);
        expected = op == 0   ? T(expected + v)
                   : op == 1 ? T(expected * v)
                   : op == 2 ? (v < expected ? v : expected)
                             : (expected < v ? v : expected);
      }
      if (dest[i] != expected)
        record_failure(rec, __LINE__, part * 10 + op, (long long)i, (long long)dest[i]);
    }
    sh.sync(t);  // every member has read dest before the next reduction writes it
  }
}

// and, or and xor over team t on unsigned words: PE k contributes bit k % 64.
template <class Rank>
GRMA_HOST_DEVICE void check_bitwise(Rank& r, rank_record& rec, shmem::handle<Rank>& sh,
                                    shmem::team_t t, void* scratch) {
  const int me = sh.team_my_pe(t), n = sh.team_n_pes(t);
  auto* words = static_cast<unsigned long long*>(scratch);
  if (r.thread() == 0) words[0] = 1ull << (me % 64);
  r.sync_threads();
  sh.or_reduce(t, words + 1, words, 1);
  sh.xor_reduce(t, words + 2, words, 1);
  if (r.thread() == 0) words[0] = ~words[0];
  r.sync_threads();
  sh.and_reduce(t, words + 3, words, 1);
  unsigned long long bits = 0, flips = 0;
  for (int k = 0; k < n; ++k) {
    bits |= 1ull << (k % 64);
    flips ^= 1ull << (k % 64);
  }
  CONF_EXPECT(r, rec, words[1] == bits, (long long)words[1], (long long)bits, 1);
  CONF_EXPECT(r, rec, words[2] == flips, (long long)words[2], (long long)flips, 2);
  CONF_EXPECT(r, rec, words[3] == ~bits, (long long)words[3], (long long)~bits, 3);
  sh.sync(t);
}

// broadcast, fcollect, collect (PE i gives i % 4 elements), alltoall and
// alltoalls (strides 2 and 3) over team_world, the reductions of every
// element type over team_world, the even PEs' team and a 2D split's rows.
struct shmem_collectives {
  static constexpr std::size_t k = 3;  // elements per PE

  // A PE's symmetric bytes in a world of n PEs: source and dest hold 5 k
  // elements of every PE, beside the scratch, the teams' workspaces and the
  // allocator's headers.
  static std::size_t symmetric_bytes(int n) {
    return 5 * std::size_t(n) * k * sizeof(long long) + (std::size_t(64) << 10);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    shmem::handle sh(r);
    const int me = sh.my_pe(), n = sh.n_pes();
    const std::size_t all = std::size_t(n) * k;
    auto* source = static_cast<long long*>(sh.malloc(3 * all * sizeof(long long)));
    auto* dest = static_cast<long long*>(sh.malloc(2 * all * sizeof(long long)));

    fill_elements(r, source, k, me, 1);
    sh.broadcast(shmem::team_world, dest, source, k, n - 1);
    SHMEM_CHECK(r, rec, dest, k, n - 1, 1);
    sh.fcollect(shmem::team_world, dest, source, k);
    for (int i = 0; i < n; ++i) SHMEM_CHECK(r, rec, dest + std::size_t(i) * k, k, i, 1);
    sh.sync_all();

    // collect, twice (each member's words are written again): i % 4
    // elements from PE i (none from every fourth), then (i + 1) % 3.
    for (int round = 0; round < 2; ++round) {
      auto part_of = [&](int i) { return std::size_t(round == 0 ? i % 4 : (i + 1) % 3); };
      fill_elements(r, source, 3, me, 2 + 10 * round);
      sh.collect(shmem::team_world, dest, source, part_of(me));
      std::size_t at = 0;
      for (int i = 0; i < n; ++i) {
        SHMEM_CHECK(r, rec, dest + at, part_of(i), i, 2 + 10 * round);
        at += part_of(i);
      }
      sh.sync_all();
    }

    // alltoall: block j of my source is element (me, j); block i of dest
    // comes from PE i. Elements are numbered by block * k + element.
    fill_elements(r, source, all, me, 3);
    sh.alltoall(shmem::team_world, dest, source, k);
    for (int i = 0; i < n; ++i)
      for (std::size_t e = std::size_t(r.thread()); e < k; e += std::size_t(r.threads()))
        if (dest[std::size_t(i) * k + e] != element<long long>(i, std::size_t(me) * k + e, 3))
          record_failure(rec, __LINE__, i, (long long)e, 0);
    r.sync_threads();
    sh.sync_all();
    // alltoalls: source elements 3 apart, dest elements 2 apart; the
    // elements between those of dest keep what they held.
    fill_elements(r, source, 3 * all, me, 4);
    fill_elements(r, dest, 2 * all, me, 5);
    sh.alltoalls(shmem::team_world, dest, source, 2, 3, k);
    for (int i = 0; i < n; ++i)
      for (std::size_t e = std::size_t(r.thread()); e < k; e += std::size_t(r.threads())) {
        const std::size_t at = 2 * (std::size_t(i) * k + e);
        if (dest[at] != element<long long>(i, 3 * (std::size_t(me) * k + e), 4))
          record_failure(rec, __LINE__, i, (long long)e, 1);
        if (dest[at + 1] != element<long long>(me, at + 1, 5))
          record_failure(rec, __LINE__, i, (long long)e, 2);
      }
    r.sync_threads();
    sh.sync_all();
    sh.free(dest);
    sh.free(source);

    void* scratch = sh.malloc(reduction_scratch);
    check_reductions<signed char>(r, rec, sh, shmem::team_world, scratch, 1);
    check_reductions<short>(r, rec, sh, shmem::team_world, scratch, 2);
    check_reductions<int>(r, rec, sh, shmem::team_world, scratch, 3);
    check_reductions<long long>(r, rec, sh, shmem::team_world, scratch, 4);
    check_reductions<float>(r, rec, sh, shmem::team_world, scratch, 5);
    check_reductions<double>(r, rec, sh, shmem::team_world, scratch, 6);
    check_bitwise(r, rec, sh, shmem::team_world, scratch);

    // The even PEs' team: queries, translation, reductions over it.
    shmem::team_t evens;
    sh.team_split_strided(shmem::team_world, 0, 2, (n + 1) / 2, nullptr, 0, &evens);
    if (me % 2 == 0) {
      CONF_EXPECT(r, rec, sh.team_my_pe(evens) == me / 2, sh.team_my_pe(evens), me, 0);
      CONF_EXPECT(r, rec, sh.team_n_pes(evens) == (n + 1) / 2, sh.team_n_pes(evens), n, 0);
      CONF_EXPECT(r, rec, sh.team_translate_pe(evens, me / 2, shmem::team_world) == me, me, 0, 0);
      check_reductions<int>(r, rec, sh, evens, scratch, 7);
    } else {
      CONF_EXPECT(r, rec, evens == shmem::team_invalid, me, 0, 0);
      CONF_EXPECT(r, rec, sh.team_my_pe(evens) == -1, sh.team_my_pe(evens), 0, 0);
    }
    CONF_EXPECT(r, rec, sh.team_translate_pe(shmem::team_world, 1, evens) == -1, 0, 0, 0);  // odd
    // A predefined team as a conditional's result (a reference to the constant).
    CONF_EXPECT(
        r, rec,
        sh.team_n_pes(me % 2 == 0 ? evens : shmem::team_world) == (me % 2 == 0 ? (n + 1) / 2 : n),
        sh.team_n_pes(me % 2 == 0 ? shmem::team_world : shmem::team_invalid), n, 0);
    sh.team_destroy(evens);
    // Rows of two PEs: my row's sum of world PE numbers.
    shmem::team_t row, column;
    sh.team_split_2d(shmem::team_world, 2, nullptr, 0, &row, nullptr, 0, &column);
    auto* words = static_cast<int*>(sh.malloc(2 * sizeof(int)));
    if (r.thread() == 0) words[0] = me;
    r.sync_threads();
    sh.sum_reduce(row, words + 1, words, 1);
    const int first = me - me % 2, expected = first + (first + 1 < n ? first + 1 : 0);
    CONF_EXPECT(r, rec, words[1] == expected, words[1], expected, 0);
    sh.sync(row);
    sh.free(words);
    sh.free(scratch);
    sh.team_destroy(column);
    sh.team_destroy(row);
    tally(r, rec, 0);
    sh.barrier_all();
  }
};

TEST_P(Shmem, CollectivesOverTeamsGiveEveryElement) {
  // The buffers grow with the world: at the most ranks on two GPUs a PE
  // needs more than the suite's symmetric heap gives each.
  grma::settings s = suite_settings();
  {
    grma::runtime probe(s);
    job sizing(probe, GetParam());
    const std::size_t need =
        shmem_collectives::symmetric_bytes(sizing.resolve(shmem_collectives{}));
    if (sizing.symmetric_slice() < need)
      s.symmetric_size =
          std::uint64_t((need + 4095) / 4096 * 4096) * std::uint64_t(sizing.ranks_per_device());
  }
  grma::runtime rt(s);
  job j(rt, GetParam());
  j.resolve(shmem_collectives{});
  j.prepare();
  if (j.run(shmem_collectives{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, Shmem, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
