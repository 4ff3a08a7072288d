// The runtime around the ranks, portable: userdata in and back, the job
// layout, several runs in one runtime (ranks_per_device 0 meaning the
// settings' count), the heap, overlapping windows and no-copy access, and the
// log. What needs the host beyond one run at a time (two runtimes at once,
// launch, failing runs) is tests/integration/test_runtime.cpp's.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace conformance {
namespace {

class Runtime : public testing::TestWithParam<config> {};

// ---- userdata --------------------------------------------------------------------------------

// After the records: input[n], output[n] (ints), then exchanged[n] and
// where[n] (words), then guard_words words no rank writes.
constexpr int guard_words = 8;
struct userdata_layout {
  int* input;
  int* output;
  std::uint64_t* exchanged;
  std::uint64_t* where;  // r.userdata() as the rank saw it
  std::uint64_t* guard;
};
GRMA_HOST_DEVICE inline std::size_t userdata_extra_bytes(int n) {
  return (2 * std::size_t(n) * sizeof(int) + 7) / 8 * 8 +
         (2 * std::size_t(n) + guard_words) * sizeof(std::uint64_t);
}
GRMA_HOST_DEVICE inline userdata_layout userdata_parts(void* area, int n) {
  auto* base = static_cast<unsigned char*>(area);
  auto* words = reinterpret_cast<std::uint64_t*>(base + (2 * std::size_t(n) * sizeof(int) + 7) / 8 * 8);
  return {reinterpret_cast<int*>(base), reinterpret_cast<int*>(base) + n, words, words + n,
          words + 2 * n};
}

// Userdata is copied into the run (the ranks see a copy, not the host's
// buffer), changed there, and copied back after it. Ranks register their
// part of userdata in a window and receive puts there.
struct userdata_round_trip {
  int run;
  std::size_t expected_size;
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const userdata_layout d = userdata_parts(extra_area<unsigned char>(r), n);
    CONF_EXPECT(r, rec, r.userdata_size() == expected_size, 0, r.userdata_size(), expected_size);
    const int input = d.input[me];
    const int output = d.output[me];
    CONF_EXPECT(r, rec, input == 1000 + me + run, 1, input, 0);
    CONF_EXPECT(r, rec, output == (run == 0 ? -1 : 2 * (1000 + me + run - 1)), 2, output, 0);
    r.sync_threads();  // every thread has read them before they change
    if (r.thread() == 0) {
      d.output[me] = 2 * input;
      d.input[me] = input + 1;
      d.where[me] = reinterpret_cast<std::uintptr_t>(r.userdata());
    }
    grma::window w = r.window_create(grma::world, &d.exchanged[me], sizeof(std::uint64_t));
    auto* outgoing = mem.get<std::uint64_t>(r, sizeof(std::uint64_t));
    if (r.thread() == 0) *outgoing = mix(std::uint64_t(me), std::uint64_t(run));
    r.sync_threads();
    r.put_notify(w, (me + 1) % n, 0, sizeof(std::uint64_t), outgoing, 0);
    r.wait_notifications(w, (me + n - 1) % n, 0, 1);
    tally(r, rec, 0);
    r.window_free(w);
    mem.release(r, outgoing);
  }
};

