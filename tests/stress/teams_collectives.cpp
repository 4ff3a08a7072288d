// Black-box test of grma's teams and collectives (core API), written as a
// demanding OpenSHMEM/NVSHMEM user would: splits (strided, 2D, splits of
// splits, of team_device/team_node), queries, translation, barriers, slot
// reuse; broadcast, fcollect, collect, alltoall, alltoalls, reduce,
// allreduce (also in place), reduce_scatter over world and split teams, with
// odd sizes and many element types; then the same in a loop with splits
// made and destroyed inside it and calls over different teams interleaved.
//
// Every byte of every destination is checked (the written part against the
// expected pattern, GUARD bytes past it against the sentinel), and every
// source is checked to be unchanged. A failed check prints one line
//   BAD phase=.. iter=.. rank=.. team=.. call=.. a1=.. a2=.. src=.. idx=.. got=.. want=..
// (at most 5 per rank per phase; all are counted). Rank 0 prints
// "PHASE <name> ok"/"PHASE <name> FAILED <n>"; the host prints "ALL OK" or
// "FAILURES <count>" (from each rank's count, returned through userdata).
//
// Run: GRMA_BACKEND=cpu GRMA_RANKS_PER_DEVICE=16 ./grma-stress-teams-collectives
// (on a GPU: ./grma-stress-teams-collectives).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <grma/grma.hpp>
#include <type_traits>
#include <vector>

using grma::reduce_op;
using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using i8 = std::int8_t;
using i16 = std::int16_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
using std::size_t;

