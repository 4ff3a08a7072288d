// Signals, portable: put_signal writes data, then sets or adds to a 64-bit
// word at the target; wait_signal sees the data once it sees the word; puts
// and signals on one word land in the order a rank issued them; and read()
// polls a word another rank sets.
#include <cstddef>
#include <cstdint>

#include "support.hpp"

namespace conformance {
namespace {

class Signals : public testing::TestWithParam<config> {};

// ---- set --------------------------------------------------------------------------------

constexpr std::size_t signal_data_offset = 64;

// Ranks 2k and 2k + 1 take turns: one puts a block of data and sets the
// other's signal to the round number; the other waits for it, checks the
// data, and answers the same way. The data must be complete when the signal
// is seen.
struct signal_set {
  int rounds;
  std::size_t data_bytes;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const std::size_t bytes = signal_data_offset + data_bytes;
    auto* region = mem.get<std::uint8_t>(r, round64(bytes) + data_bytes);
    auto* outbox =
        reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(region) + round64(bytes));
    if (r.thread() == 0) *reinterpret_cast<std::uint64_t*>(region) = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, region, bytes);
    if (peer < r.size(grma::world)) {
      for (int round = 1; round <= rounds; ++round) {
        const std::size_t size = 1 + std::size_t(mix(std::uint64_t(round)) % data_bytes);
        for (int half = 0; half < 2; ++half) {
          if ((half == 0) == (me % 2 == 0)) {
            fill(r, outbox, size, mix(std::uint64_t(me), std::uint64_t(round)));
            r.put_signal(w, peer, signal_data_offset, size, outbox, 0, std::uint64_t(round),
                         grma::signal_op::set);
          } else {
            const std::uint64_t seen = r.wait_signal(w, 0, grma::cmp::eq, std::uint64_t(round));
            CONF_EXPECT(r, rec, seen == std::uint64_t(round), round, seen, 0);
            CONF_CHECK_PATTERN(r, rec, region + signal_data_offset, size,
                               mix(std::uint64_t(peer), std::uint64_t(round)), 0, round);
            tally(r, rec, 0);
          }
        }
      }
    }
    r.barrier(grma::world);
    r.window_free(w);
    mem.release(r, region);
  }
};

TEST_P(Signals, SetPublishesTheDataBeforeTheSignal) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(signal_set{});
  const std::size_t data_bytes = clamp_to<std::size_t>(rank_budget(rt, n) / 2 - 128, 64, 4096 + 24);
  const signal_set program{200, data_bytes,
                           j.prepare(0, round64(signal_data_offset + data_bytes) + data_bytes)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int rank) { return (rank ^ 1) < n ? unsigned(program.rounds) : 0u; },
        "signals seen");
  }
}

// ---- add ----------------------------------------------------------------------------------

constexpr int signal_data_sources = 64;  // ranks whose adds also carry a data word

GRMA_HOST_DEVICE inline std::uint64_t signal_value(int source, int i) {
  return std::uint64_t(source + 1) * 1000 + std::uint64_t(i % 7);
}

