// Runtime settings: each GRMA_* variable, the errors for bad values and
// unknown names, and --grma-* arguments taken out of argv.
#include "grma/settings.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>  // setenv, unsetenv

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "grma/error.hpp"

extern char** environ;

namespace {

using grma::settings;
using values = std::vector<std::pair<std::string, std::string>>;

settings parse_one(const std::string& name, const std::string& value) {
  return settings::parse({{name, value}});
}

// The message of the grma::error that `parse` throws, or "" when it throws
// none. Every settings error is a host-side invalid_config.
template <class Parse>
std::string error_of(Parse&& parse) {
  try {
    parse();
  } catch (const grma::error& e) {
    EXPECT_EQ(e.code(), grma::errc::invalid_config);
    EXPECT_EQ(e.rank(), -1);
    EXPECT_EQ(e.where(), grma::call::runtime);
    return e.what();
  }
  return "";
}

std::string parse_error(const std::string& name, const std::string& value) {
  return error_of([&] { return parse_one(name, value); });
}

std::string invalid(const std::string& name, const std::string& value,
                    const std::string& expected) {
  return "grma: " + name + "=\"" + value + "\" is invalid: expected " + expected;
}

const std::string bytes_expected = "a size in bytes, optionally with K, M or G";

TEST(Settings, Defaults) {
  const settings s = settings::parse({});
  EXPECT_EQ(s.backend, grma::backend_kind::automatic);
  EXPECT_EQ(s.ranks_per_device, 0);
  EXPECT_EQ(s.heap_size, 64u << 20);
  EXPECT_EQ(s.queue_capacity, 1024u);
  EXPECT_EQ(s.match_capacity, 256u);
  EXPECT_EQ(s.max_windows, 64u);
  EXPECT_EQ(s.timeout_seconds, 60.0);
}

TEST(Settings, Backend) {
  EXPECT_EQ(parse_one("GRMA_BACKEND", "auto").backend, grma::backend_kind::automatic);
  EXPECT_EQ(parse_one("GRMA_BACKEND", "cpu").backend, grma::backend_kind::cpu);
  EXPECT_EQ(parse_one("GRMA_BACKEND", "cuda").backend, grma::backend_kind::cuda);
  EXPECT_EQ(parse_error("GRMA_BACKEND", "gpu"), invalid("GRMA_BACKEND", "gpu", "auto, cpu or cuda"));
  EXPECT_EQ(parse_error("GRMA_BACKEND", "CPU"), invalid("GRMA_BACKEND", "CPU", "auto, cpu or cuda"));
}

TEST(Settings, RanksPerDevice) {
  EXPECT_EQ(parse_one("GRMA_RANKS_PER_DEVICE", "0").ranks_per_device, 0);
  EXPECT_EQ(parse_one("GRMA_RANKS_PER_DEVICE", "8").ranks_per_device, 8);
  EXPECT_EQ(parse_one("GRMA_RANKS_PER_DEVICE", "65536").ranks_per_device, 65536);
  EXPECT_EQ(parse_error("GRMA_RANKS_PER_DEVICE", "65537"),
            invalid("GRMA_RANKS_PER_DEVICE", "65537", "a number from 0 to 65536"));
}

TEST(Settings, DevicesAreANumberOrAll) {
  EXPECT_EQ(parse_one("GRMA_DEVICES", "all").devices, 0);
  EXPECT_EQ(parse_one("GRMA_DEVICES", "8").devices, 8);
  for (const char* bad : {"0", "9", "ALL", ""})
    EXPECT_EQ(parse_error("GRMA_DEVICES", bad),
              invalid("GRMA_DEVICES", bad, "a number from 1 to 8, or all"));
}

TEST(Settings, HeapSizeWithSuffixes) {
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "1048576").heap_size, 1048576u);
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "64K").heap_size, 64u << 10);
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "96k").heap_size, 96u << 10);
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "2M").heap_size, 2u << 20);
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "3m").heap_size, 3u << 20);
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "5G").heap_size, 5ull << 30);
  EXPECT_EQ(parse_one("GRMA_HEAP_SIZE", "1g").heap_size, 1ull << 30);
}

