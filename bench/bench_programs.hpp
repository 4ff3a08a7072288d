// The rank programs grma-bench times. Same device, two devices or two nodes
// is only a matter of where the two ends (a rank and its partner `offset`
// or `partner` ranks on) are.
#pragma once

#include <grma/gaspi.hpp>
#include <grma/grma.hpp>
#include <grma/shmem.hpp>

namespace bench {

struct results {
  double seconds;  // measured by rank 0
};

enum class mode { notified_put, signal_put, notified_get };

// World ranks 0 and `partner` ping-pong `bytes` (`iterations` round trips
// after 20 for warm-up); other ranks wait at the final barrier. Rank 0 checks
// the last bytes it received (a wrong byte fails the run).
struct ping_pong {
  std::size_t bytes;
  int iterations;
  mode how;
  int partner;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    const std::size_t area = bytes < 64 ? 64 : bytes;
    auto* inbox = static_cast<unsigned char*>(r.alloc(area + 64));  // data, then the signal word
    auto* outbox = static_cast<unsigned char*>(r.alloc(area));
    for (std::size_t i = r.thread(); i < area + 64; i += r.threads()) inbox[i] = 0;
    for (std::size_t i = r.thread(); i < area; i += r.threads()) outbox[i] = (unsigned char)(i + me);
    r.sync_threads();
    // A put writes the peer's inbox; a get reads the peer's outbox.
    grma::window in = r.window_create(grma::world, inbox, area + 64);
    grma::window out = r.window_create(grma::world, outbox, area);
    if (me == 0 || me == partner) {
      const int peer = me == 0 ? partner : 0;
      double start = 0;
      for (int it = -20; it < iterations; ++it) {
        if (it == 0) start = r.wtime();
        const std::uint64_t round = std::uint64_t(it + 21);
        for (int half = 0; half < 2; ++half) {
          if ((half == 0) == (me == 0)) {
            if (how == mode::notified_put)
              r.put_notify(in, peer, 0, bytes, outbox, 0);
            else if (how == mode::signal_put)
              r.put_signal(in, peer, 0, bytes, outbox, area, round, grma::signal_op::set);
            else
              r.get_notify(out, peer, 0, bytes, inbox, 0);
          } else if (how == mode::signal_put) {
            r.wait_signal(in, area, grma::cmp::ge, round);
          } else {
            r.wait_notifications(how == mode::notified_put ? in : out, peer, 0, 1);
          }
        }
      }
      if (me == 0) {
        const double seconds = r.wtime() - start;
        for (std::size_t i = r.thread(); i < bytes; i += r.threads())
          GRMA_ASSERT(r, r.read(&inbox[i]) == (unsigned char)(i + peer));
        if (r.thread() == 0) r.template userdata<results>()->seconds = seconds;
      }
    }
    r.barrier(grma::world);
    r.window_free(out);
    r.window_free(in);
    r.free(outbox);
    r.free(inbox);
  }
};

// 8-byte value puts (put_value_notify) between world ranks 0 and `partner`,
// each answered by one, `iterations` round trips after 20 for warm-up: the
// notified put whose bytes travel in its notification. A program of its
// own, as core_round_trip's note says of modes. Rank 0 checks the last
// value after its match.
struct value_put_round_trip {
  int iterations;
  int partner;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    auto* inbox = static_cast<std::uint64_t*>(r.alloc(64));
    grma::window in = r.window_create(grma::world, inbox, 64);
    if (me == 0 || me == partner) {
      const int peer = me == 0 ? partner : 0;
      double start = 0;
      for (int it = -20; it < iterations; ++it) {
        if (it == 0) start = r.wtime();
        const std::uint64_t round = std::uint64_t(it + 21);
        for (int half = 0; half < 2; ++half) {
          if ((half == 0) == (me == 0))
            r.put_value_notify(in, peer, 0, round, 0);
          else
            r.wait_notifications(in, peer, 0, 1);
        }
      }
      if (me == 0) {
        const double seconds = r.wtime() - start;
        GRMA_ASSERT(r, r.read(inbox) == std::uint64_t(iterations + 20));
        if (r.thread() == 0) r.template userdata<results>()->seconds = seconds;
      }
    }
    r.barrier(grma::world);
    r.window_free(in);
    r.free(inbox);
  }
};

