#include "cpu_backend.hpp"

#include <mutex>
#include <thread>
#include <vector>

namespace grma::detail {

std::exception_ptr run_cpu_ranks(const device_view& view,
                                 const std::function<void(cpu_rank&)>& body) {
  std::mutex failure_mutex;
  std::exception_ptr cause;    // first real failure
  std::exception_ptr aborted;  // first rank that only left because of an abort
  auto set_state = [&](int r, rank_state s) {
    store_relaxed<scope::system>(view.status[r].state, std::int32_t(s));
  };

  // Each rank's private state; the rank thread alone touches its entry.
  std::vector<rank_local> locals(std::size_t(view.ranks));
  std::vector<notification> pending(std::size_t(view.ranks) * view.match_capacity);
  for (int r = 0; r < view.ranks; ++r)
    rank_local_init(locals[std::size_t(r)], pending.data() + std::size_t(r) * view.match_capacity,
                    view.match_capacity, view.queue_capacity);

  std::vector<std::thread> threads;
  threads.reserve(std::size_t(view.ranks));
  for (int r = 0; r < view.ranks; ++r) {
    threads.emplace_back([&, r] {
      set_state(r, rank_state::running);
      try {
        cpu_rank rank(view, r, locals[std::size_t(r)]);
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
      set_state(r, rank_state::failed);
      // Release: whatever this rank recorded is visible to ranks that leave
      // their waits because of the abort.
      store_release<scope::system>(view.control->abort, 1u);
    });
  }
  for (std::thread& t : threads) t.join();
  return cause ? cause : aborted;
}

}  // namespace grma::detail
