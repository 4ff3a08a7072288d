// The GASPI layer (papers/002; GPI-2's calls, made by GPU ranks as
// GPUrdma's gpu_gaspi_* are): a GASPI rank is a grma rank (a thread block
// of the rank kernel on a GPU, a thread on the CPU backend), GASPI rank
// numbers are world ranks, and each call is a few calls of grma's core
// (include/grma/core/), so its paths, completion and errors are the core's.
//
//   template <class Rank>
//   GRMA_HOST_DEVICE void operator()(Rank& r) const {
//     grma::gaspi::handle g(r);
//     g.proc_init(grma::gaspi::block);
//     g.segment_create(0, 2 * bytes, grma::gaspi::group_all, grma::gaspi::block);
//     g.write_notify(0, 0, next, 0, bytes, bytes, 7, 1, 0, grma::gaspi::block);
//     grma::gaspi::notification_id_t id;
//     g.notify_waitsome(0, 7, 1, &id, grma::gaspi::block);
//     ...
//     g.proc_term(grma::gaspi::block);
//   }
//
// Who calls: every call is made by all threads of the rank together with
// the same arguments (GPUrdma's block-wide calls), or by the 32 threads of
// one warp through one_warp(); one handle per rank, made once and passed
// by reference (it holds the layer's state after proc_init). Results go to
// every thread: each may pass its own variable for an output (`&id`, an
// allreduce's recv, state_vec_get's vector) or all the same one.
//
// Statuses: every call returns success, or timeout where its time limit
// (a timeout_t: block, test or milliseconds) passed first, or queue_full
// where its operations would take the queue past queue_size_max since its
// last wait (a _notify form counts its notification too; an empty queue
// takes any one call); a call that returned timeout is called again with the same
// arguments to go on (the collectives resume where they stopped). Bad
// arguments end the job with an error naming the rank, the call and the
// values, as everywhere in grma, and so does a lost process: `error` is
// never returned (it is here for programs that compare with it).
//
// Completion: write, read, notify and their forms post to a queue and may
// return before they are done; wait(queue) returns once every operation
// posted to the queue is complete (a read's data is here, a write's at its
// target). A notification is written after the data of every write and
// notify the rank posted before it to the same queue and target (and
// write_notify's after its own data): a rank that sees it with
// notify_waitsome sees the data. docs/gaspi.md has the rules per path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/rank.hpp"
#include "grma/types.hpp"

namespace grma::gaspi {

// ---- constants and types ------------------------------------------------------------

// GASPI_SUCCESS, GASPI_TIMEOUT, GASPI_QUEUE_FULL, GASPI_ERROR.
enum class status : int { error = -1, success = 0, timeout = 1, queue_full = 2 };
inline constexpr status success = status::success;
inline constexpr status timeout = status::timeout;
inline constexpr status queue_full = status::queue_full;
inline constexpr status error = status::error;

using rank_t = int;
using segment_id_t = int;
using notification_id_t = int;
using notification_t = std::uint32_t;
using offset_t = std::uint64_t;
using queue_id_t = int;
using group_t = int;
using atomic_value_t = std::uint64_t;

// A blocking call's time limit in milliseconds: block waits as long as it
// takes (bounded by the watchdog, GRMA_TIMEOUT), test looks once.
using timeout_t = std::uint64_t;
inline constexpr timeout_t block = ~timeout_t{0};
inline constexpr timeout_t test = 0;

// Every rank of the job: committed from proc_init on.
inline constexpr group_t group_all = 0;

// A rank's state in state_vec_get (GASPI_STATE_HEALTHY, _CORRUPT).
using state_t = unsigned char;
using reduce_state_t = void*;  // allreduce_user's state, handed to its operation
inline constexpr state_t state_healthy = 0;
inline constexpr state_t state_corrupt = 1;

// segment_create's memory: as it comes, or zeroed.
enum class alloc_t : int { uninitialized = 0, initialized = 1 };
inline constexpr alloc_t mem_uninitialized = alloc_t::uninitialized;
inline constexpr alloc_t mem_initialized = alloc_t::initialized;

// allreduce's operations and element types (GASPI_OP_*, GASPI_TYPE_*).
enum operation_t : int { op_min = 0, op_max, op_sum };
enum datatype_t : int { type_int = 0, type_uint, type_float, type_double, type_long, type_ulong };

// Fixed limits: segments and groups a rank may have, queues, the ids a
// segment may have, allreduce's elements.
inline constexpr int segment_max = 32;
inline constexpr int group_max = 32;
inline constexpr int queue_max = 16;
inline constexpr int notification_num_max = 65536;
inline constexpr int allreduce_elem_max = 255;
// The bytes of one allreduce_user (the elements of the largest allreduce).
inline constexpr int allreduce_buf_size = allreduce_elem_max * 8;

// proc_init's choices (gaspi_config_t's); every rank passes the same.
struct config {
  int notification_num = 1024;  // notification ids of each segment (1 to 65536)
  int queue_num = queue_max;    // queues (1 to 16)
  int queue_size_max = 1024;    // operations a queue holds until its wait (at least 1)
  // A passive message's bytes (8 to 1 MiB), rounded up to a multiple of 8.
  std::size_t passive_transfer_size_max = 2048;
};

namespace layer {

// What the layer keeps for a segment: this rank's copy of a symmetric
// block, notification slots first (a 64-bit word each, the value in its low
// 32 bits), the data after them.
struct segment_entry {
  std::uint64_t* slots;
  unsigned char* data;
  std::uint64_t bytes;
  std::uint32_t alive;
  std::uint32_t pad;
};

// A group: built by group_add, then committed; its barriers run over the
// words barrier[group][round] of its members (a dissemination barrier: in
// round k member i signals member i + 2^k and waits for member i - 2^k).
// `epoch` counts its finished barriers; a barrier that timed out keeps its
// round and whether the round's signal went out, and `pending` the call it
// belongs to. `reduced` counts its finished allreduces, and an allreduce
// that timed out keeps its step (allreduce_awaiting_result once it
// reported its partial result to its parent).
struct group_entry {
  std::uint32_t stage;  // 0 none, 1 built, 2 committing, 3 committed
  std::int32_t size;
  std::uint64_t epoch;
  std::uint32_t round;
  std::uint32_t signalled;
  std::int32_t pending;  // the call whose barrier is under way (call::none: none)
  std::uint32_t allreduce_step;
  std::uint64_t reduced;
};
inline constexpr std::uint32_t allreduce_awaiting_result = ~std::uint32_t{0};

inline constexpr int barrier_rounds = 16;  // 2^16 ranks at most

// What the rank's calls read on every call, the rank's alone (thread 0
// writes it, between the rank's threads' meetings). On a GPU it is in
// shared memory: the core's waits acquire, and an acquire invalidates the
// SM's L1, so in global memory every call after a wait would read its
// tables from L2 (decision 032).
struct state;

struct local_state {
  state* owner;  // the block of the proc_init that filled these tables
  config cfg;
  int world_size;
  int world_words;  // 64-bit words of a bit per world rank
  int groups_made;  // group ids are not reused: a new group's words are zero
  int outbox_pending;
  int outbox_target;
  std::uint64_t outbox_sequence;
  context queues[queue_max];
  std::uint32_t posted[queue_max];
  segment_entry segments[segment_max];
  group_entry groups[group_max];
};

// One rank's state in the symmetric heap, so another rank's copy of a word
// is named by this rank's address. Words other ranks write come first;
// after the struct: the senders with a passive message here (a bit per
// world rank, set with atomic_or), each group's members (a bit per world
// rank), allreduce's partial result, a copy of a child's and the result,
// the health vector (a byte per world rank) and the passive outbox.
struct state {
  // Written by other ranks.
  std::uint64_t barrier[group_max][barrier_rounds];
  // allreduce: the child of round k has its partial result ready (its
  // number), and the parent has pushed the result.
  std::uint64_t reduce_ready[group_max][barrier_rounds];
  std::uint64_t result_ready[group_max];
  std::uint64_t outbox_taken;   // the sequence of this rank's outbox message its receiver took
  std::uint64_t outbox_header;  // sequence << 32 | bytes of the message in the outbox
  std::uint64_t members_hash[group_max];  // of each group at its commit, read by the others
  std::int64_t agree[8];                  // segment_create's id and size check (agree)

