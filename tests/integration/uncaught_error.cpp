// A program that does not catch grma::error: a bad argument in rank code must
// still end the process with a nonzero status and the error's message.
#include <cstring>

#include <grma/grma.hpp>

int main(int argc, char** argv) {
  grma::runtime rt(argc, argv);
  const bool stuck = argc > 1 && std::strcmp(argv[1], "stuck") == 0;  // else: a bad target
  rt.run([stuck](auto& r) {
    void* memory = r.alloc(64);
    grma::window w = r.window_create(grma::world, memory, 64);
    if (stuck && r.rank(grma::world) == 0) r.wait_notifications(w, 1, 9, 1);  // never sent
    if (!stuck && r.rank(grma::world) == 1) r.put_notify(w, 5, 0, 8, memory, 0);
    r.window_free(w);
  });
  return 0;
}
