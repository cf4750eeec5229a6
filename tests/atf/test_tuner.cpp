// SPDX-License-Identifier: MIT
// Tests of the evaluation engine (two stages, failures, time-outs) and of resuming a killed run.
#include <atf/atf.hpp>

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "test_support.hpp"

namespace {

using atf_test::cost_of;
using atf_test::small_space;

std::filesystem::path temp_path(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("atf_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove(p);
  return p;
}

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Record i's configuration in log lines `lines` (line 0 the header), named (format 3 stores
// values).
nlohmann::json configuration_at(const std::vector<std::string>& lines, std::size_t i) {
  return atf::named_configuration(nlohmann::json::parse(lines[0]),
                                  nlohmann::json::parse(lines[i])["configuration"]);
}

}  // namespace

TEST_CASE("failures are recorded with their reason and never end the run") {
  auto space = small_space();
  std::vector<atf::evaluation> evs;
  atf::tuner t;
  t.technique(atf::search::exhaustive{})
      .progress(atf::progress_mode::off)
      .on_evaluation([&](const atf::evaluation& e) { evs.push_back(e); });
  auto r = t.tune(space, [](const atf::configuration& c) -> double {
    if (c.get<std::int64_t>("x") == 7) throw std::runtime_error("seven is unlucky");
    if (c.get<std::int64_t>("x") == 9)
      throw atf::invalid_configuration("correctness", "wrong result");
    return cost_of(c);
  });
  CHECK(atf::index_t(r.evaluations) == space.size());
  CHECK(r.invalid > 0);
  CHECK(r.best_cost == 1.0);
  bool saw7 = false, saw9 = false;
  for (const auto& e : evs) {
    if (e.config.get<std::int64_t>("x") == 7) {
      CHECK_FALSE(e.valid);
      CHECK(e.invalidity == "runtime");
      CHECK(e.error.find("seven is unlucky") != std::string::npos);
      saw7 = true;
    }
    if (e.config.get<std::int64_t>("x") == 9) {
      CHECK(e.invalidity == "correctness");
      saw9 = true;
    }
  }
  CHECK(saw7);
  CHECK(saw9);
}

TEST_CASE("prepare runs in parallel, measure serially per worker, with time-outs") {
  auto space = small_space();
  std::atomic<int> preparing{0}, max_preparing{0}, measuring{0}, max_measuring{0};
  auto bump = [](std::atomic<int>& cur, std::atomic<int>& mx) {
    int v = ++cur;
    int m = mx.load();
    while (v > m && !mx.compare_exchange_weak(m, v)) {
    }
  };
  atf::evaluator ev(
      [&](const atf::configuration& c) {
        bump(preparing, max_preparing);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        --preparing;
        const auto x = c.get<std::int64_t>("x");
        if (x == 3) throw std::runtime_error("does not compile");
        if (x == 5)
          std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // prepare time-out
        return x * 10;
      },
      [&](const atf::configuration& c, std::any& art) {
        bump(measuring, max_measuring);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --measuring;
        CHECK(std::any_cast<std::int64_t>(art) == c.get<std::int64_t>("x") * 10);
        if (c.get<std::int64_t>("x") == 4)
          std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        return cost_of(c);
      },
      4, 1);
  // 20 times the normal 20 ms: a loaded CI machine (ctest -j) must not time out the others
  ev.prepare_timeout = std::chrono::milliseconds(400);
  ev.measure_timeout = std::chrono::milliseconds(400);
  std::vector<atf::evaluation> evs;
  atf::tuner t;
  t.technique(atf::search::exhaustive{})
      .progress(atf::progress_mode::off)
      .on_evaluation([&](const atf::evaluation& e) { evs.push_back(e); });
  auto r = t.tune(space, ev);
  CHECK(atf::index_t(r.evaluations) == space.size());
  CHECK(max_preparing.load() >= 2);
  CHECK(max_measuring.load() == 1);
  CHECK(r.best_cost == 1.0);
  for (const auto& e : evs) {
    const auto x = e.config.get<std::int64_t>("x");
    if (x == 3) CHECK(e.invalidity == "compile");
    if (x == 4 || x == 5) {
      CHECK(e.invalidity == "timeout");
      CHECK_FALSE(e.valid);
    }
    if (x == 4) CHECK(e.error.find("measure") != std::string::npos);
    if (x == 5) CHECK(e.error.find("prepare") != std::string::npos);
    if (x > 5) CHECK(e.valid);
  }
}

TEST_CASE("several measuring workers each measure serially") {
  auto space = small_space();
  std::mutex m;
  std::map<std::size_t, int> busy;
  std::set<std::size_t> used;
  atf::evaluator ev([](const atf::configuration&) { return 0; },
                    [&](const atf::configuration& c, std::any&, std::size_t w) {
                      {
                        std::lock_guard lock(m);
                        CHECK(++busy[w] == 1);
                        used.insert(w);
                      }
                      std::this_thread::sleep_for(std::chrono::milliseconds(1));
                      std::lock_guard lock(m);
                      --busy[w];
                      return cost_of(c);
                    },
                    2, 3);
  atf::tuner t;
  t.technique(atf::search::random{})
      .seed(1)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::evaluations(40));
  auto r = t.tune(space, ev);
  CHECK(r.evaluations == 40);
  CHECK(used.size() >= 2);
}

