// The portable conformance suite: rank programs that run unchanged on the CPU
// backend (a rank is a thread) and on the CUDA backend (a rank is a thread
// block of a persistent kernel), checked on the host with gtest.
//
// Rank code here follows the calling convention of include/grma/rank.hpp: all
// threads of a rank make every grma call together with the same arguments.
// Data is filled and checked by all threads, each taking every threads()-th
// byte. Results go to the host through userdata: one rank_record per rank,
// then an optional area a test lays out itself. A failed check counts in the
// rank's record and keeps the source line and three values of the first one;
// the host reports them after the run.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <grma/grma.hpp>
#include <ostream>
#include <string>
#include <vector>

#if !defined(__CUDA_ARCH__)
#include <atomic>
#include <thread>
#endif

namespace conformance {

// ---- small portable helpers -------------------------------------------------------

template <class T>
GRMA_HOST_DEVICE constexpr T min_of(T a, T b) {
  return a < b ? a : b;
}
template <class T>
GRMA_HOST_DEVICE constexpr T max_of(T a, T b) {
  return a < b ? b : a;
}
template <class T>
GRMA_HOST_DEVICE constexpr T clamp_to(T v, T lo, T hi) {
  return v < lo ? lo : hi < v ? hi : v;
}

// Time limits that have already passed, as `deadline - r.wtime()` gives
// them once the deadline is behind (and NaN, as a computation may): a wait
// given one looks once and times out.
struct passed_limits {
  double seconds[3];
  GRMA_HOST_DEVICE passed_limits() : seconds{-1.0, -0.0, 0.0} {
    const std::uint64_t quiet_nan = 0x7ff8000000000000ull;
    memcpy(&seconds[2], &quiet_nan, sizeof(double));
  }
};

GRMA_HOST_DEVICE inline unsigned atomic_add(unsigned* counter, unsigned value) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(counter, value);
#else
  return std::atomic_ref<unsigned>(*counter).fetch_add(value, std::memory_order_relaxed);
#endif
}

GRMA_HOST_DEVICE inline unsigned long long atomic_add(unsigned long long* counter,
                                                      unsigned long long value) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(counter, value);
#else
  return std::atomic_ref<unsigned long long>(*counter).fetch_add(value, std::memory_order_relaxed);
#endif
}

// A pause in a polling loop: give the core away on the CPU (ranks outnumber
// cores), leave issue slots to other blocks on the GPU.
GRMA_HOST_DEVICE inline void relax() {
#if defined(__CUDA_ARCH__)
  __nanosleep(200);
#else
  std::this_thread::yield();
#endif
}

// ---- data patterns -----------------------------------------------------------

