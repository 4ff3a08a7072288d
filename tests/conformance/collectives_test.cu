// Collectives and back-pressure, portable: barriers that no rank passes early,
// windows created and freed over and over, a full window table, a freed
// window's notifications dropped, and tiny notification queues under
// all-to-all load.
#include <cstddef>
#include <cstdint>

#include "support.hpp"

namespace conformance {
namespace {

class Collectives : public testing::TestWithParam<config> {};

// ---- barriers -------------------------------------------------------------------------

constexpr int barrier_cells = 4;     // cells per rank and row
constexpr int barrier_checked = 64;  // ranks whose cells a rank reads after each barrier

// Before each barrier every rank writes the round into its cells of a row in
// userdata (a window over each rank's part, read by the others through the
// shared heap); after it, every rank reads the cells of up to 64 ranks, a
// different set each round. A rank that left a barrier before all had
// arrived would see an older round. Two rows alternate, so a row is rewritten
// only after the barrier that follows everyone's reads of it.
//
// With `thread_zero_writes` the cells are written by the rank's first thread
// and the threads sync before the barrier and after the reads; without, the
// rank's last threads write them and nothing but the barrier orders the
// threads: the barrier must order every thread's accesses of the rank.
struct barriers {
  int rounds;
  bool thread_zero_writes;
  // This process's ranks (all, unless under mpirun): the cells of those on
  // this rank's node are in its userdata.
  int process_first;
  int process_count;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    int* cells = extra_area<int>(r);  // [2][n][barrier_cells]
    const std::size_t row_cells = std::size_t(n) * barrier_cells;
    grma::window w = r.window_create(grma::world, cells + std::size_t(me) * barrier_cells,
                                     barrier_cells * sizeof(int));
    const rank_span readable = userdata_sharers(r, process_first, process_count);
    const int checked = min_of(readable.count, barrier_checked);
    const int stride = max_of(1, readable.count / barrier_checked);
    for (int round = 0; round < rounds; ++round) {
      int* row = cells + std::size_t(round % 2) * row_cells;
      for (int c = 0; c < barrier_cells; ++c) {
        const int writer = thread_zero_writes ? 0 : r.threads() - 1 - c % r.threads();
        if (r.thread() == writer) row[std::size_t(me) * barrier_cells + std::size_t(c)] = round;
      }
      if (thread_zero_writes) r.sync_threads();
      r.barrier(world_or_whole_device(r, round % 3 == 2));
      for (int i = r.thread(); i < checked * barrier_cells; i += r.threads()) {
        const int other =
            readable.first +
            (me - readable.first + 1 + round + (i / barrier_cells) * stride) % readable.count;
        const int seen = row[std::size_t(other) * barrier_cells + std::size_t(i % barrier_cells)];
        if (seen != round) {
          record_failure(rec, __LINE__, round, other, seen);
          break;
        }
      }
      if (thread_zero_writes) r.sync_threads();
    }
    tally(r, rec, 0, unsigned(rounds));
    r.window_free(w);
  }
};

void run_barriers(bool thread_zero_writes) {
  grma::runtime rt(suite_settings());
  job j(rt, testing::TestWithParam<config>::GetParam());
  const int n = j.resolve(barriers{});
  const barriers program{clamp_to(600000 / n, 500, 3000), thread_zero_writes, j.first(),
                        j.responsible()};
  j.prepare(2 * std::size_t(n) * barrier_cells * sizeof(int));
  int* cells = j.extra<int>();
  for (std::size_t i = 0; i < 2 * std::size_t(n) * barrier_cells; ++i) cells[i] = -1;
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.rounds); }, "barriers passed");
  }
}

TEST_P(Collectives, BarriersNoRankPassesEarly) {
  run_barriers(true);
}

TEST_P(Collectives, BarriersOrderEveryThreadOfTheRank) {
  run_barriers(false);
}

// ---- windows created and freed ------------------------------------------------------------

constexpr std::size_t window_max_bytes = 2048;

GRMA_HOST_DEVICE inline std::size_t window_range_bytes(int rank, int iteration) {
  if ((rank + iteration) % 3 == 0) return 0;
  return 1 + std::size_t(mix(std::uint64_t(rank), std::uint64_t(iteration)) % window_max_bytes);
}