TEST_P(Runtime, UserdataCopiedInAndBack) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(userdata_round_trip{});
  const buffers mem = j.prepare(userdata_extra_bytes(n), sizeof(std::uint64_t));
  const userdata_layout d = userdata_parts(j.extra<unsigned char>(), n);
  for (int i = 0; i < n; ++i) {
    d.input[i] = 1000 + i;
    d.output[i] = -1;
  }
  for (int k = 0; k < guard_words; ++k) d.guard[k] = mix(7, std::uint64_t(k));
  const auto host_buffer = reinterpret_cast<std::uintptr_t>(j.options().userdata);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    j.clear_records();
    if (!j.run(userdata_round_trip{run, j.userdata_bytes(), mem})) return;
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "notifications");
    for (int i = 0; i < n; ++i) {
      if (i >= j.first() && i < j.first() + j.responsible()) {
        EXPECT_EQ(d.input[i], 1000 + i + run + 1) << "rank " << i;
        EXPECT_EQ(d.output[i], 2 * (1000 + i + run)) << "rank " << i;
        EXPECT_EQ(d.exchanged[i], mix(std::uint64_t((i + n - 1) % n), std::uint64_t(run)))
            << "rank " << i;
        EXPECT_NE(d.where[i], 0u) << "rank " << i;
        EXPECT_NE(d.where[i], host_buffer) << "rank " << i << " ran on the host's buffer, not a copy";
      } else {  // another process's rank: it changed that process's userdata, not this one's
        EXPECT_EQ(d.input[i], 1000 + i) << "rank " << i;
        EXPECT_EQ(d.output[i], -1) << "rank " << i;
        EXPECT_EQ(d.exchanged[i], 0u) << "rank " << i;
        EXPECT_EQ(d.where[i], 0u) << "rank " << i;
      }
    }
    for (int k = 0; k < guard_words; ++k)
      EXPECT_EQ(d.guard[k], mix(7, std::uint64_t(k))) << "guard word " << k << " after the entries";
  }
}

// ---- the layout ----------------------------------------------------------------------------

// info() describes the layout a run has, and every thread of every rank runs
// the program: count[1] counts the threads.
// World ranks go device by device (GRMA_DEVICES).
struct layout_check {
  int ranks;  // in the world
  int per_device;
  int threads;
  std::size_t userdata_size;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    CONF_EXPECT(r, rec, r.size(grma::world) == ranks, 0, r.size(grma::world), ranks);
    CONF_EXPECT(r, rec, r.size(grma::device) == per_device, 1, r.size(grma::device), per_device);
    CONF_EXPECT(r, rec, r.rank(grma::device) == me % per_device, 2, r.rank(grma::device), me);
    CONF_EXPECT(r, rec, r.threads() == threads, 3, r.threads(), threads);
    CONF_EXPECT(r, rec, r.userdata_size() == userdata_size, 5, r.userdata_size(), userdata_size);
    if (r.thread() < 0 || r.thread() >= r.threads())
      record_failure(rec, __LINE__, 4, r.thread(), 0);
    atomic_add(&rec.count[1], 1ull);
    tally(r, rec, 0);
    r.barrier(grma::device);
    r.barrier(grma::world);
  }
};

// A run without userdata sees none.
struct without_userdata {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    GRMA_ASSERT(r, r.userdata_size() == 0);
    r.barrier(grma::world);
  }
};

int environment_int(const char* name, int otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : otherwise;
}

// The layout info() must give this process, from what the launcher and
// tests/conformance/CMakeLists.txt tell it: process p of P (mpirun's
// OMPI_COMM_WORLD_RANK and _SIZE, or PMI_RANK and PMI_SIZE; 0 of 1 without
// it), on node p mod CONFORMANCE_NODES (the jobs across nodes give process p
// the node id node<p mod nodes>; 1 node without), GRMA_DEVICES devices per
// process (or, where one process plays every node, GRMA_NODES nodes).
// per_device: the ranks per device asked for; 0: whatever fits.
void expect_layout(const grma::runtime& rt, const grma::rank_info& info, int per_device,
                   int threads) {
  const int processes = environment_int("OMPI_COMM_WORLD_SIZE", environment_int("PMI_SIZE", 1));
  const int process = environment_int("OMPI_COMM_WORLD_RANK", environment_int("PMI_RANK", 0));
  const int nodes = environment_int("CONFORMANCE_NODES", 1);
  // A process that plays several nodes (GRMA_NODES) splits its devices
  // evenly among them and describes itself as on the first.
  const int played = rt.settings().nodes;
  EXPECT_EQ(info.process_count, processes);
  EXPECT_EQ(info.process_index, process);
  EXPECT_EQ(info.node_count, nodes);
  EXPECT_EQ(info.node_index, process % nodes);
  int on_my_node = 0, before_me = 0;  // processes on this process's node, and those before it
  for (int q = 0; q < processes; ++q)
    if (q % nodes == process % nodes) {
      ++on_my_node;
      if (q < process) ++before_me;
    }
  // GRMA_DEVICES=0: every GPU, as many as the process sees.
  int devices = rt.settings().devices;
  if (rt.backend() == grma::backend_kind::cpu) devices = std::max(1, devices);
  if (devices == 0) {
    EXPECT_EQ(info.device_count % on_my_node, 0) << "device_count " << info.device_count;
    devices = info.device_count / on_my_node;
  }
  EXPECT_EQ(info.device_count, devices * on_my_node / played);
  EXPECT_EQ(info.device_index, devices * before_me);
  if (per_device != 0)
    EXPECT_EQ(info.ranks_per_device, per_device);
  else
    EXPECT_GE(info.ranks_per_device, 1);
  EXPECT_EQ(info.threads_per_rank, threads);
  EXPECT_EQ(info.rank_responsible, info.ranks_per_device * devices);
  EXPECT_EQ(info.rank_count, info.rank_responsible * processes);
  EXPECT_EQ(info.rank_start, process * info.rank_responsible);
}