  int world_size;
  int world_words;
  local_state local;  // the rank's local_state where it has no shared memory (the CPU)

  GRMA_HOST_DEVICE std::uint64_t* pending_senders() {
    return reinterpret_cast<std::uint64_t*>(this + 1);
  }
  GRMA_HOST_DEVICE std::uint64_t* members(int group) {
    return pending_senders() + world_words * (1 + group);
  }
  // allreduce: the rank's contribution combined with its children's (its
  // parent reads it with get), a child's copied here, and the result its
  // parent pushed (which every thread copies out).
  GRMA_HOST_DEVICE unsigned char* partial() {
    return reinterpret_cast<unsigned char*>(pending_senders() + world_words * (1 + group_max));
  }
  GRMA_HOST_DEVICE unsigned char* child() { return partial() + allreduce_buf_size; }
  GRMA_HOST_DEVICE unsigned char* result() { return child() + allreduce_buf_size; }
  GRMA_HOST_DEVICE unsigned char* health() { return result() + allreduce_buf_size; }
  GRMA_HOST_DEVICE unsigned char* outbox() {
    return health() + (std::size_t(world_size) + 7) / 8 * 8;
  }
  GRMA_HOST_DEVICE static std::size_t bytes(int world_size, std::size_t passive_max) {
    const std::size_t words = (std::size_t(world_size) + 63) / 64;
    return sizeof(state) + words * (1 + group_max) * 8 + 3 * allreduce_buf_size +
           (std::size_t(world_size) + 7) / 8 * 8 + passive_max;
  }
};

// Where a rank keeps its local_state: a GPU rank in its block's shared
// memory (one per kernel: this function is no template), a CPU rank in its
// state block.
GRMA_HOST_DEVICE inline local_state* local_of(state* s) {
#if GRMA_DEVICE_CODE
  // No initializer runs for shared memory: proc_init zeroes and fills it,
  // and a handle reads it only after its proc_init (state_of).
  __shared__ local_state hot;
  (void)s;
  return &hot;
#else
  return &s->local;
#endif
}

GRMA_HOST_DEVICE inline int bits_set(std::uint64_t w) {
  int n = 0;
  for (; w != 0; w &= w - 1) ++n;
  return n;
}

}  // namespace layer

template <class Rank>
class warp_handle;

// ---- a rank's calls ----------------------------------------------------------------------

template <class Rank>
class handle {
 public:
  GRMA_INLINE explicit handle(Rank& r) : r_(&r) {}

  // The rank's calls made by one warp of its threads while the others do
  // other work: the rules of basic_rank::one_warp (all 32 threads call
  // together; no other thread of the rank makes a call meanwhile; a warp
  // other than the first begins and ends its turn at a sync_threads()).
  GRMA_INLINE warp_handle<Rank> one_warp() const { return warp_handle<Rank>(*r_, s_, l_); }

  // The grma rank under the GASPI rank, for grma's own calls.
  GRMA_INLINE Rank& rank() const { return *r_; }

  // ---- setup, query, health ----

  GRMA_INLINE static config config_get() { return config{}; }

  // Collective over every rank: the layer's state in the symmetric heap,
  // the queues (queue 0 the rank's default context, the others contexts of
  // their own) and group_all. The limit is not used: the core's collective
  // waits as long as it takes.
  GRMA_INLINE status proc_init(timeout_t limit = block) { return proc_init(config{}, limit); }
  GRMA_INLINE status proc_init(const config& c, timeout_t limit = block) {
    (void)limit;
    Rank& r = *r_;
    const call where = call::gaspi_proc_init;
    if (s_ != nullptr) failed(errc::not_initialized, where, 1);
    in_range(where, "config.notification_num", c.notification_num, 1, notification_num_max);
    in_range(where, "config.queue_num", c.queue_num, 1, queue_max);
    in_range(where, "config.queue_size_max", c.queue_size_max, 1, 1 << 30);
    size_in_range(where, "config.passive_transfer_size_max", c.passive_transfer_size_max, 8,
                  1 << 20);
    const int n = r.size(world);
    in_range(where, "ranks of the job (the layer's barriers take 2^16)", n, 1,
             1 << layer::barrier_rounds);
    // Every rank passes the same config (the layer's state has its sizes).
    const std::int64_t mine[] = {c.notification_num, c.queue_num, c.queue_size_max,
                                 std::int64_t(c.passive_transfer_size_max)};
    const char* const names[] = {
        "config.notification_num differs between ranks (every rank passes the same); another "
        "rank's",
        "config.queue_num differs between ranks (every rank passes the same); another rank's",
        "config.queue_size_max differs between ranks (every rank passes the same); another "
        "rank's",
        "config.passive_transfer_size_max differs between ranks (every rank passes the same); "
        "another rank's"};
    auto* scratch = static_cast<std::int64_t*>(r.alloc_symmetric_for(16 * 8, 64, where));
    agree(where, scratch, mine, names, 4);
    r.free_symmetric(scratch);
    const std::size_t passive = (c.passive_transfer_size_max + 7) / 8 * 8;
    // Zeroed on every rank before any rank returns: no word another rank
    // writes is cleared after it was written.
    auto* s = static_cast<layer::state*>(r.calloc_symmetric(layer::state::bytes(n, passive), 1));
    layer::local_state* l = layer::local_of(s);
    auto* words = reinterpret_cast<std::uint32_t*>(l);
    for (std::size_t i = std::size_t(r.thread()); i < sizeof(layer::local_state) / 4;
         i += std::size_t(r.threads()))
      words[i] = 0;
    r.sync_threads();  // zero everywhere before thread 0 fills them
    context made[queue_max];
    for (int q = 1; q < c.queue_num; ++q) made[q] = r.ctx_create();  // meets the threads
    if (r.thread() == 0) {
      s->world_size = n;
      s->world_words = (n + 63) / 64;
      l->cfg = c;
      l->cfg.passive_transfer_size_max = passive;
      l->world_size = n;
      l->world_words = (n + 63) / 64;
      l->groups_made = 1;
      for (int q = 1; q < c.queue_num; ++q) l->queues[q] = made[q];
      l->groups[group_all].stage = 3;
      l->groups[group_all].size = n;
      l->groups[group_all].pending = int(call::none);
      l->owner = s;
    }
    r.sync_threads();
    s_ = s;
    l_ = l;
    return success;
  }

  // Collective over every rank: completes every queue, waits until the
  // rank's last passive message is taken, deletes the segments left, ends
  // the queues' contexts and frees the layer's state.
  GRMA_INLINE status proc_term(timeout_t limit = block) {
    (void)limit;
    layer::local_state& l = state_of(call::gaspi_proc_term);
    Rank& r = *r_;
    for (int q = 0; q < l.cfg.queue_num; ++q) r.quiet(l.queues[q]);
    if (r.thread() == 0) outbox_free(-1);  // the last passive message is taken
    r.sync_threads();
    for (int id = 0; id < segment_max; ++id)
      if (l.segments[id].alive != 0) segment_delete(id);
    for (int q = 1; q < l.cfg.queue_num; ++q) {
      context ctx = l.queues[q];
      r.ctx_destroy(ctx);
    }
    r.barrier(team_world);  // no rank writes this one's state any more
    r.free_symmetric(s_);
    s_ = nullptr;
    l_ = nullptr;
    return success;
  }

  GRMA_INLINE status proc_rank(rank_t* rank) const {
    result_at(call::gaspi_proc_query, "rank", rank) = r_->rank(world);
    return success;
  }
  GRMA_INLINE status proc_num(rank_t* ranks) const {
    result_at(call::gaspi_proc_query, "ranks", ranks) = r_->size(world);
    return success;
  }

  // state_vec[k] for every world rank k: state_corrupt once a call of this
  // rank that waited on rank k returned timeout (a barrier's or allreduce's
  // partner of the round, a passive message's receiver), else state_healthy.
  GRMA_INLINE status state_vec_get(state_t* state_vec) {
    layer::local_state& l = state_of(call::gaspi_state_vec_get);
    if (state_vec == nullptr) null_output(call::gaspi_state_vec_get, "state_vec");
    for (int k = 0; k < l.world_size; ++k) state_vec[k] = s_->health()[k];  // by every thread
    r_->sync_threads();
    return success;
  }

