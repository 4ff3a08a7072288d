// World collectives across nodes. A world collective gathers each node at
// its lowest world rank, which queues an `arrive` command once its node has
// arrived; the engine then sends the node's arrivals to every other node's
// gatherer, and writes the other nodes' arrivals into its own node's array.
#pragma once

#include <cstdint>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "engine_context.hpp"

namespace grma::detail {

class engine_intake;
class engine_liveness;

class engine_arrivals {
 public:
  engine_arrivals(engine_context& cx, engine_intake& intake, engine_liveness& liveness);

  // The node's arrivals at world collective `epoch`, to every other node's leader.
  void forward(std::uint64_t epoch);
  // Another node's arrivals (`c`: its header), kept until apply() writes them.
  void receive(int from, const remote_command& c);
  bool apply();
  // No arrivals wait to be written.
  bool idle() const { return early_.empty(); }

 private:
  struct arrivals_of_node {
    std::uint64_t epoch;
    std::vector<int> ranks;
    std::vector<collective_arrival> arrivals;
  };

  std::vector<int> ranks_on(int node) const;
  int leader_process(int node) const;

  engine_context& cx_;
  engine_intake& intake_;
  engine_liveness& liveness_;
  std::vector<arrivals_of_node> early_;  // arrivals of a later collective
  std::uint64_t forwarded_ = 0;          // the last world collective forwarded
};

}  // namespace grma::detail
