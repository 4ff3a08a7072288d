// The OpenSHMEM layer (papers/001; OpenSHMEM 1.5's calls, as NVSHMEM's
// device API has them): a PE is a grma rank (a thread block of the rank
// kernel on a GPU, a thread on the CPU backend), PE numbers are world
// ranks, and each call is one or a few calls of grma's core
// (include/grma/core/), so its paths, completion and errors are the core's.
//
//   template <class Rank>
//   GRMA_HOST_DEVICE void operator()(Rank& r) const {
//     grma::shmem::handle sh(r);  // the PE's calls
//     auto* x = static_cast<double*>(sh.malloc(n * sizeof(double)));
//     sh.put(x, mine, n, (sh.my_pe() + 1) % sh.n_pes());
//     sh.barrier_all();
//     ...
//     sh.free(x);
//   }
//
// Who calls: the bulk calls (put, get and their forms, put_signal, iput,
// iget, collectives, malloc and the other allocations, team splits,
// ctx_create and ctx_destroy) are made by all threads of the PE together
// with the same arguments, or by the 32 threads of one warp through
// one_warp() (NVSHMEM's _warp forms); p, g, atomics, fence and quiet may
// be made by any thread alone, several at once; signal_fetch,
// signal_wait_until and the wait_until and test families by one thread of
// the PE at a time (a waiting thread shows the watchdog what the PE waits
// for, in one record per PE). Bad arguments end the job with an error that
// names the PE, the call and the values; calls that OpenSHMEM gives a
// status return it (0 for success).
//
// Memory model (OpenSHMEM 1.5's): put returns when its source may be reused,
// get when its destination holds the data, the _nbi forms at once (their
// buffers are the program's again after quiet); fence orders a PE's puts,
// p, atomics and put_signal to one PE on a context; quiet completes them;
// put_signal's data is visible to a PE that sees its signal with
// signal_wait_until or wait_until (acquire); barrier_all completes and
// orders everything before it. docs/shmem.md states the rules per path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "grma/config.hpp"
#include "grma/rank.hpp"
#include "grma/types.hpp"

namespace grma::shmem {

// ---- constants and types ------------------------------------------------------------

using ctx_t = context;
using team_t = team;

GRMA_CONSTANT context ctx_default = default_context;
// No context: any call made on it fails (SHMEM_CTX_INVALID).
GRMA_CONSTANT context ctx_invalid{~0u, ~0u};

// ctx_create's options (SHMEM_CTX_SERIALIZED, _PRIVATE, _NOWAIT). Every grma
// context belongs to the PE that made it, so each is private and serialized
// already; the options are accepted and change nothing.
inline constexpr long ctx_serialized = 1;
inline constexpr long ctx_private = 2;
inline constexpr long ctx_nowait = 4;

// SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED (the PEs whose memory ptr reaches: this
// node's), team_node (this node's PEs) and SHMEM_TEAM_INVALID; team_device
// (the PEs of this GPU) is grma's own.
GRMA_CONSTANT team team_world = grma::team_world;
GRMA_CONSTANT team team_shared = grma::team_shared;
GRMA_CONSTANT team team_node = grma::team_node;
GRMA_CONSTANT team team_device = grma::team_device;
GRMA_CONSTANT team team_invalid = grma::team_none;

// shmem_team_config_t: how many contexts a team's PEs will make; grma's
// contexts are the PE's own, so the splits accept it and keep nothing.
struct team_config {
  int num_contexts = 0;
};
inline constexpr long team_num_contexts = 1;  // SHMEM_TEAM_NUM_CONTEXTS

// SHMEM_CMP_EQ .. SHMEM_CMP_LE, SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD.
inline constexpr cmp cmp_eq = cmp::eq;
inline constexpr cmp cmp_ne = cmp::ne;
inline constexpr cmp cmp_gt = cmp::gt;
inline constexpr cmp cmp_ge = cmp::ge;
inline constexpr cmp cmp_lt = cmp::lt;
inline constexpr cmp cmp_le = cmp::le;
inline constexpr signal_op signal_set = signal_op::set;
inline constexpr signal_op signal_add = signal_op::add;

// What wait_until_any, test_any and their _vector forms return when no word
// is ready, or every word is excluded (SIZE_MAX).
inline constexpr std::size_t none_ready = core::no_word;

// The OpenSHMEM version the layer follows (shmem_info_get_version).
inline constexpr int major_version = 1;
inline constexpr int minor_version = 5;

template <class Rank>
class warp_handle;

// A value parameter that takes the type of the call's pointer (p(x, 1, pe)
// on a long* x), as OpenSHMEM's typed calls do.
template <class T>
using same = std::type_identity_t<T>;

// ---- a PE's calls ---------------------------------------------------------------------

// The calls of OpenSHMEM made by one PE: a handle on its grma rank. Cheap
// to make (it holds the rank's address); the rank outlives it.
template <class Rank>
class handle {
 public:
  GRMA_INLINE explicit handle(Rank& r) : r_(&r) {}

