// The watchdog's list of blocked ranks: only blocked ranks, each with its
// call and arguments, under the report's header or alone (what a network
// engine adds for its node); and what an engine adds fitting beside a report.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/watchdog.hpp"

namespace {

using grma::call;
using grma::detail::device_view;
using grma::detail::rank_state;
using grma::detail::rank_status;

// Four ranks of one device, world ranks 8..11 of 12, none blocked until told.
struct four_ranks {
  rank_status status[4] = {};
  device_view view{};
  four_ranks() {
    view.status = status;
    view.ranks = 4;
    view.first_rank = 8;
    view.world_size = 12;
    view.match_capacity = 64;
    for (rank_status& st : status) st.state = std::int32_t(rank_state::running);
  }
  void block(int r, call where, std::initializer_list<std::int64_t> args) {
    rank_status& st = status[r];
    st.state = std::int32_t(rank_state::blocked);
    st.where = std::int32_t(where);
    int i = 0;
    for (std::int64_t a : args) st.args[i++] = a;
  }
  std::string blocked() const { return grma::detail::blocked_ranks({&view}); }
};

TEST(WatchdogReport, NoBlockedRankMakesAnEmptyList) {
  four_ranks d;
  EXPECT_EQ(d.blocked(), "");
}

TEST(WatchdogReport, AWaitForANotificationNamesItsArguments) {
  four_ranks d;
  d.block(1, call::wait_notifications, {3, 1, 9, 2});
  EXPECT_EQ(d.blocked(),
            "\n  rank 9: wait_notifications(window 3, source 1, tag 9, count 2); unmatched "
            "notifications: 0");
}

// A notified put to a full queue names its target; where that is the rank
// itself, nothing but the rank's own waits can make room, and it says so.
TEST(WatchdogReport, APutToAFullQueueSaysWhoseQueueItIs) {
  four_ranks d;
  d.block(0, call::put_notify, {0, 11, 9});
  d.block(2, call::put_notify, {0, 10, 9});
  d.block(3, call::put_value_notify, {1, 12, 4});
  EXPECT_EQ(d.blocked(),
            "\n  rank 8: put_notify(window 0, target 11, tag 9), waiting for space in the target's "
            "notification queue; unmatched notifications: 0"
            "\n  rank 10: put_notify(window 0, target 10, tag 9), waiting for space in its own "
            "notification queue, which only its own waits empty: it must take notifications "
            "before it sends itself more; unmatched notifications: 0"
            "\n  rank 11: put_value_notify(window 1, target 12, tag 4), waiting for space in the "
            "target's notification queue; unmatched notifications: 0");
}

// Sources from the world size on are processes' host threads.
TEST(WatchdogReport, AHostSourceIsNamedAsOne) {
  four_ranks d;
  d.block(1, call::wait_notifications, {3, 13, 9, 1});
  d.status[1].unmatched = 1;
  d.status[1].unmatched_head[0] = {3, 12, 4};
  EXPECT_EQ(d.blocked(),
            "\n  rank 9: wait_notifications(window 3, source 13 (the host of process 1), tag 9, "
            "count 1); unmatched notifications: 1 [window 3 from 12 (the host of process 0) tag "
            "4]");
}

// The word waits (the layers' waits run under them) name the words, the
// comparison and the value (or where the values are).
TEST(WatchdogReport, AWordWaitNamesItsWordsAndComparison) {
  four_ranks d;
  d.block(0, call::wait_until, {0x1000, 1, 3, 5});
  d.block(1, call::wait_until_any, {0x2000, 4, 1, 0});
  d.block(2, call::wait_until_all_vector, {0x3000, 2, 0, 0x4000});
  d.block(3, call::wait_until_some, {0x5000, 8, 5, 9});
  EXPECT_EQ(
      d.blocked(),
      "\n  rank 8: wait_until(word 0x1000, until word >= 5); unmatched notifications: 0"
      "\n  rank 9: wait_until_any(4 words at 0x2000, until one != 0); unmatched notifications: 0"
      "\n  rank 10: wait_until_all_vector(2 words at 0x3000, until all == their values at "
      "0x4000); unmatched notifications: 0"
      "\n  rank 11: wait_until_some(8 words at 0x5000, until some <= 9); unmatched "
      "notifications: 0");
}

// A step of a call across nodes is named as that step, not as the call's
// own wait: its arguments are the step's.
TEST(WatchdogReport, AStepOfACallAcrossNodesIsNamedAsThatStep) {
  four_ranks d;
  d.block(0, call::barrier, {5, 0, 0, grma::detail::remote_delivery_wait});
  d.block(1, call::put_notify, {3, 64, 8, grma::detail::command_slot_wait});
  d.block(2, call::get, {2, 128, 16, grma::detail::remote_answer_wait});
  d.block(3, call::allreduce, {4, 1, 7, grma::detail::team_exchange_wait});
  EXPECT_EQ(
      d.blocked(),
      "\n  rank 8: barrier, waiting until every operation it handed the network engine (5 so far) "
      "is in place at the other nodes (a notification is once it is in its target's queue); "
      "unmatched notifications: 0"
      "\n  rank 9: put_notify, waiting for room in its process's ring of commands to the network "
      "engine; unmatched notifications: 0"
      "\n  rank 10: get (target 2, offset 128, 16 bytes), waiting for the network engine to read "
      "its source or bring its answer; unmatched notifications: 0"
      "\n  rank 11: allreduce over a team (slot 4, collective #7), waiting for rank 1 to arrive; "
      "unmatched notifications: 0");
  d.block(0, call::window_free, {0, 0, 0, grma::detail::lock_wait});
  d.block(1, call::alloc, {3, 0, 0, grma::detail::lock_wait});
  d.status[2].state = d.status[3].state = std::int32_t(rank_state::running);
  EXPECT_EQ(d.blocked(),
            "\n  rank 8: window_free, waiting for the lock of the node's window table, which "
            "another rank holds; unmatched notifications: 0"
            "\n  rank 9: alloc, waiting for the lock of the device's heap, which another rank "
            "holds; unmatched notifications: 0");
}

TEST(WatchdogReport, OnlyBlockedRanksAreListedWithWhatTheyHoldUnmatched) {
  four_ranks d;
  d.block(3, call::wait_signal, {2, 16, 3, 7});
  rank_status& st = d.status[3];
  st.unmatched = 2;
  st.unmatched_head[0] = {5, 3, 11};
  st.unmatched_head[1] = {(1u << 16) | 6u, 0, 12};  // the window's slot without its generation
  d.status[2].state = std::int32_t(rank_state::finished);
  EXPECT_EQ(
      d.blocked(),
      "\n  rank 11: wait_signal(window 2, offset 16, until word >= 7); unmatched notifications: "
      "2 [window 5 from 3 tag 11] [window 6 from 0 tag 12]");
}

TEST(WatchdogReport, TheReportHasItsHeaderAndTheList) {
  four_ranks d;
  d.block(1, call::wait_notifications, {3, -1, -1, 1});
  EXPECT_EQ(grma::detail::blocked_ranks_report({&d.view}, 1.25),
            "grma: watchdog: no progress for 1.25 s (GRMA_TIMEOUT); blocked ranks:"
            "\n  rank 9: wait_notifications(window 3, source any, tag any, count 1); unmatched "
            "notifications: 0");
}

TEST(WatchdogReport, RanksThatReturnedAreNamedAfterTheBlockedOnes) {
  four_ranks d;
  d.block(1, call::wait_notifications, {3, 0, 5, 1});
  d.status[0].state = std::int32_t(rank_state::finished);
  d.status[3].state = std::int32_t(rank_state::finished);
  EXPECT_EQ(grma::detail::blocked_ranks_report({&d.view}, 2),
            "grma: watchdog: no progress for 2 s (GRMA_TIMEOUT); blocked ranks:"
            "\n  rank 9: wait_notifications(window 3, source 0, tag 5, count 1); unmatched "
            "notifications: 0\n  rank 8: returned\n  rank 11: returned");
  EXPECT_EQ(grma::detail::returned_ranks({&d.view}, 1), "\n  rank 8: returned\n  ... and 1 more ranks returned");
}

TEST(WatchdogReport, WhatAnEngineAddsFitsBesideALongReport) {
  constexpr std::size_t limit = sizeof(grma::detail::job_control::report);
  EXPECT_EQ(grma::detail::report_with("report", "\nadded"), "report\nadded");
  const std::string added = "\ngrma: network engine of process 1: nothing in flight";
  const std::string joined = grma::detail::report_with(std::string(limit, 'r'), added);
  EXPECT_EQ(joined.size(), limit);
  EXPECT_EQ(joined.substr(limit - added.size() - 7), "r [...]" + added);
  // Too much to add: the report keeps its first half, each part marked where cut.
  const std::string both =
      grma::detail::report_with(std::string(limit, 'r'), std::string(limit, 'a'));
  EXPECT_EQ(both.size(), limit);
  EXPECT_EQ(both.substr(limit / 2 - 7, 8), "r [...]a");
  EXPECT_EQ(both.substr(limit - 6), " [...]");
}

}  // namespace
