// Collectives over a team (OpenSHMEM's): barrier, broadcast, fcollect
// (allgather), alltoall, reduce, allreduce and reduce_scatter, with sum,
// prod, min, max (numbers) and bit_and, bit_or, bit_xor (integers) on
// int32, uint32, int64, uint64, float and double. Every member calls with
// the same arguments, all its threads together; a member that calls another
// collective, or another size or root, is found where member 0's call is
// still published (every member checks after the first barrier) and fails
// the job.
//
// How they move data: every member of a team that stays on one node loads
// and stores every other member's symmetric memory directly, so a member
// pulls what it needs from the others' `source` (which must be symmetric)
// between two barriers. A reduction splits the elements among the members:
// each reduces its share of every member's source, in member order, and
// stores the result where it goes (every member's `dest` for allreduce,
// the root's for reduce, its own for reduce_scatter), so a member moves as
// many bytes as the vector holds whatever the team size. The barrier is a
// dissemination barrier: log2(size) rounds of one remote atomic add and one
// wait. Across nodes only team_world's barrier works so far (through the
// job's world barrier); data collectives there are errors that say so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/core/teams.hpp"
#include "grma/detail/device_state.hpp"

namespace grma::core {

template <class Rank>
class collective_calls {
 public:
  GRMA_INLINE void barrier(team t) {
    Rank& r = self();
    const detail::team_members m = r.resolve_team(t, call::barrier);
    if (t.slot == team_world.slot && r.spans_nodes()) return r.barrier(world);
    r.team_barrier(m, call::barrier);
  }

  // Root's `bytes` at `source` (symmetric) into every member's `dest`.
  GRMA_INLINE void broadcast(team t, void* dest, const void* source, std::size_t bytes, int root) {
    Rank& r = self();
    run(t, call::broadcast, source, bytes, bytes, root, [&](const detail::team_members& m, int) {
      const unsigned char* from = r.team_peer(m, root, source, bytes, call::broadcast);
      if (from != dest) r.copy(dest, from, bytes);
    });
  }

  // Member i's `bytes` at `source` (symmetric) into dest + i * bytes, on
  // every member.
  GRMA_INLINE void fcollect(team t, void* dest, const void* source, std::size_t bytes) {
    Rank& r = self();
    run(t, call::fcollect, source, bytes, bytes, 0, [&](const detail::team_members& m, int) {
      for (int i = 0; i < m.size; ++i)
        r.copy(static_cast<unsigned char*>(dest) + std::size_t(i) * bytes,
               r.team_peer(m, i, source, bytes, call::fcollect), bytes);
    });
  }

  // Block j (of `bytes`) of member i's `source` (symmetric, size * bytes)
  // into block i of member j's `dest`. dest and source may not overlap.
  GRMA_INLINE void alltoall(team t, void* dest, const void* source, std::size_t bytes) {
    Rank& r = self();
    run(t, call::alltoall, source, bytes * std::size_t(r.team_size(t)), bytes, 0,
        [&](const detail::team_members& m, int me) {
          for (int i = 0; i < m.size; ++i)
            r.copy(static_cast<unsigned char*>(dest) + std::size_t(i) * bytes,
                   r.team_peer(m, i, source, bytes * std::size_t(m.size), call::alltoall) +
                       std::size_t(me) * bytes,
                   bytes);
        });
  }

  // Element-wise op over every member's `count` elements at `source` into
  // the root's `dest` (both symmetric).
  template <class T>
  GRMA_INLINE void reduce(team t, T* dest, const T* source, std::size_t count, reduce_op op, int root) {
    reduction(call::reduce, t, dest, source, count, op, root);
  }
  // ... into every member's `dest` (symmetric; may be `source`).
  template <class T>
  GRMA_INLINE void allreduce(team t, T* dest, const T* source, std::size_t count, reduce_op op) {
    reduction(call::allreduce, t, dest, source, count, op, 0);
  }
  // Every member's `source` (symmetric) holds size * count elements; member
  // i's `dest` gets the reduction of block i.
  template <class T>
  GRMA_INLINE void reduce_scatter(team t, T* dest, const T* source, std::size_t count, reduce_op op) {
    reduction(call::reduce_scatter, t, dest, source, count, op, 0);
  }

