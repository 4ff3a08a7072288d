// The runtime around the ranks: repeated and concurrent runs, userdata, the
// job layout, the heap, windows over shared memory, and the log.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace grma_test {
namespace {

// A small all-to-all exchange that checks its own data: each rank puts a
// block to every rank and waits for all of them, for `rounds` rounds.
void exchange_and_check(grma::cpu_rank& r, rank_findings& findings, int rounds,
                        std::uint64_t salt) {
  constexpr std::size_t block = 256;
  const int me = r.rank(grma::world), n = r.size(grma::world);
  auto* inbox = static_cast<std::uint8_t*>(r.alloc(n * block));
  auto* outbox = static_cast<std::uint8_t*>(r.alloc(block));
  grma::window w = r.window_create(grma::world, inbox, n * block);
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < n; ++k) {
      const int target = (me + k) % n;
      fill_pattern(outbox, block, mix(salt, me * 1000 + target, round));
      r.put_notify(w, target, me * block, block, outbox, round);
    }
    r.wait_notifications(w, grma::any_source, round, n);
    for (int source = 0; source < n; ++source) {
      const std::string d =
          pattern_difference(inbox + source * block, block, mix(salt, source * 1000 + me, round));
      findings.check(me, d.empty(), "round ", round, " from ", source, ": ", d);
    }
    r.barrier(grma::world);
  }
  findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                 "a notification is left after the exchange");
  r.window_free(w);
  r.free(outbox);
  r.free(inbox);
}

// One runtime, several runs with different rank counts. A run starts clean:
// what the previous run left behind (a notification never matched, a window
// never freed, memory never released) is gone.
TEST(Runtime, SeveralRunsInOneRuntime) {
  grma::runtime rt(test_settings(4));
  for (int ranks : {2, 5, 0, 16, 3}) {  // 0: the settings' 4
    const int expected = ranks == 0 ? 4 : ranks;
    SCOPED_TRACE("ranks_per_device " + std::to_string(ranks));
    rank_findings findings(expected);
    run_checked(rt, findings,
                [&](grma::cpu_rank& r) {
                  const int me = r.rank(grma::world);
                  findings.check(me, r.size(grma::world) == expected, "world size ",
                                 r.size(grma::world));
                  grma::window w = r.window_create(grma::world, nullptr, 0);
                  findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag),
                                 "a notification from an earlier run");
                  exchange_and_check(r, findings, 3, std::uint64_t(ranks));
                  // Leave things behind for the next run to ignore.
                  r.put_notify(w, (me + 1) % expected, 0, 0, nullptr, 1);
                  r.alloc(1000);
                },
                {.ranks_per_device = ranks});
  }
}

// Two runtimes in two host threads at the same time, with different rank
// counts, each running an exchange that checks its data: they share nothing.
TEST(Runtime, TwoRuntimesRunConcurrently) {
  constexpr int rounds = 50;
  const int ranks[2] = {3, 8};
  std::vector<rank_findings> findings = {rank_findings(ranks[0]), rank_findings(ranks[1])};
  std::string failures[2];
  std::vector<std::thread> hosts;
  for (int i = 0; i < 2; ++i) {
    hosts.emplace_back([&, i] {
      try {
        grma::runtime rt(test_settings(ranks[i]));
        for (int run = 0; run < 3; ++run)
          rt.run([&](grma::cpu_rank& r) {
            exchange_and_check(r, findings[i], rounds, std::uint64_t(100 * i + run));
          });
      } catch (const grma::error& e) {
        failures[i] = e.what();
      }
    });
  }
  for (std::thread& t : hosts) t.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(failures[i], "") << "runtime " << i;
    EXPECT_TRUE(findings[i].none()) << "runtime " << i;
  }
}

struct shared_data {
  int input[16];
  int output[16];
  std::uint64_t exchanged[16];  // each rank's part, registered in a window
};

