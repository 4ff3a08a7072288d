// Host access (papers/003): host threads of every process put into, get
// from, signal, notify and update every rank's window while the ranks
// compute, taking no part (a put over a word just signalled, or over an
// earlier put, lands last); the data is checked byte for byte on both
// sides, every notification counted once, every atomic's old value
// accounted for. On every path: the host's own process, another process of
// the node and another node.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace conformance {
namespace {

class HostAccess : public testing::TestWithParam<config> {};

// Per host (a process's host threads), into every rank's window.
// Across nodes: inside the command; inside its header on the wire, past
// the command's room; after its header (more than a header carries); a
// get's answer inside its header.
constexpr std::size_t small_bytes = 40;
constexpr std::size_t notify_bytes = 600;
constexpr std::size_t large_bytes = 4000;
constexpr std::size_t get_bytes = 1000;
constexpr std::size_t huge_bytes = (5 << 20) / 2;  // refused: past every range
constexpr int adds = 3;  // fetch_adds per host and rank
constexpr int overwrites = 4;  // words per host and rank signalled, then put over
constexpr int notify_tag = 7;
constexpr int get_tag = 8;     // a host's get_notify
constexpr int most_hosts = 4;  // the suite's largest job has 4 processes
// The 4-byte counter's start: the hosts' adds carry past 32 bits, which a
// 4-byte add drops and an 8-byte one would not.
constexpr std::uint32_t narrow_start = 0xfffffffeu;

// A rank's window: for each host its small, large and notified put and the
// words it overwrites; the bytes hosts get; the words atomics and the signal
// change (`narrow`: a 4-byte word swapped, a 4-byte counter, a float
// swapped).
struct host_slots {
  static constexpr std::size_t puts = (small_bytes + large_bytes + notify_bytes + 7) / 8 * 8;
  static constexpr std::size_t per_host = round64(puts + overwrites * sizeof(std::uint64_t));
  static constexpr std::size_t first_put = 0;
  static constexpr std::size_t gets = first_put + most_hosts * per_host;
  static constexpr std::size_t counter = gets + get_bytes + 8 - get_bytes % 8;
  static constexpr std::size_t swapped = counter + 8;
  static constexpr std::size_t bits = swapped + 8;
  static constexpr std::size_t narrow = bits + 8;
  static constexpr std::size_t signal = narrow + 16;
  static constexpr std::size_t bytes = signal + 8;
  GRMA_HOST_DEVICE static constexpr std::size_t small(int host) {
    return first_put + std::size_t(host) * per_host;
  }
  GRMA_HOST_DEVICE static constexpr std::size_t large(int host) {
    return small(host) + small_bytes;
  }
  GRMA_HOST_DEVICE static constexpr std::size_t notified(int host) {
    return large(host) + large_bytes;
  }
  GRMA_HOST_DEVICE static constexpr std::size_t overwritten(int host, int k) {
    return small(host) + puts + std::size_t(k) * sizeof(std::uint64_t);
  }
};

std::uint64_t seed_of(int host, int target, int what) {
  return mix(std::uint64_t(host) + 1, std::uint64_t(target), std::uint64_t(what));
}
GRMA_HOST_DEVICE inline std::uint64_t rank_seed(int rank) {
  return mix(std::uint64_t(rank), 77);
}
// The immediate host `host` sends `target` with its notified put (what 3)
// and get (what 5).
GRMA_HOST_DEVICE inline std::uint64_t immediate_of(int host, int target, int what) {
  return mix(std::uint64_t(host), std::uint64_t(target), std::uint64_t(what));
}

// The bitwise atomics, in this order: host h sets bit h with fetch_or,
// ors bit 48 + h (already set: it stays), flips bit 8 + h (clear) with
// fetch_xor and bit 56 + h (set) with xor, and clears bits 16 + h and
// 40 + h (set) with fetch_and and and. No other host touches those bits,
// so the word ends the same whatever the hosts' order, and no operation
// there does what an add would.
GRMA_HOST_DEVICE inline std::uint64_t bits_before(int hosts) {
  std::uint64_t v = 0;
  for (int h = 0; h < hosts; ++h)
    v |= (std::uint64_t{1} << (16 + h)) | (std::uint64_t{1} << (40 + h)) |
         (std::uint64_t{1} << (48 + h)) | (std::uint64_t{1} << (56 + h));
  return v;
}
GRMA_HOST_DEVICE inline std::uint64_t bits_after(int hosts) {
  std::uint64_t v = 0;
  for (int h = 0; h < hosts; ++h)
    v |= (std::uint64_t{1} << h) | (std::uint64_t{1} << (8 + h)) | (std::uint64_t{1} << (48 + h));
  return v;
}

struct computing_target {
  buffers mem;
  int hosts;         // processes whose host threads issue
  int first_source;  // the first host's source (the world size)

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* base = mem.get<unsigned char>(r, host_slots::bytes + 64);
    auto* cell = reinterpret_cast<int*>(base + host_slots::bytes);
    for (std::size_t i = std::size_t(r.thread()); i < host_slots::bytes;
         i += std::size_t(r.threads()))
      base[i] = 0;
    r.sync_threads();
    fill(r, base + host_slots::gets, get_bytes, rank_seed(me));
    if (r.thread() == 0) {
      *reinterpret_cast<std::uint64_t*>(base + host_slots::bits) = bits_before(hosts);
      *reinterpret_cast<std::uint32_t*>(base + host_slots::narrow + 4) = narrow_start;
    }
    r.sync_threads();
    grma::window w = r.window_create(grma::world, base, host_slots::bytes);
    // Compute until every host has signalled: the hosts' operations land
    // meanwhile, served by the engines alone.
    auto* signal = reinterpret_cast<std::uint64_t*>(base + host_slots::signal);
    std::uint64_t acc = std::uint64_t(me);
    unsigned long long turns = 0;
    while (!agree(r, r.read(signal) >= std::uint64_t(hosts), cell)) {
      for (int i = 0; i < 64; ++i) acc = acc * 6364136223846793005ull + 1442695040888963407ull;
      ++turns;
      relax();
    }
    CONF_EXPECT(r, rec, acc != 0 || turns == 0, 0, 0, 0);  // the loop's work is used
    r.wait_signal(w, host_slots::signal, grma::cmp::eq, std::uint64_t(hosts));  // acquire
    auto* words = reinterpret_cast<std::uint64_t*>(base + host_slots::counter);
    CONF_EXPECT(r, rec, r.read(words) == std::uint64_t(hosts * adds), 1, r.read(words),
                hosts * adds);
    // compare_swap(0 -> host + 1) by every host: exactly one succeeded.
    const std::uint64_t swapped = r.read(words + 1);
    CONF_EXPECT(r, rec, swapped >= 1 && swapped <= std::uint64_t(hosts), 2, swapped, hosts);
    const std::uint64_t bits = r.read(words + 2);
    CONF_EXPECT(r, rec, bits == bits_after(hosts), 6, (long long)bits,
                (long long)bits_after(hosts));
    // The 4-byte words: one host's compare_swap took (0 -> -(host + 1)),
    // the counter wrapped within its 4 bytes, the float is one host's.
    const auto* narrow = reinterpret_cast<const std::int32_t*>(base + host_slots::narrow);
    const std::int32_t swapped32 = r.read(narrow);
    CONF_EXPECT(r, rec, swapped32 <= -1 && swapped32 >= -hosts, 7, swapped32, hosts);
    const std::uint32_t count32 = r.read(reinterpret_cast<const std::uint32_t*>(narrow + 1));
    CONF_EXPECT(r, rec, count32 == std::uint32_t(narrow_start + std::uint32_t(hosts * adds)), 8,
                count32, hosts * adds);
    const float swapped_float = r.read(reinterpret_cast<const float*>(narrow + 2));
    CONF_EXPECT(r, rec,
                swapped_float >= 0.5f && swapped_float <= float(hosts) - 0.5f &&
                    swapped_float - float(int(swapped_float)) == 0.5f,
                9, (long long)(swapped_float * 2), hosts);
    for (int h = 0; h < hosts; ++h) {
      tally(r, rec, 2);
      CONF_CHECK_PATTERN(r, rec, base + host_slots::small(h), small_bytes,
                         mix(std::uint64_t(h) + 1, std::uint64_t(me), 1), 0, h);
      CONF_CHECK_PATTERN(r, rec, base + host_slots::large(h), large_bytes,
                         mix(std::uint64_t(h) + 1, std::uint64_t(me), 2), 0, 100 + h);
      for (int k = 0; k < overwrites; ++k)
        CONF_CHECK_PATTERN(r, rec, base + host_slots::overwritten(h, k), sizeof(std::uint64_t),
                           mix(std::uint64_t(h) + 1, std::uint64_t(me), 6 + k), 0,
                           300 + 10 * h + k);
    }
    // One notification with `tag` per host: its source a host's, its
    // immediate that host's (immediate_of); counted in rec.count[counter].
    // Waited for from any source, or (`by_host`) from each host by its
    // source, the last process's first.
    const auto per_host = [&](int tag, int what, int counter, bool by_host, auto&& found) {
      for (int h = 0; h < hosts; ++h) {
        const int from = by_host ? r.host_source(hosts - 1 - h) : grma::any_source;
        CONF_EXPECT(r, rec, !by_host || from == first_source + hosts - 1 - h, tag, from, h);
        const grma::envelope e = r.wait_notification(w, from, tag);
        CONF_EXPECT(r, rec, !by_host || e.source == from, tag, e.source, from);
        const int host = e.source - first_source;
        const bool known = host >= 0 && host < hosts;
        CONF_EXPECT(r, rec, known, tag, e.source, first_source);
        if (!known) continue;
        CONF_EXPECT(r, rec, e.immediate == immediate_of(host, me, what), tag, host, e.immediate);
        found(host);
        tally(r, rec, counter);
      }
    };
    // A put_notify's data is there; a get_notify's bytes the host checks.
    per_host(notify_tag, 3, 0, true, [&](int host) {
      CONF_CHECK_PATTERN(r, rec, base + host_slots::notified(host), notify_bytes,
                         mix(std::uint64_t(host) + 1, std::uint64_t(me), 3), 0, 200 + host);
    });
    per_host(get_tag, 5, 3, false, [](int) {});
    grma::envelope stray{};
    const bool more = r.test_notification(w, grma::any_source, grma::any_tag, stray);
    CONF_EXPECT(r, rec, !more, 5, stray.source, stray.tag);
    r.window_free(w);
    mem.release(r, base);
  }
};

