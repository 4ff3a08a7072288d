// Jobs across nodes (mpirun with GRMA_NODE_ID set per process, so that
// processes of one machine are "other nodes" to each other). One program,
// one case per argument; a case ends with status 0 only if every check held
// (a failed GRMA_ASSERT fails the job with its line).
//   flood   100,000 small notified puts all-to-all through tiny queues: every
//           notification arrives exactly once and every payload is in place
//   large   64 MiB puts and gets (of 64 MiB less a word) between ranks of
//           different nodes, checked byte for byte
//   forged  a request whose range the origin did not check: the target's
//           engine refuses it and the job fails with a message naming the
//           origin (nothing is written); forged_symmetric and forged_atomic
//           the same for a put past the target's symmetric slice and an
//           atomic on a misaligned word
//   order   one origin's notifications arrive in the order it sent them,
//           though a large put's data comes after a small put's header; a
//           get of 0 bytes and then a large get each return with their data
//   windows world windows get the same handle on every node whatever device
//           windows each node held (run with --grma-max-windows=2)
//   late    a node whose ranks finish 7 s after the others': the job succeeds
//   late_assert  a rank fails after the other node's ranks have returned:
//           every process reports its assertion
//   late_throw  the same with the rank's program throwing (CPU backend): its
//           process rethrows the exception, the others name its rank and what()
//   stuck   rank 0 waits for a notification nobody sends while the other
//           node's ranks have returned: its watchdog ends the job, and the
//           other node reports that watchdog's report
//   stuck_node  the same with every rank of the first node waiting (run with
//           two processes per node, whose watchdogs may both fire)
//   stuck_both  rank 0 as in stuck, and rank 1 (the other node, whose
//           watchdog is slower) waits too: its node's report names both
//   exits   rank 1 (a CPU rank, the last process's) calls exit(5) while
//           rank 0 waits for it: no process hangs (one that exits while its
//           ranks run leaves MPI unfinalized, as a lost one; the others report
//           it, or their watchdog's report, and leave)
//   held    rank 1 notifies rank 0 (the other node) once more than rank 0's
//           queue holds (run with --grma-queue-capacity=4) and enters a
//           barrier where rank 0 waits: rank 1's arrival waits for its last
//           notification to be in place, which the watchdog names
// The programs run on either backend (a rank's threads share the loops, and
// what a put sends is in grma memory), so the same cases run on two GPUs
// made two nodes.
#include <cstdio>
#include <cstdlib>
#include <grma/grma.hpp>
#include <stdexcept>
#include <string>

namespace grma::detail {
// Lets this test queue a command past the origin's checks.
template <class Rank>
struct rank_test_access {
  GRMA_HOST_DEVICE static void push(Rank& r, const remote_command& c) {
    r.push_command(c, call::put_notify, r.take_command_ticket());
  }
};
}  // namespace grma::detail

namespace {

GRMA_HOST_DEVICE inline std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^ c;
  x ^= x >> 31;
  return x * 0x94d049bb133111ebull;
}

constexpr int flood_total = 100000;

// Rounds of one 8-byte put to every other rank, each into its own slot of
// the target's window, then waiting for everyone's put of the round (so no
// cycle of full queues can form, however small they are).
struct flood {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int rounds = (flood_total + n * (n - 1) - 1) / (n * (n - 1));
    const std::size_t slots = std::size_t(n) * std::size_t(rounds);
    auto* inbox = static_cast<std::uint64_t*>(r.alloc((slots + 1) * 8));
    std::uint64_t* outgoing = inbox + slots;  // outside the window
    for (std::size_t i = std::size_t(r.thread()); i < slots; i += std::size_t(r.threads())) inbox[i] = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, inbox, slots * 8);
    for (int round = 0; round < rounds; ++round) {
      for (int step = 1; step < n; ++step) {
        const int target = (me + step) % n;
        if (r.thread() == 0) *outgoing = mix(std::uint64_t(me), std::uint64_t(target), std::uint64_t(round));
        r.sync_threads();
        r.put_notify(w, target, (std::size_t(me) * rounds + round) * 8, 8, outgoing, round % 1000);
      }
      for (int step = 1; step < n; ++step)
        r.wait_notifications(w, (me + n - step) % n, round % 1000, 1);
    }
    r.barrier(grma::world);
    // Exactly once: nothing is left over.
    GRMA_ASSERT(r, !r.test_notifications(w, grma::any_source, grma::any_tag));
    for (std::size_t i = std::size_t(r.thread()); i < slots; i += std::size_t(r.threads())) {
      const int source = int(i / std::size_t(rounds)), round = int(i % std::size_t(rounds));
      const std::uint64_t want =
          source == me ? 0 : mix(std::uint64_t(source), std::uint64_t(me), std::uint64_t(round));
      GRMA_ASSERT(r, r.read(&inbox[i]) == want);
    }
    r.window_free(w);
    r.free(inbox);
  }
};

