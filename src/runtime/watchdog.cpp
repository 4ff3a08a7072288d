#include "watchdog.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "error_text.hpp"
#include "grma/error.hpp"
#include "grma/types.hpp"

namespace grma::detail {
namespace {


const char* cmp_name(std::int64_t c) {
  static const char* names[] = {"==", "!=", ">", ">=", "<", "<="};
  return c >= 0 && c < 6 ? names[c] : "?";
}

// How many of an array's words a wait wants: "all", "one" or "some".
const char* words_wanted(call where) {
  if (where == call::wait_until_all || where == call::wait_until_all_vector) return "all";
  if (where == call::wait_until_any || where == call::wait_until_any_vector) return "one";
  return "some";
}
bool is_vector_wait(call where) {
  return where == call::wait_until_all_vector || where == call::wait_until_any_vector ||
         where == call::wait_until_some_vector;
}
// The waits whose last argument is a value of the program's.
bool is_word_wait(call where) {
  return where == call::wait_signal || where == call::wait_until || where == call::wait_until_all ||
         where == call::wait_until_any || where == call::wait_until_some || is_vector_wait(where);
}

// A notification's source: a rank, or a process's host threads (numbered
// from the world size on: job::host_source).
void describe_source(std::ostringstream& s, std::int64_t source, int world_size) {
  s << source;
  if (source >= world_size) s << " (the host of process " << source - world_size << ")";
}

// `self`: the blocked rank's world number.
void describe_call(std::ostringstream& s, rank_status& st, int world_size, std::int64_t self) {
  const auto where = static_cast<call>(load_relaxed<scope::system>(st.where));
  std::int64_t a[4];
  for (int i = 0; i < 4; ++i) a[i] = load_relaxed<scope::system>(st.args[i]);
  s << call_name(where);
  if (!is_word_wait(where)) {
    switch (a[3]) {
      case team_exchange_wait:
        s << " over a team (slot " << a[0] << ", collective #" << a[2] << "), waiting for rank "
          << a[1] << " to arrive";
        return;
      case remote_delivery_wait:
        s << ", waiting until every operation it handed the network engine (" << a[0]
          << " so far) is in place at the other nodes (a notification is once it is in its "
             "target's queue)";
        return;
      case command_slot_wait:
        s << ", waiting for room in its process's ring of commands to the network engine";
        return;
      case remote_answer_wait:
        s << " (target " << a[0] << ", offset " << a[1] << ", " << bytes_text(a[2])
          << "), waiting for the network engine to read its source or bring its answer";
        return;
      case lock_wait: {
        static const char* locks[] = {
            "the node's window table, which another rank holds",
            "the node's team table, which another rank holds",
            "its commands to the network engine, which another of its threads holds",
            "the device's heap, which another rank holds"};
        s << ", waiting for the lock of "
          << (a[0] >= 0 && a[0] < 4 ? locks[a[0]] : "something unknown");
        return;
      }
      default:
        break;
    }
  }
  switch (where) {
    case call::wait_notifications:
    case call::wait_some_notifications:
      s << "(window " << a[0] << ", source ";
      if (a[1] < 0)
        s << "any";
      else
        describe_source(s, a[1], world_size);
      s << ", tag ";
      if (a[2] < 0) s << "any"; else s << a[2];
      s << (where == call::wait_notifications ? ", count " : ", up to ") << a[3] << ")";
      break;
    case call::wait_signal:
      s << "(window " << a[0] << ", offset " << a[1] << ", until word " << cmp_name(a[2]) << " "
        << a[3] << ")";
      break;
    case call::barrier:
    case call::window_create:
    case call::window_free:
      s << " on communicator " << comm_name(std::uint32_t(a[0])) << " (collective #" << a[2]
        << ")";
      if (a[1] >= 0) s << ", waiting for rank " << a[1] << " to arrive";
      else
        s << ", waiting for rank " << -1 - a[1] << " to release it";
      break;
    case call::wait_until:
      s << "(word 0x" << std::hex << a[0] << std::dec << ", until word " << cmp_name(a[2]) << " "
        << a[3] << ")";
      break;
    case call::wait_until_all:
    case call::wait_until_any:
    case call::wait_until_some:
    case call::wait_until_all_vector:
    case call::wait_until_any_vector:
    case call::wait_until_some_vector:
      s << "(" << a[1] << " words at 0x" << std::hex << a[0] << std::dec << ", until "
        << words_wanted(where) << " " << cmp_name(a[2]) << " ";
      if (is_vector_wait(where))
        s << "their values at 0x" << std::hex << a[3] << std::dec;
      else
        s << a[3];
      s << ")";
      break;
    case call::put_notify:
    case call::get_notify:
    case call::put_value_notify:
      s << "(window " << a[0] << ", target " << a[1] << ", tag " << a[2]
        << "), waiting for space in ";
      // Only the rank's own waits empty its queue: it waits for itself. The
      // target counts in the window's communicator, which the host cannot
      // read here (it is in device memory): a world number equals it for the
      // same rank only (a device window's ranks on a later device number
      // below their world numbers), so a self-put in such a window keeps the
      // general words, never the wrong ones.
      if (a[1] == self)
        s << "its own notification queue, which only its own waits empty: it must take "
             "notifications before it sends itself more";
      else
        s << "the target's notification queue";
      break;
    case call::none: s << ", waiting for space in the log queue"; break;
    default: break;
  }
}

// `text` cut to at most `bytes`, its end marked where it was cut.
std::string cut_to(std::string text, std::size_t bytes) {
  constexpr char cut[] = " [...]";
  if (text.size() <= bytes) return text;
  return text.substr(0, bytes - (sizeof cut - 1)) + cut;
}

void describe_notification(std::ostringstream& s, const notification& n, int world_size) {
  s << " [window " << (n.window & 0xffffu) << " from ";
  describe_source(s, n.source, world_size);
  s << " tag " << n.tag << "]";
}

}  // namespace

std::uint64_t progress_signature(const std::vector<const device_view*>& job) {
  std::uint64_t sum = 0;
  for (const device_view* v : job) {
    sum += load_acquire<scope::system>(v->log->consumed);  // lines the host printed
    for (int r = 0; r < v->ranks; ++r) {
      sum += load_relaxed<scope::system>(v->status[r].progress);
      sum += std::uint64_t(load_relaxed<scope::system>(v->status[r].state)) << 48;
      // A blocked wait's arrivals (its unmatched count changes as it takes
      // them) are progress too: a wait for many that come slowly.
      sum += std::uint64_t(std::uint32_t(load_relaxed<scope::system>(v->status[r].unmatched)))
             << 24;
    }
  }
  return sum;
}

bool any_rank_blocked(const std::vector<const device_view*>& job) {
  for (const device_view* v : job)
    for (int r = 0; r < v->ranks; ++r)
      if (load_relaxed<scope::system>(v->status[r].state) == std::int32_t(rank_state::blocked))
        return true;
  return false;
}

std::string blocked_ranks_report(const std::vector<const device_view*>& job, double idle_seconds) {
  std::ostringstream s;
  s.precision(3);
  s << "grma: watchdog: no progress for " << idle_seconds
    << " s (GRMA_TIMEOUT); blocked ranks:" << blocked_ranks(job) << returned_ranks(job);
  return s.str();
}

std::string returned_ranks(const std::vector<const device_view*>& job, int shown) {
  std::ostringstream s;
  int returned = 0;
  for (const device_view* v : job)
    for (int r = 0; r < v->ranks; ++r)
      if (load_relaxed<scope::system>(v->status[r].state) == std::int32_t(rank_state::finished) &&
          returned++ < shown)
        s << "\n  rank " << v->first_rank + r << ": returned";
  if (returned > shown) s << "\n  ... and " << returned - shown << " more ranks returned";
  return s.str();
}

std::string blocked_ranks(const std::vector<const device_view*>& job) {
  std::ostringstream s;
  for (const device_view* d : job) {
    const device_view& v = *d;
    for (int r = 0; r < v.ranks; ++r) {
      rank_status& st = v.status[r];
      if (load_relaxed<scope::system>(st.state) != std::int32_t(rank_state::blocked)) continue;
      s << "\n  rank " << v.first_rank + r << ": ";
      describe_call(s, st, v.world_size, v.first_rank + r);
      const std::int32_t total = load_relaxed<scope::system>(st.unmatched);
      s << "; unmatched notifications: " << total;
      for (int i = 0; i < total && i < unmatched_shown; ++i) {
        notification& n = st.unmatched_head[i];
        describe_notification(s,
                              notification{load_relaxed<scope::system>(n.window),
                                           load_relaxed<scope::system>(n.source),
                                           load_relaxed<scope::system>(n.tag), 0, 0},
                              v.world_size);
      }
      if (total > unmatched_shown) s << " ...";
      if (std::uint32_t(total) >= v.match_capacity)
        s << " (GRMA_MATCH_CAPACITY is full: more may wait in its queue)";
    }
  }
  return s.str();
}

bool leave_report(job_control& c, const std::string& report) {
  if (!compare_exchange_acquire<scope::system>(c.report_claimed, 0u, 1u)) return false;
  const std::string text = cut_to(report, sizeof c.report);
  std::memcpy(c.report, text.data(), text.size());
  c.report_length = std::uint32_t(text.size());
  // Release: the text and its length are in place before `report_ready`.
  store_release<scope::system>(c.report_ready, 1u);
  return true;
}

std::string report_with(std::string report, std::string added) {
  constexpr std::size_t limit = sizeof(job_control::report);
  if (report.size() + added.size() <= limit) return report + added;
  report = cut_to(std::move(report), std::max(limit / 2, limit - std::min(added.size(), limit)));
  return report + cut_to(std::move(added), limit - report.size());
}

std::string left_report(const job_control& c) {
  // Acquire: pairs with leave_report's release.
  if (load_acquire<scope::system>(c.report_ready) == 0) return {};
  return std::string(c.report, c.report_length);
}

}  // namespace grma::detail
