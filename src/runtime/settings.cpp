#include "grma/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "grma/detail/device_state.hpp"
#include "grma/error.hpp"

extern char** environ;

namespace grma {
namespace {

// `name` as the user gave it: the variable's name, or the argument
// (--grma-queue-capacity) for a value from the command line.
[[noreturn]] void bad(const std::string& name, const std::string& value, const char* expected) {
  throw error(errc::invalid_config, -1, call::runtime,
              "grma: " + name + "=\"" + value + "\" is invalid: expected " + expected);
}

// A setting's value and how it was given, for the errors' words.
struct given_value {
  std::string name;  // the variable's name: GRMA_QUEUE_CAPACITY
  std::string value;
  std::string shown;  // GRMA_QUEUE_CAPACITY, or --grma-queue-capacity from argv
};

std::uint64_t parse_bytes(const std::string& name, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long number = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0])) || errno != 0)
    bad(name, value, "a size in bytes, optionally with K, M or G");
  std::uint64_t scale = 1;
  const std::string suffix = end;
  if (suffix == "K" || suffix == "k") scale = 1ull << 10;
  else if (suffix == "M" || suffix == "m") scale = 1ull << 20;
  else if (suffix == "G" || suffix == "g") scale = 1ull << 30;
  else if (!suffix.empty()) bad(name, value, "a size in bytes, optionally with K, M or G");
  if (number > std::numeric_limits<std::uint64_t>::max() / scale)
    bad(name, value, "a size that fits in 64 bits");
  return number * scale;
}

std::uint64_t parse_count(const std::string& name, const std::string& value, std::uint64_t low,
                          std::uint64_t high, const char* or_else = "") {
  const std::string expected =
      "a number from " + std::to_string(low) + " to " + std::to_string(high) + or_else;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0])) || *end != '\0' ||
      errno != 0 || n < low || n > high)
    bad(name, value, expected.c_str());
  return n;
}

// A device's heaps: what an arena's layout computes with in 64 bits, and
// more than any device has.
constexpr std::uint64_t least_heap = 64u << 10, most_bytes = std::uint64_t{1} << 40;
constexpr const char* heap_range = "from 64K to 1024G";
constexpr const char* symmetric_range = "at most 1024G";

}  // namespace

void settings::check() const {
  const auto n = [](auto v) { return std::to_string(v); };
  if (ranks_per_device < 0 || ranks_per_device > (1 << 16))
    bad("GRMA_RANKS_PER_DEVICE", n(ranks_per_device), "a number from 0 to 65536");
  if (devices < 0 || devices > int(detail::max_devices))
    bad("GRMA_DEVICES", n(devices),
        ("a number from 1 to " + n(detail::max_devices) + ", or 0 (all)").c_str());
  if (nodes < 1 || nodes > int(detail::max_devices))
    bad("GRMA_NODES", n(nodes), ("a number from 1 to " + n(detail::max_devices)).c_str());
  if (heap_size < least_heap || heap_size > most_bytes)
    bad("GRMA_HEAP_SIZE", n(heap_size), heap_range);
  if (symmetric_size > most_bytes) bad("GRMA_SYMMETRIC_SIZE", n(symmetric_size), symmetric_range);
  if (queue_capacity < 1 || queue_capacity > detail::max_queue_capacity ||
      (queue_capacity & (queue_capacity - 1)) != 0)
    bad("GRMA_QUEUE_CAPACITY", n(queue_capacity),
        ("a power of two from 1 to " + n(detail::max_queue_capacity)).c_str());
  if (match_capacity < 1 || match_capacity > (1u << 20))
    bad("GRMA_MATCH_CAPACITY", n(match_capacity), "a number from 1 to 1048576");
  if (max_windows < 1 || max_windows > 0xffff)
    bad("GRMA_MAX_WINDOWS", n(max_windows), "a number from 1 to 65535");
  if (!(timeout_seconds >= 0) || std::isinf(timeout_seconds))
    bad("GRMA_TIMEOUT", n(timeout_seconds), "seconds >= 0");
  // Enums the program may have made from any number, as the variables'
  // names are checked.
  if (unsigned(backend) > unsigned(backend_kind::cuda))
    bad("GRMA_BACKEND", n(int(backend)), "auto, cpu or cuda");
  if (unsigned(transport) > unsigned(transport_kind::loopback))
    bad("GRMA_TRANSPORT", n(int(transport)), "auto, mpi, ucx or loopback");
  if (unsigned(waits) > unsigned(waits_kind::sleep))
    bad("GRMA_WAITS", n(unsigned(waits)), "auto, spin, yield or sleep");
  if (node_id.size() > 63) bad("GRMA_NODE_ID", node_id, "1 to 63 characters");
  // A transport this grma was not built with can join nothing, whatever the
  // job's shape.
  const std::vector<transport_kind> built = transports_built();
  if (transport != transport_kind::automatic &&
      std::find(built.begin(), built.end(), transport) == built.end()) {
    std::string these = "auto";
    for (transport_kind k : built) these += std::string(", ") + to_string(k);
    bad("GRMA_TRANSPORT", to_string(transport),
        ("a transport this grma was built with: " + these).c_str());
  }
}