constexpr std::size_t large_bytes = std::size_t(64) << 20;

// Rank pairs (me, me + n/2) sit on different nodes when each process has as
// many ranks and there are two or more nodes in order.
struct large {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    constexpr std::size_t words = large_bytes / 8;
    auto* mine = static_cast<std::uint64_t*>(r.alloc(large_bytes));
    auto* landed = static_cast<std::uint64_t*>(r.alloc(large_bytes));
    const auto first = std::size_t(r.thread()), stride = std::size_t(r.threads());
    for (std::size_t i = first; i < words; i += stride) mine[i] = mix(std::uint64_t(me), i * 8, 1);
    r.sync_threads();
    grma::window w = r.window_create(grma::world, landed, large_bytes);
    grma::window source = r.window_create(grma::world, mine, large_bytes);
    const int partner = (me + n / 2) % n;
    r.put_notify(w, partner, 0, large_bytes, mine, 1);
    r.wait_notifications(w, partner, 1, 1);
    for (std::size_t i = first; i < words; i += stride)
      GRMA_ASSERT(r, landed[i] == mix(std::uint64_t(partner), i * 8, 1));
    // A get of all but the first word of the partner's range, into the
    // cleared destination: the engines move it in chunks, the last of
    // which is short by that word.
    r.barrier(grma::world);
    for (std::size_t i = first; i < words; i += stride) landed[i] = 0;
    r.sync_threads();
    r.get_notify(source, partner, 8, large_bytes - 8, landed + 1, 2);
    for (std::size_t i = first; i < words; i += stride)
      GRMA_ASSERT(r, landed[i] == (i == 0 ? 0 : mix(std::uint64_t(partner), i * 8, 1)));
    // Our get notified us at the partner; take the partner's.
    r.wait_notifications(source, partner, 2, 1);
    r.barrier(grma::world);
    r.window_free(source);
    r.window_free(w);
    r.free(landed);
    r.free(mine);
  }
};

// World rank 0 sends rank n-1 (another node) a put past the end of its
// range. Rank n-1 waits for a notification that never comes: the refusal
// must end the job.
struct forged {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* range = static_cast<unsigned char*>(r.alloc(64));
    grma::window w = r.window_create(grma::world, range, 64);
    if (me == 0 && r.thread() == 0) {  // the command is the rank's leading thread's to queue
      grma::detail::remote_command c{};
      c.op = grma::detail::remote_op::put_notify;
      c.origin = 0;
      c.window = grma::detail::window_key(w.slot, w.generation);
      c.target = n - 1;
      c.offset = 4096;
      c.bytes = 8;
      c.inline_bytes = 8;
      grma::detail::rank_test_access<Rank>::push(r, c);
    }
    if (me == n - 1) r.wait_notifications(w, 0, 0, 1);
    r.barrier(grma::world);
  }
};

// The same for the core's operations on the symmetric heap: rank 0 sends
// rank n-1 a put past the end of its slice (`atomic`: a 4-byte atomic at an
// offset that is not a multiple of 4). Rank n-1 waits on a word nobody
// writes.
struct forged_symmetric {
  bool atomic;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* word = static_cast<std::uint64_t*>(r.calloc_symmetric(1, sizeof(std::uint64_t)));
    if (me == 0 && r.thread() == 0) {
      grma::detail::remote_command c{};
      c.origin = 0;
      c.target = n - 1;
      if (atomic) {
        c.op = grma::detail::remote_op::atomic;
        c.signal_op = std::uint8_t(grma::detail::remote_atomic::add);
        c.offset = 6;
        c.bytes = 4;
      } else {
        c.op = grma::detail::remote_op::put;
        c.offset = std::uint64_t(1) << 40;
        c.bytes = 8;
        c.inline_bytes = 8;
      }
      grma::detail::rank_test_access<Rank>::push(r, c);
    }
    if (me == n - 1) r.wait_until(word, grma::cmp::ne, std::uint64_t{0});
    r.barrier(grma::world);
  }
};