// The backend is the one the settings name (automatic: either).
void expect_backend(const grma::runtime& rt) {
  switch (rt.settings().backend) {
    case grma::backend_kind::cpu:
      EXPECT_EQ(rt.backend(), grma::backend_kind::cpu);
      break;
    case grma::backend_kind::cuda:
      EXPECT_EQ(rt.backend(), grma::backend_kind::cuda);
      break;
    case grma::backend_kind::automatic:
      EXPECT_NE(rt.backend(), grma::backend_kind::automatic);
      break;
  }
}

// info() for `requested` ranks per device (settings_ranks: the options say
// 0), checked against the layout above and then against a run of
// layout_check; `per_device` is what the request must resolve to.
void check_layout(grma::runtime& rt, config requested, int per_device) {
  const bool cpu = rt.backend() == grma::backend_kind::cpu;
  int asked = 0;  // settings_ranks, and "as many as fit" on a GPU (as job::resolve asks)
  if (requested.ranks > 0)
    asked = requested.ranks;
  else if (requested.ranks == 0 && cpu)
    asked = cpu_max_ranks;
  const grma::rank_info info = rt.info(
      layout_check{}, {.threads_per_rank = requested.threads, .ranks_per_device = asked});
  expect_layout(rt, info, per_device, cpu ? 1 : requested.threads);
  job j(rt, requested);
  EXPECT_EQ(j.resolve(layout_check{}), info.rank_count) << "the job resolves as info() says";
  const int n = info.rank_count;
  j.prepare();
  if (j.run(layout_check{n, info.ranks_per_device, info.threads_per_rank, j.userdata_bytes()})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks started");
    j.expect_counts(
        1, [&](int) { return unsigned(info.threads_per_rank); }, "threads started");
  }
}

TEST_P(Runtime, InfoDescribesTheJob) {
  grma::runtime rt(suite_settings());
  expect_backend(rt);
  const config c = GetParam();
  int per_device = c.ranks;  // 0 on a GPU: whatever fits
  if (c.ranks == 0 && rt.backend() == grma::backend_kind::cpu) per_device = cpu_max_ranks;
  check_layout(rt, c, per_device);
}

// ---- several runs ----------------------------------------------------------------------------

constexpr int leftover_group = 16;

