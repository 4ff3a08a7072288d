// A program that does not catch grma::error: a bad argument in rank code, or a
// stuck rank that the watchdog ends, must still end the process with a
// nonzero status and the error's message. Runs on either backend; the
// last-warp case fails on a GPU only (a CPU rank is its own whole warp).
#include <cstring>

#include <grma/grma.hpp>

enum class failure {
  bad_target,    // a put to a rank that does not exist
  stuck,         // a wait for a notification nobody sends
  last_warp,     // one_warp's put by a rank's last warp, which has 16 threads
};

struct fails {
  failure what;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    const int me = r.rank(grma::world);
    if (what == failure::stuck && me == 0) r.wait_notifications(w, 1, 9, 1);  // never sent
    if (what == failure::bad_target && me == 1) r.put_notify(w, 5, 0, 8, memory, 0);
    if (what == failure::last_warp && me == 1 && r.thread() >= 32)
      r.one_warp().put_notify(w, 0, 0, 8, memory, 0);
    r.window_free(w);
  }
};

int main(int argc, char** argv) {
  grma::runtime rt(argc, argv);
  const char* name = argc > 1 ? argv[1] : "";
  failure what = failure::bad_target;
  if (std::strcmp(name, "stuck") == 0) what = failure::stuck;
  if (std::strcmp(name, "last-warp") == 0) what = failure::last_warp;
  grma::launch_options options;
  if (what == failure::last_warp) options.threads_per_rank = 48;
  rt.run(fails{what}, options);
  return 0;
}
