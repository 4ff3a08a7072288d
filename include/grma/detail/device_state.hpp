// The state one device's ranks share, as plain data. The host lays it out in
// one zeroed block (device memory on a GPU, ordinary memory on the CPU
// backend), and passes ranks a device_view of pointers into it. What the host
// must read while ranks run (status, errors, the abort flag, the log ring)
// sits in host-visible memory; on the CPU backend that is all the same memory.
//
// A job of several devices links their views: every device's heap and queues
// are reachable from every other (peer memory on GPUs), and what the whole job
// shares (window table, world collective, abort flag and error record) is
// device 0's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grma/detail/heap.hpp"
#include "grma/detail/matching.hpp"
#include "grma/detail/ring.hpp"
#include "grma/detail/symmetric_table.hpp"
#include "grma/detail/team_table.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"

namespace grma::detail {

// ---- windows ---------------------------------------------------------------

// The range a rank registered with a window: an offset into a device's heap
// (its own, or device 0's for the job's userdata), so a range means the same
// on every mapping of that heap.
struct window_entry {
  std::uint64_t offset;
  std::uint64_t size;
  std::uint32_t device;
  std::uint32_t pad;
};

struct window_slot {
  std::uint32_t generation;  // of the window it holds (or held last); 0 = never used
  std::uint32_t active;
  std::uint32_t comm;
  std::uint32_t comm_size;
  // Claims so far by world windows [0] and by other windows [1], each 1..32767
  // (window_next_generation).
  std::uint32_t claims[2];
  std::uint32_t takes;  // windows the slot has held: tells apart two of one generation
};

// The generation the slot's next window of communicator `comm` gets: odd
// for world windows, following the world claims alone, even for others. A
// job across nodes has one table per node and the same world claims on every
// node, so a world window gets the same generation everywhere whatever device
// windows a node held in the slot. 0 stays "never created", and every value
// fits the 16 bits a notification's key has for it.
GRMA_INLINE std::uint32_t window_next_generation(const window_slot& s, std::uint32_t comm) {
  const bool world_window = comm == 0;
  const std::uint32_t n = s.claims[world_window ? 0 : 1] % 32767u + 1;
  return world_window ? 2 * n - 1 : 2 * n;
}

// One table for the job (device 0's): windows of the world communicator span
// devices, and a device communicator's window gets a job-wide slot too, so a
// handle names one window everywhere. Claims and releases hold `lock`.
struct window_table {
  std::uint32_t capacity;   // slots
  std::uint32_t max_ranks;  // entries per slot
  window_slot* slots;
  window_entry* entries;  // capacity x max_ranks
  std::uint32_t* lock;
  // Host-visible, per slot: its window_state_word, stored after the slot.
  // A network engine reads it with a load, and keeps what it copied of a
  // live window until the word changes (engine_windows: a copy of a GPU's
  // table is a device copy, of a CPU's one taken under the lock).
  std::uint64_t* states;