  // ---- segments ----

  // Collective over every rank (group_all; every rank passes the same id
  // and size): `size` bytes of the symmetric heap and config.notification_num
  // notification slots, all zero before any rank returns; the data too
  // with mem_initialized. The limit is not used, as proc_init's.
  GRMA_INLINE status segment_create(segment_id_t id, std::size_t size, group_t group,
                                    timeout_t limit, alloc_t policy = mem_uninitialized) {
    (void)limit;
    const call where = call::gaspi_segment_create;
    layer::local_state& l = state_of(where);
    Rank& r = *r_;
    in_range(where, "segment id", id, 0, segment_max - 1);
    if (l.segments[id].alive != 0) failed(errc::segment_exists, where, id);
    in_range(where, "segment_create's group (grma's segments span group_all)", group, group_all,
             group_all);
    in_range(where, "segment_create's policy", int(policy), 0, 1);
    const std::size_t slot_bytes = (std::size_t(l.cfg.notification_num) * 8 + 255) / 256 * 256;
    size_in_range(where, "segment size", size, 0, ~std::size_t{0} / 2 - slot_bytes);
    // Every rank names the block with the same id and size.
    const std::int64_t mine[] = {id, std::int64_t(size)};
    const char* const names[] = {
        "segment_create's id differs between ranks (they create the same ids in the same "
        "order); another rank's",
        "segment_create's size differs between ranks (every rank passes the same); another "
        "rank's"};
    agree(where, s_->agree, mine, names, 2);
    auto* memory =
        static_cast<unsigned char*>(r.alloc_symmetric_for(slot_bytes + size, 256, where));
    auto* slots = reinterpret_cast<std::uint64_t*>(memory);
    for (std::size_t i = std::size_t(r.thread()); i < slot_bytes / 8; i += std::size_t(r.threads()))
      slots[i] = 0;
    if (policy == mem_initialized)
      for (std::size_t i = std::size_t(r.thread()); i < size; i += std::size_t(r.threads()))
        memory[slot_bytes + i] = 0;
    if (r.thread() == 0) l.segments[id] = {slots, memory + slot_bytes, size, 1, 0};
    r.barrier(team_world);  // every rank's slots are zero before any rank notifies
    return success;
  }

  // Collective over every rank: the segment's memory goes back to the heap.
  GRMA_INLINE status segment_delete(segment_id_t id) {
    const call where = call::gaspi_segment_delete;
    layer::segment_entry& e = segment(where, id);
    void* memory = e.slots;
    r_->sync_threads();
    if (r_->thread() == 0) e.alive = 0;
    r_->free_symmetric(memory);
    return success;
  }

  GRMA_INLINE status segment_ptr(segment_id_t id, void** pointer) {
    void* data = segment(call::gaspi_segment_query, id).data;
    result_at(call::gaspi_segment_query, "pointer", pointer) = data;
    return success;
  }
  // Every rank's copy has the same size.
  GRMA_INLINE status segment_size(segment_id_t id, rank_t rank, std::size_t* size) {
    check_rank(call::gaspi_segment_query, rank);
    const std::size_t bytes = segment(call::gaspi_segment_query, id).bytes;
    result_at(call::gaspi_segment_query, "size", size) = bytes;
    return success;
  }
  GRMA_INLINE status segment_num(int* count) {
    layer::local_state& l = state_of(call::gaspi_segment_query);
    int n = 0;
    for (int id = 0; id < segment_max; ++id) n += l.segments[id].alive != 0 ? 1 : 0;
    result_at(call::gaspi_segment_query, "count", count) = n;
    return success;
  }
  // The ids of the first `count` live segments, in order.
  GRMA_INLINE status segment_list(int count, segment_id_t* ids) {
    layer::local_state& l = state_of(call::gaspi_segment_query);
    if (count > 0 && ids == nullptr) null_output(call::gaspi_segment_query, "ids");
    int n = 0;
    for (int id = 0; id < segment_max && n < count; ++id)
      if (l.segments[id].alive != 0) ids[n++] = id;
    return success;
  }
  GRMA_INLINE status segment_max_get(int* count) const {
    result_at(call::gaspi_segment_query, "count", count) = segment_max;
    return success;
  }
  GRMA_INLINE status notification_num(int* count) {
    const int ids = state_of(call::gaspi_segment_query).cfg.notification_num;
    result_at(call::gaspi_segment_query, "count", count) = ids;
    return success;
  }

  // ---- one-sided ----

  // `size` bytes from offset_local of this rank's segment_local to
  // offset_remote of rank's segment_remote.
  GRMA_INLINE status write(segment_id_t segment_local, offset_t offset_local, rank_t rank,
                           segment_id_t segment_remote, offset_t offset_remote, std::size_t size,
                           queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_write;
    const auto from = place(where, segment_local, offset_local, size, r_->rank(world));
    const auto to = place(where, segment_remote, offset_remote, size, rank);
    if (!post(where, queue, 1)) return queue_full;
    r_->put_nbi(to, from, size, rank, context_of(queue));
    return success;
  }

  // `size` bytes from offset_remote of rank's segment_remote to this rank's.
  GRMA_INLINE status read(segment_id_t segment_local, offset_t offset_local, rank_t rank,
                          segment_id_t segment_remote, offset_t offset_remote, std::size_t size,
                          queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_read;
    auto* to = place(where, segment_local, offset_local, size, r_->rank(world));
    const auto* from = place(where, segment_remote, offset_remote, size, rank);
    if (!post(where, queue, 1)) return queue_full;
    r_->get_nbi(to, from, size, rank, context_of(queue));
    return success;
  }

  // Sets notification `id` of rank's copy of `segment_remote` to `value`
  // (not 0), after every write the rank posted before to the queue.
  GRMA_INLINE status notify(segment_id_t segment_remote, rank_t rank, notification_id_t id,
                            notification_t value, queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_notify;
    std::uint64_t* slot = notification_slot(where, segment_remote, id, value, rank);
    if (!post(where, queue, 1)) return queue_full;
    signal(slot, value, rank, queue);
    return success;
  }

  // write, then notify: the notification is seen after the data.
  GRMA_INLINE status write_notify(segment_id_t segment_local, offset_t offset_local, rank_t rank,
                                  segment_id_t segment_remote, offset_t offset_remote,
                                  std::size_t size, notification_id_t id, notification_t value,
                                  queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_write_notify;
    const auto from = place(where, segment_local, offset_local, size, r_->rank(world));
    const auto to = place(where, segment_remote, offset_remote, size, rank);
    std::uint64_t* slot = notification_slot(where, segment_remote, id, value, rank);
    if (!post(where, queue, 2)) return queue_full;
    r_->put_signal_nbi(to, from, size, slot, value, signal_op::set, rank, context_of(queue));
    return success;
  }

  // `count` writes to one rank, as one call (each its own segments,
  // offsets and size).
  GRMA_INLINE status write_list(int count, const segment_id_t* segments_local,
                                const offset_t* offsets_local, rank_t rank,
                                const segment_id_t* segments_remote, const offset_t* offsets_remote,
                                const std::size_t* sizes, queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_write_list;
    check_list(where, count, queue, segments_local, offsets_local, rank, segments_remote,
               offsets_remote, sizes);
    if (!post(where, queue, count)) return queue_full;
    list(where, true, count, segments_local, offsets_local, rank, segments_remote, offsets_remote,
         sizes, queue);
    return success;
  }

  // write_list, then notify `id` of rank's segment_notification.
  GRMA_INLINE status write_list_notify(int count, const segment_id_t* segments_local,
                                       const offset_t* offsets_local, rank_t rank,
                                       const segment_id_t* segments_remote,
                                       const offset_t* offsets_remote, const std::size_t* sizes,
                                       segment_id_t segment_notification, notification_id_t id,
                                       notification_t value, queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_write_list_notify;
    check_list(where, count, queue, segments_local, offsets_local, rank, segments_remote,
               offsets_remote, sizes);
    std::uint64_t* slot = notification_slot(where, segment_notification, id, value, rank);
    if (!post(where, queue, count + 1)) return queue_full;
    list(where, true, count, segments_local, offsets_local, rank, segments_remote, offsets_remote,
         sizes, queue);
    signal(slot, value, rank, queue);
    return success;
  }