// A small exchange in groups of up to 16 that checks its data; then it
// leaves a notification, a window and memory behind for the next run to
// ignore. The first check: nothing from an earlier run is queued.
struct leftovers {
  int salt;
  buffers mem;
  int ranks;  // the world size the run must have

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    constexpr std::size_t block = 256;
    constexpr int rounds = 3;
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    CONF_EXPECT(r, rec, n == ranks, 2, n, ranks);
    grma::window left_open = r.window_create(grma::world, nullptr, 0);
    CONF_EXPECT(r, rec, !r.test_notifications(left_open, grma::any_source, grma::any_tag), 0, 0, 0);
    const group g(me, n, leftover_group);
    auto* inbox = mem.get<std::uint8_t>(r, round64(std::size_t(g.size) * block) + block);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(inbox) +
                                                   round64(std::size_t(g.size) * block));
    grma::window w = r.window_create(grma::world, inbox, std::size_t(g.size) * block);
    for (int round = 0; round < rounds; ++round) {
      for (int k = 0; k < g.size; ++k) {
        const int target = g.member((g.index + k) % g.size);
        fill(r, outbox, block,
             mix(std::uint64_t(salt), std::uint64_t(me * 100000 + target), std::uint64_t(round)));
        r.put_notify(w, target, std::size_t(g.index) * block, block, outbox, round);
      }
      r.wait_notifications(w, grma::any_source, round, g.size);
      tally(r, rec, 0, unsigned(g.size));
      for (int i = 0; i < g.size; ++i)
        CONF_CHECK_PATTERN(r, rec, inbox + std::size_t(i) * block, block,
                           mix(std::uint64_t(salt), std::uint64_t(g.member(i) * 100000 + me),
                               std::uint64_t(round)),
                           0, round * 100000 + g.member(i));
      r.barrier(grma::world);
    }
    CONF_EXPECT(r, rec, !r.test_notifications(w, grma::any_source, grma::any_tag), 1, 0, 0);
    r.window_free(w);
    // Left behind: the inbox, an open window, a notification on it and
    // (where buffers are allocated) another block.
    r.put_notify(left_open, (me + 1) % n, 0, 0, nullptr, 1);
    if (mem.slice == 0) r.alloc(1000);
  }
};

// One run of `leftovers` at `c`; true when it ran.
bool run_leftovers(grma::runtime& rt, config c, int salt) {
  job j(rt, c);
  const int n = j.resolve(leftovers{});
  SCOPED_TRACE("ranks " + std::to_string(n) + ", threads " + std::to_string(c.threads));
  const buffers mem = j.prepare(0, round64(leftover_group * 256) + 256);
  if (!j.run(leftovers{salt, mem, n})) return false;
  j.expect_no_failures(__FILE__);
  j.expect_counts(
      0, [&](int rank) { return 3ull * unsigned(group(rank, n, leftover_group).size); },
      "notifications");
  return true;
}

// One runtime, one run at each point of the matrix in turn, up and back
// down (rank and thread counts change between runs; smaller runs follow
// larger ones). A run starts clean: what the previous run left behind is gone.
TEST(RuntimeRuns, SeveralRunsInOneRuntime) {
  grma::runtime rt(suite_settings());
  const std::vector<config> up = suite_configs();
  std::vector<config> walk = up;
  walk.insert(walk.end(), up.rbegin() + 1, up.rend());
  int salt = 0;
  for (const config& c : walk) run_leftovers(rt, c, ++salt);
}

// ranks_per_device 0 in the launch options means the settings' count: runs
// of it between runs of other counts, down to one rank per device, each as
// info() describes it; and a run without userdata sees none.
TEST(RuntimeRuns, RanksPerDeviceZeroMeansTheSettings) {
  constexpr int from_settings = 5;
  grma::settings s = suite_settings();
  s.ranks_per_device = from_settings;
  grma::runtime rt(s);
  expect_backend(rt);
  EXPECT_EQ(rt.settings().ranks_per_device, from_settings);
  const int threads = suite_configs().front().threads;
  int salt = 100;
  for (int ranks : {settings_ranks, 1, 7, settings_ranks, 2, 1}) {
    SCOPED_TRACE("ranks_per_device " + ranks_name(ranks));
    const config c{ranks, threads};
    check_layout(rt, c, ranks == settings_ranks ? from_settings : ranks);
    run_leftovers(rt, c, ++salt);
  }
  try {
    rt.run(without_userdata{}, {.threads_per_rank = threads});
  } catch (const grma::error& e) {
    ADD_FAILURE() << "the run without userdata failed: " << e.what();
  }
}

// ---- the heap ------------------------------------------------------------------------------

