// The network engine's access to CPU-backend devices: they are host memory,
// so it uses the ranks' own atomics and orderings.
#include <cstring>
#include <thread>

#include "../../runtime/engine_memory.hpp"

namespace grma::detail {
namespace {

class host_engine_memory final : public engine_memory {
 public:
  explicit host_engine_memory(bool spin_when_idle) : spin_(spin_when_idle) {}

  bool spin_when_idle() const override { return spin_; }
  memory_place devices_place() const override { return memory_place::host; }
  // The network reaches host memory: nothing is staged.
  bool network_moves(const void*, std::size_t) const override { return true; }
  std::shared_ptr<unsigned char> staging(std::size_t) override { return nullptr; }

  void read(void* to, const void* from, std::size_t bytes) override { std::memcpy(to, from, bytes); }
  void write(void* to, const void* from, std::size_t bytes) override { std::memcpy(to, from, bytes); }

  // Under the table's lock: a window is claimed and its entries written
  // under it (the ranks' plain stores, which a copy without it would race).
  void read_window_slot(const window_table& t, std::uint32_t slot, window_slot& s) override {
    locked(t, [&] { s = t.slots[slot]; });
  }
  void read_window_entry(const window_table& t, std::uint32_t slot, std::int32_t target,
                         window_entry& e) override {
    locked(t, [&] { e = t.entry(slot, target); });
  }

  std::uint64_t consumed(notification_ring& q) override {
    // Acquire, as ring_has_credit asks (notification slots validate every
    // word, so the consumer's store is relaxed: ring_release).
    return load_acquire<scope::system>(q.consumed);
  }

  void publish(notification_ring& q, std::uint32_t capacity, std::uint64_t ticket,
               const notification& n) override {
    // Release (in the slot's store): the data is visible before the notification.
    ring_publish<scope::system>(q, capacity, ticket, n);
  }

  void signal(std::uint64_t& word, signal_op op, std::uint64_t value) override {
    // Release: the data is visible before the signal.
    if (op == signal_op::add)
      fetch_add_acq_rel<scope::system>(word, value);
    else
      store_release<scope::system>(word, value);
  }

  void load_arrivals(const collective_arrival* from, std::size_t count,
                     collective_arrival* to) override {
    for (std::size_t i = 0; i < count; ++i) {
      // Acquire: the payload the rank wrote before its stamp.
      to[i].stamp = load_acquire<scope::system>(const_cast<std::uint64_t&>(from[i].stamp));
      to[i].payload[0] = from[i].payload[0];
      to[i].payload[1] = from[i].payload[1];
    }
  }

  void store_arrivals(collective_arrival* to, const collective_arrival* from,
                      std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      to[i].payload[0] = from[i].payload[0];
      to[i].payload[1] = from[i].payload[1];
      // Release: the payload is visible to the gatherer that sees the stamp.
      store_release<scope::system>(to[i].stamp, from[i].stamp);
    }
  }

  void store_word(void* at, std::uint32_t width, std::uint64_t value) override {
    if (width == 4)
      store_release<scope::system>(*static_cast<std::uint32_t*>(at), std::uint32_t(value));
    else
      store_release<scope::system>(*static_cast<std::uint64_t*>(at), value);
  }

  std::uint64_t atomic(void* word, std::uint32_t width, remote_atomic op, std::uint64_t operand,
                       std::uint64_t compare) override {
    if (width == 4)
      return apply_remote_atomic<scope::system>(*static_cast<std::uint32_t*>(word), op,
                                                std::uint32_t(operand), std::uint32_t(compare));
    return apply_remote_atomic<scope::system>(*static_cast<std::uint64_t*>(word), op, operand, compare);
  }

  bool claim_error(std::uint32_t& claim) override {
    return compare_exchange_acquire<scope::system>(claim, 0u, 1u);
  }

 private:
  template <class Read>
  static void locked(const window_table& t, Read&& read) {
    while (!compare_exchange_acquire<scope::system>(*t.lock, 0u, 1u)) std::this_thread::yield();
    read();
    // Release: our reads of the table end before its next change.
    store_release<scope::system>(*t.lock, 0u);
  }

  bool spin_;
};

}  // namespace

std::unique_ptr<engine_memory> make_host_engine_memory(bool spin_when_idle) {
  return std::make_unique<host_engine_memory>(spin_when_idle);
}

}  // namespace grma::detail