// Every rank adds to every rank's signal word many times, each time a value
// of its own; each target waits until the exact total is reached, and after a
// barrier the word holds exactly that total: no add lost or repeated. The
// adds of the first 64 ranks also carry one word of data to a slot of the
// adding rank, checked once the total is seen.
struct signal_add {
  int adds_per_target;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int data_sources = min_of(n, signal_data_sources);
    // word 0: the signal; word 1 + s: the last data word from rank s.
    const std::size_t bytes = (1 + std::size_t(data_sources)) * sizeof(std::uint64_t);
    auto* words = mem.get<std::uint64_t>(r, round64(bytes) + sizeof(std::uint64_t));
    auto* outgoing =
        reinterpret_cast<std::uint64_t*>(reinterpret_cast<unsigned char*>(words) + round64(bytes));
    for (int i = r.thread(); i <= data_sources; i += r.threads()) words[i] = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, words, bytes);
    for (int i = 0; i < adds_per_target; ++i) {
      for (int k = 0; k < n; ++k) {
        const int target = (me + k) % n;
        if (me < data_sources) {
          if (r.thread() == 0)
            *outgoing = mix(std::uint64_t(me), std::uint64_t(target), std::uint64_t(i));
          r.sync_threads();
          r.put_signal(w, target, (1 + std::size_t(me)) * sizeof(std::uint64_t),
                       sizeof(std::uint64_t), outgoing, 0, signal_value(me, i),
                       grma::signal_op::add);
        } else {
          r.put_signal(w, target, 0, 0, nullptr, 0, signal_value(me, i), grma::signal_op::add);
        }
      }
    }
    std::uint64_t total = 0;
    for (int source = 0; source < n; ++source)
      for (int i = 0; i < adds_per_target; ++i) total += signal_value(source, i);
    const std::uint64_t seen = r.wait_signal(w, 0, grma::cmp::ge, total);
    CONF_EXPECT(r, rec, seen == total, 0, seen, total);
    for (int s = r.thread(); s < data_sources; s += r.threads())
      if (words[1 + s] !=
          mix(std::uint64_t(s), std::uint64_t(me), std::uint64_t(adds_per_target - 1)))
        record_failure(rec, __LINE__, 1, s, 0);
    r.barrier(grma::world);
    const std::uint64_t final_value = r.read(&words[0]);
    CONF_EXPECT(r, rec, final_value == total, 2, final_value, total);
    tally(r, rec, 0, seen);
    r.barrier(grma::world);
    r.window_free(w);
    mem.release(r, words);
  }
};

TEST_P(Signals, AddsFromAllRanksSumExactly) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(signal_add{});
  const signal_add program{
      clamp_to(3000 / n, 1, 300),
      j.prepare(0, round64((1 + signal_data_sources) * sizeof(std::uint64_t)) + 8)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    unsigned long long total = 0;
    for (int source = 0; source < n; ++source)
      for (int i = 0; i < program.adds_per_target; ++i) total += signal_value(source, i);
    j.expect_counts(
        0, [&](int) { return total; }, "signal word");
  }
}

// ---- each comparison --------------------------------------------------------------------------

struct signal_step {
  grma::signal_op op;
  std::uint64_t value;  // what the writer sets or adds
  grma::cmp c;
  std::uint64_t wait_for;  // the reader waits until word <c> wait_for
  std::uint64_t word_after;
};
constexpr int signal_step_count = 8;

GRMA_HOST_DEVICE inline signal_step signal_steps(int i) {
  const signal_step steps[signal_step_count] = {
      {grma::signal_op::set, 5, grma::cmp::eq, 5, 5},
      {grma::signal_op::set, 9, grma::cmp::ne, 5, 9},
      {grma::signal_op::add, 1, grma::cmp::gt, 9, 10},
      {grma::signal_op::add, 2, grma::cmp::ge, 12, 12},
      {grma::signal_op::set, 3, grma::cmp::lt, 12, 3},
      {grma::signal_op::set, 2, grma::cmp::le, 2, 2},
      {grma::signal_op::add, 0xffffffff00000000ull, grma::cmp::gt, 0xfffffffeffffffffull,
       0xffffffff00000002ull},
      {grma::signal_op::set, 0, grma::cmp::lt, 1, 0},
  };
  return steps[i];
}