enum class core_mode { p_wait_until, put_fence_p, fetch_add };

// The core's one-word operations between world ranks 0 and `partner` on
// symmetric memory, `iterations` times after 20 for warm-up: p of a flag
// answered by the partner's p (p_wait_until), an 8-byte put, fence and p
// of the flag answered the same way (put_fence_p; rank 0 checks the last
// data word), or fetch_add on the partner's word by rank 0 alone
// (fetch_add: one round trip each, checked by the final value).
struct core_round_trip {
  int iterations;
  core_mode how;
  int partner;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    auto* words = static_cast<std::uint64_t*>(r.calloc_symmetric(4, sizeof(std::uint64_t)));
    std::uint64_t* flag = words;
    std::uint64_t* data = words + 1;
    std::uint64_t* counter = words + 2;
    std::uint64_t* outgoing = words + 3;
    if (me == 0 || me == partner) {
      const int peer = me == 0 ? partner : 0;
      double start = 0;
      if (how == core_mode::fetch_add) {
        if (me == 0 && r.thread() == 0) {
          // Each old value is used: the atomic's reply is waited for (an
          // unused one would be a fire-and-forget reduction).
          std::uint64_t expected = 0;
          for (int it = -20; it < iterations; ++it) {
            if (it == 0) start = r.wtime();
            const std::uint64_t old = r.atomic_fetch_add(counter, std::uint64_t{1}, peer);
            GRMA_ASSERT(r, old == expected);
            expected = old + 1;
          }
        }
      } else {
        for (int it = -20; it < iterations; ++it) {
          if (it == 0) start = r.wtime();
          const std::uint64_t round = std::uint64_t(it + 21);
          for (int half = 0; half < 2; ++half) {
            if ((half == 0) == (me == 0)) {
              if (how == core_mode::put_fence_p) {
                if (r.thread() == 0) *outgoing = round;
                r.put(data, outgoing, sizeof(std::uint64_t), peer);
                r.fence();
              }
              if (r.thread() == 0) r.p(flag, round, peer);
            } else if (r.thread() == 0) {
              r.wait_until(flag, grma::cmp::ge, round);
            }
          }
        }
      }
      if (me == 0 && r.thread() == 0) {
        r.template userdata<results>()->seconds = r.wtime() - start;
        if (how == core_mode::put_fence_p) GRMA_ASSERT(r, *data == std::uint64_t(iterations + 20));
      }
    }
    r.barrier(grma::world);
    if (how == core_mode::fetch_add && me == partner)
      GRMA_ASSERT(r, *counter == std::uint64_t(iterations + 20));
    r.free_symmetric(words);
  }
};

// The OpenSHMEM layer's put_signal of 8 bytes between world ranks 0 and
// `partner`, answered by a put_signal, `iterations` round trips after 20
// for warm-up: NVSHMEM's put with signal as its program measures it (the
// PE's threads put; one thread waits, then meets them). A program of its
// own: as a mode of core_round_trip its code slowed the other modes' loop.
struct shmem_put_signal_round_trip {
  int iterations;
  int partner;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    grma::shmem::handle sh(r);
    const int me = sh.my_pe();
    auto* words = static_cast<std::uint64_t*>(sh.calloc(3, sizeof(std::uint64_t)));
    std::uint64_t* signal = words;
    std::uint64_t* data = words + 1;
    std::uint64_t* outgoing = words + 2;
    if (me == 0 || me == partner) {
      const int peer = me == 0 ? partner : 0;
      double start = 0;
      for (int it = -20; it < iterations; ++it) {
        if (it == 0) start = r.wtime();
        const std::uint64_t round = std::uint64_t(it + 21);
        for (int half = 0; half < 2; ++half) {
          if ((half == 0) == (me == 0)) {
            if (r.thread() == 0) *outgoing = round;
            r.sync_threads();
            sh.put_signal(data, outgoing, 1, signal, round, grma::shmem::signal_set, peer);
          } else {
            if (r.thread() == 0) sh.signal_wait_until(signal, grma::shmem::cmp_ge, round);
            r.sync_threads();
          }
        }
      }
      if (me == 0 && r.thread() == 0) {
        r.template userdata<results>()->seconds = r.wtime() - start;
        GRMA_ASSERT(r, *data == std::uint64_t(iterations + 20));
      }
    }
    sh.barrier_all();
    sh.free(words);
  }
};

