// What the watchdog reads from a device's host-visible state.
#pragma once

#include <cstdint>
#include <string>

#include "grma/detail/device_state.hpp"

namespace grma::detail {

// A number that changes whenever a rank of the device publishes progress
// (calls completed, waits ended, its state) or a log line is printed. Reads only the
// host-visible block, so it works for GPU ranks too.
std::uint64_t progress_signature(const device_view& v);

bool any_rank_blocked(const device_view& v);

// Every blocked rank: the call it is in with its arguments, and the
// notifications it holds unmatched, as the rank published them.
std::string blocked_ranks_report(const device_view& v, double idle_seconds);

}  // namespace grma::detail
