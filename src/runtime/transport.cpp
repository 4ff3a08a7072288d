#include "transport.hpp"

#include <string>
#include <utility>
#include <vector>

#include "grma/error.hpp"
#include "loopback_transport.hpp"
#include "mpi_transport.hpp"
#include "process_group.hpp"
#include "ucx_transport.hpp"

namespace grma {

const char* to_string(transport_kind t) {
  switch (t) {
    case transport_kind::automatic: return "auto";
    case transport_kind::mpi: return "mpi";
    case transport_kind::ucx: return "ucx";
    case transport_kind::loopback: return "loopback";
  }
  return "?";
}

std::vector<transport_kind> transports_built() {
  std::vector<transport_kind> built;
#if GRMA_HAVE_MPI
  built.push_back(transport_kind::mpi);
#endif
#if GRMA_HAVE_UCX
  built.push_back(transport_kind::ucx);
#endif
  built.push_back(transport_kind::loopback);
  return built;
}

}  // namespace grma

namespace grma::detail {

namespace {

[[noreturn]] void unusable(const std::string& why) {
  throw error(errc::invalid_config, -1, call::runtime, "grma: " + why);
}

}  // namespace

int nodes_in_process(const settings& s, int processes, int devices) {
  if (s.nodes == 1) return 1;
  const std::string asked = "GRMA_NODES=" + std::to_string(s.nodes);
  if (processes > 1)
    unusable(asked + " makes one process play several nodes, and this job has " +
             std::to_string(processes) + " processes: give each process its node with GRMA_NODE_ID instead");
  if (devices % s.nodes != 0)
    unusable(asked + " splits the process's devices evenly among its nodes, and it has " +
             std::to_string(devices) + " (GRMA_DEVICES)");
  return s.nodes;
}

transport_kind choose_transport(const settings& s, int nodes) {
  const std::string asked = std::string("GRMA_TRANSPORT=") + to_string(s.transport);
  if (nodes > 1) {
    if (s.transport == transport_kind::automatic || s.transport == transport_kind::loopback)
      return transport_kind::loopback;
    unusable(asked + " joins processes, and the " + std::to_string(nodes) +
             " nodes of GRMA_NODES are all in this one: only the loopback transport joins them");
  }
  switch (s.transport) {
    case transport_kind::loopback:
      unusable(asked +
               " joins the nodes that one process plays (GRMA_NODES), and this job's "
#if GRMA_HAVE_UCX
               "nodes are processes: use auto, mpi or ucx");
#else
               "nodes are processes: use auto or mpi");
#endif
    case transport_kind::ucx:  // built (settings::check refuses it where it is not)
      return transport_kind::ucx;
    case transport_kind::mpi:
    case transport_kind::automatic:
      break;
  }
#if GRMA_HAVE_UCX
  if (s.transport == transport_kind::automatic) return transport_kind::ucx;
#endif
  return transport_kind::mpi;
}

transport_kind agree_on_transport(const process_group& group, const settings& s,
                                  int nodes_in_process) {
  transport_kind kind{};
  on_all_processes(group, "while choosing its transport (GRMA_TRANSPORT)",
                   [&] { kind = choose_transport(s, nodes_in_process); });
  const int mine = int(kind);
  std::vector<int> all(std::size_t(group.count()));
  group.all_gather(&mine, sizeof mine, all.data());
  for (int p = 1; p < group.count(); ++p)
    if (all[std::size_t(p)] != all[0])
      unusable(
          "processes 0 and " + std::to_string(p) +
          " chose different transports (GRMA_TRANSPORT): " + to_string(transport_kind(all[0])) +
          " and " + to_string(transport_kind(all[std::size_t(p)])));
  return kind;
}

std::unique_ptr<transport> make_transport(transport_kind kind, std::shared_ptr<loopback_hub> hub,
                                          int index) {
  if (kind == transport_kind::loopback) return make_loopback_transport(std::move(hub), index);
  if (kind == transport_kind::ucx) return make_ucx_transport();
  return make_mpi_transport();
}

}  // namespace grma::detail
