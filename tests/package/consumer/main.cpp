#include <cstdio>

#include <grma/grma.hpp>

int main() {
  grma::settings s;
  s.ranks_per_device = 2;
  grma::runtime rt(s);
  int received = -1;
  rt.run([&](auto& r) {
    auto* value = static_cast<int*>(r.alloc(sizeof(int)));
    grma::window w = r.window_create(grma::world, value, sizeof(int));
    if (r.rank(grma::world) == 0) {
      *value = 42;
      r.put_notify(w, 1, 0, sizeof(int), value, 0);
    } else {
      r.wait_notifications(w, 0, 0, 1);
      received = r.read(value);
    }
    r.window_free(w);
    r.free(value);
  });
  std::printf("consumer received %d\n", received);
  return received == 42 ? 0 : 1;
}
