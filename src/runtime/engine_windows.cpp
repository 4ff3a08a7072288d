#include "engine_windows.hpp"

namespace grma::detail {

void engine_windows::read(const window_table& t, std::uint32_t slot, std::int32_t target,
                          window_slot& s, window_entry& entry) {
  if (kept_.size() < t.capacity) kept_.resize(t.capacity);
  kept_window& k = kept_[slot];
  while (true) {
    // Acquire: pairs with window_slot_take's release; a live word means
    // the slot and entries copied after it are that window's (or a later
    // one's, should it be freed meanwhile, as with any check).
    const std::uint64_t state = load_acquire<scope::system>(t.states[slot]);
    if ((state & 1u) == 0) {  // no live window: the word tells all that is asked
      s = window_slot_of_state(state);
      return;
    }
    if (k.state == state) break;
    window_slot copy{};
    memory_.read_window_slot(t, slot, copy);
    if (window_state_word(copy) == state) {  // else it changed meanwhile: look again
      k = kept_window{state, copy, {}};
      break;
    }
  }
  s = k.slot;
  if (target < 0 || std::uint32_t(target) >= s.comm_size) return;
  auto it = k.entries.find(target);
  if (it == k.entries.end()) {
    window_entry e{};
    memory_.read_window_entry(t, slot, target, e);
    it = k.entries.emplace(target, e).first;
  }
  entry = it->second;
}

}  // namespace grma::detail