// The GASPI layer's ping-pong (papers/002's latency ping-pong): `bytes`
// (at least 8) by write_notify between world ranks 0 and `partner`, each
// taken with notify_waitsome and notify_reset and answered the same way,
// `iterations` round trips after 20 for warm-up. The queue is waited on
// every 256 writes, as a GPI-2 program keeps its queue from filling. The
// first word carries the round's number.
struct gaspi_write_notify_round_trip {
  std::size_t bytes;
  int iterations;
  int partner;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    namespace gaspi = grma::gaspi;
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(0, 2 * bytes, gaspi::group_all, gaspi::block, gaspi::mem_initialized);
    void* pointer = nullptr;
    g.segment_ptr(0, &pointer);
    auto* outgoing = static_cast<std::uint64_t*>(pointer);
    const auto* incoming =
        reinterpret_cast<const std::uint64_t*>(static_cast<unsigned char*>(pointer) + bytes);
    const int me = r.rank(grma::world);
    if (me == 0 || me == partner) {
      const int peer = me == 0 ? partner : 0;
      double start = 0;
      gaspi::notification_id_t id = 0;
      gaspi::notification_t value = 0;
      for (int it = -20; it < iterations; ++it) {
        if (it == 0) start = r.wtime();
        const auto round = gaspi::notification_t(it + 21);
        for (int half = 0; half < 2; ++half) {
          if ((half == 0) == (me == 0)) {
            if (r.thread() == 0) *outgoing = round;
            r.sync_threads();
            g.write_notify(0, 0, peer, 0, bytes, bytes, 0, round, 0, gaspi::block);
            if (it % 256 == 0) g.wait(0, gaspi::block);
          } else {
            g.notify_waitsome(0, 0, 1, &id, gaspi::block);
            g.notify_reset(0, id, &value);
          }
        }
      }
      if (me == 0 && r.thread() == 0) {
        r.template userdata<results>()->seconds = r.wtime() - start;
        GRMA_ASSERT(r, *incoming == std::uint64_t(iterations + 20) &&
                           value == std::uint32_t(iterations + 20));
      }
      g.wait(0, gaspi::block);
    }
    g.proc_term(gaspi::block);
  }
};

// The core's non-fetching atomic add at its rate: every thread of world
// rank 0 adds 1 to its own word of `partner`'s, `adds` times, then quiets;
// rank 0 times it from the first add to the end of its threads' quiets. A
// word per thread, as NVSHMEM's counterpart has: the rate the adds are
// issued and done at, not one word's contention. One add each before the
// clock runs (the first touch of the partner's pages); the partner checks
// its words after the final barrier.
struct atomic_add_rate {
  int adds;  // per thread
  int partner;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    auto* words = static_cast<std::uint64_t*>(r.calloc_symmetric(std::size_t(r.threads()), sizeof(std::uint64_t)));
    std::uint64_t* mine = words + r.thread();
    if (me == 0) {
      r.atomic_add(mine, std::uint64_t{1}, partner);
      r.quiet();
      r.sync_threads();
      const double start = r.wtime();
      for (int i = 0; i < adds; ++i) r.atomic_add(mine, std::uint64_t{1}, partner);
      r.quiet();
      r.sync_threads();
      if (r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    }
    r.barrier(grma::world);
    if (me == partner) GRMA_ASSERT(r, *mine == std::uint64_t(adds) + 1);
    r.free_symmetric(words);
  }
};

