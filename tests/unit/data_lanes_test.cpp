// The network engine's data lanes: posts keep their order on a lane, and a
// lane never holds more staging than its limit.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/data_lanes.hpp"

namespace {

using grma::detail::data_lanes;
using grma::detail::lane_direction;

constexpr std::uint64_t limit = 1000;

std::shared_ptr<unsigned char> host_buffer(std::size_t bytes) {
  return std::shared_ptr<unsigned char>(new unsigned char[bytes], std::default_delete<unsigned char[]>());
}

// Records the order in which posts start, and keeps their buffers until
// the test lets them go.
struct recorder {
  std::vector<int> started;
  std::vector<std::shared_ptr<unsigned char>> kept;
  data_lanes::post post(int id) {
    return [this, id](std::shared_ptr<unsigned char> stage) {
      started.push_back(id);
      if (stage) kept.push_back(std::move(stage));
    };
  }
};

TEST(DataLanes, PostsThatFitStartAtOnce) {
  data_lanes lanes(2, limit, host_buffer);
  recorder r;
  lanes.enqueue(1, lane_direction::out, 400, r.post(1));
  lanes.enqueue(1, lane_direction::out, 600, r.post(2));
  EXPECT_EQ(r.started, (std::vector<int>{1, 2}));
  EXPECT_EQ(r.kept.size(), 2u);
  EXPECT_EQ(lanes.held(1, lane_direction::out), 1000u);
  EXPECT_TRUE(lanes.idle());
}

TEST(DataLanes, APostOverTheLimitWaitsAndSoDoesEveryLaterOneOnItsLane) {
  data_lanes lanes(2, limit, host_buffer);
  recorder r;
  lanes.enqueue(0, lane_direction::in, 700, r.post(1));
  lanes.enqueue(0, lane_direction::in, 700, r.post(2));  // 1400 > limit
  lanes.enqueue(0, lane_direction::in, 0, r.post(3));    // nothing staged, but after 2
  EXPECT_EQ(r.started, (std::vector<int>{1}));
  EXPECT_FALSE(lanes.idle());
  EXPECT_FALSE(lanes.pump());  // still no room
  r.kept.clear();              // post 1's copy is done
  EXPECT_EQ(lanes.held(0, lane_direction::in), 0u);
  EXPECT_TRUE(lanes.pump());
  EXPECT_EQ(r.started, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(lanes.held(0, lane_direction::in), 700u);
  EXPECT_TRUE(lanes.idle());
}

TEST(DataLanes, LanesDoNotWaitForEachOther) {
  data_lanes lanes(2, limit, host_buffer);
  recorder r;
  lanes.enqueue(0, lane_direction::out, 1000, r.post(1));
  lanes.enqueue(0, lane_direction::out, 1, r.post(2));  // waits: lane (0, out) is full
  lanes.enqueue(0, lane_direction::in, 1000, r.post(3));
  lanes.enqueue(1, lane_direction::out, 1000, r.post(4));
  EXPECT_EQ(r.started, (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(lanes.held(0, lane_direction::out), 1000u);
  EXPECT_EQ(lanes.held(0, lane_direction::in), 1000u);
  EXPECT_EQ(lanes.held(1, lane_direction::out), 1000u);
}

TEST(DataLanes, APostLargerThanTheLimitGoesAlone) {
  data_lanes lanes(1, limit, host_buffer);
  recorder r;
  lanes.enqueue(0, lane_direction::out, 10, r.post(1));
  lanes.enqueue(0, lane_direction::out, 5000, r.post(2));
  EXPECT_EQ(r.started, (std::vector<int>{1}));
  r.kept.clear();
  lanes.pump();
  EXPECT_EQ(r.started, (std::vector<int>{1, 2}));
  EXPECT_EQ(lanes.held(0, lane_direction::out), 5000u);
  lanes.enqueue(0, lane_direction::out, 1, r.post(3));  // behind the oversized one
  EXPECT_EQ(r.started, (std::vector<int>{1, 2}));
  r.kept.clear();
  EXPECT_TRUE(lanes.pump());
  EXPECT_EQ(r.started, (std::vector<int>{1, 2, 3}));
}

TEST(DataLanes, WithoutStagingNothingIsHeldAndNothingWaits) {
  data_lanes lanes(1, limit, [](std::size_t) { return std::shared_ptr<unsigned char>(); });
  recorder r;
  for (int i = 0; i < 5; ++i) lanes.enqueue(0, lane_direction::out, 900, r.post(i));
  EXPECT_EQ(r.started, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(r.kept.empty());
  EXPECT_EQ(lanes.held(0, lane_direction::out), 0u);
  EXPECT_TRUE(lanes.idle());
}

}  // namespace
