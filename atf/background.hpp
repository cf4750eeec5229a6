// SPDX-License-Identifier: MIT
// atf::background_work: preparations (compiles) that a tuning run left running when its abort
// condition stopped it. The run does not wait for them: they finish on their own threads and are
// never measured or logged. wait(), or destroying the last copy, joins those threads; so keep one
// no longer than whatever the prepare stage uses is alive.
#pragma once

#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace atf {

class background_work {
 public:
  background_work() = default;
  explicit background_work(std::vector<std::thread> threads)
      : p_(threads.empty() ? nullptr : std::make_shared<joiner>(std::move(threads))) {}

  // Blocks until every one of those preparations has finished.
  void wait() const {
    if (p_) p_->join();
  }

 private:
  struct joiner {
    explicit joiner(std::vector<std::thread> t) : threads(std::move(t)) {}
    joiner(const joiner&) = delete;
    joiner& operator=(const joiner&) = delete;
    ~joiner() { join(); }
    void join() {
      std::lock_guard lock(m);
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
    std::mutex m;
    std::vector<std::thread> threads;
  };
  std::shared_ptr<joiner> p_;
};

}  // namespace atf