enum class collective_mode { world_barrier, team_barrier, allreduce_8b };

// `rounds` collectives of every rank of the job, timed by rank 0: the
// world communicator's barrier (gathered at one rank), the core's
// dissemination barrier over team_world, or an allreduce of one 8-byte
// sum over team_world (checked: each round sums other values, so a result
// left from the round before fails it).
struct collective_latency {
  int rounds;
  collective_mode how;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    auto* value = static_cast<std::uint64_t*>(r.calloc_symmetric(2, sizeof(std::uint64_t)));
    r.barrier(grma::world);
    const double start = r.wtime();
    for (int i = 0; i < rounds; ++i) {
      if (how == collective_mode::world_barrier) {
        r.barrier(grma::world);
      } else if (how == collective_mode::team_barrier) {
        r.barrier(grma::team_world);
      } else {
        if (r.thread() == 0) value[0] = std::uint64_t(i) + 1;
        r.sync_threads();
        r.allreduce(grma::team_world, value + 1, value, 1, grma::reduce_op::sum);
        GRMA_ASSERT(r, value[1] == (std::uint64_t(i) + 1) * std::uint64_t(r.size(grma::world)));
      }
    }
    if (r.rank(grma::world) == 0 && r.thread() == 0)
      r.template userdata<results>()->seconds = r.wtime() - start;
    r.barrier(grma::world);
    r.free_symmetric(value);
  }
};

// `active` ranks each put `bytes` to the rank `offset` ranks on, `iterations`
// times, one notification per put; rank 0 times the whole exchange. Both
// ways: the ranks put to also put back, each to the rank it hears from.
struct bandwidth {
  std::size_t bytes;
  int iterations;
  int active;
  int offset;
  bool both_ways = false;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    const int n = r.size(grma::world);
    const bool answers = both_ways && me >= offset && me < offset + active;
    const int target = answers ? me - offset : (me + offset) % n;
    const int source = answers                    ? me - offset
                       : both_ways && me < active ? me + offset
                                                  : (me + n - offset) % n;
    const bool puts = me < active || answers;
    const bool hears = source < active || (both_ways && me < active);
    // Only ranks that put or are put to hold buffers, so one rank's large
    // puts fit a heap that all ranks' would not.
    const std::size_t mine = puts || hears ? bytes : 0;
    auto* buffer = mine == 0 ? nullptr : static_cast<unsigned char*>(r.alloc(2 * mine));
    // Touched first, as any program's buffers are: the first use of memory
    // (shared memory on the CPU backend) is not the transfer's cost.
    for (std::size_t i = r.thread(); i < 2 * mine; i += r.threads()) buffer[i] = (unsigned char)i;
    grma::window w = r.window_create(grma::world, buffer, mine);
    // One put before the clock starts, as the copy baselines warm up: the
    // first touch of the target's pages (on a peer GPU, its mappings) is not
    // the transfer's cost.
    if (puts) r.put_notify(w, target, 0, bytes, buffer + bytes, 1);
    if (hears) r.wait_notifications(w, source, 1, 1);
    r.barrier(grma::world);
    const double start = r.wtime();
    if (puts)
      for (int it = 0; it < iterations; ++it) r.put_notify(w, target, 0, bytes, buffer + bytes, 1);
    r.barrier(grma::world);
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    // Take the notifications so the queues end empty.
    if (hears) r.wait_notifications(w, source, 1, iterations);
    r.window_free(w);
    if (buffer != nullptr) r.free(buffer);
  }
};

