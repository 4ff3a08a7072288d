// The engine's copies of the node's window table, which every request to a
// window is checked against: a slot's copy is kept while the slot's state
// word (window_table::states) stays the word it was copied under, and a
// target's entry once it was asked for. Every window a slot takes has a
// word of its own, so a request checks against a load of one host word and
// copies only what changed (the table is device memory on GPUs; on the CPU
// backend each copy takes the table's lock).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grma/detail/device_state.hpp"
#include "engine_memory.hpp"

namespace grma::detail {

class engine_windows {
 public:
  explicit engine_windows(engine_memory& memory) : memory_(memory) {}

  // Slot `slot` of `t` and, when it is a live window with a rank `target`,
  // that rank's entry (else `entry` is left). Consistent: an entry is never
  // older than the slot it was read with. Of a slot without a live window,
  // only the fields its state word holds are filled.
  void read(const window_table& t, std::uint32_t slot, std::int32_t target, window_slot& s,
            window_entry& entry);

 private:
  struct kept_window {
    std::uint64_t state = 0;
    window_slot slot{};
    std::unordered_map<std::int32_t, window_entry> entries;  // by target, as asked for
  };

  engine_memory& memory_;
  std::vector<kept_window> kept_;  // by slot
};

}  // namespace grma::detail