// wait_signal with each comparison, waiting for a value the peer is about to
// write and returning the word it saw; each step is acknowledged through a
// signal word at the peer. The last waits find their condition true at once.
struct signal_compare {
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    constexpr std::size_t data_bytes = 100;
    constexpr std::size_t ack_offset = 8, data_offset = 16;
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    const int peer = me ^ 1;
    const std::size_t bytes = data_offset + data_bytes;
    auto* region = mem.get<std::uint8_t>(r, round64(bytes) + data_bytes);
    auto* outbox =
        reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(region) + round64(bytes));
    auto* signal = reinterpret_cast<std::uint64_t*>(region);
    if (r.thread() == 0) {
      signal[0] = 0;  // written by the peer
      signal[1] = 0;  // acknowledgements from the peer
    }
    r.sync_threads();
    grma::window w = r.window_create(grma::world, region, bytes);
    if (peer < r.size(grma::world)) {
      const bool writer = me % 2 == 0;
      for (int index = 1; index <= signal_step_count; ++index) {
        const signal_step st = signal_steps(index - 1);
        if (writer) {
          fill(r, outbox, data_bytes, mix(std::uint64_t(me), std::uint64_t(index)));
          r.put_signal(w, peer, data_offset, data_bytes, outbox, 0, st.value, st.op);
          r.wait_signal(w, ack_offset, grma::cmp::eq, std::uint64_t(index));
        } else {
          const std::uint64_t seen = r.wait_signal(w, 0, st.c, st.wait_for);
          CONF_EXPECT(r, rec, seen == st.word_after, index, (long long)seen,
                      (long long)st.word_after);
          CONF_CHECK_PATTERN(r, rec, region + data_offset, data_bytes,
                             mix(std::uint64_t(peer), std::uint64_t(index)), 0, index);
          r.put_signal(w, peer, 0, 0, nullptr, ack_offset, std::uint64_t(index),
                       grma::signal_op::set);
        }
        tally(r, rec, 0);
      }
      if (!writer) {  // conditions already true: no waiting
        CONF_EXPECT(r, rec, r.wait_signal(w, 0, grma::cmp::eq, 0) == 0, 100, 0, 0);
        CONF_EXPECT(r, rec, r.wait_signal(w, 0, grma::cmp::ge, 0) == 0, 101, 0, 0);
        CONF_EXPECT(r, rec, r.wait_signal(w, 0, grma::cmp::le, 0) == 0, 102, 0, 0);
        CONF_EXPECT(r, rec, r.wait_signal(w, 0, grma::cmp::ne, 7) == 0, 103, 0, 0);
        CONF_EXPECT(r, rec, r.wait_signal(w, 0, grma::cmp::lt, 7) == 0, 104, 0, 0);
      }
    }
    r.barrier(grma::world);
    r.window_free(w);
    mem.release(r, region);
  }
};

TEST_P(Signals, WaitSignalWithEachComparison) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(signal_compare{});
  if (j.run(signal_compare{j.prepare(0, 256)})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int rank) { return (rank ^ 1) < n ? unsigned(signal_step_count) : 0u; }, "steps");
  }
}

// ---- signals and notifications apart ------------------------------------------------------

// A put_signal leaves no notification, and a put_notify does not change a
// signal word.
struct signals_apart {
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* words = mem.get<std::uint64_t>(r, 2 * sizeof(std::uint64_t));
    if (r.thread() == 0) words[0] = words[1] = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, words, 2 * sizeof(std::uint64_t));
    const int right = (me + 1) % n;
    r.put_signal(w, right, 0, 0, nullptr, 0, 1, grma::signal_op::add);
    r.put_notify(w, right, 8, 0, nullptr, 4);
    r.wait_notifications(w, (me + n - 1) % n, 4, 1);
    CONF_EXPECT(r, rec, r.wait_signal(w, 0, grma::cmp::eq, 1) == 1, 0, 0, 0);
    r.barrier(grma::world);
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 1, 0, 0);
    const std::uint64_t w0 = r.read(&words[0]), w1 = r.read(&words[1]);
    CONF_EXPECT(r, rec, w0 == 1 && w1 == 0, 2, w0, w1);
    tally(r, rec, 0);
    r.barrier(grma::world);
    r.window_free(w);
    mem.release(r, words);
  }
};

TEST_P(Signals, SignalsLeaveNoNotifications) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(signals_apart{});
  if (j.run(signals_apart{j.prepare(0, 16)})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks done");
  }
}

// ---- a signal word written again --------------------------------------------------------