// The job's world windows once its ranks have made one (none after 30 s).
std::vector<grma::window> world_windows_within_30s(const grma::job& running) {
  std::vector<grma::window> windows;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((windows = running.world_windows()).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return windows;
}

// What one host thread issued to one target, checked after completion.
struct issued {
  int target;
  std::vector<unsigned char> got = std::vector<unsigned char>(get_bytes);
  std::vector<unsigned char> got_notified = std::vector<unsigned char>(get_bytes);
  std::uint64_t olds[adds] = {};
  std::uint64_t swap_old = 0;
  std::uint64_t or_old = 0, xor_old = 0, and_old = 0;
  std::uint32_t olds32[adds] = {};
  std::int32_t swap_old32 = 0;
  float float_old = 0;
};

TEST_P(HostAccess, HostThreadsReachComputingRanksOnEveryPath) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.host_access = true;
  const int ranks = j.resolve(computing_target{});
  const grma::rank_info info = rt.info(computing_target{}, j.options());
  const int hosts = info.process_count;
  ASSERT_LE(hosts, most_hosts);
  const buffers mem = j.prepare(0, host_slots::bytes + 64);
  const int me = info.process_index;

  grma::job running = rt.launch(computing_target{mem, hosts, ranks}, j.options());
  const std::vector<grma::window> windows = world_windows_within_30s(running);
  ASSERT_EQ(windows.size(), 1u);
  const grma::window w = windows[0];
  EXPECT_EQ(running.host_source(), ranks + me);

  // Bad arguments are refused in the caller, before anything is sent.
  std::uint64_t word = 0;
  const auto refused = [](auto&& call, grma::errc code, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "not refused: " << text;
    } catch (const grma::error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  refused([&] { running.put(w, ranks, 0, &word, 8); }, grma::errc::rank_out_of_range,
          "job::put: target " + std::to_string(ranks) + " is not a world rank");
  refused(
      [&] {
        running.get(grma::window{w.slot, w.generation + 2}, 0, 0, &word, 8);
      },
      grma::errc::window_not_created, "is not a world window of the job");
  refused([&] { running.atomic_fetch_add(w, 0, host_slots::counter + 4, 1, &word); },
          grma::errc::word_misaligned,
          "offset " + std::to_string(host_slots::counter + 4) + " is not 8-byte aligned");
  refused([&] { running.atomic_add<std::uint32_t>(w, 0, host_slots::narrow + 2, 1); },
          grma::errc::word_misaligned,
          "job::atomic_add: offset " + std::to_string(host_slots::narrow + 2) +
              " is not 4-byte aligned (the atomic's word is 4 bytes)");
  refused([&] { running.put(w, 0, 0, nullptr, 8); }, grma::errc::null_buffer, "a null source");
  refused([&] { running.put_notify(w, 0, 0, &word, 8, -1); }, grma::errc::negative_tag, "tag -1");
  refused([&] { running.get_notify(w, 0, 0, &word, 8, -2); }, grma::errc::negative_tag,
          "job::get_notify: tag -2 is negative");
  refused([&] { running.get_notify(w, 0, 0, nullptr, 8, 1); }, grma::errc::null_buffer,
          "a null destination");

  // Several host threads at once, each taking every fourth target.
  constexpr int threads = 4;
  std::vector<std::deque<issued>> work(threads);  // deque: answers land in place
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<grma::host_request> requests, refusals;
      std::vector<unsigned char> small(small_bytes), large(large_bytes), notified(notify_bytes);
      std::vector<std::vector<unsigned char>> keep;  // sources stay until complete
      for (int target = t; target < ranks; target += threads) {
        issued& mine = work[std::size_t(t)].emplace_back();
        mine.target = target;
        auto pattern = [&](std::size_t bytes, int what) {
          std::vector<unsigned char>& v = keep.emplace_back(bytes);
          for (std::size_t i = 0; i < bytes; ++i) v[i] = pattern_byte(seed_of(me, target, what), i);
          return v.data();
        };
        requests.push_back(
            running.put(w, target, host_slots::small(me), pattern(small_bytes, 1), small_bytes));
        requests.push_back(
            running.put(w, target, host_slots::large(me), pattern(large_bytes, 2), large_bytes));
        requests.push_back(running.put_notify(w, target, host_slots::notified(me),
                                              pattern(notify_bytes, 3), notify_bytes, notify_tag,
                                              immediate_of(me, target, 3)));
        // A signal set, then a put over the signal word, on several words
        // back to back: each put lands last (a host's operations to a
        // target take effect in order), however the target's engine batches
        // them.
        for (int k = 0; k < overwrites; ++k) {
          requests.push_back(running.put_signal(w, target, 0, nullptr, 0,
                                                host_slots::overwritten(me, k), k + 1,
                                                grma::signal_op::set));
          requests.push_back(running.put(w, target, host_slots::overwritten(me, k),
                                         pattern(sizeof(std::uint64_t), 6 + k),
                                         sizeof(std::uint64_t)));
        }
        for (int a = 0; a < adds; ++a)
          requests.push_back(
              running.atomic_fetch_add(w, target, host_slots::counter, 1, &mine.olds[a]));
        requests.push_back(running.atomic_compare_swap(w, target, host_slots::swapped, 0,
                                                       std::uint64_t(me) + 1, &mine.swap_old));
        const auto bit = [&](int at) { return std::uint64_t{1} << (at + me); };
        requests.push_back(
            running.atomic_fetch_or(w, target, host_slots::bits, bit(0), &mine.or_old));
        requests.push_back(running.atomic_or(w, target, host_slots::bits, bit(48)));
        requests.push_back(
            running.atomic_fetch_xor(w, target, host_slots::bits, bit(8), &mine.xor_old));
        requests.push_back(running.atomic_xor(w, target, host_slots::bits, bit(56)));
        requests.push_back(
            running.atomic_fetch_and(w, target, host_slots::bits, ~bit(16), &mine.and_old));
        requests.push_back(running.atomic_and(w, target, host_slots::bits, ~bit(40)));
        // The 4-byte words (the counter's offset 4-byte aligned only), the
        // word's type named or taken from `old`.
        requests.push_back(running.atomic_compare_swap(w, target, host_slots::narrow, 0, -(me + 1),
                                                       &mine.swap_old32));
        for (int a = 0; a < adds; ++a)
          requests.push_back(running.atomic_fetch_add<std::uint32_t>(
              w, target, host_slots::narrow + 4, 1, &mine.olds32[a]));
        requests.push_back(running.atomic_swap(w, target, host_slots::narrow + 8, float(me) + 0.5f,
                                               &mine.float_old));
        requests.push_back(running.get(w, target, host_slots::gets, mine.got.data(), get_bytes));
        requests.push_back(running.get_notify(w, target, host_slots::gets, mine.got_notified.data(),
                                              get_bytes, get_tag, immediate_of(me, target, 5)));
        // A large put that ends past the target's range (its bytes follow
        // the header and are dropped there) and a signal past it: each
        // request fails alone, writing nothing (the signal word, the
        // range's last, would show it), and what follows is served.
        refusals.push_back(
            running.put(w, target, host_slots::signal, pattern(large_bytes, 4), large_bytes));
        refusals.push_back(running.put_signal(w, target, host_slots::small(me), pattern(8, 1), 8,
                                              host_slots::bytes, 1, grma::signal_op::add));
        // And, to the thread's first target, one of several of the engines'
        // data chunks (1 MiB each), dropped a chunk at a time.
        if (target == t)
          refusals.push_back(running.put(w, target, 0, pattern(huge_bytes, 5), huge_bytes));
        // Last: a host's operations to a target complete in order, so the
        // target that sees this signal finds all the above in place.
        requests.push_back(running.put_signal(w, target, host_slots::small(me), pattern(8, 1), 8,
                                              host_slots::signal, 1, grma::signal_op::add));
      }
      for (const grma::host_request& q : requests) q.wait();
      for (const grma::host_request& q : requests) EXPECT_TRUE(q.test());
      const std::string registered = " exceeds the " + std::to_string(host_slots::bytes) +
                                     " bytes registered with window " + std::to_string(w.slot) +
                                     "; nothing was written";
      // Per target: the large put, the signal, and (the first) the huge put.
      std::size_t k = 0;
      for (int target = t; target < ranks; target += threads)
        for (int which = 0; which < (target == t ? 3 : 2); ++which, ++k) {
          const std::size_t bytes = which == 0 ? large_bytes : which == 1 ? 8 : huge_bytes;
          const std::string what =
              which == 1 ? "signal offset " + std::to_string(host_slots::bytes) + " + 8"
                         : "offset " + std::to_string(which == 0 ? host_slots::signal : 0) +
                               " + size " + std::to_string(bytes);
          refused([&] { refusals[k].wait(); }, grma::errc::request_refused,
                  std::string("grma: job::") + (which == 1 ? "put_signal" : "put") + " to rank " +
                      std::to_string(target) + " (" + std::to_string(bytes) +
                      " bytes): refused a request from the host of process " + std::to_string(me) +
                      ": " + what + registered);
        }
    });
  for (std::thread& t : pool) t.join();
  running.wait();
  j.expect_no_failures(__FILE__);
  j.expect_counts(
      0, [&](int) { return std::uint64_t(hosts); }, "host notifications taken");
  j.expect_counts(
      2, [&](int) { return std::uint64_t(hosts); }, "hosts' puts checked");
  j.expect_counts(
      3, [&](int) { return std::uint64_t(hosts); }, "host get notifications taken");

  // Each host's fetch_adds to a target saw increasing old values, all below
  // the total; its get found the target's bytes.
  for (const auto& list : work)
    for (const issued& x : list) {
      for (int a = 0; a < adds; ++a) {
        EXPECT_LT(x.olds[a], std::uint64_t(hosts * adds)) << "target " << x.target;
        if (a > 0) {
          EXPECT_LT(x.olds[a - 1], x.olds[a]) << "target " << x.target;
        }
      }
      EXPECT_TRUE(x.swap_old == 0 || (x.swap_old >= 1 && x.swap_old <= std::uint64_t(hosts)))
          << "target " << x.target << ": " << x.swap_old;
      // The 4-byte counter's olds, counted from its start (wrapping).
      for (int a = 0; a < adds; ++a) {
        EXPECT_LT(std::uint32_t(x.olds32[a] - narrow_start), std::uint32_t(hosts * adds))
            << "target " << x.target << ": " << x.olds32[a];
        if (a > 0) {
          EXPECT_LT(std::uint32_t(x.olds32[a - 1] - narrow_start),
                    std::uint32_t(x.olds32[a] - narrow_start))
              << "target " << x.target;
        }
      }
      EXPECT_TRUE(x.swap_old32 == 0 || (x.swap_old32 <= -1 && x.swap_old32 >= -hosts))
          << "target " << x.target << ": " << x.swap_old32;
      EXPECT_TRUE(x.float_old == 0 || (x.float_old >= 0.5f && x.float_old <= float(hosts) - 0.5f &&
                                       x.float_old != float(me) + 0.5f))
          << "target " << x.target << ": " << x.float_old;
      // This host's bits as its fetching atomics found them: each before
      // its own change and after the host's earlier ones (a host's
      // operations to a target take effect in order).
      const auto at = [&](std::uint64_t v, int b) { return v >> (b + me) & 1; };
      EXPECT_EQ(at(x.or_old, 0), 0u) << "target " << x.target << ": " << x.or_old;
      EXPECT_EQ(at(x.xor_old, 0) + at(x.xor_old, 48), 2u)
          << "target " << x.target << ": " << x.xor_old;
      EXPECT_EQ(at(x.xor_old, 8), 0u) << "target " << x.target << ": " << x.xor_old;
      EXPECT_EQ(at(x.and_old, 8) + at(x.and_old, 16), 2u)
          << "target " << x.target << ": " << x.and_old;
      EXPECT_EQ(at(x.and_old, 56), 0u) << "target " << x.target << ": " << x.and_old;
      for (std::size_t i = 0; i < get_bytes; ++i)
        if (x.got[i] != pattern_byte(rank_seed(x.target), i) ||
            x.got_notified[i] != pattern_byte(rank_seed(x.target), i)) {
          ADD_FAILURE() << "target " << x.target << ": byte " << i << " of a host's get"
                        << (x.got[i] == pattern_byte(rank_seed(x.target), i) ? "_notify" : "");
          break;
        }
    }
}