  // `count` reads from one rank.
  GRMA_INLINE status read_list(int count, const segment_id_t* segments_local,
                               const offset_t* offsets_local, rank_t rank,
                               const segment_id_t* segments_remote, const offset_t* offsets_remote,
                               const std::size_t* sizes, queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_read_list;
    check_list(where, count, queue, segments_local, offsets_local, rank, segments_remote,
               offsets_remote, sizes);
    if (!post(where, queue, count)) return queue_full;
    list(where, false, count, segments_local, offsets_local, rank, segments_remote, offsets_remote,
         sizes, queue);
    return success;
  }

  // read, then notification `id` of this rank's segment_local set to 1 once
  // the data is here.
  GRMA_INLINE status read_notify(segment_id_t segment_local, offset_t offset_local, rank_t rank,
                                 segment_id_t segment_remote, offset_t offset_remote,
                                 std::size_t size, notification_id_t id, queue_id_t queue,
                                 timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_read_notify;
    auto* to = place(where, segment_local, offset_local, size, r_->rank(world));
    const auto* from = place(where, segment_remote, offset_remote, size, rank);
    std::uint64_t* slot = notification_slot(where, segment_local, id, 1, r_->rank(world));
    if (!post(where, queue, 2)) return queue_full;
    r_->get(to, from, size, rank, context_of(queue));  // the data is here at return
    signal(slot, 1, r_->rank(world), queue);
    return success;
  }

  // read_list, then this rank's notification `id` of segment_notification set to 1.
  GRMA_INLINE status read_list_notify(int count, const segment_id_t* segments_local,
                                      const offset_t* offsets_local, rank_t rank,
                                      const segment_id_t* segments_remote,
                                      const offset_t* offsets_remote, const std::size_t* sizes,
                                      segment_id_t segment_notification, notification_id_t id,
                                      queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_read_list_notify;
    check_list(where, count, queue, segments_local, offsets_local, rank, segments_remote,
               offsets_remote, sizes);
    std::uint64_t* slot = notification_slot(where, segment_notification, id, 1, r_->rank(world));
    if (!post(where, queue, count + 1)) return queue_full;
    list(where, false, count, segments_local, offsets_local, rank, segments_remote, offsets_remote,
         sizes, queue);
    r_->quiet(context_of(queue));  // the data is here
    signal(slot, 1, r_->rank(world), queue);
    return success;
  }

  // ---- notifications ----

  // Waits until one of notifications first .. first + count - 1 of this
  // rank's segment is not 0; *first_id is its id (the lowest such id when
  // several are). It leaves the value: notify_reset takes it. A count of 0
  // returns success at once.
  GRMA_INLINE status notify_waitsome(segment_id_t segment_local, notification_id_t first, int count,
                                     notification_id_t* first_id, timeout_t limit) {
    const call where = call::gaspi_notify_waitsome;
    layer::segment_entry& e = segment(where, segment_local);
    if (first_id == nullptr) null_output(where, "first_id");
    if (count < 0) out_of_range(where, "num", count, 0, state_of(where).cfg.notification_num);
    if (count == 0) return success;  // GPI-2's: nothing to wait for (*first_id is left)
    check_ids(where, segment_local, first, count);
    Rank& r = *r_;
    std::size_t index = core::no_word;
    if (r.thread() == 0) {
      std::uint64_t* slots = e.slots + first;
      if (limit == test)
        index = r.test_any(slots, std::size_t(count), nullptr, cmp::ne, std::uint64_t{0});
      else if (limit == block)
        index = r.wait_until_any(slots, std::size_t(count), nullptr, cmp::ne, std::uint64_t{0});
      else
        r.wait_until_any(slots, std::size_t(count), nullptr, cmp::ne, std::uint64_t{0}, index,
                         within{double(limit) / 1000});
    }
    index = r.from_leader(index);
    if (index == core::no_word) return timeout;
    *first_id = first + notification_id_t(index);
    return success;
  }

  // Takes notification `id` of this rank's segment: *old_value is its value
  // (0 where none came), and the slot is 0 again. Atomic: of several
  // notifications of one id, each value is taken once, by one reset.
  GRMA_INLINE status notify_reset(segment_id_t segment_local, notification_id_t id,
                                  notification_t* old_value) {
    const call where = call::gaspi_notify_reset;
    layer::segment_entry& e = segment(where, segment_local);
    check_ids(where, segment_local, id, 1);
    Rank& r = *r_;
    std::uint64_t old = 0;
    if (r.thread() == 0) old = r.atomic_swap(e.slots + id, std::uint64_t{0}, r.rank(world));
    old = r.from_leader(old);
    if (old_value != nullptr) *old_value = notification_t(old);
    return success;
  }

  // ---- queues ----

  // Returns once every operation posted to the queue is complete (the
  // limit is not used: on the device paths they are complete already, and
  // to other nodes the core's quiet waits as long as it takes).
  GRMA_INLINE status wait(queue_id_t queue, timeout_t limit) {
    (void)limit;
    const call where = call::gaspi_wait;
    layer::local_state& l = state_of(where);
    check_queue(where, queue);
    r_->quiet(l.queues[queue]);
    r_->sync_threads();
    if (r_->thread() == 0) l.posted[queue] = 0;
    r_->sync_threads();
    return success;
  }
  // Operations posted to the queue since its last wait (write_notify and
  // the _notify forms count their notification too).
  GRMA_INLINE status queue_size(queue_id_t queue, int* posted) {
    layer::local_state& l = state_of(call::gaspi_queue_query);
    check_queue(call::gaspi_queue_query, queue);
    result_at(call::gaspi_queue_query, "posted", posted) = int(l.posted[queue]);
    return success;
  }
  GRMA_INLINE status queue_size_max(int* most) {
    const int entries = state_of(call::gaspi_queue_query).cfg.queue_size_max;
    result_at(call::gaspi_queue_query, "most", most) = entries;
    return success;
  }
  GRMA_INLINE status queue_num(int* queues) {
    const int n = state_of(call::gaspi_queue_query).cfg.queue_num;
    result_at(call::gaspi_queue_query, "queues", queues) = n;
    return success;
  }

  // ---- atomics on 8-byte segment words (offsets multiples of 8) ----

  GRMA_INLINE status atomic_fetch_add(segment_id_t segment_remote, offset_t offset, rank_t rank,
                                      atomic_value_t value, atomic_value_t* old_value,
                                      timeout_t limit) {
    (void)limit;
    auto* word = atomic_word(call::gaspi_atomic_fetch_add, segment_remote, offset, rank);
    std::uint64_t old = 0;
    if (r_->thread() == 0) old = r_->atomic_fetch_add(word, value, rank);
    old = r_->from_leader(old);
    if (old_value != nullptr) *old_value = old;
    return success;
  }
  GRMA_INLINE status atomic_compare_swap(segment_id_t segment_remote, offset_t offset, rank_t rank,
                                         atomic_value_t comparator, atomic_value_t value,
                                         atomic_value_t* old_value, timeout_t limit) {
    (void)limit;
    auto* word = atomic_word(call::gaspi_atomic_compare_swap, segment_remote, offset, rank);
    std::uint64_t old = 0;
    if (r_->thread() == 0) old = r_->atomic_compare_swap(word, comparator, value, rank);
    old = r_->from_leader(old);
    if (old_value != nullptr) *old_value = old;
    return success;
  }

  // ---- groups ----