// Mixes up to three values into one seed (splitmix64 finalizer).
GRMA_HOST_DEVICE inline std::uint64_t mix(std::uint64_t a, std::uint64_t b = 0,
                                          std::uint64_t c = 0) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull ^
                    (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
                    (c + 0x1b873593ull) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

// Byte `index` of the pattern named by `seed`: differs between seeds and
// between neighbouring positions, so stale, shifted or foreign data shows.
GRMA_HOST_DEVICE inline std::uint8_t pattern_byte(std::uint64_t seed, std::size_t index) {
  std::uint64_t x = seed + index * 0x9e3779b97f4a7c15ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  return static_cast<std::uint8_t>(x >> 56);
}

// ---- per-rank results ------------------------------------------------------------

// What one rank reports. `failures` counts failed checks; the first one
// leaves its source line and three values. `count` holds test-specific
// tallies (notifications taken, messages received, ...).
struct rank_record {
  unsigned failures;
  int line;
  long long value[3];
  unsigned long long count[4];
};
static_assert(sizeof(rank_record) % 8 == 0, "records keep the area after them 8-byte aligned");

GRMA_HOST_DEVICE inline void record_failure(rank_record& rec, int line, long long a, long long b,
                                            long long c) {
  if (atomic_add(&rec.failures, 1u) != 0) return;
  rec.line = line;
  rec.value[0] = a;
  rec.value[1] = b;
  rec.value[2] = c;
}

template <class Rank>
GRMA_HOST_DEVICE rank_record& record_of(Rank& r) {
  return r.template userdata<rank_record>()[r.rank(grma::world)];
}

// The area after the ranks' records.
template <class T, class Rank>
GRMA_HOST_DEVICE T* extra_area(Rank& r) {
  return reinterpret_cast<T*>(r.template userdata<rank_record>() + r.size(grma::world));
}

// A check of a value every thread of the rank holds: counted once.
template <class Rank>
GRMA_HOST_DEVICE void expect_one(Rank& r, rank_record& rec, bool ok, int line, long long a,
                                 long long b, long long c) {
  if (!ok && r.thread() == 0) record_failure(rec, line, a, b, c);
}
#define CONF_EXPECT(r, rec, condition, a, b, c)                                                 \
  ::conformance::expect_one((r), (rec), static_cast<bool>(condition), __LINE__, (long long)(a), \
                            (long long)(b), (long long)(c))

// A check each thread makes of what it read itself: a failure counts from
// any thread (where threads may see different values, as a warp that read
// stale memory would).
#define CONF_EXPECT_EACH(rec, condition, a, b, c)                                    \
  do {                                                                               \
    if (!static_cast<bool>(condition))                                               \
      ::conformance::record_failure((rec), __LINE__, (long long)(a), (long long)(b), \
                                    (long long)(c));                                 \
  } while (0)

// Counts in rec.count[i], once per rank.
template <class Rank>
GRMA_HOST_DEVICE void tally(Rank& r, rank_record& rec, int i, unsigned long long n = 1) {
  if (r.thread() == 0) rec.count[i] += n;
}

// Bytes [first, first + bytes) of pattern `seed` into `destination`, by all
// threads; the closing sync makes them complete before a put sends them.
template <class Rank>
GRMA_HOST_DEVICE void fill(Rank& r, void* destination, std::size_t bytes, std::uint64_t seed,
                           std::size_t first = 0) {
  auto* p = static_cast<std::uint8_t*>(destination);
  for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads()))
    p[i] = pattern_byte(seed, first + i);
  r.sync_threads();
}

// Checks [data, data + bytes) against pattern `seed` from position `first`,
// by all threads, with plain loads (call it after the synchronization that
// makes the data visible). A thread that finds a wrong byte records
// (context, index, got * 256 + expected). The closing sync keeps the buffer
// from being reused while a thread still reads it.
template <class Rank>
GRMA_HOST_DEVICE void check_pattern(Rank& r, rank_record& rec, int line, const void* data,
                                    std::size_t bytes, std::uint64_t seed, std::size_t first,
                                    long long context) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = std::size_t(r.thread()); i < bytes; i += std::size_t(r.threads())) {
    const std::uint8_t expected = pattern_byte(seed, first + i);
    if (p[i] != expected) {
      record_failure(rec, line, context, (long long)i, (long long)p[i] * 256 + expected);
      break;
    }
  }
  r.sync_threads();
}
#define CONF_CHECK_PATTERN(r, rec, data, bytes, seed, first, context)                  \
  ::conformance::check_pattern((r), (rec), __LINE__, (data), (bytes), (seed), (first), \
                               (long long)(context))

// Thread 0's value of `v`, to all threads of the rank, through `cell`
// (rank-private memory): for decisions that must be uniform but come from a
// per-thread source such as the clock or a word another rank writes.
template <class T, class Rank>
GRMA_HOST_DEVICE T uniform(Rank& r, T v, T* cell) {
  r.sync_threads();
  if (r.thread() == 0) *cell = v;
  r.sync_threads();
  const T out = *static_cast<volatile T*>(cell);
  r.sync_threads();
  return out;
}
template <class Rank>
GRMA_HOST_DEVICE bool agree(Rank& r, bool v, int* cell) {
  return uniform(r, v ? 1 : 0, cell) != 0;
}

// grma::device when `device`, else grma::world. (A conditional over the two
// constants, `device ? grma::device : grma::world`, names them as objects,
// which device code cannot: they are namespace-scope constexpr structs.)
GRMA_HOST_DEVICE inline grma::comm world_or_device(bool device) {
  grma::comm c = grma::world;
  if (device) c = grma::device;
  return c;
}