// The GASPI layer's throughput ping-pong (papers/002 §7): `active` pairs,
// rank i and rank i + offset. The first writes `bytes` to its partner with
// write_notify, the partner takes them (notify_waitsome, notify_reset) and
// writes the same bytes back; `iterations` round trips after one before
// the clock starts, every pair on its own queues (a rank's queues are its
// own). Rank 0 times them between barriers: 2 * bytes * active *
// iterations moved. Every rank makes the segment (segment_create is
// collective); only the pairs use it. `synchronous`: every rank meets the
// others in a barrier after each round trip (the paper's first version,
// which waited for all blocks before the next round; without it each pair
// goes on at its own pace, its "block overlapping" version).
struct gaspi_throughput {
  std::size_t bytes;
  int iterations;
  int active;
  int offset;
  bool synchronous = false;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    namespace gaspi = grma::gaspi;
    gaspi::handle g(r);
    g.proc_init(gaspi::block);
    g.segment_create(0, 2 * bytes, gaspi::group_all, gaspi::block);
    void* pointer = nullptr;
    g.segment_ptr(0, &pointer);
    auto* memory = static_cast<unsigned char*>(pointer);
    // Touched first: the first use of the pages is not the transfer's cost.
    // The barrier keeps a partner's first write out of a segment its owner
    // is still touching.
    for (std::size_t i = r.thread(); i < 2 * bytes; i += r.threads()) memory[i] = (unsigned char)i;
    g.barrier(gaspi::group_all, gaspi::block);
    const int me = r.rank(grma::world);
    const bool first = me < active, second = me >= offset && me < offset + active;
    const int partner = first ? me + offset : me - offset;
    gaspi::notification_id_t id = 0;
    gaspi::notification_t value = 0;
    auto round_trip = [&](int round) {
      const auto number = gaspi::notification_t(round);
      if (first) {
        g.write_notify(0, 0, partner, 0, bytes, bytes, 0, number, 0, gaspi::block);
        g.notify_waitsome(0, 1, 1, &id, gaspi::block);
        g.notify_reset(0, 1, &value);
      } else if (second) {
        g.notify_waitsome(0, 0, 1, &id, gaspi::block);
        g.notify_reset(0, 0, &value);
        g.write_notify(0, bytes, partner, 0, bytes, bytes, 1, number, 0, gaspi::block);
      }
      g.wait(0, gaspi::block);
      if (synchronous) g.barrier(gaspi::group_all, gaspi::block);
    };
    round_trip(1);
    g.barrier(gaspi::group_all, gaspi::block);
    const double start = r.wtime();
    for (int it = 0; it < iterations; ++it) round_trip(it + 2);
    g.barrier(gaspi::group_all, gaspi::block);
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    if (first || second) GRMA_ASSERT(r, value == gaspi::notification_t(iterations + 1));
    g.proc_term(gaspi::block);
  }
};

// Message rate: `active` ranks each put 8 bytes `messages` times to the
// rank `offset` on, as fast as they can, while that rank takes the
// notifications `batch` at a time; rank 0 times it all. Message k lands in
// word k of the target's window, checked after the run's last barrier.
// Host access: every rank registers `bytes` and a signal word after them,
// and waits (without taking part) until a host sets its signal.
struct host_target {
  std::size_t bytes;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    auto* buffer = static_cast<unsigned char*>(r.alloc(bytes + sizeof(std::uint64_t)));
    for (std::size_t i = r.thread(); i < bytes + sizeof(std::uint64_t); i += r.threads()) buffer[i] = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, buffer, bytes + sizeof(std::uint64_t));
    r.wait_signal(w, bytes, grma::cmp::ne, 0);
    r.window_free(w);
    r.free(buffer);
  }
};