  // The PE's calls made by one warp of its threads while the others do other
  // work: the rules of basic_rank::one_warp (all 32 threads call together;
  // no other thread of the PE makes a call meanwhile; a warp other than the
  // first begins and ends its turn at a sync_threads()).
  GRMA_INLINE warp_handle<Rank> one_warp() const { return warp_handle<Rank>(*r_); }

  // The rank under the PE, for grma's own calls (notified access, windows).
  GRMA_INLINE Rank& rank() const { return *r_; }

  // ---- setup and query ----

  GRMA_INLINE int my_pe() const { return r_->rank(world); }
  GRMA_INLINE int n_pes() const { return r_->size(world); }
  GRMA_INLINE bool pe_accessible(int pe) const { return pe >= 0 && pe < n_pes(); }
  GRMA_INLINE static void info_get_version(int* major, int* minor) {
    *major = major_version;
    *minor = minor_version;
  }

  // -1 for team_invalid (the core's team_none), as the core's queries.
  GRMA_INLINE int team_my_pe(team t) const { return r_->team_rank(t); }
  GRMA_INLINE int team_n_pes(team t) const { return r_->team_size(t); }
  // PE `pe` of `from` as a PE of `to`: -1 where it is not one of `to`'s.
  GRMA_INLINE int team_translate_pe(team from, int pe, team to) const {
    return r_->team_translate(from, pe, to);
  }
  // Collective over `parent`: PEs start, start + stride, ... (size of
  // them) of parent form *new_team; the others get team_invalid. Returns 0.
  GRMA_INLINE int team_split_strided(team parent, int start, int stride, int size,
                                     const team_config* config, long config_mask, team* new_team) {
    (void)config;
    (void)config_mask;
    *new_team = r_->team_split_strided(parent, start, stride, size);
    return 0;
  }
  // Collective over `parent`: parent as a grid of rows of `xrange` PEs (the
  // last row may be short): *xteam is my row, *yteam my column. Returns 0.
  GRMA_INLINE int team_split_2d(team parent, int xrange, const team_config* xconfig,
                                long xconfig_mask, team* xteam, const team_config* yconfig,
                                long yconfig_mask, team* yteam) {
    (void)xconfig;
    (void)xconfig_mask;
    (void)yconfig;
    (void)yconfig_mask;
    r_->team_split_2d(parent, xrange, *xteam, *yteam);
    return 0;
  }
  // Collective over the team; the predefined teams and team_invalid are no-ops.
  GRMA_INLINE void team_destroy(team t) { r_->team_destroy(t); }

  // The PE's copy of the symmetric object at `dest` as a pointer this
  // thread loads and stores: null where `pe` is on another node.
  template <class T>
  GRMA_INLINE T* ptr(T* dest, int pe) const {
    return r_->ptr(dest, pe);
  }
  // The same with `pe` numbered in team t (null where t has no such PE).
  template <class T>
  GRMA_INLINE T* team_ptr(team t, T* dest, int pe) const {
    const int w = team_translate_pe(t, pe, team_world);
    return w < 0 ? nullptr : r_->ptr(dest, w);
  }

  // ---- symmetric memory (collective over team_world; every PE asks for the same) ----

