// SPDX-License-Identifier: MIT
// Tests of files: logs (foreign/corrupt), parameter files, T1 expressions and spaces, T4 export,
// and the process-based cost function.
#include <atf/atf.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

atf::search_space space_ab() {
  atf::tp a("a", atf::interval<std::int64_t>(1, 8));
  atf::tp b("b", atf::interval<std::int64_t>(1, 8), atf::less_than_or_eq(a));
  return atf::search_space(a, b);
}
double cost_ab(const atf::configuration& c) {
  return static_cast<double>(c.get<std::int64_t>("a") * 3 - c.get<std::int64_t>("b"));
}
std::filesystem::path temp_path(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("atf_files_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove(p);
  return p;
}
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
atf::tuner quiet(const std::filesystem::path& log, std::uint64_t n) {
  atf::tuner t;
  t.seed(1).log_file(log).progress(atf::progress_mode::off).abort_when(atf::abort::evaluations(n));
  return t;
}

}  // namespace

TEST_CASE("log header and records") {
  auto space = space_ab();
  auto log = temp_path("log.jsonl");
  auto t = quiet(log, 10);
  t.tune(space, cost_ab);
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  auto h = nlohmann::json::parse(line);
  CHECK(h["atf_log"] == 3);
  CHECK(h["space_hash"] == space.hash());
  CHECK(h["parameters"].size() == 2);
  int n = 0;
  while (std::getline(in, line)) {
    auto r = nlohmann::json::parse(line);
    REQUIRE(r.contains("configuration"));
    CHECK(r["configuration"].is_array());  // format 3: the values, in the header's order
    CHECK(r["configuration"].size() == 2);
    CHECK(r.contains("cost"));
    CHECK(r.contains("timestamp"));
    CHECK(r.contains("prepare_s"));
    CHECK(r.contains("measure_s"));
    ++n;
  }
  CHECK(n == 10);
  std::filesystem::remove(log);
}

TEST_CASE("format 3 logs resume; a format-2 log resumes and stays format 2") {
  auto space = space_ab();
  auto log = temp_path("compact.jsonl");
  quiet(log, 6).tune(space, cost_ab);
  auto lc = atf::read_log(log, space.hash());
  REQUIRE(lc.records.size() == 6);
  for (const auto& r : lc.records) {  // read back as objects, the values under their names
    REQUIRE(r["configuration"].is_object());
    const auto c = atf::configuration::from_json(r["configuration"]);
    CHECK(r["cost"].get<double>() == cost_ab(c));
  }
  auto more = quiet(log, 9).tune(space, cost_ab);
  CHECK(more.resumed == 6);
  CHECK(atf::read_log(log, space.hash()).records.size() == 9);

  // the same records written as format 2 (objects): read, resumed, appended to as objects
  auto old = temp_path("format2.jsonl");
  {
    std::ofstream o(old);
    auto h = lc.header;
    h["atf_log"] = 2;
    o << h.dump() << "\n";
    for (const auto& r : lc.records) o << r.dump() << "\n";
  }
  auto resumed = quiet(old, 8).tune(space, cost_ab);
  CHECK(resumed.resumed == 6);
  std::ifstream in(old);
  std::string line;
  std::getline(in, line);
  CHECK(nlohmann::json::parse(line)["atf_log"] == 2);
  int objects = 0;
  while (std::getline(in, line))
    objects += nlohmann::json::parse(line)["configuration"].is_object();
  CHECK(objects == 8);

  // an array with a value too few is a corrupt record, and the log is left untouched
  {
    std::ofstream o(log, std::ios::app);
    o << R"({"configuration":[1],"valid":true,"cost":1.0})"
      << "\n";
  }
  const auto before = slurp(log);
  CHECK_THROWS_WITH_AS(
      quiet(log, 12).tune(space, cost_ab),
      doctest::Contains("a configuration with 1 value(s) where the log header names 2"),
      atf::error);
  CHECK(slurp(log) == before);
  std::filesystem::remove(log);
  std::filesystem::remove(old);
}

