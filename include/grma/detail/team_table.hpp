// Teams' shared state. A team is a handle (grma::team) that names its
// members arithmetically; what its collectives need lives in a workspace
// slot: the same slot of every member's symmetric slice (its first
// symmetric_reserved_bytes), written only by the team's members. Slots
// 0-2 are the predefined teams' (world, device, node): their members never
// meet in another team of the slot. A split takes a free slot from the
// node's table, which counts the teams using it (a 2D split gives all rows
// one slot: no rank is in two rows) and the generation that tells a
// destroyed team's handle from a live one.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/detail/atomic.hpp"
#include "grma/detail/symmetric_table.hpp"

namespace grma::detail {

inline constexpr std::uint32_t max_teams = 32;
inline constexpr std::uint32_t predefined_teams = 3;
inline constexpr int team_rounds = 29;  // dissemination barrier rounds: 2^29 members

// One team's words in one member's slice (256 bytes).
struct team_workspace {
  // Round k of the barrier: how many times the member 2^k places before
  // this one (in the team) has signalled here; only grows.
  std::uint64_t rounds[team_rounds];
  std::uint64_t epoch;      // barriers this member has entered (its own word)
  std::uint64_t signature;  // the member before's current collective: call and arguments, to check
  std::uint64_t result;     // member 0's: a split's slots or a team block's offset, for the others
};
static_assert(sizeof(team_workspace) * max_teams == symmetric_reserved_bytes,
              "the teams' workspaces fill the reserved start of a slice");

// The node's table, in its first device's control block. Changes hold `lock`.
struct team_slots {
  std::uint32_t lock;
  std::uint32_t created;  // teams created so far: their generations
  std::uint32_t generation[max_teams];  // of the slot's teams; 0 = free
  std::uint32_t teams[max_teams];       // live teams using the slot
};

// A free slot for `teams` teams, marked taken with a new generation:
// (generation << 32) | slot, or 0 when every slot is taken. Hold the lock.
// Generations are stored with relaxed atomics: ranks check a handle against
// them without the lock.
GRMA_INLINE std::uint64_t team_slot_take(team_slots& t, std::uint32_t teams) {
  for (std::uint32_t s = predefined_teams; s < max_teams; ++s) {
    if (t.generation[s] != 0) continue;
    const std::uint32_t generation = ++t.created;
    store_relaxed<scope::system>(t.generation[s], generation);
    t.teams[s] = teams;
    return (std::uint64_t(generation) << 32) | s;
  }
  return 0;
}

// Frees the slot, or sets its generation (a 2D split's second slot).
GRMA_INLINE void team_slot_set(team_slots& t, std::uint32_t slot, std::uint32_t generation) {
  store_relaxed<scope::system>(t.generation[slot], generation);
}

// One team of the slot is destroyed; the last frees it. Hold the lock.
GRMA_INLINE void team_slot_drop(team_slots& t, std::uint32_t slot) {
  if (--t.teams[slot] == 0) team_slot_set(t, slot, 0);
}

}  // namespace grma::detail