struct message_rate {
  int messages;  // a multiple of batch
  int batch;
  int active;
  int offset;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const std::size_t bytes = std::size_t(messages) * sizeof(std::uint64_t);
    auto* words = static_cast<std::uint64_t*>(r.alloc(bytes + sizeof(std::uint64_t)));
    std::uint64_t* outgoing = words + messages;
    for (int i = r.thread(); i <= messages; i += r.threads()) words[i] = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, words, bytes);
    const int source = (me + n - offset) % n;
    r.barrier(grma::world);
    const double start = r.wtime();
    if (me < active)
      for (int k = 0; k < messages; ++k) {
        if (r.thread() == 0) *outgoing = std::uint64_t(k) + 1;
        r.sync_threads();
        r.put_notify(w, (me + offset) % n, std::size_t(k) * sizeof(std::uint64_t),
                     sizeof(std::uint64_t), outgoing, 2);
      }
    if (source < active)
      for (int k = 0; k < messages; k += batch) r.wait_notifications(w, source, 2, batch);
    r.barrier(grma::world);
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    if (source < active)
      for (int i = r.thread(); i < messages; i += r.threads())
        GRMA_ASSERT(r, r.read(&words[i]) == std::uint64_t(i) + 1);
    r.window_free(w);
    r.free(words);
  }
};

// Halo exchange, the stage of a stencil code (papers/000 §4.3): every rank
// of the job puts `bytes` to each neighbour in the chain of world ranks and
// waits for both of theirs, `rounds` times; rank 0 times it. A round costs
// what a latency under load costs: all ranks issue and wait at once.
struct halo_exchange {
  std::size_t bytes;
  int rounds;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const std::size_t area = bytes < 64 ? 64 : (bytes + 63) / 64 * 64;
    // [from the rank above | from the rank below | my row]
    auto* buffer = static_cast<unsigned char*>(r.alloc(3 * area));
    unsigned char* row = buffer + 2 * area;
    for (std::size_t i = r.thread(); i < area; i += r.threads()) row[i] = (unsigned char)(i + me);
    r.sync_threads();
    grma::window w = r.window_create(grma::world, buffer, 2 * area);
    r.barrier(grma::world);
    const double start = r.wtime();
    for (int round = 0; round < rounds; ++round) {
      if (me > 0) r.put_notify(w, me - 1, area, bytes, row, round);
      if (me + 1 < n) r.put_notify(w, me + 1, 0, bytes, row, round);
      if (me > 0) r.wait_notifications(w, me - 1, round, 1);
      if (me + 1 < n) r.wait_notifications(w, me + 1, round, 1);
    }
    r.barrier(grma::world);
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    for (std::size_t i = r.thread(); i < bytes; i += r.threads()) {
      if (me > 0) GRMA_ASSERT(r, r.read(&buffer[i]) == (unsigned char)(i + me - 1));
      if (me + 1 < n) GRMA_ASSERT(r, r.read(&buffer[area + i]) == (unsigned char)(i + me + 1));
    }
    r.window_free(w);
    r.free(buffer);
  }
};

// Matching throughput: `senders` ranks (1..senders) each leave `per_sender`
// notifications with tags 0..per_sender-1 (empty puts) at rank 0, which
// then matches them all, `rounds` times. `order`: 0 in arrival order per
// source (the head of the queue), 1 newest first (the far end of the queue),
// 2 with wildcards (any source, any tag), each a call a match; 3 and 4 as
// 0 and 2 with wait_some_notifications, up to `some_most` a call (each
// source's in turn with any tag, whose oldest come first; or wildcards),
// into one array of envelopes for the round, which rank 0 checks after
// timing: each source's tags in order, every notification once.
inline constexpr int some_most = 32;

