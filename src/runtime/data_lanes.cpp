#include "data_lanes.hpp"

#include <utility>

namespace grma::detail {

data_lanes::data_lanes(int processes, std::uint64_t limit, stager take)
    : limit_(limit), take_(std::move(take)), lanes_(std::size_t(processes) * 2) {}

void data_lanes::enqueue(int process, lane_direction d, std::size_t staged_bytes, post go,
                         stager own) {
  lane& l = lane_of(process, d);
  if (l.waiting.empty() && fits(l, staged_bytes)) return start(l, staged_bytes, go, own);
  l.waiting.push_back({staged_bytes, std::move(go), std::move(own)});
  ++waiting_;
}

bool data_lanes::pump() {
  if (waiting_ == 0) return false;
  bool any = false;
  for (lane& l : lanes_) {
    while (!l.waiting.empty() && fits(l, l.waiting.front().bytes)) {
      const waiting_post next = std::move(l.waiting.front());
      l.waiting.pop_front();
      --waiting_;
      start(l, next.bytes, next.go, next.own);
      any = true;
    }
  }
  return any;
}

void data_lanes::start(lane& l, std::size_t bytes, const post& go, const stager& own) {
  std::shared_ptr<unsigned char> buffer = bytes == 0 ? nullptr : own ? own(bytes) : take_(bytes);
  if (!buffer) return go(nullptr);
  l.held += bytes;
  // The lane's room comes back when the last holder lets go (a send or a
  // copy completing), on the engine's thread like everything here.
  // The deleter holds `buffer`, which goes back to the pool with it.
  go(std::shared_ptr<unsigned char>(buffer.get(), [buffer, held = &l.held, bytes](unsigned char*) {
    *held -= bytes;
  }));
}

}  // namespace grma::detail
