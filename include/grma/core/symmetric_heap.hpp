// The symmetric heap (papers/001's symmetric data objects): blocks that every
// rank of the job allocates together, at the same offset in each rank's
// slice, so another rank's copy of a block is named by the local address and
// the rank's number, with no window. The calls of the core's RMA, atomics
// and waits take such addresses.
//
// Every rank has a slice of GRMA_SYMMETRIC_SIZE / (ranks per device) bytes
// in its device's memory. alloc_symmetric and free_symmetric are collectives
// over world (all ranks, all threads of each), or over a team for a block
// its members share; ptr may be called by a single thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/core/teams.hpp"
#include "grma/detail/device_state.hpp"
#include "grma/detail/symmetric_table.hpp"

namespace grma::core {

template <class Rank>
class symmetric_heap_calls {
 public:
  // Collective over world: a block of `bytes` at a multiple of `alignment`
  // (a power of two up to 4096; 64 at least) in every rank's slice; returns this rank's
  // copy. Every rank passes the same arguments. Like OpenSHMEM's
  // shmem_malloc it is a barrier: no rank returns before all have called.
  GRMA_INLINE void* alloc_symmetric(std::size_t bytes, std::size_t alignment = 64) {
    return alloc_symmetric_for(bytes, alignment, call::alloc_symmetric);
  }
  // alloc_symmetric for a call's own use (a layer's segment): its errors
  // (arguments that differ between ranks, a heap too full) name that call.
  GRMA_INLINE void* alloc_symmetric_for(std::size_t bytes, std::size_t alignment, call where) {
    Rank& r = self();
    check_alignment(alignment, where);
    // Across nodes the nodes' tables may differ (team blocks): the offset
    // is agreed over world's members.
    if (r.spans_nodes()) return allocate_agreed(team_world, bytes, alignment, where);
    // Every rank passed the same arguments: the leader's are everyone's.
    const std::uint64_t result = agreed_action(
        where, bytes, alignment,
        [&](const detail::collective_arrival*) { return allocate(bytes, alignment, 0); });
    if ((result & exhausted) != 0) fail_exhausted(bytes, result, where);
    return r.symmetric_slice_base() + result;
  }

  // Collective over team t (every member, all its threads, with the same
  // arguments): a block at the same offset in every member's slice, which
  // no other allocation overlaps while it lives; returns this member's copy.
  // Members reach each other's copies as with a world block; other ranks
  // must not use the offset. Over team_world it is alloc_symmetric(bytes,
  // alignment).
  GRMA_INLINE void* alloc_symmetric(team t, std::size_t bytes, std::size_t alignment = 64) {
    if (t == team_world) return alloc_symmetric(bytes, alignment);
    check_alignment(alignment, call::alloc_symmetric);
    return allocate_agreed(t, bytes, alignment, call::alloc_symmetric);
  }

  // alloc_symmetric(t, count * size), zeroed in every member's slice before
  // any member returns.
  GRMA_INLINE void* calloc_symmetric(team t, std::size_t count, std::size_t size) {
    Rank& r = self();
    if (t == team_world) return calloc_symmetric(count, size);
    const std::size_t bytes = detail::product_or_most(count, size);
    auto* block = static_cast<unsigned char*>(alloc_symmetric(t, bytes));
    for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
      block[i] = 0;
    r.barrier(t);
    return block;
  }

  // Collective over team t: every member passes its copy of a block that t
  // allocated (or null, which frees nothing), and none uses it any more.
  GRMA_INLINE void free_symmetric(team t, void* block) {
    Rank& r = self();
    if (t == team_world) return free_symmetric(block);
    const std::uint64_t offset =
        block == nullptr ? ~std::uint64_t{0} : r.symmetric_offset_of(block, 1, call::free_symmetric);
    const detail::team_members m = r.resolve_team(t, call::free_symmetric);
    const int me = r.team_member(m, call::free_symmetric);
    r.team_collective_begin(m, me, call::free_symmetric, std::size_t(offset), 0);
    // The first member on each node frees the node's entry; every member
    // learns the worst outcome (0 freed, 1 no such block, 2 another team's).
    std::uint64_t outcome = 0;
    if (block != nullptr && r.thread() == 0 && r.team_first_here(m, me)) {
      r.lock_team_table(call::free_symmetric);
      const std::uint64_t result = release(offset, r.symmetric_owner(m, t.generation));
      r.unlock_team_table();
      outcome = result == 0 ? 0 : (result & foreign) != 0 ? 2 : 1;
    }
    outcome = r.team_exchange(m, outcome, call::free_symmetric);
    if (outcome != 0) fail_release(block, failed | (outcome == 2 ? foreign : 0));
  }