// Userdata is copied into the run, changed there, and copied back after it;
// a failed run leaves the host's copy as it was. Ranks can register their part
// of userdata in a window and receive puts there.
TEST(Runtime, UserdataCopiedInAndBack) {
  constexpr int ranks = 6;
  grma::runtime rt(test_settings(ranks));
  shared_data data{};
  for (int i = 0; i < 16; ++i) {
    data.input[i] = 1000 + i;
    data.output[i] = -1;
  }
  for (int run = 0; run < 2; ++run) {
    rank_findings findings(ranks);
    run_checked(rt, findings,
                [&](grma::cpu_rank& r) {
                  const int me = r.rank(grma::world), n = r.size(grma::world);
                  findings.check(me, r.userdata_size() == sizeof(shared_data), "userdata_size ",
                                 r.userdata_size());
                  auto* d = r.userdata<shared_data>();
                  findings.check(me, d != &data, "userdata is the host's buffer, not a copy");
                  findings.check(me, d->input[me] == 1000 + me + run, "input ", d->input[me]);
                  findings.check(me, d->output[me] == (run == 0 ? -1 : 2 * (1000 + me)),
                                 "output from the last run ", d->output[me]);
                  d->output[me] = 2 * d->input[me];
                  d->input[me] += 1;
                  grma::window w =
                      r.window_create(grma::world, &d->exchanged[me], sizeof(std::uint64_t));
                  auto* outgoing = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
                  *outgoing = mix(me, run);
                  r.put_notify(w, (me + 1) % n, 0, sizeof(std::uint64_t), outgoing, 0);
                  r.wait_notifications(w, (me + n - 1) % n, 0, 1);
                  r.window_free(w);
                  r.free(outgoing);
                },
                {.userdata = &data, .userdata_size = sizeof data});
    for (int i = 0; i < ranks; ++i) {
      EXPECT_EQ(data.input[i], 1000 + i + run + 1) << "rank " << i;
      EXPECT_EQ(data.output[i], 2 * (1000 + i + run)) << "rank " << i;
      EXPECT_EQ(data.exchanged[i], mix((i + ranks - 1) % ranks, run)) << "rank " << i;
    }
    for (int i = ranks; i < 16; ++i) EXPECT_EQ(data.output[i], -1) << "unused entry " << i;
  }

  const shared_data before = data;
  auto change_then_fail = [](grma::cpu_rank& r) {
    r.userdata<shared_data>()->output[r.rank(grma::world)] = 7;
    r.barrier(grma::world);
    GRMA_ASSERT(r, r.rank(grma::world) != 2);
  };
  const grma::launch_options options{.userdata = &data, .userdata_size = sizeof data};
  EXPECT_THROW(rt.run(change_then_fail, options), grma::error);
  EXPECT_EQ(std::memcmp(&before, &data, sizeof data), 0) << "a failed run changed userdata";
}

// launch returns while the ranks run; wait() returns when they are done
// (with userdata back) or throws the run's error; one job at a time.
TEST(Runtime, LaunchedJobsRunWhileTheHostGoesOn) {
  constexpr int ranks = 4;
  grma::runtime rt(test_settings(ranks));
  struct result {
    double seconds[ranks];
    std::uint64_t sum;
  } out{};
  auto slow_sum = [](grma::cpu_rank& r) {
    auto* word = static_cast<std::uint64_t*>(r.calloc_symmetric(1, sizeof(std::uint64_t)));
    const double start = r.wtime();
    while (r.wtime() - start < 0.2) std::this_thread::yield();
    r.atomic_add(word, std::uint64_t(r.rank(grma::world) + 1), 0);
    r.quiet();
    r.barrier(grma::team_world);
    auto* o = r.userdata<result>();
    o->seconds[r.rank(grma::world)] = r.wtime() - start;
    if (r.rank(grma::world) == 0) o->sum = *word;
    r.barrier(grma::team_world);
    r.free_symmetric(word);
  };
  grma::job j = rt.launch(slow_sum, {.userdata = &out, .userdata_size = sizeof out});
  EXPECT_TRUE(j.valid());
  EXPECT_FALSE(j.test()) << "the ranks spin for 0.2 s";
  try {
    rt.run(slow_sum);
    ADD_FAILURE() << "a second run started while the job ran";
  } catch (const grma::error& e) {
    EXPECT_STREQ(e.what(),
                 "grma: this runtime is running a job already: wait() for the launched job first "
                 "(a runtime runs one job at a time)");
  }
  j.wait();
  EXPECT_TRUE(j.test());
  EXPECT_FALSE(j.valid());
  EXPECT_EQ(out.sum, std::uint64_t(ranks * (ranks + 1) / 2));
  for (int i = 0; i < ranks; ++i) EXPECT_GE(out.seconds[i], 0.2) << "rank " << i;

  // A failing job's error comes from wait(); the runtime runs again after.
  grma::job failing = rt.launch([](grma::cpu_rank& r) { GRMA_ASSERT(r, r.rank(grma::world) != 1); });
  try {
    failing.wait();
    ADD_FAILURE() << "wait() returned";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::assertion_failed);
    EXPECT_EQ(e.rank(), 1);
  }
  { grma::job dropped = rt.launch([](grma::cpu_rank& r) { r.barrier(grma::world); }); }
  rt.run([](grma::cpu_rank& r) { r.barrier(grma::world); });
}

