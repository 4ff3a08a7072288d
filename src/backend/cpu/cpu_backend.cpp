#include "cpu_backend.hpp"

#include <mutex>
#include <thread>
#include <vector>

namespace grma::detail {

std::exception_ptr run_cpu_ranks(const std::vector<const device_view*>& views,
                                 const std::function<void(cpu_rank&)>& body) {
  std::mutex failure_mutex;
  std::exception_ptr cause;    // first real failure
  std::exception_ptr aborted;  // first rank that only left because of an abort
  const int per_device = views[0]->ranks;
  const std::size_t total = views.size() * std::size_t(per_device);
  const std::uint32_t match_capacity = views[0]->match_capacity;
  auto set_state = [&](const device_view& view, int r, rank_state s) {
    store_relaxed<scope::system>(view.status[r].state, std::int32_t(s));
  };

  // Each rank's private state (index: world rank); the rank thread alone
  // touches its entry.
  std::vector<rank_local> locals(total);
  std::vector<notification> pending(total * match_capacity);
  for (std::size_t r = 0; r < total; ++r)
    rank_local_init(locals[r], pending.data() + r * match_capacity, match_capacity,
                    views[0]->queue_capacity);

  std::vector<std::thread> threads;
  threads.reserve(total);
  for (std::size_t w = 0; w < total; ++w) {
    const device_view* device = views[w / std::size_t(per_device)];
    const int r = int(w % std::size_t(per_device));
    threads.emplace_back([&, w, r, device] {
      const device_view& view = *device;
      set_state(view, r, rank_state::running);
      try {
        cpu_rank rank(view, r, locals[w]);
        body(rank);
        rank.finish();
        return;
      } catch (const error& e) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        std::exception_ptr& slot = e.code() == errc::aborted ? aborted : cause;
        if (!slot) slot = std::current_exception();
      } catch (...) {  // the rank program's own exception
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!cause) cause = std::current_exception();
      }
      set_state(view, r, rank_state::failed);
      // Release: whatever this rank recorded is visible to ranks that leave
      // their waits because of the abort.
      store_release<scope::system>(view.control->abort, 1u);
    });
  }
  for (std::thread& t : threads) t.join();
  return cause ? cause : aborted;
}

}  // namespace grma::detail