  // A new group, empty; this rank's own. Members number their groups alike
  // (every member creates its groups in the same order: the group's
  // barriers meet in words named by its id), and ids are not reused: a run
  // makes group_max - 1 groups at most.
  GRMA_INLINE status group_create(group_t* group) {
    const call where = call::gaspi_group_create;
    layer::local_state& l = state_of(where);
    Rank& r = *r_;
    const int id = l.groups_made;
    in_range(where, "group id (ids are not reused after group_delete)", id, 1, group_max - 1);
    group_t& made = result_at(where, "group", group);
    r.sync_threads();
    if (r.thread() == 0) {
      l.groups_made = id + 1;
      l.groups[id].stage = 1;
      l.groups[id].pending = int(call::none);
    }
    r.sync_threads();
    made = id;
    return success;
  }
  GRMA_INLINE status group_add(group_t group, rank_t rank) {
    const call where = call::gaspi_group_add;
    layer::group_entry& e = group_at(where, group, 1);
    check_rank(where, rank);
    std::uint64_t& word = s_->members(group)[rank / 64];
    const std::uint64_t bit = std::uint64_t{1} << (rank % 64);
    r_->sync_threads();
    if (r_->thread() == 0 && (word & bit) == 0) {
      word |= bit;
      ++e.size;
    }
    r_->sync_threads();
    return success;
  }
  // Collective over the group's members (this rank one of them, each having
  // added the same ranks): the group's barrier, after which its collectives
  // may be called. Called again after it returned timeout, it goes on.
  GRMA_INLINE status group_commit(group_t group, timeout_t limit) {
    const call where = call::gaspi_group_commit;
    layer::local_state& l = state_of(where);
    Rank& r = *r_;
    in_range(where, "group", group, 1, group_max - 1);
    layer::group_entry& e = l.groups[group];
    const std::uint32_t stage = e.stage;
    if (stage != 1 && stage != 2) failed(errc::group_state, where, group, stage);
    if (member_index(group, r.rank(world)) < 0)
      refuse(where, "group_commit by a rank that is not a member of group", group);
    const std::uint64_t hash = members_hash(group);
    r.sync_threads();
    status result = success;
    if (r.thread() == 0) {
      if (stage == 1) {
        s_->members_hash[group] = hash;
        e.stage = 2;
        e.pending = int(where);
      }
      result = barrier_rounds(group, deadline(limit));
      if (result == success) {
        e.pending = int(call::none);
        e.stage = 3;
        // Every member published its hash before its barrier's signals.
        for (int i = 0; i < e.size; ++i) {
          const int w = world_of(group, i);
          const std::uint64_t theirs = r.g(&s_->members_hash[group], w);
          if (theirs != hash) failed(errc::group_mismatch, where, group, w);
        }
      }
    }
    return r.from_leader(result);
  }
  GRMA_INLINE status group_delete(group_t group) {
    const call where = call::gaspi_group_delete;
    layer::local_state& l = state_of(where);
    in_range(where, "group", group, 1, group_max - 1);
    if (l.groups[group].stage == 0) failed(errc::group_state, where, group, 0);
    if (l.groups[group].pending != int(call::none))
      failed(errc::collective_pending, where, group, l.groups[group].pending);
    r_->sync_threads();
    if (r_->thread() == 0) l.groups[group].stage = 0;
    r_->sync_threads();
    return success;
  }
  GRMA_INLINE status group_size(group_t group, int* size) {
    const int n = group_at(call::gaspi_group_query, group, 0).size;
    result_at(call::gaspi_group_query, "size", size) = n;
    return success;
  }
  // The members' world ranks, ascending.
  GRMA_INLINE status group_ranks(group_t group, rank_t* ranks) {
    const int n = group_at(call::gaspi_group_query, group, 0).size;
    if (n != 0 && ranks == nullptr) null_output(call::gaspi_group_query, "ranks");
    for (int i = 0; i < n; ++i) ranks[i] = world_of(group, i);  // by every thread
    return success;
  }
  GRMA_INLINE status group_max_get(int* count) const {
    result_at(call::gaspi_group_query, "count", count) = group_max;
    return success;
  }

  // ---- collectives over a committed group (every member, the same arguments) ----

  // Returns once every member has called it (it orders nothing else:
  // operations on queues complete with wait).
  GRMA_INLINE status barrier(group_t group, timeout_t limit) {
    const call where = call::gaspi_barrier;
    layer::group_entry& e = group_at(where, group, 3);
    Rank& r = *r_;
    check_pending(where, group, e);
    r.sync_threads();  // every thread's writes before any member leaves
    status result = success;
    if (r.thread() == 0) {
      e.pending = int(where);
      result = barrier_rounds(group, deadline(limit));
      if (result == success) e.pending = int(call::none);
    }
    return r.from_leader(result);
  }

  // recv[i] = op over the members' send[i], i < count (at most
  // allreduce_elem_max), elements of `type`. Every member passes the same
  // count, op and type; the rank's threads pass the same values in send
  // (one buffer or each its own), and every thread's recv gets the result.
  // While an allreduce that returned timeout is not finished, an allreduce
  // on another group is an error (the rank has one partial result).
  //
  // A binomial tree over the members: member i combines into its own
  // contribution the partial results of members i + 2^k, k = 0, 1, ...
  // below i's lowest set bit (each pulled with one get once that member
  // says it is ready), then tells member i - 2^lowest that its own is ready;
  // member 0's result goes back down the same tree, pushed with put_signal.
  // Every member gets member 0's result, combined in one order, so float
  // sums agree everywhere; each member makes at most log2(size) gets and
  // puts.
  //
  // Why the buffers may be reused at once: a member's partial result is
  // read before its parent pushes it the result, so its next allreduce
  // (on any group) finds it free; a result is pushed to a member only
  // after that member joined the allreduce, so never into one it still
  // copies out. The ready words are a group's and carry the allreduce's
  // number, so a wait never takes another allreduce's signal.
  GRMA_INLINE status allreduce(const void* send, void* recv, int count, operation_t op,
                               datatype_t type, group_t group, timeout_t limit) {
    const call where = call::gaspi_allreduce;
    in_range(where, "allreduce's count", count, 1, allreduce_elem_max);
    in_range(where, "allreduce's op", int(op), int(op_min), int(op_sum));
    in_range(where, "allreduce's type", int(type), int(type_int), int(type_ulong));
    return reduce_members(where, send, recv, std::size_t(count) * element_bytes(type), group, limit,
                          [&] { combine(type, op, count); });
  }

  // GPI-2's allreduce_user: `num` elements of `element_size` bytes (num *
  // element_size at most allreduce_buf_size) reduced by the program's
  // operation, called by one thread of the rank as
  //   status reduce(void* one, void* two, void* result, reduce_state_t state,
  //                 int num, std::size_t element_size, timeout_t limit)
  // (a function, or any callable the rank's code may call) to write
  // result[i] = one[i] op two[i]. `one` always holds the elements of the
  // members before `two`'s, so the operation must be associative but need
  // not commute; every member gets the same result. An operation that does
  // not return success ends the job (the allreduce could not go on).
  template <class Reduce>
  GRMA_INLINE status allreduce_user(const void* send, void* recv, int num, std::size_t element_size,
                                    Reduce&& reduce, reduce_state_t state, group_t group,
                                    timeout_t limit) {
    const call where = call::gaspi_allreduce_user;
    in_range(where, "allreduce_user's num", num, 1, allreduce_buf_size);
    size_in_range(where, "allreduce_user's element_size", element_size, 1,
                  std::size_t(allreduce_buf_size / num));
    Rank& r = *r_;
    return reduce_members(where, send, recv, std::size_t(num) * element_size, group, limit, [&] {
      status result = success;
      if (r.thread() == 0)
        result = reduce(s_->partial(), s_->child(), s_->result(), state, num, element_size, limit);
      if (r.from_leader(result) != success)
        refuse(where, "allreduce_user's operation returned status", int(result));
      const std::size_t bytes = std::size_t(num) * element_size;
      for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
        s_->partial()[i] = s_->result()[i];
    });
  }
  // The bytes an allreduce_user reduces at most.
  GRMA_INLINE status allreduce_buf_size_get(std::size_t* bytes) const {
    result_at(call::gaspi_allreduce_user, "bytes", bytes) = allreduce_buf_size;
    return success;
  }
  GRMA_INLINE status allreduce_elem_max_get(int* count) const {
    result_at(call::gaspi_allreduce, "count", count) = allreduce_elem_max;
    return success;
  }

  // ---- passive communication: one message at a time from a rank to another ----

