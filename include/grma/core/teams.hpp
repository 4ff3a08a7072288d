// Teams (OpenSHMEM 1.5's): team_world, team_device, team_node (= team_shared,
// the ranks whose memory ptr reaches) and teams split from them. A team's
// members are numbered 0 .. size - 1; team_rank, team_size and
// team_translate may be called by any thread alone, the splits and
// team_destroy by all threads of every member of the parent (or team)
// together. A split is collective over its parent: every parent member
// calls it with the same arguments, and the members of the new team get
// it, the others team_none. Teams split from team_world may span nodes.
// A node holds at most 29 split slots at once (a 2D split takes two): a
// team's slot is one that is free on every node of its members.
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
  // My member number in `t`, or -1 (also for team_none, which a split
  // gives the ranks outside it, as OpenSHMEM's queries of an invalid team).
  GRMA_INLINE int team_rank(team t) const {
    if (t == team_none) return -1;
    const Rank& r = self();
    const detail::team_members m = r.resolve_team(t, call::team_query);
    return m.member_of(r.view(), r.world_rank());
  }
  // The number of members of `t`, or -1 for team_none.
  GRMA_INLINE int team_size(team t) const {
    return t == team_none ? -1 : self().resolve_team(t, call::team_query).size;
  }

  // Member `rank` of `from` as a member of `to` (-1 where it is not one, or
  // either is team_none).
  GRMA_INLINE int team_translate(team from, int rank, team to) const {
    if (from == team_none || to == team_none) return -1;
    const Rank& r = self();
    const detail::team_members a = r.resolve_team(from, call::team_query);
    if (rank < 0 || rank >= a.size) return -1;
    return r.resolve_team(to, call::team_query).member_of(r.view(), a.world_of(r.view(), rank));
  }

  // Members start, start + stride, ... (size of them) of `parent`.
  // A team of one member takes any stride (OpenSHMEM's); a larger one a
  // stride of at least 1.
  GRMA_INLINE team team_split_strided(team parent, int start, int stride, int size) {
    Rank& r = self();
    const detail::team_members p = r.resolve_team(parent, call::team_split_strided);
    check_split(p, start, size == 1 ? 1 : stride, size, call::team_split_strided);
    // Every member makes the same split (size, start and stride checked,
    // as given) before a node's table is locked for it.
    r.team_collective_begin(p, r.team_member(p, call::team_split_strided), call::team_split_strided,
                            std::size_t(size), start, std::uint64_t(stride));
    if (size == 1) stride = 1;
    detail::team_members child{0, p.base, p.start + start * p.stride, stride * p.stride, size};
    const std::uint64_t taken = take_slot(p, child, r.team_members_here(child), call::team_split_strided);
    child.slot = std::uint32_t(taken >> 32);
    r.team_barrier(p, call::team_split_strided);  // every member has cleared its workspace
    return made(child, std::uint32_t(taken));
  }

  // `parent` as a grid of rows of `xrange` members (the last row may be
  // short): `xteam` is my row, `yteam` my column.
  GRMA_INLINE void team_split_2d(team parent, int xrange, team& xteam, team& yteam) {
    Rank& r = self();
    const detail::team_members p = r.resolve_team(parent, call::team_split_2d);
    if (xrange < 1)
      r.fail(errc::team_split_invalid, call::team_split_2d, 0, 1, xrange, p.size);
    const int x = xrange < p.size ? xrange : p.size;
    const int me = r.team_member(p, call::team_split_2d);
    r.team_collective_begin(p, me, call::team_split_2d, std::size_t(xrange), 0);
    const int row = me / x, column = me % x;
    const int row_size = p.size - row * x < x ? p.size - row * x : x;
    const int column_size = (p.size - column + x - 1) / x;
    // Two slots: every row shares one, every column the other; each parent
    // member is in one of each.
    detail::team_members xs{0, p.base, p.start + row * x * p.stride, p.stride, row_size};
    detail::team_members ys{0, p.base, p.start + column * p.stride, x * p.stride, column_size};
    const std::uint64_t here = r.team_members_here(p);
    const std::uint64_t rows = take_slot(p, xs, here, call::team_split_2d);
    const std::uint64_t columns = take_slot(p, ys, here, call::team_split_2d);
    xs.slot = std::uint32_t(rows >> 32);
    ys.slot = std::uint32_t(columns >> 32);
    r.team_barrier(p, call::team_split_2d);  // every member has cleared its workspaces
    xteam = made(xs, std::uint32_t(rows));
    yteam = made(ys, std::uint32_t(columns));
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
    const int me = r.team_member(m, call::team_destroy);
    // Every thread has checked the handle (resolve_team reads the slot's
    // generation) before the leader gives its count back: once all members
    // have, the last one frees the slot, and a lagging thread of any member
    // would then find its team gone.
    r.sync_threads();
    if (r.thread() == 0) {
      detail::team_slots& table = *r.view().teams;
      if (r.team_first_here(m, me)) {  // the node's blocks of the team
        r.lock_team_table(call::team_destroy);
        const std::uint32_t blocks = detail::symmetric_blocks_of(r.view().symmetric, r.symmetric_owner(m, t.generation));
        r.unlock_team_table();
        if (blocks != 0) r.fail(errc::team_holds_blocks, call::team_destroy, t.slot, blocks);
      }
      // The node's last member of the slot's teams frees it. Acquire and
      // release: its free comes after every member's use of the table's
      // slot. The slot's workspaces are the members' own, which a next team
      // of the slot clears only once they are in its split, after this
      // barrier; and the barrier means the slot is free on every node
      // before any member goes on (a handle kept is then refused).
      const std::uint64_t before = Rank::at_scope(r.wide(), [&](auto scope) {
        return detail::fetch_add_acq_rel<scope.value>(table.members[t.slot], ~std::uint64_t{0});
      });
      if (before == 1) {
        r.lock_team_table(call::team_destroy);
        detail::team_slot_free(table, t.slot);
        r.unlock_team_table();
      }
    }
    r.team_barrier(m, call::team_destroy);
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

  // The slot of the teams of one kind that a split of `p` makes (`child`
  // is this member's; `here` the node's parent members in them), agreed by
  // the parent's members (team_agree): the first parent member on each
  // node with members of them finds the lowest slot free there, and at the
  // end sets its generation (the largest any node proposed: a handle's one
  // generation is live on every node) and the node's members. The slot's
  // members clear their own workspace of it; the split's last barrier keeps
  // every member from using the new team before all have. Returns (slot <<
  // 32 | generation).
  GRMA_INLINE std::uint64_t take_slot(const detail::team_members& p, const detail::team_members& child,
                                      std::uint64_t here, call where) {
    Rank& r = self();
    const int me = r.team_member(p, where);
    detail::team_slots& table = *r.view().teams;
    const std::uint64_t agreed = r.team_agree(
        p, here != 0 && r.team_first_here(p, me), 32, where,
        [&](std::uint64_t from) {
          const std::uint64_t found = detail::team_slot_find(table, std::uint32_t(from));
          return found == 0 ? detail::team_value_none : found;
        },
        [&](std::uint64_t slot) {
          detail::team_slot_settle(table, std::uint32_t(slot >> 32), std::uint32_t(slot), here);
        });
    if (agreed == detail::team_value_none)
      r.fail(errc::team_table_full, where, detail::max_teams - detail::predefined_teams);
    // A new slot starts from zero in every member's slice.
    if (child.member_of(r.view(), r.world_rank()) >= 0) {
      auto* words = reinterpret_cast<std::uint64_t*>(&r.team_workspace(std::uint32_t(agreed >> 32)));
      for (std::size_t i = std::size_t(r.thread()); i < sizeof(detail::team_workspace) / 8;
           i += std::size_t(r.threads()))
        words[i] = 0;
    }
    return agreed;
  }

  // The handle of `m` for this rank: team_none where it is not a member.
  GRMA_INLINE team made(const detail::team_members& m, std::uint32_t generation) {
    const Rank& r = self();
    if (m.member_of(r.view(), r.world_rank()) < 0) return team_none;
    return team{m.slot, generation, m.base, m.start, m.stride, m.size};
  }
};

}  // namespace grma::core
