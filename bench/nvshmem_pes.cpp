#include "nvshmem_pes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace bench {
namespace {

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

// Our environment, with NVSHMEM's libraries first on the library path (it
// loads its bootstrap plugin at run time; the loader reads the path when the
// process starts, so the PE cannot set it itself).
std::vector<std::string> pe_environment() {
  std::vector<std::string> env;
  const char* path = std::getenv("LD_LIBRARY_PATH");
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0) env.emplace_back(*e);
  env.push_back(std::string("LD_LIBRARY_PATH=") + GRMA_NVSHMEM_LIB +
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
  if (failed != 0)
    throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(failed));
  return pid;
}

}  // namespace

nvshmem_pes::nvshmem_pes(int count, int seconds) : seconds_(seconds), pids_(std::size_t(count), 0) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/grma-nvshmem-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot make a directory like " + pattern + ": " +
                             std::strerror(errno));
  dir_ = pattern;
  id_ = file("id");
  for (int pe = 0; pe < count; ++pe) files_.push_back(log(pe));
}

nvshmem_pes::~nvshmem_pes() {
  for (pid_t& pid : pids_)
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = 0;
    }
  for (const std::string& f : files_) {
    std::remove(f.c_str());
    std::remove((f + ".part").c_str());  // an id file written under another name first
  }
  rmdir(dir_.c_str());
}

std::string nvshmem_pes::file(const std::string& name) {
  files_.push_back(dir_ + "/" + name);
  return files_.back();
}

std::string nvshmem_pes::log(int pe) const {
  return dir_ + "/pe" + std::to_string(pe) + ".log";
}

void nvshmem_pes::start(int pe, const std::vector<std::string>& args) {
  std::vector<std::string> all{
      args.at(0),  "--pe", std::to_string(pe), "--pes", std::to_string(pids_.size()),
      "--id-file", id_};
  all.insert(all.end(), args.begin() + 1, args.end());
  pids_[std::size_t(pe)] = spawn(all, pe_environment(), log(pe));
}

std::string nvshmem_pes::wait() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
  for (bool running = true; running;) {
    running = false;
    for (std::size_t pe = 0; pe < pids_.size(); ++pe) {
      if (pids_[pe] <= 0) continue;
      int status = 0;
      const pid_t done = waitpid(pids_[pe], &status, WNOHANG);
      if (done == 0) {
        running = true;
        continue;
      }
      pids_[pe] = 0;
      // -1: someone else reaped it (no status to read); the outputs say.
      if (done > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        return "PE " + std::to_string(pe) + " failed" + output();
    }
    if (running && std::chrono::steady_clock::now() > deadline)
      return "the PEs did not finish in " + std::to_string(seconds_) + " s" + output();
    if (running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

std::string nvshmem_pes::output() const {
  std::string out;
  for (std::size_t pe = 0; pe < pids_.size(); ++pe)
    out += "\n PE " + std::to_string(pe) + ":" + tail(log(int(pe)));
  return out;
}

}  // namespace bench
