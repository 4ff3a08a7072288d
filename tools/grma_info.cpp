// grma-info: the devices a grma job on this machine would use, how each pair
// reaches the other, how many ranks fit, and the limits in force.
//
//   grma-info [--grma-devices=all] [other --grma-* settings]
#include <cstdio>
#include <grma/grma.hpp>
#include <string>

namespace {

// The smallest rank program: what fits of it bounds every program.
struct empty_program {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank&) const {}
};

const char* backend_name(grma::backend_kind b) {
  return b == grma::backend_kind::cuda ? "cuda" : "cpu";
}

}  // namespace

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  const grma::topology t = rt.topology();
  const grma::settings& s = rt.settings();
  // Under mpirun every process knows the job; the first one prints it.
  if (rt.info(empty_program{}, {.threads_per_rank = 32}).process_index != 0) return 0;
  std::printf("backend: %s (GRMA_BACKEND), devices in a job: %zu (GRMA_DEVICES per process)\n\n",
              backend_name(t.backend), t.devices.size());

  std::printf("devices\n  %-5s %-7s %-4s %-7s %-28s %-14s %10s %6s %12s\n", "job", "process", "node",
              "ordinal", "name", "bus", "memory MiB",
              t.backend == grma::backend_kind::cuda ? "SMs" : "cores", "smem/block");
  for (const grma::device_description& d : t.devices)  // an ordinal is a GPU's
    std::printf("  %-5d %-7d %-4d %-7s %-28s %-14s %10llu %6d %12zu\n", d.index, d.process, d.node,
                t.backend == grma::backend_kind::cuda ? std::to_string(d.ordinal).c_str() : "-",
                d.name.c_str(), d.bus_id.empty() ? "-" : d.bus_id.c_str(),
                static_cast<unsigned long long>(d.memory_bytes >> 20), d.multiprocessors,
                d.shared_memory_per_block);

  std::printf("\npaths (row: from, column: to)\n  %-6s", "");
  for (std::size_t e = 0; e < t.devices.size(); ++e) std::printf(" %-22zu", e);
  std::printf("\n");
  for (std::size_t d = 0; d < t.devices.size(); ++d) {
    std::printf("  %-6zu", d);
    for (std::size_t e = 0; e < t.devices.size(); ++e)
      std::printf(" %-22s", grma::to_string(t.paths[d][e]));
    std::printf("\n");
  }

  std::printf("\nranks per device (an empty program; larger ones may fit fewer)\n");
  if (t.backend == grma::backend_kind::cuda) {
    for (int threads : {32, 128, 256, 1024})
      std::printf("  %4d threads per rank: %d\n", threads,
                  rt.info(empty_program{}, {.threads_per_rank = threads}).ranks_per_device);
  } else {
    std::printf("  %d (one thread each; GRMA_RANKS_PER_DEVICE)\n",
                rt.info(empty_program{}).ranks_per_device);
  }

  std::printf("\nlimits\n");
  std::printf("  heap per device           %llu bytes (GRMA_HEAP_SIZE)\n",
              static_cast<unsigned long long>(s.heap_size));
  std::printf("  symmetric heap per device %llu bytes (GRMA_SYMMETRIC_SIZE)\n",
              static_cast<unsigned long long>(s.symmetric_size));
  std::printf("  notification ring         %u slots per rank and device (GRMA_QUEUE_CAPACITY)\n",
              s.queue_capacity);
  std::printf("  unmatched notifications   %u per rank (GRMA_MATCH_CAPACITY)\n", s.match_capacity);
  std::printf("  live windows              %u per job (GRMA_MAX_WINDOWS)\n", s.max_windows);
  std::printf("  watchdog                  %g s without progress (GRMA_TIMEOUT; 0 = off)\n",
              s.timeout_seconds);

  std::printf("\nnetwork between nodes\n  transports built          ");
  const char* separator = "";
  for (grma::transport_kind k : grma::transports_built()) {
    std::printf("%s%s", separator, grma::to_string(k));
    separator = ", ";
  }
  std::printf("\n  chosen                    %s (GRMA_TRANSPORT; auto: loopback for the nodes one "
              "process plays, GRMA_NODES=%d; else ucx where built, else mpi)\n",
              grma::to_string(s.transport), s.nodes);
  return 0;
} catch (const grma::error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