TEST_CASE("every committed tuning log reads back: format 3 records named by their header") {
  // params/**/*.log.jsonl (scripts/compact_logs.py wrote them as format 3): each record's values
  // are one per header parameter, so resuming or starting from any of them sees its configurations
  std::size_t logs = 0, compact = 0, records = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(MDH_SOURCE_ROOT) / "params")) {
    const std::string name = f.path().filename().string();
    if (!f.is_regular_file() || !name.ends_with(".log.jsonl")) continue;
    INFO(f.path().string());
    const auto header = atf::log_header(f.path());
    REQUIRE(header.has_value());
    ++logs, compact += header->value("atf_log", 0) == 3;
    std::size_t lines = 0;
    {
      std::ifstream in(f.path());
      for (std::string l; std::getline(in, l);) lines += !l.empty();
    }
    const auto rs = atf::log_records(f.path());
    CHECK(rs.size() + 1 == lines);  // none passed over: every record's values are named
    for (const auto& r : rs) CHECK(r["configuration"].size() == (*header)["parameters"].size());
    records += rs.size();
  }
  MESSAGE(logs, " committed logs (", compact, " of format 3), ", records, " records");
  CHECK(logs > 0);
  CHECK(compact > 0);
}

TEST_CASE("a foreign or corrupt log is an error and the file is left untouched") {
  auto space = space_ab();
  SUBCASE("log of another space") {
    auto log = temp_path("other.jsonl");
    atf::tp a("a", atf::interval<std::int64_t>(1, 9));
    atf::search_space other(a);
    auto t = quiet(log, 3);
    t.tune(other, [](const atf::configuration&) { return 1.0; });
    const auto before = slurp(log);
    auto t2 = quiet(log, 3);
    CHECK_THROWS_WITH_AS(t2.tune(space, cost_ab), doctest::Contains("another search space"),
                         atf::error);
    CHECK(slurp(log) == before);
    std::filesystem::remove(log);
  }
  SUBCASE("not a log at all") {
    auto log = temp_path("foreign.txt");
    std::ofstream(log) << "hello world\nsecond line\n";
    const auto before = slurp(log);
    auto t = quiet(log, 3);
    CHECK_THROWS_WITH_AS(t.tune(space, cost_ab), doctest::Contains("not an atf tuning log"),
                         atf::error);
    CHECK(slurp(log) == before);
    std::filesystem::remove(log);
  }
  SUBCASE("corrupt record in the middle") {
    auto log = temp_path("corrupt.jsonl");
    auto t = quiet(log, 5);
    t.tune(space, cost_ab);
    auto text = slurp(log);
    auto second = text.find('\n') + 1;
    text.insert(second + 5, "#garbage#");
    std::ofstream(log, std::ios::binary) << text;
    auto t2 = quiet(log, 8);
    CHECK_THROWS_WITH_AS(t2.tune(space, cost_ab), doctest::Contains(":2: corrupt record"),
                         atf::error);
    CHECK(slurp(log) == text);
    std::filesystem::remove(log);
  }
  SUBCASE("record with a configuration outside the space") {
    auto log = temp_path("outside.jsonl");
    auto t = quiet(log, 2);
    t.tune(space, cost_ab);
    std::ofstream(log, std::ios::app) << R"({"configuration":{"a":1,"b":5},"valid":true,"cost":1})"
                                      << "\n";
    const auto before = slurp(log);
    auto t2 = quiet(log, 8);
    CHECK_THROWS_WITH_AS(t2.tune(space, cost_ab), doctest::Contains("not in this search space"),
                         atf::error);
    CHECK(slurp(log) == before);
    std::filesystem::remove(log);
  }
}