namespace bb {

// The test's own functions stay out of line on the GPU: one kernel with every
// call inlined takes ptxas tens of GB and many minutes.
#if defined(__CUDACC__)
#define BB_FN __host__ __device__ __noinline__
#else
#define BB_FN
#endif

// Each data buffer: CAP bytes a collective may use, GUARD bytes checked past
// what it writes. Two symmetric ones (2 * 36992 bytes) fit a 528-rank slice
// (110592 bytes after the teams' 16 KiB).
constexpr size_t CAP = 36864;
constexpr size_t GUARD = 128;
constexpr size_t BUF = CAP + GUARD + 64;  // room for unaligned starts
constexpr unsigned char SENT = 0xA5;      // destination before a call
constexpr unsigned char JUNK = 0x5A;      // source past its data
constexpr u64 MAXPRINT = 5;

GRMA_HOST_DEVICE inline u32 mix(u32 x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
GRMA_HOST_DEVICE inline u32 hsh(u32 seed, u32 a, u32 b, u32 k) {
  return mix(seed ^ mix(a * 0x9E3779B1u ^ mix(b * 0x85EBCA77u ^ mix(k + 0x27D4EB2Fu))));
}
// A pattern byte that is never the sentinel.
GRMA_HOST_DEVICE inline unsigned char pb(u32 seed, int a, int b, size_t k) {
  const unsigned char v = (unsigned char)hsh(seed, u32(a), u32(b), u32(k));
  return v == SENT ? (unsigned char)0x3C : v;
}

// Half of the byte collectives start their source and dest at odd offsets
// (the same on every member: it comes from the call's seed).
GRMA_HOST_DEVICE inline size_t src_off(u32 seed) {
  return (seed >> 7) & 1u ? seed % 8u : 0;
}
GRMA_HOST_DEVICE inline size_t dst_off(u32 seed) {
  return (seed >> 7) & 1u ? (seed >> 3) % 8u : 0;
}

struct st {
  int me, n;
  const char* phase;
  int iter;
  unsigned char* src;   // symmetric, BUF
  unsigned char* dst;   // symmetric, BUF
  unsigned char* pdst;  // private (alloc), BUF
  int* wl;              // private: world rank of each member of the current team
  u64* ctr;  // symmetric: [0] failures [1] printed this phase [2,3] ring [4,5] phase sums
  u64 prev_total;
  u32 seed;    // the current call's: the same on every member of its team
  u32 base;    // set by begin() at points every member of a team passes alike
  u32 k;       // calls since begin()
  u64 calls;   // collectives this rank made (counted by every thread alike)
  u64 checks;  // values this thread checked
  size_t cap;  // bytes a collective may use of src/dst (CAP, less for team blocks)
  int mut;     // self-test: corrupt one result of each call kind (BB_MUTATE=1 on the host)
};

struct tinfo {
  grma::team t;
  const char* name;
};

GRMA_HOST_DEVICE inline bool member(const grma::team& t) {
  return !(t == grma::team_none);
}

// Seeds: every member of a team makes the same calls between two begin()s, so
// (base, team, k) names a call alike on all of them, whatever other teams
// they were in before.
GRMA_HOST_DEVICE inline void begin(st& s, int a, int b) {
  s.base = hsh(u32(s.phase[0]) * 7919u + u32(s.phase[2]) * 131u + u32(s.iter), u32(a), u32(b), 99u);
  s.k = 0;
}
GRMA_HOST_DEVICE inline u32 next_seed(st& s, const tinfo& TM) {
  const grma::team& t = TM.t;
  const u32 fp =
      hsh(t.slot, t.generation, u32(t.start) * 131u + u32(t.stride), u32(t.size) + t.base * 7u);
  s.seed = hsh(s.base, fp, s.k++, 5u);
  ++s.calls;
  return s.seed;
}

// Out-of-line wrappers of the library's calls used at many sites (one copy each on the GPU).
template <class Rank>
BB_FN grma::team split_s(Rank& r, grma::team parent, int start, int stride, int size) {
  return r.team_split_strided(parent, start, stride, size);
}
template <class Rank>
BB_FN void split_2(Rank& r, grma::team parent, int xrange, grma::team& row, grma::team& col) {
  r.team_split_2d(parent, xrange, row, col);
}
template <class Rank>
BB_FN void destroy(Rank& r, grma::team& t) {
  r.team_destroy(t);
}
template <class Rank>
BB_FN void tbarrier(Rank& r, grma::team t) {
  r.barrier(t);
}
template <class T, class Rank>
BB_FN void do_allreduce(Rank& r, grma::team t, T* d, const T* x, size_t count, reduce_op op) {
  r.allreduce(t, d, x, count, op);
}
template <class T, class Rank>
BB_FN void do_reduce(Rank& r, grma::team t, T* d, const T* x, size_t count, reduce_op op,
                     int root) {
  r.reduce(t, d, x, count, op, root);
}
template <class T, class Rank>
BB_FN void do_reduce_scatter(Rank& r, grma::team t, T* d, const T* x, size_t count, reduce_op op) {
  r.reduce_scatter(t, d, x, count, op);
}

// ---- reporting -------------------------------------------------------------------------

template <class Rank, class V>
BB_FN void bad(Rank& r, st& s, const char* team, const char* what, long long a1, long long a2,
               int src, long long idx, V got, V want) {
  r.atomic_add(&s.ctr[0], u64{1}, s.me);
  const u64 k = r.atomic_fetch_add(&s.ctr[1], u64{1}, s.me);
  if (k >= (s.mut != 0 ? u64{1} << 40 : MAXPRINT)) return;
  if constexpr (std::is_floating_point_v<V>)
    printf(
        "BAD phase=%s iter=%d rank=%d team=%s call=%s a1=%lld a2=%lld src=%d idx=%lld got=%.17g "
        "want=%.17g\n",
        s.phase, s.iter, s.me, team, what, a1, a2, src, idx, double(got), double(want));
  else
    printf(
        "BAD phase=%s iter=%d rank=%d team=%s call=%s a1=%lld a2=%lld src=%d idx=%lld got=%lld "
        "want=%lld\n",
        s.phase, s.iter, s.me, team, what, a1, a2, src, idx, (long long)got, (long long)want);
}

template <class Rank, class V>
GRMA_HOST_DEVICE inline void chk(Rank& r, st& s, const char* team, const char* what, long long a1,
                                 long long a2, int src, long long idx, V got, V want) {
  ++s.checks;
  if (!(got == want)) bad(r, s, team, what, a1, a2, src, idx, got, want);
}

// The world ranks of t's members into s.wl (all threads; t's members only).
template <class Rank>
BB_FN int members(Rank& r, st& s, const tinfo& TM) {
  const int m = r.team_size(TM.t);
  r.sync_threads();  // nobody reads the last call's list any more
  for (int j = r.thread(); j < m; j += r.threads())
    s.wl[j] = r.team_translate(TM.t, j, grma::team_world);
  r.sync_threads();
  return m;
}

// Self-test (s.mut): the first call of a kind on a world member gets one
// byte of its result flipped, which its checks must report.
template <class Rank>
BB_FN void mutate(Rank& r, st& s, unsigned char* p, size_t at) {
  if (s.mut != 0 && s.me == (s.n > 1 ? 1 : 0) && r.thread() == 0) p[at] ^= 0x10;
  r.sync_threads();
}

template <class Rank>
BB_FN void fillb(Rank& r, unsigned char* p, size_t bytes, unsigned char v) {
  for (size_t k = size_t(r.thread()); k < bytes; k += size_t(r.threads())) p[k] = v;
}

// Checks that the first `bytes` of the source still hold pattern (seed, me, b)
// and the guard past it JUNK.
template <class Rank>
BB_FN void src_intact(Rank& r, st& s, const tinfo& TM, const char* what, const unsigned char* x,
                      size_t bytes, int b) {
  const u32 seed = s.seed;
  for (size_t k = size_t(r.thread()); k < bytes + GUARD; k += size_t(r.threads())) {
    const unsigned char want = k < bytes ? pb(seed, s.me, b, k) : JUNK;
    chk(r, s, TM.name, what, (long long)bytes, -1, s.me, (long long)k, int(x[k]), int(want));
  }
}

// ---- data collectives ------------------------------------------------------------------

template <class Rank>
BB_FN void t_bcast(Rank& r, st& s, const tinfo& TM, size_t bytes, int root, bool priv) {
  const int m = members(r, s, TM);
  const u32 seed = next_seed(s, TM);
  if (bytes > s.cap) bytes = s.cap;
  unsigned char* d = (priv ? s.pdst : s.dst) + dst_off(seed);
  unsigned char* x = s.src + src_off(seed);
  for (size_t k = size_t(r.thread()); k < bytes + GUARD; k += size_t(r.threads())) {
    x[k] = k < bytes ? pb(seed, s.me, 0, k) : JUNK;
    d[k] = SENT;
  }
  r.sync_threads();
  r.broadcast(TM.t, d, x, bytes, root);
  mutate(r, s, d, bytes > 0 ? bytes - 1 : 0);
  const char* what = priv ? "broadcast(private dest)" : "broadcast";
  const int rw = s.wl[root];
  (void)m;
  for (size_t k = size_t(r.thread()); k < bytes + GUARD; k += size_t(r.threads())) {
    const unsigned char want = k < bytes ? pb(seed, rw, 0, k) : SENT;
    chk(r, s, TM.name, what, (long long)bytes, root, root, (long long)k, int(d[k]), int(want));
  }
  src_intact(r, s, TM, "broadcast(source)", x, bytes, 0);
}

template <class Rank>
BB_FN void t_fcollect(Rank& r, st& s, const tinfo& TM, size_t bytes, bool priv) {
  const int m = members(r, s, TM);
  const u32 seed = next_seed(s, TM);
  unsigned char* d = (priv ? s.pdst : s.dst) + dst_off(seed);
  unsigned char* x = s.src + src_off(seed);
  const size_t tot = size_t(m) * bytes;
  for (size_t k = size_t(r.thread()); k < bytes + GUARD; k += size_t(r.threads()))
    x[k] = k < bytes ? pb(seed, s.me, 1, k) : JUNK;
  fillb(r, d, tot + GUARD, SENT);
  r.sync_threads();
  r.fcollect(TM.t, d, x, bytes);
  mutate(r, s, d, tot);
  const char* what = priv ? "fcollect(private dest)" : "fcollect";
  for (size_t k = size_t(r.thread()); k < tot + GUARD; k += size_t(r.threads())) {
    if (k < tot) {
      const int j = int(k / bytes);
      chk(r, s, TM.name, what, (long long)bytes, -1, j, (long long)(k % bytes), int(d[k]),
          int(pb(seed, s.wl[j], 1, k % bytes)));
    } else {
      chk(r, s, TM.name, what, (long long)bytes, -1, -1, (long long)k, int(d[k]), int(SENT));
    }
  }
  src_intact(r, s, TM, "fcollect(source)", x, bytes, 1);
}

// Member sizes differ: hashed in [0, lim]; with `zeros`, every third member gives none.
GRMA_HOST_DEVICE inline size_t collect_size(u32 seed, int w, int idx, size_t lim, bool zeros) {
  if (zeros && idx % 3 == 1) return 0;
  return size_t(hsh(seed, u32(w), 2u, 0u) % u32(lim + 1));
}

template <class Rank>
BB_FN void t_collect(Rank& r, st& s, const tinfo& TM, bool priv, bool zeros, size_t most) {
  const int m = members(r, s, TM);
  const int myidx = r.team_rank(TM.t);
  const u32 seed = next_seed(s, TM);
  unsigned char* d = (priv ? s.pdst : s.dst) + dst_off(seed);
  unsigned char* x = s.src + src_off(seed);
  size_t lim = s.cap / size_t(m);
  if (lim > most) lim = most;
  const size_t mine = collect_size(seed, s.me, myidx, lim, zeros);
  size_t tot = 0;
  for (int j = 0; j < m; ++j) tot += collect_size(seed, s.wl[j], j, lim, zeros);
  for (size_t k = size_t(r.thread()); k < mine + GUARD; k += size_t(r.threads()))
    x[k] = k < mine ? pb(seed, s.me, 2, k) : JUNK;
  fillb(r, d, tot + GUARD, SENT);
  r.sync_threads();
  r.collect(TM.t, d, x, mine);
  mutate(r, s, d, tot / 2);
  const char* what = priv ? "collect(private dest)" : "collect";
  size_t off = 0;
  for (int j = 0; j < m; ++j) {
    const size_t sz = collect_size(seed, s.wl[j], j, lim, zeros);
    for (size_t k = size_t(r.thread()); k < sz; k += size_t(r.threads()))
      chk(r, s, TM.name, what, (long long)sz, (long long)off, j, (long long)k, int(d[off + k]),
          int(pb(seed, s.wl[j], 2, k)));
    off += sz;
  }
  for (size_t k = size_t(r.thread()); k < GUARD; k += size_t(r.threads()))
    chk(r, s, TM.name, what, (long long)tot, -1, -1, (long long)(tot + k), int(d[tot + k]),
        int(SENT));
  src_intact(r, s, TM, "collect(source)", x, mine, 2);
}

template <class Rank>
BB_FN void t_alltoall(Rank& r, st& s, const tinfo& TM, size_t bytes, bool priv) {
  const int m = members(r, s, TM);
  const int myidx = r.team_rank(TM.t);
  const u32 seed = next_seed(s, TM);
  unsigned char* d = (priv ? s.pdst : s.dst) + dst_off(seed);
  unsigned char* x = s.src + src_off(seed);
  const size_t tot = size_t(m) * bytes;
  for (size_t k = size_t(r.thread()); k < tot + GUARD; k += size_t(r.threads())) {
    x[k] = k < tot ? pb(seed, s.me, 16 + int(k / bytes), k % bytes) : JUNK;
    d[k] = SENT;
  }
  r.sync_threads();
  r.alltoall(TM.t, d, x, bytes);
  mutate(r, s, x, 0);
  const char* what = priv ? "alltoall(private dest)" : "alltoall";
  for (size_t k = size_t(r.thread()); k < tot + GUARD; k += size_t(r.threads())) {
    if (k < tot) {
      const int i = int(k / bytes);
      chk(r, s, TM.name, what, (long long)bytes, -1, i, (long long)(k % bytes), int(d[k]),
          int(pb(seed, s.wl[i], 16 + myidx, k % bytes)));
    } else {
      chk(r, s, TM.name, what, (long long)bytes, -1, -1, (long long)k, int(d[k]), int(SENT));
    }
  }
  for (size_t k = size_t(r.thread()); k < tot + GUARD; k += size_t(r.threads())) {
    const unsigned char want = k < tot ? pb(seed, s.me, 16 + int(k / bytes), k % bytes) : JUNK;
    chk(r, s, TM.name, "alltoall(source)", (long long)bytes, -1, s.me, (long long)k, int(x[k]),
        int(want));
  }
}

// Element values for alltoalls: any bits for integers, finite values for floats.
template <class T>
GRMA_HOST_DEVICE inline T va(u32 seed, int w, int j, size_t k) {
  const u32 h = hsh(seed, u32(w), u32(j) + 1000u, u32(k));
  if constexpr (std::is_floating_point_v<T>) {
    return T(int(h % 200001u) - 100000) / T(8);
  } else {
    const u64 raw = (u64(mix(h ^ 0x1234567u)) << 32) | h;
    return T(raw);
  }
}

template <class T, class Rank>
BB_FN void t_alltoalls(Rank& r, st& s, const tinfo& TM, size_t ds, size_t ss, size_t count,
                       bool priv) {
  const int m = members(r, s, TM);
  const int myidx = r.team_rank(TM.t);
  // Largest count whose extents fit CAP.
  const size_t stride = ds > ss ? ds : ss;
  const size_t most = ((s.cap / sizeof(T) - 1) / stride + 1) / size_t(m);
  if (most == 0) return;  // the team is too large for the buffer (alike on every member)
  if (count > most) count = most;
  const u32 seed = next_seed(s, TM);
  unsigned char* d = priv ? s.pdst : s.dst;
  const size_t elements = size_t(m) * count;
  const size_t sext = ((elements - 1) * ss + 1) * sizeof(T);
  const size_t dext = ((elements - 1) * ds + 1) * sizeof(T);
  T* sp = reinterpret_cast<T*>(s.src);
  const T* dp = reinterpret_cast<const T*>(d);
  fillb(r, s.src, sext + GUARD, JUNK);
  fillb(r, d, dext + GUARD, SENT);
  r.sync_threads();
  for (size_t q = size_t(r.thread()); q < elements; q += size_t(r.threads()))
    sp[q * ss] = va<T>(seed, s.me, int(q / count), q % count);
  r.sync_threads();
  r.alltoalls(TM.t, reinterpret_cast<T*>(d), static_cast<const T*>(sp), ds, ss, count);
  mutate(r, s, d, ds > 1 ? 1 * sizeof(T) : dext - 1);
  const char* what = priv ? "alltoalls(private dest)" : "alltoalls";
  const long long a1 = (long long)(count * 10000 + sizeof(T)), a2 = (long long)(ds * 100 + ss);
  for (size_t q = size_t(r.thread()); q < dext + GUARD; q += size_t(r.threads())) {
    const size_t e = q / sizeof(T);
    if (e % ds == 0 && e / ds < elements) {
      if (q % sizeof(T) != 0) continue;
      const size_t idx = e / ds;
      const int i = int(idx / count);
      chk(r, s, TM.name, what, a1, a2, i, (long long)idx, dp[e],
          va<T>(seed, s.wl[i], myidx, idx % count));
    } else {
      chk(r, s, TM.name, what, a1, a2, -1, (long long)q, int(d[q]), int(SENT));
    }
  }
  // The source is unchanged: its elements, and JUNK between and past them.
  for (size_t q = size_t(r.thread()); q < sext + GUARD; q += size_t(r.threads())) {
    const size_t e = q / sizeof(T);
    if (e % ss == 0 && e / ss < elements) {
      if (q % sizeof(T) != 0) continue;
      const size_t idx = e / ss;
      chk(r, s, TM.name, "alltoalls(source)", a1, a2, s.me, (long long)idx, sp[e],
          va<T>(seed, s.me, int(idx / count), idx % count));
    } else {
      chk(r, s, TM.name, "alltoalls(source)", a1, a2, s.me, (long long)q, int(s.src[q]), int(JUNK));
    }
  }
}

// ---- reductions ------------------------------------------------------------------------

// Values whose reduction is exact and free of overflow in every order.
template <class T>
GRMA_HOST_DEVICE inline T vred(reduce_op op, u32 seed, int w, size_t e) {
  const u32 h = hsh(seed, u32(w), 77u, u32(e));
  const u32 h2 = mix(h ^ 0x5bd1e995u);
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case reduce_op::sum:
        return T(int(h % 17u) - 8);
      case reduce_op::prod: {
        const u32 k = h % 256u;
        return k == 0 ? T(2) : k == 1 ? T(3) : k == 2 ? T(0.5) : (h2 & 1u) ? T(1) : T(-1);
      }
      default:
        return T(int(h % 20001u) - 10000) / T(4);
    }
  } else {
    const u64 raw = (u64(h2) << 32) | h;
    switch (op) {
      case reduce_op::sum:
        if constexpr (sizeof(T) == 4 && std::is_signed_v<T>)
          return T(int(h % 2001u) - 1000);
        else if constexpr (sizeof(T) == 8 && std::is_signed_v<T>)
          return T(i64(i32(h)) * 4096);
        else
          return T(raw);
      case reduce_op::prod: {
        const u32 k = h % 256u;
        if (k == 0) return T(2);
        if (k == 1) return T(3);
        if constexpr (std::is_signed_v<T>)
          return (h2 & 1u) ? T(1) : T(-1);
        else
          return T(1);
      }
      case reduce_op::bit_and:
        return T(~(u64(1) << (h % (8 * sizeof(T)))));
      case reduce_op::bit_or:
        return T(u64(1) << (h % (8 * sizeof(T))));
      default:
        return T(raw);  // min, max, xor
    }
  }
}

