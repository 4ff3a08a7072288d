// Teams (OpenSHMEM 1.5's): team_world, team_device, team_node (= team_shared,
// the ranks whose memory ptr reaches) and teams split from them. A team's
// members are numbered 0 .. size - 1; team_rank, team_size and
// team_translate may be called by any thread alone, the splits and
// team_destroy by all threads of every member of the parent (or team)
// together. A split is collective over its parent: every parent member
// calls it with the same arguments, and the members of the new team get
// it, the others team_none. Splits stay on one node until the network
// engine carries the core's operations (a split whose team would span
// nodes is an error that says so). A node holds at most 29 split slots at
// once (a 2D split takes two).
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/device_state.hpp"
#include "grma/detail/team_table.hpp"

namespace grma::detail {

// A team resolved for this rank: members are base ranks start + i * stride,
// i < size.
struct team_members {
  std::uint32_t slot;
  std::uint32_t base;  // 0 world, 1 this device, 2 this node
  int start, stride, size;

  // Member i's world rank.
  GRMA_INLINE int world_of(const device_view& v, int i) const {
    const int k = start + i * stride;
    if (base == 0) return k;
    if (base == 1) return v.first_rank + k;
    // The (k / ranks)-th device of the node, in device order.
    int left = k / v.ranks;
    for (int d = 0; d < max_devices; ++d)
      if (v.on_node(d) && left-- == 0) return d * v.ranks + k % v.ranks;
    return -1;
  }

  // The member number of world rank w, or -1.
  GRMA_INLINE int member_of(const device_view& v, int w) const {
    if (w < 0 || w >= v.world_size) return -1;
    int k = w;
    if (base == 1) {
      k = w - v.first_rank;
      if (k < 0 || k >= v.ranks) return -1;
    } else if (base == 2) {
      const int d = v.device_of(w);
      if (!v.on_node(d)) return -1;
      int before = 0;
      for (int e = 0; e < d; ++e) before += v.on_node(e) ? 1 : 0;
      k = before * v.ranks + (w - d * v.ranks);
    }
    const int from_start = k - start;
    if (from_start < 0 || from_start % stride != 0 || from_start / stride >= size) return -1;
    return from_start / stride;
  }
};

// Ranks of a team's base.
GRMA_INLINE int team_base_size(const device_view& v, std::uint32_t base) {
  if (base == 0) return v.world_size;
  if (base == 1) return v.ranks;
  int devices = 0;
  for (int d = 0; d < max_devices; ++d) devices += v.on_node(d) ? 1 : 0;
  return devices * v.ranks;
}

}  // namespace grma::detail

namespace grma::core {

template <class Rank>
class team_calls {
 public:
  // My member number in `t`, or -1.
  GRMA_INLINE int team_rank(team t) const {
    const Rank& r = self();
    const detail::team_members m = r.resolve_team(t, call::team_query);
    return m.member_of(r.view(), r.world_rank());
  }
  GRMA_INLINE int team_size(team t) const { return self().resolve_team(t, call::team_query).size; }

  // Member `rank` of `from` as a member of `to` (-1 where it is not one).
  GRMA_INLINE int team_translate(team from, int rank, team to) const {
    const Rank& r = self();
    const detail::team_members a = r.resolve_team(from, call::team_query);
    if (rank < 0 || rank >= a.size) return -1;
    return r.resolve_team(to, call::team_query).member_of(r.view(), a.world_of(r.view(), rank));
  }

  // Members start, start + stride, ... (size of them) of `parent`.
  GRMA_INLINE team team_split_strided(team parent, int start, int stride, int size) {
    Rank& r = self();
    const detail::team_members p = r.resolve_team(parent, call::team_split_strided);
    check_split(p, start, stride, size, call::team_split_strided);
    const std::uint64_t taken = take_slots(p, 1, 1, call::team_split_strided);
    const detail::team_members child{std::uint32_t(taken), p.base, p.start + start * p.stride,
                                     stride * p.stride, size};
    return made(child, std::uint32_t(taken >> 32));
  }

  // `parent` as a grid of rows of `xrange` members (the last row may be
  // short): `xteam` is my row, `yteam` my column.
  GRMA_INLINE void team_split_2d(team parent, int xrange, team& xteam, team& yteam) {
    Rank& r = self();
    const detail::team_members p = r.resolve_team(parent, call::team_split_2d);
    if (xrange < 1)
      r.fail(errc::team_split_invalid, call::team_split_2d, 0, 1, xrange, p.size);
    const int x = xrange < p.size ? xrange : p.size;
    const int rows = (p.size + x - 1) / x;
    // Two slots: every row shares one, every column the other.
    const std::uint64_t slots = take_slots(p, rows, x, call::team_split_2d);
    const int me = p.member_of(r.view(), r.world_rank());
    const int row = me / x, column = me % x;
    const int row_size = p.size - row * x < x ? p.size - row * x : x;
    const int column_size = (p.size - column + x - 1) / x;
    const detail::team_members xs{std::uint32_t(slots) & 0xffffu, p.base,
                                  p.start + row * x * p.stride, p.stride, row_size};
    const detail::team_members ys{(std::uint32_t(slots) >> 16) & 0xffffu, p.base,
                                  p.start + column * p.stride, x * p.stride, column_size};
    xteam = made(xs, std::uint32_t(slots >> 32));
    yteam = made(ys, std::uint32_t(slots >> 32));
  }