TEST_CASE("parameter file round trip") {
  auto space = space_ab();
  atf::tuner t;
  t.technique(atf::search::exhaustive{}).seed(4).progress(atf::progress_mode::off);
  auto r = t.tune(space, cost_ab);
  auto path = temp_path("params.json");
  atf::write_parameter_file(path, r, {{"workload", "test"}, {"device", "cpu"}});
  auto j = nlohmann::json::parse(slurp(path));
  CHECK(j["configuration"]["a"] == 1);
  CHECK(j["configuration"]["b"] == 1);
  CHECK(j["cost"] == 2.0);
  CHECK(j["tuning"]["technique"] == "exhaustive");
  CHECK(j["tuning"]["seed"] == 4);
  CHECK(j["tuning"]["evaluations"] == 36);
  CHECK(j["tuning"].contains("duration_s"));
  CHECK(j["meta"]["device"] == "cpu");
  auto back = atf::read_parameter_file(path);
  CHECK(back.config == r.best);
  CHECK(back.cost == 2.0);
  CHECK(back.meta["workload"] == "test");
  std::ofstream(path) << "{\"x\": 1}";
  CHECK_THROWS_AS(atf::read_parameter_file(path), atf::error);
  std::filesystem::remove(path);
}

TEST_CASE("T1 expressions: semantics and errors that point at the text") {
  std::set<std::string> known = {"a", "b", "c"};
  auto eval = [&](const std::string& text, std::int64_t a, std::int64_t b) {
    atf::tp ta("a", atf::set({a}));
    atf::tp tb("b", atf::set({b}));
    try {
      atf::search_space s({ta, tb}, {atf::parse_expression(text)});
      return true;
    } catch (const atf::error& e) {
      if (std::string(e.what()).find("no valid configuration") == std::string::npos) throw;
      return false;
    }
  };
  CHECK(eval("a * b <= 12 and not a == b", 3, 4));
  CHECK_FALSE(eval("a * b <= 12 and not a == b", 3, 3));
  CHECK(eval("a / b == 0.75", 3, 4));  // real division
  CHECK(eval("a // b == 0", 3, 4));
  CHECK(eval("-a % b == 1", 3, 4));  // Python modulo
  CHECK(eval("min(a, b) == 3 and max(a, b, 10) == 10", 3, 4));
  CHECK(eval("1 < a < b", 3, 4));  // chained
  CHECK_FALSE(eval("1 < a < b", 3, 2));
  CHECK(eval("a ** 2 == 9 or b == 0", 3, 4));
  CHECK(eval("(a + b) * 2 == 14", 3, 4));
  CHECK(eval("a != b && !(a > b)", 3, 4));

  auto col = [&](const std::string& text) {
    try {
      atf::parse_expression(text, &known);
    } catch (const atf::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(col("a * (b + ) < 3").find("column 10") != std::string::npos);
  CHECK(col("a * (b + 1 < 3").find("expected ')'") != std::string::npos);
  CHECK(col("a + zz < 3").find("unknown parameter 'zz'") != std::string::npos);
  CHECK(col("a + zz < 3").find("column 5") != std::string::npos);
  CHECK(col("foo(a) < 3").find("unknown function 'foo'") != std::string::npos);
  CHECK(col("a < 3 )").find("column 7") != std::string::npos);
  CHECK(col("").find("empty expression") != std::string::npos);
  auto msg = col("a $ b");
  CHECK(msg.find("a $ b\n") != std::string::npos);
  CHECK(msg.find("\n    ^") != std::string::npos);  // caret under the '$'
}

TEST_CASE("T1 space files") {
  auto path = temp_path("t1.json");
  std::ofstream(path) << R"json({
    "ConfigurationSpace": {
      "TuningParameters": [
        {"Name": "bx", "Type": "int", "Values": "[1, 2, 4, 8, 16, 32]"},
        {"Name": "by", "Type": "int", "Values": "range(1, 9)"},
        {"Name": "f", "Type": "float", "Values": "[0.5, 1.0]"},
        {"Name": "s", "Type": "string", "Values": "['x', 'y']"}
      ],
      "Conditions": [
        {"Parameters": ["bx", "by"], "Expression": "bx * by >= 8"},
        {"Parameters": ["f", "s"], "Expression": "f > 0.75 or s == 'x'"}
      ]
    }
  })json";
  auto d = atf::read_space_file(path);
  auto s = atf::make_space(d);
  std::uint64_t n = 0;
  for (int bx : {1, 2, 4, 8, 16, 32})
    for (int by = 1; by <= 8; ++by) n += bx * by >= 8;
  CHECK(s.size() == atf::index_t(n * 3));
  std::ofstream(path)
      << R"({"parameters": [{"name": "a", "values": [1, 2]}], "constraints": ["a >> 1"]})";
  try {
    atf::read_space_file(path);
    FAIL("no error");
  } catch (const atf::error& e) {
    std::string m = e.what();
    CHECK(m.find("constraint 1") != std::string::npos);
    CHECK(m.find("column 4") != std::string::npos);
  }
  std::ofstream(path) << "{ not json";
  CHECK_THROWS_WITH_AS(atf::read_space_file(path), doctest::Contains("invalid JSON"), atf::error);
  std::filesystem::remove(path);
}