  GRMA_INLINE window_entry& entry(std::uint32_t slot, int comm_rank) const {
    return entries[std::size_t(slot) * max_ranks + std::size_t(comm_rank)];
  }
};

enum class window_check { ok, not_created, freed };

// Is slot `s` the live window of this generation?
GRMA_INLINE window_check window_lookup(const window_slot& s, std::uint32_t generation) {
  if (generation == 0 || s.generation == 0) return window_check::not_created;
  if (!s.active || s.generation != generation) return window_check::freed;
  return window_check::ok;
}

// Is the handle (slot, generation) a live window of this table?
GRMA_INLINE window_check window_lookup(const window_table& t, std::uint32_t slot,
                                       std::uint32_t generation) {
  if (slot >= t.capacity) return window_check::not_created;
  return window_lookup(t.slots[slot], generation);
}

// Which window a slot holds, whether it is live, and which world window it
// takes next, in one word: every window the slot takes gets a new word
// (generations alone come back after 32767 windows). Bit 0 is `active`,
// bits 1-16 the generation, bits 17-31 the world claims, 32-63 the takes.
GRMA_INLINE std::uint64_t window_state_word(const window_slot& s) {
  return (std::uint64_t(s.takes) << 32) | (std::uint64_t(s.claims[0]) << 17) |
         (std::uint64_t(s.generation) << 1) | (s.active ? 1u : 0u);
}

// The fields of a slot that its state word holds (the others stay 0): for
// a slot without a live window, all that a network engine asks of it.
GRMA_INLINE window_slot window_slot_of_state(std::uint64_t word) {
  window_slot s{};
  s.active = std::uint32_t(word & 1u);
  s.generation = std::uint32_t(word >> 1) & 0xffffu;
  s.claims[0] = std::uint32_t(word >> 17) & 0x7fffu;
  s.takes = std::uint32_t(word >> 32);
  return s;
}

// Makes a free slot the window of communicator `comm`. The caller has
// written the window's entries: a network engine that copies the table
// by its state word (engine_windows) and finds the slot active finds the
// entries and the other fields of this window.
GRMA_INLINE void window_slot_take(const window_table& t, std::uint32_t slot, std::uint32_t comm,
                                  std::uint32_t comm_size) {
  window_slot& s = t.slots[slot];
  s.generation = window_next_generation(s, comm);
  s.claims[comm == 0 ? 0 : 1] = (s.generation + 1) / 2;
  s.comm = comm;
  s.comm_size = comm_size;
  ++s.takes;
  // Release: the entries and the fields above come before `active`, and
  // `active` before the state word (an engine that reads the word live
  // copies the slot and entries of this window).
  store_release<scope::system>(s.active, 1u);
  store_release<scope::system>(t.states[slot], window_state_word(s));
}

// The first free slot, or t.capacity when all are in use.
GRMA_INLINE std::uint32_t window_table_find(const window_table& t) {
  for (std::uint32_t i = 0; i < t.capacity; ++i)
    if (!t.slots[i].active) return i;
  return t.capacity;
}

// A job across nodes has one table per node. Its world windows come from the
// same collectives in the same order on every node, and other windows stay
// on their node. World windows take slots from the top down and device
// windows (window_table_find) from the bottom up, so every node picks the
// same slot and generation for a world window, unless its scan would step
// over another communicator's window (the node holds more of them than
// another might): then there is no slot (t.capacity) instead.
GRMA_INLINE std::uint32_t window_table_find_across_nodes(const window_table& t, std::uint32_t comm) {
  for (std::uint32_t i = t.capacity; i-- > 0;) {
    const window_slot& s = t.slots[i];
    if (s.active && s.comm == comm) continue;
    if (s.active) break;
    return i;
  }
  return t.capacity;
}

GRMA_INLINE void window_table_release(const window_table& t, std::uint32_t slot) {
  t.slots[slot].active = 0;
  // Relaxed: what matters is that an engine stops taking requests for the
  // window soon; a request it checked just before is as early as one
  // checked before the free.
  store_relaxed<scope::system>(t.states[slot], window_state_word(t.slots[slot]));
}

// ---- collectives -----------------------------------------------------------

// One rank's arrival at a collective: `stamp` = epoch << 8 | call, published
// with release after the payload. A cache line each, so arrivals do not
// contend.
struct alignas(64) collective_arrival {
  std::uint64_t stamp;
  std::uint64_t payload[2];
};

// Centralized gather/release: every rank stamps its arrival, the leader (rank
// 0 of the communicator) waits for all stamps of this epoch, checks that all
// ranks made the same call, acts, writes `result` and releases the epoch.
// The arrivals (one per rank of the communicator) are beside it; the view
// points at them, since shared memory holds no pointers (processes map it at
// different addresses).
struct collective_state {
  alignas(64) std::uint64_t release;  // last epoch the leader released
  std::uint64_t result;               // leader's result of that epoch
};

GRMA_INLINE constexpr std::uint64_t collective_stamp(std::uint64_t epoch, call c) {
  return (epoch << 8) | static_cast<std::uint64_t>(c);
}

// a * b, or ~0 where the product is beyond 64 bits: no symmetric slice
// holds that many bytes, so a check or an allocation of them fails instead
// of taking a wrapped-around size.
GRMA_INLINE constexpr std::uint64_t product_or_most(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > ~std::uint64_t{0} / b ? ~std::uint64_t{0} : a * b;
}

// Bytes from the first to the last of `count` elements of `element` bytes
// that lie `stride` elements apart (strided RMA, alltoalls), or ~0 where that
// is beyond 64 bits: no symmetric slice holds such a range, so its check
// fails instead of passing a wrapped-around size.
GRMA_INLINE constexpr std::uint64_t strided_extent(std::uint64_t count, std::uint64_t stride,
                                                   std::uint64_t element) {
  if (count == 0) return 0;
  const std::uint64_t fit = ~std::uint64_t{0} / element;  // elements whose bytes 64 bits count
  if (stride != 0 && count - 1 > (fit - 1) / stride) return ~std::uint64_t{0};
  return ((count - 1) * stride + 1) * element;
}

// ---- per rank ----------------------------------------------------------------

inline constexpr int comm_count = 2;         // world, device
inline constexpr int max_devices = 8;        // devices in one job
inline constexpr int credit_cache_size = 8;  // producer credits kept per rank
inline constexpr int max_contexts = 16;      // contexts a rank may create (slots 1..16)

// How an operation on a (window, target) reaches the target, seen from the
// rank that resolved it: each notified-access operation switches on this.
enum class route : std::uint32_t {
  same_device,  // the range and the target rank on this rank's device
  peer,         // either on another device of this node: system scope
  other_node,   // the range on another node: a command to the network engine
};

// A (window, target) resolved once: the window's communicator, the target's
// world rank, its range's address and size, and the route (target -1: no
// target, and the rank's own range, where value puts to it land). Windows
// never change while they live, so a resolution stays right until window_free clears its cache line; on a GPU
// the line saves loads from the window table, which miss L1 after every
// acquire (a miss cost about 1 us a call under horizontal diffusion's load,
// two H200s).
struct window_route {
  std::uint32_t key;  // window_key; 0 = an empty cache line
  std::int32_t target;        // in the window's communicator
  std::uint32_t comm;
  std::uint32_t comm_size;
  std::int32_t world_target;  // the target as a world rank
  route path;
  std::uint64_t offset;       // of the range in its device's heap
  std::uint64_t size;         // of the range
  unsigned char* base;        // the range's first byte; null for other_node
};

// The lines of one window slot's lookups: a rank's calls on a window name a
// few targets (a halo exchange: both neighbours, and -1 for its waits), so
// the lines of a set are its slot's targets, replaced oldest first. A set
// per slot modulo the set count: windows in window_cache_sets consecutive
// slots (a program's first windows, in one node's jobs) never evict each
// other's lines. (It was one direct-mapped line per
// (window, target): horizontal diffusion's eight windows, each with three
// targets, missed on four lookups in five.)
inline constexpr int window_cache_sets = 8;
inline constexpr int window_cache_ways = 4;
struct window_cache_set {
  window_route lines[window_cache_ways];
  std::uint32_t next;  // the line the next miss replaces
};
GRMA_INLINE constexpr int window_cache_set_of(std::uint32_t slot) {
  return int(slot % window_cache_sets);
}

// A rank's private bookkeeping, owned by its backend (the rank thread's memory
// on the CPU, shared memory on a GPU); the watchdog sees what the rank
// publishes in its rank_status.
struct rank_local {
  std::uint64_t progress;           // calls completed and waits ended
  std::uint64_t epoch[comm_count];  // collectives entered per communicator
  std::uint64_t log_credit;         // known_consumed of the log ring
  std::uint64_t command_credit;     // known_consumed of the command ring
  std::uint64_t remote_issued;      // remote operations handed to the engine
  std::uint64_t remote_waited;      // of them, ones that waited for `landed`
  std::uint32_t remote_lock;        // held by the thread handing the engine a command
  // Direct-mapped cache of producer credits for the rings of recent targets.
  std::int32_t credit_target[credit_cache_size];
  std::uint64_t credit_known[credit_cache_size];
  pending_list pending;
  ring_reader inbox[max_devices];  // consumer state of the rank's rings, one per device
  window_cache_set windows[window_cache_sets];  // by window_cache_set_of(slot)
  // The generation of the live context in each slot (0: free; slot 0 is
  // default_context), and the contexts created so far, which numbers them.
  std::uint32_t contexts[max_contexts + 1];
  std::uint32_t contexts_created;
};

GRMA_INLINE void rank_local_init(rank_local& l, notification* pending_items,
                                 std::uint32_t match_capacity, std::uint32_t queue_capacity) {
  l = rank_local{};
  for (ring_reader& r : l.inbox) r.mask = queue_capacity - 1;
  for (int i = 0; i < credit_cache_size; ++i) l.credit_target[i] = -1;
  l.pending = pending_list{0, match_capacity, pending_items, 0, 0, {}};
}

enum class rank_state : std::int32_t { idle = 0, running, blocked, finished, failed };

inline constexpr int unmatched_shown = 8;

// What a rank is doing, for the watchdog. Written by the rank's leading thread
// with relaxed stores, read by the host while the rank runs: a hint, never a
// protocol. The rank publishes `progress` every P::progress_publish_interval
// calls (the platform's) and when a long wait ends; what it waits for and its unmatched
// notifications when a wait lasts (a short wait publishes nothing: from a
// GPU these are PCIe writes, which a later release fence would wait for).
struct rank_status {
  std::int32_t state;  // rank_state
  std::int32_t where;  // call while blocked
  std::int64_t args[4];
  std::uint64_t progress;
  std::int32_t unmatched;  // notifications held unmatched (pending list)
  std::int32_t pad;
  notification unmatched_head[unmatched_shown];  // the oldest of them
};
// args[3] of a rank's waits that are steps of its call rather than the
// call's own wait, whatever the call: the watchdog names the step. No
// other wait but a word wait's value can be these (the watchdog tells
// those by their call).
// A team's exchange (the team barrier under every collective over a
// team): args {team slot, world rank it waits for, epoch}.
inline constexpr std::int64_t team_exchange_wait = INT64_MIN;
// Until what the rank handed the network engine is in place at the other
// nodes (acknowledged), and every source read, every get's data landed:
// args {operations handed, of them to be read or landed}.
inline constexpr std::int64_t remote_delivery_wait = INT64_MIN + 1;
// For a slot in the process's ring of commands to the network engine:
// args {target, offset, bytes} of the command.
inline constexpr std::int64_t command_slot_wait = INT64_MIN + 2;
// Until the network engine has read a put's source, or a get's data or an
// atomic's answer came back: args {target, offset, bytes}.
inline constexpr std::int64_t remote_answer_wait = INT64_MIN + 3;
// For a lock that another rank holds: args {lock_kind}.
inline constexpr std::int64_t lock_wait = INT64_MIN + 4;
enum class lock_kind : std::int64_t { window_table, team_table, remote, heap };

// In host-visible memory. A GPU may only load and store here (device atomics
// on mapped host memory are not supported over PCIe): the words ranks update
// atomically (error claim, log tickets) live in device memory (device_words).
struct job_control {
  std::uint32_t abort;          // nonzero: every rank leaves its wait with errc::aborted
  std::uint32_t error_claimed;  // set by the first failing rank after it wrote `error`
  error_record error;
  // The report of the watchdog that ended the job, for every process of the
  // node and for the other nodes (src/runtime/watchdog.hpp, leave_report).
  std::uint32_t report_claimed;
  std::uint32_t report_ready;
  std::uint32_t report_length;
  char report[16384];
  // Per process (its first device's block): that its host is alive, for the
  // other processes of the job (process_watch).
  std::int64_t pid;
  std::uint64_t heartbeat_ns;  // steady clock of the node
};

// Words the ranks update with atomics; in device memory.
struct device_words {
  std::uint64_t log_tickets;  // tickets of this device's log ring (its `reserved` is unused)
  std::uint32_t error_claim;  // device 0's: the first failing rank of the job takes it
  std::uint32_t window_lock;  // device 0's: held while the window table changes
  std::uint32_t pad;
  std::uint64_t command_tickets;  // tickets of this device's command ring
  // The command ring's `consumed` count, in place of the ring's own (which
  // stays 0): the network engine releases it after taking slots, and ranks
  // waiting for room poll it in their device's memory, not host memory over
  // PCIe (hundreds of such pollers stall the GPU's copies and the proxy).
  std::uint64_t commands_consumed;
};

// ---- the inter-node path -------------------------------------------------------

// What a rank asks of its process's network engine (src/runtime/remote_engine)
// for a target on another node; also the header the engines exchange. The
// origin checks its arguments as for a local target, and the target's engine
// checks them again against its own window table: it trusts nothing here.
enum class remote_op : std::uint8_t {
  put_notify = 1,
  get_notify,
  put_signal,
  arrive,  // the node's ranks arrived at a world collective (epoch in `offset`)
  // The core's operations on the target's slice of the symmetric heap
  // (`offset` in the slice; `window` unused):
  put,     // `bytes` from the origin's `address` (or inline)
  get,     // `bytes` to the origin's `address`
  atomic,  // remote_atomic `signal_op` on the word of `bytes` (4 or 8): operand
           // `signal_value`, compare `signal_offset`; `tag` 1: the old value
           // comes back to the origin's `address`
};

// A remote atomic's operation (remote_command::signal_op).
enum class remote_atomic : std::uint8_t {
  fetch = 0,
  set,
  swap,
  compare_swap,
  add,
  bit_and,
  bit_or,
  bit_xor,
  count_  // not an operation: how many there are
};

// Applies remote atomic `op` to `word` at scope S and returns the old value
// (a set's and a compare_swap's too), in the orders of the ranks' own
// atomics: what a target's engine (on a GPU, its proxy) does for a request
// from another node.
template <scope S, class T>
GRMA_INLINE T apply_remote_atomic(T& word, remote_atomic op, T operand, T compare) {
  atomic_ref_t<T, S> a(word);
  switch (op) {
    case remote_atomic::fetch: return a.load(word_load_order);
    case remote_atomic::set:
    case remote_atomic::swap: return a.exchange(operand, word_update_order);
    case remote_atomic::compare_swap:
      a.compare_exchange_strong(compare, operand, word_update_order, word_load_order);
      return compare;
    case remote_atomic::add: return a.fetch_add(operand, word_update_order);
    case remote_atomic::bit_and: return a.fetch_and(operand, word_update_order);
    case remote_atomic::bit_or: return a.fetch_or(operand, word_update_order);
    case remote_atomic::bit_xor: return a.fetch_xor(operand, word_update_order);
    case remote_atomic::count_: break;
  }
  return T{};
}

inline constexpr std::uint32_t remote_inline_bytes = 56;
// A larger put of at most this many bytes travels in its command's payload
// slot (device_view::payload), in host memory: the rank's threads copy it
// there, and the engine sends it from there without reading the device's
// memory (on a GPU, a PCIe round trip through its proxy for each put, one
// after another). 4 KiB: the proxy's largest copy, and a megabyte of pinned
// memory for a device's command slots.
inline constexpr std::uint32_t remote_payload_bytes = 4096;
// Command slots per device (to the network engine; jobs across nodes). A
// constant, so that a GPU rank reads no ring field over PCIe to use one.
inline constexpr std::uint32_t command_capacity = 256;

struct remote_command {
  remote_op op;
  std::uint8_t signal_op;      // put_signal: grma::signal_op
  std::uint16_t inline_bytes;  // of `data`; 0 = the engine reads or writes `address`
  std::int32_t origin;         // world rank
  std::uint32_t window;        // window_key
  std::int32_t target;         // rank in the window's communicator (world)
  std::int32_t tag;
  std::uint32_t flags;   // remote_flag_*
  std::uint64_t offset;  // in the target's range (arrive: the epoch)
  std::uint64_t bytes;
  std::uint64_t address;  // the origin's source (put) or destination (get)
  std::uint64_t signal_offset;
  std::uint64_t signal_value;  // put_signal: the value; put_notify, get_notify: the immediate
  unsigned char data[remote_inline_bytes];  // a small put's bytes
};
static_assert(sizeof(remote_command) == 120, "a command is 30 four-byte fields (sequenced_slot)");

// A put, get or atomic (the core's, on the symmetric heap) that names a
// window instead: a host thread's (papers/003), `offset` in the target's
// range of `window`.
inline constexpr std::uint32_t remote_flag_in_window = 1;
// A rank's put whose bytes are in its command's payload slot (between the
// rank and its own engine only; the header on the wire has it cleared).
inline constexpr std::uint32_t remote_flag_payload = 2;
// `flags` above its flags: a host operation's number (from its origin's
// engine), which the target's acknowledgement and answer carry back.
inline constexpr std::uint32_t remote_flag_bits = 8;
GRMA_INLINE std::uint32_t host_operation_number(const remote_command& c) {
  return c.flags >> remote_flag_bits;
}

// Whether the operation carries the origin's bytes to the target.
GRMA_INLINE bool remote_is_put(remote_op op) {
  return op == remote_op::put_notify || op == remote_op::put_signal || op == remote_op::put;
}
// Whether the origin's engine sends the bytes at `address` after the
// header: a put too large to travel inside it.
GRMA_INLINE bool remote_sends_source(const remote_command& c) {
  return remote_is_put(c.op) && c.inline_bytes == 0 && c.bytes != 0;
}
// Whether an answer comes back to the origin's `address`: a get's data, a
// fetching atomic's old value.
GRMA_INLINE bool remote_answered(const remote_command& c) {
  return c.op == remote_op::get_notify || c.op == remote_op::get ||
         (c.op == remote_op::atomic && c.tag != 0);
}
// Whether a put's bytes go in its command's payload slot: too many to
// travel inside the command, few enough for the slot.
GRMA_INLINE bool remote_fits_payload(const remote_command& c) {
  return remote_is_put(c.op) && c.bytes > remote_inline_bytes && c.bytes <= remote_payload_bytes;
}
// Whether the origin's engine tells the rank (landed) once it is done with
// the rank's buffer: an answer has come, or a put's source has been read
// (not one whose bytes the rank put in the command or its payload slot).
GRMA_INLINE bool remote_lands(const remote_command& c) {
  return remote_answered(c) || (remote_sends_source(c) && (c.flags & remote_flag_payload) == 0);
}

// A command slot: self-validating (sequenced_slot), 256 bytes. A GPU rank
// stores it into host memory with no system-scope fence; the engine reads the
// put's source on the device, after seeing the command. (A payload, which
// other threads write, takes a system-scope fence: issue_with_payload.)
template <>
struct ring_slot<remote_command> : sequenced_slot<remote_command, 32> {};
using command_ring = ring<remote_command>;
static_assert(sizeof(ring_slot<remote_command>) == 256, "a command slot is four cache lines");

// A rank's remote operations as its engine reports them; one per rank, in
// the device's own memory (a rank polls it while it waits: hundreds of ranks
// polling host memory over PCIe stall the GPU's copies for milliseconds),
// written by the engine through its engine_memory with release and read by
// the rank with acquire. Counts only grow.
struct alignas(64) remote_completion {
  // Operations whose buffer at the origin the engine is done with (a large
  // put's source was sent; a get's destination holds the data).
  std::uint64_t landed;
  // Operations the target's engine acknowledged: data in place and the
  // notification or signal published.
  std::uint64_t delivered;
  // Where a rank's g and fetching atomics to another node get their answer
  // (the rank's remote lock makes one such call at a time).
  std::uint64_t reply;
};

// ---- log ----------------------------------------------------------------------

// A log line's bytes: a line of a dozen numbers with their names fits.
inline constexpr std::uint32_t log_text_bytes = 244;

struct log_record {
  std::int32_t rank;
  std::uint32_t length;
  char text[log_text_bytes];
};
using log_ring = ring<log_record>;
static_assert(sizeof(ring_slot<log_record>) == 256, "a log slot is 256 bytes");

// ---- the view ranks get ------------------------------------------------------------

struct device_view {
  unsigned char* heap;  // this device's
  std::uint64_t heap_size;
  std::uint64_t userdata_offset;  // in the heap of device userdata_device
  std::uint64_t userdata_size;
  heap_allocator* allocator;
  window_table windows;  // the job's
  // The symmetric heap: the device's ranks' slices, symmetric_slice bytes
  // each in rank order, from symmetric_offset in every device's heap; and
  // the node's table of its blocks (symmetric_table.hpp).
  std::uint64_t symmetric_offset;
  std::uint64_t symmetric_slice;
  symmetric_table symmetric;
  team_slots* teams;  // the node's (team_table.hpp)

