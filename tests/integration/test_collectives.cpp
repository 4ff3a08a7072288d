// Collectives: barriers on world and device, and windows created and freed
// over and over, with empty ranges on some ranks.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "support.hpp"

namespace grma_test {
namespace {

class Collectives : public testing::TestWithParam<int> {};

// Before each barrier every rank writes the round into its cell of a plain
// (non-atomic) array; after it, every rank reads all cells. A rank that left
// a barrier before all had arrived would see an older round (and
// ThreadSanitizer would see the race). Two rows alternate, so a row is
// rewritten only after the barrier that follows everyone's reads of it.
TEST_P(Collectives, TenThousandBarriersNoRankPassesEarly) {
  constexpr int rounds = 10000;
  const int ranks = GetParam();
  rank_findings findings(ranks);
  std::vector<int> cells(2 * std::size_t(ranks), -1);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    for (int round = 0; round < rounds; ++round) {
      int* row = &cells[std::size_t(round % 2) * n];
      row[me] = round;
      r.barrier(round % 3 == 2 ? grma::device : grma::world);
      for (int other = 0; other < n; ++other)
        if (!findings.check(me, row[other] == round, "round ", round, ": rank ", other,
                            " had not arrived yet (its cell holds ", row[other], ")"))
          break;
    }
  });
}

// Both communicators name every rank here (one device), each with its own
// rank numbering and collective sequence.
TEST_P(Collectives, WorldAndDeviceDescribeTheJob) {
  const int ranks = GetParam();
  rank_findings findings(ranks);
  std::vector<int> seen(std::size_t(ranks), 0);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    findings.check(me, r.size(grma::world) == ranks, "world size ", r.size(grma::world));
    findings.check(me, r.size(grma::device) == ranks, "device size ", r.size(grma::device));
    findings.check(me, r.rank(grma::device) == me, "device rank ", r.rank(grma::device));
    findings.check(me, r.threads() == 1 && r.thread() == 0, "threads ", r.threads(), ", thread ",
                   r.thread());
    seen[std::size_t(me)] += 1;
    r.barrier(grma::device);
    r.barrier(grma::world);
  });
  for (int rank = 0; rank < ranks; ++rank) EXPECT_EQ(seen[std::size_t(rank)], 1) << "rank " << rank;
}

// Many windows, created and freed in turn on world and device, with a range
// of a new size each time and an empty range on some ranks. Each window is
// used before it is freed: a put with data to ranks that registered memory, a
// zero-byte put to those that did not. A window that stays open throughout
// must keep its own notifications apart from all the others.
TEST_P(Collectives, WindowsCreatedAndFreedManyTimes) {
  constexpr int iterations = 300;
  constexpr std::size_t max_bytes = 2048;
  auto range_bytes = [](int rank, int iteration) -> std::size_t {
    if ((rank + iteration) % 3 == 0) return 0;
    return 1 + std::size_t(mix(rank, iteration) % max_bytes);
  };
  const int ranks = GetParam();
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* memory = static_cast<std::uint8_t*>(r.alloc(max_bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(max_bytes));
    grma::window lasting = r.window_create(grma::world, nullptr, 0);
    for (int it = 0; it < iterations; ++it) {
      const std::size_t mine = range_bytes(me, it);
      const grma::comm c = it % 2 == 0 ? grma::world : grma::device;
      grma::window w = r.window_create(c, mine == 0 ? nullptr : memory, mine);
      findings.check(me, !(w == grma::window_none) && !(w == lasting), "iteration ", it,
                     ": window handle ", w.slot, "/", w.generation);
      const std::size_t theirs = range_bytes(right, it);
      fill_pattern(outbox, theirs, mix(me, it));
      r.put_notify(w, right, 0, theirs, theirs == 0 ? nullptr : outbox, it % 7);
      if (it % 10 == 0) r.put_notify(lasting, right, 0, 0, nullptr, it);
      r.wait_notifications(w, left, it % 7, 1);
      const std::string d = pattern_difference(memory, mine, mix(left, it));
      findings.check(me, d.empty(), "iteration ", it, ": ", d);
      r.window_free(w);
      findings.check(me, w == grma::window_none, "window_free left the handle set");
    }
    r.barrier(grma::world);
    for (int it = 0; it < iterations; it += 10)
      findings.check(me, r.test_notifications(lasting, left, it, 1), "lasting window: tag ", it,
                     " is missing");
    findings.check(me, !r.test_notifications(lasting, grma::any_source, grma::any_tag),
                   "lasting window: a notification too many");
    r.window_free(lasting);
    r.free(outbox);
    r.free(memory);
  });
}

