// What needs the host around the runs: two runtimes at once, a job launched
// while the host goes on, and a failed run's userdata. The rank programs' own
// runtime behaviour (several runs in one runtime, userdata in and back, the
// job's layout, the heap, overlapping windows, the log) is the conformance
// suite's, tests/conformance/runtime_test.cu, on every backend and job shape.
#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// A failed run leaves the host's userdata as it was, although every rank
// changed its copy before the failure. (A failing run is a GPU process's
// last, so this stays out of the conformance suite.)
TEST(Runtime, AFailedRunLeavesUserdataAsItWas) {
  constexpr int ranks = 6;
  grma::runtime rt(test_settings(ranks));
  int data[16];
  for (int i = 0; i < 16; ++i) data[i] = 1000 + i;
  int before[16];
  std::memcpy(before, data, sizeof data);
  auto change_then_fail = [](grma::cpu_rank& r) {
    r.userdata<int>()[r.rank(grma::world)] = 7;
    r.barrier(grma::world);
    GRMA_ASSERT(r, r.rank(grma::world) != 2);
  };
  try {
    rt.run(change_then_fail, {.userdata = data, .userdata_size = sizeof data});
    ADD_FAILURE() << "the run returned";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::assertion_failed) << e.what();
    EXPECT_EQ(e.rank(), 2) << e.what();
  }
  EXPECT_EQ(std::memcmp(before, data, sizeof data), 0) << "a failed run changed userdata";

  // The runtime runs again after, and that run's changes come back.
  rt.run([](grma::cpu_rank& r) { r.userdata<int>()[r.rank(grma::world)] += 1; },
         {.userdata = data, .userdata_size = sizeof data});
  for (int i = 0; i < 16; ++i) EXPECT_EQ(data[i], i < ranks ? 1001 + i : 1000 + i) << "entry " << i;
}

// A process that plays two nodes of two devices each (GRMA_NODES): its
// devices of one node reach each other in its memory, the others are
// another node's; it describes itself as on the first node, and a put
// between the nodes goes through the engines.
TEST(Runtime, NodesInAProcessAreOtherNodesToEachOther) {
  grma::settings s = test_settings(2);
  s.nodes = 2;
  s.devices = 4;
  grma::runtime rt(s);
  const grma::topology t = rt.topology();
  ASSERT_EQ(t.devices.size(), 4u);
  for (const grma::device_description& d : t.devices) EXPECT_EQ(d.node, d.index / 2) << d.index;
  EXPECT_EQ(t.paths[0][1], grma::path_kind::process_memory);
  EXPECT_EQ(t.paths[1][2], grma::path_kind::other_node);
  EXPECT_EQ(t.paths[3][0], grma::path_kind::other_node);
  const grma::rank_info info = rt.info([](grma::cpu_rank&) {});
  EXPECT_EQ(info.node_count, 2);
  EXPECT_EQ(info.node_index, 0);
  EXPECT_EQ(info.device_count, 2);
  EXPECT_EQ(info.rank_responsible, 8);
  std::uint64_t seen[8] = {};
  rt.run(
      [](grma::cpu_rank& r) {
        const int me = r.rank(grma::world), n = r.size(grma::world);
        auto* inbox = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
        auto* outbox = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
        grma::window w = r.window_create(grma::world, inbox, sizeof(std::uint64_t));
        *outbox = 1000 + std::uint64_t(me);
        const int across = (me + n / 2) % n;  // on the other node
        r.put_notify(w, across, 0, sizeof(std::uint64_t), outbox, 5);
        r.wait_notifications(w, across, 5, 1);
        r.userdata<std::uint64_t>()[me] = *inbox;
        r.window_free(w);
      },
      {.userdata = seen, .userdata_size = sizeof seen});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(seen[i], 1000u + std::uint64_t((i + 4) % 8)) << "rank " << i;
}

