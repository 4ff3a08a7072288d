#include "cpu_arena.hpp"

#include <cstdlib>
#include <new>

namespace grma::detail {

cpu_arena::block::block(std::uint64_t bytes) : data(nullptr), owner(nullptr, std::free) {
  constexpr std::uint64_t page = 4096;
  owner.reset(std::calloc(1, bytes + page));
  if (!owner) throw std::bad_alloc();
  data = static_cast<unsigned char*>(owner.get()) +
         (page - reinterpret_cast<std::uintptr_t>(owner.get()) % page) % page;
}

cpu_arena::cpu_arena(const arena_params& p)
    : layout_(layout_arena(p)),
      heap_(layout_.heap_bytes),
      control_(layout_.control_bytes),
      host_(layout_.host_bytes),
      view_(make_view(layout_, p, heap_.data, control_.data, host_.data)) {
  const heap_block first = init_arena(layout_, p, control_.data, host_.data);
  *heap_block_at(heap_.data, layout_.userdata_area) = first;
}

}  // namespace grma::detail
