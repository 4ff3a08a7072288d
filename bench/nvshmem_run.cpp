#include "nvshmem_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

// The environment of the PEs: ours, with NVSHMEM's libraries first on the
// library path (it loads its bootstrap plugin at run time; the loader reads
// the path when the process starts, so the PE cannot set it itself).
std::vector<std::string> pe_environment() {
  std::vector<std::string> env;
  const char* path = std::getenv("LD_LIBRARY_PATH");
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0) env.emplace_back(*e);
  env.push_back(std::string("LD_LIBRARY_PATH=") + GRMA_BENCH_NVSHMEM_LIB +
                (path != nullptr && *path != '\0' ? std::string(":") + path : ""));
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

// The two PEs' processes and their directory: whatever happens, nothing is
// left running and nothing is left in the directory once this ends.
class pe_run {
 public:
  pe_run() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/grma-bench-nvshmem-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot make a directory like " + pattern + ": " + std::strerror(errno));
    dir_ = pattern;
  }
  ~pe_run() {
    for (pid_t& pid : pids_)
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        pid = 0;
      }
    for (const char* f : {"figures", "id", "id.part", "pe0.log", "pe1.log"}) std::remove(file(f).c_str());
    rmdir(dir_.c_str());
  }
  pe_run(const pe_run&) = delete;
  pe_run& operator=(const pe_run&) = delete;

  std::string file(const char* name) const { return dir_ + "/" + name; }
  std::string log(int pe) const { return file(pe == 0 ? "pe0.log" : "pe1.log"); }

  void start(int pe, const std::vector<std::string>& args, const std::vector<std::string>& env) {
    pids_[pe] = spawn(args, env, log(pe));
  }

  // Waits for both; the failure (with the end of their output), or empty.
  // One that fails ends the other too: it would wait for its peer in
  // NVSHMEM's barrier.
  std::string wait() {
    const auto deadline = std::chrono::steady_clock::now() + time_allowed;
    while (pids_[0] > 0 || pids_[1] > 0) {
      for (int pe = 0; pe < 2; ++pe) {
        if (pids_[pe] <= 0) continue;
        int status = 0;
        const pid_t done = waitpid(pids_[pe], &status, WNOHANG);
        if (done == 0) continue;
        pids_[pe] = 0;
        // -1: someone else reaped it (no status to read); the figures say.
        if (done > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
          return "PE " + std::to_string(pe) + " failed" + output();
      }
      if (std::chrono::steady_clock::now() > deadline)
        return "the two PEs did not finish in " + std::to_string(time_allowed.count()) + " s" + output();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }

  std::string output() const { return "\n PE 0:" + tail(log(0)) + "\n PE 1:" + tail(log(1)); }

 private:
  std::string dir_;
  pid_t pids_[2] = {0, 0};
};

}  // namespace

nvshmem_figures run_nvshmem(const nvshmem_request& r) {
  pe_run run;
  const std::vector<std::string> env = pe_environment();
  for (int pe = 0; pe < 2; ++pe)
    run.start(pe,
              {GRMA_BENCH_NVSHMEM_PROGRAM, "--pe", std::to_string(pe), "--id-file", run.file("id"), "--out",
               run.file("figures"), "--latency", join(r.latency_sizes), "--bandwidth", join(r.bandwidth_sizes),
               "--blocks", std::to_string(r.blocks), "--all-up-to", std::to_string(r.all_up_to), "--threads",
               std::to_string(r.threads), "--latency-iterations", std::to_string(r.latency_iterations),
               "--bandwidth-iterations", std::to_string(r.bandwidth_iterations), "--adds",
               std::to_string(r.adds_per_thread)},
              env);
  const std::string failure = run.wait();
  if (!failure.empty()) throw std::runtime_error("NVSHMEM: " + failure);

  nvshmem_figures out;
  std::ifstream in(run.file("figures"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string what;
    std::size_t bytes = 0;
    fields >> what;
    if (what == "int_p_us") {
      fields >> out.int_p_us;
    } else if (what == "fetch_add_us") {
      fields >> out.fetch_add_us;
    } else if (what == "add_rate_per_s") {
      fields >> out.add_rate_per_s;
    } else if (what == "barrier_us") {
      fields >> out.barrier_us;
    } else if (what == "allreduce_8b_us") {
      fields >> out.allreduce_8b_us;
    } else if (what == "latency") {
      fields >> bytes >> out.signal_us[bytes];
    } else if (what == "bandwidth") {
      std::string one, all;  // "nan" where not measured, which >> into a double refuses
      fields >> bytes >> one >> all;
      out.one_block_gbs[bytes] = std::strtod(one.c_str(), nullptr);
      out.blocks_gbs[bytes] = std::strtod(all.c_str(), nullptr);
    }
  }
  if (std::isnan(out.int_p_us)) throw std::runtime_error("NVSHMEM: no figures from PE 0" + run.output());
  return out;
}

}  // namespace bench