// A value put's notification names its place in 25 bits of units of its
// size: one farther into its range (a byte at 32 MiB and past) is written
// before its notification, as put_notify's data is; nearer, it is carried
// and lands when matched. Both are in place once matched, and the
// envelopes hold them.
TEST(Runtime, ValuePutsLandPastThePlacesANotificationNames) {
  constexpr std::size_t far = std::size_t(1) << 25;  // the first byte a notification cannot name
  grma::settings s = test_settings(2);
  s.heap_size = std::uint64_t(160) << 20;
  grma::runtime rt(s);
  std::uint64_t seen[6] = {};
  rt.run(
      [](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint8_t*>(r.alloc(far + 64));
        grma::window w = r.window_create(grma::world, range, far + 64);
        if (r.rank(grma::world) == 0) {
          r.put_value_notify(w, 1, far + 3, std::uint8_t{0xa7}, 1);
          r.put_value_notify(w, 1, far - 1, std::uint8_t{0x5c}, 2);
          r.put_value_notify(w, 1, far + 8, std::uint64_t{0x0123456789abcdefull}, 3);
        } else {
          auto* out = r.userdata<std::uint64_t>();
          for (int tag = 1; tag <= 3; ++tag) out[tag - 1] = r.wait_notification(w, 0, tag).immediate;
          out[3] = range[far + 3];
          out[4] = range[far - 1];
          std::memcpy(&out[5], range + far + 8, sizeof(std::uint64_t));
        }
        r.barrier(grma::world);
        r.window_free(w);
        r.free(range);
      },
      {.userdata = seen, .userdata_size = sizeof seen});
  EXPECT_EQ(seen[0], 0xa7u);
  EXPECT_EQ(seen[1], 0x5cu);
  EXPECT_EQ(seen[2], 0x0123456789abcdefull);
  EXPECT_EQ(seen[3], 0xa7u);
  EXPECT_EQ(seen[4], 0x5cu);
  EXPECT_EQ(seen[5], 0x0123456789abcdefull);
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

// The job's world windows, once its ranks have made the first `count`.
std::vector<grma::window> world_windows_once_made(const grma::job& j, std::size_t count = 1) {
  std::vector<grma::window> windows;
  while ((windows = j.world_windows()).size() < count) std::this_thread::yield();
  return windows;
}

// Host access is for jobs launched with it; an offset the host cannot check
// (the target's range is the target engine's to know) fails that request
// alone, with the target engine's refusal, and the job goes on.
TEST(Runtime, HostAccessRefusesWhatItCannotServe) {
  grma::runtime rt(test_settings(2));
  grma::job plain = rt.launch([](grma::cpu_rank& r) { r.barrier(grma::world); });
  try {
    (void)plain.world_windows();
    ADD_FAILURE() << "a job without host access listed its windows";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::invalid_config);
    EXPECT_EQ(e.where(), grma::call::runtime);  // no grma::call of its own
    EXPECT_STREQ(e.what(),
                 "grma: job::world_windows: the job was launched without "
                 "launch_options::host_access");
  }
  std::uint64_t word = 1;
  try {
    (void)plain.atomic_fetch_add(grma::window{0, 1}, 0, 0, 1, &word);
    ADD_FAILURE() << "a job without host access took an atomic";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::invalid_config);
    EXPECT_EQ(e.where(), grma::call::atomic_fetch_add);
    EXPECT_STREQ(e.what(),
                 "grma: job::atomic_fetch_add: the job was launched without "
                 "launch_options::host_access");
  }
  plain.wait();
  try {
    (void)plain.put(grma::window{0, 1}, 0, 0, &word, sizeof word);
    ADD_FAILURE() << "a job handle waited for took a put";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::invalid_config);
    EXPECT_EQ(e.where(), grma::call::put);
    EXPECT_STREQ(e.what(),
                 "grma: job::put: this handle holds no job (not launched, or waited for)");
  }

  // Word 0 is the signal the ranks wait for; the refused requests would
  // have written words 1 to 7. A second window starts 4 bytes into the
  // range, so its 8-byte words are unaligned in the ranks' memory.
  grma::job j = rt.launch(
      [](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint64_t*>(r.alloc(64));
        for (int i = 0; i < 8; ++i) range[i] = 0;
        grma::window w = r.window_create(grma::world, range, 64);
        grma::window skewed =
            r.window_create(grma::world, reinterpret_cast<unsigned char*>(range) + 4, 32);
        r.wait_signal(w, 0, grma::cmp::ge, 1);  // set by the host once its refusals came back
        for (int i = 1; i < 8; ++i) GRMA_ASSERT(r, range[i] == 0);
        r.window_free(skewed);
        r.window_free(w);
      },
      {.host_access = true});
  const std::vector<grma::window> windows = world_windows_once_made(j, 2);
  const std::uint64_t bytes[3] = {1, 2, 3};
  std::uint64_t old = 0;
  struct refused_request {
    grma::host_request request;
    grma::call where;
    std::string what;  // the message after the origin's words
  };
  const std::string slot0 = std::to_string(windows[0].slot),
                    slot1 = std::to_string(windows[1].slot);
  const refused_request refused[] = {
      {j.put(windows[0], 1, 48, bytes, sizeof bytes), grma::call::put,
       "put to rank 1 (24 bytes): refused a request from the host of process 0: offset 48 + size "
       "24 exceeds the 64 bytes registered with window " +
           slot0 + "; nothing was written"},
      {j.put_signal(windows[0], 0, 8, bytes, 8, 64, 1, grma::signal_op::set),
       grma::call::put_signal,
       "put_signal to rank 0 (8 bytes): refused a request from the host of process 0: signal "
       "offset 64 + 8 exceeds the 64 bytes registered with window " +
           slot0 + "; nothing was written"},
      {j.put_signal(windows[1], 0, 0, bytes, 8, 8, 1, grma::signal_op::set), grma::call::put_signal,
       "put_signal to rank 0 (8 bytes): refused a request from the host of process 0: the signal "
       "word at offset 8 of window " +
           slot1 + " is not 8-byte aligned in the target's memory; nothing was written"},
      {j.atomic_fetch_add<std::uint64_t>(windows[1], 1, 8, 1, &old), grma::call::atomic_fetch_add,
       "atomic_fetch_add to rank 1 (8 bytes): refused a request from the host of process 0: the "
       "atomic's 8-byte word at offset 8 of window " +
           slot1 + " is not aligned to its size in the target's memory; nothing was written"},
  };
  for (const refused_request& q : refused) {
    try {
      q.request.wait();
      ADD_FAILURE() << "a request the target cannot serve completed: " << q.what;
    } catch (const grma::error& e) {
      EXPECT_EQ(e.code(), grma::errc::request_refused);
      EXPECT_EQ(e.where(), q.where);
      EXPECT_EQ(e.what(), "grma: job::" + q.what);
    }
  }
  // Larger than a whole heap: no window holds it, and the host says so at
  // once (its source is never read).
  try {
    (void)j.put(windows[0], 1, 0, bytes, std::size_t{1} << 40);
    ADD_FAILURE() << "a put larger than a heap was taken";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::range_outside_window);
    EXPECT_THAT(e.what(), testing::HasSubstr("grma: job::put: 1099511627776 bytes exceed all "));
    EXPECT_THAT(e.what(),
                testing::HasSubstr(" bytes of a device's memory (its heaps and userdata): "
                                   "no window's range holds them"));
  }
  for (int target = 0; target < 2; ++target)
    j.put_signal(windows[0], target, 0, bytes, 0, 0, 1, grma::signal_op::set).wait();
  j.wait();
}