TEST_CASE("idle compile threads are filled while a batch waits for its slowest compile") {
  auto space = small_space();
  for (bool fill : {true, false}) {
    CAPTURE(fill);
    std::mutex m;
    std::multiset<std::string> measured;
    // Every fifth x compiles slowly: without fillers the other threads wait for it.
    atf::evaluator ev(
        [](const atf::configuration& c) {
          const bool slow = c.get<std::int64_t>("x") % 5 == 0;
          std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 60 : 1));
          return 0;
        },
        [&](const atf::configuration& c, std::any&) {
          std::lock_guard lock(m);
          measured.insert(c.key());
          return cost_of(c);
        },
        4, 1);
    const auto log = temp_path(fill ? "fill.jsonl" : "nofill.jsonl");
    std::filesystem::remove(log);
    atf::tuner t;
    t.seed(3)
        .fill_idle(fill)
        .log_file(log)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(40));
    auto r = t.tune(space, ev);
    CHECK(r.evaluations == 40);  // the budget holds with fillers in flight
    CHECK(r.measured == 40);
    CHECK(measured.size() == 40);
    for (const auto& k : measured) CHECK_MESSAGE(measured.count(k) == 1, "measured twice: " << k);
    if (fill)
      CHECK(r.filled > 0);
    else
      CHECK(r.filled == 0);
    std::ifstream in(log);
    std::size_t lines = 0;
    for (std::string l; std::getline(in, l);) lines += !l.empty();
    CHECK(lines == 41);  // header + every evaluation, fillers included
    std::filesystem::remove(log);
  }
}

TEST_CASE("a killed run resumes from its log without measuring anything twice") {
  auto space = small_space();
  const auto log = temp_path("resume.jsonl");
  const std::uint64_t total = 45;
  auto make_tuner = [&] {
    atf::tuner t;
    t.seed(9)
        .log_file(log)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(total));
    return t;
  };
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto t = make_tuner();
    t.tune(space, [](const atf::configuration& c) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return cost_of(c);
    });
    ::_exit(0);
  }
  // Kill the child once it has logged some evaluations.
  for (int i = 0; i < 1000 && lines_of(log).size() < 12; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const auto before = lines_of(log);
  REQUIRE(before.size() >= 12);
  REQUIRE(before.size() < total + 1);
  std::set<std::string> logged;
  for (std::size_t i = 1; i < before.size(); ++i) {
    logged.insert(atf::configuration::from_json(configuration_at(before, i)).key());
  }

  std::set<std::string> measured_now;
  auto t = make_tuner();
  auto r = t.tune(space, [&](const atf::configuration& c) {
    CHECK_MESSAGE(!logged.count(c.key()), "measured again: " << c.key());
    CHECK(measured_now.insert(c.key()).second);
    return cost_of(c);
  });
  CHECK(r.resumed == logged.size());
  CHECK(r.evaluations == total);
  CHECK(r.measured == total - logged.size());
  const auto after = lines_of(log);
  CHECK(after.size() == total + 1);
  std::set<std::string> all;
  for (std::size_t i = 1; i < after.size(); ++i)
    all.insert(atf::configuration::from_json(configuration_at(after, i)).key());
  CHECK(all.size() == total);

  // The same seed without a kill gives the same best: the resumed run replayed the technique.
  const auto log2 = temp_path("straight.jsonl");
  atf::tuner t2;
  t2.seed(9)
      .log_file(log2)
      .progress(atf::progress_mode::off)
      .abort_when(atf::abort::evaluations(total));
  auto r2 = t2.tune(space, cost_of);
  CHECK(r2.best_cost == r.best_cost);
  CHECK(r2.best == r.best);

  // Running again on a complete log measures nothing.
  auto t3 = make_tuner();
  auto r3 = t3.tune(space, [](const atf::configuration&) -> double {
    FAIL("nothing should be measured");
    return 0;
  });
  CHECK(r3.measured == 0);
  CHECK(r3.best_cost == r.best_cost);
  std::filesystem::remove(log);
  std::filesystem::remove(log2);
}

