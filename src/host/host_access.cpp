// Host access (papers/003): what a host thread's job::put, get, ... check
// and hand to the process's network engine (src/runtime/host_port.hpp).
#include <cstring>
#include <sstream>
#include <string>

#include "../runtime/host_port.hpp"
#include "grma/runtime.hpp"

namespace grma {

namespace {

[[noreturn]] void refuse(errc code, call where, const char* name, const std::string& message) {
  throw error(code, -1, where, detail::host_call_text(name, message));
}

[[noreturn]] void refuse(errc code, call where, const std::string& message) {
  refuse(code, where, call_name(where), message);
}

std::string window_text(window w) {
  return "window {" + std::to_string(w.slot) + ", " + std::to_string(w.generation) + "}";
}

// The command of an operation on `target`'s range of `w`, checked as far
// as the host can: the target's engine checks the range.
std::shared_ptr<detail::host_operation> operation_on(const detail::host_port& port, call where,
                                                     detail::remote_op op, window w, int target,
                                                     std::size_t offset, std::size_t bytes) {
  const detail::host_port::job_shape shape = port.running_shape(where);
  if (target < 0 || target >= shape.world_size)
    refuse(errc::rank_out_of_range, where,
           "target " + std::to_string(target) + " is not a world rank (the world has " +
               std::to_string(shape.world_size) + ")");
  switch (port.find_world_window(w, where)) {
    case detail::window_found::live:
      break;
    case detail::window_found::freed:
      refuse(errc::window_freed, where,
             window_text(w) + " was freed (job::world_windows() lists the live world windows)");
    case detail::window_found::never_created:
      refuse(errc::window_not_created, where,
             window_text(w) +
                 " is not a world window of the job (job::world_windows() lists the live ones)");
  }
  // The target's engine checks the range; one larger than all of a
  // device's memory it would take for a forged request (its bytes could not
  // be dropped).
  if (bytes > shape.heap_size)
    refuse(
        errc::range_outside_window, where,
        std::to_string(bytes) + " bytes exceed all " + std::to_string(shape.heap_size) +
            " bytes of a device's memory (its heaps and userdata): no window's range holds them");
  auto o = std::make_shared<detail::host_operation>();
  o->c.op = op;
  o->c.window = detail::window_key(w.slot, w.generation);
  o->c.target = target;
  o->c.offset = offset;
  o->c.bytes = bytes;
  return o;
}

// A put's bytes: inside the command when they fit, else sent from `source`.
void carry(detail::host_operation& o, const void* source, std::size_t bytes, call where) {
  if (bytes != 0 && source == nullptr)
    refuse(errc::null_buffer, where, "a null source for " + std::to_string(bytes) + " bytes");
  o.c.address = reinterpret_cast<std::uint64_t>(source);
  if (bytes != 0 && bytes <= detail::remote_inline_bytes) {
    std::memcpy(o.c.data, source, bytes);
    o.c.inline_bytes = std::uint16_t(bytes);
  }
}

// A host atomic's operation, and whether the word's old value comes back.
struct atomic_kind {
  detail::remote_atomic op;
  bool fetching;
};

atomic_kind atomic_kind_of(call where) {
  using detail::remote_atomic;
  switch (where) {
    case call::atomic_fetch:
      return {remote_atomic::fetch, true};
    case call::atomic_set:
      return {remote_atomic::set, false};
    case call::atomic_swap:
      return {remote_atomic::swap, true};
    case call::atomic_compare_swap:
      return {remote_atomic::compare_swap, true};
    case call::atomic_fetch_add:
      return {remote_atomic::add, true};
    case call::atomic_add:
      return {remote_atomic::add, false};
    case call::atomic_fetch_and:
      return {remote_atomic::bit_and, true};
    case call::atomic_and:
      return {remote_atomic::bit_and, false};
    case call::atomic_fetch_or:
      return {remote_atomic::bit_or, true};
    case call::atomic_or:
      return {remote_atomic::bit_or, false};
    case call::atomic_fetch_xor:
      return {remote_atomic::bit_xor, true};
    case call::atomic_xor:
      return {remote_atomic::bit_xor, false};
    default:
      break;
  }
  throw error(errc::invalid_enum, -1, where,
              std::string("grma: job::atomic: ") + call_name(where) + " is not an atomic");
}

}  // namespace

bool host_request::test() const {
  if (!op_) return true;
  switch (op_->outcome.load(std::memory_order_acquire)) {
    case detail::host_operation::in_flight:
      return false;
    case detail::host_operation::failed:
      throw error(op_->failure_code, -1, detail::host_call(op_->c), op_->failure);
    default:
      return true;
  }
}

void host_request::wait() const {
  if (!op_) return;
  if (!port_->wait(*op_, port_->timeout_seconds())) {
    std::ostringstream s;
    s << "grma: " << detail::host_operation_text(op_->c) << " did not complete in "
      << port_->timeout_seconds() << " s (GRMA_TIMEOUT)";
    throw error(errc::timeout, -1, detail::host_call(op_->c), s.str());
  }
  test();
}

detail::host_port& job::port(call where, const char* name) const {
  if (name == nullptr) name = call_name(where);
  if (state_ == nullptr)
    refuse(errc::invalid_config, where, name,
           "this handle holds no job (not launched, or waited for)");
  if (state_->port == nullptr)
    refuse(errc::invalid_config, where, name,
           "the job was launched without launch_options::host_access");
  return *state_->port;
}

host_request job::submit(detail::host_port& port, std::shared_ptr<detail::host_operation> op) {
  port.submit(op);
  return host_request(state_->port, std::move(op));
}

std::vector<window> job::world_windows() const {
  return port(call::runtime, "world_windows").world_windows();
}

int job::host_source() const {
  return port(call::runtime, "host_source").shape().origin;
}

host_request job::put(window w, int target, std::size_t offset, const void* source,
                      std::size_t bytes) {
  detail::host_port& p = port(call::put);
  auto o = operation_on(p, call::put, detail::remote_op::put, w, target, offset, bytes);
  o->c.flags = detail::remote_flag_in_window;
  carry(*o, source, bytes, call::put);
  return submit(p, std::move(o));
}

host_request job::get(window w, int target, std::size_t offset, void* destination,
                      std::size_t bytes) {
  detail::host_port& p = port(call::get);
  auto o = operation_on(p, call::get, detail::remote_op::get, w, target, offset, bytes);
  if (bytes != 0 && destination == nullptr)
    refuse(errc::null_buffer, call::get,
           "a null destination for " + std::to_string(bytes) + " bytes");
  o->c.flags = detail::remote_flag_in_window;
  o->c.address = reinterpret_cast<std::uint64_t>(destination);
  return submit(p, std::move(o));
}

host_request job::put_notify(window w, int target, std::size_t offset, const void* source,
                             std::size_t bytes, int tag, std::uint64_t immediate) {
  detail::host_port& p = port(call::put_notify);
  if (tag < 0)
    refuse(errc::negative_tag, call::put_notify, "tag " + std::to_string(tag) + " is negative");
  auto o =
      operation_on(p, call::put_notify, detail::remote_op::put_notify, w, target, offset, bytes);
  o->c.tag = tag;
  o->c.signal_value = immediate;
  carry(*o, source, bytes, call::put_notify);
  return submit(p, std::move(o));
}

host_request job::get_notify(window w, int target, std::size_t offset, void* destination,
                             std::size_t bytes, int tag, std::uint64_t immediate) {
  detail::host_port& p = port(call::get_notify);
  if (tag < 0)
    refuse(errc::negative_tag, call::get_notify, "tag " + std::to_string(tag) + " is negative");
  if (bytes != 0 && destination == nullptr)
    refuse(errc::null_buffer, call::get_notify,
           "a null destination for " + std::to_string(bytes) + " bytes");
  auto o =
      operation_on(p, call::get_notify, detail::remote_op::get_notify, w, target, offset, bytes);
  o->c.tag = tag;
  o->c.signal_value = immediate;
  o->c.address = reinterpret_cast<std::uint64_t>(destination);
  return submit(p, std::move(o));
}

host_request job::put_signal(window w, int target, std::size_t offset, const void* source,
                             std::size_t bytes, std::size_t signal_offset, std::uint64_t value,
                             signal_op op) {
  detail::host_port& p = port(call::put_signal);
  if (op != signal_op::set && op != signal_op::add)
    refuse(errc::invalid_enum, call::put_signal,
           "signal_op " + std::to_string(std::uint32_t(op)) + " is neither set nor add");
  if (signal_offset % sizeof(std::uint64_t) != 0)
    refuse(errc::signal_misaligned, call::put_signal,
           "signal offset " + std::to_string(signal_offset) + " is not 8-byte aligned");
  auto o =
      operation_on(p, call::put_signal, detail::remote_op::put_signal, w, target, offset, bytes);
  o->c.signal_op = std::uint8_t(op);
  o->c.signal_offset = signal_offset;
  o->c.signal_value = value;
  carry(*o, source, bytes, call::put_signal);
  return submit(p, std::move(o));
}

// The target's engine applies it at the word's width, as a rank's remote
// atomic; `tag` 1 asks for the old value back.
host_request job::atomic(window w, int target, std::size_t offset, call where,
                         std::uint64_t operand, std::uint64_t compare, void* old,
                         std::size_t bytes) {
  const atomic_kind kind = atomic_kind_of(where);
  detail::host_port& p = port(where);
  if (kind.fetching && old == nullptr)
    refuse(errc::null_buffer, where, "a null `old` for the old value");
  if (offset % bytes != 0)
    refuse(errc::word_misaligned, where,
           "offset " + std::to_string(offset) + " is not " + std::to_string(bytes) +
               "-byte aligned (the atomic's word is " + std::to_string(bytes) + " bytes)");
  auto o = operation_on(p, where, detail::remote_op::atomic, w, target, offset, bytes);
  o->c.flags = detail::remote_flag_in_window;
  o->c.signal_op = std::uint8_t(kind.op);
  o->c.signal_value = operand;
  o->c.signal_offset = compare;
  o->c.tag = kind.fetching ? 1 : 0;
  o->c.address = reinterpret_cast<std::uint64_t>(old);
  o->old = kind.fetching ? old : nullptr;
  return submit(p, std::move(o));
}

void runtime::refuse_host_access_in_run(const launch_options& options) {
  if (options.host_access)
    throw error(errc::invalid_config, -1, call::runtime,
                "grma: launch_options::host_access needs runtime::launch (host threads reach "
                "the job through its handle): runtime::run returns only after the job");
}

// Called as the job's thread leaves the run (host_access_end's destructor),
// `failing` where an exception is on its way out of it: the job's failure.
// The port is closed already where the engine started.
void runtime::end_host_access(detail::host_port* port, bool failing) noexcept {
  if (port == nullptr) return;
  if (failing)
    port->close(detail::job_failed_text, errc::aborted);
  else
    port->close("the job has ended (host operations go into a job while its ranks run)",
                errc::invalid_config);
}

std::shared_ptr<detail::host_port> runtime::make_host_port() const {
  // GRMA_TIMEOUT=0 turns the watchdog off: a wait is unbounded then (1e9 s,
  // which a condition variable's clock still counts; a longer limit would
  // overflow it and end every wait at once).
  const double timeout = settings().timeout_seconds;
  return std::make_shared<detail::host_port>(timeout > 0 && timeout < 1e9 ? timeout : 1e9);
}

}  // namespace grma