// A job of two ranks with a queue of one, into which the host puts three
// notifications to rank 0 and then a signal: the first notification is in
// place, the other two are held behind it while rank 0 waits for the
// signal, after which it returns without taking them (or, `fail`, fails
// an assertion while rank 1 waits at a barrier).
struct held_notifications {
  grma::job job;
  grma::window window;
  std::vector<grma::host_request> notified;  // the first complete
};

held_notifications hold_two_notifications(grma::runtime& rt, bool fail) {
  grma::job j = rt.launch(
      [fail](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint64_t*>(r.alloc(64));
        for (int i = 0; i < 8; ++i) range[i] = 0;
        grma::window w = r.window_create(grma::world, range, 64);
        if (r.rank(grma::world) == 0) {
          r.wait_signal(w, 0, grma::cmp::ge, 1);
          if (fail) GRMA_ASSERT(r, range[0] == 0);  // the signal made it 1
        }
        r.barrier(grma::world);
      },
      {.host_access = true});
  const grma::window w = world_windows_once_made(j)[0];
  static const std::uint64_t data[3] = {1, 2, 3};
  std::vector<grma::host_request> notified;
  for (int k = 0; k < 3; ++k)
    notified.push_back(j.put_notify(w, 0, std::size_t(8 * (k + 1)), data + k, 8, 9));
  j.put_signal(w, 0, 0, data, 0, 0, 1, grma::signal_op::set).wait();
  notified[0].wait();
  return {std::move(j), w, std::move(notified)};
}