TEST(Settings, SymmetricSize) {
  EXPECT_EQ(grma::settings{}.symmetric_size, 64u << 20);
  EXPECT_EQ(parse_one("GRMA_SYMMETRIC_SIZE", "1G").symmetric_size, 1ull << 30);
  EXPECT_EQ(parse_one("GRMA_SYMMETRIC_SIZE", "0").symmetric_size, 0u);
  EXPECT_EQ(parse_error("GRMA_SYMMETRIC_SIZE", "lots"),
            invalid("GRMA_SYMMETRIC_SIZE", "lots", "a size in bytes, optionally with K, M or G"));
  EXPECT_EQ(parse_one("GRMA_SYMMETRIC_SIZE", "1024G").symmetric_size, 1ull << 40);
  EXPECT_EQ(parse_error("GRMA_SYMMETRIC_SIZE", "18446744073709551615"),
            invalid("GRMA_SYMMETRIC_SIZE", "18446744073709551615", "at most 1024G"));
}

TEST(Settings, BadHeapSizes) {
  EXPECT_EQ(parse_error("GRMA_HEAP_SIZE", "65535"),
            invalid("GRMA_HEAP_SIZE", "65535", "from 64K to 1024G"));
  EXPECT_EQ(parse_error("GRMA_HEAP_SIZE", "63K"),
            invalid("GRMA_HEAP_SIZE", "63K", "from 64K to 1024G"));
  EXPECT_EQ(parse_error("GRMA_HEAP_SIZE", "1025G"),
            invalid("GRMA_HEAP_SIZE", "1025G", "from 64K to 1024G"));
  for (const char* bad :
       {"", "12X", "1.5M", "-5", "+5", " 5", "M", "5 M", "5MB", "0x100", "99999999999999999999999"})
    EXPECT_EQ(parse_error("GRMA_HEAP_SIZE", bad), invalid("GRMA_HEAP_SIZE", bad, bytes_expected));
  EXPECT_EQ(parse_error("GRMA_HEAP_SIZE", "20000000000G"),
            invalid("GRMA_HEAP_SIZE", "20000000000G", "a size that fits in 64 bits"));
}

TEST(Settings, QueueCapacityIsAPowerOfTwoInRange) {
  EXPECT_EQ(parse_one("GRMA_QUEUE_CAPACITY", "1").queue_capacity, 1u);
  EXPECT_EQ(parse_one("GRMA_QUEUE_CAPACITY", "512").queue_capacity, 512u);
  EXPECT_EQ(parse_error("GRMA_QUEUE_CAPACITY", "4K"),
            invalid("GRMA_QUEUE_CAPACITY", "4K", "a number from 1 to 65536"));
  EXPECT_EQ(parse_one("GRMA_QUEUE_CAPACITY", "65536").queue_capacity, 1u << 16);
  EXPECT_EQ(parse_error("GRMA_QUEUE_CAPACITY", "131072"),
            invalid("GRMA_QUEUE_CAPACITY", "131072", "a number from 1 to 65536"));
  EXPECT_EQ(parse_error("GRMA_QUEUE_CAPACITY", "1000"),
            invalid("GRMA_QUEUE_CAPACITY", "1000", "a power of two"));
  EXPECT_EQ(parse_error("GRMA_QUEUE_CAPACITY", "0"),
            invalid("GRMA_QUEUE_CAPACITY", "0", "a number from 1 to 65536"));
  EXPECT_EQ(parse_error("GRMA_QUEUE_CAPACITY", "32M"),
            invalid("GRMA_QUEUE_CAPACITY", "32M", "a number from 1 to 65536"));
}

