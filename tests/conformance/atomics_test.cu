// The core's atomics, portable: under contention from every thread of
// several ranks, sums and tickets are exact and bitwise operations keep
// every bit; compare_swap makes a lock that guards a counter kept with g and
// p; swap hands every value on exactly once; every operation of both widths
// returns what it must on a far rank (across nodes: through the engine).
#include <cstddef>
#include <cstdint>
#include <string>

#include "support.hpp"

namespace conformance {
namespace {

class Atomics : public testing::TestWithParam<config> {};

constexpr int contenders = 4;  // ranks that aim at each rank (fewer on a small node)
constexpr int increments = 3;  // per thread and target

// The words of one rank, at the same offset on every rank.
struct counters {
  unsigned long long inc;  // atomic_inc and fetch_inc
  unsigned add32;          // atomic_add of 3 (32 bits)
  unsigned pad;
  long long signed_sum;   // fetch_add of -1 and +2 (signed)
  unsigned long long bits_or;
  unsigned long long bits_and;
  unsigned long long bits_xor;
  unsigned long long tickets;
};

// Every thread of each rank updates the counters of its `contenders` next
// ranks; each rank then checks its own. Tickets from fetch_inc are marked
// in the target's bitmap with fetch_or: a ticket handed out twice finds its
// bit set.
struct contended_sums {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* mine = static_cast<counters*>(r.calloc_symmetric(1, sizeof(counters)));
    const std::size_t ticket_count = std::size_t(contenders) * std::size_t(r.threads()) * increments;
    auto* bitmap = static_cast<unsigned long long*>(r.calloc_symmetric((ticket_count + 63) / 64, 8));
    if (r.thread() == 0) mine->bits_and = ~0ull;
    r.barrier(grma::world);
    const int k = min_of(contenders, r.size(grma::world));
    for (int step = 0; step < k; ++step) {
      const int t = rank_after(r, me, step);
      for (int i = 0; i < increments; ++i) {
        r.atomic_inc(&mine->inc, t);
        const unsigned long long ticket = r.atomic_fetch_inc(&mine->tickets, t);
        if (ticket >= ticket_count) {
          record_failure(rec, __LINE__, t, (long long)ticket, 0);
        } else {
          const unsigned long long bit = 1ull << (ticket % 64);
          const unsigned long long old = r.atomic_fetch_or(bitmap + ticket / 64, bit, t);
          if ((old & bit) != 0) record_failure(rec, __LINE__, t, (long long)ticket, 1);
        }
        r.atomic_add(&mine->add32, 3u, t);
        r.atomic_fetch_add(&mine->signed_sum, -1ll, t);
        r.atomic_add(&mine->signed_sum, 2ll, t);
      }
      if (r.thread() == 0) {
        const unsigned long long bit = 1ull << (me % 64);
        r.atomic_or(&mine->bits_or, bit, t);
        r.atomic_fetch_and(&mine->bits_and, ~bit, t);
        r.atomic_xor(&mine->bits_xor, 0x5555ull + unsigned(me), t);
        r.atomic_fetch_xor(&mine->bits_xor, 0x5555ull + unsigned(me), t);
      }
    }
    r.quiet();
    r.barrier(grma::world);
    const unsigned long long each = unsigned(r.threads()) * increments * unsigned(k);
    CONF_EXPECT(r, rec, mine->inc == each, 1, mine->inc, each);
    CONF_EXPECT(r, rec, mine->tickets == each, 2, mine->tickets, each);
    CONF_EXPECT(r, rec, mine->add32 == 3 * each, 3, mine->add32, each);
    CONF_EXPECT(r, rec, mine->signed_sum == (long long)each, 4, mine->signed_sum, each);
    unsigned long long want = 0;
    for (int step = 0; step < k; ++step) want |= 1ull << (rank_after(r, me, -step) % 64);
    CONF_EXPECT(r, rec, mine->bits_or == want, 5, mine->bits_or, want);
    CONF_EXPECT(r, rec, mine->bits_and == ~mine->bits_or, 6, mine->bits_and, mine->bits_or);
    CONF_EXPECT(r, rec, mine->bits_xor == 0, 7, mine->bits_xor, 0);
    tally(r, rec, 0, mine->inc);
    r.barrier(grma::world);
    r.free_symmetric(bitmap);
    r.free_symmetric(mine);
  }
};

TEST_P(Atomics, SumsAreExactUnderContention) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(contended_sums{});
  j.prepare();
  if (j.run(contended_sums{})) j.expect_no_failures(__FILE__);
}

// ---- a lock from compare_swap --------------------------------------------------------

struct lock_words {
  unsigned long long lock;  // 0 free, else the holder's rank + 1
  unsigned long long counter;
  unsigned long long swapped;
  unsigned long long returned;  // sum of what swaps returned
};