// info() describes the layout a run would have, and the run agrees.
TEST(Runtime, InfoDescribesTheJob) {
  grma::runtime rt(test_settings(4));
  EXPECT_EQ(rt.backend(), grma::backend_kind::cpu);
  EXPECT_EQ(rt.settings().ranks_per_device, 4);
  for (int requested : {0, 1, 7}) {
    SCOPED_TRACE("ranks_per_device " + std::to_string(requested));
    const int ranks = requested == 0 ? 4 : requested;
    rank_findings findings(ranks);
    grma::rank_info info;
    auto check_layout = [&](grma::cpu_rank& r) {
      const int me = r.rank(grma::world);
      findings.check(me, r.size(grma::world) == info.rank_count, "world size ",
                     r.size(grma::world));
      findings.check(me, r.size(grma::device) == info.ranks_per_device, "device size ",
                     r.size(grma::device));
      findings.check(me, r.threads() == info.threads_per_rank, "threads ", r.threads());
      findings.check(me, r.userdata_size() == 0, "userdata_size ", r.userdata_size());
    };
    info = rt.info(check_layout, {.ranks_per_device = requested});
    EXPECT_EQ(info.rank_count, ranks);
    EXPECT_EQ(info.rank_start, 0);
    EXPECT_EQ(info.rank_responsible, ranks);
    EXPECT_EQ(info.ranks_per_device, ranks);
    EXPECT_EQ(info.threads_per_rank, 1);
    EXPECT_EQ(info.device_index, 0);
    EXPECT_EQ(info.device_count, 1);
    EXPECT_EQ(info.node_index, 0);
    EXPECT_EQ(info.node_count, 1);
    EXPECT_EQ(info.process_index, 0);
    EXPECT_EQ(info.process_count, 1);
    run_checked(rt, findings, check_layout, {.ranks_per_device = requested});
  }
}

class RuntimeRanks : public testing::TestWithParam<int> {};

// Every rank allocates and frees blocks of many sizes, keeping several alive
// and filled with its own pattern; a block that overlapped another (of this
// rank or any other) would lose its pattern. Afterwards the heap is whole
// again: one block of nearly all of it fits.
TEST_P(RuntimeRanks, AllocAndFreeManyTimes) {
  constexpr int operations = 1500;
  constexpr int live_blocks = 8;
  constexpr std::size_t max_block = 20000;
  const int ranks = GetParam();
  grma::settings s = test_settings(ranks);
  s.heap_size = 16 << 20;
  rank_findings findings(ranks);
  grma::runtime rt(s);
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    struct block {
      std::uint8_t* p = nullptr;
      std::size_t bytes = 0;
      std::uint64_t seed = 0;
    };
    block live[live_blocks];
    for (int op = 0; op < operations; ++op) {
      block& b = live[mix(me, op) % live_blocks];
      if (b.p != nullptr) {
        const std::string d = pattern_difference(b.p, b.bytes, b.seed);
        findings.check(me, d.empty(), "operation ", op, ": a live block changed: ", d);
        r.free(b.p);
      }
      b.bytes = op % 97 == 0 ? 0 : 1 + std::size_t(mix(op, me) % max_block);
      b.seed = mix(me, op, 5);
      b.p = static_cast<std::uint8_t*>(r.alloc(b.bytes));
      findings.check(me, b.p != nullptr, "alloc(", b.bytes, ") returned null");
      findings.check(me, reinterpret_cast<std::uintptr_t>(b.p) % 64 == 0, "alloc(", b.bytes,
                     ") is not 64-byte aligned");
      fill_pattern(b.p, b.bytes, b.seed);
    }
    for (block& b : live) {
      const std::string d = pattern_difference(b.p, b.bytes, b.seed);
      findings.check(me, d.empty(), "at the end: a live block changed: ", d);
      r.free(b.p);
    }
    r.free(nullptr);  // allowed, does nothing
    r.barrier(grma::world);
    if (me == 0) {
      void* whole = r.alloc((15 << 20) + (1 << 19));
      findings.check(me, whole != nullptr, "the heap did not coalesce");
      r.free(whole);
    }
    r.barrier(grma::world);
  });
}

