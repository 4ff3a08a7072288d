// The CPU backend: every rank of the device is one thread of this process.
#pragma once

#include <exception>
#include <functional>

#include "grma/runtime.hpp"

namespace grma::detail {

// Runs body on one thread per rank and returns when all have ended. Returns
// the first failure that was not merely a consequence of another (an abort),
// or the first abort, or null when every rank finished.
std::exception_ptr run_cpu_ranks(const device_view& view,
                                 const std::function<void(cpu_rank&)>& body);

}  // namespace grma::detail