TEST_CASE("a torn last line from a kill is dropped on resume") {
  auto space = small_space();
  const auto log = temp_path("torn.jsonl");
  {
    atf::tuner t;
    t.seed(3)
        .log_file(log)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(5));
    t.tune(space, cost_of);
  }
  {
    std::ofstream out(log, std::ios::app);
    out << "{\"configuration\": {\"x\": 1";  // cut off mid-write
  }
  atf::tuner t;
  t.seed(3).log_file(log).progress(atf::progress_mode::off).abort_when(atf::abort::evaluations(8));
  auto r = t.tune(space, cost_of);
  CHECK(r.resumed == 5);
  CHECK(r.evaluations == 8);
  CHECK(lines_of(log).size() == 9);
  std::filesystem::remove(log);
}

TEST_CASE("a batch larger than the remaining budget is evaluated in chunks, not cut off") {
  // Pattern search asks for several neighbours at a time; with valid_evaluations(n) the invalid
  // ones among them leave room, so the run must end with exactly n valid evaluations and a
  // stop reason, for every n (a cut batch used to end the run early with no reason).
  auto space = small_space();
  for (std::uint64_t n : {7u, 12u, 13u, 23u, 31u}) {
    CAPTURE(n);
    atf::tuner t;
    t.technique(std::make_unique<atf::search::pattern_search>())
        .seed(3)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::valid_evaluations(n));
    auto r = t.tune(space, [](const atf::configuration& c) {
      if (c.get<std::int64_t>("y") % 3 == 0) throw std::runtime_error("y divisible by 3");
      return cost_of(c);
    });
    CHECK(r.valid == n);
    CHECK_FALSE(r.stop_reason.empty());
    atf::tuner u;
    u.technique(std::make_unique<atf::search::pattern_search>())
        .seed(3)
        .progress(atf::progress_mode::off)
        .abort_when(atf::abort::evaluations(n));
    auto q = u.tune(space, cost_of);
    CHECK(q.evaluations == n);
    CHECK_FALSE(q.stop_reason.empty());
  }
}

TEST_CASE("a resumed log that used up a duration: duration() stops, session_duration() goes on") {
  // duration() counts every session of the log, so a restart with the same budget measures
  // nothing; session_duration() gives this session its own budget and stops about on time.
  auto space = small_space();
  const auto log = temp_path("session.jsonl");
  auto slow_cost = [](const atf::configuration& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return cost_of(c);
  };
  auto run = [&](atf::abort::condition stop) {
    atf::tuner t;
    t.technique(atf::search::random{}).seed(5).log_file(log).progress(atf::progress_mode::off);
    return t.abort_when(std::move(stop)).tune(space, slow_cost);
  };
  const auto budget = std::chrono::milliseconds(300);
  auto first = run(atf::abort::duration(budget));
  REQUIRE(first.measured > 5);
  CHECK(first.total_seconds >= 0.3);

  auto again = run(atf::abort::duration(budget));
  CHECK(again.measured == 0);
  CHECK(again.resumed == first.evaluations);
  // the log's time is its last record's, written up to one 10-ms evaluation before the tick on
  // which the duration ran out (CI measured 0.299943 once)
  CHECK(again.resumed_seconds >= 0.3 - 0.011);
  CHECK(again.stop_reason.find("duration") != std::string::npos);

  auto more = run(atf::abort::session_duration(budget));
  CHECK(more.resumed == first.evaluations);
  CHECK(more.measured > 5);
  CHECK(more.seconds >= 0.3);
  CHECK(more.seconds < 0.3 + 0.3);  // one 10-ms evaluation late, plus a loaded machine's delays
  CHECK(more.total_seconds >= more.resumed_seconds + 0.3);
  CHECK(more.stop_reason.find("session_duration") != std::string::npos);
  CHECK(lines_of(log).size() == 1 + more.evaluations);
  std::filesystem::remove(log);
}