// Many windows, created and freed in turn on world and device, with a range
// of a new size each time and an empty range on some ranks. Each window is
// used before it is freed: a put with data to ranks that registered memory, a
// zero-byte put to those that did not. A window that stays open throughout
// must keep its own notifications apart from all the others.
struct window_cycles {
  int iterations;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* memory = mem.get<std::uint8_t>(r, round64(window_max_bytes) + window_max_bytes);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(memory) +
                                                   round64(window_max_bytes));
    grma::window lasting = r.window_create(grma::world, nullptr, 0);
    for (int it = 0; it < iterations; ++it) {
      // Odd iterations use the device communicator and its ranks: on a job of
      // several devices each device's ranks create their windows at once (the
      // one window table is claimed concurrently), addressed by device rank.
      const grma::comm c = world_or_device(it % 2 != 0);
      const int cm = r.rank(c), cn = r.size(c);
      const int c_right = (cm + 1) % cn, c_left = (cm + cn - 1) % cn;
      const std::size_t mine = window_range_bytes(cm, it);
      grma::window w = r.window_create(c, mine == 0 ? nullptr : memory, mine);
      CONF_EXPECT(r, rec, !(w == grma::window_none) && !(w == lasting), it, w.slot, w.generation);
      const std::size_t theirs = window_range_bytes(c_right, it);
      fill(r, outbox, theirs, mix(std::uint64_t(cm), std::uint64_t(it)));
      r.put_notify(w, c_right, 0, theirs, theirs == 0 ? nullptr : outbox, it % 7);
      if (it % 10 == 0) r.put_notify(lasting, right, 0, 0, nullptr, it);
      r.wait_notifications(w, c_left, it % 7, 1);
      CONF_CHECK_PATTERN(r, rec, memory, mine, mix(std::uint64_t(c_left), std::uint64_t(it)), 0, it);
      r.window_free(w);
      CONF_EXPECT(r, rec, w == grma::window_none, it, w.slot, w.generation);
      tally(r, rec, 0);
    }
    r.barrier(grma::world);
    for (int it = 0; it < iterations; it += 10) {
      const bool there = r.test_notifications(lasting, left, it, 1);
      CONF_EXPECT(r, rec, there, it, -1, 0);
      if (there) tally(r, rec, 1);
    }
    CONF_EXPECT(r, rec, !r.test_notifications(lasting, grma::any_source, grma::any_tag), -1, -1, 1);
    r.window_free(lasting);
    mem.release(r, memory);
  }
};

TEST_P(Collectives, WindowsCreatedAndFreedManyTimes) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(window_cycles{});
  const window_cycles program{n > 1000 ? 100 : 300,
                              j.prepare(0, round64(window_max_bytes) + window_max_bytes)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return unsigned(program.iterations); }, "windows used");
    j.expect_counts(
        1, [&](int) { return unsigned((program.iterations + 9) / 10); },
        "notifications on the lasting window");
  }
}

// ---- a full window table ------------------------------------------------------------------

constexpr std::uint32_t table_windows = 16;
constexpr std::size_t table_part_bytes = 64;

// As many windows as the table holds live at once (settings.max_windows),
// each over a different part of one buffer, all used, then all freed; and
// again, so freed slots are reused.
struct full_window_table {
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* memory =
        mem.get<std::uint8_t>(r, round64(table_windows * table_part_bytes) + table_part_bytes);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(memory) +
                                                   round64(table_windows * table_part_bytes));
    for (int pass = 0; pass < 2; ++pass) {
      grma::window windows[table_windows];
      for (std::uint32_t i = 0; i < table_windows; ++i)
        windows[i] = r.window_create(world_or_whole_device(r, i % 2 != 0), memory + i * table_part_bytes,
                                     table_part_bytes);
      for (std::uint32_t i = 0; i < table_windows; ++i) {
        fill(r, outbox, table_part_bytes, mix(std::uint64_t(me), std::uint64_t(pass), i));
        r.put_notify(windows[i], right, 0, table_part_bytes, outbox, 3);
      }
      // Window by window in reverse: each wait may match only its window's.
      for (std::uint32_t i = table_windows; i-- > 0;) {
        r.wait_notifications(windows[i], left, 3, 1);
        CONF_CHECK_PATTERN(r, rec, memory + i * table_part_bytes, table_part_bytes,
                           mix(std::uint64_t(left), std::uint64_t(pass), i), 0,
                           pass * 100 + int(i));
        tally(r, rec, 0);
      }
      for (grma::window& w : windows) r.window_free(w);
    }
    mem.release(r, memory);
  }
};

TEST_P(Collectives, FullWindowTableAllUsable) {
  grma::settings s = suite_settings();
  s.max_windows = table_windows;
  grma::runtime rt(s);
  job j(rt, GetParam());
  j.resolve(full_window_table{});
  if (j.run(full_window_table{
          j.prepare(0, round64(table_windows * table_part_bytes) + table_part_bytes)})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int) { return 2u * table_windows; }, "windows used");
  }
}

// ---- a freed window's notifications --------------------------------------------------------

constexpr std::uint32_t dropped_match_capacity = 16;
constexpr int dropped_sent = 20;