  // `size` bytes (1 to config.passive_transfer_size_max) from this rank's
  // segment to `rank`, which takes them with passive_receive. The message
  // is copied into this rank's outbox, so the call returns once it is
  // posted; the outbox holds one message, so a send first waits until the
  // receiver of the rank's last one has taken it (where that wait returns
  // timeout, nothing was posted: call it again).
  GRMA_INLINE status passive_send(segment_id_t segment_local, offset_t offset_local, rank_t rank,
                                  std::size_t size, timeout_t limit) {
    const call where = call::gaspi_passive_send;
    layer::local_state& l = state_of(where);
    Rank& r = *r_;
    const int me = r.rank(world);
    check_rank(where, rank);
    if (rank == me) refuse(where, "passive_send's rank is the sender's own", rank);
    size_in_range(where, "passive_send's size", size, 1, l.cfg.passive_transfer_size_max);
    const auto* from =
        static_cast<const unsigned char*>(place(where, segment_local, offset_local, size, me));
    status result = success;
    if (r.thread() == 0) result = outbox_free(deadline(limit));
    result = r.from_leader(result);  // every thread reads the outbox's state after
    if (result != success) return result;
    for (std::size_t i = std::size_t(r.thread()); i < size; i += std::size_t(r.threads()))
      s_->outbox()[i] = from[i];
    r.sync_threads();
    if (r.thread() == 0) {
      const std::uint64_t sequence = ++l.outbox_sequence;
      s_->outbox_header = sequence << 32 | size;
      l.outbox_pending = 1;
      l.outbox_target = rank;
      // The outbox is written before the receiver can see this rank's bit.
      r.fence();
      r.atomic_or(&s_->pending_senders()[me / 64], std::uint64_t{1} << (me % 64), rank);
    }
    r.sync_threads();
    return success;
  }

  // A message from any rank into this rank's segment (at most `size`
  // bytes); *rank is its sender.
  GRMA_INLINE status passive_receive(segment_id_t segment_local, offset_t offset_local,
                                     rank_t* rank, std::size_t size, timeout_t limit) {
    const call where = call::gaspi_passive_receive;
    layer::local_state& l = state_of(where);
    if (rank == nullptr) null_output(where, "rank");
    Rank& r = *r_;
    const int me = r.rank(world);
    auto* to = static_cast<unsigned char*>(place(where, segment_local, offset_local, size, me));
    std::uint64_t* senders = s_->pending_senders();
    int sender = -1;
    std::uint64_t header = 0;
    if (r.thread() == 0) {
      const auto words = std::size_t(l.world_words);
      std::size_t index = core::no_word;
      if (limit == test)
        index = r.test_any(senders, words, nullptr, cmp::ne, std::uint64_t{0});
      else if (limit == block)
        index = r.wait_until_any(senders, words, nullptr, cmp::ne, std::uint64_t{0});
      else
        r.wait_until_any(senders, words, nullptr, cmp::ne, std::uint64_t{0}, index,
                         within{double(limit) / 1000});
      if (index != core::no_word) {
        // The lowest sender of the word: its bit cleared atomically (others
        // set theirs meanwhile).
        const std::uint64_t bits = r.atomic_fetch(&senders[index], me);
        int bit = 0;
        while (((bits >> bit) & 1) == 0) ++bit;
        r.atomic_and(&senders[index], ~(std::uint64_t{1} << bit), me);
        sender = int(index) * 64 + bit;
        header = r.g(&s_->outbox_header, sender);
      }
    }
    sender = r.from_leader(sender);
    if (sender < 0) return timeout;
    header = r.from_leader(header);
    const std::size_t bytes = std::size_t(header & 0xffffffffu);
    if (bytes > size)
      failed(errc::passive_message_size, where, std::int64_t(bytes), std::int64_t(size), sender);
    r.get(to, s_->outbox(), bytes, sender);  // the data is here at return
    if (r.thread() == 0) {
      // Release: the bit's clearing and the outbox's reads come before the
      // sender may post (and set its bit) again.
      r.fence();
      r.p(&s_->outbox_taken, header >> 32, sender);
    }
    r.sync_threads();
    *rank = sender;
    return success;
  }
  GRMA_INLINE status passive_transfer_size_max(std::size_t* bytes) {
    const std::size_t most = state_of(call::gaspi_passive_send).cfg.passive_transfer_size_max;
    result_at(call::gaspi_passive_send, "bytes", bytes) = most;
    return success;
  }

 private:
  template <class>
  friend class warp_handle;
  GRMA_INLINE handle(Rank& r, layer::state* s, layer::local_state* l) : r_(&r), s_(s), l_(l) {}

  // The rank's tables, which are this handle's while no other handle's
  // proc_init has taken them (a GPU block has one copy: one handle a rank).
  GRMA_INLINE layer::local_state& state_of(call where) const {
    if (l_ == nullptr || l_->owner != s_) failed(errc::not_initialized, where, 0);
    return *l_;
  }

  GRMA_INLINE void in_range(call where, const char* what, std::int64_t value, std::int64_t lowest,
                            std::int64_t highest) const {
    if (value < lowest || value > highest) out_of_range(where, what, value, lowest, highest);
  }
  // A size (named unsigned, as it was given).
  GRMA_INLINE void size_in_range(call where, const char* what, std::size_t value,
                                 std::size_t lowest, std::size_t highest) const {
    if (value < lowest || value > highest)
      out_of_range(where, what, std::int64_t(value), std::int64_t(lowest), std::int64_t(highest),
                   true);
  }
  // The failing branches, out of line: a call's fast path is its compares.
  [[noreturn]] GRMA_COLD void out_of_range(call where, const char* what, std::int64_t value,
                                           std::int64_t lowest, std::int64_t highest,
                                           bool is_size = false) const {
    std::uint32_t n = 0;
    while (what[n] != 0) ++n;
    r_->fail(errc::argument_range, where, value, lowest, highest, is_size ? 1 : 0, 0, what, n);
  }
  [[noreturn]] GRMA_COLD void failed(errc code, call where, std::int64_t v0 = 0,
                                     std::int64_t v1 = 0, std::int64_t v2 = 0, std::int64_t v3 = 0,
                                     std::int64_t v4 = 0) const {
    r_->fail(code, where, v0, v1, v2, v3, v4);
  }
  // Every rank passed the same values[0, n) (a collective over every rank,
  // through `scratch`, 4n words of the symmetric heap), else the job ends
  // naming the first that differs (names[i]: "...; another rank's") and
  // the highest or lowest value another rank passed.
  GRMA_INLINE void agree(call where, std::int64_t* scratch, const std::int64_t* values,
                         const char* const* names, int n) const {
    Rank& r = *r_;
    if (r.thread() == 0)
      for (int i = 0; i < n; ++i) {
        scratch[2 * i] = values[i];
        scratch[2 * i + 1] = -values[i];
      }
    r.sync_threads();
    std::int64_t* highest = scratch + 2 * n;  // [2i] the highest of value i, [2i + 1] -the lowest
    r.allreduce(team_world, highest, scratch, std::size_t(2 * n), reduce_op::max);
    for (int i = 0; i < n; ++i)
      if (highest[2 * i] != values[i] || -highest[2 * i + 1] != values[i])
        refuse(where, names[i], highest[2 * i] != values[i] ? highest[2 * i] : -highest[2 * i + 1]);
  }
  // An argument the call does not take: "what: value".
  [[noreturn]] GRMA_COLD void refuse(call where, const char* what, std::int64_t value) const {
    std::uint32_t n = 0;
    while (what[n] != 0) ++n;
    r_->fail(errc::argument_refused, where, value, 0, 0, 0, 0, what, n);
  }
  // Where a query's result goes: a null pointer is a bad argument, named.
  template <class T>
  GRMA_INLINE T& result_at(call where, const char* name, T* pointer) const {
    if (pointer == nullptr) null_output(where, name);
    return *pointer;
  }
  [[noreturn]] GRMA_COLD void null_output(call where, const char* name) const {
    std::uint32_t n = 0;
    while (name[n] != 0) ++n;
    r_->fail(errc::null_buffer, where, 0, 0, 0, 0, 0, name, n);
  }
  GRMA_INLINE void check_rank(call where, rank_t rank) const {
    const int n = r_->size(world);
    if (rank < 0 || rank >= n) failed(errc::rank_out_of_range, where, rank, n, world.id);
  }
  GRMA_INLINE void check_queue(call where, queue_id_t queue) const {
    const int queues = state_of(where).cfg.queue_num;
    if (queue < 0 || queue >= queue_max || queue >= queues)  // queue_max: the compiler's bound too
      out_of_range(where, "queue", queue, 0, queues - 1);
  }
  // A list of `count` operations fits an empty queue (its notification,
  // where it has one, may go past: post), its arrays are there, and every
  // entry is inside its segments: checked before anything is posted.
  GRMA_INLINE void check_list(call where, int count, queue_id_t queue,
                              const segment_id_t* segments_local, const offset_t* offsets_local,
                              rank_t rank, const segment_id_t* segments_remote,
                              const offset_t* offsets_remote, const std::size_t* sizes) const {
    check_queue(where, queue);
    in_range(where, "list's count", count, 1, state_of(where).cfg.queue_size_max);
    if (segments_local == nullptr || offsets_local == nullptr || segments_remote == nullptr ||
        offsets_remote == nullptr || sizes == nullptr)
      failed(errc::null_buffer, where, count);
    for (int i = 0; i < count; ++i) {
      place(where, segments_local[i], offsets_local[i], sizes[i], r_->rank(world));
      place(where, segments_remote[i], offsets_remote[i], sizes[i], rank);
    }
  }
  GRMA_INLINE void check_ids(call where, segment_id_t id, notification_id_t first,
                             int count) const {
    const int ids = state_of(where).cfg.notification_num;
    if (first < 0 || count < 1 || first > ids - count)
      failed(errc::notification_range, where, first, count, ids, id);
  }

