// What the grma benchmarks share: the rank programs they time, and running
// one with a result record in userdata. Same device, two devices or two
// nodes is only a matter of where ranks 0 and 1 (and the two halves of the
// job) are.
#pragma once

#include <grma/grma.hpp>

namespace bench {

struct results {
  double seconds;  // measured by rank 0
  int mismatches;
};

enum class mode { notified_put, signal_put, notified_get };

// World ranks 0 and 1 ping-pong `bytes` (`iterations` round trips after 20
// for warm-up); other ranks wait at the final barrier. Rank 0 checks the
// last bytes it received.
struct ping_pong {
  std::size_t bytes;
  int iterations;
  mode how;

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
    if (me < 2) {
      const int peer = 1 - me;
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
        int bad = 0;
        for (std::size_t i = r.thread(); i < bytes; i += r.threads())
          bad += r.read(&inbox[i]) != (unsigned char)(i + peer);
        if (r.thread() == 0) {
          auto* o = r.template userdata<results>();
          o->seconds = seconds;
          o->mismatches = bad;
        }
      }
    }
    r.barrier(grma::world);
    r.window_free(out);
    r.window_free(in);
    r.free(outbox);
    r.free(inbox);
  }
};

// `active` ranks each put `bytes` to the rank half the job away (on two
// devices: its counterpart on the other), `iterations` times, one
// notification per put; rank 0 times the whole exchange.
struct bandwidth {
  std::size_t bytes;
  int iterations;
  int active;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    const int n = r.size(grma::world);
    auto* buffer = static_cast<unsigned char*>(r.alloc(2 * bytes));
    // Touched first, as any program's buffers are: the first use of memory
    // (shared memory on the CPU backend) is not the transfer's cost.
    for (std::size_t i = r.thread(); i < 2 * bytes; i += r.threads()) buffer[i] = (unsigned char)i;
    grma::window w = r.window_create(grma::world, buffer, bytes);
    r.barrier(grma::world);
    const double start = r.wtime();
    if (me < active)
      for (int it = 0; it < iterations; ++it)
        r.put_notify(w, (me + n / 2) % n, 0, bytes, buffer + bytes, 1);
    r.barrier(grma::world);
    if (me == 0 && r.thread() == 0) r.template userdata<results>()->seconds = r.wtime() - start;
    // Take the notifications so the queues end empty.
    const int source = (me + n - n / 2) % n;
    if (source < active) r.wait_notifications(w, source, 1, iterations);
    r.window_free(w);
    r.free(buffer);
  }
};

template <class Program>
results run(grma::runtime& rt, const Program& p, int ranks_per_device, int threads) {
  results out{};
  rt.run(p, {.threads_per_rank = threads, .ranks_per_device = ranks_per_device, .userdata = &out,
             .userdata_size = sizeof out});
  return out;
}

}  // namespace bench
