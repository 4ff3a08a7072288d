// What the watchdog reads from a device's host-visible state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

// A number that changes whenever a rank of any of the job's devices (`job`,
// host-addressed views) publishes progress (calls completed, waits ended, its
// state) or a log line is printed. Reads only host-visible blocks, so it works
// for GPU ranks and for other processes' devices too.
std::uint64_t progress_signature(const std::vector<const device_view*>& job);

bool any_rank_blocked(const std::vector<const device_view*>& job);

// Every blocked rank of the job: the call it is in with its arguments, and
// the notifications it holds unmatched, as the rank published them; then the
// ranks that have returned from the program (returned_ranks), so that a wait
// for one of them shows as such.
std::string blocked_ranks_report(const std::vector<const device_view*>& job, double idle_seconds);

// A line ("\n  rank N: returned") for each rank whose program has returned,
// the first `shown` of them, then how many more; or empty.
std::string returned_ranks(const std::vector<const device_view*>& job, int shown = 16);

// The same list alone, a line ("\n  rank N: ...") for each blocked rank, or
// empty: what a node's ranks wait for when another node's abort comes.
std::string blocked_ranks(const std::vector<const device_view*>& job);

// The report of the watchdog that ended the job, where every process of the
// node and the network engines find it: the first caller claims the node's
// control block, leaves `report` there (cut to fit) and returns true; it
// raises the job's abort after this, so whoever sees the abort finds the
// report. Later callers leave nothing. A network engine leaves another
// node's report the same way.
bool leave_report(job_control& c, const std::string& report);

// `report` with `added` after it, each cut where needed (`report` keeping
// at least half) to fit a control block's report, so that what a network
// engine adds survives leave_report and the other engines' size check.
std::string report_with(std::string report, std::string added);

// The report left in the control block, or empty.
std::string left_report(const job_control& c);

}  // namespace grma::detail