TEST_CASE("T4 export is valid JSON with the expected fields") {
  auto space = space_ab();
  auto log = temp_path("t4.jsonl");
  auto t = quiet(log, 12);
  t.tune(space, [](const atf::configuration& c) -> double {
    if (c.get<std::int64_t>("a") == 2) throw std::runtime_error("bad");
    return cost_ab(c);
  });
  auto out = temp_path("t4.json");
  atf::export_t4(log, space.hash(), out);
  auto j = nlohmann::json::parse(slurp(out));
  CHECK(j["schema_version"] == "1.0.0");
  REQUIRE(j["results"].size() == 12);
  for (const auto& r : j["results"]) {
    CHECK(r.contains("timestamp"));
    CHECK(r["configuration"].is_object());
    CHECK(r["objectives"] == nlohmann::json::array({"time"}));
    CHECK(r["times"].contains("compilation_time"));
    CHECK(r["times"]["runtimes"].is_array());
    CHECK(r["correctness"].is_number());
    const std::string inv = r["invalidity"];
    CHECK((inv == "correct" || inv == "runtime"));
    if (inv == "correct") CHECK(r["measurements"][0]["value"].is_number());
  }
  std::filesystem::remove(log);
  std::filesystem::remove(out);
}

TEST_CASE("process-based cost function") {
  atf::tp a("a", atf::interval<std::int64_t>(1, 6));
  atf::tp m("m", atf::set({"fast", "slow"}));
  atf::search_space space(a, m);
  atf::process_options o;
  o.compile = "test \"$P_a\" != 2 && echo compiled > \"$ATF_EVAL_DIR/bin\"";
  o.run =
      "cat \"$ATF_EVAL_DIR/bin\" >/dev/null && if [ \"$P_a\" = 5 ]; then sleep 5; fi; "
      "if [ \"$P_m\" = slow ]; then echo $((P_a + 10)); else echo $P_a; fi";
  o.cost = atf::process_options::cost_source::last_number;
  o.env_prefix = "P_";
  o.run_timeout = std::chrono::milliseconds(300);
  o.compile_threads = 2;
  std::vector<atf::evaluation> evs;
  atf::tuner t;
  t.technique(atf::search::exhaustive{})
      .progress(atf::progress_mode::off)
      .on_evaluation([&](const atf::evaluation& e) { evs.push_back(e); });
  auto r = t.tune(space, atf::process_evaluator(o));
  CHECK(r.evaluations == 12);
  CHECK(r.best_cost == 1.0);
  CHECK(r.best.get<std::int64_t>("a") == 1);
  for (const auto& e : evs) {
    const auto x = e.config.get<std::int64_t>("a");
    if (x == 2) CHECK(e.invalidity == "compile");
    if (x == 5) CHECK(e.invalidity == "timeout");
    if (x != 2 && x != 5) CHECK(e.valid);
  }
  auto p = atf::run_process("echo hi; exit 3", {});
  CHECK(p.exit_code == 3);
  CHECK(p.output == "hi\n");
}

TEST_CASE("parsed constraints follow Python semantics on the typed integer path") {
  auto count = [](const std::string& c) {
    nlohmann::json doc = {{"parameters",
                           {{{"name", "x"}, {"values", {-7, -5, -3, -1, 0, 1, 3, 5, 7}}},
                            {{"name", "y"}, {"values", {1, 2, 3}}}}},
                          {"constraints", {c}}};
    return static_cast<std::uint64_t>(atf::make_space(atf::parse_space_json(doc, "t")).size());
  };
  // Expected counts computed with Python 3 over the same values.
  CHECK(count("x / y == 2.5") == 1);        // real division
  CHECK(count("x // y == -4") == 1);        // floor division rounds down
  CHECK(count("x % y == 1") == 11);         // Python modulo takes the divisor's sign
  CHECK(count("(x / y) % 2 == 0.5") == 4);  // double modulo after real division
  CHECK(count("min(x, y) == -7 and abs(x) == 7") == 3);
  CHECK(count("not x or y * 1.5 > 4") == 11);
}