template <class T>
GRMA_HOST_DEVICE inline T comb(reduce_op op, T a, T b) {
  switch (op) {
    case reduce_op::sum:
      return T(a + b);
    case reduce_op::prod:
      return T(a * b);
    case reduce_op::min:
      return b < a ? b : a;
    case reduce_op::max:
      return a < b ? b : a;
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    if (op == reduce_op::bit_and) return T(a & b);
    if (op == reduce_op::bit_or) return T(a | b);
    return T(a ^ b);
  }
  return a;
}

template <class T>
BB_FN T expect(const st& s, int m, reduce_op op, u32 seed, size_t e) {
  T v = vred<T>(op, seed, s.wl[0], e);
  for (int j = 1; j < m; ++j) v = comb(op, v, vred<T>(op, seed, s.wl[j], e));
  return v;
}

template <class T>
GRMA_HOST_DEVICE constexpr int type_code() {
  return (std::is_floating_point_v<T> ? 100 : std::is_signed_v<T> ? 0 : 50) + int(sizeof(T));
}

// kind 0: allreduce into dst; 1: reduce to `root` into dst; 2: reduce_scatter
// (into pdst when priv); 3: allreduce in place (dest = source).
template <class T, class Rank>
BB_FN void t_red(Rank& r, st& s, const tinfo& TM, int kind, reduce_op op, size_t count, int root,
                 bool priv) {
  const int m = members(r, s, TM);
  const int myidx = r.team_rank(TM.t);
  // Fit CAP.
  const size_t most = kind == 2 ? s.cap / (sizeof(T) * size_t(m)) : s.cap / sizeof(T);
  if (most == 0) return;  // alike on every member
  if (count > most) count = most;
  if (count == 0) count = 1;
  const u32 seed = next_seed(s, TM);
  const size_t total = kind == 2 ? count * size_t(m) : count;
  T* sp = reinterpret_cast<T*>(s.src);
  unsigned char* d = kind == 3 ? s.src : (kind == 2 && priv) ? s.pdst : s.dst;
  T* dp = reinterpret_cast<T*>(d);
  const size_t dbytes = count * sizeof(T);
  for (size_t e = size_t(r.thread()); e < total; e += size_t(r.threads()))
    sp[e] = vred<T>(op, seed, s.me, e);
  for (size_t k = size_t(r.thread()); k < GUARD; k += size_t(r.threads()))
    s.src[total * sizeof(T) + k] = JUNK;
  if (kind != 3) fillb(r, d, dbytes + GUARD, SENT);
  r.sync_threads();
  const char* what = "allreduce";
  switch (kind) {
    case 0:
      do_allreduce<T>(r, TM.t, dp, static_cast<const T*>(sp), count, op);
      break;
    case 1:
      what = "reduce";
      do_reduce<T>(r, TM.t, dp, static_cast<const T*>(sp), count, op, root);
      break;
    case 2:
      what = priv ? "reduce_scatter(private dest)" : "reduce_scatter";
      do_reduce_scatter<T>(r, TM.t, dp, static_cast<const T*>(sp), count, op);
      break;
    default:
      what = "allreduce(in place)";
      do_allreduce<T>(r, TM.t, sp, static_cast<const T*>(sp), count, op);
      break;
  }
  mutate(r, s, d, kind == 1 && myidx != root ? 0 : dbytes - 1);
  // a1: op * 1000 + type code; a2: count
  const long long a1 = (long long)op * 1000 + type_code<T>(), a2 = (long long)count;
  const bool gets = kind != 1 || myidx == root;
  for (size_t e = size_t(r.thread()); e < count; e += size_t(r.threads())) {
    if (!gets) break;
    const T want = expect<T>(s, m, op, seed, kind == 2 ? size_t(myidx) * count + e : e);
    chk(r, s, TM.name, what, a1, a2, -1, (long long)e, dp[e], want);
  }
  // Bytes past the result (and all of a non-root's dest) untouched.
  const size_t from = gets ? dbytes : 0;
  const unsigned char untouched = kind == 3 ? JUNK : SENT;
  for (size_t k = from + size_t(r.thread()); k < dbytes + GUARD; k += size_t(r.threads()))
    chk(r, s, TM.name, gets ? what : "reduce(non-root dest)", a1, a2, -1, (long long)k, int(d[k]),
        int(untouched));
  // The source is unchanged (except in place).
  if (kind != 3)
    for (size_t e = size_t(r.thread()); e < total; e += size_t(r.threads()))
      chk(r, s, TM.name, "reduction(source)", a1, a2, s.me, (long long)e, sp[e],
          vred<T>(op, seed, s.me, e));
}

