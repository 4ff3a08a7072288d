#include "arena_layout.hpp"

#include <string>

#include "grma/error.hpp"

namespace grma::detail {
namespace {

// Hands out consecutive 64-byte aligned pieces of one block.
class carver {
 public:
  template <class T>
  std::uint64_t take(std::uint64_t count) { return take_bytes(count * sizeof(T)); }
  std::uint64_t take_bytes(std::uint64_t bytes) {
    const std::uint64_t at = align_up(used_, heap_alignment);
    used_ = at + bytes;
    return at;
  }
  std::uint64_t size() const { return align_up(used_ == 0 ? 1 : used_, 4096); }

 private:
  std::uint64_t used_ = 0;
};

}  // namespace

arena_layout layout_arena(const arena_params& p) {
  arena_layout l{};
  l.userdata_area = align_up(p.userdata_size, heap_alignment);
  // Slices of whole pages from a page boundary (heaps are page-aligned), so
  // a block aligned in the slice to up to symmetric_alignment_limit bytes is
  // aligned in memory, in every slice.
  l.symmetric_area = align_up(l.userdata_area, symmetric_alignment_limit);
  l.symmetric_slice = p.symmetric_size / std::uint64_t(p.ranks) / symmetric_alignment_limit *
                      symmetric_alignment_limit;
  // Every slice starts with the teams' workspaces, which even team_world's
  // barrier uses.
  if (l.symmetric_slice < symmetric_reserved_bytes)
    throw error(errc::invalid_config, -1, call::runtime,
                "grma: GRMA_SYMMETRIC_SIZE of " + std::to_string(p.symmetric_size) + " bytes gives each of the " +
                    std::to_string(p.ranks) + " ranks of a device a slice of " +
                    std::to_string(l.symmetric_slice) + " bytes, less than the " +
                    std::to_string(symmetric_reserved_bytes) +
                    " bytes of teams' workspaces every slice starts with (GRMA_SYMMETRIC_SIZE at least " +
                    std::to_string(symmetric_reserved_bytes * std::uint64_t(p.ranks)) + ")");
  // alloc's first block header, where heap_prepare puts it.
  l.allocatable_start =
      heap_first_header(l.symmetric_area + l.symmetric_slice * std::uint64_t(p.ranks));
  l.heap_bytes =
      align_up(l.allocatable_start + align_up(p.heap_size, heap_payload_alignment), 4096);
  l.queue_stride = align_up(notification_ring::bytes_for(p.queue_capacity), heap_alignment);

  carver c;
  l.allocator = c.take<heap_allocator>(1);
  l.slots = c.take<window_slot>(p.max_windows);
  l.entries = c.take<window_entry>(std::uint64_t(p.max_windows) * p.world_size);
  l.queues = c.take_bytes(l.queue_stride * std::uint64_t(p.ranks) * std::uint64_t(p.devices));
  l.tickets = c.take<std::uint64_t>(std::uint64_t(p.world_size));
  l.collectives = c.take<collective_state>(comm_count);
  l.world_arrivals = c.take<collective_arrival>(p.world_size);
  l.device_arrivals = c.take<collective_arrival>(p.ranks);
  l.words = c.take<device_words>(1);
  l.completion = c.take<remote_completion>(p.ranks);
  l.symmetric_count = c.take<std::uint32_t>(1);
  l.symmetric_blocks = c.take<symmetric_block>(symmetric_block_limit);
  l.teams = c.take<team_slots>(1);
  l.control_bytes = c.size();

  carver h;
  l.status = h.take<rank_status>(p.ranks);
  l.control = h.take<job_control>(1);
  l.log = h.take_bytes(log_ring::bytes_for(p.log_capacity));
  l.commands = h.take_bytes(command_ring::bytes_for(command_capacity));
  l.payloads = h.take_bytes(std::uint64_t(command_capacity) * remote_payload_bytes);
  l.window_states = h.take<std::uint64_t>(p.max_windows);
  l.host_bytes = h.size();
  return l;
}

device_view make_view(const arena_layout& l, const arena_params& p, unsigned char* heap,
                      unsigned char* control, unsigned char* host) {
  device_view v{};
  v.heap = heap;
  v.heap_size = l.heap_bytes;
  v.userdata_offset = 0;
  v.userdata_size = p.userdata_size;
  v.allocator = reinterpret_cast<heap_allocator*>(control + l.allocator);
  v.words = reinterpret_cast<device_words*>(control + l.words);
  v.windows = window_table{p.max_windows, std::uint32_t(p.world_size),
                           reinterpret_cast<window_slot*>(control + l.slots),
                           reinterpret_cast<window_entry*>(control + l.entries),
                           &v.words->window_lock,
                           reinterpret_cast<std::uint64_t*>(host + l.window_states)};
  v.symmetric_offset = l.symmetric_area;
  v.symmetric_slice = l.symmetric_slice;
  v.symmetric = symmetric_table{symmetric_block_limit,
                                reinterpret_cast<std::uint32_t*>(control + l.symmetric_count),
                                reinterpret_cast<symmetric_block*>(control + l.symmetric_blocks)};
  v.teams = reinterpret_cast<team_slots*>(control + l.teams);
  v.queues = control + l.queues;
  v.queue_stride = l.queue_stride;
  v.queue_capacity = p.queue_capacity;
  v.match_capacity = p.match_capacity;
  v.tickets = reinterpret_cast<std::uint64_t*>(control + l.tickets);
  auto* collectives = reinterpret_cast<collective_state*>(control + l.collectives);
  for (int c = 0; c < comm_count; ++c) v.collectives[c] = collectives + c;
  v.arrivals[0] = reinterpret_cast<collective_arrival*>(control + l.world_arrivals);
  v.arrivals[1] = reinterpret_cast<collective_arrival*>(control + l.device_arrivals);
  v.status = reinterpret_cast<rank_status*>(host + l.status);
  v.control = reinterpret_cast<job_control*>(host + l.control);
  v.log = reinterpret_cast<log_ring*>(host + l.log);
  v.commands = reinterpret_cast<command_ring*>(host + l.commands);
  v.payloads = host + l.payloads;
  v.completion = reinterpret_cast<remote_completion*>(control + l.completion);
  v.error_claim = &v.words->error_claim;
  v.world_size = p.world_size;
  v.host_sources = p.host_sources;
  v.first_rank = p.first_rank;
  v.ranks = p.ranks;
  v.devices = p.devices;
  v.device_index = p.device_index;
  v.userdata_device = p.device_index;
  v.peer_heaps[p.device_index] = heap;
  v.peer_queues[p.device_index] = v.queues;
  v.world_releases[p.device_index] = v.collectives[0];
  v.node_devices = 1u << p.device_index;
  v.nodes = 1;
  v.node_leader = p.first_rank;
  return v;
}

void link_views(device_view* const* views, int devices, int devices_per_process,
                std::uint32_t node_devices, int nodes) {
  auto here = [&](int d) { return ((node_devices >> d) & 1u) != 0; };
  int lowest = 0;
  while (!here(lowest)) ++lowest;
  const device_view& first = *views[lowest];
  for (int d = 0; d < devices; ++d) {
    if (!here(d)) continue;
    device_view& v = *views[d];
    for (int e = 0; e < devices; ++e) {
      v.peer_heaps[e] = here(e) ? views[e]->heap : nullptr;
      v.peer_queues[e] = here(e) ? views[e]->queues : nullptr;
      v.world_releases[e] = here(e) ? views[e]->collectives[0] : nullptr;
    }
    v.node_devices = node_devices;
    v.nodes = nodes;
    v.node_leader = first.first_rank;
    v.windows = first.windows;
    v.symmetric = first.symmetric;
    v.teams = first.teams;
    v.arrivals[0] = first.arrivals[0];
    v.control = first.control;
    v.error_claim = first.error_claim;
    v.userdata_device = d - d % devices_per_process;
  }
}

heap_block init_arena(const arena_layout& l, const arena_params& p, unsigned char* control_image,
                      unsigned char* host) {
  for (int r = 0; r < p.ranks * p.devices; ++r)
    ring_init<notification>(control_image + l.queues + l.queue_stride * std::uint64_t(r),
                            p.queue_capacity);

  ring_init<log_record>(host + l.log, p.log_capacity);
  ring_init<remote_command>(host + l.commands, command_capacity);

  auto& allocator = *reinterpret_cast<heap_allocator*>(control_image + l.allocator);
  // GRMA_HEAP_SIZE's bytes (in whole blocks), not the page's rest after them.
  return heap_prepare(allocator, l.allocatable_start,
                      l.allocatable_start + align_up(p.heap_size, heap_payload_alignment));
}

}  // namespace grma::detail
