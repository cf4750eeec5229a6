// SPDX-License-Identifier: MIT
// A cost function made of shell commands: an optional compile command (the prepare stage) and a
// run command (the measure stage), with the configuration passed in environment variables. The
// cost is the run's wall time or the last number it prints. Time-outs kill the whole process group.
#pragma once

#include <atf/configuration.hpp>
#include <atf/error.hpp>
#include <atf/evaluator.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <any>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace atf {

struct process_result {
  int exit_code = -1;
  bool timed_out = false;
  std::string output;  // stdout and stderr together (the last 1 MiB)
  double seconds = 0;
};

// Runs `/bin/sh -c command` with extra environment entries ("NAME=value").
inline process_result run_process(const std::string& command, const std::vector<std::string>& env,
                                  double timeout_s = 0, const std::filesystem::path& cwd = {}) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw error(std::string("run_process: pipe failed: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);

  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string s(*e);
    const auto name = s.substr(0, s.find('=') + 1);
    bool overridden = false;
    for (const auto& x : env) overridden |= x.compare(0, name.size(), name) == 0;
    if (!overridden) envs.push_back(std::move(s));
  }
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};

  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw error("run_process: cannot start '" + command + "': " + std::strerror(rc));
  }
  process_result r;
  char buf[4096];
  for (;;) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      const double left =
          timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (left <= 0) {
        ::kill(-pid, SIGKILL);
        r.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = ::poll(&p, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;  // time-out is handled at the top
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.output.append(buf, static_cast<std::size_t>(n));
    if (r.output.size() > (2u << 20)) r.output.erase(0, r.output.size() - (1u << 20));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.timed_out) ::kill(-pid, SIGKILL);  // leftovers of the group
  r.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

struct process_options {
  std::string compile;  // optional; runs in the prepare stage, in parallel
  std::string run;      // runs in the measure stage, serially per worker
  enum class cost_source { wall_time, last_number } cost = cost_source::wall_time;
  std::string env_prefix;  // variable name = prefix + parameter name
  std::chrono::duration<double> compile_timeout{0}, run_timeout{0};
  std::size_t compile_threads = 0;
  std::size_t run_workers = 1;
  std::filesystem::path working_directory;
};

namespace detail {

// A scratch directory per evaluation ($ATF_EVAL_DIR), removed with the artefact.
struct eval_dir {
  std::filesystem::path path;
  eval_dir() {
    std::string t = (std::filesystem::temp_directory_path() / "atf-eval-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw error("process cost: cannot create a scratch directory");
    path = t;
  }
  ~eval_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline std::vector<std::string> config_env(const configuration& c, const std::string& prefix,
                                           const eval_dir& dir) {
  std::vector<std::string> env;
  for (const auto& [n, v] : c) {
    std::string s;
    if (auto* str = std::get_if<std::string>(&v))
      s = *str;
    else if (auto* b = std::get_if<bool>(&v))
      s = *b ? "1" : "0";
    else
      s = to_string(v);
    env.push_back(prefix + n + "=" + s);
  }
  env.push_back("ATF_EVAL_DIR=" + dir.path.string());
  return env;
}

inline std::string tail(const std::string& s, std::size_t n = 2000) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

}  // namespace detail

inline evaluator process_evaluator(process_options o) {
  if (o.run.empty()) throw error("process_evaluator: no run command");
  auto opts = std::make_shared<const process_options>(std::move(o));
  auto prepare = [opts](const configuration& c) -> std::shared_ptr<detail::eval_dir> {
    auto dir = std::make_shared<detail::eval_dir>();
    if (opts->compile.empty()) return dir;
    auto r = run_process(opts->compile, detail::config_env(c, opts->env_prefix, *dir),
                         opts->compile_timeout.count(), opts->working_directory);
    if (r.timed_out) throw invalid_configuration("timeout", "compile command timed out");
    if (r.exit_code != 0)
      throw invalid_configuration("compile", "compile command exited with " +
                                                 std::to_string(r.exit_code) + ": " +
                                                 detail::tail(r.output));
    return dir;
  };
  auto measure = [opts](const configuration& c, std::any& art, std::size_t worker) -> double {
    auto dir = std::any_cast<std::shared_ptr<detail::eval_dir>>(art);
    auto env = detail::config_env(c, opts->env_prefix, *dir);
    env.push_back("ATF_WORKER=" + std::to_string(worker));
    auto r = run_process(opts->run, env, opts->run_timeout.count(), opts->working_directory);
    if (r.timed_out) throw invalid_configuration("timeout", "run command timed out");
    if (r.exit_code != 0)
      throw invalid_configuration(
          "runtime",
          "run command exited with " + std::to_string(r.exit_code) + ": " + detail::tail(r.output));
    if (opts->cost == process_options::cost_source::wall_time) return r.seconds;
    std::istringstream in(r.output);
    std::string tok, last;
    while (in >> tok) last = tok;
    char* end = nullptr;
    const double v = std::strtod(last.c_str(), &end);
    if (last.empty() || end != last.c_str() + last.size())
      throw invalid_configuration(
          "runtime", "run output does not end with a number: " + detail::tail(r.output, 200));
    return v;
  };
  evaluator ev(prepare, measure, opts->compile_threads, opts->run_workers);
  return ev;
}

}  // namespace atf
