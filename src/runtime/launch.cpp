#include "launch.hpp"

#include <string>

#include "grma/error.hpp"

namespace grma::detail {
namespace {
[[noreturn]] void bad(const std::string& message) {
  throw error(errc::invalid_config, -1, call::runtime, "grma: " + message);
}
}  // namespace

void check_launch_options(const launch_options& o) {
  if (o.ranks_per_device < 0)
    bad("ranks_per_device " + std::to_string(o.ranks_per_device) + " is negative");
  if (o.threads_per_rank < 0)
    bad("threads_per_rank " + std::to_string(o.threads_per_rank) + " is negative");
  if (o.userdata_size != 0 && o.userdata == nullptr)
    bad("userdata is null but userdata_size is " + std::to_string(o.userdata_size));
}

rank_info job_layout(int ranks_per_device, int threads_per_rank, int devices, int process,
                     int processes, int first_device) {
  rank_info info;
  info.rank_responsible = ranks_per_device * devices;
  info.rank_count = info.rank_responsible * processes;
  info.rank_start = info.rank_responsible * process;
  info.ranks_per_device = ranks_per_device;
  info.threads_per_rank = threads_per_rank;
  info.device_index = first_device;
  info.device_count = devices * processes;
  info.node_index = 0;
  info.node_count = 1;
  info.process_index = process;
  info.process_count = processes;
  return info;
}

}  // namespace grma::detail
