// A job of two processes (mpirun -np 2) in which process 1 is killed (or,
// with the argument `stop`, stopped) while rank 0, in process 0, waits for
// it: process 0 must not hang. It ends with a message naming process 1 and a
// nonzero status (for a kill the launcher may be first; a stopped process
// only grma's watch can notice), and the job leaves nothing in /dev/shm.
#include <signal.h>

#include <cstring>

#include <grma/grma.hpp>

struct killed_midway {
  int signal;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    r.barrier(grma::world);
#if !GRMA_DEVICE_CODE
    if (r.rank(grma::world) == 1) raise(signal);  // the whole process, mid-run
#endif
    if (r.rank(grma::world) == 0) r.wait_notifications(w, 1, 0, 1);  // never sent
    r.window_free(w);
  }
};

int main(int argc, char** argv) {
  grma::runtime rt(argc, argv);
  rt.run(killed_midway{argc > 1 && std::strcmp(argv[1], "stop") == 0 ? SIGSTOP : SIGKILL});
  return 0;
}