  GRMA_INLINE layer::segment_entry& segment(call where, segment_id_t id) const {
    layer::local_state& l = state_of(where);
    if (id < 0 || id >= segment_max || l.segments[id].alive == 0)
      failed(errc::segment_unknown, where, id, segment_max);
    return l.segments[id];
  }
  // This rank's address of [offset, offset + size) of the segment (rank's
  // copy is there in rank's slice).
  GRMA_INLINE unsigned char* place(call where, segment_id_t id, offset_t offset, std::size_t size,
                                   rank_t rank) const {
    check_rank(where, rank);
    layer::segment_entry& e = segment(where, id);
    if (offset > e.bytes || size > e.bytes - offset)
      failed(errc::segment_range, where, std::int64_t(offset), std::int64_t(size),
             std::int64_t(e.bytes), id, rank);
    return e.data + offset;
  }
  GRMA_INLINE std::uint64_t* notification_slot(call where, segment_id_t id, notification_id_t n,
                                               notification_t value, rank_t rank) const {
    check_rank(where, rank);
    layer::segment_entry& e = segment(where, id);
    check_ids(where, id, n, 1);
    if (value == 0) failed(errc::notification_zero, where, n);
    return e.slots + n;
  }
  GRMA_INLINE std::uint64_t* atomic_word(call where, segment_id_t id, offset_t offset,
                                         rank_t rank) const {
    unsigned char* at = place(where, id, offset, 8, rank);
    if (offset % 8 != 0)
      failed(errc::word_misaligned, where, std::int64_t(offset), 8, 1);  // 1: an offset
    return reinterpret_cast<std::uint64_t*>(at);
  }

  GRMA_INLINE context context_of(queue_id_t queue) const { return l_->queues[queue]; }

  // Whether the queue has room for `entries` more operations; where it has,
  // they are counted. An empty queue takes any one call, so that a call
  // that counts more than the queue holds (a _notify form's two on a queue
  // of one) posts after a wait. Every thread reads the count before thread 0 changes
  // it, and the core's rank-level call that follows ends with the threads
  // met (rma.hpp) before any reads it again.
  GRMA_INLINE bool post(call where, queue_id_t queue, int entries) {
    check_queue(where, queue);
    layer::local_state& l = *l_;
    const std::uint32_t posted = l.posted[queue];
    const bool room =
        posted == 0 || posted + std::uint32_t(entries) <= std::uint32_t(l.cfg.queue_size_max);
    r_->sync_threads();
    if (room && r_->thread() == 0) l.posted[queue] += std::uint32_t(entries);
    return room;
  }

  // A notification's value into rank's slot, after the rank's earlier
  // operations on the queue: the fence orders them to one target before it
  // (on the device paths they are complete; to another node its engine
  // applies one rank's operations in order), and the threads have met since
  // their writes (the core's calls end so).
  GRMA_INLINE void signal(std::uint64_t* slot, notification_t value, rank_t rank,
                          queue_id_t queue) {
    Rank& r = *r_;
    r.sync_threads();
    if (r.thread() == 0) {
      r.fence(context_of(queue));
      r.p(slot, std::uint64_t(value), rank, context_of(queue));
    }
    r.sync_threads();  // a wait by any thread after the call covers the notification
  }

  // The list's puts (or gets), checked already (check_list).
  GRMA_INLINE void list(call where, bool is_write, int count, const segment_id_t* segments_local,
                        const offset_t* offsets_local, rank_t rank,
                        const segment_id_t* segments_remote, const offset_t* offsets_remote,
                        const std::size_t* sizes, queue_id_t queue) {
    for (int i = 0; i < count; ++i) {
      unsigned char* local =
          place(where, segments_local[i], offsets_local[i], sizes[i], r_->rank(world));
      unsigned char* remote = place(where, segments_remote[i], offsets_remote[i], sizes[i], rank);
      if (is_write)
        r_->put_nbi(remote, local, sizes[i], rank, context_of(queue));
      else
        r_->get_nbi(local, remote, sizes[i], rank, context_of(queue));
    }
  }

  // ---- groups' members and barriers (thread 0 alone runs a barrier) ----

  GRMA_INLINE layer::group_entry& group_at(call where, group_t group, std::uint32_t stage) const {
    layer::local_state& l = state_of(where);
    in_range(where, "group", group, 0, group_max - 1);
    layer::group_entry& e = l.groups[group];
    // stage 0: any that exists; 1: one being built; 3: a committed one.
    const bool ok = stage == 0 ? e.stage != 0 : e.stage == stage;
    if (!ok) failed(errc::group_state, where, group, e.stage);
    return e;
  }
  GRMA_INLINE void check_pending(call where, group_t group, const layer::group_entry& e) const {
    if (e.pending != int(call::none) && e.pending != int(where))
      failed(errc::collective_pending, where, group, e.pending);
  }

  // Member i's world rank.
  GRMA_INLINE int world_of(group_t group, int i) const {
    if (group == group_all) return i;
    const std::uint64_t* bits = s_->members(group);
    for (int w = 0; w < l_->world_words; ++w) {
      const int here = layer::bits_set(bits[w]);
      if (i < here) {
        std::uint64_t word = bits[w];
        for (int k = 0; k < i; ++k) word &= word - 1;  // the i-th set bit is then the lowest
        int bit = 0;
        while (((word >> bit) & 1) == 0) ++bit;
        return w * 64 + bit;
      }
      i -= here;
    }
    return -1;
  }
  // World rank w's member number, or -1.
  GRMA_INLINE int member_index(group_t group, int w) const {
    if (group == group_all) return w;
    const std::uint64_t* bits = s_->members(group);
    if (((bits[w / 64] >> (w % 64)) & 1) == 0) return -1;
    int i = 0;
    for (int k = 0; k < w / 64; ++k) i += layer::bits_set(bits[k]);
    return i + layer::bits_set(bits[w / 64] & ((std::uint64_t{1} << (w % 64)) - 1));
  }
  GRMA_INLINE std::uint64_t members_hash(group_t group) const {
    std::uint64_t h = 1469598103934665603ull;
    for (int w = 0; w < l_->world_words; ++w) h = (h ^ s_->members(group)[w]) * 1099511628211ull;
    return h | 1;  // never 0, the value of a member that has not published
  }

  GRMA_INLINE double deadline(timeout_t limit) const {
    if (limit == block) return -1;
    return r_->wtime() + double(limit) / 1000;
  }
  // Waits until the word (this rank's) is at least `value`, or until the
  // deadline (< 0: none; passed: one look).
  GRMA_INLINE status wait_word(std::uint64_t* word, std::uint64_t value, double until) {
    Rank& r = *r_;
    if (until < 0) {
      r.wait_until(word, cmp::ge, value);
      return success;
    }
    const double left = until - r.wtime();
    if (left <= 0) return r.test(word, cmp::ge, value) ? success : timeout;
    return r.wait_until(word, cmp::ge, value, within{left}) == wait_result::met ? success : timeout;
  }