// Every op for one type, then reduce, reduce_scatter and in-place allreduce.
template <class T, class Rank>
BB_FN void red_full(Rank& r, st& s, const tinfo& TM, int v) {
  const int m = r.team_size(TM.t);
  const size_t counts[5] = {1, 3, 17, 101, 1001};
  const int nops = std::is_integral_v<T> ? 7 : 4;
  for (int o = 0; o < nops; ++o) t_red<T>(r, s, TM, 0, reduce_op(o), counts[(o + v) % 5], 0, false);
  t_red<T>(r, s, TM, 1, reduce_op::sum, 3, 0, false);
  t_red<T>(r, s, TM, 1, reduce_op::max, 17, m - 1, false);
  t_red<T>(r, s, TM, 1, reduce_op(v % nops), 5, (v * 3 + 1) % m, false);
  t_red<T>(r, s, TM, 2, reduce_op::sum, 2, 0, false);
  t_red<T>(r, s, TM, 2, reduce_op::min, 5, 0, true);
  t_red<T>(r, s, TM, 2, reduce_op((v + 2) % nops), 1, 0, (v & 1) != 0);
  t_red<T>(r, s, TM, 3, std::is_integral_v<T> ? reduce_op::bit_xor : reduce_op::sum, 9, 0, false);
}

template <class T, class Rank>
BB_FN void red_light(Rank& r, st& s, const tinfo& TM, int v) {
  const int m = r.team_size(TM.t);
  const int nops = std::is_integral_v<T> ? 7 : 4;
  t_red<T>(r, s, TM, 0, reduce_op(v % nops), size_t(1 + (v * 37) % 64), 0, false);
  t_red<T>(r, s, TM, 1, reduce_op((v + 1) % nops), size_t(1 + (v * 11) % 20), (v * 5) % m, false);
  t_red<T>(r, s, TM, 2, reduce_op((v + 3) % nops), size_t(1 + v % 3), 0, (v & 1) != 0);
}

// One data collective of kind k (0..9) over T with parameters from v.
template <class Rank>
BB_FN void one_call(Rank& r, st& s, const tinfo& TM, int k, int v) {
  if (!member(TM.t)) return;
  begin(s, 1000 + k, v);
  const int m = r.team_size(TM.t);
  const size_t sizes[6] = {1, 7, 33, 100, 1000, 4099};
  const size_t blk[5] = {1, 7, 33, 100, 257};
  size_t b = blk[v % 5];
  if (b * size_t(m) > s.cap) b = s.cap / size_t(m);
  switch (k) {
    case 0:
      t_bcast(r, s, TM, sizes[v % 6], (v * 5) % m, (v & 1) != 0);
      break;
    case 1:
      t_fcollect(r, s, TM, b, (v & 1) != 0);
      break;
    case 2:
      t_collect(r, s, TM, (v & 1) != 0, (v & 2) != 0, 40 + size_t(v % 7) * 20);
      break;
    case 3:
      t_alltoall(r, s, TM, b, (v & 2) != 0);
      break;
    case 4:
      t_alltoalls<u32>(r, s, TM, size_t(1 + v % 3), size_t(1 + (v / 3) % 3), size_t(1 + v % 5),
                       (v & 1) != 0);
      break;
    case 5:
      t_red<i64>(r, s, TM, 0, reduce_op(v % 7), size_t(1 + (v * 13) % 50), 0, false);
      break;
    case 6:
      t_red<double>(r, s, TM, 1, reduce_op(v % 4), size_t(1 + (v * 7) % 40), (v * 3) % m, false);
      break;
    case 7:
      t_red<u16>(r, s, TM, 2, reduce_op(v % 7), size_t(1 + v % 4), 0, (v & 1) != 0);
      break;
    case 8:
      t_red<i8>(r, s, TM, 3, reduce_op(v % 7), size_t(1 + (v * 11) % 200), 0, false);
      break;
    default:
      t_red<float>(r, s, TM, 0, reduce_op(v % 4), size_t(1 + (v * 17) % 300), 0, false);
      break;
  }
}

// Every data collective over T: `full` tries every size, type and op.
template <class Rank>
BB_FN void data_suite(Rank& r, st& s, const tinfo& TM, bool full, int v) {
  if (!member(TM.t)) return;
  begin(s, 2000 + int(full), v);
  const int m = r.team_size(TM.t);
  const size_t sizes[6] = {1, 7, 33, 100, 1000, 4099};
  const int roots[4] = {0, m - 1, m / 2, (v * 7 + 3) % m};
  for (int ri = 0; ri < (full ? 4 : 2); ++ri) {
    t_bcast(r, s, TM, sizes[(ri + v) % 6], roots[ri], (ri & 1) != 0);
    if (full) t_bcast(r, s, TM, sizes[(ri + v + 3) % 6], roots[ri], (ri & 1) == 0);
  }
  const size_t blk[5] = {1, 7, 33, 100, 257};
  for (int bi = 0; bi < 5; ++bi) {
    if (!full && bi != v % 5) continue;
    size_t b = blk[bi];
    if (b * size_t(m) > s.cap) b = s.cap / size_t(m);
    t_fcollect(r, s, TM, b, (bi & 1) != 0);
  }
  t_collect(r, s, TM, (v & 1) != 0, false, 150);
  if (full) t_collect(r, s, TM, (v & 1) == 0, true, 150);
  for (int bi = 0; bi < 4; ++bi) {
    if (!full && bi != (v + 1) % 4) continue;
    size_t b = blk[bi];
    if (b * size_t(m) > s.cap) b = s.cap / size_t(m);
    t_alltoall(r, s, TM, b, (bi & 1) == 0);
  }
  if (full) {
    t_alltoalls<u8>(r, s, TM, 1, 1, 7, false);
    t_alltoalls<u16>(r, s, TM, 2, 3, 3, true);
    t_alltoalls<u32>(r, s, TM, 3, 1, 5, false);
    t_alltoalls<u64>(r, s, TM, 1, 4, 2, true);
    t_alltoalls<double>(r, s, TM, 2, 2, 1, false);
    t_alltoalls<float>(r, s, TM, 1, 1, 33, true);
    t_alltoalls<u8>(r, s, TM, 5, 3, 1, false);
    red_full<i8>(r, s, TM, v);
    red_full<u8>(r, s, TM, v);
    red_full<i16>(r, s, TM, v);
    red_full<u16>(r, s, TM, v);
    red_full<i32>(r, s, TM, v);
    red_full<u32>(r, s, TM, v);
    red_full<i64>(r, s, TM, v);
    red_full<u64>(r, s, TM, v);
    red_full<float>(r, s, TM, v);
    red_full<double>(r, s, TM, v);
  } else {
    switch (v % 3) {
      case 0:
        t_alltoalls<u64>(r, s, TM, 2, 1, 3, (v & 1) != 0);
        break;
      case 1:
        t_alltoalls<u16>(r, s, TM, 1, 3, 7, (v & 1) != 0);
        break;
      default:
        t_alltoalls<double>(r, s, TM, 3, 2, 2, (v & 1) != 0);
        break;
    }
    red_light<i32>(r, s, TM, v);
    red_light<u64>(r, s, TM, v + 1);
    red_light<double>(r, s, TM, v + 2);
  }
}

