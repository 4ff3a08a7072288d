// The loopback transport (transport.hpp): the network engines of the nodes
// that one process plays (GRMA_NODES) send each other messages through
// queues in memory. A message is copied when it is sent, so a send
// completes at the sender's next poll; a receive completes once a message
// of its sender and channel has come, in the order both were started, as
// MPI matches them.
#pragma once

#include <memory>

#include "transport.hpp"

namespace grma::detail {

struct loopback_hub;

// The hub that `endpoints` endpoints share, and endpoint `index` of it (one
// per node's engine; each is used by one thread, the hub by all).
std::shared_ptr<loopback_hub> make_loopback_hub(int endpoints);
std::unique_ptr<transport> make_loopback_transport(std::shared_ptr<loopback_hub> hub, int index);

}  // namespace grma::detail