  // Waits, by thread 0, until the receiver of this rank's last passive
  // message has taken it (at once where none is out).
  GRMA_INLINE status outbox_free(double until) {
    layer::local_state& l = *l_;
    if (l.outbox_pending == 0) return success;
    const status result = wait_word(&s_->outbox_taken, l.outbox_sequence, until);
    if (result == success)
      l.outbox_pending = 0;
    else
      s_->health()[l.outbox_target] = state_corrupt;
    return result;
  }

  // The group's barrier from where it stopped, by thread 0. Release: the
  // fence before each signal orders the rank's writes (and, through the
  // threads' meeting before, its threads') before it; acquire: the wait.
  // A signal is the barrier's number, so a partner one barrier ahead (it
  // can be no further) satisfies the wait too.
  GRMA_INLINE status barrier_rounds(group_t group, double until) {
    Rank& r = *r_;
    layer::group_entry& e = l_->groups[group];
    const int n = e.size, me = member_index(group, r.rank(world));
    const std::uint64_t number = e.epoch + 1;
    for (; (1 << e.round) < n; ++e.round, e.signalled = 0) {
      const int distance = 1 << e.round;
      std::uint64_t* word = &s_->barrier[group][e.round];
      if (e.signalled == 0) {
        r.fence();
        r.p(word, number, world_of(group, (me + distance) % n));
        e.signalled = 1;
      }
      if (wait_word(word, number, until) != success) {
        s_->health()[world_of(group, (me - distance + n) % n)] = state_corrupt;
        return timeout;
      }
    }
    e.round = 0;
    e.signalled = 0;
    e.epoch = number;
    return success;
  }

  GRMA_INLINE static std::size_t element_bytes(datatype_t type) {
    return type == type_int || type == type_uint || type == type_float ? 4 : 8;
  }
  // An allreduce of `bytes` from each member's `send` into every thread's
  // `recv` (where: allreduce or allreduce_user), `fold` folding the
  // child's partial result into this member's (every thread calls it).
  template <class Combine>
  GRMA_INLINE status reduce_members(call where, const void* send, void* recv, std::size_t bytes,
                                    group_t group, timeout_t limit, Combine&& fold) {
    layer::local_state& l = state_of(where);
    layer::group_entry& e = group_at(where, group, 3);
    Rank& r = *r_;
    if (send == nullptr || recv == nullptr) failed(errc::null_buffer, where, std::int64_t(bytes));
    check_pending(where, group, e);
    // The rank has one partial result: an allreduce that returned timeout
    // on another group still has its parent to read it.
    for (int other = 0; other < group_max; ++other) {
      const int pending = l.groups[other].pending;
      if (other != group &&
          (pending == int(call::gaspi_allreduce) || pending == int(call::gaspi_allreduce_user)))
        failed(errc::collective_pending, where, other, pending);
    }
    const bool resumed = e.pending == int(where);
    r.sync_threads();  // every thread has read the group's state
    if (!resumed) {
      const auto* from = static_cast<const unsigned char*>(send);
      for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
        s_->partial()[i] = from[i];
      r.sync_threads();
      if (r.thread() == 0) e.pending = int(where);  // allreduce_step is 0 between allreduces
    }
    const status result = reduce_tree(group, bytes, deadline(limit), fold);
    if (result != success) return result;
    // By every thread: each may pass a recv of its own (or all the same one).
    auto* to = static_cast<unsigned char*>(recv);
    for (std::size_t i = 0; i < bytes; ++i) to[i] = s_->result()[i];
    r.sync_threads();  // every thread has its copy before a next allreduce's result comes
    return success;
  }

  // allreduce's tree (see allreduce) from the step where it stopped, by
  // every thread; thread 0 waits. Release: the threads meet, then thread 0
  // fences and signals; acquire: its wait, then the threads' meeting
  // (from_leader) before they read.
  template <class Combine>
  GRMA_INLINE status reduce_tree(group_t group, std::size_t bytes, double until, Combine& fold) {
    Rank& r = *r_;
    layer::group_entry& e = l_->groups[group];
    const int n = e.size, me = member_index(group, r.rank(world));
    const std::uint64_t number = e.reduced + 1;
    std::uint32_t step = e.allreduce_step;
    r.sync_threads();  // every thread read the step before thread 0 changes it
    // Up: the children's partial results, then this one's to the parent.
    for (; step != layer::allreduce_awaiting_result && (1 << step) < n; ++step) {
      const int distance = 1 << step;
      if ((me & distance) != 0) {
        if (r.thread() == 0) {
          r.fence();
          r.p(&s_->reduce_ready[group][step], number, world_of(group, me - distance));
        }
        step = layer::allreduce_awaiting_result;
        break;
      }
      if (me + distance >= n) continue;
      const int child = world_of(group, me + distance);
      status result = success;
      if (r.thread() == 0) {
        result = wait_word(&s_->reduce_ready[group][step], number, until);
        if (result != success) {
          s_->health()[child] = state_corrupt;
          e.allreduce_step = step;
        }
      }
      if (r.from_leader(result) != success) return timeout;
      r.get(s_->child(), s_->partial(), bytes, child);
      fold();
      r.sync_threads();  // the copy is read before the next get overwrites it
    }
    // Down: the result from the parent (member 0 has it), then to the children.
    int below = 0;  // the children: members me + 2^k, k < below
    if (me == 0) {
      for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
        s_->result()[i] = s_->partial()[i];
      r.sync_threads();
      while ((1 << below) < n) ++below;
    } else {
      while ((me & (1 << below)) == 0) ++below;
      status result = success;
      if (r.thread() == 0) {
        result = wait_word(&s_->result_ready[group], number, until);
        if (result != success) {
          s_->health()[world_of(group, me - (1 << below))] = state_corrupt;
          e.allreduce_step = step;
        }
      }
      if (r.from_leader(result) != success) return timeout;
    }
    for (int k = below - 1; k >= 0; --k)  // the largest subtree first
      if (me + (1 << k) < n)
        r.put_signal(s_->result(), s_->result(), bytes, &s_->result_ready[group], number,
                     signal_op::set, world_of(group, me + (1 << k)));
    if (r.thread() == 0) {
      e.reduced = number;
      e.allreduce_step = 0;
      e.pending = int(call::none);
    }
    return success;
  }

  GRMA_INLINE void combine(datatype_t type, operation_t op, int count) {
    switch (type) {
      case type_int:
        return combine_as<std::int32_t>(op, count);
      case type_uint:
        return combine_as<std::uint32_t>(op, count);
      case type_float:
        return combine_as<float>(op, count);
      case type_double:
        return combine_as<double>(op, count);
      case type_long:
        return combine_as<std::int64_t>(op, count);
      case type_ulong:
        return combine_as<std::uint64_t>(op, count);
    }
  }
  // partial[i] = partial[i] op child[i], element i by thread i (and every
  // threads-th after). The partial covers the members below the child's.
  template <class T>
  GRMA_INLINE void combine_as(operation_t op, int count) {
    Rank& r = *r_;
    auto* mine = reinterpret_cast<T*>(s_->partial());
    const auto* theirs = reinterpret_cast<const T*>(s_->child());
    for (int i = r.thread(); i < count; i += r.threads())
      mine[i] = op == op_min   ? (theirs[i] < mine[i] ? theirs[i] : mine[i])
                : op == op_max ? (theirs[i] > mine[i] ? theirs[i] : mine[i])
                               : sum(mine[i], theirs[i]);
  }

  // a + b, integers wrapping as unsigned ones (no signed overflow).
  template <class T>
  GRMA_INLINE static T sum(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
    else
      return a + b;
  }

  Rank* r_;
  layer::state* s_ = nullptr;
  layer::local_state* l_ = nullptr;
};

// What handle::one_warp returns: a handle on the warp's rank, which it
// holds, sharing the rank's layer state. Neither copied nor moved (the
// handle points into it): use it where it is made.
template <class Rank>
class warp_handle : private warp_rank_holder<warp_rank_of<Rank>>,
                    public handle<warp_rank_of<Rank>> {
  using holder = warp_rank_holder<warp_rank_of<Rank>>;

 public:
  GRMA_INLINE warp_handle(const Rank& r, layer::state* s, layer::local_state* l)
      : holder{r.one_warp()}, handle<warp_rank_of<Rank>>(holder::held, s, l) {}
  warp_handle(const warp_handle&) = delete;
  warp_handle& operator=(const warp_handle&) = delete;
};

}  // namespace grma::gaspi
