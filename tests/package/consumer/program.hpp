// A user's program against the installed grma: one rank puts 42 to another
// (no argument), or ranks fail a GRMA_ASSERT ("assert-one": rank 3 of 4,
// "assert-all": every rank), whose message must name the rank, this file,
// the line and the expression on every backend.
#include <cstdio>
#include <cstring>

#include <grma/grma.hpp>

struct exchange {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    auto* value = static_cast<int*>(r.alloc(sizeof(int)));
    grma::window w = r.window_create(grma::world, value, sizeof(int));
    if (r.rank(grma::world) == 0) {
      if (r.thread() == 0) *value = 42;
      r.sync_threads();
      r.put_notify(w, 1, 0, sizeof(int), value, 0);
    } else if (r.rank(grma::world) == 1) {
      r.wait_notifications(w, 0, 0, 1);
      if (r.thread() == 0) *r.template userdata<int>() = r.read(value);
    }
    r.window_free(w);
    r.free(value);
  }
};

struct failing_assert {
  bool every_rank;
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    if (every_rank || me == 3) GRMA_ASSERT(r, me < 0);
    r.barrier(grma::world);
  }
};

int main(int argc, char** argv) try {
  grma::settings s = grma::settings::from_environment();
  grma::runtime rt(s);
  const grma::launch_options four{.ranks_per_device = 4};
  if (argc > 1) {
    rt.run(failing_assert{std::strcmp(argv[1], "assert-all") == 0}, four);
    std::printf("no assertion failed\n");
    return 1;
  }
  int received = -1;
  rt.run(exchange{}, {.ranks_per_device = 4, .userdata = &received, .userdata_size = sizeof received});
  std::printf("consumer received %d\n", received);
  return received == 42 ? 0 : 1;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
