// Teams' shared state. A team is a handle (grma::team) that names its
// members arithmetically; what its collectives need lives in a workspace
// slot: the same slot of every member's symmetric slice (its first
// symmetric_reserved_bytes), written only by the team's members. Slots
// 0-2 are the predefined teams' (world, device, node): their members never
// meet in another team of the slot. A split takes a slot that is free on
// every node of its members (a 2D split gives all rows one slot: no rank is
// in two rows); each node's table counts its ranks in the slot's teams and
// keeps the generation that tells a destroyed team's handle from a live one.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/symmetric_table.hpp"

namespace grma::detail {

inline constexpr std::uint32_t max_teams = 32;
inline constexpr std::uint32_t predefined_teams = 3;
inline constexpr int team_rounds = 29;  // dissemination barrier rounds: 2^29 members

// A barrier's round word carries the barrier's epoch (its low 24 bits, above
// bit 40) and a value below 2^40: the largest value the sender has seen in
// this barrier (team_exchange). team_value_none is the largest value, which
// stands for "none" in the agreements made over it.
inline constexpr int team_value_bits = 40;
inline constexpr std::uint64_t team_value_none = (std::uint64_t{1} << team_value_bits) - 1;
GRMA_INLINE std::uint64_t team_round_word(std::uint64_t epoch, std::uint64_t value) {
  return ((epoch & 0xffffffu) << team_value_bits) | (value < team_value_none ? value : team_value_none);
}
static_assert((std::uint64_t(32) << 32 | 0xffffffffu) < (std::uint64_t{1} << team_value_bits) - 1,
              "a split's proposal (slot << 32 | generation) fits a round word's value");

// A collective's arguments beside its size and root, for the check that
// every member makes the same collective call (rank.hpp,
// team_collective_begin): at most 56 bits, 0 for none. A strided split's
// is its stride.
//
// A reduction's operation and element type in 8 bits: 1, the element's
// bytes as log2 (2 bits), whether it is floating point, whether signed, the
// operation (3 bits).
template <class T>
GRMA_HOST_DEVICE constexpr std::uint32_t reduction_kind(std::uint32_t op) {
  const std::uint32_t log2 = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
  return 0x80u | log2 << 5 | std::uint32_t(T(0.5) != T(0)) << 4 | std::uint32_t(T(-1) < T(0)) << 3 |
         (op & 7u);
}
// alltoalls' two strides (at least 1), 28 bits each: strides that differ
// only above that pass the check, which is for mistakes, not a proof.
GRMA_HOST_DEVICE constexpr std::uint64_t strides_more(std::uint64_t dest, std::uint64_t source) {
  return (dest & 0xfffffffu) | (source & 0xfffffffu) << 28;
}

// One team's words in one member's slice (512 bytes).
struct team_workspace {
  // rounds[epoch % 2][k]: the round word of barrier `epoch`, round k, stored
  // by the member 2^k places before this one (in the team). Two sets: that
  // member may be one barrier ahead of this one, never two (it cannot leave
  // the next barrier before this member has entered it).
  std::uint64_t rounds[2][team_rounds];
  std::uint64_t epoch;      // barriers this member has entered (its own word)
  std::uint64_t signature;  // the member before's current collective: call and arguments, to check
  std::uint64_t signature_more;  // and the arguments it has no room for (team_collective_begin)
  // This member's part of the current collect: its source's offset in the
  // slice and its bytes (its own words, which the others read).
  std::uint64_t contribution[2];
  std::uint64_t unused[64 - 2 * team_rounds - 5];
};
static_assert(sizeof(team_workspace) == 512 && sizeof(team_workspace) * max_teams == symmetric_reserved_bytes,
              "the teams' workspaces fill the reserved start of a slice");

// The node's table, in its first device's control block. Changes of a
// slot's generation hold `lock`; a member leaving a team counts down
// `members` without it.
struct team_slots {
  std::uint32_t lock;
  std::uint32_t created;                // the largest generation given so far
  std::uint32_t generation[max_teams];  // of the slot's teams; 0 = free
  std::uint64_t members[max_teams];     // this node's ranks in the slot's live teams
};

// The lowest free slot at or after `from`, for a split whose nodes agree
// on one (team_agree, rank.hpp), changing nothing: (slot << 32 | the
// generation this node proposes, above every one it gave), or 0 where every
// slot from `from` on is taken. Hold the lock.
// (A node's generations wrap after 2^32 splits, to 0, which means free:
// far beyond any job.)
GRMA_INLINE std::uint64_t team_slot_find(const team_slots& t, std::uint32_t from) {
  for (std::uint32_t s = from < predefined_teams ? predefined_teams : from; s < max_teams; ++s)
    if (t.generation[s] == 0) return (std::uint64_t(s) << 32) | (t.created + 1);
  return 0;
}

// The agreed slot's teams are live: their generation (the largest any node
// proposed) and this node's members of them. Hold the lock.
// Generations are stored with relaxed atomics: ranks check a handle against
// them without the lock.
GRMA_INLINE void team_slot_settle(team_slots& t, std::uint32_t slot, std::uint32_t generation,
                                  std::uint64_t members) {
  if (generation > t.created) t.created = generation;
  t.members[slot] = members;
  store_relaxed<scope::system>(t.generation[slot], generation);
}

// Frees the slot (its teams' last member on the node left). Hold the lock.
GRMA_INLINE void team_slot_free(team_slots& t, std::uint32_t slot) {
  store_relaxed<scope::system>(t.generation[slot], 0u);
}

}  // namespace grma::detail