  // alloc_symmetric of count * size bytes, zeroed in every rank's slice
  // before any rank returns.
  GRMA_INLINE void* calloc_symmetric(std::size_t count, std::size_t size) {
    Rank& r = self();
    const std::size_t bytes = detail::product_or_most(count, size);
    auto* block = static_cast<unsigned char*>(alloc_symmetric(bytes));
    for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
      block[i] = 0;
    r.barrier(world);
    return block;
  }

  // Collective over world: every rank passes its copy of the same block (or
  // null, which frees nothing), and none uses the block any more.
  GRMA_INLINE void free_symmetric(void* block) {
    Rank& r = self();
    if (block == nullptr) {
      agreed_action(call::free_symmetric, ~std::uint64_t{0}, 0,
                    [](const detail::collective_arrival*) { return std::uint64_t{0}; });
      return;
    }
    const std::uint64_t offset = r.symmetric_offset_of(block, 1, call::free_symmetric);
    const std::uint64_t result = agreed_action(
        call::free_symmetric, offset, 0,
        [&](const detail::collective_arrival*) { return release(offset, 0); }, block);
    if (result != 0) fail_release(block, result);
  }

  // The target's copy of the symmetric object at `symmetric`, as a pointer
  // this thread may load and store through: on this rank's device or a peer
  // device of the node; null for a target on another node. Any thread.
  template <class T>
  GRMA_INLINE T* ptr(T* symmetric, int target) const {
    return reinterpret_cast<T*>(self().place_symmetric(symmetric, 1, target, call::ptr).address);
  }

 private:
  // An action's result: an offset, or `failed` with the reason's bit and a value.
  static constexpr std::uint64_t failed = std::uint64_t{1} << 63;
  static constexpr std::uint64_t exhausted = std::uint64_t{1} << 62;  // value: largest free block
  static constexpr std::uint64_t disagreed = std::uint64_t{1} << 61;  // value: the differing rank
  static constexpr std::uint64_t foreign = std::uint64_t{1} << 60;    // another owner's block
  static constexpr std::uint64_t value_mask = disagreed - 1;

  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }
  GRMA_INLINE const Rank& self() const { return static_cast<const Rank&>(*this); }