// A host's notified put is complete once its notification is in place at
// the target: where the target's ranks return without taking the held
// ones, their requests fail as the target's engine says (the job itself
// is fine).
TEST(Runtime, AHostNotificationTheTargetNeverTookFailsItsRequest) {
  grma::settings s = test_settings(2);
  s.queue_capacity = 1;
  grma::runtime rt(s);
  held_notifications held = hold_two_notifications(rt, false);
  for (int k = 1; k < 3; ++k) {
    try {
      held.notified[std::size_t(k)].wait();
      ADD_FAILURE() << "notification " << k << " was never taken, yet its request completed";
    } catch (const grma::error& e) {
      EXPECT_EQ(e.code(), grma::errc::request_refused);
      EXPECT_EQ(e.where(), grma::call::put_notify);
      EXPECT_STREQ(e.what(),
                   "grma: job::put_notify to rank 0 (8 bytes): the target's ranks returned "
                   "before they took the "
                   "notification of a request from the host of process 0 (its data is in place)");
    }
    EXPECT_THROW((void)held.notified[std::size_t(k)].test(), grma::error);
  }
  held.job.wait();
}

// The same notifications where the target's rank fails instead of
// returning: their requests say the job failed, as every host call after it.
TEST(Runtime, HostRequestsAfterTheJobFailedSaySo) {
  grma::settings s = test_settings(2);
  s.queue_capacity = 1;
  grma::runtime rt(s);
  held_notifications held = hold_two_notifications(rt, true);
  grma::job& j = held.job;
  const auto expect_failed = [](const grma::error& e, grma::call where, const std::string& text) {
    EXPECT_EQ(e.code(), grma::errc::aborted);
    EXPECT_EQ(e.where(), where);
    EXPECT_EQ(e.what(), text);
  };
  for (int k = 1; k < 3; ++k) {
    try {
      held.notified[std::size_t(k)].wait();
      ADD_FAILURE() << "notification " << k << " was never taken, yet its request completed";
    } catch (const grma::error& e) {
      expect_failed(e, grma::call::put_notify,
                    "grma: job::put_notify to rank 0 (8 bytes): the job failed (its wait() says "
                    "how)");
    }
  }
  while (!j.test()) std::this_thread::yield();
  try {
    const std::uint64_t one = 1;
    (void)j.put(held.window, 1, 0, &one, 8);
    ADD_FAILURE() << "a put into a failed job was taken";
  } catch (const grma::error& e) {
    expect_failed(e, grma::call::put, "grma: job::put: the job failed (its wait() says how)");
  }
  try {
    (void)j.world_windows();
    ADD_FAILURE() << "a failed job listed its windows";
  } catch (const grma::error& e) {
    expect_failed(e, grma::call::runtime,
                  "grma: job::world_windows: the job failed (its wait() says how)");
  }
  EXPECT_THROW(j.wait(), grma::error);
}