TEST_CASE("a time stop drops what has not started measuring and returns on time") {
  // Compiles take 600 ms on four threads, and idle filling keeps them busy, so compiles are in
  // flight at the stop. They are not waited for (the stop used to compile and measure them: a
  // run ended up to a compile late); they finish in the background, never measured or logged.
  auto space = small_space();
  std::atomic<int> prepared{0};
  std::mutex m;
  std::set<std::string> measured;
  atf::evaluator ev(
      [&](const atf::configuration&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        ++prepared;
        return 0;
      },
      [&](const atf::configuration& c, std::any&) {
        std::lock_guard lock(m);
        measured.insert(c.key());
        return cost_of(c);
      },
      4, 1);
  const auto log = temp_path("stop.jsonl");
  const double budget = 0.7;  // the second round of compiles runs from ~0.6 to ~1.2 s
  atf::tuner t;
  t.seed(4).log_file(log).progress(atf::progress_mode::off);
  t.abort_when(atf::abort::duration(std::chrono::duration<double>(budget)));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = t.tune(space, ev);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= budget);
  CHECK(took < budget + 0.35);  // waiting for the second round would end after 1.2 s
  CHECK(r.stop_reason.find("duration") != std::string::npos);
  CHECK(r.measured > 0);
  r.background.wait();
  CHECK(prepared.load() > static_cast<int>(r.measured));  // compiled, dropped unmeasured
  {
    std::lock_guard lock(m);
    CHECK(measured.size() == r.measured);
  }
  const auto lines = lines_of(log);
  REQUIRE(lines.size() == 1 + r.measured);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto key = atf::configuration::from_json(configuration_at(lines, i)).key();
    CHECK_MESSAGE(measured.count(key) == 1, "logged but never measured: " << key);
  }

  // The log resumes as usual.
  atf::tuner u;
  u.seed(4).log_file(log).progress(atf::progress_mode::off);
  auto again = u.abort_when(atf::abort::evaluations(r.evaluations + 3)).tune(space, cost_of);
  CHECK(again.resumed == r.evaluations);
  CHECK(again.evaluations == r.evaluations + 3);
  std::filesystem::remove(log);
}

TEST_CASE("an infrastructure failure is retried, never logged nor counted as invalid") {
  auto space = small_space();
  const auto log = temp_path("infrastructure.jsonl");
  std::atomic<int> failures_left{atf::max_infrastructure_retries};
  atf::evaluator ev(
      [&](const atf::configuration& c) {
        // the first compiles of the optimum lose a race with another process
        if (c.get<std::int64_t>("x") == 12 && c.get<std::int64_t>("y") == 4 &&
            failures_left.fetch_sub(1) > 0)
          throw atf::infrastructure_failure("kernel cache: unable to rename temporary file");
        if (c.get<std::int64_t>("x") == 7) throw atf::invalid_configuration("compile", "bad");
      },
      [](const atf::configuration& c, std::any&) { return cost_of(c); }, 2);
  atf::tuner t;
  t.technique(atf::search::exhaustive{}).log_file(log).progress(atf::progress_mode::off);
  t.start_with({atf::configuration::from_json(nlohmann::json{{"x", 12}, {"y", 4}})});
  auto r = t.tune(space, ev);
  CHECK(r.infrastructure_failures == std::uint64_t(atf::max_infrastructure_retries));
  CHECK(r.last_infrastructure_failure.find("unable to rename") != std::string::npos);
  CHECK(atf::index_t(r.evaluations) == space.size());  // every point once, the optimum too
  CHECK(r.best_cost == 1.0);                           // measured at its last try
  const auto lines = lines_of(log);
  CHECK(lines.size() == std::size_t(space.size()) + 1);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i]);
    CHECK(j.value("invalidity", std::string()) != "infrastructure");
    const auto c = configuration_at(lines, i);
    if (c["x"] == 12 && c["y"] == 4) CHECK(j["valid"] == true);
  }
}

TEST_CASE("infrastructure failures in a row stop the run with the reason") {
  auto space = small_space();
  atf::tuner t;
  t.technique(atf::search::random{}).seed(3).progress(atf::progress_mode::off);
  auto r = t.tune(space, [](const atf::configuration&) -> double {
    throw atf::infrastructure_failure("compiler out of memory");
  });
  CHECK(r.evaluations == 0);
  CHECK(r.invalid == 0);
  CHECK(r.infrastructure_failures == atf::max_infrastructure_failures);
  CHECK(r.stop_reason.find("infrastructure failures") != std::string::npos);
  CHECK(r.stop_reason.find("compiler out of memory") != std::string::npos);
}

TEST_CASE("one tuner per log: a second one fails at once, naming the log and the holder") {
  auto space = small_space();
  const auto log = temp_path("locked.jsonl");
  atf::log_lock held(log);  // as another tuner's run would hold it
  atf::tuner t;
  t.log_file(log).progress(atf::progress_mode::off).abort_when(atf::abort::evaluations(3));
  const std::string why =
      log.string() + " is in use by another tuner (pid " + std::to_string(::getpid()) + ",";
  CHECK_THROWS_WITH_AS(t.tune(space, cost_of), doctest::Contains(why.c_str()), atf::error);
  CHECK_FALSE(std::filesystem::exists(log));  // nothing written
}