// Rank 0 and rank n-1 are on different nodes.
struct order {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    constexpr std::size_t big = 64 << 10;
    auto* buffer = static_cast<unsigned char*>(r.alloc(2 * big));
    unsigned char* landed = buffer + big;
    const auto first = std::size_t(r.thread()), stride = std::size_t(r.threads());
    for (std::size_t i = first; i < big; i += stride) buffer[i] = static_cast<unsigned char>(me + 1);
    r.sync_threads();
    grma::window w = r.window_create(grma::world, buffer, big);
    for (int round = 0; round < 200; ++round) {
      if (me == 0) {
        r.put_notify(w, n - 1, 0, big, buffer, 1);
        r.put_notify(w, n - 1, 0, 8, buffer, 2);
        r.wait_notifications(w, n - 1, 3, 1);
      } else if (me == n - 1) {
        // The oldest notification (any tag) must be the large put's: what
        // comes next is the small put's.
        r.wait_notifications(w, 0, grma::any_tag, 1);
        bool in_order = false;
        for (;;) {
          if (r.test_notifications(w, 0, 2, 1)) {
            in_order = true;
            break;
          }
          if (r.test_notifications(w, 0, 1, 1)) break;
        }
        GRMA_ASSERT(r, in_order);
        r.put_notify(w, 0, 0, 0, nullptr, 3);
      }
    }
    r.barrier(grma::world);
    if (me == 0) {
      for (std::size_t i = first; i < big; i += stride) landed[i] = 0;
      r.sync_threads();
      r.get_notify(w, n - 1, 0, 0, landed, 4);
      r.get_notify(w, n - 1, 0, big, landed, 5);
      // Rank n-1's range holds what rank 0 put there.
      for (std::size_t i = first; i < big; i += stride) GRMA_ASSERT(r, landed[i] == 1);
    }
    if (me == n - 1) r.wait_notifications(w, 0, grma::any_tag, 2);
    r.barrier(grma::world);
    r.window_free(w);
    r.free(buffer);
  }
};

// A world window is created and freed; node 0 (rank 0) then holds two device
// windows at once and the others one; then a world window must still work.
struct windows {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    auto* buffer = static_cast<std::uint64_t*>(r.alloc(64));
    grma::window first = r.window_create(grma::world, buffer, 64);
    r.window_free(first);
    grma::window d1 = r.window_create(grma::device, buffer, 64);
    grma::window d2 = me == 0 ? r.window_create(grma::device, buffer, 64) : grma::window_none;
    r.window_free(d1);
    if (me == 0) r.window_free(d2);
    grma::window w = r.window_create(grma::world, buffer, 64);
    if (r.thread() == 0) buffer[1] = 7 + std::uint64_t(me);  // others put into word 0 only
    r.sync_threads();
    r.put_notify(w, (me + 1) % n, 0, 8, buffer + 1, 1);
    r.wait_notifications(w, (me + n - 1) % n, 1, 1);
    GRMA_ASSERT(r, r.read(buffer) == 7 + std::uint64_t((me + n - 1) % n));
    r.barrier(grma::world);
    r.window_free(w);
  }
};

struct late {
  bool fail;
  bool throws;  // fails by throwing (a CPU rank's program may)
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    if (me != n - 1) return;
    const double until = r.wtime() + (fail ? 0.5 : 7.0);
    while (r.wtime() < until) {
    }
#if !defined(__CUDA_ARCH__)
    if (fail && throws) throw std::runtime_error("late_throw");
#endif
    GRMA_ASSERT(r, !fail);
  }
};

struct stuck {
  bool whole_node;  // every rank of the first half of the world (the first node) waits
  bool rank_1_too;  // rank 1 waits as well (for another tag)
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    const int me = r.rank(grma::world);
    if (me == 0 || (whole_node && 2 * me < r.size(grma::world)))
      r.wait_notifications(w, 1, 9, 1);  // never sent
    if (me == 1 && rank_1_too) r.wait_notifications(w, 0, 7, 1);  // nor this
  }
};

struct exits {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    r.barrier(grma::world);
#if !defined(__CUDA_ARCH__)
    if (r.rank(grma::world) == 1) std::exit(5);
#endif
    if (r.rank(grma::world) == 0) r.wait_notifications(w, 1, 9, 1);  // never sent
  }
};

struct held {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    if (r.rank(grma::world) == 1)
      for (int i = 0; i < 5; ++i) r.put_notify(w, 0, 0, 0, memory, 3);
    r.barrier(grma::world);  // rank 0 takes none of them
  }
};

}  // namespace

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  const std::string which = argc > 1 ? argv[1] : "";
  if (which == "flood") {
    rt.run(flood{});
  } else if (which == "large") {
    rt.run(large{});
  } else if (which == "forged") {
    rt.run(forged{});
  } else if (which == "forged_symmetric" || which == "forged_atomic") {
    rt.run(forged_symmetric{which == "forged_atomic"});
  } else if (which == "order") {
    rt.run(order{});
  } else if (which == "windows") {
    rt.run(windows{});
  } else if (which == "late" || which == "late_assert" || which == "late_throw") {
    rt.run(late{which != "late", which == "late_throw"});
  } else if (which == "stuck" || which == "stuck_node" || which == "stuck_both") {
    rt.run(stuck{which == "stuck_node", which == "stuck_both"});
  } else if (which == "exits") {
    rt.run(exits{});
  } else if (which == "held") {
    rt.run(held{});
  } else {
    std::fprintf(stderr,
                 "usage: %s "
                 "flood|large|forged|forged_symmetric|forged_atomic|order|windows|late|late_assert|"
                 "late_throw|stuck|stuck_node|stuck_both|exits|held "
                 "[--grma-...]\n",
                 argv[0]);
    return 2;
  }
  std::printf("%s: passed\n", which.c_str());
  return 0;
} catch (const std::exception& e) {  // grma's errors, and late_throw's own
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
