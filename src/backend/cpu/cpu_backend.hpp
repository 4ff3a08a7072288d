// The CPU backend: every rank of every device is one thread of this process.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "grma/runtime.hpp"

namespace grma::detail {

// Runs body on one thread per rank of each device (views[d] is device d's)
// and returns when all have ended. Returns the first failure that was not
// merely a consequence of another (an abort), or the first abort, or null
// when every rank finished.
std::exception_ptr run_cpu_ranks(const std::vector<const device_view*>& views,
                                 const std::function<void(cpu_rank&)>& body);

// A whole run on the CPU backend: this process's devices (GRMA_DEVICES) of
// `info.ranks_per_device` rank threads each, with userdata, progress threads
// and the watchdog. In a job of several processes (process_group) the arenas
// are shared-memory segments that every process maps, and a watch ends the
// run when another process exits or hangs. Throws grma::error on failure.
// `port`: where host threads hand in operations (o.host_access), or null.
void run_cpu_job(const settings& s, const launch_options& o, const rank_info& info,
                 const std::function<void(cpu_rank&)>& body, const std::shared_ptr<host_port>& port);

}  // namespace grma::detail
