#include "engine_arrivals.hpp"

#include <cstddef>
#include <memory>
#include <utility>

#include "engine_intake.hpp"
#include "engine_liveness.hpp"

namespace grma::detail {
namespace {

// Calls f(at, count) for each run of consecutive world ranks in `ranks`
// (ascending): a node's arrivals move a run at a time.
template <class F>
void for_each_run(const std::vector<int>& ranks, F&& f) {
  for (std::size_t at = 0, end = 0; at < ranks.size(); at = end) {
    end = at + 1;
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    f(at, end - at);
  }
}

}  // namespace

engine_arrivals::engine_arrivals(engine_context& cx, engine_intake& intake, engine_liveness& liveness)
    : cx_(cx), intake_(intake), liveness_(liveness) {}

// World ranks on `node`, ascending.
std::vector<int> engine_arrivals::ranks_on(int node) const {
  std::vector<int> r;
  for (int w = 0; w < cx_.world_size; ++w)
    if (cx_.nodes.node_of[std::size_t(cx_.process_of_rank(w))] == node) r.push_back(w);
  return r;
}

// The process that gathers `node` for world collectives: its lowest.
int engine_arrivals::leader_process(int node) const {
  int p = 0;
  while (cx_.nodes.node_of[std::size_t(p)] != node) ++p;
  return p;
}

void engine_arrivals::forward(std::uint64_t epoch) {
  const std::vector<int> ranks = ranks_on(cx_.nodes.node_of[std::size_t(cx_.nodes.process)]);
  auto data = std::make_shared<std::vector<collective_arrival>>();
  data->resize(ranks.size());
  for_each_run(ranks, [&](std::size_t at, std::size_t count) {
    cx_.memory->load_arrivals(&cx_.first->arrivals[0][ranks[at]], count, data->data() + at);
  });
  forwarded_ = epoch;
  remote_command c{};
  c.op = remote_op::arrive;
  c.offset = epoch;
  c.bytes = data->size() * sizeof(collective_arrival);
  for (int p = 0; p < cx_.nodes.processes; ++p) {
    if (!cx_.remote_process(p) || leader_process(cx_.nodes.node_of[std::size_t(p)]) != p) continue;
    intake_.send_header(p, c);
    cx_.net->send(p, channel::record, data->data(), c.bytes, memory_place::host, [data] {});
  }
}

void engine_arrivals::receive(int from, const remote_command& c) {
  auto batch = std::make_shared<arrivals_of_node>();
  batch->epoch = c.offset;
  batch->ranks = ranks_on(cx_.nodes.node_of[std::size_t(from)]);
  if (c.bytes != batch->ranks.size() * sizeof(collective_arrival)) {
    return liveness_.malformed(from, -1, call::runtime, "sent a malformed arrival");
  }
  batch->arrivals.resize(batch->ranks.size());
  cx_.net->receive(from, channel::record, batch->arrivals.data(), c.bytes, memory_place::host,
                   [this, batch](int, std::size_t) { early_.push_back(std::move(*batch)); });
}

// Writes other nodes' arrivals at a collective once this node's are
// forwarded: until then this node's ranks cannot pass it, so neither the
// arrivals forwarded nor the previous collective's, which its gatherer may
// still read, are overwritten too soon.
bool engine_arrivals::apply() {
  bool any = false;
  collective_arrival* arrivals = cx_.first->arrivals[0];
  for (std::size_t i = 0; i < early_.size();) {
    arrivals_of_node& b = early_[i];
    if (b.epoch > forwarded_) {
      ++i;
      continue;
    }
    for_each_run(b.ranks, [&](std::size_t at, std::size_t count) {
      cx_.memory->store_arrivals(&arrivals[b.ranks[at]], b.arrivals.data() + at, count);
    });
    early_.erase(early_.begin() + std::ptrdiff_t(i));
    any = true;
  }
  return any;
}

}  // namespace grma::detail