// Unmatched notifications of a freed window would otherwise stay in the
// pending list for good: here rank 0 sends more to the last rank than its
// pending list holds, the last rank takes them in as far as they fit and
// matches none, and after the window is freed the next window's
// notification must be matched, and be the only one there.
struct freed_window_notifications {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), last = r.size(grma::world) - 1;
    auto* memory = static_cast<std::uint8_t*>(r.alloc(64));
    grma::window w = r.window_create(grma::world, memory, 64);
    if (me == 0)
      for (int i = 0; i < dropped_sent; ++i) r.put_notify(w, last, 0, 8, memory, 1);
    r.barrier(grma::world);
    if (me == last) CONF_EXPECT(r, rec, !r.test_notifications(w, 0, 2, 1), 0, 0, 0);
    r.window_free(w);
    grma::window next = r.window_create(grma::world, memory, 64);
    if (me == 0) r.put_notify(next, last, 0, 8, memory, 1);
    if (me == last) {
      r.wait_notifications(next, 0, 1, 1);
      CONF_EXPECT(r, rec, !r.test_notifications(next, grma::any_source, grma::any_tag, 1), 1, 0, 0);
      tally(r, rec, 0);
    }
    r.window_free(next);
    r.free(memory);
  }
};

TEST_P(Collectives, FreeingAWindowDropsItsUnmatchedNotifications) {
  static_assert(dropped_sent <= 32);
  grma::settings s = with_ring_room(32);
  s.match_capacity = dropped_match_capacity;
  grma::runtime rt(s);
  job j(rt, GetParam());
  const int n = j.resolve(freed_window_notifications{});
  j.prepare();
  if (j.run(freed_window_notifications{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(0, [&](int rank) { return rank == n - 1 ? 1u : 0u; }, "new windows' notifications matched");
  }
}

// ---- back-pressure --------------------------------------------------------------------------

class BackPressure : public testing::TestWithParam<config> {};

constexpr int pressure_group = 16;         // ranks per exchange group
constexpr int pressure_tags = 5;           // tags per source
constexpr int pressure_waited_at_end = 3;  // the last of a step, taken by one wildcard wait
constexpr double pressure_stall_seconds = 20;

// A step lets one half of each group send while the other half only
// receives, so no cycle of full queues can form. Members s and t exchange in
// the steps for the lowest bit in which their indices differ: first s sends
// (the step with s's bit value as `direction`), then t. Steps over all bits
// cover every ordered pair exactly once.
GRMA_HOST_DEVICE inline bool step_sends(int bit, int direction, int source, int target) {
  const int differ = source ^ target;
  return differ != 0 && (differ & -differ) == (1 << bit) && ((source >> bit) & 1) == direction;
}

GRMA_HOST_DEVICE inline int pressure_tag(int source, int i) {
  return source * pressure_tags + i % pressure_tags;
}
GRMA_HOST_DEVICE inline bool pressure_carries_data(int i) {
  return i % 4 != 3;
}

// Notification queues of 4 entries and 8 unmatched held per rank: senders
// feel back-pressure, and every notification still arrives exactly once,
// with its data, counted per source and tag. The tag names the source and
// cycles through pressure_tags values, so a match on (any_source, tag) still
// tells the receiver who sent it. Every fourth notification is a zero-byte
// put; the others carry one word into a slot of their own at the target.
struct back_pressure {
  int per_pair;  // notifications each ordered pair of group members exchanges
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void take(Rank& r, rank_record& rec, const std::uint64_t* inbox,
                             int next[][pressure_tags], const group& g, int me, int step,
                             int source_index, int k) const {
    const int i = next[source_index][k];
    next[source_index][k] += pressure_tags;
    tally(r, rec, 0);
    if (pressure_carries_data(i)) {
      const int source = g.member(source_index);
      const std::uint64_t word =
          inbox[std::size_t(source_index) * std::size_t(per_pair) + std::size_t(i)];
      CONF_EXPECT(r, rec, word == mix(std::uint64_t(source), std::uint64_t(me), std::uint64_t(i)),
                  step, source, i);
    }
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const group g(me, n, pressure_group);
    const std::size_t inbox_words = std::size_t(g.size) * std::size_t(per_pair);
    auto* inbox = mem.get<std::uint64_t>(
        r, round64(inbox_words * sizeof(std::uint64_t)) + 2 * sizeof(std::uint64_t));
    auto* outgoing = reinterpret_cast<std::uint64_t*>(reinterpret_cast<unsigned char*>(inbox) +
                                                      round64(inbox_words * sizeof(std::uint64_t)));
    int* cell = reinterpret_cast<int*>(outgoing + 1);
    grma::window w = r.window_create(grma::world, inbox, inbox_words * sizeof(std::uint64_t));

    int bits = 0;
    while ((1 << bits) < g.max_size()) ++bits;
    int step = 0;
    for (int bit = 0; bit < bits; ++bit) {
      for (int direction = 0; direction < 2; ++direction, ++step) {
        // Sending: round-robin over the targets, so each queue has several
        // producers and each producer several queues.
        for (int i = 0; i < per_pair; ++i) {
          for (int t = 0; t < g.size; ++t) {
            if (!step_sends(bit, direction, g.index, t)) continue;
            const int target = g.member(t);
            if (pressure_carries_data(i)) {
              if (r.thread() == 0)
                *outgoing = mix(std::uint64_t(me), std::uint64_t(target), std::uint64_t(i));
              r.sync_threads();
              r.put_notify(w, target,
                           (std::size_t(g.index) * std::size_t(per_pair) + std::size_t(i)) *
                               sizeof(std::uint64_t),
                           sizeof(std::uint64_t), outgoing, pressure_tag(me, i));
            } else {
              r.put_notify(w, target, 0, 0, nullptr, pressure_tag(me, i));
            }
          }
        }

        // Receiving: next[s][k] is the index of the next notification from
        // member s with tag k; matching is FIFO per source and tag.
        int next[pressure_group][pressure_tags];
        int sources = 0;
        for (int s = 0; s < g.size; ++s) {
          const bool from = step_sends(bit, direction, s, g.index);
          sources += from;
          for (int k = 0; k < pressure_tags; ++k) next[s][k] = from ? k : per_pair;
        }
        int remaining = sources * per_pair;
        const int identified_until = min_of(remaining, pressure_waited_at_end);
        double last_progress = r.wtime();
        while (remaining > identified_until) {
          bool progress = false;
          for (int s = 0; s < g.size && remaining > identified_until; ++s) {
            const int source = g.member(s);
            for (int k = 0; k < pressure_tags && remaining > identified_until; ++k) {
              const int left = (per_pair - next[s][k] + pressure_tags - 1) / pressure_tags;
              if (left <= 0) continue;
              // Alternate between naming the source and matching any source;
              // ask for two at once where two are due, then for one (with 8
              // unmatched held, the second may not fit yet).
              const int querying = (s + k + step) % 2 == 0 ? grma::any_source : source;
              for (int count = left >= 2 && remaining - 2 >= identified_until ? 2 : 1; count > 0;
                   --count) {
                if (!r.test_notifications(w, querying, pressure_tag(source, k), count)) continue;
                for (int c = 0; c < count; ++c) take(r, rec, inbox, next, g, me, step, s, k);
                remaining -= count;
                progress = true;
                break;
              }
            }
          }
          if (progress) {
            last_progress = r.wtime();
          } else if (agree(r, r.wtime() - last_progress > pressure_stall_seconds, cell)) {
            CONF_EXPECT(r, rec, false, step, remaining, -1);
            break;
          } else {
            relax();
          }
        }
        if (remaining > 0 && remaining == identified_until) {
          // The rest, whoever sent them, with one wildcard wait.
          r.wait_notifications(w, grma::any_source, grma::any_tag, remaining);
          for (int s = 0; s < g.size; ++s)
            for (int k = 0; k < pressure_tags; ++k)
              while (next[s][k] < per_pair) take(r, rec, inbox, next, g, me, step, s, k);
        }
        r.barrier(grma::world);  // every rank has sent and received this step
        CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), step, -1, 0);
        r.barrier(grma::world);  // before the next step's sends
      }
    }
    r.window_free(w);
    mem.release(r, inbox);
  }
};

TEST_P(BackPressure, TinyQueuesLoseAndDuplicateNothing) {
  grma::settings s = suite_settings();
  s.queue_capacity = 4;
  s.match_capacity = 8;
  grma::runtime rt(s);
  job j(rt, GetParam());
  const int n = j.resolve(back_pressure{});
  const int members = group(0, n, pressure_group).max_size();
  // About 2000 notifications sent per rank, fewer where the heap is tight.
  const int per_pair =
      int(min_of<std::size_t>((2000 + std::size_t(members) - 2) / std::size_t(members - 1),
                              rank_budget(rt, n) / (8 * std::size_t(members))));
  ASSERT_GE(per_pair, pressure_tags);
  const back_pressure program{
      per_pair, j.prepare(0, round64(std::size_t(members) * std::size_t(per_pair) * 8) + 16)};
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0,
        [&](int rank) {
          return (unsigned long long)(group(rank, n, pressure_group).size - 1) * unsigned(per_pair);
        },
        "notifications received");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Collectives, testing::ValuesIn(suite_configs()), config_name);
INSTANTIATE_TEST_SUITE_P(Conformance, BackPressure, testing::ValuesIn(suite_configs()),
                         config_name);

}  // namespace
}  // namespace conformance