  GRMA_INLINE void check_alignment(std::size_t alignment, call where) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
        alignment > detail::symmetric_alignment_limit)
      self().fail(errc::invalid_alignment, where, std::int64_t(alignment));
  }

  // Where blocks may start: after the teams' workspaces, at `from` or after.
  GRMA_INLINE static std::uint64_t first_offset(std::uint64_t from) {
    return from > detail::symmetric_reserved_bytes ? from : detail::symmetric_reserved_bytes;
  }

  // The allocator's answer (its caller holds the table): an offset, or
  // failed | exhausted | the largest free block.
  GRMA_INLINE std::uint64_t allocate(std::uint64_t bytes, std::uint64_t alignment, std::uint64_t owner) {
    const Rank& r = self();
    detail::symmetric_failure why{};
    const std::uint64_t at = detail::symmetric_allocate(r.view().symmetric, detail::symmetric_reserved_bytes,
                                                        r.view().symmetric_slice, bytes, alignment, owner, why);
    return at == ~std::uint64_t{0} ? failed | exhausted | why.largest_free : at;
  }

  // The table's answer to freeing `owner`'s block at `offset`: 0, or failed
  // (| foreign where the block is another owner's).
  GRMA_INLINE std::uint64_t release(std::uint64_t offset, std::uint64_t owner) {
    switch (detail::symmetric_release(self().view().symmetric, offset, owner)) {
      case detail::symmetric_release_result::released: return 0;
      case detail::symmetric_release_result::not_owner: return failed | foreign;
      default: return failed;
    }
  }

  GRMA_COLD void fail_release(const void* block, std::uint64_t result) {
    const auto address = std::int64_t(reinterpret_cast<std::uintptr_t>(block));
    if ((result & foreign) != 0) self().fail(errc::symmetric_not_owner, call::free_symmetric, address);
    self().fail(errc::invalid_free, call::free_symmetric, address);
  }

  GRMA_COLD void fail_exhausted(std::uint64_t bytes, std::uint64_t result, call where) {
    const Rank& r = self();
    r.fail(errc::symmetric_exhausted, where, std::int64_t(bytes),
           std::int64_t(r.view().symmetric_slice), std::int64_t(result & value_mask),
           std::int64_t(*r.view().symmetric.count), std::int64_t(r.view().symmetric.capacity));
  }

  // A block over team t whose offset the members agree on in the tables
  // of every node of them (team_agree).
  GRMA_OUT_OF_LINE void* allocate_agreed(team t, std::size_t bytes, std::size_t alignment,
                                         call where) {
    Rank& r = self();
    const detail::team_members m = r.resolve_team(t, where);
    const int me = r.team_member(m, where);
    // The barrier in it: every member has made the same call.
    r.team_collective_begin(m, me, where, bytes, int(alignment));
    const std::uint64_t owner = t == team_world ? 0 : r.symmetric_owner(m, t.generation);
    const detail::symmetric_table& table = r.view().symmetric;
    std::uint64_t largest = 0;  // this node's largest gap, where it had none
    bool short_here = false;    // this node's table had no gap (its first member looked)
    const std::uint64_t agreed = r.team_agree(
        m, r.team_first_here(m, me), 0, where,
        [&](std::uint64_t from) {
          detail::symmetric_failure why{};
          const std::uint64_t at = detail::symmetric_first_fit(table, first_offset(from), r.view().symmetric_slice,
                                                               bytes, alignment, why);
          if (at != ~std::uint64_t{0}) return at;
          largest = why.largest_free;
          short_here = true;
          return detail::team_value_none;
        },
        [&](std::uint64_t at) {
          detail::symmetric_failure why{};
          detail::symmetric_allocate(table, at, r.view().symmetric_slice, bytes, alignment, owner, why);
        });
    if (agreed == detail::team_value_none) {
      // Only each node's first member looked at its table: one more
      // exchange hands every member the smallest largest gap of the nodes
      // that had none (as above - gap, the exchange keeping the largest).
      constexpr std::uint64_t above = detail::team_value_none - 1;
      const std::uint64_t seen = r.team_exchange(m, short_here ? above - largest : 0, where);
      fail_exhausted(bytes, failed | exhausted | (seen == 0 ? 0 : above - seen), where);
    }
    return r.symmetric_slice_base() + agreed;
  }

  // A world collective that runs `act` at the leader once every rank has
  // passed the same (p0, p1); where one passed others, every rank fails
  // the job naming the first that differs from world rank 0 (and `block`,
  // the address a free was given).
  template <class Act>
  GRMA_INLINE std::uint64_t agreed_action(call where, std::uint64_t p0, std::uint64_t p1, Act&& act,
                                          const void* block = nullptr) {
    Rank& r = self();
    const auto l = r.layout(world);
    const std::uint64_t result =
        r.collective(world, l, where, p0, p1, [&](const detail::collective_arrival* arrivals) {
          for (int i = 1; i < l.size; ++i)
            if (arrivals[i].payload[0] != arrivals[0].payload[0] ||
                arrivals[i].payload[1] != arrivals[0].payload[1])
              return failed | disagreed | std::uint64_t(i);
          return act(arrivals);
        });
    if ((result & disagreed) != 0)
      r.fail(errc::symmetric_mismatch, where, std::int64_t(p0), std::int64_t(p1),
             std::int64_t(result & value_mask),
             std::int64_t(reinterpret_cast<std::uintptr_t>(block)));
    return result;
  }
};

}  // namespace grma::core
