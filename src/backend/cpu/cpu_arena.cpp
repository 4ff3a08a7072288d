#include "cpu_arena.hpp"

#include <cstdlib>
#include <string>

#include "grma/error.hpp"

namespace grma::detail {

cpu_arena::block::block(std::uint64_t bytes) : data(nullptr), owner(nullptr, std::free) {
  constexpr std::uint64_t page = 4096;
  owner.reset(std::calloc(1, bytes + page));
  if (!owner)
    throw error(
        errc::invalid_config, -1, call::runtime,
        "grma: cannot allocate " + std::to_string(bytes) +
            " bytes of host memory for a device's arena (GRMA_HEAP_SIZE, GRMA_SYMMETRIC_SIZE "
            "and GRMA_RANKS_PER_DEVICE set its size)");
  data = static_cast<unsigned char*>(owner.get()) +
         (page - reinterpret_cast<std::uintptr_t>(owner.get()) % page) % page;
}

device_view build_arena(const arena_layout& l, const arena_params& p, unsigned char* heap,
                        unsigned char* control, unsigned char* host) {
  *heap_block_at(heap, l.allocatable_start) = init_arena(l, p, control, host);
  return make_view(l, p, heap, control, host);
}

cpu_arena::cpu_arena(const arena_params& p)
    : layout_(layout_arena(p)),
      heap_(layout_.heap_bytes),
      control_(layout_.control_bytes),
      host_(layout_.host_bytes),
      view_(build_arena(layout_, p, heap_.data, control_.data, host_.data)) {}

}  // namespace grma::detail