// Rank 0 holds a lock word and a counter (on another node, for the ranks
// of the others). Each rank takes the
// lock with compare_swap, reads the counter with g, writes it back plus one
// with p, quiets, and frees the lock with atomic_set; the counter ends at
// exactly ranks * rounds. Then every rank swaps its number into one word:
// what the swaps returned plus the last value is every number once.
struct swap_lock {
  int rounds;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* w = static_cast<lock_words*>(r.calloc_symmetric(1, sizeof(lock_words)));
    const int holder = 0, n = r.size(grma::world);
    if (r.thread() == 0) {
      const unsigned long long mark = unsigned(me) + 1;
      for (int round = 0; round < rounds; ++round) {
        while (r.atomic_compare_swap(&w->lock, 0ull, mark, holder) != 0) relax();
        r.fence();  // the lock is taken before the counter is read
        const unsigned long long value = r.g(&w->counter, holder);
        r.p(&w->counter, value + 1, holder);
        r.quiet();  // the counter is written before the lock is free
        const unsigned long long seen = r.atomic_fetch(&w->lock, holder);
        if (seen != mark) record_failure(rec, __LINE__, round, (long long)seen, (long long)mark);
        r.atomic_set(&w->lock, 0ull, holder);
      }
      const unsigned long long old = r.atomic_swap(&w->swapped, mark, holder);
      r.atomic_add(&w->returned, old, holder);
    }
    r.quiet();
    r.barrier(grma::world);
    if (me == holder) {
      const unsigned long long ranks = unsigned(n);
      CONF_EXPECT(r, rec, w->counter == ranks * unsigned(rounds), 1, w->counter, ranks);
      unsigned long long all = 0;
      for (int t = 0; t < n; ++t) all += unsigned(t) + 1;
      CONF_EXPECT(r, rec, w->returned + w->swapped == all, 2, w->returned, w->swapped);
      CONF_EXPECT(r, rec, w->lock == 0, 3, w->lock, 0);
    }
    tally(r, rec, 0);
    r.barrier(grma::world);
    r.free_symmetric(w);
  }
};

TEST_P(Atomics, CompareSwapLockGuardsACounter) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(swap_lock{});
  j.prepare();
  if (j.run(swap_lock{5})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks done");
  }
}

// ---- every operation and width, on every rank --------------------------------------------

// Each rank applies every atomic of both widths to the words of the rank
// `far` places on (on another node where the job spans nodes: half the
// world away), alone in its word, so every old value is known: fetch, set,
// swap, compare_swap (failing, then succeeding), fetch_add, fetch_and,
// fetch_or, fetch_xor and their non-fetching forms; the target checks the
// final words after a quiet and a barrier.
template <class T>
struct every_atomic {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* words = static_cast<T*>(r.calloc_symmetric(4, sizeof(T)));
    const int target = rank_after(r, me, n / 2), source = rank_after(r, me, -(n / 2));
    if (r.thread() == 0) {
      const T base = T(0x1000 + me);
      CONF_EXPECT(r, rec, r.atomic_fetch(words, target) == T(0), 1, 0, 0);
      r.atomic_set(words, base, target);
      CONF_EXPECT(r, rec, r.atomic_swap(words, T(base + 1), target) == base, 2, 0, 0);
      CONF_EXPECT(r, rec, r.atomic_compare_swap(words, T(7), T(9), target) == T(base + 1), 3, 0, 0);
      CONF_EXPECT(r, rec, r.atomic_compare_swap(words, T(base + 1), T(0xf0f0), target) == T(base + 1), 4, 0, 0);
      CONF_EXPECT(r, rec, r.atomic_fetch_add(words, T(0x10), target) == T(0xf0f0), 5, 0, 0);
      CONF_EXPECT(r, rec, r.atomic_fetch_and(words, T(0xff00), target) == T(0xf100), 6, 0, 0);
      CONF_EXPECT(r, rec, r.atomic_fetch_or(words, T(0x000f), target) == T(0xf100), 7, 0, 0);
      CONF_EXPECT(r, rec, r.atomic_fetch_xor(words, T(0x0101), target) == T(0xf10f), 8, 0, 0);
      r.atomic_add(words + 1, T(5), target);
      r.atomic_inc(words + 1, target);
      CONF_EXPECT(r, rec, r.atomic_fetch_inc(words + 1, target) == T(6), 9, 0, 0);
      r.atomic_or(words + 2, T(0x30), target);
      r.atomic_and(words + 2, T(0x21), target);
      r.atomic_xor(words + 2, T(0x3), target);
      r.p(words + 3, T(me + 1), target);
      CONF_EXPECT(r, rec, r.g(words + 3, target) == T(me + 1), 10, 0, 0);
    }
    r.quiet();
    r.barrier(grma::world);
    if (r.thread() == 0) {
      CONF_EXPECT(r, rec, words[0] == T(0xf00e), 11, (long long)words[0], 0);
      CONF_EXPECT(r, rec, words[1] == T(7), 12, (long long)words[1], 0);
      CONF_EXPECT(r, rec, words[2] == T(0x23), 13, (long long)words[2], 0);
      CONF_EXPECT(r, rec, words[3] == T(source + 1), 14, (long long)words[3], source);
    }
    tally(r, rec, 0);
    r.barrier(grma::world);
    r.free_symmetric(words);
  }
};

TEST_P(Atomics, EveryOperationOfBothWidthsOnAFarRank) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(every_atomic<unsigned>{});
  j.prepare();
  if (j.run(every_atomic<unsigned>{}) && j.run(every_atomic<unsigned long long>{}) &&
      j.run(every_atomic<long long>{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 3u; }, "ranks done");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Atomics, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
