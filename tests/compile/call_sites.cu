// A rank program with 100 grma call sites, as a user's application has them:
// what one call site costs in code and compile time (issue 30's target: 100
// sites in at most 90 s of nvcc on one core). scripts/compile-cost.sh
// compiles it with nvcc and reports the time and the PTX size; the build
// compiles it (as C++ without CUDA) and runs it, under the sanitizers too,
// so that it stays a valid program: no two ranks touch a word without a
// synchronization between them (the window's regions: [0, 64) for puts,
// 3072 for a value put, 1024 the signal and 1536 its data, 2048 a put with
// an immediate, the sources at 3584; in the symmetric block the sources are
// words 0-7 and 480-495, which nobody writes, and a get reads what only
// this rank wrote).
#include <cstdint>
#include <grma/grma.hpp>

namespace {

struct hundred_call_sites {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int next = (me + 1) % n, previous = (me + n - 1) % n;
    auto* heap = static_cast<std::uint64_t*>(r.alloc(4096));                       // 1
    auto* sym = static_cast<std::uint64_t*>(r.calloc_symmetric(512, 8));           // 2
    grma::window w = r.window_create(grma::world, heap, 4096);                     // 3
    for (int round = 0; round < 2; ++round) {
      r.put_notify(w, next, 0, 64, heap + 448, round);                             // 4
      r.put_value_notify(w, next, 3072, std::uint64_t{7}, round);                  // 5
      r.get_notify(w, next, 128, 64, heap + 320, round + 10);                      // 6
      r.wait_notifications(w, grma::any_source, round + 10);                       // 7
      r.put_signal(w, next, 1536, 8, heap + 448, 1024, 1, grma::signal_op::add);   // 8
      r.wait_signal(w, 1024, grma::cmp::ge, std::uint64_t(round + 1));             // 9
      const grma::envelope e = r.wait_notification(w, previous, round);            // 10: the first put
      GRMA_ASSERT(r, e.immediate == 0);                                            // (and the second)
      r.wait_notifications(w, previous, round);
      r.barrier(grma::world);                                                      // 11
    }
    grma::envelope got{};
    r.put_notify(w, next, 2048, 8, heap + 448, 3, 77);                           // 12
    while (!r.test_notification(w, previous, 3, got)) {                            // 13
    }
    r.put(sym + 8, sym, 64, next);                                                 // 14
    r.put_nbi(sym + 16, sym, 64, previous);                                        // 15
    r.get(sym + 32, sym + 8, 64, next);                                            // 16
    r.get_nbi(sym + 48, sym + 16, 64, previous);                                  // 17
    r.quiet();                                                                     // 18
    r.iput(sym + 64, sym, 2, 1, 8, next);                                          // 19
    r.iget(sym + 96, sym + 64, 1, 2, 8, next);                                     // 20
    r.fence();                                                                     // 21
    if (r.thread() == 0) {
      r.p(sym + 128, std::uint64_t{1}, next);                                      // 22
      const std::uint64_t v = r.g(sym + 128, previous);                            // 23
      r.atomic_add(sym + 129, v, next);                                            // 24
      r.atomic_fetch_add(sym + 130, std::uint64_t{2}, previous);                   // 25
      r.atomic_inc(sym + 131, next);                                               // 26
      r.atomic_fetch_inc(sym + 132, previous);                                     // 27
      r.atomic_set(sym + 133, std::uint64_t{3}, next);                             // 28
      r.atomic_swap(sym + 134, std::uint64_t{4}, previous);                        // 29
      r.atomic_compare_swap(sym + 135, std::uint64_t{0}, std::uint64_t{5}, next);  // 30
      r.atomic_fetch(sym + 136, previous);                                         // 31
      r.atomic_or(sym + 137, std::uint64_t{6}, next);                              // 32
      r.atomic_fetch_and(sym + 138, std::uint64_t{7}, previous);                   // 33
      r.atomic_xor(sym + 139, std::uint64_t{8}, next);                             // 34
      r.wait_until(sym + 128, grma::cmp::eq, std::uint64_t{1});                    // 35
      r.wait_until(sym + 140, grma::cmp::ne, std::uint64_t{0}, grma::within{0.001});  // 36
      std::size_t index = 0;
      r.wait_until_any(sym + 128, 4, nullptr, grma::cmp::ne, std::uint64_t{0});    // 37
      r.wait_until_all(sym + 128, 1, nullptr, grma::cmp::ne, std::uint64_t{0});    // 38
      r.wait_until_some(sym + 128, 1, &index, nullptr, grma::cmp::ne, std::uint64_t{0});  // 39
      r.test(sym + 128, grma::cmp::eq, std::uint64_t{1});                          // 40
    }
    r.sync_threads();
    grma::context ctx = r.ctx_create();                                            // 41
    r.put(sym + 160, sym, 64, next, ctx);                                          // 42
    r.quiet(ctx);                                                                  // 43
    r.ctx_destroy(ctx);                                                            // 44
    r.barrier(grma::team_world);                                                   // 45
    grma::team row = grma::team_none, column = grma::team_none;
    r.team_split_2d(grma::team_world, 2, row, column);                             // 46
    r.allreduce(row, sym + 200, sym + 192, 4, grma::reduce_op::sum);               // 47
    r.broadcast(column, sym + 208, sym + 192, 32, 0);                              // 48
    r.fcollect(grma::team_world, sym + 256, sym + 192, 8);                         // 49
    r.team_destroy(column);                                                        // 50
    r.team_destroy(row);                                                           // 51
    // Fifty more, in the same mix: a second phase of the application.
    for (int round = 0; round < 2; ++round) {
      r.put_notify(w, previous, 0, 64, heap + 448, round);                         // 52
      r.wait_notifications(w, next, round);                                        // 53
      r.get_notify(w, previous, 128, 64, heap + 320, round + 10);                  // 54
      r.wait_notifications(w, grma::any_source, round + 10);                       // 55
      r.put_signal(w, previous, 1536, 8, heap + 448, 1024, 1, grma::signal_op::add);  // 56
      r.wait_signal(w, 1024, grma::cmp::ge, std::uint64_t(round + 3));             // 57
      r.barrier(grma::device);                                                     // 58
      r.barrier(grma::world);                                                      // 59
    }
    r.put(sym + 8, sym + 480, 128, next);                                          // 60
    r.get(sym + 32, sym + 8, 128, next);                                           // 61
    r.put_nbi(sym + 16, sym + 480, 128, next);                                      // 62
    r.get_nbi(sym + 48, sym + 8, 128, next);                                       // 63
    r.quiet();                                                                     // 64
    if (r.thread() == 0) {
      r.p(sym + 141, std::uint64_t{1}, previous);                                  // 65
      r.g(sym + 141, next);                                                        // 66
      r.atomic_add(sym + 142, std::uint64_t{1}, previous);                         // 67
      r.atomic_fetch_add(sym + 143, std::uint64_t{2}, next);                       // 68
      r.atomic_inc(sym + 144, previous);                                           // 69
      r.atomic_fetch_inc(sym + 145, next);                                         // 70
      r.atomic_set(sym + 146, std::uint64_t{3}, previous);                         // 71
      r.atomic_swap(sym + 147, std::uint64_t{4}, next);                            // 72
      r.atomic_compare_swap(sym + 148, std::uint64_t{0}, std::uint64_t{5}, previous);  // 73
      r.atomic_fetch(sym + 149, next);                                             // 74
      r.atomic_and(sym + 150, std::uint64_t{6}, previous);                         // 75
      r.atomic_fetch_or(sym + 151, std::uint64_t{7}, next);                        // 76
      r.atomic_fetch_xor(sym + 152, std::uint64_t{8}, previous);                   // 77
      r.wait_until(sym + 141, grma::cmp::ge, std::uint64_t{1});                    // 78
      r.test_any(sym + 141, 2, nullptr, grma::cmp::ne, std::uint64_t{0});          // 79
      r.test_all(sym + 141, 1, nullptr, grma::cmp::ne, std::uint64_t{0});          // 80
    }
    r.sync_threads();
    r.alltoall(grma::team_world, sym + 320, sym + 384, 8);                         // 81
    r.reduce(grma::team_world, sym + 200, sym + 192, 2, grma::reduce_op::max, 0);  // 82
    r.reduce_scatter(grma::team_world, sym + 448, sym + 384, 1, grma::reduce_op::min);  // 83
    r.barrier(grma::team_node);                                                    // 84
    r.wait_notifications(w, grma::any_source, 99, 1, grma::within{0.001});         // 85
    r.test_notifications(w, grma::any_source, 99);                                 // 86
    r.log() << "rank " << me << " done";                                           // 87
    GRMA_ASSERT(r, r.team_rank(grma::team_world) == me);                           // 88, 89
    r.one_warp().put_notify(w, next, 0, 64, heap + 448, 5);                        // 90, 91
    r.wait_notifications(w, previous, 5);                                          // 92
    r.one_warp().put(sym + 8, sym, 64, next);                                      // 93, 94
    r.quiet();                                                                     // 95
    r.barrier(grma::world);                                                        // 96
    r.window_free(w);                                                              // 97
    r.free_symmetric(sym);                                                         // 98
    r.free(heap);                                                                  // 99
    r.barrier(grma::world);                                                        // 100
  }
};

}  // namespace

int main() {
  grma::runtime rt;
  rt.run(hundred_call_sites{}, {.ranks_per_device = 4});
}