TEST_CASE("Parsed expressions: flat form gives the same text, hash and semantics as a tree") {
  const char* texts[] = {"a * b <= 12 and not a == b",
                         "1 < a < b <= 7",
                         "min(a, b) == 3 and max(a, b, 10) == 10 or abs(-a) > 2",
                         "(a + b) * 2 == 14 or a // b % 3 != 1",
                         "a ** 2 == 9 or b / 2.5 == 0.5",
                         "True and a != b or False"};
  for (const char* t : texts) {
    CAPTURE(t);
    const atf::expr parsed = atf::parse_expression(t);
    REQUIRE(parsed.flat() != nullptr);
    const atf::expr tree(parsed.node());  // the same expression as a node tree
    REQUIRE(tree.flat() == nullptr);
    CHECK(parsed.text() == tree.text());
    CHECK(parsed.text("x") == tree.text("x"));
    CHECK(parsed.hash_text(7) == tree.hash_text(7));
    CHECK(parsed.parameters() == tree.parameters());
    CHECK(parsed.uses_self() == tree.uses_self());
    atf::tp ta("a", atf::interval<std::int64_t>(1, 6));
    atf::tp tb("b", atf::interval<std::int64_t>(1, 6));
    atf::tp tc("c", atf::set({1, 2}));
    atf::space_options o;
    o.threads = 1;
    std::optional<atf::search_space> s1, s2;
    try {
      s1.emplace(std::vector<atf::tp>{ta, tb, tc}, std::vector<atf::expr>{parsed}, o);
      s2.emplace(std::vector<atf::tp>{ta, tb, tc}, std::vector<atf::expr>{tree}, o);
    } catch (const atf::error&) {
      CHECK_THROWS_AS(atf::search_space({ta, tb, tc}, {tree}, o), atf::error);
      continue;
    }
    REQUIRE(s1->size() == s2->size());
    CHECK(s1->hash() == s2->hash());
    for (atf::index_t i = 0; i < s1->size(); ++i) CHECK(s1->at(i) == s2->at(i));
  }
}

TEST_CASE("typed integer code (operands read in place) agrees with the generic path") {
  // The same constraint over integer parameters (typed code, slot and constant operands) and over
  // the same values as floats (generic code).
  auto count = [](const std::string& c, bool floats) {
    nlohmann::json doc = {{"parameters",
                           {{{"name", "x"},
                             {"values", {-4, -1, 0, 1, 2, 3, 5, 8}},
                             {"type", floats ? "float" : "int"}},
                            {{"name", "y"}, {"values", {1, 2, 3, 4}}}}},
                          {"constraints", {c}}};
    atf::space_options o;
    o.threads = 1;
    return static_cast<std::uint64_t>(atf::make_space(atf::parse_space_json(doc, "t"), o).size());
  };
  const char* texts[] = {"2 + 3 <= x * y",
                         "x * y <= 2 * 3",
                         "10 - x > y",
                         "x % 3 == y % 2",
                         "-x < y - 2",
                         "min(x, 3) + max(y, 1) < 6",
                         "(x > 1) + (y > 1) == 1",
                         "x > 1 or y == 2 and x < 0",
                         "not (x == y) and 1 < y < 4",
                         "abs(x) * 2 >= y + 1"};
  for (const char* t : texts) {
    CAPTURE(t);
    CHECK(count(t, false) == count(t, true));
  }
  try {
    count("y % x == 0", false);
    FAIL("expected a division by zero");
  } catch (const atf::error& e) {
    CHECK(std::string(e.what()).find("division by zero in '(y % x) == 0'") != std::string::npos);
  }
}