  // Each rank has one notification ring per device of the job, written by
  // that device's ranks; rank r's rings are queues + stride * (r * devices + d).
  unsigned char* queues;
  std::uint64_t queue_stride;
  std::uint32_t queue_capacity;
  std::uint32_t match_capacity;
  // Per world rank: tickets handed to this device's producers for their ring
  // at that rank. Tickets stay on the producers' device, so taking one is a
  // local atomic even when the ring is on a peer.
  std::uint64_t* tickets;

  // This device's state of the world's and the device's collectives: its
  // ranks wait for a release in their own device's memory.
  collective_state* collectives[comm_count];
  // The world's state on every device of the node (null off the node): the
  // gatherer releases an epoch on each.
  collective_state* world_releases[max_devices];
  collective_arrival* arrivals[comm_count];
  rank_status* status;            // host-visible, one per rank of this device
  job_control* control;           // host-visible, the job's
  log_ring* log;                  // host-visible
  command_ring* commands;         // host-visible: to the process's network engine
  unsigned char* payloads;        // host-visible: a payload slot per command slot
  remote_completion* completion;  // device memory, one per rank of this device
  device_words* words;            // this device's
  std::uint32_t* error_claim;     // the job's

  std::int32_t world_size;
  // The processes whose host threads may notify world windows (launch_
  // options::host_access; else 0): sources world_size to world_size +
  // host_sources - 1 in their notifications.
  std::int32_t host_sources;
  std::int32_t first_rank;  // world rank of this device's rank 0
  std::int32_t ranks;       // ranks on each device
  std::int32_t devices;     // in the job
  std::int32_t device_index;
  // Where this process's userdata is: its first device (one copy per process,
  // which ranks of its other devices reach through peer memory).
  std::int32_t userdata_device;
  // Every device's heap and queues as this device addresses them; null for
  // devices on other nodes, which only the network engines reach.
  unsigned char* peer_heaps[max_devices];
  unsigned char* peer_queues[max_devices];
  // Jobs across nodes: bit d is set for the devices on this node (all bits
  // of a one-node job), and node_leader is the node's lowest world rank,
  // which gathers the node for world collectives.
  std::uint32_t node_devices;
  std::int32_t nodes;
  std::int32_t node_leader;
  // CPU backend: how a rank's wait passes its turns, resolved (never
  // automatic); not read on GPUs.
  waits_kind waits;

  GRMA_INLINE bool on_node(int device) const { return (node_devices >> device) & 1u; }
  // The payload slot of command ticket `ticket`: the rank that holds the
  // ticket writes it before its command, the engine reads it after.
  GRMA_INLINE unsigned char* payload(std::uint64_t ticket) const {
    return payloads + (ticket & (command_capacity - 1)) * remote_payload_bytes;
  }

  // By comparisons, at most max_devices of them, not a division: it is on
  // the path of every atomic, p and g (one compare on a single device).
  GRMA_INLINE int device_of(int world_rank) const {
    int d = 0;
    for (int next = ranks; d + 1 < devices && world_rank >= next; next += ranks) ++d;
    return d;
  }

  // The ring of world rank `target` that producers on device `from` write.
  GRMA_INLINE notification_ring& queue(int target, int from) const {
    const int d = device_of(target);
    const std::uint64_t index = std::uint64_t(target - d * ranks) * std::uint64_t(devices) + from;
    return *reinterpret_cast<notification_ring*>(peer_queues[d] + queue_stride * index);
  }
};

}  // namespace grma::detail
