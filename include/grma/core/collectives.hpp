// Collectives over a team (OpenSHMEM's): barrier, broadcast, fcollect
// (allgather), alltoall, reduce, allreduce and reduce_scatter, with sum,
// prod, min, max (numbers) and bit_and, bit_or, bit_xor (integers) on
// integers of 1 to 8 bytes, float and double; collect (members' sizes may
// differ) and alltoalls (strided). Every member calls with
// the same arguments, all its threads together; a member that calls another
// data collective, or another size, root, reduction operation or element
// type, fails the job: every member hands its call to the next member,
// which checks it after the first barrier. A barrier (or team_destroy, or
// a later step of another call) hands nothing: the member after it finds
// no call of that barrier's and names a barrier or such a call.
// team_world's barrier across nodes is the job's world barrier, which a
// data collective's barrier does not meet: there the members wait for each
// other until the watchdog ends the run, its report naming each member's
// call and the member it waits for.
//
// How they move data: a member pulls what it needs from the others'
// `source` (which must be symmetric) between two barriers: by loads from
// members on its node, by gets through the network engine from members on
// other nodes. A reduction splits the elements among the members: each
// reduces its share of every member's source and stores the result where
// it goes (every member's `dest` for allreduce, the root's for reduce, its
// own for reduce_scatter; puts to other nodes), so a member moves as many
// bytes as the vector holds whatever the team size. On one node, a share
// smaller than the rank's threads has a warp's lanes split an element's
// members among them, so a small vector over hundreds of members costs a
// few loads per lane rather than one thread's load per member. Across
// nodes a member gets the far members' shares many at a time (non-blocking
// gets, one wait for each group) and combines them in member order. The barrier is a dissemination
// barrier: log2(size) rounds of one store and one wait; team_world's
// across nodes is the job's world barrier.
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
      pull(m, root, r.symmetric_offset_of(source, bytes, call::broadcast), dest, bytes, call::broadcast);
    });
  }

  // Member i's `bytes` at `source` (symmetric) into dest + i * bytes, on
  // every member.
  GRMA_INLINE void fcollect(team t, void* dest, const void* source, std::size_t bytes) {
    Rank& r = self();
    run(t, call::fcollect, source, bytes, bytes, 0, [&](const detail::team_members& m, int) {
      const std::uint64_t from = r.symmetric_offset_of(source, bytes, call::fcollect);
      for (int i = 0; i < m.size; ++i)
        pull(m, i, from, static_cast<unsigned char*>(dest) + std::size_t(i) * bytes, bytes, call::fcollect);
    });
  }

  // Block j (of `bytes`) of member i's `source` (symmetric, size * bytes)
  // into block i of member j's `dest`. dest and source may not overlap.
  GRMA_INLINE void alltoall(team t, void* dest, const void* source, std::size_t bytes) {
    Rank& r = self();
    // Resolved under this call's name: a bad team is this call's error.
    run(t, call::alltoall, source, bytes * std::size_t(r.resolve_team(t, call::alltoall).size),
        bytes, 0, [&](const detail::team_members& m, int me) {
          const std::uint64_t from = r.symmetric_offset_of(source, bytes * std::size_t(m.size), call::alltoall) +
                                     std::uint64_t(me) * bytes;
          for (int i = 0; i < m.size; ++i)
            pull(m, i, from, static_cast<unsigned char*>(dest) + std::size_t(i) * bytes, bytes, call::alltoall);
        });
  }

  // Member i's `bytes` at `source` (symmetric; the members' sizes may
  // differ) into every member's dest, after those of members 0 .. i - 1
  // (OpenSHMEM's collect).
  GRMA_INLINE void collect(team t, void* dest, const void* source, std::size_t bytes) {
    Rank& r = self();
    const detail::team_members m = r.resolve_team(t, call::collect);
    const int me = r.team_member(m, call::collect);
    const std::uint64_t from = bytes != 0 ? r.symmetric_offset_of(source, bytes, call::collect) : 0;
    if (bytes != 0 && dest == nullptr)
      r.fail(errc::null_buffer, call::collect, std::int64_t(bytes));
    detail::team_workspace& mine = r.team_workspace(m.slot);
    // The previous collective's closing barrier: no member still reads the
    // words; the next barrier (in team_collective_begin) publishes them.
    if (r.leader()) {
      mine.contribution[0] = from;
      mine.contribution[1] = bytes;
    }
    r.team_collective_begin(m, me, call::collect, 0, 0);
    // The members' words a group at a time (gets from other nodes, all in
    // flight), then their parts: the rank-private heap holds one group's
    // words whatever the team's size.
    const std::uint64_t words = std::uint64_t(m.slot) * sizeof(detail::team_workspace) +
                                offsetof(detail::team_workspace, contribution);
    auto* parts = static_cast<std::uint64_t*>(
        r.alloc_for(2 * sizeof(std::uint64_t) * collect_group, call::collect));
    std::size_t at = 0;
    for (int first = 0; first < m.size; first += collect_group) {
      const int last = first + collect_group < m.size ? first + collect_group : m.size;
      for (int i = first; i < last; ++i)
        pull(m, i, words, parts + 2 * (i - first), 2 * sizeof(std::uint64_t), call::collect);
      wait_remote(call::collect);
      for (int i = first; i < last; ++i) {
        const std::size_t part = std::size_t(parts[2 * (i - first) + 1]);
        if (part != 0)
          pull(m, i, parts[2 * (i - first)], static_cast<unsigned char*>(dest) + at, part,
               call::collect);
        at += part;
      }
      wait_remote(call::collect);  // `parts` is read before the next group's words land in it
    }
    r.free(parts);
    r.team_barrier(m, call::collect);
  }

  // Members whose collect words a rank holds at once (16 bytes each).
  static constexpr int collect_group = 256;

  // Element k of block j (`count` elements `source_stride` apart) of
  // member i's `source` (symmetric) into element k of block i (`dest_stride`
  // apart) of member j's `dest` (OpenSHMEM's alltoalls). Strides are at
  // least 1; dest and source may not overlap.
  template <class T>
  GRMA_INLINE void alltoalls(team t, T* dest, const T* source, std::size_t dest_stride,
                             std::size_t source_stride, std::size_t count) {
    static_assert(std::is_trivially_copyable_v<T>, "alltoalls moves trivially copyable elements");
    Rank& r = self();
    if (dest_stride == 0 || source_stride == 0 || std::int64_t(dest_stride) < 0 ||
        std::int64_t(source_stride) < 0)
      r.fail(errc::invalid_stride, call::alltoalls, std::int64_t(dest_stride),
             std::int64_t(source_stride));
    const std::uint64_t members = std::uint64_t(r.resolve_team(t, call::alltoalls).size);
    // Every block's elements, the last one's (members * count - 1) * stride elements in.
    const std::uint64_t elements = detail::product_or_most(members, count);
    const std::uint64_t extent = detail::strided_extent(elements, source_stride, sizeof(T));
    run(
        t, call::alltoalls, source, extent, count, 0,
        [&](const detail::team_members& m, int me) {
          const std::uint64_t from = r.symmetric_offset_of(source, extent, call::alltoalls);
          for (int i = 0; i < m.size; ++i) {
            T* const to = dest + std::size_t(i) * count * dest_stride;
            const std::uint64_t block =
                from + std::uint64_t(me) * count * source_stride * sizeof(T);
            if (const auto* near = r.team_place(m, i, block).address) {
              // Volatile loads: past L1, which may hold an older copy of another SM's writes.
              const auto* in = reinterpret_cast<const T*>(near);
              for (std::size_t k = std::size_t(r.thread()); k < count;
                   k += std::size_t(r.threads()))
                to[k * dest_stride] = *static_cast<const volatile T*>(in + k * source_stride);
            } else if (dest_stride == 1 && source_stride == 1) {
              pull(m, i, block, to, count * sizeof(T), call::alltoalls);
            } else {
              for (std::size_t k = 0; k < count; ++k)
                pull(m, i, block + k * source_stride * sizeof(T), to + k * dest_stride, sizeof(T),
                     call::alltoalls);
            }
          }
          wait_remote(call::alltoalls);
        },
        detail::strides_more(dest_stride, source_stride));
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

  // Member i's `bytes` at `offset` of its slice into `to` (all threads): a
  // copy on this node (none where it is `to` itself), a get through the
  // engine from another, which returns at once: its data is in place after
  // the rank's next wait for remote completion (wait_remote, or the
  // collective's closing barrier).
  GRMA_INLINE void pull(const detail::team_members& m, int i, std::uint64_t offset, void* to,
                        std::size_t bytes, call where) {
    Rank& r = self();
    const auto at = r.team_place(m, i, offset);
    if (at.address != nullptr) {
      if (at.address != to) r.copy(to, at.address, bytes);
      return;
    }
    r.issue_symmetric(detail::remote_op::get, m.world_of(r.view(), i), offset, bytes, to, where,
                      false);
  }
  // `bytes` at `from` into member i's slice at `offset`: a copy, or a put
  // through the engine, which has read `from` after the rank's next wait
  // for remote completion.
  GRMA_INLINE void push(const detail::team_members& m, int i, std::uint64_t offset, const void* from,
                        std::size_t bytes, call where) {
    Rank& r = self();
    const auto at = r.team_place(m, i, offset);
    if (at.address != nullptr) return r.copy(at.address, from, bytes);
    r.issue_symmetric(detail::remote_op::put, m.world_of(r.view(), i), offset, bytes, from, where,
                      false);
  }
  // Every pull's data in place, every push's source read (all threads).
  GRMA_INLINE void wait_remote(call where) {
    Rank& r = self();
    if (r.leader()) r.await_remote_delivered(where);
    r.sync_threads();
  }

  // The frame of every data collective: checks, a barrier (every member's
  // source is ready), the member's own part `body(members, me)` (none for
  // an empty collective, whose pointers may be anything), a barrier (every
  // member is done reading the others' sources and writing theirs).
  template <class Body>
  GRMA_INLINE void run(team t, call where, const void* source, std::size_t source_bytes,
                       std::size_t size, int root, Body&& body, std::uint64_t more = 0) {
    Rank& r = self();
    const detail::team_members m = r.resolve_team(t, where);
    const int me = r.team_member(m, where);
    if (root < 0 || root >= m.size) {
      constexpr char what[] = "root";  // a member of the team
      r.fail(errc::argument_range, where, root, 0, m.size - 1, 0, 0, what, sizeof what - 1);
    }
    if (source_bytes != 0) r.symmetric_offset_of(source, source_bytes, where);
    r.team_collective_begin(m, me, where, size, root, more);
    if (size != 0) body(m, me);
    r.team_barrier(m, where);
  }

  template <class T>
  GRMA_INLINE void reduction(call where, team t, T* dest, const T* source, std::size_t count,
                             reduce_op op, int root) {
    static_assert((std::is_integral_v<T> && !std::is_same_v<T, bool>) ||
                      (std::is_floating_point_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)),
                  "reductions take integers of 1 to 8 bytes, float or double");
    Rank& r = self();
    if (std::uint32_t(op) > std::uint32_t(reduce_op::bit_xor) ||
        (!std::is_integral_v<T> && std::uint32_t(op) >= std::uint32_t(reduce_op::bit_and)))
      r.fail(errc::invalid_reduce_op, where, std::int64_t(op), std::is_integral_v<T> ? 0 : 1);
    const int members = r.resolve_team(t, where).size;
    const bool scatter = where == call::reduce_scatter;
    const std::size_t total = scatter ? count * std::size_t(members) : count;
    // Where the others store results, dest must be symmetric.
    const std::uint64_t to = !scatter && count != 0 ? r.symmetric_offset_of(dest, count * sizeof(T), where) : 0;
    run(
        t, where, source, total * sizeof(T), count, root,
        [&](const detail::team_members& m, int me) {
          // My share of the elements: a block for reduce_scatter, else an even split.
          const std::size_t share =
              scatter ? count : (count + std::size_t(m.size) - 1) / std::size_t(m.size);
          const std::size_t first = std::size_t(me) * share;
          const std::size_t last = first + share < total ? first + share : total;
          const std::size_t elements = last > first ? last - first : 0;
          // Every thread of the rank leaves here alike (no lane waits in a shuffle).
          if (elements == 0) return;
          const std::uint64_t from = r.symmetric_offset_of(source, total * sizeof(T), where);
          if (r.team_spans_nodes(m))
            return reduce_across_nodes(where, m, dest, to, from, first, elements, op, root);
          // A group of `lanes` threads per element splits the members among its
          // lanes (lane j reads members j, j + lanes, ...) and combines their
          // values across the lanes. One lane per element where the share keeps
          // every thread busy; where it is small (a few elements over hundreds
          // of members) the member loads of an element, each a round trip to
          // memory, would otherwise be one thread's, one after the other.
          const int lanes = lanes_per_element(elements, r.threads(), m.size);
          const std::size_t groups = std::size_t(r.threads() / lanes);
          const int lane = r.thread() % lanes;
          // Every lane of a warp runs the same number of rounds: they meet in
          // combine_lanes.
          const std::size_t rounds = (elements + groups - 1) / groups;
          for (std::size_t k = 0; k < rounds; ++k) {
            const std::size_t e = first + k * groups + std::size_t(r.thread() / lanes);
            const bool mine = e < last;
            T value{};
            if (mine) {
              auto at = [&](int i) {
                return *reinterpret_cast<const T*>(r.team_address(m, i, from) + e * sizeof(T));
              };
              value = at(lane);
              int i = lane + lanes;
              // Four members' loads in flight at a time, combined in member order.
              for (; i + 3 * lanes < m.size; i += 4 * lanes) {
                const T a = at(i), b = at(i + lanes), c = at(i + 2 * lanes), d = at(i + 3 * lanes);
                value = combine(op, combine(op, combine(op, combine(op, value, a), b), c), d);
              }
              for (; i < m.size; i += lanes) value = combine(op, value, at(i));
            }
            value =
                Rank::P::combine_lanes(value, lanes, [op](T a, T b) { return combine(op, a, b); });
            if (!mine) continue;
            if (scatter) {
              if (lane == 0) dest[e - first] = value;
            } else if (where == call::reduce) {
              if (lane == 0)
                *reinterpret_cast<T*>(r.team_address(m, root, to) + e * sizeof(T)) = value;
            } else {
              for (int i = lane; i < m.size; i += lanes)
                *reinterpret_cast<T*>(r.team_address(m, i, to) + e * sizeof(T)) = value;
            }
          }
        },
        detail::reduction_kind<T>(std::uint32_t(op)));
  }

  // A reduction's share [first, first + elements) over a team with members
  // on other nodes, a chunk at a time: the members' values combined in
  // member order in rank-private memory, those of members on other nodes
  // fetched a group at a time (a get each, all in flight, one wait), then
  // stored (a put to each member on another node, one wait before the next
  // chunk). A chunk is at least `across_nodes_least` elements, so a long
  // vector over a large team is not fetched an element at a time, and
  // `arrived` holds at most `across_nodes_bytes` (a GPU rank's own heap
  // may be a few tens of KB).
  static constexpr std::size_t across_nodes_bytes = 16384;
  static constexpr std::size_t across_nodes_least = 256;
  template <class T>
  GRMA_INLINE void reduce_across_nodes(call where, const detail::team_members& m, T* dest, std::uint64_t to,
                                       std::uint64_t from, std::size_t first, std::size_t elements,
                                       reduce_op op, int root) {
    Rank& r = self();
    const std::size_t room = across_nodes_bytes / sizeof(T);  // elements `arrived` holds
    const std::size_t spread = room / std::size_t(m.size);
    const std::size_t least = elements < across_nodes_least ? elements : across_nodes_least;
    const std::size_t chunk = elements < spread ? elements : spread > least ? spread : least;
    const std::size_t fit = room / chunk, others = std::size_t(m.size - 1);
    const int group = int(fit < others ? fit : others);  // far members fetched per wait
    T* const result =
        static_cast<T*>(r.alloc_for((1 + std::size_t(group)) * chunk * sizeof(T), where));
    T* const arrived = result + chunk;  // the group's values, chunk elements each
    for (std::size_t done = 0; done < elements; done += chunk) {
      const std::size_t n = elements - done < chunk ? elements - done : chunk;
      const std::uint64_t at = from + (first + done) * sizeof(T);  // the chunk in every member's slice
      auto far = [&](int i) { return r.team_place(m, i, at).address == nullptr; };
      int fetched_to = 0, slot = 0;  // members before fetched_to: fetched or near
      for (int i = 0; i < m.size; ++i) {
        const T* values = reinterpret_cast<const T*>(r.team_place(m, i, at).address);
        if (values == nullptr) {
          if (i >= fetched_to) {  // the next group of far members, from i on
            r.sync_threads();     // every thread is done with the last group's values
            int k = 0, j = i;
            for (; j < m.size && k < group; ++j)
              if (far(j)) pull(m, j, at, arrived + std::size_t(k++) * chunk, n * sizeof(T), where);
            fetched_to = j;
            slot = 0;
            wait_remote(where);
          }
          values = arrived + std::size_t(slot++) * chunk;
        }
        for (std::size_t e = std::size_t(r.thread()); e < n; e += std::size_t(r.threads()))
          result[e] = i == 0 ? values[e] : combine(op, result[e], values[e]);
      }
      r.sync_threads();  // `result` is whole before anyone stores it
      const std::uint64_t out = to + (first + done) * sizeof(T);
      if (where == call::reduce_scatter)
        r.copy(dest + done, result, n * sizeof(T));
      else if (where == call::reduce)
        push(m, root, out, result, n * sizeof(T), where);
      else
        for (int i = 0; i < m.size; ++i) push(m, i, out, result, n * sizeof(T), where);
      wait_remote(where);  // every push has read `result` before the next chunk
    }
    r.free(result);
  }

  // The lanes per element of a reduction's share: the threads left over
  // per element, as a power of two, at most a lane group (a warp) and the
  // member count (every lane reads at least one member).
  GRMA_INLINE static int lanes_per_element(std::size_t elements, int threads, int members) {
    int lanes = 1;
    const int limit = Rank::P::lane_group_limit();
    while (lanes * 2 <= limit && lanes * 2 <= members &&
           std::size_t(threads / (lanes * 2)) >= elements)
      lanes *= 2;
    return lanes;
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
