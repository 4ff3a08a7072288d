// The GASPI layer (grma/gaspi.hpp), portable: every call of the layer on
// every path of the matrix, its data checked byte for byte, its
// notifications and atomics counted exactly, its statuses checked, and its
// time limits run out and retried (suite Gaspi).
#include <cstddef>
#include <cstdint>
#include <grma/gaspi.hpp>

#include "support.hpp"

namespace conformance {
namespace {

namespace gaspi = grma::gaspi;

class Gaspi : public testing::TestWithParam<config> {};

// Every call of these programs must return success, unless the test says.
#define GASPI_OK(r, rec, expression)                                                    \
  do {                                                                                  \
    const gaspi::status gaspi_ok_status = (expression);                                 \
    CONF_EXPECT(r, rec, gaspi_ok_status == gaspi::success, int(gaspi_ok_status), 0, 0); \
  } while (0)

// Spins for `seconds` of the rank's clock (thread 0's, for all threads).
template <class Rank>
GRMA_HOST_DEVICE void pause(Rank& r, double seconds) {
  if (r.thread() == 0) {
    const double until = r.wtime() + seconds;
    while (r.wtime() < until) relax();
  }
  r.sync_threads();
}

// ---- one-sided calls ----------------------------------------------------------------------

// Segment 0 holds what a rank sends, segment 1 what it receives. Each form
// of write and read moves a pattern of its own between ring neighbours, at
// offsets and sizes that end inside a copy step; notifications tell the
// receiver, at the first and the last id, and one warp makes a call too.
struct gaspi_one_sided {
  static constexpr std::size_t bytes = 5000;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    gaspi::rank_t me = -1, n = -1;
    GASPI_OK(r, rec, g.proc_rank(&me));
    GASPI_OK(r, rec, g.proc_num(&n));
    CONF_EXPECT(r, rec, me == r.rank(grma::world) && n == r.size(grma::world), me, n, 0);
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    GASPI_OK(r, rec, g.segment_create(0, bytes, gaspi::group_all, gaspi::block));
    GASPI_OK(r, rec,
             g.segment_create(1, bytes, gaspi::group_all, gaspi::block, gaspi::mem_initialized));
    void* pointer = nullptr;
    GASPI_OK(r, rec, g.segment_ptr(0, &pointer));
    auto* out = static_cast<unsigned char*>(pointer);
    GASPI_OK(r, rec, g.segment_ptr(1, &pointer));
    auto* in = static_cast<unsigned char*>(pointer);
    std::size_t size = 0;
    int count = 0, ids = 0;
    GASPI_OK(r, rec, g.segment_size(1, next, &size));
    GASPI_OK(r, rec, g.segment_num(&count));
    GASPI_OK(r, rec, g.notification_num(&ids));
    CONF_EXPECT(r, rec, size == bytes && count == 2 && ids == 1024, size, count, ids);
    // mem_initialized: zero.
    for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
      if (in[i] != 0) record_failure(rec, __LINE__, (long long)i, in[i], 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));  // before anyone writes there
    const int last = ids - 1;
    gaspi::notification_id_t id = -1;
    gaspi::notification_t value = 0;