TEST(Settings, MatchCapacity) {
  EXPECT_EQ(parse_one("GRMA_MATCH_CAPACITY", "1").match_capacity, 1u);
  EXPECT_EQ(parse_one("GRMA_MATCH_CAPACITY", "1000").match_capacity, 1000u);
  EXPECT_EQ(parse_one("GRMA_MATCH_CAPACITY", "1048576").match_capacity, 1u << 20);
  EXPECT_EQ(parse_error("GRMA_MATCH_CAPACITY", "0"),
            invalid("GRMA_MATCH_CAPACITY", "0", "a number from 1 to 1048576"));
  EXPECT_EQ(parse_error("GRMA_MATCH_CAPACITY", "1048577"),
            invalid("GRMA_MATCH_CAPACITY", "1048577", "a number from 1 to 1048576"));
}

TEST(Settings, MaxWindows) {
  EXPECT_EQ(parse_one("GRMA_MAX_WINDOWS", "1").max_windows, 1u);
  EXPECT_EQ(parse_one("GRMA_MAX_WINDOWS", "65535").max_windows, 65535u);
  EXPECT_EQ(parse_error("GRMA_MAX_WINDOWS", "0"),
            invalid("GRMA_MAX_WINDOWS", "0", "a number from 1 to 65535"));
  EXPECT_EQ(parse_error("GRMA_MAX_WINDOWS", "65536"),
            invalid("GRMA_MAX_WINDOWS", "65536", "a number from 1 to 65535"));
  EXPECT_EQ(parse_error("GRMA_MAX_WINDOWS", "many"),
            invalid("GRMA_MAX_WINDOWS", "many", "a number from 1 to 65535"));
}

TEST(Settings, EngineProxy) {
  EXPECT_TRUE(grma::settings{}.engine_proxy) << "on by default";
  EXPECT_FALSE(parse_one("GRMA_ENGINE_PROXY", "0").engine_proxy);
  EXPECT_TRUE(parse_one("GRMA_ENGINE_PROXY", "1").engine_proxy);
  for (const char* bad : {"2", "", "yes", "-1"})
    EXPECT_EQ(parse_error("GRMA_ENGINE_PROXY", bad), invalid("GRMA_ENGINE_PROXY", bad, "a number from 0 to 1"));
}

TEST(Settings, Waits) {
  EXPECT_EQ(grma::settings{}.waits, grma::waits_kind::automatic);
  EXPECT_EQ(parse_one("GRMA_WAITS", "auto").waits, grma::waits_kind::automatic);
  EXPECT_EQ(parse_one("GRMA_WAITS", "spin").waits, grma::waits_kind::spin);
  EXPECT_EQ(parse_one("GRMA_WAITS", "yield").waits, grma::waits_kind::yield);
  EXPECT_EQ(parse_one("GRMA_WAITS", "sleep").waits, grma::waits_kind::sleep);
  for (const char* bad : {"", "block", "Sleep"})
    EXPECT_EQ(parse_error("GRMA_WAITS", bad),
              invalid("GRMA_WAITS", bad, "auto, spin, yield or sleep"));
}

TEST(Settings, TransportAndNodesInAProcess) {
  EXPECT_EQ(grma::settings{}.transport, grma::transport_kind::automatic);
  EXPECT_EQ(grma::settings{}.nodes, 1);
  EXPECT_EQ(parse_one("GRMA_TRANSPORT", "auto").transport, grma::transport_kind::automatic);
  EXPECT_EQ(parse_one("GRMA_TRANSPORT", "loopback").transport, grma::transport_kind::loopback);
  // mpi and ucx where this build has them; else refused, whatever the job.
  const std::vector<grma::transport_kind> built = grma::transports_built();
  std::string these = "a transport this grma was built with: auto";
  for (grma::transport_kind k : built) these += std::string(", ") + grma::to_string(k);
  for (grma::transport_kind t : {grma::transport_kind::mpi, grma::transport_kind::ucx}) {
    const char* name = grma::to_string(t);
    if (std::find(built.begin(), built.end(), t) != built.end())
      EXPECT_EQ(parse_one("GRMA_TRANSPORT", name).transport, t);
    else
      EXPECT_EQ(parse_error("GRMA_TRANSPORT", name), invalid("GRMA_TRANSPORT", name, these.c_str()))
          << name;
  }
  EXPECT_EQ(parse_error("GRMA_TRANSPORT", "tcp"),
            invalid("GRMA_TRANSPORT", "tcp", "auto, mpi, ucx or loopback"));
  EXPECT_EQ(parse_one("GRMA_NODES", "3").nodes, 3);
  for (const char* bad : {"0", "9", "two"})
    EXPECT_EQ(parse_error("GRMA_NODES", bad), invalid("GRMA_NODES", bad, "a number from 1 to 8"));
}