  // A size of 0 (for calloc, a count or size of 0) does nothing and gives
  // a null pointer, as OpenSHMEM 1.5 says (the core's alloc_symmetric
  // would give a block of no bytes).
  GRMA_INLINE void* malloc(std::size_t size) {
    return size == 0 ? nullptr : r_->alloc_symmetric(size);
  }
  GRMA_INLINE void* calloc(std::size_t count, std::size_t size) {
    return count == 0 || size == 0 ? nullptr : r_->calloc_symmetric(count, size);
  }
  // A block at a multiple of `alignment` (a power of two up to 4096).
  GRMA_INLINE void* align(std::size_t alignment, std::size_t size) {
    return size == 0 ? nullptr : r_->alloc_symmetric(size, alignment);
  }
  GRMA_INLINE void free(void* block) { r_->free_symmetric(block); }

  // ---- RMA: nelems elements of T (the mem forms: bytes) ----

  template <class T>
  GRMA_INLINE void ctx_put(context ctx, T* dest, const T* source, std::size_t nelems, int pe) {
    r_->put(dest, source, nelems * sizeof(T), pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_get(context ctx, T* dest, const T* source, std::size_t nelems, int pe) {
    r_->get(dest, source, nelems * sizeof(T), pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_put_nbi(context ctx, T* dest, const T* source, std::size_t nelems, int pe) {
    r_->put_nbi(dest, source, nelems * sizeof(T), pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_get_nbi(context ctx, T* dest, const T* source, std::size_t nelems, int pe) {
    r_->get_nbi(dest, source, nelems * sizeof(T), pe, ctx);
  }
  GRMA_INLINE void ctx_putmem(context ctx, void* dest, const void* source, std::size_t bytes,
                              int pe) {
    r_->put(dest, source, bytes, pe, ctx);
  }
  GRMA_INLINE void ctx_getmem(context ctx, void* dest, const void* source, std::size_t bytes,
                              int pe) {
    r_->get(dest, source, bytes, pe, ctx);
  }
  GRMA_INLINE void ctx_putmem_nbi(context ctx, void* dest, const void* source, std::size_t bytes,
                                  int pe) {
    r_->put_nbi(dest, source, bytes, pe, ctx);
  }
  GRMA_INLINE void ctx_getmem_nbi(context ctx, void* dest, const void* source, std::size_t bytes,
                                  int pe) {
    r_->get_nbi(dest, source, bytes, pe, ctx);
  }
  // One element, by the calling thread.
  template <class T>
  GRMA_INLINE void ctx_p(context ctx, T* dest, same<T> value, int pe) {
    r_->p(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_g(context ctx, const T* source, int pe) {
    return r_->g(source, pe, ctx);
  }
  // Element i * sst of source to element i * dst of the PE's dest, i <
  // nelems (strides count elements; a negative one is an error).
  template <class T>
  GRMA_INLINE void ctx_iput(context ctx, T* dest, const T* source, std::ptrdiff_t dst,
                            std::ptrdiff_t sst, std::size_t nelems, int pe) {
    r_->iput(dest, source, std::size_t(dst), std::size_t(sst), nelems, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_iget(context ctx, T* dest, const T* source, std::ptrdiff_t dst,
                            std::ptrdiff_t sst, std::size_t nelems, int pe) {
    r_->iget(dest, source, std::size_t(dst), std::size_t(sst), nelems, pe, ctx);
  }

  template <class T>
  GRMA_INLINE void put(T* dest, const T* source, std::size_t nelems, int pe) {
    ctx_put(ctx_default, dest, source, nelems, pe);
  }
  template <class T>
  GRMA_INLINE void get(T* dest, const T* source, std::size_t nelems, int pe) {
    ctx_get(ctx_default, dest, source, nelems, pe);
  }
  template <class T>
  GRMA_INLINE void put_nbi(T* dest, const T* source, std::size_t nelems, int pe) {
    ctx_put_nbi(ctx_default, dest, source, nelems, pe);
  }
  template <class T>
  GRMA_INLINE void get_nbi(T* dest, const T* source, std::size_t nelems, int pe) {
    ctx_get_nbi(ctx_default, dest, source, nelems, pe);
  }
  GRMA_INLINE void putmem(void* dest, const void* source, std::size_t bytes, int pe) {
    ctx_putmem(ctx_default, dest, source, bytes, pe);
  }
  GRMA_INLINE void getmem(void* dest, const void* source, std::size_t bytes, int pe) {
    ctx_getmem(ctx_default, dest, source, bytes, pe);
  }
  GRMA_INLINE void putmem_nbi(void* dest, const void* source, std::size_t bytes, int pe) {
    ctx_putmem_nbi(ctx_default, dest, source, bytes, pe);
  }
  GRMA_INLINE void getmem_nbi(void* dest, const void* source, std::size_t bytes, int pe) {
    ctx_getmem_nbi(ctx_default, dest, source, bytes, pe);
  }
  template <class T>
  GRMA_INLINE void p(T* dest, same<T> value, int pe) {
    ctx_p(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE T g(const T* source, int pe) {
    return ctx_g(ctx_default, source, pe);
  }
  template <class T>
  GRMA_INLINE void iput(T* dest, const T* source, std::ptrdiff_t dst, std::ptrdiff_t sst,
                        std::size_t nelems, int pe) {
    ctx_iput(ctx_default, dest, source, dst, sst, nelems, pe);
  }
  template <class T>
  GRMA_INLINE void iget(T* dest, const T* source, std::ptrdiff_t dst, std::ptrdiff_t sst,
                        std::size_t nelems, int pe) {
    ctx_iget(ctx_default, dest, source, dst, sst, nelems, pe);
  }

  // ---- signals: a put, then the 64-bit signal word set or added to ----

  template <class T>
  GRMA_INLINE void ctx_put_signal(context ctx, T* dest, const T* source, std::size_t nelems,
                                  std::uint64_t* sig_addr, std::uint64_t signal, signal_op sig_op,
                                  int pe) {
    r_->put_signal(dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_put_signal_nbi(context ctx, T* dest, const T* source, std::size_t nelems,
                                      std::uint64_t* sig_addr, std::uint64_t signal,
                                      signal_op sig_op, int pe) {
    r_->put_signal_nbi(dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe, ctx);
  }
  GRMA_INLINE void ctx_putmem_signal(context ctx, void* dest, const void* source, std::size_t bytes,
                                     std::uint64_t* sig_addr, std::uint64_t signal,
                                     signal_op sig_op, int pe) {
    r_->put_signal(dest, source, bytes, sig_addr, signal, sig_op, pe, ctx);
  }
  GRMA_INLINE void ctx_putmem_signal_nbi(context ctx, void* dest, const void* source,
                                         std::size_t bytes, std::uint64_t* sig_addr,
                                         std::uint64_t signal, signal_op sig_op, int pe) {
    r_->put_signal_nbi(dest, source, bytes, sig_addr, signal, sig_op, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void put_signal(T* dest, const T* source, std::size_t nelems, std::uint64_t* sig_addr,
                              std::uint64_t signal, signal_op sig_op, int pe) {
    ctx_put_signal(ctx_default, dest, source, nelems, sig_addr, signal, sig_op, pe);
  }
  template <class T>
  GRMA_INLINE void put_signal_nbi(T* dest, const T* source, std::size_t nelems,
                                  std::uint64_t* sig_addr, std::uint64_t signal, signal_op sig_op,
                                  int pe) {
    ctx_put_signal_nbi(ctx_default, dest, source, nelems, sig_addr, signal, sig_op, pe);
  }
  GRMA_INLINE void putmem_signal(void* dest, const void* source, std::size_t bytes,
                                 std::uint64_t* sig_addr, std::uint64_t signal, signal_op sig_op,
                                 int pe) {
    ctx_putmem_signal(ctx_default, dest, source, bytes, sig_addr, signal, sig_op, pe);
  }
  GRMA_INLINE void putmem_signal_nbi(void* dest, const void* source, std::size_t bytes,
                                     std::uint64_t* sig_addr, std::uint64_t signal,
                                     signal_op sig_op, int pe) {
    ctx_putmem_signal_nbi(ctx_default, dest, source, bytes, sig_addr, signal, sig_op, pe);
  }
  // This PE's signal word, read atomically.
  GRMA_INLINE std::uint64_t signal_fetch(const std::uint64_t* sig_addr) {
    return r_->atomic_fetch(sig_addr, my_pe());
  }
  // Waits until (*sig_addr cmp value) and returns the word's value then.
  GRMA_INLINE std::uint64_t signal_wait_until(std::uint64_t* sig_addr, cmp c, std::uint64_t value) {
    return r_->wait_until(sig_addr, c, value);
  }

  // ---- ordering and completion ----

  GRMA_INLINE void ctx_fence(context ctx) { r_->fence(ctx); }
  GRMA_INLINE void ctx_quiet(context ctx) { r_->quiet(ctx); }
  GRMA_INLINE void fence() { r_->fence(ctx_default); }
  GRMA_INLINE void quiet() { r_->quiet(ctx_default); }

  // 0 and a new context in *ctx; nonzero (and ctx_invalid) where the PE has
  // all of its contexts (16) already.
  GRMA_INLINE int ctx_create(long options, context* ctx) {
    (void)options;
    context made;
    if (!r_->ctx_create(made)) {
      *ctx = ctx_invalid;
      return 1;
    }
    *ctx = made;
    return 0;
  }
  // Completes the context's operations, then ends it; ctx_invalid (a
  // failed ctx_create's) is no context, and nothing is done.
  GRMA_INLINE void ctx_destroy(context ctx) {
    if (!(ctx == ctx_invalid)) r_->ctx_destroy(ctx);
  }

  // ---- atomics on one word of 4 or 8 bytes (fetch, set, swap: also float and double) ----

  template <class T>
  GRMA_INLINE T ctx_atomic_fetch(context ctx, const T* source, int pe) {
    return r_->atomic_fetch(source, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_set(context ctx, T* dest, same<T> value, int pe) {
    r_->atomic_set(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_swap(context ctx, T* dest, same<T> value, int pe) {
    return r_->atomic_swap(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_compare_swap(context ctx, T* dest, same<T> cond, same<T> value, int pe) {
    return r_->atomic_compare_swap(dest, cond, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_fetch_inc(context ctx, T* dest, int pe) {
    return r_->atomic_fetch_inc(dest, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_inc(context ctx, T* dest, int pe) {
    r_->atomic_inc(dest, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_fetch_add(context ctx, T* dest, same<T> value, int pe) {
    return r_->atomic_fetch_add(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_add(context ctx, T* dest, same<T> value, int pe) {
    r_->atomic_add(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_fetch_and(context ctx, T* dest, same<T> value, int pe) {
    return r_->atomic_fetch_and(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_and(context ctx, T* dest, same<T> value, int pe) {
    r_->atomic_and(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_fetch_or(context ctx, T* dest, same<T> value, int pe) {
    return r_->atomic_fetch_or(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_or(context ctx, T* dest, same<T> value, int pe) {
    r_->atomic_or(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE T ctx_atomic_fetch_xor(context ctx, T* dest, same<T> value, int pe) {
    return r_->atomic_fetch_xor(dest, value, pe, ctx);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_xor(context ctx, T* dest, same<T> value, int pe) {
    r_->atomic_xor(dest, value, pe, ctx);
  }
  // The fetching _nbi forms leave the old value in *fetch (local memory).
  // grma completes them before they return, which quiet's rule allows.
  template <class T>
  GRMA_INLINE void ctx_atomic_fetch_nbi(context ctx, T* fetch, const T* source, int pe) {
    *fetch = ctx_atomic_fetch(ctx, source, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_swap_nbi(context ctx, T* fetch, T* dest, same<T> value, int pe) {
    *fetch = ctx_atomic_swap(ctx, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_compare_swap_nbi(context ctx, T* fetch, T* dest, same<T> cond,
                                               same<T> value, int pe) {
    *fetch = ctx_atomic_compare_swap(ctx, dest, cond, value, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_fetch_inc_nbi(context ctx, T* fetch, T* dest, int pe) {
    *fetch = ctx_atomic_fetch_inc(ctx, dest, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_fetch_add_nbi(context ctx, T* fetch, T* dest, same<T> value, int pe) {
    *fetch = ctx_atomic_fetch_add(ctx, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_fetch_and_nbi(context ctx, T* fetch, T* dest, same<T> value, int pe) {
    *fetch = ctx_atomic_fetch_and(ctx, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_fetch_or_nbi(context ctx, T* fetch, T* dest, same<T> value, int pe) {
    *fetch = ctx_atomic_fetch_or(ctx, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void ctx_atomic_fetch_xor_nbi(context ctx, T* fetch, T* dest, same<T> value, int pe) {
    *fetch = ctx_atomic_fetch_xor(ctx, dest, value, pe);
  }

  template <class T>
  GRMA_INLINE T atomic_fetch(const T* source, int pe) {
    return ctx_atomic_fetch(ctx_default, source, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_set(T* dest, same<T> value, int pe) {
    ctx_atomic_set(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_swap(T* dest, same<T> value, int pe) {
    return ctx_atomic_swap(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_compare_swap(T* dest, same<T> cond, same<T> value, int pe) {
    return ctx_atomic_compare_swap(ctx_default, dest, cond, value, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_inc(T* dest, int pe) {
    return ctx_atomic_fetch_inc(ctx_default, dest, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_inc(T* dest, int pe) {
    ctx_atomic_inc(ctx_default, dest, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_add(T* dest, same<T> value, int pe) {
    return ctx_atomic_fetch_add(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_add(T* dest, same<T> value, int pe) {
    ctx_atomic_add(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_and(T* dest, same<T> value, int pe) {
    return ctx_atomic_fetch_and(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_and(T* dest, same<T> value, int pe) {
    ctx_atomic_and(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_or(T* dest, same<T> value, int pe) {
    return ctx_atomic_fetch_or(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_or(T* dest, same<T> value, int pe) {
    ctx_atomic_or(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE T atomic_fetch_xor(T* dest, same<T> value, int pe) {
    return ctx_atomic_fetch_xor(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_xor(T* dest, same<T> value, int pe) {
    ctx_atomic_xor(ctx_default, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_fetch_nbi(T* fetch, const T* source, int pe) {
    ctx_atomic_fetch_nbi(ctx_default, fetch, source, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_swap_nbi(T* fetch, T* dest, same<T> value, int pe) {
    ctx_atomic_swap_nbi(ctx_default, fetch, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_compare_swap_nbi(T* fetch, T* dest, same<T> cond, same<T> value, int pe) {
    ctx_atomic_compare_swap_nbi(ctx_default, fetch, dest, cond, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_fetch_inc_nbi(T* fetch, T* dest, int pe) {
    ctx_atomic_fetch_inc_nbi(ctx_default, fetch, dest, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_fetch_add_nbi(T* fetch, T* dest, same<T> value, int pe) {
    ctx_atomic_fetch_add_nbi(ctx_default, fetch, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_fetch_and_nbi(T* fetch, T* dest, same<T> value, int pe) {
    ctx_atomic_fetch_and_nbi(ctx_default, fetch, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_fetch_or_nbi(T* fetch, T* dest, same<T> value, int pe) {
    ctx_atomic_fetch_or_nbi(ctx_default, fetch, dest, value, pe);
  }
  template <class T>
  GRMA_INLINE void atomic_fetch_xor_nbi(T* fetch, T* dest, same<T> value, int pe) {
    ctx_atomic_fetch_xor_nbi(ctx_default, fetch, dest, value, pe);
  }

  // ---- point-to-point synchronization on this PE's words ----
  // status (may be null) excludes word i where status[i] != 0; the _vector
  // forms compare word i with values[i].

  template <class T>
  GRMA_INLINE void wait_until(T* ivar, cmp c, same<T> value) {
    r_->wait_until(ivar, c, value);
  }
  template <class T>
  GRMA_INLINE void wait_until_all(T* ivars, std::size_t nelems, const int* status, cmp c,
                                  same<T> value) {
    r_->wait_until_all(ivars, nelems, status, c, value);
  }
  template <class T>
  GRMA_INLINE std::size_t wait_until_any(T* ivars, std::size_t nelems, const int* status, cmp c,
                                         same<T> value) {
    return r_->wait_until_any(ivars, nelems, status, c, value);
  }
  template <class T>
  GRMA_INLINE std::size_t wait_until_some(T* ivars, std::size_t nelems, std::size_t* indices,
                                          const int* status, cmp c, same<T> value) {
    return r_->wait_until_some(ivars, nelems, indices, status, c, value);
  }
  template <class T>
  GRMA_INLINE void wait_until_all_vector(T* ivars, std::size_t nelems, const int* status, cmp c,
                                         const same<T>* values) {
    r_->wait_until_all_vector(ivars, nelems, status, c, values);
  }
  template <class T>
  GRMA_INLINE std::size_t wait_until_any_vector(T* ivars, std::size_t nelems, const int* status,
                                                cmp c, const same<T>* values) {
    return r_->wait_until_any_vector(ivars, nelems, status, c, values);
  }
  template <class T>
  GRMA_INLINE std::size_t wait_until_some_vector(T* ivars, std::size_t nelems, std::size_t* indices,
                                                 const int* status, cmp c, const same<T>* values) {
    return r_->wait_until_some_vector(ivars, nelems, indices, status, c, values);
  }
  // 1 where (*ivar c value) holds, else 0.
  template <class T>
  GRMA_INLINE int test(T* ivar, cmp c, same<T> value) {
    return r_->test(ivar, c, value) ? 1 : 0;
  }
  template <class T>
  GRMA_INLINE int test_all(T* ivars, std::size_t nelems, const int* status, cmp c, same<T> value) {
    return r_->test_all(ivars, nelems, status, c, value) ? 1 : 0;
  }
  template <class T>
  GRMA_INLINE std::size_t test_any(T* ivars, std::size_t nelems, const int* status, cmp c,
                                   same<T> value) {
    return r_->test_any(ivars, nelems, status, c, value);
  }
  template <class T>
  GRMA_INLINE std::size_t test_some(T* ivars, std::size_t nelems, std::size_t* indices,
                                    const int* status, cmp c, same<T> value) {
    return r_->test_some(ivars, nelems, indices, status, c, value);
  }
  template <class T>
  GRMA_INLINE int test_all_vector(T* ivars, std::size_t nelems, const int* status, cmp c,
                                  const same<T>* values) {
    return r_->test_all_vector(ivars, nelems, status, c, values) ? 1 : 0;
  }
  template <class T>
  GRMA_INLINE std::size_t test_any_vector(T* ivars, std::size_t nelems, const int* status, cmp c,
                                          const same<T>* values) {
    return r_->test_any_vector(ivars, nelems, status, c, values);
  }
  template <class T>
  GRMA_INLINE std::size_t test_some_vector(T* ivars, std::size_t nelems, std::size_t* indices,
                                           const int* status, cmp c, const same<T>* values) {
    return r_->test_some_vector(ivars, nelems, indices, status, c, values);
  }

  // ---- collectives over teams (every PE of the team, the same arguments) ----

  // Completes the PE's operations on the default context, then every PE of
  // the job meets (barrier_all); sync_all only meets.
  GRMA_INLINE void barrier_all() { barrier(team_world); }
  GRMA_INLINE void sync_all() { r_->barrier(team_world); }
  GRMA_INLINE void barrier(team t) {
    quiet();
    r_->barrier(t);
  }
  GRMA_INLINE int sync(team t) {
    r_->barrier(t);
    return 0;
  }
  GRMA_INLINE int team_sync(team t) { return sync(t); }

  // Root's nelems elements at source (symmetric) into every PE's dest.
  template <class T>
  GRMA_INLINE int broadcast(team t, T* dest, const T* source, std::size_t nelems, int pe_root) {
    return broadcastmem(t, dest, source, nelems * sizeof(T), pe_root);
  }
  GRMA_INLINE int broadcastmem(team t, void* dest, const void* source, std::size_t bytes,
                               int pe_root) {
    r_->broadcast(t, dest, source, bytes, pe_root);
    return 0;
  }
  // PE i's nelems elements (the same number on every PE) at dest + i * nelems.
  template <class T>
  GRMA_INLINE int fcollect(team t, T* dest, const T* source, std::size_t nelems) {
    return fcollectmem(t, dest, source, nelems * sizeof(T));
  }
  GRMA_INLINE int fcollectmem(team t, void* dest, const void* source, std::size_t bytes) {
    r_->fcollect(t, dest, source, bytes);
    return 0;
  }
  // PE i's nelems elements (each PE its own number) after those of PEs 0 .. i - 1.
  template <class T>
  GRMA_INLINE int collect(team t, T* dest, const T* source, std::size_t nelems) {
    return collectmem(t, dest, source, nelems * sizeof(T));
  }
  GRMA_INLINE int collectmem(team t, void* dest, const void* source, std::size_t bytes) {
    r_->collect(t, dest, source, bytes);
    return 0;
  }
  // Block j of PE i's source (nelems elements, j < team size) into block i of PE j's dest.
  template <class T>
  GRMA_INLINE int alltoall(team t, T* dest, const T* source, std::size_t nelems) {
    return alltoallmem(t, dest, source, nelems * sizeof(T));
  }
  GRMA_INLINE int alltoallmem(team t, void* dest, const void* source, std::size_t bytes) {
    r_->alltoall(t, dest, source, bytes);
    return 0;
  }
  // The same with blocks of elements dst (at dest) and sst (at source) apart.
  template <class T>
  GRMA_INLINE int alltoalls(team t, T* dest, const T* source, std::ptrdiff_t dst,
                            std::ptrdiff_t sst, std::size_t nelems) {
    r_->alltoalls(t, dest, source, std::size_t(dst), std::size_t(sst), nelems);
    return 0;
  }
  // Bytes dst and sst apart.
  GRMA_INLINE int alltoallsmem(team t, void* dest, const void* source, std::ptrdiff_t dst,
                               std::ptrdiff_t sst, std::size_t bytes) {
    return alltoalls(t, static_cast<unsigned char*>(dest),
                     static_cast<const unsigned char*>(source), dst, sst, bytes);
  }

  // Every PE's dest (symmetric) gets the element-wise reduction of the
  // PEs' nreduce elements at source (symmetric; may be dest). T: integers
  // of 1 to 8 bytes, float, double (and, or, xor: integers).
  template <class T>
  GRMA_INLINE int and_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::bit_and);
  }
  template <class T>
  GRMA_INLINE int or_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::bit_or);
  }
  template <class T>
  GRMA_INLINE int xor_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::bit_xor);
  }
  template <class T>
  GRMA_INLINE int max_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::max);
  }
  template <class T>
  GRMA_INLINE int min_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::min);
  }
  template <class T>
  GRMA_INLINE int sum_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::sum);
  }
  template <class T>
  GRMA_INLINE int prod_reduce(team t, T* dest, const T* source, std::size_t nreduce) {
    return reduce(t, dest, source, nreduce, reduce_op::prod);
  }

 private:
  template <class T>
  GRMA_INLINE int reduce(team t, T* dest, const T* source, std::size_t nreduce, reduce_op op) {
    r_->allreduce(t, dest, source, nreduce, op);
    return 0;
  }

  Rank* r_;
};

// ---- one warp's PE ------------------------------------------------------------------

// What handle::one_warp returns: a handle on the warp's rank, which it
// holds. Neither copied nor moved (the handle points into it): use it where
// it is made.
template <class Rank>
class warp_handle : private warp_rank_holder<warp_rank_of<Rank>>,
                    public handle<warp_rank_of<Rank>> {
  using holder = warp_rank_holder<warp_rank_of<Rank>>;

 public:
  GRMA_INLINE explicit warp_handle(const Rank& r)
      : holder{r.one_warp()}, handle<warp_rank_of<Rank>>(holder::held) {}
  warp_handle(const warp_handle&) = delete;
  warp_handle& operator=(const warp_handle&) = delete;
};

}  // namespace grma::shmem