 private:
  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }

  // The frame of every data collective: checks, a barrier (every member's
  // source is ready), the member's own part `body(members, me)`, a barrier
  // (every member is done reading the others' sources and writing theirs).
  template <class Body>
  GRMA_INLINE void run(team t, call where, const void* source, std::size_t source_bytes,
                       std::size_t size, int root, Body&& body) {
    Rank& r = self();
    const detail::team_members m = r.resolve_team(t, where);
    const int me = m.member_of(r.view(), r.world_rank());
    if (me < 0) r.fail(errc::team_not_member, where, t.slot, m.size);
    if (root < 0 || root >= m.size) r.fail(errc::rank_out_of_range, where, root, m.size, t.slot);
    if (source_bytes != 0) r.symmetric_offset_of(source, source_bytes, where);
    r.team_collective_begin(m, me, where, size, root);
    body(m, me);
    r.team_barrier(m, where);
  }

  template <class T>
  GRMA_INLINE void reduction(call where, team t, T* dest, const T* source, std::size_t count,
                             reduce_op op, int root) {
    static_assert(std::is_arithmetic_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                  "reductions take int32, uint32, int64, uint64, float or double");
    Rank& r = self();
    if (std::uint32_t(op) > std::uint32_t(reduce_op::bit_xor) ||
        (!std::is_integral_v<T> && std::uint32_t(op) >= std::uint32_t(reduce_op::bit_and)))
      r.fail(errc::invalid_reduce_op, where, std::int64_t(op), std::is_integral_v<T> ? 0 : 1);
    const int members = r.team_size(t);
    const bool scatter = where == call::reduce_scatter;
    const std::size_t total = scatter ? count * std::size_t(members) : count;
    // Where the others store results, dest must be symmetric.
    if (!scatter && count != 0) r.symmetric_offset_of(dest, count * sizeof(T), where);
    run(t, where, source, total * sizeof(T), count, root, [&](const detail::team_members& m, int me) {
      // My share of the elements: a block for reduce_scatter, else an even split.
      const std::size_t share = scatter ? count : (count + std::size_t(m.size) - 1) / std::size_t(m.size);
      const std::size_t first = std::size_t(me) * share;
      const std::size_t last = first + share < total ? first + share : total;
      for (std::size_t e = first + std::size_t(r.thread()); e < last; e += std::size_t(r.threads())) {
        T value = *reinterpret_cast<const T*>(r.team_peer(m, 0, source, total * sizeof(T), where) +
                                              e * sizeof(T));
        for (int i = 1; i < m.size; ++i)
          value = combine(op, value,
                          *reinterpret_cast<const T*>(
                              r.team_peer(m, i, source, total * sizeof(T), where) + e * sizeof(T)));
        if (scatter) {
          dest[e - first] = value;
        } else if (where == call::reduce) {
          *reinterpret_cast<T*>(r.team_peer(m, root, dest, count * sizeof(T), where) + e * sizeof(T)) = value;
        } else {
          for (int i = 0; i < m.size; ++i)
            *reinterpret_cast<T*>(r.team_peer(m, i, dest, count * sizeof(T), where) + e * sizeof(T)) = value;
        }
      }
    });
  }

  template <class T>
  GRMA_INLINE static T combine(reduce_op op, T a, T b) {
    switch (op) {
      case reduce_op::sum: return T(a + b);
      case reduce_op::prod: return T(a * b);
      case reduce_op::min: return b < a ? b : a;
      case reduce_op::max: return a < b ? b : a;
      default: break;
    }
    if constexpr (std::is_integral_v<T>) {
      if (op == reduce_op::bit_and) return T(a & b);
      if (op == reduce_op::bit_or) return T(a | b);
      return T(a ^ b);
    }
    return a;
  }
};

}  // namespace grma::core