TEST(Settings, Timeout) {
  EXPECT_EQ(parse_one("GRMA_TIMEOUT", "2.5").timeout_seconds, 2.5);
  EXPECT_EQ(parse_one("GRMA_TIMEOUT", "0").timeout_seconds, 0.0);
  EXPECT_EQ(parse_one("GRMA_TIMEOUT", "1e3").timeout_seconds, 1000.0);
  EXPECT_EQ(parse_one("GRMA_TIMEOUT", ".5").timeout_seconds, 0.5);
  for (const char* bad :
       {"-1", "", "abc", "5s", "nan", "-0.5", " 5", "0x10", "inf", "+5", "1e400", "1e-400"})
    EXPECT_EQ(parse_error("GRMA_TIMEOUT", bad), invalid("GRMA_TIMEOUT", bad, "seconds >= 0"));
}

// A settings struct built in code is checked as the variables are (by
// check(), which runtime's constructor calls): each value out of its range
// is named with the variable that sets it.
TEST(Settings, CheckNamesAValueOutOfItsRange) {
  EXPECT_EQ(error_of([] { settings{}.check(); }), "");
  const auto check_error = [](auto change) {
    settings s;
    change(s);
    return error_of([&] { s.check(); });
  };
  EXPECT_EQ(check_error([](settings& s) { s.nodes = 0; }),
            invalid("GRMA_NODES", "0", "a number from 1 to 8"));
  EXPECT_EQ(check_error([](settings& s) { s.ranks_per_device = -3; }),
            invalid("GRMA_RANKS_PER_DEVICE", "-3", "a number from 0 to 65536"));
  EXPECT_EQ(check_error([](settings& s) { s.devices = 9; }),
            invalid("GRMA_DEVICES", "9", "a number from 1 to 8, or 0 (all)"));
  for (const std::uint32_t capacity : {0u, 3u, 100u, 1u << 17})
    EXPECT_EQ(
        check_error([&](settings& s) { s.queue_capacity = capacity; }),
        invalid("GRMA_QUEUE_CAPACITY", std::to_string(capacity), "a power of two from 1 to 65536"));
  EXPECT_EQ(check_error([](settings& s) { s.heap_size = 0; }),
            invalid("GRMA_HEAP_SIZE", "0", "from 64K to 1024G"));
  EXPECT_EQ(check_error([](settings& s) { s.symmetric_size = ~std::uint64_t{0}; }),
            invalid("GRMA_SYMMETRIC_SIZE", "18446744073709551615", "at most 1024G"));
  EXPECT_EQ(check_error([](settings& s) { s.match_capacity = 0; }),
            invalid("GRMA_MATCH_CAPACITY", "0", "a number from 1 to 1048576"));
  EXPECT_EQ(check_error([](settings& s) { s.max_windows = 0; }),
            invalid("GRMA_MAX_WINDOWS", "0", "a number from 1 to 65535"));
  EXPECT_EQ(check_error([](settings& s) { s.timeout_seconds = -1; }),
            invalid("GRMA_TIMEOUT", "-1.000000", "seconds >= 0"));
  EXPECT_EQ(check_error([](settings& s) { s.timeout_seconds = HUGE_VAL; }),
            invalid("GRMA_TIMEOUT", "inf", "seconds >= 0"));
  EXPECT_EQ(check_error([](settings& s) { s.backend = grma::backend_kind(9); }),
            invalid("GRMA_BACKEND", "9", "auto, cpu or cuda"));
  EXPECT_EQ(check_error([](settings& s) { s.transport = grma::transport_kind(9); }),
            invalid("GRMA_TRANSPORT", "9", "auto, mpi, ucx or loopback"));
  EXPECT_EQ(check_error([](settings& s) { s.waits = grma::waits_kind(7); }),
            invalid("GRMA_WAITS", "7", "auto, spin, yield or sleep"));
  EXPECT_EQ(check_error([](settings& s) { s.node_id = std::string(64, 'n'); }),
            invalid("GRMA_NODE_ID", std::string(64, 'n'), "1 to 63 characters"));
}