// The first `active` ranks allocate and free blocks of many sizes, keeping
// several alive and filled with their own pattern; a block that overlapped
// another (of this rank or any other) would lose its pattern. Afterwards the
// heap is whole again: one block of nearly all of it fits.
struct alloc_free {
  int active;
  int operations;
  std::size_t max_block;
  std::size_t whole;  // allocated by rank 0 at the end

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    constexpr int live_blocks = 8;
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    std::uint8_t* pointer[live_blocks] = {};
    std::size_t bytes[live_blocks] = {};
    std::uint64_t seed[live_blocks] = {};
    const int my_operations = me < active ? operations : 0;
    for (int op = 0; op < my_operations; ++op) {
      const int b = int(mix(std::uint64_t(me), std::uint64_t(op)) % live_blocks);
      if (pointer[b] != nullptr) {
        CONF_CHECK_PATTERN(r, rec, pointer[b], bytes[b], seed[b], 0, op);
        r.free(pointer[b]);
      }
      bytes[b] =
          op % 97 == 0 ? 0 : 1 + std::size_t(mix(std::uint64_t(op), std::uint64_t(me)) % max_block);
      seed[b] = mix(std::uint64_t(me), std::uint64_t(op), 5);
      pointer[b] = static_cast<std::uint8_t*>(r.alloc(bytes[b]));
      CONF_EXPECT(r, rec, pointer[b] != nullptr, op, bytes[b], 0);
      CONF_EXPECT(r, rec, reinterpret_cast<std::uintptr_t>(pointer[b]) % 256 == 0, op, bytes[b], 1);
      fill(r, pointer[b], bytes[b], seed[b]);
      tally(r, rec, 0);
    }
    for (int b = 0; b < live_blocks; ++b) {
      CONF_CHECK_PATTERN(r, rec, pointer[b], bytes[b], seed[b], 0, -1);
      r.free(pointer[b]);
    }
    r.free(nullptr);  // allowed, does nothing
    r.barrier(grma::world);
    if (me == 0) {
      void* all = r.alloc(whole);
      CONF_EXPECT(r, rec, all != nullptr, -2, whole, 0);
      r.free(all);
    }
    r.barrier(grma::world);
  }
};

TEST_P(Runtime, AllocAndFreeManyTimes) {
  grma::settings s = suite_settings();
  s.heap_size = std::uint64_t(16) << 20;
  grma::runtime rt(s);
  job j(rt, GetParam());
  const int n = j.resolve(alloc_free{});
  // Eight live blocks per rank within a quarter of the heap. Allocations are
  // serialized and slow with many ranks (on an H200, 64 ranks x 1500
  // operations took 5 s; with 4224 ranks resident, 64 of them allocating,
  // one allocation took 2.5 ms): about 16000 in all, by at most 256 ranks,
  // and 512 by 64 ranks where there are thousands.
  const bool crowded = n > alloc_rank_limit;
  const int active = crowded ? 64 : min_of(n, 256);
  const alloc_free program{
      active, crowded ? 8 : clamp_to(16000 / active, 8, 1500),
      clamp_to<std::size_t>((s.heap_size / 4) / std::size_t(active) / 8, 64, 20000),
      (std::size_t(15) << 20) + (std::size_t(1) << 19)};
  j.prepare();
  if (j.run(program)) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [&](int rank) { return rank < active ? unsigned(program.operations) : 0u; },
        "allocations");
  }
}

// ---- blocks shared by a device's ranks ----------------------------------------------------------

constexpr std::size_t shared_part = 256;