// grma::device when `device` and the job has one device, else grma::world:
// for programs that address ranks of either communicator by world rank or
// rely on a device barrier ordering every rank (true only on one device).
template <class Rank>
GRMA_HOST_DEVICE grma::comm world_or_whole_device(Rank& r, bool device) {
  return world_or_device(device && r.size(grma::device) == r.size(grma::world));
}

// Rounds up to 64 bytes (a cache line). Programs take their
// buffers from one allocation where they need several: allocations of a
// device are serialized and walk the heap's blocks (first fit), so with
// thousands of ranks each one costs.
GRMA_HOST_DEVICE constexpr std::size_t round64(std::size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// ---- neighbours --------------------------------------------------------------------

// The rank `steps` places after `from` (before it for negative steps),
// cyclically in world order: the core's RMA, waits and atomics reach every
// rank, on this node or (through the network engines) another.
template <class Rank>
GRMA_HOST_DEVICE int rank_after(Rank& r, int from, int steps) {
  const int n = r.size(grma::world);
  return ((from + steps) % n + n) % n;
}

// How many ranks' symmetric memory the rank loads and stores (ptr is not
// null): its node's.
template <class Rank>
GRMA_HOST_DEVICE int node_size(Rank& r, void* symmetric) {
  int k = 0;
  for (int t = 0; t < r.size(grma::world); ++t) k += r.ptr(symmetric, t) != nullptr ? 1 : 0;
  return k;
}

// The world ranks whose userdata is rank r's copy: those of its process
// ([first, first + count): job::first and responsible) on its node, one run
// of ranks (a process that plays several nodes, GRMA_NODES, gives each node
// its own copy).
struct rank_span {
  int first;
  int count;
  GRMA_HOST_DEVICE bool holds(int rank) const { return rank >= first && rank < first + count; }
};
template <class Rank>
GRMA_HOST_DEVICE rank_span userdata_sharers(const Rank& r, int first, int count) {
  const int node = r.team_size(grma::team_node);
  const int low = max_of(first, r.team_translate(grma::team_node, 0, grma::team_world));
  const int high =
      min_of(first + count, r.team_translate(grma::team_node, node - 1, grma::team_world) + 1);
  return {low, high - low};
}

// ---- one warp of a rank ------------------------------------------------------------

// Which of a rank's threads make one_warp's calls: the last whole warp, so
// that neither its lane numbers nor its leader are the block's where the
// rank has two whole warps or more. The others (the workers) each write a
// word of their own meanwhile. A rank of fewer threads than a warp has no
// one_warp() (`has_warp` false: the programs leave that part out). On the
// CPU backend the rank's one thread is its warp and does both parts.
struct warp_split {
  bool has_warp;  // the rank has a whole warp
  bool alone;     // the same threads do both parts
  int first;      // the calling warp's first thread
  int size;       // its threads
  bool calls;     // this thread is in the calling warp

  template <class Rank, class Warp>
  GRMA_HOST_DEVICE warp_split(const Rank& r, const Warp& warp)
      : has_warp(r.threads() >= warp.threads()),
        alone(r.threads() == warp.threads()),
        first(has_warp ? (r.threads() / warp.threads() - 1) * warp.threads() : 0),
        size(warp.threads()),
        calls(has_warp && r.thread() >= first && r.thread() < first + size) {}

  // A thread's word for `round`, written while the warp communicates.
  template <class Rank>
  GRMA_HOST_DEVICE void work(const Rank& r, std::uint64_t* words, int round) const {
    if (alone || !calls)
      words[r.thread()] =
          mix(std::uint64_t(r.rank(grma::world)), std::uint64_t(round), std::uint64_t(r.thread()));
  }

  // After a sync_threads: another thread's word (a worker's, where the rank
  // has workers) is the one it wrote for `round`.
  template <class Rank>
  GRMA_HOST_DEVICE void check_work(const Rank& r, rank_record& rec, const std::uint64_t* words,
                                   int round) const {
    int other = (r.thread() + 1) % r.threads();
    if (!alone && has_warp) {
      // The workers are the threads before the calling warp and after it.
      const int workers = r.threads() - size;
      other = (r.thread() + 1) % workers;
      if (other >= first) other += size;
    }
    const std::uint64_t expected =
        mix(std::uint64_t(r.rank(grma::world)), std::uint64_t(round), std::uint64_t(other));
    if (words[other] != expected)
      record_failure(rec, __LINE__, round, other, (long long)words[other]);
  }
};

// ---- groups ----------------------------------------------------------------------

// Ranks split into ceil(n / limit) groups of at most `limit` members, strided
// (group of rank k = k mod groups), so all-to-all patterns stay bounded in
// queue use and memory while every rank of a large job takes part.
struct group {
  int n;       // ranks
  int groups;  // how many groups
  int id;      // this rank's group
  int size;    // members of this group
  int index;   // this rank's index in it

  GRMA_HOST_DEVICE group(int rank, int ranks, int limit) : n(ranks) {
    groups = (ranks + limit - 1) / limit;
    id = rank % groups;
    size = (ranks - id + groups - 1) / groups;
    index = rank / groups;
  }
  GRMA_HOST_DEVICE int member(int i) const { return id + i * groups; }
  // The largest group (all ranks run the same number of steps).
  GRMA_HOST_DEVICE int max_size() const { return (n + groups - 1) / groups; }
};

// ---- buffers -------------------------------------------------------------------------

// Above this many ranks, programs take their buffers from userdata instead of
// r.alloc: allocations of a device are serialized and walk the heap (first
// fit), and with thousands of ranks one allocation each took seconds on an
// H200. Userdata ranges may be registered in windows like allocated ones.
inline constexpr int alloc_rank_limit = 2048;

// Where a rank program takes its buffers: r.alloc (slice 0), or its slice of
// userdata, `slice` bytes per rank from `offset` on.
struct buffers {
  std::size_t slice = 0;
  std::size_t offset = 0;

  template <class T, class Rank>
  GRMA_HOST_DEVICE T* get(Rank& r, std::size_t bytes) const {
    if (slice == 0) return static_cast<T*>(r.alloc(bytes));
    GRMA_ASSERT(r, bytes <= slice);
    return reinterpret_cast<T*>(static_cast<unsigned char*>(r.userdata()) + offset +
                                std::size_t(r.rank(grma::world)) * slice);
  }
  template <class Rank>
  GRMA_HOST_DEVICE void release(Rank& r, void* pointer) const {
    if (slice == 0) r.free(pointer);
  }
};

// ---- the host side ------------------------------------------------------------------

// A point of the test matrix: ranks per device; 0 means "as many as fit"
// (on the CPU backend: cpu_max_ranks), settings_ranks leaves the launch
// options' ranks_per_device 0, so the runtime's settings decide.
struct config {
  int ranks;
  int threads;
};
inline constexpr int cpu_max_ranks = 16;
inline constexpr int settings_ranks = -1;

inline std::string ranks_name(int ranks) {
  return ranks == 0 ? std::string("max") : ranks < 0 ? std::string("settings") : std::to_string(ranks);
}

inline void PrintTo(const config& c, std::ostream* out) {
  *out << "ranks " << ranks_name(c.ranks) << ", threads " << c.threads;
}

inline std::string config_name(const testing::TestParamInfo<config>& info) {
  return "ranks" + ranks_name(info.param.ranks) + "_threads" + std::to_string(info.param.threads);
}

// Settings from the GRMA_* environment (GRMA_BACKEND picks the backend), with
// a watchdog that turns a hang into a failure.
inline grma::settings suite_settings() {
  grma::settings s = grma::settings::from_environment();
  s.timeout_seconds = 30;
  // A GPU runs thousands of ranks of 32 threads: the symmetric heap's
  // default would leave each a slice of 12 KiB, less than the suites'
  // blocks over the whole job need.
  try {
    if (grma::runtime(s).backend() == grma::backend_kind::cuda) s.symmetric_size = std::uint64_t(2) << 30;
  } catch (const grma::error&) {  // no GPU for GRMA_BACKEND=cuda: the test's runtime says so
  }
  return s;
}

// The suite's settings with rings of at least `slots` (a power of two), for
// a case whose ranks send more before a barrier than a smaller ring holds:
// with less (GRMA_QUEUE_CAPACITY may be as low as 1) the queue's contract
// blocks the senders there.
inline grma::settings with_ring_room(std::uint32_t slots) {
  grma::settings s = suite_settings();
  if (s.queue_capacity < slots) s.queue_capacity = slots;
  return s;
}

// The backend a runtime with the suite's settings would use; cuda when that
// cannot be told (GRMA_BACKEND=cuda without a GPU: the tests then fail when
// they create their runtime).
inline grma::backend_kind suite_backend() {
  try {
    return grma::runtime(suite_settings()).backend();
  } catch (const grma::error&) {
    return grma::backend_kind::cuda;
  }
}

// The matrix per backend. On the CPU a rank is one thread whatever is asked,
// and the machine may have two cores: few, small points.
inline std::vector<config> suite_configs() {
  std::vector<config> c;
  if (suite_backend() == grma::backend_kind::cpu) {
    for (int ranks : {2, 3, 8, 0}) c.push_back({ranks, 1});
  } else {
    // CONFORMANCE_THREADS (a comma list) runs the suite at other shapes.
    std::vector<int> shapes{32, 128, 256, 1024};
    if (const char* forced = std::getenv("CONFORMANCE_THREADS")) {
      shapes.clear();
      for (const char* p = forced; *p != '\0';) {
        char* end = nullptr;
        const long threads = std::strtol(p, &end, 10);
        if (end == p) break;
        shapes.push_back(int(threads));
        p = *end == ',' ? end + 1 : end;
      }
    }
    for (int ranks : {2, 3, 8, 64, 0})
      for (int threads : shapes) c.push_back({ranks, threads});
  }
  return c;
}

// Heap bytes a rank may use when all share the default heap evenly, with
// half of it kept for the runtime's own blocks and the allocator's headers.
inline std::size_t rank_budget(const grma::runtime& rt, int ranks) {
  return std::size_t(rt.settings().heap_size / 2) / std::size_t(ranks);
}

// One run of a rank program at a point of the matrix, with userdata holding a
// record per rank, `extra_bytes` after them and, where buffers come from
// userdata, a slice per rank.
class job {
 public:
  job(grma::runtime& rt, config c) : rt_(rt), config_(c) {}

  // The world size a run of `program` will have: the matrix point's ranks on
  // each device of the job (GRMA_DEVICES).
  template <class Program>
  int resolve(const Program& program) {
    per_device_ = 0;  // settings_ranks, and "as many as fit" on a GPU
    if (config_.ranks > 0)
      per_device_ = config_.ranks;
    else if (config_.ranks == 0 && rt_.backend() == grma::backend_kind::cpu)
      per_device_ = cpu_max_ranks;
    const grma::rank_info info =
        rt_.info(program, {.threads_per_rank = config_.threads,
                           .ranks_per_device = per_device_,
                           .host_access = host_access});
    per_device_ = info.ranks_per_device;
    ranks_ = info.rank_count;
    first_ = info.rank_start;
    responsible_ = info.rank_responsible;
    testing::Test::RecordProperty("ranks", ranks_);  // in --gtest_output=xml reports
    return ranks_;
  }
  int ranks() const { return ranks_; }
  int ranks_per_device() const { return per_device_; }
  // The world ranks this process runs (all of them unless under mpirun).
  int first() const { return first_; }
  int responsible() const { return responsible_; }
  int threads() const { return rt_.backend() == grma::backend_kind::cpu ? 1 : config_.threads; }
  // Whether a rank has one_warp(): a whole warp on a GPU; a CPU rank is its own.
  bool has_warp() const {
    return rt_.backend() == grma::backend_kind::cpu || config_.threads >= 32;
  }
  // A rank's bytes of the symmetric heap (GRMA_SYMMETRIC_SIZE over the
  // device's ranks, whole pages).
  std::size_t symmetric_slice() const {
    return std::size_t(rt_.settings().symmetric_size) / std::size_t(per_device_) / 4096 * 4096;
  }

  // Whether buffers come from userdata (see `buffers`); also forced with
  // CONFORMANCE_USERDATA_BUFFERS=1, to run that path at any size.
  bool userdata_buffers() const {
    const char* forced = std::getenv("CONFORMANCE_USERDATA_BUFFERS");
    return ranks_ > alloc_rank_limit || (forced != nullptr && std::strcmp(forced, "1") == 0);
  }

  // Allocates zeroed userdata: the records, `extra_bytes`, and where buffers
  // come from userdata a slice of `buffer_bytes` per rank. Returns where
  // ranks take their buffers.
  buffers prepare(std::size_t extra_bytes = 0, std::size_t buffer_bytes = 0) {
    buffers b{};
    std::size_t total = records_bytes() + extra_bytes;
    if (buffer_bytes != 0 && userdata_buffers()) {
      b.offset = round64(total);
      b.slice = round64(buffer_bytes);
      total = b.offset + std::size_t(ranks_) * b.slice;
    }
    userdata_bytes_ = total;
    data_.assign((total + 7) / 8, 0);
    return b;
  }
  std::size_t userdata_bytes() const { return userdata_bytes_; }
  template <class T>
  T* extra() {
    return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(data_.data()) + records_bytes());
  }
  rank_record& record(int rank) { return reinterpret_cast<rank_record*>(data_.data())[rank]; }
  void clear_records() { std::memset(data_.data(), 0, records_bytes()); }

  // Runs `program` (resolve and prepare first); true when the run returned
  // normally. A failed run is a test failure with the error's text.
  template <class Program>
  bool run(const Program& program) {
    try {
      rt_.run(program, options());
      return true;
    } catch (const grma::error& e) {
      ADD_FAILURE() << "the run failed: " << e.what();
      return false;
    }
  }

  grma::launch_options options() {
    return {.threads_per_rank = config_.threads,
            .ranks_per_device = per_device_,
            .userdata = data_.data(),
            .userdata_size = userdata_bytes_,
            .host_access = host_access};
  }

  // Runs take host operations (launch_options::host_access); set before resolve.
  bool host_access = false;

  // A test failure for every rank of this process whose checks failed (the
  // first few shown).
  void expect_no_failures(const char* file) {
    int failing = 0;
    for (int rank = first_; rank < first_ + responsible_; ++rank) {
      const rank_record& rec = record(rank);
      if (rec.failures == 0) continue;
      if (++failing <= 8)
        ADD_FAILURE() << "rank " << rank << " of " << ranks_ << ": " << rec.failures
                      << " failed check(s); the first at " << file << ":" << rec.line
                      << " with values " << rec.value[0] << ", " << rec.value[1] << ", "
                      << rec.value[2];
    }
    if (failing > 8) ADD_FAILURE() << failing << " ranks in all had failed checks";
  }

  // rec.count[i] of each rank of this process against expected(rank); the
  // first few differences shown.
  template <class Expected>
  void expect_counts(int i, Expected&& expected, const char* what) {
    int wrong = 0;
    for (int rank = first_; rank < first_ + responsible_; ++rank) {
      const unsigned long long want = expected(rank);
      if (record(rank).count[i] == want) continue;
      if (++wrong <= 8)
        ADD_FAILURE() << "rank " << rank << " of " << ranks_ << ": " << what << " "
                      << record(rank).count[i] << ", expected " << want;
    }
    if (wrong > 8) ADD_FAILURE() << wrong << " ranks in all had wrong " << what;
  }

 private:
  std::size_t records_bytes() const { return std::size_t(ranks_) * sizeof(rank_record); }

  grma::runtime& rt_;
  config config_;
  int ranks_ = 0;  // world
  // This process's ranks (under mpirun each process checks its own; their
  // records are in its userdata).
  int first_ = 0;
  int responsible_ = 0;
  int per_device_ = 0;
  std::size_t userdata_bytes_ = 0;
  std::vector<std::uint64_t> data_;
};

}  // namespace conformance
