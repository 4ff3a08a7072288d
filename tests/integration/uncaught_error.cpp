// A program that does not catch grma::error: a bad argument in rank code, or a
// stuck rank that the watchdog ends, must still end the process with a
// nonzero status and the error's message. With `again`, the program catches
// a bad argument's error and runs again: on the CPU backend the second run
// fails the same way; on a GPU, where the first run's kernel trapped, the
// second says that no run can follow in the process. Runs on either backend.
// With `shared` (for the GPU), a program whose own shared memory and the
// launch's (GRMA_MATCH_CAPACITY) together exceed a block's: the launch is
// refused with a message that counts both.
#include <cstdio>
#include <cstring>

#include <grma/grma.hpp>

struct fails {
  bool stuck;  // else: a put to a rank that does not exist

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    if (stuck && r.rank(grma::world) == 0) r.wait_notifications(w, 1, 9, 1);  // never sent
    if (!stuck && r.rank(grma::world) == 1) r.put_notify(w, 5, 0, 8, memory, 0);
    r.window_free(w);
  }
};

struct holds_shared {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
#if GRMA_DEVICE_CODE
    __shared__ unsigned char own[16384];
    own[r.thread()] = 1;
    r.sync_threads();
    if (own[0] != 1) r.barrier(grma::world);
#else
    (void)r;
#endif
  }
};

int main(int argc, char** argv) {
  grma::runtime rt(argc, argv);
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "again") == 0) {
    try {
      rt.run(fails{false});
    } catch (const grma::error& e) {
      std::fprintf(stderr, "first run: %s\n", e.what());
    }
  }
  if (std::strcmp(mode, "shared") == 0) {
    rt.run(holds_shared{});
    return 0;
  }
  rt.run(fails{std::strcmp(mode, "stuck") == 0});
  return 0;
}