// alloc_shared gives every rank of a device the same block: each rank fills
// its part and, after a device barrier, finds the others' parts there. Windows
// over neighbouring parts overlap, so a put of a rank's own part into its
// lower neighbour's window lands where it already is (no copy) and notifies.
// The block is returned with free_shared and can be had again.
struct shared_blocks {
  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::device), n = r.size(grma::device);
    const int world_me = r.rank(grma::world);
    const std::size_t bytes = std::size_t(n) * shared_part;
    for (int round = 0; round < 2; ++round) {
      auto* block = static_cast<std::uint8_t*>(r.alloc_shared(bytes));
      CONF_EXPECT(r, rec, reinterpret_cast<std::uintptr_t>(block) % 256 == 0, round, 0, 0);
      auto* mine = static_cast<std::uint8_t*>(r.alloc(64));  // not inside the block
      CONF_EXPECT(r, rec, mine + 64 <= block || mine >= block + bytes, round, me, 1);
      std::uint8_t* part = block + std::size_t(me) * shared_part;
      const auto seed = [&](int rank) { return mix(std::uint64_t(world_me - me + rank), std::uint64_t(round)); };
      fill(r, part, shared_part, seed(me));
      r.barrier(grma::device);
      for (int other = 0; other < n; ++other)
        CONF_CHECK_PATTERN(r, rec, block + std::size_t(other) * shared_part, shared_part, seed(other),
                           0, round * 1000 + other);
      r.barrier(grma::device);
      // My part and my upper neighbour's: overlapping windows.
      grma::window w = r.window_create(grma::device, part, me + 1 < n ? 2 * shared_part : shared_part);
      fill(r, part, shared_part, seed(me) + 7);
      if (me > 0) r.put_notify(w, me - 1, shared_part, shared_part, part, 5);
      if (me + 1 < n) {
        r.wait_notifications(w, me + 1, 5, 1);
        CONF_CHECK_PATTERN(r, rec, part + shared_part, shared_part, seed(me + 1) + 7, 0, round * 1000 + 999);
      }
      r.window_free(w);
      r.free(mine);
      r.free_shared(block);
      tally(r, rec, 0);
    }
  }
};

TEST_P(Runtime, BlocksSharedByADevicesRanks) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(shared_blocks{});
  j.prepare();
  if (j.run(shared_blocks{})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 2u; }, "rounds");
  }
}

// ---- overlapping windows and no-copy access ----------------------------------------------------

constexpr std::size_t overlap_bytes = 4096, overlap_half = overlap_bytes / 2;

// Windows may overlap: a put through one window lands in memory that another
// window (over the same or an overlapping range) shows, and its notification
// belongs to the window it was made through (a notification on the wrong
// window would hang a wait or be left over). A put or get whose source and
// destination are the same address copies nothing and still notifies. Ranks
// learn each other's buffers through userdata (one word per rank).
struct overlapping_windows {
  buffers mem;
  // Ranks of this process (all, unless under mpirun): pointers into their
  // memory mean the same to each other, and those on its node share its
  // userdata (a process that plays several nodes gives each its copy).
  int local_first;
  int local_count;

  template <class Rank>
  GRMA_HOST_DEVICE bool local(const Rank& r, int rank) const {
    return userdata_sharers(r, local_first, local_count).holds(rank);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void no_notification_left(Rank& r, rank_record& rec,
                                             const grma::window (&windows)[3], int when) const {
    for (int i = 0; i < 3; ++i)
      CONF_EXPECT(r, rec, !r.test_notifications(windows[i], grma::any_source, grma::any_tag), when,
                  i, 0);
  }

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world), n = r.size(grma::world);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    auto* buffer = mem.get<std::uint8_t>(r, round64(overlap_bytes) + 512);
    auto* outbox = reinterpret_cast<std::uint8_t*>(reinterpret_cast<unsigned char*>(buffer) +
                                                   round64(overlap_bytes));
    std::uint64_t* buffers = extra_area<std::uint64_t>(r);
    if (r.thread() == 0) buffers[me] = reinterpret_cast<std::uintptr_t>(buffer);
    const grma::window whole = r.window_create(grma::world, buffer, overlap_bytes);
    const grma::window upper = r.window_create(grma::world, buffer + overlap_half, overlap_half);
    const grma::window same = r.window_create(world_or_whole_device(r, true), buffer, overlap_bytes);
    const grma::window windows[3] = {whole, upper, same};

    // Through `whole` into the upper half; seen through `upper`.
    fill(r, outbox, 300, mix(std::uint64_t(me), 1));
    r.put_notify(whole, right, overlap_half + 100, 300, outbox, 1);
    r.wait_notifications(whole, left, 1, 1);
    CONF_CHECK_PATTERN(r, rec, buffer + overlap_half + 100, 300, mix(std::uint64_t(left), 1), 0, 1);

