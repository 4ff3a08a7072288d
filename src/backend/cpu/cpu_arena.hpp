// A device's shared state in this process's memory, for the CPU backend.
#pragma once

#include <memory>

#include "../../runtime/arena_layout.hpp"

namespace grma::detail {

// Initializes a device's zeroed blocks at these addresses and returns its view.
device_view build_arena(const arena_layout& l, const arena_params& p, unsigned char* heap,
                        unsigned char* control, unsigned char* host);

class cpu_arena {
 public:
  explicit cpu_arena(const arena_params& p);
  cpu_arena(const cpu_arena&) = delete;
  cpu_arena& operator=(const cpu_arena&) = delete;

  device_view& view() { return view_; }

 private:
  // Zeroed, page-aligned memory; large blocks stay lazily zeroed (calloc).
  struct block {
    explicit block(std::uint64_t bytes);
    unsigned char* data;
    std::unique_ptr<void, void (*)(void*)> owner;
  };
  arena_layout layout_;
  block heap_, control_, host_;
  device_view view_;
};

}  // namespace grma::detail