// Every collective with nothing to move: the dests stay as they were.
template <class Rank>
BB_FN void t_empty(Rank& r, st& s, const tinfo& TM) {
  if (!member(TM.t)) return;
  const int m = members(r, s, TM);
  next_seed(s, TM);
  fillb(r, s.dst, GUARD, SENT);
  fillb(r, s.pdst, GUARD, SENT);
  r.sync_threads();
  r.broadcast(TM.t, s.dst, s.src, 0, m - 1);
  r.fcollect(TM.t, s.pdst, s.src, 0);
  r.collect(TM.t, s.dst, s.src, 0);
  r.alltoall(TM.t, s.pdst, s.src, 0);
  r.alltoalls(TM.t, reinterpret_cast<u32*>(s.dst), reinterpret_cast<const u32*>(s.src), 2, 3, 0);
  do_allreduce<i32>(r, TM.t, reinterpret_cast<i32*>(s.dst), reinterpret_cast<const i32*>(s.src), 0,
                    reduce_op::sum);
  do_reduce<double>(r, TM.t, reinterpret_cast<double*>(s.dst),
                    reinterpret_cast<const double*>(s.src), 0, reduce_op::max, m - 1);
  do_reduce_scatter<u16>(r, TM.t, reinterpret_cast<u16*>(s.pdst),
                         reinterpret_cast<const u16*>(s.src), 0, reduce_op::bit_or);
  s.calls += 7;
  for (size_t k = size_t(r.thread()); k < GUARD; k += size_t(r.threads())) {
    chk(r, s, TM.name, "empty collectives (dst)", 0, 0, -1, (long long)k, int(s.dst[k]), int(SENT));
    chk(r, s, TM.name, "empty collectives (private dst)", 0, 0, -1, (long long)k, int(s.pdst[k]),
        int(SENT));
  }
}

// team_translate(a, i, b) against the way through world, for every member i of a.
template <class Rank>
BB_FN void check_cross(Rank& r, st& s, const tinfo& a, const tinfo& b) {
  if (!member(a.t)) return;
  const int ma = r.team_size(a.t);
  for (int i = r.thread(); i < ma; i += r.threads()) {
    const int w = r.team_translate(a.t, i, grma::team_world);
    chk(r, s, a.name, b.name, ma, i, w, i, r.team_translate(a.t, i, b.t),
        r.team_translate(grma::team_world, w, b.t));
  }
}

// ---- teams -----------------------------------------------------------------------------

// A ring of blocking puts over T's members into slot[0] (symmetric), then
// quiet and barrier: each member finds its predecessor's value.
template <class Rank>
BB_FN void ring(Rank& r, st& s, const tinfo& TM, u64* slot) {
  if (!member(TM.t)) return;
  begin(s, 3000, 0);
  const int m = members(r, s, TM);
  const int i = r.team_rank(TM.t);
  const u32 seed = next_seed(s, TM);
  if (r.thread() == 0) {
    slot[0] = 0xdeadbeefull;
    slot[1] = (u64(seed) << 32) | u32(s.me);
  }
  r.sync_threads();
  tbarrier(r, TM.t);  // every slot cleared before any put
  r.put(&slot[0], &slot[1], sizeof(u64), s.wl[(i + 1) % m]);
  r.quiet();
  tbarrier(r, TM.t);
  const int from = (i + m - 1) % m;
  if (r.thread() == 0)
    chk(r, s, TM.name, "ring put+quiet+barrier", m, i, from, 0, (long long)slot[0],
        (long long)((u64(seed) << 32) | u32(s.wl[from])));
  r.sync_threads();
  tbarrier(r, TM.t);  // nobody's next ring overwrites a slot before it is read
}

// t, split from `parent` as members start, start + stride, ... (size of them):
// membership, rank, size and translation both ways. All parent members call.
template <class Rank>
BB_FN void check_split(Rank& r, st& s, const char* name, const grma::team& parent,
                       const grma::team& t, int start, int stride, int size) {
  const int p = r.team_rank(parent);
  const bool mem = p >= start && (p - start) % stride == 0 && (p - start) / stride < size;
  if (r.thread() == 0) {
    chk(r, s, name, "split membership", start * 1000 + stride, size, -1, p, int(member(t)),
        int(mem));
    if (!member(t)) {
      chk(r, s, name, "team_rank(team_none)", start, stride, -1, 0, r.team_rank(t), -1);
      chk(r, s, name, "team_size(team_none)", start, stride, -1, 0, r.team_size(t), -1);
      chk(r, s, name, "team_translate(team_none)", start, stride, -1, 0,
          r.team_translate(t, 0, grma::team_world), -1);
    }
  }
  if (!mem || !member(t)) return;
  const int idx = (p - start) / stride;
  if (r.thread() == 0) {
    chk(r, s, name, "team_rank", start * 1000 + stride, size, -1, 0, r.team_rank(t), idx);
    chk(r, s, name, "team_size", start * 1000 + stride, size, -1, 0, r.team_size(t), size);
    chk(r, s, name, "team_translate(-1)", start, stride, -1, -1,
        r.team_translate(t, -1, grma::team_world), -1);
    chk(r, s, name, "team_translate(size)", start, stride, -1, size,
        r.team_translate(t, size, grma::team_world), -1);
  }
  for (int i = r.thread(); i < size; i += r.threads()) {
    const int pi = start + i * stride;
    const int w = r.team_translate(parent, pi, grma::team_world);
    chk(r, s, name, "team_translate(t->world)", start * 1000 + stride, size, i, i,
        r.team_translate(t, i, grma::team_world), w);
    chk(r, s, name, "team_translate(t->parent)", start * 1000 + stride, size, i, i,
        r.team_translate(t, i, parent), pi);
    chk(r, s, name, "team_translate(world->t)", start * 1000 + stride, size, w, w,
        r.team_translate(grma::team_world, w, t), i);
  }
  for (int w = r.thread(); w < s.n; w += r.threads()) {
    const int q = r.team_translate(grma::team_world, w, parent);
    const bool in = q >= start && (q - start) % stride == 0 && (q - start) / stride < size;
    chk(r, s, name, "team_translate(world->t, all)", start * 1000 + stride, size, w, w,
        r.team_translate(grma::team_world, w, t), in ? (q - start) / stride : -1);
  }
}

template <class Rank>
BB_FN void check_2d(Rank& r, st& s, const char* name, const grma::team& parent, int xrange,
                    const grma::team& row, const grma::team& col) {
  const int pm = r.team_size(parent), p = r.team_rank(parent);
  const int x = xrange < pm ? xrange : pm;
  const int ri = p / x, ci = p % x;
  const int rsize = pm - ri * x < x ? pm - ri * x : x;
  const int csize = (pm - ci + x - 1) / x;
  if (r.thread() == 0) {
    chk(r, s, name, "2d row is a team", xrange, pm, -1, p, int(member(row)), 1);
    chk(r, s, name, "2d column is a team", xrange, pm, -1, p, int(member(col)), 1);
  }
  if (!member(row) || !member(col)) return;
  if (r.thread() == 0) {
    chk(r, s, name, "2d team_rank(row)", xrange, pm, -1, p, r.team_rank(row), ci);
    chk(r, s, name, "2d team_size(row)", xrange, pm, -1, p, r.team_size(row), rsize);
    chk(r, s, name, "2d team_rank(column)", xrange, pm, -1, p, r.team_rank(col), ri);
    chk(r, s, name, "2d team_size(column)", xrange, pm, -1, p, r.team_size(col), csize);
  }
  for (int k = r.thread(); k < rsize; k += r.threads())
    chk(r, s, name, "2d translate(row->parent)", xrange, pm, k, k, r.team_translate(row, k, parent),
        ri * x + k);
  for (int k = r.thread(); k < csize; k += r.threads())
    chk(r, s, name, "2d translate(column->parent)", xrange, pm, k, k,
        r.team_translate(col, k, parent), k * x + ci);
  for (int w = r.thread(); w < s.n; w += r.threads()) {
    const int q = r.team_translate(grma::team_world, w, parent);
    chk(r, s, name, "2d translate(world->row)", xrange, pm, w, w,
        r.team_translate(grma::team_world, w, row), q >= 0 && q / x == ri ? q % x : -1);
    chk(r, s, name, "2d translate(world->column)", xrange, pm, w, w,
        r.team_translate(grma::team_world, w, col), q >= 0 && q % x == ci ? q / x : -1);
    // row <-> column: member k of my row is in my column only if it is me
    const int inrow = q >= 0 && q / x == ri ? q % x : -1;
    if (inrow >= 0)
      chk(r, s, name, "2d translate(row->column)", xrange, pm, w, inrow,
          r.team_translate(row, inrow, col), q % x == ci ? ri : -1);
  }
}