// A rank's puts and signals on one word of a target, ordered by fence, land
// in that order: a put after a put_signal overwrites the signal word, and a
// put_signal after a put overwrites the put. Each rank does so, back to
// back and non-blocking, on `count` words of the next rank; every word's
// last value is checked after a quiet and a barrier.
struct signal_then_put {
  static constexpr int count = 48;
  GRMA_HOST_DEVICE static std::uint64_t put_value(int from, int i) {
    return mix(std::uint64_t(from), std::uint64_t(i), 5);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* words = static_cast<std::uint64_t*>(r.calloc_symmetric(count, sizeof(std::uint64_t)));
    auto* values = static_cast<std::uint64_t*>(r.alloc_symmetric(count * sizeof(std::uint64_t)));
    for (int i = int(r.thread()); i < count; i += int(r.threads())) values[i] = put_value(me, i);
    r.sync_threads();
    r.barrier(grma::world);
    const int next = rank_after(r, me, 1), previous = rank_after(r, me, -1);
    for (int i = 0; i < count; ++i) {
      // i % 3: a set, then the put; an add, then the put; the put, then a set.
      if (i % 3 != 2) {
        r.put_signal_nbi(words, values, 0, &words[i], 1,
                         i % 3 == 0 ? grma::signal_op::set : grma::signal_op::add, next);
        r.fence();
      }
      r.put_nbi(&words[i], &values[i], sizeof(std::uint64_t), next);
      if (i % 3 == 2) {
        r.fence();
        r.put_signal_nbi(words, values, 0, &words[i], 3, grma::signal_op::set, next);
      }
    }
    r.quiet();
    r.barrier(grma::world);
    for (int i = 0; i < count; ++i) {
      const std::uint64_t got = r.read(&words[i]), want = i % 3 == 2 ? 3 : put_value(previous, i);
      CONF_EXPECT(r, rec, got == want, i, got, want);
    }
    tally(r, rec, 0);
    r.barrier(grma::world);
    r.free_symmetric(values);
    r.free_symmetric(words);
  }
};

TEST_P(Signals, PutsAndSignalsOnOneWordLandInOrder) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(signal_then_put{});
  j.prepare();
  if (j.run(signal_then_put{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks done");
  }
}

// ---- read() ------------------------------------------------------------------------

constexpr std::uint64_t polled_last = 255;  // values v * 0x0101010101010101: every byte v
constexpr std::uint64_t every_byte = 0x0101010101010101ull;

// Polling a signal word with read() while another rank sets it is the
// README's way to look at a word without waiting: no data race (the tsan
// preset runs the CPU backend), and each value read is one that was set,
// whole (a torn read shows as bytes that differ) and never older than the
// last one read. Ranks 2k set 2k + 1's word to 1..255; thread 0's reads
// decide for the rank.
struct read_polls {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), peer = me ^ 1;
    auto* word = static_cast<std::uint64_t*>(r.alloc(64));
    std::uint64_t* cell = word + 1;
    if (r.thread() == 0) *word = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, word, sizeof(std::uint64_t));
    if (peer < r.size(grma::world)) {
      if (me % 2 == 0) {
        for (std::uint64_t v = 1; v <= polled_last; ++v)
          r.put_signal(w, peer, 0, 0, nullptr, 0, v * every_byte, grma::signal_op::set);
      } else {
        std::uint64_t seen = 0;
        while (seen != polled_last * every_byte) {
          const std::uint64_t now = uniform(r, r.read(word), cell);
          const bool whole = now % every_byte == 0 && now >= seen;
          CONF_EXPECT(r, rec, whole, now, seen, 0);
          if (!whole) break;
          seen = now;
        }
        tally(r, rec, 0);
      }
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free(word);
  }
};

TEST_P(Signals, ReadPollsAWordThatAnotherRankSets) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(read_polls{});
  j.prepare();
  if (j.run(read_polls{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(0, [](int rank) { return rank % 2 == 1 ? 1u : 0u; }, "pollers done");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Signals, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
