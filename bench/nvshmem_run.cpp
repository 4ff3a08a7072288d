#include "nvshmem_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace bench {
namespace {

// Both PEs together may take this long (they measure for seconds at most).
constexpr auto time_allowed = std::chrono::seconds(300);

std::string join(const std::vector<std::size_t>& sizes) {
  std::string out;
  for (std::size_t b : sizes) {
    if (!out.empty()) out += ',';
    out += std::to_string(b);
  }
  return out;
}

// The last lines of a file, for an error message.
std::string tail(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > 6 ? lines.size() - 6 : 0; i < lines.size(); ++i)
    out += "\n  " + lines[i];
  return out;
}

// The environment of the PEs: ours, with NVSHMEM's libraries on the library
// path (it loads its bootstrap plugin at run time), a symmetric heap that
// holds the largest buffer and, unless set, no network transport (both PEs
// are on this node).
std::vector<std::string> pe_environment(std::size_t heap) {
  std::vector<std::string> env;
  const char* path = std::getenv("LD_LIBRARY_PATH");
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0) env.emplace_back(*e);
  env.push_back(std::string("LD_LIBRARY_PATH=") + GRMA_BENCH_NVSHMEM_LIB + (path ? std::string(":") + path : ""));
  if (std::getenv("NVSHMEM_SYMMETRIC_SIZE") == nullptr)
    env.push_back("NVSHMEM_SYMMETRIC_SIZE=" + std::to_string(heap));
  if (std::getenv("NVSHMEM_REMOTE_TRANSPORT") == nullptr) env.push_back("NVSHMEM_REMOTE_TRANSPORT=none");
  return env;
}

pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env,
            const std::string& log) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, args[0].c_str(), &files, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  if (failed != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(failed));
  return pid;
}

}  // namespace

nvshmem_figures run_nvshmem(const nvshmem_request& r) {
  char dir_template[] = "/tmp/grma-bench-nvshmem-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) throw std::runtime_error("cannot make a directory in /tmp");
  const std::string dir = dir_template, figures_path = dir + "/figures", id_path = dir + "/id";
  std::size_t heap = std::size_t(1) << 20;
  for (std::size_t b : r.latency_sizes) heap = std::max(heap, b);
  for (std::size_t b : r.bandwidth_sizes) heap = std::max(heap, b <= r.all_up_to ? b * std::size_t(r.blocks) : b);
  heap += std::size_t(256) << 20;  // NVSHMEM's own allocations beside the buffer
  const std::vector<std::string> env = pe_environment(heap);

  pid_t pids[2];
  std::string logs[2];
  for (int pe = 0; pe < 2; ++pe) {
    logs[pe] = dir + "/pe" + std::to_string(pe) + ".log";
    pids[pe] = spawn({GRMA_BENCH_NVSHMEM_PROGRAM, "--pe", std::to_string(pe), "--id-file", id_path, "--out",
                      figures_path, "--latency", join(r.latency_sizes), "--bandwidth", join(r.bandwidth_sizes),
                      "--blocks", std::to_string(r.blocks), "--all-up-to", std::to_string(r.all_up_to),
                      "--threads", std::to_string(r.threads), "--latency-iterations",
                      std::to_string(r.latency_iterations), "--bandwidth-iterations",
                      std::to_string(r.bandwidth_iterations)},
                     env, logs[pe]);
  }
  // Wait for both, killing both when time runs out or one fails (its peer
  // would wait for it in NVSHMEM's barrier).
  int status[2] = {-1, -1};
  bool running[2] = {true, true};
  std::string failure;
  const auto deadline = std::chrono::steady_clock::now() + time_allowed;
  while ((running[0] || running[1]) && failure.empty()) {
    for (int pe = 0; pe < 2; ++pe)
      if (running[pe] && waitpid(pids[pe], &status[pe], WNOHANG) == pids[pe]) {
        running[pe] = false;
        if (!WIFEXITED(status[pe]) || WEXITSTATUS(status[pe]) != 0)
          failure = "PE " + std::to_string(pe) + " failed" + tail(logs[pe]);
      }
    if (failure.empty() && std::chrono::steady_clock::now() > deadline)
      failure = "the two PEs did not finish in " + std::to_string(time_allowed.count()) + " s" + tail(logs[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int pe = 0; pe < 2; ++pe)
    if (running[pe]) {
      kill(pids[pe], SIGKILL);
      waitpid(pids[pe], &status[pe], 0);
    }

  nvshmem_figures out{NAN, {}, {}, {}};
  if (failure.empty()) {
    std::ifstream in(figures_path);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string what;
      std::size_t bytes = 0;
      fields >> what;
      if (what == "int_p_us") {
        fields >> out.int_p_us;
      } else if (what == "latency") {
        fields >> bytes >> out.signal_us[bytes];
      } else if (what == "bandwidth") {
        std::string one, all;  // "nan" where not measured, which >> into a double refuses
        fields >> bytes >> one >> all;
        out.one_block_gbs[bytes] = std::strtod(one.c_str(), nullptr);
        out.blocks_gbs[bytes] = std::strtod(all.c_str(), nullptr);
      }
    }
    if (std::isnan(out.int_p_us)) failure = "no figures in " + figures_path;
  }
  for (const std::string& f : {figures_path, id_path, logs[0], logs[1]}) std::remove(f.c_str());
  rmdir(dir.c_str());
  if (!failure.empty()) throw std::runtime_error("NVSHMEM: " + failure);
  return out;
}

}  // namespace bench
