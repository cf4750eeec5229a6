// SPDX-License-Identifier: MIT
// One tuner per log: an advisory lock (flock) on <log>.lock, held for the whole run. Two tuners
// on one log would measure the same points side by side (each resumes from what the other has
// not yet written) and interleave their records; the second one fails at once instead, naming
// the log and the process that holds it. The lock goes with the process (a kill -9 frees it);
// the lock file stays (removing it would race with a tuner taking it).
#pragma once

#include <atf/error.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

namespace atf {

class log_lock {
 public:
  // Takes the lock of `log` or throws atf::error naming the log and the holder's pid.
  explicit log_lock(const std::filesystem::path& log) : path_(lock_path(log)) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw error("cannot create the lock file " + path_.string() + " of tuning log " +
                  log.string() + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int why = errno;
      std::string holder = read_holder();
      ::close(fd_);
      fd_ = -1;
      if (why == EWOULDBLOCK)
        throw error("tuning log " + log.string() + " is in use by another tuner (" +
                    (holder.empty() ? std::string("pid unknown") : "pid " + holder) + ", lock " +
                    path_.string() + "): wait for it to finish, or tune into another log");
      throw error("cannot lock " + path_.string() + ": " + std::strerror(why));
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
      // the lock holds without the pid: a second tuner then says "pid unknown"
    }
  }
  ~log_lock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  log_lock(const log_lock&) = delete;
  log_lock& operator=(const log_lock&) = delete;

  static std::filesystem::path lock_path(const std::filesystem::path& log) {
    std::filesystem::path p = log;
    p += ".lock";
    return p;
  }

 private:
  std::string read_holder() const {
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string s(buf, n > 0 ? std::size_t(n) : 0);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace atf