TEST(Settings, UnknownGrmaNameIsAnErrorOtherNamesAreIgnored) {
  EXPECT_EQ(parse_error("GRMA_QUEUE_SIZE", "8"),
            "grma: unknown setting GRMA_QUEUE_SIZE (see docs/configuration.md)");
  EXPECT_EQ(error_of([] {
              return settings::parse({{"HOME", "/root"}, {"grma_timeout", "x"}});
            }),
            "");
}

TEST(Settings, LaterValueWins) {
  const settings s = settings::parse({{"GRMA_MAX_WINDOWS", "8"}, {"GRMA_MAX_WINDOWS", "16"}});
  EXPECT_EQ(s.max_windows, 16u);
}

// Runs each test with no GRMA_* variable set, whatever the caller's
// environment holds, and restores that environment afterwards.
class SettingsFromEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = grma_variables();
    clear();
  }
  void TearDown() override {
    clear();
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  static values grma_variables() {
    values found;
    for (char** e = environ; *e != nullptr; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq != nullptr && std::strncmp(*e, "GRMA_", 5) == 0)
        found.emplace_back(std::string(*e, std::size_t(eq - *e)), std::string(eq + 1));
    }
    return found;
  }
  static void clear() {
    for (const auto& [name, value] : grma_variables()) unsetenv(name.c_str());
  }
  values saved_;
};