// A freed window's handle is told apart from one that names no window;
// after the ranks returned, a host call says so (the job did not fail).
TEST(Runtime, HostCallsSayWhatTheyFound) {
  grma::runtime rt(test_settings(2));
  std::atomic<std::uint64_t> first_window{0};  // slot << 32 | generation, from rank 0
  grma::job j = rt.launch(
      [&first_window](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint64_t*>(r.alloc(16));
        range[0] = range[1] = 0;
        grma::window first = r.window_create(grma::world, range, 8);
        if (r.rank(grma::world) == 0)
          first_window.store(std::uint64_t{first.slot} << 32 | first.generation,
                             std::memory_order_release);
        r.window_free(first);
        grma::window second = r.window_create(grma::world, range + 1, 8);
        r.wait_signal(second, 0, grma::cmp::ge, 1);  // the host is done
        r.window_free(second);
      },
      {.host_access = true});
  std::uint64_t first = 0;
  while ((first = first_window.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
  const grma::window freed{std::uint32_t(first >> 32), std::uint32_t(first)};
  std::vector<grma::window> windows;  // the second
  while ((windows = j.world_windows()).empty() ||
         (windows[0].slot == freed.slot && windows[0].generation == freed.generation))
    std::this_thread::yield();
  const std::uint64_t one = 1;
  try {
    (void)j.put(freed, 0, 0, &one, 8);
    ADD_FAILURE() << "a put into a freed window was taken";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::window_freed);
    EXPECT_EQ(e.where(), grma::call::put);
    EXPECT_EQ(e.what(), "grma: job::put: window {" + std::to_string(freed.slot) + ", " +
                            std::to_string(freed.generation) +
                            "} was freed (job::world_windows() lists the live world windows)");
  }
  try {
    (void)j.atomic_add(grma::window_none, 0, 0, one);
    ADD_FAILURE() << "an atomic on window_none was taken";
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::window_not_created);
    EXPECT_EQ(e.where(), grma::call::atomic_add);
    EXPECT_STREQ(e.what(),
                 "grma: job::atomic_add: window {0, 0} is not a world window of the job "
                 "(job::world_windows() lists the live ones)");
  }
  // Handles the slot never gave: the generation after its latest, and the
  // last one a generation has.
  for (const std::uint32_t generation : {windows[0].generation + 2, ~std::uint32_t{0}}) {
    const grma::window never{windows[0].slot, generation};
    std::uint64_t got = 0;
    try {
      (void)j.get(never, 1, 0, &got, 8);
      ADD_FAILURE() << "a get from a window never created was taken";
    } catch (const grma::error& e) {
      EXPECT_EQ(e.code(), grma::errc::window_not_created);
      EXPECT_EQ(e.where(), grma::call::get);
      EXPECT_EQ(e.what(), "grma: job::get: window {" + std::to_string(never.slot) + ", " +
                              std::to_string(generation) +
                              "} is not a world window of the job (job::world_windows() lists "
                              "the live ones)");
    }
  }
  for (int target = 0; target < 2; ++target)
    j.put_signal(windows[0], target, 0, &one, 0, 0, 1, grma::signal_op::set).wait();
  while (!j.test()) std::this_thread::yield();
  // Once the ranks returned, that is what every call says, before it looks
  // at its arguments (target 99 is no rank).
  for (const int target : {0, 99}) {
    try {
      (void)j.put(windows[0], target, 0, &one, 8);
      ADD_FAILURE() << "a put after the ranks returned was taken";
    } catch (const grma::error& e) {
      EXPECT_EQ(e.code(), grma::errc::invalid_config);
      EXPECT_EQ(e.where(), grma::call::put);
      EXPECT_STREQ(e.what(),
                   "grma: job::put: this process's ranks have returned (host operations go into "
                   "a job while its ranks run)");
    }
  }
  j.wait();
}

