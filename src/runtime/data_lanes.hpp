// The network engine's data-channel messages, one lane per process and
// direction, and the staging memory they hold.
//
// Order: a pair's data messages match in the order both sides post them, and
// both post them in the order of the headers they follow. So a post that has
// to wait makes every later post on its lane wait too.
//
// Room: where data is staged (a GPU's through pinned host memory), a transfer
// holds its staging buffer from its post until its copy or send is done. A
// lane holds at most `limit` bytes of staging at once; a post that does not
// fit waits until earlier buffers return (a post larger than the limit goes
// alone), so an engine holds at most 2 x processes x limit at once. Bounded
// per lane, not per engine: with one budget for all lanes, an
// engine whose receives wait for one process's data could hold buffers that
// its sends to another process need, and a cycle of such engines would never
// move; lanes depend only on their other end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

namespace grma::detail {

enum class lane_direction { out, in };

class data_lanes {
 public:
  // Hands out a staging buffer of at least `bytes`; asked only for posts
  // that stage (the engine posts 0 bytes where the network moves the data
  // itself, engine_memory::network_moves). Null: not staged after all.
  using stager = std::function<std::shared_ptr<unsigned char>(std::size_t bytes)>;
  // Starts a post with its staging buffer (null: not staged).
  using post = std::function<void(std::shared_ptr<unsigned char> stage)>;

  data_lanes(int processes, std::uint64_t limit, stager take);
  data_lanes(const data_lanes&) = delete;
  data_lanes& operator=(const data_lanes&) = delete;

  // Runs `go` now if nothing waits on the lane and `staged_bytes` fit, else
  // once they do (pump()). `staged_bytes` 0: nothing to stage. `own`, where
  // given, hands out the buffer instead of the lanes' stager (a buffer the
  // engine drops data into), which the lane's limit bounds all the same.
  void enqueue(int process, lane_direction d, std::size_t staged_bytes, post go, stager own = {});
  // Starts the waiting posts that fit now, in order; whether any started.
  bool pump();
  // Nothing waits on any lane.
  bool idle() const { return waiting_ == 0; }
  // Staging bytes lane (process, d) holds now.
  std::uint64_t held(int process, lane_direction d) const { return lane_of(process, d).held; }

 private:
  struct waiting_post {
    std::size_t bytes;
    post go;
    stager own;
  };
  struct lane {
    std::uint64_t held = 0;
    std::deque<waiting_post> waiting;
  };

  lane& lane_of(int process, lane_direction d) { return lanes_[std::size_t(process) * 2 + std::size_t(d)]; }
  const lane& lane_of(int process, lane_direction d) const {
    return lanes_[std::size_t(process) * 2 + std::size_t(d)];
  }
  bool fits(const lane& l, std::size_t bytes) const { return l.held == 0 || l.held + bytes <= limit_; }
  void start(lane& l, std::size_t bytes, const post& go, const stager& own);

  std::uint64_t limit_;
  stager take_;
  std::vector<lane> lanes_;  // never resized: buffers in flight point at their lane
  std::size_t waiting_ = 0;
};

}  // namespace grma::detail