    // Through `upper`, past what the first put wrote; then through `same`,
    // which spans exactly what `whole` spans.
    fill(r, outbox, 200, mix(std::uint64_t(me), 2));
    r.put_notify(upper, right, 400, 200, outbox, 2);
    fill(r, outbox, 50, mix(std::uint64_t(me), 3));
    r.put_notify(same, right, 10, 50, outbox, 3);
    r.wait_notifications(upper, left, 2, 1);
    r.wait_notifications(same, left, 3, 1);
    CONF_CHECK_PATTERN(r, rec, buffer + overlap_half + 400, 200, mix(std::uint64_t(left), 2), 0, 2);
    CONF_CHECK_PATTERN(r, rec, buffer + 10, 50, mix(std::uint64_t(left), 3), 0, 3);
    r.barrier(grma::world);
    no_notification_left(r, rec, windows, 10);
    r.barrier(grma::world);

    // No copy: to myself from the very bytes the put targets.
    fill(r, buffer, overlap_bytes, mix(std::uint64_t(me), 4));
    r.put_notify(whole, me, 64, 500, buffer + 64, 4);
    r.wait_notifications(whole, me, 4, 1);
    r.get_notify(same, me, 700, 300, buffer + 700, 5);
    r.wait_notifications(same, me, 5, 1);
    r.put_notify(upper, me, 0, overlap_half, buffer + overlap_half,
                 6);  // the same bytes, another window
    r.wait_notifications(upper, me, 6, 1);
    CONF_CHECK_PATTERN(r, rec, buffer, overlap_bytes, mix(std::uint64_t(me), 4), 0, 4);

    // No copy across ranks: the source is the target's own memory, which the
    // target filled itself (between ranks of one process: its address).
    r.barrier(grma::world);
    auto* theirs = reinterpret_cast<std::uint8_t*>(std::uintptr_t(buffers[right]));
    if (local(r, right)) r.put_notify(whole, right, 1000, 1000, theirs + 1000, 7);
    if (local(r, left)) r.wait_notifications(whole, left, 7, 1);
    CONF_CHECK_PATTERN(r, rec, buffer, overlap_bytes, mix(std::uint64_t(me), 4), 0, 7);
    r.barrier(grma::world);
    no_notification_left(r, rec, windows, 11);
    tally(r, rec, 0);

    r.barrier(grma::world);
    grma::window w[3] = {same, upper, whole};
    for (grma::window& x : w) r.window_free(x);
    mem.release(r, buffer);
  }
};

TEST_P(Runtime, OverlappingWindowsAndNoCopyAccess) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(overlapping_windows{});
  const buffers mem =
      j.prepare(std::size_t(n) * sizeof(std::uint64_t), round64(overlap_bytes) + 512);
  if (j.run(overlapping_windows{mem, j.first(), j.responsible()})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 1u; }, "ranks done");
  }
}

// A put or get whose source and destination ranges partly overlap moves the
// data as memmove would (the CPU backend's copy is memmove).
struct overlapping_copy {
  buffers mem;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* buffer = mem.get<std::uint8_t>(r, overlap_bytes);
    const grma::window whole = r.window_create(grma::world, buffer, overlap_bytes);
    for (int shift = 1; shift <= 40; shift += 13) {
      const std::uint64_t seed = mix(std::uint64_t(me), std::uint64_t(shift));
      // Destination below the source (a put to myself).
      fill(r, buffer, overlap_bytes, seed);
      r.put_notify(whole, me, 0, 1000, buffer + shift, 8);
      r.wait_notifications(whole, me, 8, 1);
      CONF_CHECK_PATTERN(r, rec, buffer, 1000, seed, std::size_t(shift), shift);
      // Destination above the source (a get from myself).
      fill(r, buffer, overlap_bytes, seed);
      r.get_notify(whole, me, 2000, 1000, buffer + 2000 + shift, 9);
      r.wait_notifications(whole, me, 9, 1);
      CONF_CHECK_PATTERN(r, rec, buffer + 2000 + shift, 1000, seed, 2000, 1000 + shift);
      tally(r, rec, 0);
    }
    r.barrier(grma::world);
    grma::window w = whole;
    r.window_free(w);
    mem.release(r, buffer);
  }
};

