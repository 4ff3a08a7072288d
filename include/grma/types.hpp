// Plain value types of the grma API, shared by host code and rank code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grma/config.hpp"

namespace grma {

// A communicator names a set of ranks. world: every rank of the job; device: the
// ranks that run on the caller's device (papers/000 §2.3.1).
struct comm {
  std::uint32_t id;
  GRMA_HOST_DEVICE friend constexpr bool operator==(comm a, comm b) { return a.id == b.id; }
};
GRMA_CONSTANT comm world{0};
GRMA_CONSTANT comm device{1};

// Wildcards for matching notifications (papers/000 Listing 2.4).
inline constexpr int any_source = -1;
inline constexpr int any_tag = -1;

// A window handle: the slot in the device's window table and that slot's
// generation, so a handle kept after window_free is detected instead of
// silently addressing the slot's next window.
struct window {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;  // 0 = never created
  GRMA_HOST_DEVICE friend constexpr bool operator==(window a, window b) {
    return a.slot == b.slot && a.generation == b.generation;
  }
};
GRMA_CONSTANT window window_none{};

// What a signalling put does to the 64-bit signal word at the target.
enum class signal_op : std::uint32_t { set = 0, add = 1 };

// Comparison for waiting on a word: wait until (word <cmp> value).
enum class cmp : std::uint32_t { eq = 0, ne, gt, ge, lt, le };

// Compares as T: signed words compare signed.
template <class T>
GRMA_INLINE constexpr bool compare(T word, cmp c, T value) {
  switch (c) {
    case cmp::eq: return word == value;
    case cmp::ne: return word != value;
    case cmp::gt: return word > value;
    case cmp::ge: return word >= value;
    case cmp::lt: return word < value;
    case cmp::le: return word <= value;
  }
  return false;
}

// What a matched notification carried: its origin (rank in the window's
// communicator), its tag and the 64-bit immediate of its put_notify or
// get_notify (0 when none was given).
struct envelope {
  int source;
  int tag;
  std::uint64_t immediate;
};

// A communication context (OpenSHMEM's shmem_ctx): the operations a rank
// issues on it are completed by its quiet and ordered by its fence,
// separately from the rank's other contexts. default_context always
// exists; others come from ctx_create and end with ctx_destroy, which
// leaves default_context in the handle.
struct context {
  std::uint32_t slot = 0;        // 0 = the rank's default context
  std::uint32_t generation = 0;  // of the context in the slot; 0 for the default
  GRMA_HOST_DEVICE friend constexpr bool operator==(context a, context b) {
    return a.slot == b.slot && a.generation == b.generation;
  }
};
GRMA_CONSTANT context default_context{};

// A team: an ordered set of ranks (OpenSHMEM's teams) over which the core's
// collectives run. Its members are ranks start, start + stride, ... of a
// base numbering: world ranks, this device's ranks, or this node's ranks
// (in world order). The predefined teams need no creation; others come
// from team_split_strided and team_split_2d and end with team_destroy.
struct team {
  std::uint32_t slot;        // its workspace (detail/team_table.hpp)
  std::uint32_t generation;  // of the team in the slot; 0 for the predefined
  std::uint32_t base;        // 0 world, 1 this device, 2 this node
  std::int32_t start;
  std::int32_t stride;
  std::int32_t size;  // -1: every rank of the base
  GRMA_HOST_DEVICE friend constexpr bool operator==(team a, team b) {
    return a.slot == b.slot && a.generation == b.generation && a.base == b.base &&
           a.start == b.start && a.stride == b.stride && a.size == b.size;
  }
};
GRMA_CONSTANT team team_world{0, 0, 0, 0, 1, -1};
GRMA_CONSTANT team team_device{1, 0, 1, 0, 1, -1};  // the ranks of my device
GRMA_CONSTANT team team_node{2, 0, 2, 0, 1, -1};    // the ranks of my node
// The ranks whose memory I load and store directly (ptr): my node's.
GRMA_CONSTANT team team_shared = team_node;
// What a split gives a rank outside the new team, and team_destroy leaves.
GRMA_CONSTANT team team_none{~0u, 0, 0, 0, 1, 0};

// Reduction operators of the core's collectives; the bitwise ones take
// integers only.
enum class reduce_op : std::uint32_t { sum = 0, prod, min, max, bit_and, bit_or, bit_xor };

// A time limit for a wait, in seconds from the call: the wait returns
// wait_result::timed_out once it passes instead of waiting on (a wait
// without one is bounded only by the watchdog, GRMA_TIMEOUT).
struct within {
  double seconds;
  // The seconds a wait counts: a limit that has already passed (zero,
  // negative or NaN, as `deadline - r.wtime()` becomes) is one look.
  GRMA_HOST_DEVICE constexpr double left() const { return seconds > 0 ? seconds : 0; }
};
enum class wait_result : std::int32_t { met = 0, timed_out };

// What the host may know about the job before and after it runs (papers/000
// Listing 2.1).
struct rank_info {
  int rank_count = 0;        // ranks in the whole job (world size)
  int rank_start = 0;        // first world rank this process runs
  int rank_responsible = 0;  // number of ranks this process runs
  int ranks_per_device = 0;
  int threads_per_rank = 0;
  int device_index = 0;  // this process's device on its node
  int device_count = 0;  // devices this node's processes drive
  int node_index = 0;
  int node_count = 0;
  int process_index = 0;
  int process_count = 0;
};

// automatic: cuda when grma was built with it and a GPU is visible, else cpu.
enum class backend_kind { automatic, cpu, cuda };

// How a CPU-backend rank's wait passes its turns (GRMA_WAITS,
// docs/configuration.md); a job resolves automatic to one of the others.
enum class waits_kind : std::uint32_t {
  // Spin where the process has a core for each polling thread, else
  // yield, and under a CPU quota too small yield and then sleep.
  automatic,
  // Keep the core: a yield is a system call, about 1 us in a virtual
  // machine, on the path of every message. A wait still yields once every
  // 1024 spins, for other processes.
  spin,
  // Give the core to the threads with work.
  yield,
  // Yield, then sleep: a thread that yields on a core with nothing else to
  // run keeps running, and under a CPU quota (a container's) spends it;
  // once the group has spent it every thread stops until the next period
  // (100 ms by default).
  sleep,
};

// How to run a rank program. Zero means "the backend's default" (or the
// GRMA_* variable that sets it).
struct launch_options {
  int threads_per_rank = 0;  // the CPU backend always runs one thread per rank
  int ranks_per_device = 0;
  void* userdata = nullptr;  // host buffer: copied in before, and back after, the run
  std::size_t userdata_size = 0;
  // Host threads issue one-sided operations into the running job
  // (job::put, get, ...; papers/003): every process runs a network engine
  // that serves them, and on a GPU the job leaves it room (as across
  // nodes: one rank fewer). Needs a job started with runtime::launch.
  bool host_access = false;
};

}  // namespace grma