// The largest size a strided split from a parent of pm members can have.
GRMA_HOST_DEVICE inline int max_size(int pm, int start, int stride) {
  return (pm - 1 - start) / stride + 1;
}

// ---- phases ----------------------------------------------------------------------------

template <class Rank>
BB_FN void phase_begin(Rank& r, st& s, const char* name) {
  s.phase = name;
  s.iter = 0;
  r.sync_threads();
  if (r.thread() == 0) r.atomic_set(&s.ctr[1], u64{0}, s.me);
  r.sync_threads();
}

template <class Rank>
BB_FN void phase_end(Rank& r, st& s, double t0) {
  r.sync_threads();
  if (r.thread() == 0) s.ctr[4] = r.atomic_fetch(&s.ctr[0], s.me);
  r.sync_threads();
  r.allreduce(grma::team_world, s.ctr + 5, s.ctr + 4, 1, reduce_op::sum);
  const u64 total = s.ctr[5];
  if (r.thread() == 0 && s.me == 0) {
    if (total == s.prev_total)
      printf("PHASE %s ok (%.3f s; rank 0: %llu calls so far, thread 0: %llu checks)\n", s.phase,
             r.wtime() - t0, (unsigned long long)s.calls, (unsigned long long)s.checks);
    else
      printf("PHASE %s FAILED %llu (%.3f s)\n", s.phase, (unsigned long long)(total - s.prev_total),
             r.wtime() - t0);
  }
  s.prev_total = total;
  r.sync_threads();
}

struct kept {
  tinfo evens, odds, sub, row3, col3;
};

template <class Rank>
BB_FN void phase_teams(Rank& r, st& s, kept& K) {
  const int n = s.n;
  const grma::team W = grma::team_world;
  const tinfo world{W, "world"};
  (void)world;
  tinfo& evens = K.evens;
  tinfo& odds = K.odds;
  tinfo& sub = K.sub;
  tinfo& row3 = K.row3;
  tinfo& col3 = K.col3;
  (void)evens;
  (void)odds;
  (void)sub;
  (void)row3;
  (void)col3;
  // ================= phase 1: team queries, splits, barriers, slot reuse =================
  const double t0 = r.wtime();
  phase_begin(r, s, "teams");
  const int drank = r.rank(grma::device), dsize = r.size(grma::device);
  const int dfirst = s.me - drank;
  if (r.thread() == 0) {
    chk(r, s, "world", "team_size", 0, 0, -1, 0, r.team_size(W), n);
    chk(r, s, "world", "team_rank", 0, 0, -1, 0, r.team_rank(W), s.me);
    chk(r, s, "device", "team_size", 0, 0, -1, 0, r.team_size(grma::team_device), dsize);
    chk(r, s, "device", "team_rank", 0, 0, -1, 0, r.team_rank(grma::team_device), drank);
    const int nr = r.team_rank(grma::team_node), ns = r.team_size(grma::team_node);
    chk(r, s, "node", "team_rank in range", ns, 0, -1, 0, int(nr >= 0 && nr < ns), 1);
    chk(r, s, "node", "size a multiple of the device's", ns, dsize, -1, 0,
        int(ns % dsize == 0 && ns <= n), 1);
    chk(r, s, "node", "translate(node->world) of me", nr, 0, -1, 0,
        r.team_translate(grma::team_node, nr, W), s.me);
    chk(r, s, "node", "team_shared == team_node", 0, 0, -1, 0,
        int(grma::team_shared == grma::team_node), 1);
    chk(r, s, "none", "team_rank", 0, 0, -1, 0, r.team_rank(grma::team_none), -1);
    chk(r, s, "none", "team_size", 0, 0, -1, 0, r.team_size(grma::team_none), -1);
    chk(r, s, "none", "translate(none->world)", 0, 0, -1, 0,
        r.team_translate(grma::team_none, 0, W), -1);
    chk(r, s, "none", "translate(world->none)", 0, 0, -1, 0,
        r.team_translate(W, 0, grma::team_none), -1);
    chk(r, s, "world", "translate(-1)", 0, 0, -1, 0, r.team_translate(W, -1, W), -1);
    chk(r, s, "world", "translate(n)", 0, 0, -1, 0, r.team_translate(W, n, W), -1);
  }
  for (int w = r.thread(); w < n; w += r.threads()) {
    chk(r, s, "world", "translate(world->world)", 0, 0, w, w, r.team_translate(W, w, W), w);
    const bool here = w >= dfirst && w < dfirst + dsize;
    chk(r, s, "device", "translate(world->device)", 0, 0, w, w,
        r.team_translate(W, w, grma::team_device), here ? w - dfirst : -1);
    if (w < dsize)
      chk(r, s, "device", "translate(device->world)", 0, 0, w, w,
          r.team_translate(grma::team_device, w, W), dfirst + w);
    const int nq = r.team_translate(W, w, grma::team_node);
    if (nq >= 0)
      chk(r, s, "node", "translate round trip", 0, 0, w, w,
          r.team_translate(grma::team_node, nq, W), w);
  }
  ring(r, s, world, s.ctr + 2);
  ring(r, s, tinfo{grma::team_device, "device"}, s.ctr + 2);
  ring(r, s, tinfo{grma::team_node, "node"}, s.ctr + 2);
  r.barrier(W);
  r.barrier(grma::team_device);
  r.barrier(grma::team_node);

  // Kept for the later phases: evens, odds, sub (of evens), rows and columns of 3.
  evens = tinfo{split_s(r, W, 0, 2, (n + 1) / 2), "evens"};
  check_split(r, s, "evens", W, evens.t, 0, 2, (n + 1) / 2);
  if (n >= 2) {
    odds.t = split_s(r, W, 1, 2, n / 2);
    check_split(r, s, "odds", W, odds.t, 1, 2, n / 2);
  }
  ring(r, s, evens, s.ctr + 2);
  ring(r, s, odds, s.ctr + 2);
  if (member(evens.t)) {
    const int em = r.team_size(evens.t);
    if (em >= 2) {
      sub.t = split_s(r, evens.t, 1, 2, max_size(em, 1, 2));
      check_split(r, s, "evens/sub", evens.t, sub.t, 1, 2, max_size(em, 1, 2));
    }
  }
  ring(r, s, sub, s.ctr + 2);
  split_2(r, W, 3, row3.t, col3.t);
  check_2d(r, s, "2d(3)", W, 3, row3.t, col3.t);
  ring(r, s, row3, s.ctr + 2);
  ring(r, s, col3, s.ctr + 2);

  // Other strided splits of world, checked and destroyed.
  {
    const int starts[7] = {n / 3, n - 1, 0, 0, 0, n / 2, 0};
    const int strides[7] = {3, 1, 1, 1, n > 1 ? n - 1 : 1, 5, 7};
    for (int k = 0; k < 7; ++k) {
      const int st0 = starts[k], sd = strides[k];
      int sz = max_size(n, st0, sd);
      if (k == 3) sz = (n + 1) / 2;  // the first half
      if (k == 4 && sz > 2) sz = 2;  // {0, n - 1}
      tinfo t{split_s(r, W, st0, sd, sz), "world/strided"};
      check_split(r, s, "world/strided", W, t.t, st0, sd, sz);
      if (member(t.t)) tbarrier(r, t.t);
      ring(r, s, t, s.ctr + 2);
      destroy(r, t.t);
      if (r.thread() == 0)
        chk(r, s, "world/strided", "destroy leaves team_none", k, 0, -1, 0, int(member(t.t)), 0);
    }
  }
  // Splits of team_device and team_node.
  {
    tinfo dv{split_s(r, grma::team_device, 1 % dsize, 2, max_size(dsize, 1 % dsize, 2)),
             "device/strided"};
    check_split(r, s, "device/strided", grma::team_device, dv.t, 1 % dsize, 2,
                max_size(dsize, 1 % dsize, 2));
    ring(r, s, dv, s.ctr + 2);
    const int ns = r.team_size(grma::team_node);
    tinfo nd{split_s(r, grma::team_node, 0, 3, max_size(ns, 0, 3)), "node/strided"};
    check_split(r, s, "node/strided", grma::team_node, nd.t, 0, 3, max_size(ns, 0, 3));
    ring(r, s, nd, s.ctr + 2);
    destroy(r, nd.t);
    destroy(r, dv.t);
  }
  // 2D splits with several xranges (and one of evens).
  {
    const int xs[6] = {1, 2, 4, n, n + 3, 5};
    for (int k = 0; k < 6; ++k) {
      tinfo rw{grma::team_none, "2d row"}, cl{grma::team_none, "2d column"};
      split_2(r, W, xs[k], rw.t, cl.t);
      check_2d(r, s, "2d", W, xs[k], rw.t, cl.t);
      ring(r, s, rw, s.ctr + 2);
      ring(r, s, cl, s.ctr + 2);
      if (member(rw.t)) tbarrier(r, rw.t);
      if (member(cl.t)) tbarrier(r, cl.t);
      destroy(r, cl.t);
      destroy(r, rw.t);
    }
    if (member(evens.t)) {
      tinfo rw{grma::team_none, "evens 2d row"}, cl{grma::team_none, "evens 2d column"};
      split_2(r, evens.t, 2, rw.t, cl.t);
      check_2d(r, s, "evens/2d(2)", evens.t, 2, rw.t, cl.t);
      ring(r, s, rw, s.ctr + 2);
      ring(r, s, cl, s.ctr + 2);
      destroy(r, rw.t);
      destroy(r, cl.t);
    }
  }
  // A team's own symmetric block: zeroed, reachable by its members.
  if (member(evens.t)) {
    auto* blk = static_cast<u64*>(r.calloc_symmetric(evens.t, 32, sizeof(u64)));
    for (int k = r.thread(); k < 32; k += r.threads())
      chk(r, s, "evens", "calloc_symmetric(team) zeroed", 32, 0, -1, k, (long long)blk[k], 0LL);
    r.sync_threads();
    ring(r, s, evens, blk + 5);
    r.free_symmetric(evens.t, blk);
  }
  // Slot reuse: many more splits than the table has slots, each checked and used.
  for (int k = 0; k < 40; ++k) {
    s.iter = k;
    const int st0 = k % (n < 3 ? n : 3), sd = 1 + k % 4;
    const int sz = max_size(n, st0, sd);
    tinfo t{split_s(r, W, st0, sd, sz), "reuse/strided"};
    check_split(r, s, "reuse/strided", W, t.t, st0, sd, sz);
    if (member(t.t)) {
      tbarrier(r, t.t);
      begin(s, 4000, k);
      t_red<i32>(r, s, t, 0, reduce_op::sum, 3, 0, false);
    }
    if (k % 5 == 0) {
      tinfo rw{grma::team_none, "reuse/2d row"}, cl{grma::team_none, "reuse/2d column"};
      split_2(r, W, 2 + k / 5, rw.t, cl.t);
      check_2d(r, s, "reuse/2d", W, 2 + k / 5, rw.t, cl.t);
      begin(s, 4001, k);
      t_red<u8>(r, s, rw, 0, reduce_op::bit_xor, 5, 0, false);
      begin(s, 4002, k);
      t_red<i16>(r, s, cl, 0, reduce_op::max, 4, 0, false);
      destroy(r, rw.t);
      destroy(r, cl.t);
    }
    destroy(r, t.t);
  }
  {
    const tinfo dev{grma::team_device, "device"}, node{grma::team_node, "node"};
    check_cross(r, s, evens, row3);
    check_cross(r, s, row3, col3);
    check_cross(r, s, col3, evens);
    check_cross(r, s, sub, evens);
    check_cross(r, s, evens, sub);
    check_cross(r, s, odds, col3);
    check_cross(r, s, dev, evens);
    check_cross(r, s, node, sub);
    check_cross(r, s, row3, dev);
    check_cross(r, s, sub, odds);
    begin(s, 4100, 0);
    t_empty(r, s, world);
    t_empty(r, s, evens);
    t_empty(r, s, odds);
    t_empty(r, s, row3);
    t_empty(r, s, col3);
  }
  phase_end(r, s, t0);
}