  // Collective over the team: it ends, and the handle becomes team_none.
  // The predefined teams are never destroyed, and team_none (a split's
  // result on a non-member) is no team: both are no-ops. A team that still
  // holds symmetric blocks (alloc_symmetric over it) is an error: nothing
  // could free them after.
  GRMA_INLINE void team_destroy(team& t) {
    Rank& r = self();
    if (t == team_none) return;
    const detail::team_members m = r.resolve_team(t, call::team_destroy);
    if (t.slot < detail::predefined_teams) return;
    if (m.member_of(r.view(), r.world_rank()) < 0)
      r.fail(errc::team_not_member, call::team_destroy, t.slot, m.size);
    r.team_barrier(m, call::team_destroy);
    if (m.member_of(r.view(), r.world_rank()) == 0 && r.thread() == 0) {
      detail::team_slots& table = *r.view().teams;
      r.lock_team_table(call::team_destroy);
      const std::uint32_t blocks = detail::symmetric_blocks_of(r.view().symmetric, r.symmetric_owner(m, t.generation));
      if (blocks == 0) detail::team_slot_drop(table, t.slot);
      r.unlock_team_table();
      if (blocks != 0) r.fail(errc::team_holds_blocks, call::team_destroy, t.slot, blocks);
    }
    r.sync_threads();
    t = team_none;
  }

 private:
  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }
  GRMA_INLINE const Rank& self() const { return static_cast<const Rank&>(*this); }

  GRMA_INLINE void check_split(const detail::team_members& p, int start, int stride, int size,
                               call where) {
    if (start < 0 || stride < 1 || size < 1 || start >= p.size ||
        (p.size - 1 - start) / stride < size - 1)
      self().fail(errc::team_split_invalid, where, start, stride, size, p.size);
  }

  // The new teams' slots, agreed by every parent member: member 0 takes a
  // slot for `teams` teams (and, for a 2D split, a second for `columns`
  // teams) from the node's table and leaves (generation << 32 | second
  // << 16 | first) in its workspace's `result`; the others read it after
  // the parent's barrier. Each member clears its own workspace of the new
  // slots, and a last barrier keeps every member from using the new teams
  // before all have. A 1D split returns (generation << 32 | slot).
  GRMA_INLINE std::uint64_t take_slots(const detail::team_members& p, int teams, int columns,
                                       call where) {
    Rank& r = self();
    const int me = p.member_of(r.view(), r.world_rank());
    if (me < 0) r.fail(errc::team_not_member, where, p.slot, p.size);
    if (r.spans_nodes())
      for (int i = 0; i < p.size; ++i) {
        const int w = p.world_of(r.view(), i);
        if (!r.view().on_node(r.view().device_of(w))) r.fail(errc::not_across_nodes, where, w);
      }
    const bool two = where == call::team_split_2d;
    detail::team_workspace& mine = r.team_workspace_of(r.world_rank(), p.slot);
    r.team_barrier(p, where);  // member 0's result of an earlier split has been read
    if (me == 0 && r.thread() == 0) {
      detail::team_slots& table = *r.view().teams;
      r.lock_team_table(where);
      const std::uint64_t first = detail::team_slot_take(table, std::uint32_t(teams));
      std::uint64_t second = 0;
      if (two && first != 0) {
        second = detail::team_slot_take(table, std::uint32_t(columns));
        if (second == 0)
          detail::team_slot_set(table, std::uint32_t(first), 0);  // free again
        else  // one generation for both: the handles carry one
          detail::team_slot_set(table, std::uint32_t(second), std::uint32_t(first >> 32));
      }
      r.unlock_team_table();
      mine.result = (first == 0 || (two && second == 0))
                        ? 0
                        : (first & ~std::uint64_t{0xffffffffu}) | ((second & 0xffffu) << 16) |
                              (first & 0xffffu);
    }
    r.team_barrier(p, where);
    const detail::team_workspace& leader = r.team_workspace_of(p.world_of(r.view(), 0), p.slot);
    const std::uint64_t result = Rank::at_scope(r.wide(), [&](auto scope) {
      return detail::load_relaxed<scope.value>(const_cast<std::uint64_t&>(leader.result));
    });
    if (result == 0) r.fail(errc::team_table_full, where, detail::max_teams - detail::predefined_teams);
    // A new slot starts from zero in every member's slice.
    const std::uint32_t slots[2] = {std::uint32_t(result & 0xffffu), std::uint32_t(result >> 16) & 0xffffu};
    for (int k = 0; k < (two ? 2 : 1); ++k) {
      auto* words = reinterpret_cast<std::uint64_t*>(&r.team_workspace_of(r.world_rank(), slots[k]));
      for (std::size_t i = std::size_t(r.thread()); i < sizeof(detail::team_workspace) / 8;
           i += std::size_t(r.threads()))
        words[i] = 0;
    }
    r.team_barrier(p, where);
    return two ? result : (result & ~std::uint64_t{0xffffffffu}) | (result & 0xffffu);
  }

  // The handle of `m` for this rank: team_none where it is not a member.
  GRMA_INLINE team made(const detail::team_members& m, std::uint32_t generation) {
    const Rank& r = self();
    if (m.member_of(r.view(), r.world_rank()) < 0) return team_none;
    return team{m.slot, generation, m.base, m.start, m.stride, m.size};
  }
};

}  // namespace grma::core
