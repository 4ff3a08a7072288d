// A program that does not catch grma::error: a bad argument in rank code, or a
// stuck rank that the watchdog ends, must still end the process with a
// nonzero status and the error's message. Runs on either backend; the two
// partial-warp cases fail on a GPU only (a CPU rank is its own whole warp).
#include <cstring>

#include <grma/grma.hpp>

enum class failure {
  bad_target,    // a put to a rank that does not exist
  stuck,         // a wait for a notification nobody sends
  partial_warp,  // one_warp's put by 16 lanes of a warp
  last_warp,     // one_warp's put by a rank's last warp, which has 16 threads
};

struct fails {
  failure what;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    const bool one = r.rank(grma::world) == 1;
    if (what == failure::stuck && r.rank(grma::world) == 0) r.wait_notifications(w, 1, 9, 1);  // never sent
    if (what == failure::bad_target && one) r.put_notify(w, 5, 0, 8, memory, 0);
    if (what == failure::partial_warp && one && r.thread() < 16)
      r.one_warp().put_notify(w, 0, 0, 8, memory, 0);
    if (what == failure::last_warp && one && r.thread() >= 32)
      r.one_warp().put_notify(w, 0, 0, 8, memory, 0);
    r.window_free(w);
  }
};

int main(int argc, char** argv) {
  grma::runtime rt(argc, argv);
  const char* name = argc > 1 ? argv[1] : "";
  failure what = failure::bad_target;
  if (std::strcmp(name, "stuck") == 0) what = failure::stuck;
  if (std::strcmp(name, "partial-warp") == 0) what = failure::partial_warp;
  if (std::strcmp(name, "last-warp") == 0) what = failure::last_warp;
  grma::launch_options options;
  if (what == failure::last_warp) options.threads_per_rank = 48;
  rt.run(fails{what}, options);
  return 0;
}
