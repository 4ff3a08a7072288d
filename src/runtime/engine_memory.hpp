// How a network engine (remote_engine) reaches the state and the data of its
// process's devices. On the CPU backend that is host memory, with the same
// atomics the ranks use. A GPU's heap and control block are device memory,
// which the host reaches only through copies, and where it cannot make an
// atomic at all: the CUDA backend's version copies on a stream of its own
// and has a one-thread kernel do the few atomics (cuda_engine_memory).
//
// Writes land in call order: what one call wrote is visible to the device's
// ranks before anything a later call writes (the data of a put before its
// notification). They may land after the call returns (a GPU's: copies
// queued on a stream); flush() returns once all have, and so does every
// read of device memory. A write's source may be reused once it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "grma/detail/device_state.hpp"
#include "grma/types.hpp"
#include "transport.hpp"

namespace grma::detail {

class engine_memory {
 public:
  virtual ~engine_memory() = default;

  // On the engine's thread, before any other call (a GPU: make it current).
  virtual void bind() {}
  // On the engine's thread, after its last call (a GPU: stops its proxy).
  virtual void unbind() {}
  // Whether the engine's thread may spin while idle, not yield: a GPU's
  // ranks leave the host's cores to it (a yield measured 3 us, on the path
  // of every message), while the CPU backend's ranks are threads that need
  // them unless the process has cores to spare (waits_kind::spin).
  virtual bool spin_when_idle() const = 0;

  // Where the devices' memory is, for the network to read and write it
  // itself: host memory on the CPU backend.
  virtual memory_place devices_place() const = 0;
  // Whether the network reads and writes `bytes` of a device's memory at
  // `at` itself (host memory; on a GPU, large chunks of its heap where a
  // CUDA-aware MPI or UCX reaches GPU memory); otherwise they go through a
  // staging buffer.
  virtual bool network_moves(const void* at, std::size_t bytes) const = 0;
  // Host memory for `bytes` of data on their way between a device and the
  // network where it does not move them itself (a GPU's: pinned, so that
  // its copies run at full speed).
  virtual std::shared_ptr<unsigned char> staging(std::size_t bytes) = 0;

  // Data: a put's or get's bytes.
  virtual void read(void* to, const void* from, std::size_t bytes) = 0;
  virtual void write(void* to, const void* from, std::size_t bytes) = 0;
  // A write from a staging buffer, which it holds until the copy is done,
  // so that the engine goes on meanwhile (a GPU's chunk of a large put).
  // Lands in call order like write().
  virtual void write_staged(void* to, std::shared_ptr<unsigned char> stage, std::size_t bytes) {
    write(to, stage.get(), bytes);
  }
  // Lets go of the staging buffers of copies that are done (their lanes
  // get their room back); whether there were any.
  virtual bool progress() { return false; }
  // Waits for the writes so far: before the network itself reads or writes
  // device memory (a CUDA-aware MPI), which nothing here orders.
  virtual void flush() {}
  // The same without waiting: a mark after the writes so far, and whether
  // they have landed, so that the engine goes on with other work until it
  // may acknowledge them. By default, a flush.
  virtual std::uint64_t mark() { return 0; }
  virtual bool landed(std::uint64_t) {
    flush();
    return true;
  }

  // Copies of window table slot `slot` and of its entry for a rank, which
  // the engine keeps while the slot's state word stays (engine_windows).
  // The slot's copy is that window's when its own state word is the one
  // the engine read before (else it changed meanwhile, and the engine reads
  // again); an entry read after it is that window's or a later one's.
  virtual void read_window_slot(const window_table& t, std::uint32_t slot, window_slot& s) = 0;
  virtual void read_window_entry(const window_table& t, std::uint32_t slot, std::int32_t target,
                                 window_entry& e) = 0;

  // A notification ring's `consumed` count (acquire), and publishing its
  // next entry: the engine is the ring's only producer.
  virtual std::uint64_t consumed(notification_ring& q) = 0;
  virtual void publish(notification_ring& q, std::uint32_t capacity, std::uint64_t ticket,
                       const notification& n) = 0;

  // Sets or adds to a word the ranks wait on (a signal; a rank's completion
  // count), after the data before it (release).
  virtual void signal(std::uint64_t& word, signal_op op, std::uint64_t value) = 0;

  // `count` consecutive arrivals at a world collective: read, and written
  // payloads first, stamps last (release). The engine reads a node's
  // arrivals only after its gatherer's `arrive` command, which it queued
  // once it had seen every stamp: then they are all in place.
  virtual void load_arrivals(const collective_arrival* from, std::size_t count,
                             collective_arrival* to) = 0;
  virtual void store_arrivals(collective_arrival* to, const collective_arrival* from,
                              std::size_t count) = 0;

  // An element ranks may poll as a word (a p of 4 or 8 bytes, aligned):
  // one store of the whole word, after the writes before it (release).
  virtual void store_word(void* at, std::uint32_t width, std::uint64_t value) = 0;

  // A remote atomic (apply_remote_atomic) on a word of `width` bytes (4 or
  // 8) of a device's memory, after the writes before it, at system scope
  // (the node's ranks' atomics on the word are); returns the old value.
  virtual std::uint64_t atomic(void* word, std::uint32_t width, remote_atomic op,
                               std::uint64_t operand, std::uint64_t compare) = 0;
  // The same where nobody wants the old value (a signal's set or add, a
  // non-fetching atomic): like a write, it may land after the call returns,
  // in call order with the writes, and flush(), mark() and landed() cover
  // it. A GPU's engine goes on meanwhile instead of waiting a PCIe round
  // trip for an answer nobody reads.
  virtual void atomic_unanswered(void* word, std::uint32_t width, remote_atomic op,
                                 std::uint64_t operand, std::uint64_t compare) {
    atomic(word, width, op, operand, compare);
  }

  // Takes the job's error claim (0 -> 1); false when a rank has it.
  virtual bool claim_error(std::uint32_t& claim) = 0;
};

// The CPU backend's: devices are host memory.
std::unique_ptr<engine_memory> make_host_engine_memory(bool spin_when_idle);

}  // namespace grma::detail