// Host 0 puts `bytes` into every rank's window, then large_bytes of
// another pattern over their start, then signals the word after them: the
// second put lands last. The first is past an eager message, so that
// across nodes its data may still be arriving when the second's does.
struct overwritten_target {
  buffers mem;
  std::size_t bytes;

  template <class Rank>
  GRMA_HOST_DEVICE void operator()(Rank& r) const {
    rank_record& rec = record_of(r);
    const int me = r.rank(grma::world);
    auto* base = mem.get<unsigned char>(r, bytes + sizeof(std::uint64_t));
    if (r.thread() == 0) *reinterpret_cast<std::uint64_t*>(base + bytes) = 0;
    r.sync_threads();
    grma::window w = r.window_create(grma::world, base, bytes + sizeof(std::uint64_t));
    r.wait_signal(w, bytes, grma::cmp::eq, std::uint64_t{1});
    CONF_CHECK_PATTERN(r, rec, base, large_bytes, mix(1, std::uint64_t(me), 2), 0, 0);
    CONF_CHECK_PATTERN(r, rec, base + large_bytes, bytes - large_bytes,
                       mix(1, std::uint64_t(me), 1), large_bytes, 1);
    tally(r, rec, 0);
    r.window_free(w);
    mem.release(r, base);
  }
};