// Windows may overlap: a put through one window lands in memory that another
// window (over the same or an overlapping range) shows, and its notification
// belongs to the window it was made through (a notification on the wrong
// window would hang a wait or be left over). A put or get whose source and
// destination are the same address copies nothing and still notifies; one
// whose ranges partly overlap moves the data as memmove would.
TEST_P(RuntimeRanks, OverlappingWindowsAndNoCopyAccess) {
  constexpr std::size_t bytes = 4096, half = bytes / 2;
  const int ranks = GetParam();
  rank_findings findings(ranks);
  std::vector<std::uint8_t*> buffers(std::size_t(ranks), nullptr);
  grma::runtime rt(test_settings(ranks));
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* buffer = static_cast<std::uint8_t*>(r.alloc(bytes));
    auto* outbox = static_cast<std::uint8_t*>(r.alloc(bytes));
    buffers[std::size_t(me)] = buffer;
    grma::window whole = r.window_create(grma::world, buffer, bytes);
    grma::window upper = r.window_create(grma::world, buffer + half, half);
    grma::window same = r.window_create(grma::device, buffer, bytes);
    auto no_notification_left = [&](const char* when) {
      for (grma::window w : {whole, upper, same})
        findings.check(me, !r.test_notifications(w, grma::any_source, grma::any_tag), when,
                       ": a notification too many on window ", w.slot);
    };

    // Through `whole` into the upper half; seen through `upper`.
    fill_pattern(outbox, 300, mix(me, 1));
    r.put_notify(whole, right, half + 100, 300, outbox, 1);
    r.wait_notifications(whole, left, 1, 1);
    std::string d = pattern_difference(buffer + half + 100, 300, mix(left, 1));
    findings.check(me, d.empty(), "put through whole: ", d);

    // Through `upper`, past what the first put wrote; then through `same`,
    // which spans exactly what `whole` spans.
    fill_pattern(outbox, 200, mix(me, 2));
    r.put_notify(upper, right, 400, 200, outbox, 2);
    fill_pattern(outbox, 50, mix(me, 3));
    r.put_notify(same, right, 10, 50, outbox, 3);
    r.wait_notifications(upper, left, 2, 1);
    r.wait_notifications(same, left, 3, 1);
    d = pattern_difference(buffer + half + 400, 200, mix(left, 2));
    findings.check(me, d.empty(), "put through upper: ", d);
    d = pattern_difference(buffer + 10, 50, mix(left, 3));
    findings.check(me, d.empty(), "put through same: ", d);
    r.barrier(grma::world);
    no_notification_left("after the puts");
    r.barrier(grma::world);

    // No copy: to myself from the very bytes the put targets.
    fill_pattern(buffer, bytes, mix(me, 4));
    r.put_notify(whole, me, 64, 500, buffer + 64, 4);
    r.wait_notifications(whole, me, 4, 1);
    r.get_notify(same, me, 700, 300, buffer + 700, 5);
    r.wait_notifications(same, me, 5, 1);
    r.put_notify(upper, me, 0, half, buffer + half, 6);  // the same bytes through another window
    r.wait_notifications(upper, me, 6, 1);
    d = pattern_difference(buffer, bytes, mix(me, 4));
    findings.check(me, d.empty(), "no-copy access changed the data: ", d);

    // No copy across ranks: the source is the target's own memory, which the
    // target filled itself.
    r.barrier(grma::world);
    std::uint8_t* theirs = buffers[std::size_t(right)];
    r.put_notify(whole, right, 1000, 1000, theirs + 1000, 7);
    r.wait_notifications(whole, left, 7, 1);
    d = pattern_difference(buffer, bytes, mix(me, 4));
    findings.check(me, d.empty(), "no-copy put from another rank changed the data: ", d);
    r.barrier(grma::world);
    no_notification_left("after the no-copy puts");

    // Partly overlapping source and destination: memmove semantics.
    r.put_notify(whole, me, 0, 1000, buffer + 10, 8);
    r.wait_notifications(whole, me, 8, 1);
    d = pattern_difference(buffer, 1000, mix(me, 4), 10);
    findings.check(me, d.empty(), "overlapping put: ", d);
    r.get_notify(whole, me, 2000, 1000, buffer + 2020, 9);  // destination above the source
    r.wait_notifications(whole, me, 9, 1);
    d = pattern_difference(buffer + 2020, 1000, mix(me, 4), 2000);
    findings.check(me, d.empty(), "overlapping get: ", d);

    r.barrier(grma::world);
    no_notification_left("at the end");
    r.window_free(same);
    r.window_free(upper);
    r.window_free(whole);
    r.free(outbox);
    r.free(buffer);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, RuntimeRanks, testing::ValuesIn(rank_counts), rank_count_name);