// A host's requests into a running job are progress for its watchdog: a
// rank waits longer than the timeout for a word the host adds to every
// 0.15 s (the other rank waits at a barrier meanwhile; no rank's call
// completes).
TEST(Runtime, SlowHostRequestsAreProgress) {
  grma::settings s = test_settings(2);
  s.timeout_seconds = 0.5;
  grma::runtime rt(s);
  grma::job j = rt.launch(
      [](grma::cpu_rank& r) {
        auto* word = static_cast<std::uint64_t*>(r.alloc(sizeof(std::uint64_t)));
        *word = 0;
        grma::window w = r.window_create(grma::world, word, sizeof(std::uint64_t));
        if (r.rank(grma::world) == 0) r.wait_signal(w, 0, grma::cmp::ge, 6);
        r.barrier(grma::world);
        r.window_free(w);
      },
      {.host_access = true});
  const std::vector<grma::window> windows = world_windows_once_made(j);
  for (int k = 0; k < 6; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    j.atomic_add(windows[0], 0, 0, std::uint64_t{1}).wait();
  }
  j.wait();
}

// job::world_windows lists the windows in the order the ranks created them,
// on one node and across nodes (whose window tables fill from the other end).
TEST(Runtime, HostListsWorldWindowsInCreationOrder) {
  for (const int nodes : {1, 2}) {
    grma::settings s = test_settings(2);
    s.nodes = nodes;
    s.devices = nodes;
    grma::runtime rt(s);
    grma::job j = rt.launch(
        [](grma::cpu_rank& r) {
          auto* range = static_cast<std::uint64_t*>(r.alloc(3 * 2 * sizeof(std::uint64_t)));
          grma::window w[3];
          for (int k = 0; k < 3; ++k) {
            range[2 * k] = 0;
            range[2 * k + 1] = 100 + std::uint64_t(k);
            w[k] = r.window_create(grma::world, range + 2 * k, 2 * sizeof(std::uint64_t));
          }
          r.wait_signal(w[0], 0, grma::cmp::ge, 1);
          for (int k = 2; k >= 0; --k) r.window_free(w[k]);
        },
        {.host_access = true});
    std::vector<grma::window> windows;
    while ((windows = j.world_windows()).size() < 3) std::this_thread::yield();
    for (int k = 0; k < 3; ++k) {
      std::uint64_t marker = 0;
      j.get(windows[std::size_t(k)], 0, 8, &marker, 8).wait();
      EXPECT_EQ(marker, 100u + std::uint64_t(k)) << nodes << " nodes, window " << k;
    }
    // Every window's word, the first last (it lets the ranks free them):
    // listed in another order, a rank would not wait where the signal went.
    const std::uint64_t none = 0;
    for (int k = 2; k >= 0; --k)
      for (int target = 0; target < 2 * nodes; ++target)
        j.put_signal(windows[std::size_t(k)], target, 0, &none, 0, 0, 1, grma::signal_op::set)
            .wait();
    j.wait();
  }
}

