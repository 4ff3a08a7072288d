#include "loopback_transport.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "grma/error.hpp"

namespace grma::detail {

namespace {

struct message {
  int from;
  channel c;
  std::vector<unsigned char> bytes;
  std::uint64_t order = 0;  // of arrival at the receiving endpoint
};

}  // namespace

// Each endpoint's inbox: the messages sent to it, in the order they were sent.
struct loopback_hub {
  struct inbox {
    std::mutex lock;
    std::deque<message> messages;
  };
  std::vector<inbox> inboxes;
  explicit loopback_hub(int endpoints) : inboxes(std::size_t(endpoints)) {}
};

namespace {

class loopback_transport final : public transport {
 public:
  loopback_transport(std::shared_ptr<loopback_hub> hub, int index)
      : hub_(std::move(hub)), me_(index), arrived_(channels * hub_->inboxes.size()) {}
  ~loopback_transport() override = default;
  loopback_transport(const loopback_transport&) = delete;
  loopback_transport& operator=(const loopback_transport&) = delete;

  const char* name() const override { return "loopback"; }
  bool in_one_process() const override { return true; }
  bool reaches_cuda_memory() const override { return false; }

  void send(int to, channel c, const void* buffer, std::size_t bytes, memory_place,
            std::function<void()> done) override {
    if (to < 0 || std::size_t(to) >= hub_->inboxes.size())
      throw error(errc::process_failed, -1, call::runtime,
                  "grma: network (loopback): a send to process " + std::to_string(to) + " of " +
                      std::to_string(hub_->inboxes.size()));
    const auto* p = static_cast<const unsigned char*>(buffer);
    message m{me_, c, std::vector<unsigned char>(p, p + bytes)};
    {
      loopback_hub::inbox& box = hub_->inboxes[std::size_t(to)];
      std::lock_guard<std::mutex> lock(box.lock);
      box.messages.push_back(std::move(m));
    }
    started_.push_back(
        {true, -1, c, nullptr, 0, [done = std::move(done)](int, std::size_t) { done(); }, true});
  }

  void receive(int from, channel c, void* buffer, std::size_t bytes, memory_place,
               std::function<void(int, std::size_t)> done) override {
    started_.push_back(
        {false, from, c, static_cast<unsigned char*>(buffer), bytes, std::move(done), false});
  }

  bool poll() override {
    take_arrivals();
    // Receives take the earliest message that matches them, in the order
    // they were posted; then everything complete runs, in the order started.
    // Messages wait by channel and sender, so a receive looks at the first
    // of its sender's (or of every sender's, for any sender): under load
    // thousands wait, and a scan of them all per receive made every poll
    // quadratic.
    for (operation& o : started_) {
      if (o.sending || o.complete) continue;
      std::deque<message>* from = nullptr;
      if (o.from >= 0) {
        from = &waiting(o.c, o.from);
      } else {
        for (int p = 0; p < int(hub_->inboxes.size()); ++p) {
          std::deque<message>& q = waiting(o.c, p);
          if (!q.empty() &&
              (from == nullptr || from->empty() || q.front().order < from->front().order))
            from = &q;
        }
      }
      if (from == nullptr || from->empty()) continue;
      message& m = from->front();
      if (m.bytes.size() > o.bytes)
        throw error(errc::process_failed, -1, call::runtime,
                    "grma: network (loopback): a message of " + std::to_string(m.bytes.size()) +
                        " bytes from process " + std::to_string(m.from) + " for a receive of " +
                        std::to_string(o.bytes));
      std::memcpy(o.buffer, m.bytes.data(), m.bytes.size());
      o.from = m.from;
      o.bytes = m.bytes.size();
      o.complete = true;
      from->pop_front();
    }
    std::deque<operation> finished, going_on;
    for (operation& o : started_) (o.complete ? finished : going_on).push_back(std::move(o));
    started_.swap(going_on);
    for (operation& o : finished) o.done(o.from, o.bytes);
    return !finished.empty();
  }

  bool idle() const override {
    return std::all_of(started_.begin(), started_.end(),
                       [](const operation& o) { return !o.sending && o.from < 0; });
  }

  void abandon() override {
    started_.clear();
    for (std::deque<message>& q : arrived_) q.clear();
  }

 private:
  struct operation {
    bool sending;
    int from;  // a receive's sender (< 0: any, until it matches)
    channel c;
    unsigned char* buffer;
    std::size_t bytes;  // a receive's room, then what came
    std::function<void(int, std::size_t)> done;
    bool complete;
  };

  static constexpr std::size_t channels = 3;  // header, data, record

  std::deque<message>& waiting(channel c, int from) {
    return arrived_[(std::size_t(c) - 1) * hub_->inboxes.size() + std::size_t(from)];
  }

  void take_arrivals() {
    loopback_hub::inbox& box = hub_->inboxes[std::size_t(me_)];
    std::lock_guard<std::mutex> lock(box.lock);
    while (!box.messages.empty()) {
      message& m = box.messages.front();
      m.order = arrivals_++;
      waiting(m.c, m.from).push_back(std::move(m));
      box.messages.pop_front();
    }
  }

  std::shared_ptr<loopback_hub> hub_;
  int me_;
  std::deque<operation> started_;
  // Taken from the inbox, not yet received: by channel, then sender.
  std::vector<std::deque<message>> arrived_;
  std::uint64_t arrivals_ = 0;
};

}  // namespace

std::shared_ptr<loopback_hub> make_loopback_hub(int endpoints) {
  return std::make_shared<loopback_hub>(endpoints);
}

std::unique_ptr<transport> make_loopback_transport(std::shared_ptr<loopback_hub> hub, int index) {
  return std::make_unique<loopback_transport>(std::move(hub), index);
}

}  // namespace grma::detail