// argv as main receives it: modifiable strings and a null pointer at the end.
class command_line {
 public:
  explicit command_line(std::vector<std::string> args)
      : strings_(std::move(args)), argc_(int(strings_.size())) {
    for (std::string& s : strings_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
  }
  int* argc() { return &argc_; }
  char** argv() { return argv_.data(); }
  std::vector<std::string> remaining() const {
    return std::vector<std::string>(argv_.begin(), argv_.begin() + argc_);
  }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> argv_;
  int argc_;
};

TEST_F(SettingsFromEnvironment, ReadsGrmaVariables) {
  setenv("GRMA_MAX_WINDOWS", "16", 1);
  setenv("GRMA_HEAP_SIZE", "1M", 1);
  setenv("GRMA_BACKEND", "cuda", 1);
  const settings s = settings::from_environment();
  EXPECT_EQ(s.max_windows, 16u);
  EXPECT_EQ(s.heap_size, 1u << 20);
  EXPECT_EQ(s.backend, grma::backend_kind::cuda);
  EXPECT_EQ(s.queue_capacity, 1024u) << "unset variables keep their defaults";
}

TEST_F(SettingsFromEnvironment, ArgumentsOverrideVariablesAndAreRemovedFromArgv) {
  setenv("GRMA_MAX_WINDOWS", "16", 1);
  setenv("GRMA_TIMEOUT", "5", 1);
  command_line args({"program", "--grma-timeout=7", "input.txt", "--grma-max-windows=32",
                     "--grma-heap-size=2M", "--other", "--grma", "-grma-x=1"});
  const settings s = settings::from_environment(args.argc(), args.argv());
  EXPECT_EQ(s.timeout_seconds, 7.0);
  EXPECT_EQ(s.max_windows, 32u);
  EXPECT_EQ(s.heap_size, 2u << 20);
  EXPECT_EQ(*args.argc(), 5);
  EXPECT_EQ(args.remaining(),
            (std::vector<std::string>{"program", "input.txt", "--other", "--grma", "-grma-x=1"}));
  EXPECT_EQ(args.argv()[*args.argc()], nullptr);
}

// Only the value that counts is read: a bad variable that an argument
// replaces (or an argument given again) is no error.
TEST_F(SettingsFromEnvironment, AReplacedValueIsNotRead) {
  setenv("GRMA_QUEUE_CAPACITY", "3", 1);  // not a power of two
  command_line args({"program", "--grma-queue-capacity=4", "--grma-timeout=x", "--grma-timeout=2"});
  const settings s = settings::from_environment(args.argc(), args.argv());
  EXPECT_EQ(s.queue_capacity, 4u);
  EXPECT_EQ(s.timeout_seconds, 2.0);
  unsetenv("GRMA_QUEUE_CAPACITY");
  command_line bad({"program", "--grma-timeout=2", "--grma-timeout=x"});
  EXPECT_EQ(error_of([&] { return settings::from_environment(bad.argc(), bad.argv()); }),
            invalid("--grma-timeout", "x", "seconds >= 0"));
}

// An error names the setting as the user gave it: the argument for a value
// from the command line, the variable for one from the environment.
TEST_F(SettingsFromEnvironment, ABadArgumentIsNamedAsGiven) {
  setenv("GRMA_MATCH_CAPACITY", "0", 1);
  command_line args({"program", "--grma-queue-capacity=3"});
  EXPECT_EQ(error_of([&] { return settings::from_environment(args.argc(), args.argv()); }),
            invalid("GRMA_MATCH_CAPACITY", "0", "a number from 1 to 1048576"));
  unsetenv("GRMA_MATCH_CAPACITY");
  command_line again({"program", "--grma-queue-capacity=3"});
  EXPECT_EQ(error_of([&] { return settings::from_environment(again.argc(), again.argv()); }),
            invalid("--grma-queue-capacity", "3", "a power of two"));
  command_line sized({"program", "--grma-heap-size=12Q"});
  EXPECT_EQ(error_of([&] { return settings::from_environment(sized.argc(), sized.argv()); }),
            invalid("--grma-heap-size", "12Q", "a size in bytes, optionally with K, M or G"));
}

// "--" ends the options: what follows is the program's, --grma- or not.
TEST_F(SettingsFromEnvironment, ArgumentsAfterADoubleDashAreTheProgramsOwn) {
  command_line args({"program", "--grma-timeout=7", "--", "--grma-timeout=9", "x"});
  const settings s = settings::from_environment(args.argc(), args.argv());
  EXPECT_EQ(s.timeout_seconds, 7.0);
  EXPECT_EQ(args.remaining(), (std::vector<std::string>{"program", "--", "--grma-timeout=9", "x"}));
}

TEST_F(SettingsFromEnvironment, ArgvWithoutGrmaArgumentsIsUnchanged) {
  command_line args({"program", "a", "b"});
  settings::from_environment(args.argc(), args.argv());
  EXPECT_EQ(args.remaining(), (std::vector<std::string>{"program", "a", "b"}));
}

TEST_F(SettingsFromEnvironment, ArgumentWithoutValueIsAnError) {
  command_line args({"program", "--grma-timeout"});
  EXPECT_EQ(error_of([&] { return settings::from_environment(args.argc(), args.argv()); }),
            "grma: argument --grma-timeout has no value: expected --grma-name=value");
}

TEST_F(SettingsFromEnvironment, UnknownArgumentIsAnError) {
  command_line args({"program", "--grma-bogus-name=1"});
  EXPECT_EQ(error_of([&] { return settings::from_environment(args.argc(), args.argv()); }),
            "grma: unknown setting --grma-bogus-name (see docs/configuration.md)");
}

TEST_F(SettingsFromEnvironment, BadOrUnknownVariableIsAnError) {
  setenv("GRMA_QUEUE_CAPACITY", "1000", 1);
  EXPECT_EQ(error_of([] { return settings::from_environment(); }),
            invalid("GRMA_QUEUE_CAPACITY", "1000", "a power of two"));
  unsetenv("GRMA_QUEUE_CAPACITY");
  setenv("GRMA_TYPO", "1", 1);
  EXPECT_EQ(error_of([] { return settings::from_environment(); }),
            "grma: unknown setting GRMA_TYPO (see docs/configuration.md)");
}

}  // namespace