namespace {

settings parse_given(const std::vector<given_value>& values) {
  settings s;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string& name = values[i].name;
    const std::string& value = values[i].value;
    const std::string& shown = values[i].shown;
    // A later value of the name replaces this one (an argument a
    // variable's): only the value that counts is read.
    if (std::any_of(values.begin() + std::ptrdiff_t(i) + 1, values.end(),
                    [&](const given_value& later) { return later.name == name; }))
      continue;
    if (name == "GRMA_BACKEND") {
      if (value == "auto")
        s.backend = backend_kind::automatic;
      else if (value == "cpu")
        s.backend = backend_kind::cpu;
      else if (value == "cuda") s.backend = backend_kind::cuda;
      else
        bad(shown, value, "auto, cpu or cuda");
    } else if (name == "GRMA_RANKS_PER_DEVICE") {
      s.ranks_per_device = int(parse_count(shown, value, 0, 1 << 16));
    } else if (name == "GRMA_DEVICES") {
      s.devices =
          value == "all" ? 0 : int(parse_count(shown, value, 1, detail::max_devices, ", or all"));
    } else if (name == "GRMA_NODE_ID") {
      if (value.empty() || value.size() > 63) bad(shown, value, "1 to 63 characters");
      s.node_id = value;
    } else if (name == "GRMA_NODES") {
      s.nodes = int(parse_count(shown, value, 1, detail::max_devices));
    } else if (name == "GRMA_TRANSPORT") {
      if (value == "auto") s.transport = transport_kind::automatic;
      else if (value == "mpi") s.transport = transport_kind::mpi;
      else if (value == "ucx") s.transport = transport_kind::ucx;
      else if (value == "loopback") s.transport = transport_kind::loopback;
      else
        bad(shown, value, "auto, mpi, ucx or loopback");
    } else if (name == "GRMA_WAITS") {
      if (value == "auto")
        s.waits = waits_kind::automatic;
      else if (value == "spin")
        s.waits = waits_kind::spin;
      else if (value == "yield")
        s.waits = waits_kind::yield;
      else if (value == "sleep")
        s.waits = waits_kind::sleep;
      else
        bad(shown, value, "auto, spin, yield or sleep");
    } else if (name == "GRMA_HEAP_SIZE") {
      s.heap_size = parse_bytes(shown, value);
      if (s.heap_size < least_heap || s.heap_size > most_bytes) bad(shown, value, heap_range);
    } else if (name == "GRMA_SYMMETRIC_SIZE") {
      s.symmetric_size = parse_bytes(shown, value);
      if (s.symmetric_size > most_bytes) bad(shown, value, symmetric_range);
    } else if (name == "GRMA_QUEUE_CAPACITY") {
      s.queue_capacity = std::uint32_t(parse_count(shown, value, 1, detail::max_queue_capacity));
      if ((s.queue_capacity & (s.queue_capacity - 1)) != 0) bad(shown, value, "a power of two");
    } else if (name == "GRMA_MATCH_CAPACITY") {
      s.match_capacity = std::uint32_t(parse_count(shown, value, 1, 1u << 20));
    } else if (name == "GRMA_MAX_WINDOWS") {
      s.max_windows = std::uint32_t(parse_count(shown, value, 1, 0xffff));
    } else if (name == "GRMA_TIMEOUT") {
      char* end = nullptr;
      errno = 0;
      const double t = std::strtod(value.c_str(), &end);
      // Decimal only, as the other numbers (strtod also takes spaces, hex,
      // inf), and no value it rounds to infinity or to 0 (1e-400).
      if (value.empty() ||
          !(std::isdigit(static_cast<unsigned char>(value[0])) || value[0] == '.') ||
          value.find_first_of("xX") != std::string::npos || *end != '\0' || errno == ERANGE ||
          !(t >= 0))
        bad(shown, value, "seconds >= 0");
      s.timeout_seconds = t;
    } else if (name == "GRMA_ENGINE_PROXY") {
      s.engine_proxy = parse_count(shown, value, 0, 1) == 1;
    } else if (name.rfind("GRMA_", 0) == 0) {
      throw error(errc::invalid_config, -1, call::runtime,
                  "grma: unknown setting " + shown + " (see docs/configuration.md)");
    }
  }
  s.check();
  return s;
}

}  // namespace

settings settings::parse(const std::vector<std::pair<std::string, std::string>>& values) {
  std::vector<given_value> given;
  for (const auto& [name, value] : values) given.push_back({name, value, name});
  return parse_given(given);
}

settings settings::from_environment(int* argc, char** argv) {
  std::vector<given_value> values;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && std::strncmp(*e, "GRMA_", 5) == 0) {
      std::string name(*e, std::size_t(eq - *e));
      values.push_back({name, std::string(eq + 1), name});
    }
  }
  if (argc != nullptr && argv != nullptr) {
    int kept = 1;
    bool options = true;  // "--" ends them: what follows is the program's
    for (int i = 1; i < *argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--") options = false;
      if (!options || arg.rfind("--grma-", 0) != 0) {
        argv[kept++] = argv[i];
        continue;
      }
      const auto eq = arg.find('=');
      const std::string shown = arg.substr(0, eq);
      std::string name = "GRMA_" + shown.substr(7);
      for (char& c : name) c = c == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(c)));
      if (eq == std::string::npos)
        throw error(errc::invalid_config, -1, call::runtime,
                    "grma: argument " + shown + " has no value: expected --grma-name=value");
      values.push_back({name, arg.substr(eq + 1), shown});
    }
    *argc = kept;
    argv[kept] = nullptr;
  }
  return parse_given(values);
}

}  // namespace grma