TEST_P(Runtime, OverlappingSourceAndDestinationMoveLikeMemmove) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.resolve(overlapping_copy{});
  if (j.run(overlapping_copy{j.prepare(0, overlap_bytes)})) {
    j.expect_no_failures(__FILE__);
    j.expect_counts(
        0, [](int) { return 4u; }, "shifts");
  }
}

// ---- the log ------------------------------------------------------------------------------------

constexpr int long_line_chars = 300;

// r.log() prints whole lines "[rank N] text" on stdout, each once, a rank's
// lines in the order it wrote them, with every value type formatted; a line
// too long for a log record is cut and ends in "…".
struct log_lines {
  int lines_per_rank;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    const int me = r.rank(grma::world);
    for (int i = 0; i < lines_per_rank; ++i) r.log() << "line " << i << " of rank " << me;
    r.log() << "values: " << -42 << ' ' << 42u << ' ' << ~std::uint64_t{0} << ' ' << 2.5 << ' '
            << true << ' ' << "text";
    char long_text[long_line_chars + 1];
    for (int i = 0; i < long_line_chars; ++i) long_text[i] = 'x';
    long_text[long_line_chars] = '\0';
    r.log() << static_cast<const char*>(long_text);
    tally(r, record_of(r), 0);
  }
};

TEST_P(Runtime, LogLinesNameTheirRank) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  const int n = j.resolve(log_lines{});
  const log_lines program{clamp_to(4000 / n, 2, 40)};
  const std::string long_text_cut = std::string(grma::detail::log_text_bytes - 3, 'x') + "\u2026";
  j.prepare();
  testing::internal::CaptureStdout();
  const bool ran = j.run(program);
  const std::string out = testing::internal::GetCapturedStdout();
  if (!ran) return;
  j.expect_no_failures(__FILE__);
  j.expect_counts(
      0, [](int) { return 1u; }, "ranks done");

  std::vector<int> next_line(std::size_t(n), 0), value_lines(std::size_t(n), 0),
      long_lines(std::size_t(n), 0);
  std::istringstream lines(out);
  std::string line;
  int bad = 0;
  while (std::getline(lines, line)) {
    int rank = -1, text_at = 0;
    if (std::sscanf(line.c_str(), "[rank %d] %n", &rank, &text_at) != 1 || text_at == 0 ||
        rank < 0 || rank >= n) {
      if (++bad <= 5) ADD_FAILURE() << "a line without a rank: " << line;
      continue;
    }
    const std::string text = line.substr(std::size_t(text_at));
    int i = -1, of = -1;
    char rest[2];
    if (std::sscanf(text.c_str(), "line %d of rank %d%1s", &i, &of, rest) == 2) {
      if (of != rank || i != next_line[std::size_t(rank)]) {
        if (++bad <= 5) ADD_FAILURE() << "out of order, repeated or misattributed: " << line;
      } else {
        next_line[std::size_t(rank)] = i + 1;
      }
    } else if (text.starts_with("values:")) {
      EXPECT_EQ(text, "values: -42 42 18446744073709551615 2.5 true text") << line;
      ++value_lines[std::size_t(rank)];
    } else if (text.starts_with("xxx")) {
      EXPECT_EQ(text, long_text_cut) << line;
      ++long_lines[std::size_t(rank)];
    } else if (++bad <= 5) {
      ADD_FAILURE() << "unexpected output line: " << line;
    }
  }
  for (int rank = j.first(); rank < j.first() + j.responsible(); ++rank) {  // this process prints these
    const std::size_t k = std::size_t(rank);
    if (next_line[k] == program.lines_per_rank && value_lines[k] == 1 && long_lines[k] == 1)
      continue;
    if (++bad <= 10)
      ADD_FAILURE() << "rank " << rank << ": " << next_line[k] << " numbered lines (expected "
                    << program.lines_per_rank << "), " << value_lines[k] << " value lines, "
                    << long_lines[k] << " long lines (expected one each)";
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Runtime, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