template <class Rank>
BB_FN void phase_colls(Rank& r, st& s, kept& K) {
  const int n = s.n;
  const grma::team W = grma::team_world;
  const tinfo world{W, "world"};
  (void)world;
  tinfo& evens = K.evens;
  tinfo& odds = K.odds;
  tinfo& sub = K.sub;
  tinfo& row3 = K.row3;
  tinfo& col3 = K.col3;
  (void)evens;
  (void)odds;
  (void)sub;
  (void)row3;
  (void)col3;
  // ================= phase 2: every data collective over world and split teams ==========
  const double t0 = r.wtime();
  phase_begin(r, s, "collectives");
  {
    const tinfo full[4] = {world, evens, row3, col3};
    for (int k = 0; k < 4; ++k) {
      s.iter = k;
      data_suite(r, s, full[k], true, k);
    }
    const tinfo light[5] = {odds, sub, tinfo{grma::team_device, "device"},
                            tinfo{grma::team_node, "node"}, world};
    for (int k = 0; k < 5; ++k) {
      s.iter = 4 + k;
      data_suite(r, s, light[k], false, k);
    }
  }
  // Team blocks as the collectives' buffers: evens (or odds) and the columns
  // of 3 each allocate their own, alive together, freed in another order.
  // (A node's table holds every team's blocks: few teams, small blocks.)
  {
    constexpr size_t TB = 2048 + GUARD + 64;
    unsigned char* const keep_src = s.src;
    unsigned char* const keep_dst = s.dst;
    const tinfo& half = member(evens.t) ? evens : odds;
    auto* h_src = static_cast<unsigned char*>(r.alloc_symmetric(half.t, TB));
    auto* h_dst = static_cast<unsigned char*>(r.alloc_symmetric(half.t, TB, 256));
    auto* w_src = static_cast<unsigned char*>(r.calloc_symmetric(col3.t, TB, 1));
    auto* w_dst = static_cast<unsigned char*>(r.alloc_symmetric(col3.t, TB));
    for (size_t k = size_t(r.thread()); k < TB; k += size_t(r.threads()))
      chk(r, s, col3.name, "calloc_symmetric(team) zeroed", (long long)TB, 0, -1, (long long)k,
          int(w_src[k]), 0);
    s.cap = 2048;
    for (int k = 0; k < 3; ++k) {
      s.iter = 10 + k;
      s.src = h_src;
      s.dst = h_dst;
      data_suite(r, s, half, false, k);
      s.src = w_src;
      s.dst = w_dst;
      data_suite(r, s, col3, false, k + 1);
      s.src = h_src;
      s.dst = h_dst;
      for (int step = 0; step < 10; ++step) one_call(r, s, half, step, 40 + step + 10 * k);
    }
    r.free_symmetric(half.t, h_src);
    s.src = w_src;
    s.dst = w_dst;
    s.iter = 13;
    for (int step = 0; step < 10; ++step) one_call(r, s, col3, step, 80 + step);
    r.free_symmetric(half.t, h_dst);
    r.free_symmetric(col3.t, w_dst);
    r.free_symmetric(col3.t, w_src);
    s.src = keep_src;
    s.dst = keep_dst;
    s.cap = CAP;
  }
  phase_end(r, s, t0);
}

