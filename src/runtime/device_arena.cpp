#include "device_arena.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace grma::detail {
namespace {

// Carves consecutive 64-byte aligned pieces out of one block.
class carver {
 public:
  template <class T>
  std::uint64_t take(std::uint64_t count) {
    const std::uint64_t at = align_up(used_, heap_alignment);
    used_ = at + count * sizeof(T);
    return at;
  }
  std::uint64_t take_bytes(std::uint64_t bytes) {
    const std::uint64_t at = align_up(used_, heap_alignment);
    used_ = at + bytes;
    return at;
  }
  std::uint64_t size() const { return align_up(used_ == 0 ? 1 : used_, 4096); }

 private:
  std::uint64_t used_ = 0;
};

unsigned char* zeroed(std::uint64_t bytes) {
  // Page aligned; calloc-like zeroing keeps untouched pages lazy.
  void* p = std::aligned_alloc(4096, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return static_cast<unsigned char*>(p);
}

}  // namespace

void device_arena::block_deleter::operator()(unsigned char* p) const { std::free(p); }

device_arena::device_arena(const arena_params& p) {
  const std::uint64_t userdata_area = align_up(p.userdata_size, heap_alignment);
  const std::uint64_t heap_bytes = userdata_area + align_up(p.heap_size, heap_alignment);

  carver control;
  const auto at_allocator = control.take<heap_allocator>(1);
  const auto at_slots = control.take<window_slot>(p.max_windows);
  const auto at_entries = control.take<window_entry>(std::uint64_t(p.max_windows) * p.world_size);
  const std::uint64_t stride = align_up(notification_ring::bytes_for(p.queue_capacity), heap_alignment);
  const auto at_queues = control.take_bytes(stride * p.ranks);
  const auto at_collectives = control.take<collective_state>(comm_count);
  const auto at_world_arrivals = control.take<collective_arrival>(p.world_size);
  const auto at_device_arrivals = control.take<collective_arrival>(p.ranks);
  const auto at_locals = control.take<rank_local>(p.ranks);
  const auto at_pending = control.take<notification>(std::uint64_t(p.match_capacity) * p.ranks);

  carver host;
  const auto at_status = host.take<rank_status>(p.ranks);
  const auto at_control = host.take<job_control>(1);
  const auto at_log = host.take_bytes(log_ring::bytes_for(p.log_capacity));

  heap_.reset(zeroed(align_up(heap_bytes, 4096)));
  control_.reset(zeroed(control.size()));
  host_.reset(zeroed(host.size()));
  unsigned char* c = control_.get();
  unsigned char* h = host_.get();

  device_view& v = view_;
  v.heap = heap_.get();
  v.heap_size = heap_bytes;
  v.userdata_offset = 0;
  v.userdata_size = p.userdata_size;
  v.allocator = reinterpret_cast<heap_allocator*>(c + at_allocator);
  heap_init(*v.allocator, v.heap, userdata_area, heap_bytes);
  v.windows = window_table{p.max_windows, std::uint32_t(p.world_size),
                           reinterpret_cast<window_slot*>(c + at_slots),
                           reinterpret_cast<window_entry*>(c + at_entries)};
  v.queues = c + at_queues;
  v.queue_stride = stride;
  v.queue_capacity = p.queue_capacity;
  v.match_capacity = p.match_capacity;
  for (int r = 0; r < p.ranks; ++r) ring_init<notification>(&v.queue(r), p.queue_capacity);

  v.collectives = reinterpret_cast<collective_state*>(c + at_collectives);
  v.collectives[0].arrivals = reinterpret_cast<collective_arrival*>(c + at_world_arrivals);
  v.collectives[1].arrivals = reinterpret_cast<collective_arrival*>(c + at_device_arrivals);

  v.locals = reinterpret_cast<rank_local*>(c + at_locals);
  auto* pending = reinterpret_cast<notification*>(c + at_pending);
  for (int r = 0; r < p.ranks; ++r) {
    rank_local& l = v.locals[r];
    for (int& t : l.credit_target) t = -1;
    l.pending = pending_list{0, p.match_capacity, pending + std::uint64_t(r) * p.match_capacity};
  }

  v.status = reinterpret_cast<rank_status*>(h + at_status);
  v.control = reinterpret_cast<job_control*>(h + at_control);
  v.log = ring_init<log_record>(h + at_log, p.log_capacity);

  v.world_size = p.world_size;
  v.first_rank = p.first_rank;
  v.ranks = p.ranks;
  v.threads_per_rank = p.threads_per_rank;
}

device_arena::~device_arena() = default;

}  // namespace grma::detail
