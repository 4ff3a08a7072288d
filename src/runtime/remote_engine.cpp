#include "remote_engine.hpp"

#include <chrono>
#include <thread>
#include <utility>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "grma/error.hpp"
#include "engine_arrivals.hpp"
#include "engine_completion.hpp"
#include "engine_context.hpp"
#include "engine_host.hpp"
#include "engine_intake.hpp"
#include "engine_liveness.hpp"
#include "engine_operations.hpp"

namespace grma::detail {
namespace {

// Completions the loop takes from the network at a time. Under a steady
// inflow a drain without a bound ran for as long as the inflow did, and with
// it held up this engine's beats, acknowledgements and its own ranks'
// commands (up to 9340 completions and 0.3 s at a time in the conformance
// suite, four processes as two nodes on an idle two-core machine; 64: at
// most 32 ms, and the suite no slower).
constexpr int drain_polls = 64;

// An engine that found nothing to do for this long naps between turns, so
// that a job whose ranks compute for long leaves the core alone. Counted in
// time, not turns: a turn's length varies with the machine and the
// transport, and a nap (tens of microseconds) lands on the next message's
// path, so it must come only after a gap much longer than itself.
constexpr auto nap_after = std::chrono::milliseconds(2);
constexpr auto nap = std::chrono::microseconds(20);

}  // namespace

// The engine's pieces, each with the context they share; they call each
// other directly (one thread runs them all).
struct remote_engine::state {
  engine_context cx;
  engine_intake intake;
  engine_operations operations;
  engine_completion completion;
  engine_arrivals arrivals;
  engine_liveness liveness;
  engine_host host;
  bool said_done = false;
  bool stopped_taking = false;
  std::atomic<bool> local_done{false};

  state(const job_nodes& n, std::vector<const device_view*> v, std::unique_ptr<engine_memory> m,
        std::unique_ptr<transport> t, std::shared_ptr<host_port> port)
      : cx(n, std::move(v), std::move(m), std::move(t)),
        intake(cx, completion, arrivals),
        operations(cx, intake, completion, arrivals, liveness, host),
        completion(cx, intake, operations, liveness, host),
        arrivals(cx, intake, liveness),
        liveness(cx, intake, operations, completion, host),
        host(cx, std::move(port), intake, operations, liveness) {}

  // This process's ranks are done and every operation of theirs is
  // acknowledged: the other processes may stop once they are done too.
  void say_done() {
    said_done = true;
    remote_command c{};
    c.op = wire_done;
    for (int p = 0; p < cx.nodes.processes; ++p)
      if (cx.peer(p)) intake.send_header(p, c);
  }

  // Every process is done, and nothing of this engine's is still moving.
  bool finished() const {
    return said_done && liveness.everyone_done() && cx.net->idle() && cx.lanes.idle() &&
           completion.settled() && arrivals.idle() && !operations.waits_any() && host.answered();
  }

  void loop() {
    engine_clock::time_point listened = engine_clock::now();  // for watch()
    engine_clock::time_point idle_since = listened;
    const bool spin = cx.memory->spin_when_idle();
#if defined(__linux__)
    // A nap ends within a microsecond of its time, not up to 50 us later
    // (the default timer slack): the message that ends it waits for it.
    prctl(PR_SET_TIMERSLACK, 1000UL);
#endif
    try {
      cx.memory->bind();
      operations.listen();
      host.attach();
      while (true) {
        cx.now = engine_clock::now();
        bool busy = intake.take_commands();
        busy |= host.take();
        intake.flush_headers();  // what the ranks asked for goes at once
        int polls = 0;
        // Replies (a get's data, a fetching atomic's old value) go as soon
        // as their requests are served, not after the loop's other work.
        while (polls < drain_polls && cx.net->poll()) {
          ++polls;
          intake.flush_headers();
        }
        busy |= polls > 0;
        if (polls < drain_polls) listened = cx.now;  // it took all there was
        busy |= cx.memory->progress();  // returns the staging of copies done
        busy |= cx.lanes.pump();
        busy |= operations.handle_waiting();
        busy |= completion.publish_held();
        busy |= arrivals.apply();
        const bool local = local_done.load(std::memory_order_acquire);
        // Read before watch(), which forwards an abort it sees: one seen
        // here has been forwarded when the loop ends on it.
        const bool aborted = load_acquire<scope::system>(cx.first->control->abort) != 0;
        if (local) completion.drop_held();
        if (local && !stopped_taking) {
          stopped_taking = true;
          host.stop_taking();
        }
        busy |= completion.send_acks();
        liveness.watch(listened);
        if (local && !aborted && !said_done && completion.answered() && host.answered()) say_done();
        intake.flush_headers();  // replies, acknowledgements, beats
        if (local && aborted) {
          intake.flush_all_headers();  // an abort to forward
          break;
        }
        if (finished()) break;
        if (busy) {
          idle_since = cx.now;
        } else if (cx.now - idle_since > nap_after) {
          std::this_thread::sleep_for(nap);
        } else if (!spin) {
          std::this_thread::yield();
        }
      }
    } catch (const error& e) {
      liveness.lose(e.what());
    }
    host.close();
    cx.memory->unbind();
    // Ending in failure: nothing more will complete.
    if (load_acquire<scope::system>(cx.first->control->abort) != 0) cx.net->abandon();
  }
};

remote_engine::remote_engine(const job_nodes& nodes, std::vector<const device_view*> views,
                             std::unique_ptr<engine_memory> memory, std::unique_ptr<transport> net,
                             std::shared_ptr<host_port> port)
    : s_(std::make_unique<state>(nodes, std::move(views), std::move(memory), std::move(net),
                                 std::move(port))) {}

void remote_engine::start() {
  s_->liveness.hear_all();
  thread_ = std::thread([this] { s_->loop(); });
}

remote_engine::~remote_engine() { finish(); }

void remote_engine::ranks_done() { s_->local_done.store(true, std::memory_order_release); }

void remote_engine::finish() {
  if (!thread_.joinable()) return;
  ranks_done();
  thread_.join();
}

const std::atomic<std::uint64_t>& remote_engine::others_progress() const {
  return s_->liveness.others_progress();
}

std::string remote_engine::failure() const { return s_->liveness.failure(); }

}  // namespace grma::detail