// r.log() prints whole lines "[rank N] text" on stdout, each once, a rank's
// lines in the order it wrote them, with every value type formatted; a line
// too long for a log record is cut and ends in "…".
TEST(Runtime, LogLinesNameTheirRank) {
  constexpr int ranks = 5, lines_per_rank = 40;
  const std::string long_text(300, 'x');
  const std::string long_text_cut = std::string(grma::detail::log_text_bytes - 3, 'x') + "\u2026";
  rank_findings findings(ranks);
  grma::runtime rt(test_settings(ranks));
  testing::internal::CaptureStdout();
  run_checked(rt, findings, [&](grma::cpu_rank& r) {
    const int me = r.rank(grma::world);
    for (int i = 0; i < lines_per_rank; ++i) r.log() << "line " << i << " of rank " << me;
    r.log() << "values: " << -42 << ' ' << 42u << ' ' << ~std::uint64_t{0} << ' ' << 2.5 << ' '
            << true << ' ' << "text";
    r.log() << long_text.c_str();
  });
  const std::string out = testing::internal::GetCapturedStdout();

  std::vector<int> next_line(ranks, 0);
  std::vector<int> value_lines(ranks, 0);
  std::vector<int> long_lines(ranks, 0);
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    int rank = -1, text_at = 0;
    if (std::sscanf(line.c_str(), "[rank %d] %n", &rank, &text_at) != 1 || text_at == 0 ||
        rank < 0 || rank >= ranks) {
      ADD_FAILURE() << "a line without a rank: " << line;
      continue;
    }
    const std::string text = line.substr(std::size_t(text_at));
    int i = -1, of = -1;
    char rest[2];
    if (std::sscanf(text.c_str(), "line %d of rank %d%1s", &i, &of, rest) == 2) {
      EXPECT_EQ(of, rank) << line;
      EXPECT_EQ(i, next_line[rank]) << "out of order or repeated: " << line;
      next_line[rank] = i + 1;
    } else if (text.starts_with("values:")) {
      EXPECT_EQ(text, "values: -42 42 18446744073709551615 2.5 true text") << line;
      ++value_lines[rank];
    } else if (text.starts_with("xxx")) {
      EXPECT_EQ(text, long_text_cut) << line;
      ++long_lines[rank];
    } else {
      ADD_FAILURE() << "unexpected output line: " << line;
    }
  }
  for (int rank = 0; rank < ranks; ++rank) {
    EXPECT_EQ(next_line[rank], lines_per_rank) << "rank " << rank;
    EXPECT_EQ(value_lines[rank], 1) << "rank " << rank;
    EXPECT_EQ(long_lines[rank], 1) << "rank " << rank;
  }
}

}  // namespace
}  // namespace grma_test
