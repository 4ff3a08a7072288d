// Communication contexts (OpenSHMEM's shmem_ctx): each has its own
// completion, so quiet on one does not wait for the others' operations, and
// its own ordering for fence. A rank has default_context and up to
// detail::max_contexts (16) more of its own; a context belongs to the rank
// that created it. ctx_create and ctx_destroy are called by all threads of
// the rank together; the RMA and atomic calls take the context as their
// last argument and fail for one that is not alive.
#pragma once

#include <cstdint>

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"
#include "grma/detail/device_state.hpp"

namespace grma::core {

template <class Rank>
class context_calls {
 public:
  GRMA_INLINE context ctx_create() {
    context ctx;
    if (!ctx_create(ctx))
      self().fail(errc::context_table_full, call::ctx_create, detail::max_contexts);
    return ctx;
  }
  // The same returning false (and default_context in `ctx`) where the rank
  // has max_contexts contexts already: OpenSHMEM's shmem_ctx_create, which
  // reports that as its status.
  GRMA_INLINE bool ctx_create(context& ctx) {
    Rank& r = self();
    r.sync_threads();  // every thread has read the table before the leader changes it
    detail::rank_local& l = r.local();
    std::uint32_t slot = 1;
    while (slot <= std::uint32_t(detail::max_contexts) && l.contexts[slot] != 0) ++slot;
    ctx = default_context;
    if (slot > std::uint32_t(detail::max_contexts)) return false;
    // Generations count the rank's contexts from 1, so a destroyed
    // context's handle never names a later one of its slot.
    const std::uint32_t generation = l.contexts_created + 1;
    r.sync_threads();
    if (r.thread() == 0) {
      l.contexts_created = generation;
      l.contexts[slot] = generation;
    }
    r.sync_threads();
    ctx = context{slot, generation};
    return true;
  }

  // Completes the context's operations (quiet), then ends it; the handle
  // becomes default_context.
  GRMA_INLINE void ctx_destroy(context& ctx) {
    Rank& r = self();
    r.check_context(ctx, call::ctx_destroy);
    if (ctx == default_context) return;
    r.quiet(ctx);
    r.sync_threads();
    if (r.thread() == 0) r.local().contexts[ctx.slot] = 0;
    r.sync_threads();
    ctx = default_context;
  }

 private:
  GRMA_INLINE Rank& self() { return static_cast<Rank&>(*this); }
};

}  // namespace grma::core