// As many windows as the table holds live at once (settings.max_windows),
// each over a different part of one buffer, all used, then all freed; and
// again, so freed slots are reused.
TEST_P(Collectives, FullWindowTableAllUsable) {
  constexpr std::uint32_t window_count = 16;
  constexpr std::size_t part_bytes = 64;
  const int ranks = GetParam();
  grma::settings s = test_settings(ranks);
  s.max_windows = window_count;
  rank_findings findings(ranks);
  grma::runtime rt(s);
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* memory = static_cast<std::uint8_t*>(r.alloc(window_count * part_bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(part_bytes));
    for (int pass = 0; pass < 2; ++pass) {
      std::array<grma::window, window_count> windows;
      for (std::uint32_t i = 0; i < window_count; ++i)
        windows[i] = r.window_create(i % 2 ? grma::device : grma::world, memory + i * part_bytes,
                                     part_bytes);
      for (std::uint32_t i = 0; i < window_count; ++i) {
        fill_pattern(outbox, part_bytes, mix(me, pass, i));
        r.put_notify(windows[i], right, 0, part_bytes, outbox, 3);
      }
      // Window by window in reverse: each wait may match only its window's.
      for (std::uint32_t i = window_count; i-- > 0;) {
        r.wait_notifications(windows[i], left, 3, 1);
        const std::string d =
            pattern_difference(memory + i * part_bytes, part_bytes, mix(left, pass, i));
        findings.check(me, d.empty(), "pass ", pass, " window ", i, ": ", d);
      }
      for (grma::window& w : windows) r.window_free(w);
    }
    r.free(outbox);
    r.free(memory);
  });
}

TEST_P(Collectives, FreeingAWindowDropsItsUnmatchedNotifications) {
  // Unmatched notifications of a freed window would otherwise stay in the
  // pending list forever: here they fill it, and the next window's wait would
  // never see its notification.
  constexpr std::uint32_t match_capacity = 16;
  constexpr int sent = 20;
  const int ranks = GetParam();
  grma::settings s = test_settings(ranks);
  s.match_capacity = match_capacity;
  rank_findings findings(ranks);
  grma::runtime rt(s);
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* memory = static_cast<std::uint8_t*>(r.alloc(64));
    grma::window w = r.window_create(grma::world, memory, 64);
    if (me == 0)
      for (int i = 0; i < sent; ++i) r.put_notify(w, n - 1, 0, 8, memory, 1);
    r.barrier(grma::world);
    if (me == n - 1)  // takes them all in as far as they fit, matches none
      findings.check(me, !r.test_notifications(w, 0, 2, 1), "tag 2 matched");
    r.window_free(w);
    grma::window next = r.window_create(grma::world, memory, 64);
    if (me == 0) r.put_notify(next, n - 1, 0, 8, memory, 1);
    if (me == n - 1) {
      r.wait_notifications(next, 0, 1, 1);
      findings.check(me, !r.test_notifications(next, grma::any_source, grma::any_tag, 1),
                     "a notification of the freed window matched the new one");
    }
    r.window_free(next);
    r.free(memory);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, testing::ValuesIn(rank_counts), rank_count_name);

}  // namespace
}  // namespace grma_test