struct matching {
  int senders;
  int per_sender;
  int rounds;
  int order;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    const int total = senders * per_sender;
    auto* word = static_cast<unsigned char*>(r.alloc(64 + sizeof(grma::envelope) * std::size_t(total)));
    auto* got = reinterpret_cast<grma::envelope*>(word + 64);  // the rank's threads share it
    grma::window w = r.window_create(grma::world, word, 64);
    double spent = 0;
    for (int round = 0; round < rounds; ++round) {
      if (me >= 1 && me <= senders)
        for (int t = 0; t < per_sender; ++t) r.put_notify(w, 0, 0, 0, word, t);
      r.barrier(grma::world);  // every notification is queued at rank 0
      if (me == 0) {
        const double start = r.wtime();
        if (order == 2) {
          for (int k = 0; k < total; ++k) r.wait_notifications(w, grma::any_source, grma::any_tag, 1);
        } else if (order == 3) {
          for (int s = 1; s <= senders; ++s)
            for (int t = 0; t < per_sender;) {
              grma::envelope* out = got + (s - 1) * per_sender + t;
              const int most = per_sender - t < some_most ? per_sender - t : some_most;
              t += r.wait_some_notifications(w, s, grma::any_tag, out, most);
            }
        } else if (order == 4) {
          for (int taken = 0; taken < total;) {
            const int most = total - taken < some_most ? total - taken : some_most;
            taken += r.wait_some_notifications(w, grma::any_source, grma::any_tag, got + taken, most);
          }
        } else {
          for (int s = 1; s <= senders; ++s)
            for (int t = 0; t < per_sender; ++t)
              r.wait_notifications(w, s, order == 0 ? t : per_sender - 1 - t, 1);
        }
        spent += r.wtime() - start;
        GRMA_ASSERT(r, !r.test_notifications(w, grma::any_source, grma::any_tag));
        if (order >= 3) {
          // By source: source s's tags in order at s's place. With wildcards:
          // each (source, tag) once (a bit each in `seen`, per source).
          bool right = true;
          for (int i = r.thread(); i < total; i += r.threads())
            right &= order == 4 || (got[i].source == 1 + i / per_sender && got[i].tag == i % per_sender);
          if (order == 4 && r.thread() == 0) {
            std::uint64_t seen[8] = {};
            for (int i = 0; i < total; ++i) {
              const int s = got[i].source - 1, t = got[i].tag;
              right &= s >= 0 && s < senders && s < 8 && t >= 0 && t < per_sender && t < 64 &&
                       (seen[s] >> t & 1u) == 0;
              if (s >= 0 && s < 8 && t >= 0 && t < 64) seen[s] |= std::uint64_t{1} << t;
            }
          }
          GRMA_ASSERT(r, right);
        }
      }
      r.barrier(grma::world);
    }
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = spent;
    r.window_free(w);
    r.free(word);
  }
};

// Empty notifications back and forth between world ranks 0 and 1,
// `iterations` round trips after 20 for warm-up: rank 0 takes each with
// wait_notification (any source, any tag) or, with `some`, with
// wait_some_notifications for up to `some_most`. One arrives at a time, so
// this times a call that must wait for its first match; other ranks wait
// at the final barrier.
struct waiting_round_trip {
  int iterations;
  bool some;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    auto* word = static_cast<unsigned char*>(r.alloc(64 + sizeof(grma::envelope) * some_most));
    auto* got = reinterpret_cast<grma::envelope*>(word + 64);  // the rank's threads share it
    grma::window w = r.window_create(grma::world, word, 64);
    r.barrier(grma::world);
    if (me <= 1) {
      double start = 0;
      for (int it = -20; it < iterations; ++it) {
        if (it == 0) start = r.wtime();
        const int tag = (it + 20) % 64;
        if (me == 1) {
          r.put_notify(w, 0, 0, 0, word, tag);
          r.wait_notifications(w, 0, tag, 1);
          continue;
        }
        int k = 1;
        grma::envelope e{};
        if (some) {
          k = r.wait_some_notifications(w, grma::any_source, grma::any_tag, got, some_most);
          e = got[0];
        } else {
          e = r.wait_notification(w, grma::any_source, grma::any_tag);
        }
        GRMA_ASSERT(r, k == 1 && e.source == 1 && e.tag == tag);
        r.put_notify(w, 1, 0, 0, word, tag);
      }
      if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    }
    r.barrier(grma::world);
    r.window_free(w);
    r.free(word);
  }
};

}  // namespace bench