    // write, then notify on the same queue: the notification comes after the data.
    fill(r, out, bytes, mix(std::uint64_t(me), 1));
    GASPI_OK(r, rec, g.write(0, 3, next, 1, 5, 3001, 2, gaspi::block));
    GASPI_OK(r, rec, g.notify(1, next, last, 77, 2, gaspi::block));
    GASPI_OK(r, rec, g.notify_waitsome(1, last, 1, &id, gaspi::block));
    GASPI_OK(r, rec, g.notify_reset(1, last, &value));
    CONF_EXPECT(r, rec, id == last && value == 77, id, value, 0);
    CONF_CHECK_PATTERN(r, rec, in + 5, 3001, mix(std::uint64_t(previous), 1), 3, 1);
    GASPI_OK(r, rec, g.wait(2, gaspi::block));
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));

    // write_notify at id 0; a reset of an id nobody notified takes 0.
    fill(r, out, bytes, mix(std::uint64_t(me), 2));
    GASPI_OK(r, rec, g.write_notify(0, 0, next, 1, 0, bytes, 0, 0x80000001u, 0, gaspi::block));
    GASPI_OK(r, rec, g.notify_waitsome(1, 0, 3, &id, gaspi::block));
    GASPI_OK(r, rec, g.notify_reset(1, id, &value));
    CONF_EXPECT(r, rec, id == 0 && value == 0x80000001u, id, value, 0);
    GASPI_OK(r, rec, g.notify_reset(1, 1, &value));
    CONF_EXPECT(r, rec, value == 0, value, 0, 0);
    CONF_CHECK_PATTERN(r, rec, in, bytes, mix(std::uint64_t(previous), 2), 0, 2);
    GASPI_OK(r, rec, g.wait(0, gaspi::block));
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));

    // read of what the next rank holds in segment 0 (its pattern 2), into
    // segment 1; read_notify sets this rank's own id 9 once it is here.
    GASPI_OK(r, rec, g.read(1, 100, next, 0, 17, 999, 1, gaspi::block));
    GASPI_OK(r, rec, g.wait(1, gaspi::block));
    CONF_CHECK_PATTERN(r, rec, in + 100, 999, mix(std::uint64_t(next), 2), 17, 3);
    GASPI_OK(r, rec, g.read_notify(1, 2000, next, 0, 0, 1500, 9, 1, gaspi::block));
    GASPI_OK(r, rec, g.notify_waitsome(1, 9, 1, &id, gaspi::block));
    GASPI_OK(r, rec, g.notify_reset(1, 9, &value));
    CONF_EXPECT(r, rec, id == 9 && value == 1, id, value, 0);
    CONF_CHECK_PATTERN(r, rec, in + 2000, 1500, mix(std::uint64_t(next), 2), 0, 4);
    GASPI_OK(r, rec, g.wait(1, gaspi::block));
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));

    // Lists: three pieces each, write_list_notify's notification after all.
    const gaspi::segment_id_t locals[3] = {0, 0, 0}, remotes[3] = {1, 1, 1};
    const gaspi::offset_t from[3] = {1, 700, 4000}, to[3] = {0, 1000, 3000};
    const std::size_t sizes[3] = {600, 1, 1000};
    fill(r, out, bytes, mix(std::uint64_t(me), 3));
    GASPI_OK(
        r, rec,
        g.write_list_notify(3, locals, from, next, remotes, to, sizes, 1, 500, 3, 4, gaspi::block));
    GASPI_OK(r, rec, g.notify_waitsome(1, 400, 200, &id, gaspi::block));
    GASPI_OK(r, rec, g.notify_reset(1, id, &value));
    CONF_EXPECT(r, rec, id == 500 && value == 3, id, value, 0);
    for (int k = 0; k < 3; ++k)
      CONF_CHECK_PATTERN(r, rec, in + to[k], sizes[k], mix(std::uint64_t(previous), 3), from[k],
                         10 + k);
    int posted = -1;
    GASPI_OK(r, rec, g.queue_size(4, &posted));
    CONF_EXPECT(r, rec, posted == 4, posted, 0, 0);
    GASPI_OK(r, rec, g.wait(4, gaspi::block));
    GASPI_OK(r, rec, g.queue_size(4, &posted));
    CONF_EXPECT(r, rec, posted == 0, posted, 0, 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    fill(r, out, bytes, mix(std::uint64_t(me), 4));
    GASPI_OK(r, rec, g.write_list(3, locals, from, next, remotes, to, sizes, 5, gaspi::block));
    GASPI_OK(r, rec, g.wait(5, gaspi::block));
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    for (int k = 0; k < 3; ++k)
      CONF_CHECK_PATTERN(r, rec, in + to[k], sizes[k], mix(std::uint64_t(previous), 4), from[k],
                         20 + k);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    // read_list_notify: the next rank's pieces (its pattern 4) back here.
    GASPI_OK(r, rec,
             g.read_list_notify(3, remotes, to, next, locals, from, sizes, 1, 2, 6, gaspi::block));
    GASPI_OK(r, rec, g.notify_waitsome(1, 2, 1, &id, gaspi::block));
    GASPI_OK(r, rec, g.notify_reset(1, 2, &value));
    CONF_EXPECT(r, rec, value == 1, value, 0, 0);
    for (int k = 0; k < 3; ++k)
      CONF_CHECK_PATTERN(r, rec, in + to[k], sizes[k], mix(std::uint64_t(next), 4), from[k],
                         30 + k);
    GASPI_OK(r, rec, g.wait(6, gaspi::block));
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    // read_list: the same pieces by plain reads, into cleared places (with
    // two ranks the previous rank is the next one).
    for (int k = 0; k < 3; ++k)
      for (std::size_t i = std::size_t(r.thread()); i < sizes[k]; i += std::size_t(r.threads()))
        in[to[k] + i] = 0;
    r.sync_threads();
    GASPI_OK(r, rec, g.read_list(3, remotes, to, previous, locals, from, sizes, 7, gaspi::block));
    GASPI_OK(r, rec, g.wait(7, gaspi::block));
    for (int k = 0; k < 3; ++k)
      CONF_CHECK_PATTERN(r, rec, in + to[k], sizes[k], mix(std::uint64_t(previous), 4), from[k],
                         40 + k);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));

    // One warp writes and notifies; the others wait for it. (A rank of
    // fewer threads than a warp has no one_warp(): it writes itself.)
    const bool has_warp = r.threads() >= r.one_warp().threads();
    fill(r, out, bytes, mix(std::uint64_t(me), 5));
    if (!has_warp) {
      GASPI_OK(r, rec, g.write_notify(0, 0, next, 1, 0, bytes, 8, 5, 15, gaspi::block));
      GASPI_OK(r, rec, g.wait(15, gaspi::block));
    } else if (r.thread() < 32) {
      auto warp = g.one_warp();
      GASPI_OK(r, rec, warp.write_notify(0, 0, next, 1, 0, bytes, 8, 5, 15, gaspi::block));
      GASPI_OK(r, rec, warp.wait(15, gaspi::block));
    }
    r.sync_threads();
    GASPI_OK(r, rec, g.notify_waitsome(1, 8, 1, &id, gaspi::block));
    GASPI_OK(r, rec, g.notify_reset(1, 8, &value));
    CONF_EXPECT(r, rec, value == 5, value, 0, 0);
    CONF_CHECK_PATTERN(r, rec, in, bytes, mix(std::uint64_t(previous), 5), 0, 50);
    // One warp's collectives: each lane's own send and recv.
    if (has_warp && r.thread() < 32) {
      auto warp = g.one_warp();
      const long long mine = me + 1;
      long long total = -1;
      GASPI_OK(r, rec, warp.barrier(gaspi::group_all, gaspi::block));
      GASPI_OK(r, rec,
               warp.allreduce(&mine, &total, 1, gaspi::op_sum, gaspi::type_long, gaspi::group_all,
                              gaspi::block));
      if (total != (long long)n * (n + 1) / 2) record_failure(rec, __LINE__, total, n, r.thread());
    }
    r.sync_threads();

    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    GASPI_OK(r, rec, g.segment_delete(1));
    GASPI_OK(r, rec, g.segment_num(&count));
    CONF_EXPECT(r, rec, count == 1, count, 0, 0);
    tally(r, rec, 0);
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, WritesAndReadsMoveEveryByte) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_one_sided{});
  j.prepare();
  if (j.run(gaspi_one_sided{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- queues ------------------------------------------------------------------------------

// A queue of four: the fifth operation finds it full until its wait, and a
// full queue leaves the others alone. Sources are bytes [0, 32) of segment
// 3, destinations [128, 200): no rank reads what its neighbour writes.
struct gaspi_queues {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    gaspi::config c = gaspi::handle<Rank>::config_get();
    c.queue_size_max = 4;
    GASPI_OK(r, rec, g.proc_init(c, gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world), next = (me + 1) % n;
    GASPI_OK(r, rec, g.segment_create(3, 256, gaspi::group_all, gaspi::block));
    int queues = 0, most = 0, posted = 0;
    GASPI_OK(r, rec, g.queue_num(&queues));
    GASPI_OK(r, rec, g.queue_size_max(&most));
    CONF_EXPECT(r, rec, queues == 16 && most == 4, queues, most, 0);
    for (int i = 0; i < 4; ++i)
      GASPI_OK(r, rec, g.write(3, 8 * i, next, 3, 128 + 8 * i, 8, 15, gaspi::test));
    CONF_EXPECT(r, rec, g.write(3, 0, next, 3, 128, 8, 15, gaspi::block) == gaspi::queue_full, 0, 0,
                0);
    CONF_EXPECT(r, rec, g.notify(3, next, 1, 1, 15, gaspi::block) == gaspi::queue_full, 0, 0, 0);
    // write_notify takes two entries: it fits an empty queue of four, not one with three.
    GASPI_OK(r, rec, g.write(3, 0, next, 3, 160, 8, 14, gaspi::block));
    GASPI_OK(r, rec, g.write(3, 0, next, 3, 160, 8, 14, gaspi::block));
    GASPI_OK(r, rec, g.write(3, 0, next, 3, 160, 8, 14, gaspi::block));
    CONF_EXPECT(r, rec,
                g.write_notify(3, 0, next, 3, 192, 8, 2, 1, 14, gaspi::block) == gaspi::queue_full,
                0, 0, 0);
    GASPI_OK(r, rec, g.queue_size(15, &posted));
    CONF_EXPECT(r, rec, posted == 4, posted, 15, 0);
    GASPI_OK(r, rec, g.queue_size(14, &posted));
    CONF_EXPECT(r, rec, posted == 3, posted, 14, 0);
    GASPI_OK(r, rec, g.queue_size(0, &posted));
    CONF_EXPECT(r, rec, posted == 0, posted, 0, 0);
    GASPI_OK(r, rec, g.wait(15, gaspi::block));
    GASPI_OK(r, rec, g.queue_size(15, &posted));
    CONF_EXPECT(r, rec, posted == 0, posted, 15, 0);
    GASPI_OK(r, rec, g.write_notify(3, 0, next, 3, 192, 8, 2, 1, 15, gaspi::block));
    GASPI_OK(r, rec, g.wait(15, gaspi::block));
    GASPI_OK(r, rec, g.wait(14, gaspi::block));
    tally(r, rec, 0);
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, QueuesFillAndTheirWaitEmptiesThem) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_queues{});
  j.prepare();
  if (j.run(gaspi_queues{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// A queue of one takes any one call while empty, a _notify form's two
// entries and a list's notification too, and the next call waits for its
// wait. Each rank sends two words to the next, with notifications 1 and 2.
struct gaspi_queue_of_one {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    gaspi::config c = gaspi::handle<Rank>::config_get();
    c.queue_size_max = 1;
    GASPI_OK(r, rec, g.proc_init(c, gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    GASPI_OK(r, rec, g.segment_create(0, 64, gaspi::group_all, gaspi::block));
    void* pointer = nullptr;
    GASPI_OK(r, rec, g.segment_ptr(0, &pointer));
    auto* words = static_cast<std::uint64_t*>(pointer);
    if (r.thread() == 0) {
      words[0] = mix(std::uint64_t(me), 1);
      words[1] = mix(std::uint64_t(me), 2);
    }
    r.sync_threads();
    GASPI_OK(r, rec, g.write_notify(0, 0, next, 0, 16, 8, 1, 1, 0, gaspi::block));
    int posted = 0;
    GASPI_OK(r, rec, g.queue_size(0, &posted));
    CONF_EXPECT(r, rec,
                posted == 2 && g.write(0, 8, next, 0, 24, 8, 0, gaspi::test) == gaspi::queue_full,
                posted, 0, 0);
    GASPI_OK(r, rec, g.wait(0, gaspi::block));
    const gaspi::segment_id_t segments[1] = {0};
    const gaspi::offset_t from[1] = {8}, to[1] = {24};
    const std::size_t sizes[1] = {8};
    GASPI_OK(r, rec,
             g.write_list_notify(1, segments, from, next, segments, to, sizes, 0, 2, 2, 0,
                                 gaspi::block));
    GASPI_OK(r, rec, g.wait(0, gaspi::block));
    for (gaspi::notification_id_t expected = 1; expected <= 2; ++expected) {
      gaspi::notification_id_t id = -1;
      gaspi::notification_t value = 0;
      GASPI_OK(r, rec, g.notify_waitsome(0, expected, 1, &id, gaspi::block));
      GASPI_OK(r, rec, g.notify_reset(0, id, &value));
      const std::uint64_t word = *static_cast<volatile std::uint64_t*>(words + 1 + expected);
      CONF_EXPECT(r, rec,
                  id == expected && value == gaspi::notification_t(expected) &&
                      word == mix(std::uint64_t(previous), std::uint64_t(expected)),
                  id, value, expected);
    }
    tally(r, rec, 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, AQueueOfOneTakesAnyOneCall) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_queue_of_one{});
  j.prepare();
  if (j.run(gaspi_queue_of_one{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- notifications under contention ------------------------------------------------------

// Ranks 1 .. senders notify rank 0, each at its own id, `rounds` times
// with values 1 .. rounds; rank 0 takes every value exactly once, in order
// per sender, and acknowledges each (id 0 at the sender) before the sender
// goes on. A sender also writes its value into rank 0's segment first:
// the data is there with the notification.
struct gaspi_notifications {
  static constexpr int rounds = 5;
  static constexpr int sender_limit = 255;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int senders = n - 1 < sender_limit ? n - 1 : sender_limit;
    GASPI_OK(r, rec, g.segment_create(0, 8 * (sender_limit + 1), gaspi::group_all, gaspi::block));
    void* pointer = nullptr;
    GASPI_OK(r, rec, g.segment_ptr(0, &pointer));
    auto* words = static_cast<std::uint64_t*>(pointer);
    gaspi::notification_id_t id = -1;
    gaspi::notification_t value = 0;
    if (me == 0) {
      int next_round[sender_limit + 1] = {};
      for (int taken = 0; taken < senders * rounds; ++taken) {
        GASPI_OK(r, rec, g.notify_waitsome(0, 1, senders, &id, gaspi::block));
        GASPI_OK(r, rec, g.notify_reset(0, id, &value));
        const int expected = ++next_round[id];
        const std::uint64_t word = *static_cast<volatile std::uint64_t*>(words + id);
        CONF_EXPECT(
            r, rec,
            value == gaspi::notification_t(expected) && word == mix(std::uint64_t(id), value), id,
            value, expected);
        GASPI_OK(r, rec, g.notify(0, id, 0, value, 0, gaspi::block));
        if (taken % 64 == 63) GASPI_OK(r, rec, g.wait(0, gaspi::block));
      }
      GASPI_OK(r, rec, g.wait(0, gaspi::block));
      for (int s = 1; s <= senders; ++s)
        CONF_EXPECT(r, rec, next_round[s] == rounds, s, next_round[s], 0);
      // Nothing is left over.
      CONF_EXPECT(r, rec, g.notify_waitsome(0, 1, senders, &id, gaspi::test) == gaspi::timeout, id,
                  0, 0);
      // A wait for no ids returns at once and leaves the id (GPI-2's).
      id = -2;
      GASPI_OK(r, rec, g.notify_waitsome(0, 1, 0, &id, gaspi::block));
      CONF_EXPECT(r, rec, id == -2, id, 0, 0);
      tally(r, rec, 1, (unsigned long long)(senders)*rounds);
    } else if (me <= senders) {
      for (int round = 1; round <= rounds; ++round) {
        if (r.thread() == 0) words[me] = mix(std::uint64_t(me), std::uint64_t(round));
        r.sync_threads();
        GASPI_OK(r, rec, g.write_notify(0, 8 * me, 0, 0, 8 * me, 8, me, round, 1, gaspi::block));
        GASPI_OK(r, rec, g.notify_waitsome(0, 0, 1, &id, gaspi::block));
        GASPI_OK(r, rec, g.notify_reset(0, 0, &value));
        CONF_EXPECT(r, rec, value == gaspi::notification_t(round), value, round, 0);
        GASPI_OK(r, rec, g.wait(1, gaspi::block));
      }
    }
    tally(r, rec, 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, NotificationsAreTakenExactlyOnce) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int ranks = j.resolve(gaspi_notifications{});
  j.prepare();
  if (j.run(gaspi_notifications{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
    const int senders = ranks - 1 < gaspi_notifications::sender_limit
                            ? ranks - 1
                            : gaspi_notifications::sender_limit;
    j.expect_counts(
        1,
        [&](int rank) { return rank == 0 ? unsigned(senders * gaspi_notifications::rounds) : 0u; },
        "notifications taken");
  }
}

// ---- atomics -----------------------------------------------------------------------------

// Every rank adds to rank 0's word and increments another by
// compare-and-swap until its swap wins; the old values each rank saw are
// distinct, so the totals are exact.
struct gaspi_atomics {
  static constexpr int adds = 6;
  static constexpr int swaps = 3;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    GASPI_OK(r, rec,
             g.segment_create(2, 64, gaspi::group_all, gaspi::block, gaspi::mem_initialized));
    void* pointer = nullptr;
    GASPI_OK(r, rec, g.segment_ptr(2, &pointer));
    auto* words = static_cast<std::uint64_t*>(pointer);
    gaspi::atomic_value_t old = 0, previous_old = 0;
    for (int i = 0; i < adds; ++i) {
      GASPI_OK(r, rec, g.atomic_fetch_add(2, 8, 0, 1000, &old, gaspi::block));
      CONF_EXPECT(r, rec, old % 1000 == 0 && (i == 0 || old > previous_old), old, previous_old, i);
      previous_old = old;
    }
    for (int i = 0; i < swaps; ++i) {
      gaspi::atomic_value_t seen = 0;
      for (;;) {
        GASPI_OK(r, rec, g.atomic_compare_swap(2, 16, 0, seen, seen + 1, &old, gaspi::block));
        if (old == seen) break;
        seen = old;
      }
    }
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    if (me == 0) {
      const std::uint64_t sum = *static_cast<volatile std::uint64_t*>(words + 1);
      const std::uint64_t swapped = *static_cast<volatile std::uint64_t*>(words + 2);
      CONF_EXPECT(r, rec,
                  sum == std::uint64_t(n) * adds * 1000 && swapped == std::uint64_t(n) * swaps, sum,
                  swapped, n);
    }
    tally(r, rec, 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, AtomicsCountEveryOperationOnce) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_atomics{});
  j.prepare();
  if (j.run(gaspi_atomics{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- groups and collectives --------------------------------------------------------------

// Element i of member m's contribution in type T: small, so sums are exact.
template <class T>
GRMA_HOST_DEVICE T contribution(int m, int i) {
  const std::int64_t v = std::int64_t(mix(std::uint64_t(m), std::uint64_t(i)) % 1000);
  return T(T(-1) < T(0) ? v - 500 : v);
}

template <class T, class Handle, class Rank>
GRMA_HOST_DEVICE void check_allreduce(Handle& g, Rank& r, rank_record& rec, gaspi::group_t group,
                                      const int* members, int size, gaspi::datatype_t type, T* send,
                                      T* recv, int part) {
  const int me = r.rank(grma::world);
  constexpr int count = gaspi::allreduce_elem_max;
  for (int op = gaspi::op_min; op <= gaspi::op_sum; ++op) {
    for (int i = r.thread(); i < count; i += r.threads()) {
      send[i] = contribution<T>(me, i + op);
      recv[i] = T(0);
    }
    r.sync_threads();
    GASPI_OK(r, rec,
             g.allreduce(send, recv, count, gaspi::operation_t(op), type, group, gaspi::block));
    for (int i = r.thread(); i < count; i += r.threads()) {
      T expected = contribution<T>(members[0], i + op);
      for (int m = 1; m < size; ++m) {
        const T v = contribution<T>(members[m], i + op);
        expected = op == gaspi::op_min   ? (v < expected ? v : expected)
                   : op == gaspi::op_max ? (v > expected ? v : expected)
                                         : T(expected + v);
      }
      if (recv[i] != expected) {
        record_failure(rec, __LINE__, part * 10 + op, i, (long long)recv[i]);
        break;
      }
    }
    r.sync_threads();
  }
}

// group_all, and a group of the even ranks (every rank creates it, adds
// the even ranks; the even ones commit it): sizes, ranks, barriers and
// allreduce of every operation and type over both.
struct gaspi_groups {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    // Buffers from the symmetric heap: the rank heap is small with thousands of ranks.
    auto* area = static_cast<unsigned char*>(
        r.alloc_symmetric(4 * 8 * gaspi::allreduce_elem_max + 4 * std::size_t(n)));
    auto* members = reinterpret_cast<int*>(area + 4 * 8 * gaspi::allreduce_elem_max);
    gaspi::group_t evens = -1;
    GASPI_OK(r, rec, g.group_create(&evens));
    CONF_EXPECT(r, rec, evens == 1, evens, 0, 0);
    for (int k = 0; k < n; k += 2) GASPI_OK(r, rec, g.group_add(evens, k));
    int size = 0;
    GASPI_OK(r, rec, g.group_size(evens, &size));
    CONF_EXPECT(r, rec, size == (n + 1) / 2, size, n, 0);
    GASPI_OK(r, rec, g.group_size(gaspi::group_all, &size));
    CONF_EXPECT(r, rec, size == n, size, n, 0);

    for (int k = r.thread(); k < n; k += r.threads()) members[k] = k;
    r.sync_threads();
    auto* send = area;
    auto* recv = area + 2 * 8 * gaspi::allreduce_elem_max;
    for (int part = 0; part < 2; ++part) {
      const bool all = part == 0;
      if (!all && me % 2 != 0) break;
      const gaspi::group_t group = all ? gaspi::group_all : evens;
      if (!all) {
        GASPI_OK(r, rec, g.group_commit(evens, gaspi::block));
        GASPI_OK(r, rec, g.group_ranks(evens, members));
        for (int k = 0; k < (n + 1) / 2; ++k)
          if (members[k] != 2 * k) record_failure(rec, __LINE__, k, members[k], 0);
        r.sync_threads();
      }
      const int m = all ? n : (n + 1) / 2;
      GASPI_OK(r, rec, g.barrier(group, gaspi::block));
      check_allreduce(g, r, rec, group, members, m, gaspi::type_int,
                      reinterpret_cast<std::int32_t*>(send), reinterpret_cast<std::int32_t*>(recv),
                      part * 10 + 1);
      check_allreduce(g, r, rec, group, members, m, gaspi::type_uint,
                      reinterpret_cast<std::uint32_t*>(send),
                      reinterpret_cast<std::uint32_t*>(recv), part * 10 + 2);
      check_allreduce(g, r, rec, group, members, m, gaspi::type_float,
                      reinterpret_cast<float*>(send), reinterpret_cast<float*>(recv),
                      part * 10 + 3);
      check_allreduce(g, r, rec, group, members, m, gaspi::type_double,
                      reinterpret_cast<double*>(send), reinterpret_cast<double*>(recv),
                      part * 10 + 4);
      check_allreduce(g, r, rec, group, members, m, gaspi::type_long,
                      reinterpret_cast<std::int64_t*>(send), reinterpret_cast<std::int64_t*>(recv),
                      part * 10 + 5);
      check_allreduce(g, r, rec, group, members, m, gaspi::type_ulong,
                      reinterpret_cast<std::uint64_t*>(send),
                      reinterpret_cast<std::uint64_t*>(recv), part * 10 + 6);
      // Sums that round: every member gets member 0's, bit for bit, close
      // to the sum in member order.
      auto* parts = reinterpret_cast<double*>(send);
      auto* sums = reinterpret_cast<double*>(recv);
      constexpr int inexact = 16;
      for (int i = r.thread(); i < inexact; i += r.threads()) parts[i] = 1.0 / (3 + me + i);
      r.sync_threads();
      GASPI_OK(r, rec,
               g.allreduce(parts, sums, inexact, gaspi::op_sum, gaspi::type_double, group,
                           gaspi::block));
      GASPI_OK(r, rec, g.barrier(group, gaspi::block));
      for (int i = r.thread(); i < inexact; i += r.threads()) {
        double serial = 0;
        for (int k = 0; k < m; ++k) serial += 1.0 / (3 + members[k] + i);
        const double error = sums[i] > serial ? sums[i] - serial : serial - sums[i];
        if (r.g(sums + i, members[0]) != sums[i] || error > 1e-12 * serial)
          record_failure(rec, __LINE__, part, i, (long long)(error * 1e18));
      }
      GASPI_OK(r, rec, g.barrier(group, gaspi::block));  // read before the next allreduce writes
      // One element, many times: the collectives' words are reused in turn.
      for (int k = 0; k < 20; ++k) {
        const std::int64_t one = me + k;
        std::int64_t total = -1;
        GASPI_OK(
            r, rec,
            g.allreduce(&one, &total, 1, gaspi::op_max, gaspi::type_long, group, gaspi::block));
        const std::int64_t highest = all ? n - 1 + k : 2 * ((n - 1) / 2) + k;
        CONF_EXPECT(r, rec, total == highest, total, highest, k);
        GASPI_OK(r, rec, g.barrier(group, gaspi::block));
      }
    }
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    GASPI_OK(r, rec, g.group_delete(evens));
    tally(r, rec, 0);
    r.free_symmetric(area);
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, GroupsBarriersAndAllreduceOfEveryOperationAndType) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_groups{});
  j.prepare();
  if (j.run(gaspi_groups{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// ---- time limits, health and passive messages --------------------------------------------

// The last rank comes late to a barrier, an allreduce and a group's
// commit: rank 0 calls them with 1 ms limits until they succeed, and finds
// the rank it waited for marked corrupt. A passive message to rank 1 times
// out while rank 1 waits elsewhere, then goes through; every other rank
// sends one too.
struct gaspi_time_limits {
  static constexpr std::size_t message = 600;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    GASPI_OK(r, rec,
             g.segment_create(0, 4096, gaspi::group_all, gaspi::block, gaspi::mem_initialized));
    void* pointer = nullptr;
    GASPI_OK(r, rec, g.segment_ptr(0, &pointer));
    auto* data = static_cast<unsigned char*>(pointer);
    auto* health = static_cast<gaspi::state_t*>(r.alloc_symmetric(std::size_t(n)));
    gaspi::notification_id_t id = -1;

    // Nothing comes: test and a limit both return timeout.
    CONF_EXPECT(r, rec, g.notify_waitsome(0, 0, 8, &id, gaspi::test) == gaspi::timeout, 0, 0, 0);
    CONF_EXPECT(r, rec, g.notify_waitsome(0, 0, 8, &id, 2) == gaspi::timeout, 0, 0, 0);
    gaspi::rank_t sender = -1;
    CONF_EXPECT(r, rec, g.passive_receive(0, 0, &sender, message, gaspi::test) == gaspi::timeout, 0,
                0, 0);
    GASPI_OK(r, rec, g.state_vec_get(health));
    for (int k = r.thread(); k < n; k += r.threads())
      if (health[k] != gaspi::state_healthy) record_failure(rec, __LINE__, k, health[k], 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));

    // A barrier and an allreduce the last rank comes late to: only once
    // rank 0's call has timed out (rank 0 says so with a put to `go`), so
    // that however a loaded machine schedules the ranks, rank 0 waits.
    const int late = n - 1;
    auto* go = static_cast<std::uint64_t*>(r.calloc_symmetric(1, sizeof(std::uint64_t)));
    const auto come_late = [&](std::uint64_t phase) {
      if (me == late && late != 0) r.wait_until(go, grma::cmp::ge, phase);
    };
    const auto timed_out = [&](std::uint64_t phase, int& timeouts) {
      if (timeouts++ == 0 && r.thread() == 0) r.p(go, phase, late);
    };
    come_late(1);
    int barrier_timeouts = 0;
    for (;;) {
      const gaspi::status s = g.barrier(gaspi::group_all, me == 0 ? 1 : gaspi::block);
      if (s == gaspi::success) break;
      CONF_EXPECT(r, rec, s == gaspi::timeout, int(s), 0, 0);
      timed_out(1, barrier_timeouts);
    }
    come_late(2);
    const long long one = me;
    long long total = -1;
    int allreduce_timeouts = 0;
    for (;;) {
      const gaspi::status s = g.allreduce(&one, &total, 1, gaspi::op_sum, gaspi::type_long,
                                          gaspi::group_all, me == 0 ? 1 : gaspi::block);
      if (s == gaspi::success) break;
      CONF_EXPECT(r, rec, s == gaspi::timeout, int(s), 0, 0);
      timed_out(2, allreduce_timeouts);
    }
    CONF_EXPECT(r, rec, total == (long long)n * (n - 1) / 2, total, n, 0);
    if (me == 0) {
      CONF_EXPECT(r, rec, barrier_timeouts >= 1 && allreduce_timeouts >= 1, barrier_timeouts,
                  allreduce_timeouts, 0);
      // The late rank is the one rank 0 waits for in the barriers' first
      // round (a rank it waited for in a later round may be marked too).
      GASPI_OK(r, rec, g.state_vec_get(health));
      CONF_EXPECT(r, rec, health[late] == gaspi::state_corrupt, health[late], late, 0);
    }
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));

    // A group of every rank that the late rank commits late: rank 0's
    // commit with 1 ms limits goes on until it succeeds.
    gaspi::group_t everyone = -1;
    GASPI_OK(r, rec, g.group_create(&everyone));
    for (int k = 0; k < n; ++k) GASPI_OK(r, rec, g.group_add(everyone, k));
    come_late(3);
    int commit_timeouts = 0;
    for (;;) {
      const gaspi::status s = g.group_commit(everyone, me == 0 ? 1 : gaspi::block);
      if (s == gaspi::success) break;
      CONF_EXPECT(r, rec, s == gaspi::timeout, int(s), 0, 0);
      timed_out(3, commit_timeouts);
    }
    CONF_EXPECT(r, rec, me != 0 || commit_timeouts >= 1, commit_timeouts, 0, 0);
    GASPI_OK(r, rec, g.barrier(everyone, gaspi::block));
    GASPI_OK(r, rec, g.group_delete(everyone));

    // Passive: rank 0's first message to rank 1 is posted at once; its
    // second waits for the first to be taken, and times out while rank 1
    // waits for a notification first, then goes. The other ranks send one
    // each; rank 1 takes rank 0's two in order.
    if (n >= 2) {
      gaspi::notification_t value = 0;
      fill(r, data, message, mix(std::uint64_t(me), 9));
      if (me == 0) {
        GASPI_OK(r, rec, g.passive_send(0, 0, 1, message, gaspi::block));
        fill(r, data, message, mix(std::uint64_t(me), 10));  // the first was copied: it is safe
        CONF_EXPECT(r, rec, g.passive_send(0, 0, 1, message, 1) == gaspi::timeout, 0, 0, 0);
        GASPI_OK(r, rec, g.state_vec_get(health));
        CONF_EXPECT(r, rec, health[1] == gaspi::state_corrupt, health[1], 0, 0);
        GASPI_OK(r, rec, g.notify(0, 1, 20, 1, 0, gaspi::block));
        GASPI_OK(r, rec, g.passive_send(0, 0, 1, message, gaspi::block));
      } else if (me == 1) {
        GASPI_OK(r, rec, g.notify_waitsome(0, 20, 1, &id, gaspi::block));
        GASPI_OK(r, rec, g.notify_reset(0, 20, &value));
        int from_zero = 0;
        for (int k = 0; k < n; ++k) {
          GASPI_OK(r, rec, g.passive_receive(0, 1000, &sender, message, gaspi::block));
          CONF_EXPECT(r, rec, sender >= 0 && sender < n && sender != 1, sender, k, 0);
          const int seed = sender == 0 ? 9 + from_zero++ : 9;
          CONF_CHECK_PATTERN(r, rec, data + 1000, message, mix(std::uint64_t(sender), seed), 0, 60);
        }
        CONF_EXPECT(r, rec, from_zero == 2, from_zero, 0, 0);
        CONF_EXPECT(r, rec,
                    g.passive_receive(0, 1000, &sender, message, gaspi::test) == gaspi::timeout,
                    sender, 0, 0);
        tally(r, rec, 1, (unsigned long long)n);
      } else {
        GASPI_OK(r, rec, g.passive_send(0, 0, 1, message, gaspi::block));
      }
    }
    tally(r, rec, 0);
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    r.free_symmetric(go);
    r.free_symmetric(health);
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, TimeLimitsReturnTimeoutAndRetriesGoOn) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int ranks = j.resolve(gaspi_time_limits{});
  j.prepare();
  if (j.run(gaspi_time_limits{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
    j.expect_counts(
        1, [&](int rank) { return rank == 1 ? unsigned(ranks) : 0u; }, "passive messages taken");
  }
}

// Allreduces back to back on two groups that share members (group_all and
// ranks 1 to n - 1), with no barrier between them, every rank calling with
// a limit of 1 ms and again until it succeeds while a fifth of the ranks
// pause 2 ms before each (so members stop and resume at every step of the
// tree), counts from 1 to 255: each result exact.
struct gaspi_allreduces_resumed {
  static constexpr int rounds = 10;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* area = static_cast<std::int64_t*>(r.alloc_symmetric(2 * 8 * gaspi::allreduce_elem_max));
    std::int64_t* send = area;
    std::int64_t* recv = area + gaspi::allreduce_elem_max;
    gaspi::group_t rest = -1;
    GASPI_OK(r, rec, g.group_create(&rest));
    for (int k = 1; k < n; ++k) GASPI_OK(r, rec, g.group_add(rest, k));
    if (me >= 1) GASPI_OK(r, rec, g.group_commit(rest, gaspi::block));
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    auto value = [](int m, int round, int i) { return (m + 1) * 1000003LL + round * 7 + i; };
    int retries = 0;
    for (int round = 0; round < rounds; ++round) {
      for (int part = 0; part < 2; ++part) {
        if (part == 1 && me == 0) continue;
        const gaspi::group_t group = part == 0 ? gaspi::group_all : rest;
        const int count = 1 + (round * 37 + part * 101) % gaspi::allreduce_elem_max;
        for (int i = r.thread(); i < count; i += r.threads()) send[i] = value(me, round, i);
        r.sync_threads();
        if (mix(std::uint64_t(me), std::uint64_t(round * 2 + part)) % 5 == 0) pause(r, 0.002);
        for (;;) {
          const gaspi::status s =
              g.allreduce(send, recv, count, gaspi::op_sum, gaspi::type_long, group, 1);
          if (s == gaspi::success) break;
          CONF_EXPECT(r, rec, s == gaspi::timeout, int(s), round, part);
          ++retries;
        }
        for (int i = r.thread(); i < count; i += r.threads()) {
          long long expected = 0;
          for (int m = part; m < n; ++m) expected += value(m, round, i);
          if (recv[i] != expected) {
            record_failure(rec, __LINE__, round * 2 + part, i, (long long)(recv[i] - expected));
            break;
          }
        }
        r.sync_threads();
      }
    }
    // Someone waited (a rank that never returned timeout would test nothing).
    int waited = retries > 0 ? 1 : 0;
    int anyone = 0;
    GASPI_OK(r, rec,
             g.allreduce(&waited, &anyone, 1, gaspi::op_max, gaspi::type_int, gaspi::group_all,
                         gaspi::block));
    CONF_EXPECT(r, rec, anyone == 1, anyone, retries, 0);
    tally(r, rec, 0);
    r.free_symmetric(area);
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, AllreducesOnGroupsSharingMembersResumeAfterTimeout) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_allreduces_resumed{});
  j.prepare();
  if (j.run(gaspi_allreduces_resumed{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "programs finished");
  }
}

// allreduce_user with an operation that does not commute: each element is
// a 2 x 2 matrix of 64-bit words (arithmetic modulo 2^64), and the result
// is the members' product in member order, on group_all and on the odd
// ranks. The operation counts its calls in the state it is handed.
struct matrix_product {
  GRMA_HOST_DEVICE gaspi::status operator()(void* one, void* two, void* result,
                                            gaspi::reduce_state_t state, int num,
                                            std::size_t element_size, gaspi::timeout_t) const {
    if (element_size != 4 * sizeof(std::uint64_t)) return gaspi::error;
    const auto* a = static_cast<const std::uint64_t*>(one);
    const auto* b = static_cast<const std::uint64_t*>(two);
    auto* c = static_cast<std::uint64_t*>(result);
    for (int e = 0; e < num; ++e, a += 4, b += 4, c += 4) {
      c[0] = a[0] * b[0] + a[1] * b[2];
      c[1] = a[0] * b[1] + a[1] * b[3];
      c[2] = a[2] * b[0] + a[3] * b[2];
      c[3] = a[2] * b[1] + a[3] * b[3];
    }
    ++*static_cast<int*>(state);
    return gaspi::success;
  }
};

GRMA_HOST_DEVICE inline std::uint64_t matrix_entry(int member, int element, int k) {
  return mix(std::uint64_t(member), std::uint64_t(element), std::uint64_t(k)) % 7;
}

struct gaspi_user_reductions {
  static constexpr int num = gaspi::allreduce_buf_size / 32;  // 63 matrices

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    gaspi::handle g(r);
    GASPI_OK(r, rec, g.proc_init(gaspi::block));
    const int me = r.rank(grma::world), n = r.size(grma::world);
    std::size_t most = 0;
    GASPI_OK(r, rec, g.allreduce_buf_size_get(&most));
    CONF_EXPECT(r, rec, most == std::size_t(gaspi::allreduce_buf_size), most, 0, 0);
    auto* area =
        static_cast<std::uint64_t*>(r.alloc_symmetric(2 * 4 * num * sizeof(std::uint64_t)));
    std::uint64_t* send = area;
    std::uint64_t* recv = area + 4 * num;
    gaspi::group_t odd = -1;
    GASPI_OK(r, rec, g.group_create(&odd));
    for (int k = 1; k < n; k += 2) GASPI_OK(r, rec, g.group_add(odd, k));
    if (me % 2 == 1) GASPI_OK(r, rec, g.group_commit(odd, gaspi::block));
    for (int part = 0; part < 2; ++part) {
      if (part == 1 && me % 2 == 0) break;
      const gaspi::group_t group = part == 0 ? gaspi::group_all : odd;
      for (int i = r.thread(); i < 4 * num; i += r.threads())
        send[i] = matrix_entry(me, i / 4, i % 4);
      r.sync_threads();
      int calls = 0;  // thread 0's: the operation runs there
      GASPI_OK(r, rec,
               g.allreduce_user(send, recv, num, 4 * sizeof(std::uint64_t), matrix_product{},
                                &calls, group, gaspi::block));
      // Member i combines one child for each trailing zero bit below the
      // group's size: its calls are its children.
      const int size = part == 0 ? n : n / 2, index = part == 0 ? me : me / 2;
      int children = 0;
      for (int k = 0; (1 << k) < size && (index & (1 << k)) == 0; ++k)
        children += index + (1 << k) < size ? 1 : 0;
      if (r.thread() == 0) CONF_EXPECT(r, rec, calls == children, calls, children, part);
      for (int e = r.thread(); e < num; e += r.threads()) {
        std::uint64_t p[4] = {1, 0, 0, 1};
        for (int m = part; m < n; m += 1 + part) {
          std::uint64_t q[4];
          for (int k = 0; k < 4; ++k) q[k] = matrix_entry(m, e, k);
          const std::uint64_t t[4] = {p[0] * q[0] + p[1] * q[2], p[0] * q[1] + p[1] * q[3],
                                      p[2] * q[0] + p[3] * q[2], p[2] * q[1] + p[3] * q[3]};
          for (int k = 0; k < 4; ++k) p[k] = t[k];
        }
        for (int k = 0; k < 4; ++k)
          if (recv[4 * e + k] != p[k]) {
            record_failure(rec, __LINE__, part, e, k);
            break;
          }
      }
      r.sync_threads();
      tally(r, rec, 0);
    }
    GASPI_OK(r, rec, g.barrier(gaspi::group_all, gaspi::block));
    r.free_symmetric(area);
    GASPI_OK(r, rec, g.proc_term(gaspi::block));
  }
};

TEST_P(Gaspi, UserReductionsCombineInMemberOrder) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(gaspi_user_reductions{});
  j.prepare();
  if (j.run(gaspi_user_reductions{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int rank) { return rank % 2 == 1 ? 2u : 1u; }, "reductions checked");
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, Gaspi, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