template <class Rank>
BB_FN void phase_loop(Rank& r, st& s, kept& K) {
  const int n = s.n;
  const grma::team W = grma::team_world;
  const tinfo world{W, "world"};
  (void)world;
  tinfo& evens = K.evens;
  tinfo& odds = K.odds;
  tinfo& sub = K.sub;
  tinfo& row3 = K.row3;
  tinfo& col3 = K.col3;
  (void)evens;
  (void)odds;
  (void)sub;
  (void)row3;
  (void)col3;
  // ================= phase 3: a loop: new patterns, splits inside, interleaved teams =====
  const double t0 = r.wtime();
  phase_begin(r, s, "loop");
  for (int it = 0; it < 6; ++it) {
    s.iter = it;
    const int st0 = it % (n < 3 ? n : 3), sd = 1 + it % 3;
    tinfo A{split_s(r, W, st0, sd, max_size(n, st0, sd)), "loopA"};
    check_split(r, s, "loopA", W, A.t, st0, sd, max_size(n, st0, sd));
    const int xs[4] = {2, 3, 4, n};
    tinfo RL{grma::team_none, "loop row"}, CL{grma::team_none, "loop column"};
    split_2(r, W, xs[it % 4], RL.t, CL.t);
    check_2d(r, s, "loop 2d", W, xs[it % 4], RL.t, CL.t);
    // A split of each row or of each column, whichever are fewer: every one of
    // those teams takes a slot of its own (29 a node).
    const int xr = xs[it % 4] < n ? xs[it % 4] : n;
    const tinfo& CP = xr <= (n + xr - 1) / xr ? CL : RL;  // x columns, ceil(n / x) rows
    const int cs = r.team_size(CP.t);
    tinfo CN{split_s(r, CP.t, 1 % cs, 2, max_size(cs, 1 % cs, 2)), "loop row-or-column/sub"};
    check_split(r, s, "loop row-or-column/sub", CP.t, CN.t, 1 % cs, 2, max_size(cs, 1 % cs, 2));
    ring(r, s, CN, s.ctr + 2);
    const tinfo L1[7] = {world, A, RL, evens, CN, CL, row3};
    for (int step = 0; step < 12; ++step)
      one_call(r, s, L1[(step + it) % 7], (step * 3 + it) % 10, it * 16 + step);
    destroy(r, CN.t);
    data_suite(r, s, world, false, it);
    destroy(r, RL.t);
    tinfo B{grma::team_none, "loopA/B"};
    if (member(A.t)) {
      const int am = r.team_size(A.t);
      B.t = split_s(r, A.t, 0, 2, max_size(am, 0, 2));
      check_split(r, s, "loopA/B", A.t, B.t, 0, 2, max_size(am, 0, 2));
    }
    const tinfo L2[5] = {B, CL, world, odds, col3};
    for (int step = 0; step < 10; ++step)
      one_call(r, s, L2[(step + it) % 5], (step * 7 + it) % 10, it * 16 + step + 100);
    ring(r, s, B, s.ctr + 2);
    destroy(r, B.t);
    destroy(r, CL.t);
    data_suite(r, s, A, false, it + 7);
    destroy(r, A.t);
  }
  phase_end(r, s, t0);
}

template <class Rank>
BB_FN void phase_teardown(Rank& r, st& s, kept& K) {
  const int n = s.n;
  const grma::team W = grma::team_world;
  const tinfo world{W, "world"};
  (void)world;
  tinfo& evens = K.evens;
  tinfo& odds = K.odds;
  tinfo& sub = K.sub;
  tinfo& row3 = K.row3;
  tinfo& col3 = K.col3;
  (void)evens;
  (void)odds;
  (void)sub;
  (void)row3;
  (void)col3;
  // ================= end ============================================================
  const double t0 = r.wtime();
  phase_begin(r, s, "teardown");
  destroy(r, col3.t);
  destroy(r, row3.t);
  destroy(r, sub.t);
  destroy(r, odds.t);
  destroy(r, evens.t);
  // The slots are free again: a last round of splits.
  for (int k = 0; k < 3; ++k) {
    tinfo t{split_s(r, W, 0, 1 + k, max_size(n, 0, 1 + k)), "final"};
    check_split(r, s, "final", W, t.t, 0, 1 + k, max_size(n, 0, 1 + k));
    begin(s, 5000, k);
    if (member(t.t)) t_red<u32>(r, s, t, 0, reduce_op::bit_or, 7, 0, false);
    destroy(r, t.t);
  }
  phase_end(r, s, t0);
}

struct program {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    st s;
    s.me = r.rank(grma::world);
    s.n = r.size(grma::world);
    s.phase = "setup";
    s.iter = 0;
    s.prev_total = 0;
    s.seed = 12345;
    s.calls = 0;
    s.checks = 0;
    s.mut = 0;
    s.cap = CAP;
    if (r.userdata_size() >= sizeof(u64) * (2 * size_t(s.n) + 1))
      s.mut = int(r.template userdata<u64>()[2 * s.n]);
    begin(s, 0, 0);
    const int n = s.n;
    s.src = static_cast<unsigned char*>(r.alloc_symmetric(BUF));
    s.dst = static_cast<unsigned char*>(r.alloc_symmetric(BUF));
    s.ctr = static_cast<u64*>(r.calloc_symmetric(8, sizeof(u64)));
    s.pdst = static_cast<unsigned char*>(r.alloc(BUF));
    s.wl = static_cast<int*>(r.alloc(sizeof(int) * size_t(n)));
    const grma::team W = grma::team_world;
    const tinfo world{W, "world"};

    kept K{tinfo{grma::team_none, "evens"}, tinfo{grma::team_none, "odds"},
           tinfo{grma::team_none, "evens/sub"}, tinfo{grma::team_none, "row3"},
           tinfo{grma::team_none, "col3"}};
    (void)W;
    (void)world;
    phase_teams(r, s, K);
    phase_colls(r, s, K);
    phase_loop(r, s, K);
    phase_teardown(r, s, K);
    r.sync_threads();
    if (r.thread() == 0) {
      u64* ud = r.template userdata<u64>();
      if (r.userdata_size() >= sizeof(u64) * 2 * size_t(n)) {
        ud[s.me] = r.atomic_fetch(&s.ctr[0], s.me);
        ud[n + s.me] = 1;
      }
      if (s.me == 0)
        printf("RANKS-SUM-OF-FAILURES (allreduce) %llu\n", (unsigned long long)s.prev_total);
    }
    r.sync_threads();
    r.free(s.wl);
    r.free(s.pdst);
    r.free_symmetric(s.ctr);
    r.free_symmetric(s.dst);
    r.free_symmetric(s.src);
  }
};

}  // namespace bb

int main(int argc, char** argv) try {
  grma::runtime rt(argc, argv);
  bb::program prog;
  grma::launch_options o{};
  const grma::rank_info info = rt.info(prog, o);
  const int n = info.rank_count;
  std::vector<u64> ud(2 * size_t(n) + 1, 0);
  const char* mut = std::getenv("BB_MUTATE");
  ud[2 * size_t(n)] = mut != nullptr && mut[0] == '1' ? 1 : 0;
  o.userdata = ud.data();
  o.userdata_size = ud.size() * sizeof(u64);
  std::printf("coll: %d ranks (%d per device, %d threads each) on %s\n", n, info.ranks_per_device,
              info.threads_per_rank, rt.backend() == grma::backend_kind::cuda ? "cuda" : "cpu");
  std::fflush(stdout);
#if defined(__CUDACC__)
  // Room for every rank's BAD lines (5 per phase) in device printf's buffer.
  if (rt.backend() == grma::backend_kind::cuda)
    (void)cudaDeviceSetLimit(cudaLimitPrintfFifoSize, size_t(64) << 20);
#endif
  const auto t0 = std::chrono::steady_clock::now();
  rt.run(prog, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fflush(stdout);
  u64 fails = 0;
  int missing = 0;
  for (int i = 0; i < n; ++i) {
    fails += ud[size_t(i)];
    if (ud[size_t(n + i)] != 1) ++missing;
  }
  std::printf("run took %.3f s\n", secs);
  if (missing != 0) std::printf("BAD %d ranks did not report\n", missing);
  if (fails == 0 && missing == 0) {
    std::printf("ALL OK\n");
    return 0;
  }
  std::printf("FAILURES %llu\n", (unsigned long long)(fails + u64(missing)));
  return 1;
} catch (const grma::error& e) {
  std::fprintf(stderr, "grma::error: %s\n", e.what());
  std::printf("FAILURES (job error)\n");
  return 2;
}