TEST_P(HostAccess, AHostsPutOverItsEarlierPutLandsLast) {
  grma::runtime rt(suite_settings());
  job j(rt, GetParam());
  j.host_access = true;
  const int ranks = j.resolve(overwritten_target{});
  // 64 KiB where the ranks' heap has room for it (a device's 64 MiB heap
  // among up to 2048 ranks).
  const std::size_t bytes = ranks <= 64 ? std::size_t(64) << 10 : std::size_t(8) << 10;
  const buffers mem = j.prepare(0, bytes + sizeof(std::uint64_t));
  const grma::rank_info info = rt.info(overwritten_target{}, j.options());
  grma::job running = rt.launch(overwritten_target{mem, bytes}, j.options());
  if (info.process_index == 0) {
    const std::vector<grma::window> windows = world_windows_within_30s(running);
    ASSERT_EQ(windows.size(), 1u);
    std::vector<std::vector<unsigned char>> sources;  // kept until complete
    std::vector<grma::host_request> requests;
    for (int target = 0; target < ranks; ++target) {
      for (const std::size_t n : {bytes, large_bytes}) {
        std::vector<unsigned char>& v = sources.emplace_back(n);
        const std::uint64_t seed = seed_of(0, target, n == bytes ? 1 : 2);
        for (std::size_t i = 0; i < n; ++i) v[i] = pattern_byte(seed, i);
        requests.push_back(running.put(windows[0], target, 0, v.data(), n));
      }
      requests.push_back(
          running.put_signal(windows[0], target, 0, nullptr, 0, bytes, 1, grma::signal_op::set));
    }
    for (const grma::host_request& q : requests) q.wait();
  }
  running.wait();
  j.expect_no_failures(__FILE__);
  j.expect_counts(
      0, [](int) { return 1u; }, "overwritten ranges checked");
}

INSTANTIATE_TEST_SUITE_P(Conformance, HostAccess, testing::ValuesIn(suite_configs()), config_name);

}  // namespace
}  // namespace conformance
