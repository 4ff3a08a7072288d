// Ping-pong between world ranks 0 and 1 with notified puts: round-trip time
// for 8 B to 1 MiB. Every message is checked byte for byte.
#include <cstdio>

#include <grma/grma.hpp>

constexpr int size_count = 18;  // 8 B, 16 B, ..., 1 MiB

struct results {
  double rtt_us[size_count];
  int iterations[size_count];
};

struct ping_pong {
  static constexpr std::size_t max_bytes = std::size_t(1) << 20;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    auto* buffer = static_cast<unsigned char*>(r.alloc(2 * max_bytes));
    unsigned char* inbox = buffer;  // peers put here
    unsigned char* outbox = buffer + max_bytes;
    grma::window win = r.window_create(grma::world, inbox, max_bytes);

    if (me < 2) {
      const int peer = 1 - me;
      int tag = 0;
      for (std::size_t bytes = 8; bytes <= max_bytes; bytes *= 2, ++tag) {
        const int iterations = bytes <= 4096 ? 2000 : bytes <= 65536 ? 500 : 100;
        for (std::size_t i = r.thread(); i < bytes; i += r.threads())
          outbox[i] = static_cast<unsigned char>(i * 7 + bytes + me);
        r.sync_threads();
        double start = 0;
        for (int it = -10; it < iterations; ++it) {  // 10 warm-up round trips
          if (it == 0) start = r.wtime();
          if (me == 0) {
            r.put_notify(win, peer, 0, bytes, outbox, tag);
            r.wait_notifications(win, peer, tag, 1);
          } else {
            r.wait_notifications(win, peer, tag, 1);
            r.put_notify(win, peer, 0, bytes, outbox, tag);
          }
        }
        const double rtt_us = (r.wtime() - start) / iterations * 1e6;
        // Each side checks the last message it received, its threads a part
        // each, outside the timed loop; rank 1 then tells rank 0 (an empty
        // notification), whose next size's first put would overwrite it.
        bool ok = true;
        for (std::size_t i = r.thread(); i < bytes; i += r.threads())
          ok = ok && r.read(&inbox[i]) == static_cast<unsigned char>(i * 7 + bytes + peer);
        GRMA_ASSERT(r, ok);
        r.sync_threads();
        if (me == 1)
          r.put_notify(win, peer, 0, 0, outbox, size_count + tag);
        else
          r.wait_notifications(win, peer, size_count + tag, 1);
        if (me == 0) {
          auto* out = r.template userdata<results>();
          out->rtt_us[tag] = rtt_us;
          out->iterations[tag] = iterations;
        }
      }
    }
    r.barrier(grma::world);
    r.window_free(win);
    r.free(buffer);
  }
};

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  if (rt.info(ping_pong{}).rank_count < 2) {
    std::fprintf(stderr, "ping_pong needs at least 2 ranks (GRMA_RANKS_PER_DEVICE)\n");
    return 1;
  }
  results out{};
  rt.run(ping_pong{}, {.userdata = &out, .userdata_size = sizeof(out)});
  std::printf("notified-put ping-pong between ranks 0 and 1 (%s backend)\n",
              rt.backend() == grma::backend_kind::cpu ? "cpu" : "cuda");
  std::printf("%10s %16s %12s\n", "bytes", "round trip [us]", "iterations");
  for (int i = 0; i < size_count; ++i)
    std::printf("%10zu %16.3f %12d\n", std::size_t(8) << i, out.rtt_us[i], out.iterations[i]);
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