// A rank names a host as a source (rank::host_source; job::host_source on
// that host): a wait for it takes the host's notification past an older
// one from a rank with the same tag, which stays for a wait on that rank.
// A source past the hosts', or a process without host threads, fails the
// rank with the counts.
TEST(Runtime, RanksMatchAHostAsASource) {
  grma::runtime rt(test_settings(2));
  grma::job j = rt.launch(
      [](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint64_t*>(r.alloc(2 * sizeof(std::uint64_t)));
        range[0] = range[1] = 0;
        grma::window w = r.window_create(grma::world, range, 2 * sizeof(std::uint64_t));
        const int host = r.host_source(0);
        GRMA_ASSERT(r, host == r.size(grma::world));
        const std::uint64_t mine = 11;
        if (r.rank(grma::world) == 1) r.put_notify(w, 0, 8, sizeof mine, &mine, 5, 7);
        r.barrier(grma::world);  // rank 1's notification is in rank 0's queue
        if (r.rank(grma::world) == 0) {
          r.put_signal(w, 0, 0, 0, nullptr, 0, 1, grma::signal_op::set);  // "host, send"
          const grma::envelope from_host = r.wait_notification(w, host, 5);
          GRMA_ASSERT(r, from_host.source == host && from_host.immediate == 42);
          const grma::envelope from_rank = r.wait_notification(w, 1, 5);
          GRMA_ASSERT(r, from_rank.source == 1 && from_rank.immediate == 7);
          grma::envelope stray{};
          GRMA_ASSERT(r, !r.test_notification(w, grma::any_source, grma::any_tag, stray));
        }
        r.barrier(grma::world);
        r.window_free(w);
      },
      {.host_access = true});
  const std::vector<grma::window> windows = world_windows_once_made(j);
  EXPECT_EQ(j.host_source(), 2);
  for (std::uint64_t go = 0; go == 0;) j.atomic_fetch(windows[0], 0, 0, &go).wait();
  const std::uint64_t none = 0;
  j.put_notify(windows[0], 0, 0, &none, 0, 5, 42).wait();
  j.wait();

  const auto fails = [&](auto body, const char* what) {
    try {
      rt.launch(body, {.host_access = true}).wait();
      ADD_FAILURE() << "not refused: " << what;
    } catch (const grma::error& e) {
      EXPECT_STREQ(e.what(), what);
    }
  };
  fails(
      [](grma::cpu_rank& r) {
        if (r.rank(grma::world) == 1) (void)r.host_source(1);
      },
      "grma: rank 1: host_source: process 1 has no host source: the job's host threads are those "
      "of processes 0 to 0");
  fails(
      [](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint64_t*>(r.alloc(8));
        grma::window w = r.window_create(grma::world, range, 8);
        if (r.rank(grma::world) == 0) r.wait_notifications(w, 3, 0, 1);
        r.window_free(w);
      },
      "grma: rank 0: wait_notifications: rank 3 is out of range: communicator world has 2 ranks, "
      "and host sources 2 to 2");
}

// Each host operation completes on its own: notifications held behind a
// target's full queue complete once it takes them, while a later get (and
// the signal that lets the target take them) completes at once.
TEST(Runtime, HostNotificationsBehindAFullQueueCompleteOnTheirOwn) {
  grma::settings s = test_settings(2);
  s.queue_capacity = 4;
  grma::runtime rt(s);
  constexpr int notifications = 6;
  grma::job j = rt.launch(
      [](grma::cpu_rank& r) {
        auto* range = static_cast<std::uint64_t*>(r.alloc(9 * sizeof(std::uint64_t)));
        for (int i = 0; i < 9; ++i) range[i] = i < 8 ? std::uint64_t(i) : 0;  // 8: the signal
        grma::window w = r.window_create(grma::world, range, 9 * sizeof(std::uint64_t));
        if (r.rank(grma::world) == 0) {
          r.wait_signal(w, 64, grma::cmp::ge, 1);
          r.wait_notifications(w, grma::any_source, 7, notifications);
        }
        r.barrier(grma::world);
        r.window_free(w);
      },
      {.host_access = true});
  const std::vector<grma::window> windows = world_windows_once_made(j);
  const grma::window w = windows[0];
  std::uint64_t values[notifications];
  std::vector<grma::host_request> notified;
  for (int i = 0; i < notifications; ++i) {
    values[i] = 100 + std::uint64_t(i);
    notified.push_back(j.put_notify(w, 0, 8 * std::size_t(i), &values[i], 8, 7));
  }
  std::uint64_t got = 0;
  j.get(w, 0, 56, &got, 8).wait();  // behind the notifications, not held by them
  EXPECT_EQ(got, 7u);
  EXPECT_FALSE(notified[notifications - 1].test()) << "a notification behind a full queue";
  const std::uint64_t one = 1;
  j.put_signal(w, 0, 0, nullptr, 0, 64, one, grma::signal_op::add).wait();
  for (const grma::host_request& q : notified) q.wait();
  j.wait();
}

}  // namespace
}  // namespace grma_test
