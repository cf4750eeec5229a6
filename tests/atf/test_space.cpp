// SPDX-License-Identifier: MIT
// Tests of ranges, constraints, grouping and the search space (counts, indexing, sampling).
#include <atf/atf.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>

namespace {

std::vector<std::int64_t> ints(const atf::range& r) {
  std::vector<std::int64_t> v;
  for (const auto& x : r.values()) v.push_back(std::get<std::int64_t>(x));
  return v;
}

}  // namespace

TEST_CASE("range generators") {
  CHECK(ints(atf::interval<std::int64_t>(1, 5)) == std::vector<std::int64_t>{1, 2, 3, 4, 5});
  CHECK(ints(atf::interval<std::int64_t>(0, 10, 4)) == std::vector<std::int64_t>{0, 4, 8});
  CHECK(ints(atf::interval<std::int64_t>(0, 3, 1, [](std::int64_t i) { return i * i; })) ==
        std::vector<std::int64_t>{0, 1, 4, 9});
  CHECK(ints(atf::powers_of_two(3, 64)) == std::vector<std::int64_t>{4, 8, 16, 32, 64});
  CHECK(ints(atf::divisors(12)) == std::vector<std::int64_t>{1, 2, 3, 4, 6, 12});
  auto f = atf::interval<double>(0.0, 1.0, 0.25);
  REQUIRE(f.size() == 5);
  CHECK(std::get<double>(f.values()[4]) == doctest::Approx(1.0));
  auto s = atf::set({"a", "b"});
  CHECK(std::get<std::string>(s.values()[1]) == "b");
  CHECK(atf::booleans().size() == 2);
  CHECK_THROWS_AS(atf::interval<std::int64_t>(5, 1), atf::error);
  CHECK_THROWS_AS(atf::set(std::vector<int>{}), atf::error);
  CHECK_THROWS_AS(atf::powers_of_two(5, 7), atf::error);
  CHECK_THROWS_AS(atf::tp("x", atf::range{}), atf::error);
}

TEST_CASE("configuration access and json") {
  atf::configuration c({{"a", std::int64_t{3}}, {"b", 2.5}, {"c", true}, {"d", std::string("x")}});
  CHECK(c.get<std::int64_t>("a") == 3);
  CHECK(c.get<int>("a") == 3);
  CHECK(c.get<double>("a") == 3.0);
  CHECK(c.get<bool>("c"));
  CHECK(c.get<std::string>("d") == "x");
  CHECK_THROWS_WITH_AS(c.get<std::int64_t>("nope"), doctest::Contains("nope"), atf::error);
  CHECK_THROWS_WITH_AS(c.get<std::string>("a"), doctest::Contains("'a'"), atf::error);
  auto back = atf::configuration::from_json(c.to_json());
  CHECK(back == c);
  CHECK(back.key() == c.key());
  CHECK(c.key() == "a=3;b=2.5;c=true;d=\"x\"");
  std::size_t n = 0;
  for (const auto& [name, v] : c) n += !name.empty() && !v.valueless_by_exception();
  CHECK(n == 4);
}

TEST_CASE("groups are found automatically and generation order respects dependencies") {
  atf::tp a("a", atf::interval<std::int64_t>(1, 8));
  atf::tp b("b", atf::interval<std::int64_t>(1, 8));
  // c reads d, which is declared after it (forward reference).
  atf::tp c("c", atf::interval<std::int64_t>(1, 8),
            atf::constraint({"d"}, [](std::int64_t v, const atf::partial_config& p) {
              return v <= p.get<std::int64_t>("d");
            }));
  atf::tp d("d", atf::interval<std::int64_t>(1, 8));
  atf::tp e("e", atf::interval<std::int64_t>(1, 3));
  atf::search_space s({a, b, c, d, e}, {a * b <= 16});
  auto g = s.groups();
  REQUIRE(g.size() == 3);
  std::set<std::set<std::string>> sets;
  for (const auto& x : g) sets.insert({x.begin(), x.end()});
  CHECK(sets.count({"a", "b"}));
  CHECK(sets.count({"c", "d"}));
  CHECK(sets.count({"e"}));
  for (const auto& x : g)
    if (x.size() == 2 && (x[0] == "c" || x[0] == "d")) CHECK(x[0] == "d");
  // 8*8 with a*b<=16: sum over a of min(8, 16/a)
  std::uint64_t ab = 0;
  for (int i = 1; i <= 8; ++i) ab += std::min(8, 16 / i);
  CHECK(s.size() == atf::index_t(ab * 36 * 3));
}

TEST_CASE("cyclic dependencies are rejected naming the cycle") {
  auto reads = [](std::string n) {
    return atf::constraint({n}, [n](std::int64_t v, const atf::partial_config& p) {
      return v <= p.get<std::int64_t>(n);
    });
  };
  atf::tp a("a", atf::interval<std::int64_t>(1, 4), reads("b"));
  atf::tp b("b", atf::interval<std::int64_t>(1, 4), reads("c"));
  atf::tp c("c", atf::interval<std::int64_t>(1, 4), reads("a"));
  try {
    atf::search_space s(a, b, c);
    FAIL("no error");
  } catch (const atf::error& e) {
    std::string m = e.what();
    CHECK(m.find("cyclic") != std::string::npos);
    CHECK(m.find("a -> b -> c -> a") != std::string::npos);
  }
}

TEST_CASE("bad input gives clear errors") {
  atf::tp a("a", atf::interval<std::int64_t>(1, 4));
  SUBCASE("no valid configuration") {
    atf::tp b("b", atf::interval<std::int64_t>(1, 4));
    CHECK_THROWS_WITH_AS(atf::search_space({a, b}, {a + b > 100}),
                         doctest::Contains("no valid configuration"), atf::error);
    CHECK_THROWS_WITH_AS(atf::search_space({a}, {a > 100}),
                         doctest::Contains("no valid configuration"), atf::error);
  }
  SUBCASE("a constraint that throws") {
    atf::tp b("b", atf::interval<std::int64_t>(1, 4),
              atf::constraint({"a"}, [](std::int64_t v, const atf::partial_config& p) -> bool {
                if (v == 3 && p.get<std::int64_t>("a") == 2) throw std::runtime_error("boom");
                return true;
              }));
    try {
      atf::search_space s(a, b);
      FAIL("no error");
    } catch (const atf::error& e) {
      std::string m = e.what();
      CHECK(m.find("boom") != std::string::npos);
      CHECK(m.find("a=2") != std::string::npos);
      CHECK(m.find("b=3") != std::string::npos);
    }
  }
  SUBCASE("reading an undeclared parameter") {
    atf::tp b("b", atf::interval<std::int64_t>(1, 4),
              atf::constraint({}, [](std::int64_t, const atf::partial_config& p) {
                return p.get<std::int64_t>("a") > 0;
              }));
    CHECK_THROWS_WITH_AS(atf::search_space(a, b), doctest::Contains("dependency list"), atf::error);
  }
  SUBCASE("unknown and duplicate parameters") {
    CHECK_THROWS_WITH_AS(atf::search_space({a}, {atf::param("zz") < 3}), doctest::Contains("zz"),
                         atf::error);
    CHECK_THROWS_WITH_AS(atf::search_space(a, a), doctest::Contains("twice"), atf::error);
  }
  SUBCASE("division by zero in an expression") {
    atf::tp z("z", atf::interval<std::int64_t>(0, 3));
    CHECK_THROWS_WITH_AS(atf::search_space({a, z}, {a % z == 0}),
                         doctest::Contains("division by zero"), atf::error);
  }
}

TEST_CASE("exact counts match brute force on random small spaces") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 4);
    std::vector<atf::tp> ps;
    std::vector<std::vector<std::int64_t>> doms;
    for (int i = 0; i < n; ++i) {
      std::vector<std::int64_t> d;
      const int m = 1 + static_cast<int>(rng() % 6);
      for (int j = 0; j < m; ++j) d.push_back(static_cast<std::int64_t>(rng() % 12) - 2);
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
      doms.push_back(d);
      ps.emplace_back("p" + std::to_string(i), atf::set(d));
    }
    // Random constraints: expression over two parameters, plus a callable one.
    std::vector<atf::expr> cs;
    struct rc {
      int a, b, kind;
      std::int64_t k;
    };
    std::vector<rc> rcs;
    for (int c = 0; c < 2; ++c) {
      rc r{static_cast<int>(rng() % n), static_cast<int>(rng() % n), static_cast<int>(rng() % 3),
           static_cast<std::int64_t>(rng() % 10)};
      rcs.push_back(r);
      atf::expr x = ps[r.a], y = ps[r.b];
      cs.push_back(r.kind == 0   ? x + y <= r.k
                   : r.kind == 1 ? x * y != r.k
                                 : (x - y < r.k || x > 5));
    }
    const int owner = n - 1, other = static_cast<int>(rng() % (n - 1));
    const std::int64_t lim = static_cast<std::int64_t>(rng() % 8);
    ps[owner].constrain(atf::constraint(
        {"p" + std::to_string(other)}, [other, lim](std::int64_t v, const atf::partial_config& p) {
          return v + p.get<std::int64_t>("p" + std::to_string(other)) >= lim;
        }));
    auto ok = [&](const std::vector<std::int64_t>& v) {
      for (const auto& r : rcs) {
        auto x = v[r.a], y = v[r.b];
        bool t = r.kind == 0 ? x + y <= r.k : r.kind == 1 ? x * y != r.k : (x - y < r.k || x > 5);
        if (!t) return false;
      }
      return v[owner] + v[other] >= lim;
    };
    std::uint64_t brute = 0;
    std::vector<std::size_t> idx(n, 0);
    for (;;) {
      std::vector<std::int64_t> v(n);
      for (int i = 0; i < n; ++i) v[i] = doms[i][idx[i]];
      brute += ok(v);
      int i = 0;
      while (i < n && ++idx[i] == doms[i].size()) idx[i++] = 0;
      if (i == n) break;
    }
    if (brute == 0) {
      CHECK_THROWS_AS(atf::search_space(ps, cs), atf::error);
      continue;
    }
    atf::search_space s(ps, cs);
    CHECK(s.size() == atf::index_t(brute));
    // Every configuration by index is valid and distinct.
    std::set<std::string> keys;
    for (atf::index_t i = 0; i < s.size(); ++i) {
      auto c = s.at(i);
      std::vector<std::int64_t> v(n);
      for (int k = 0; k < n; ++k) v[k] = c.get<std::int64_t>("p" + std::to_string(k));
      CHECK(ok(v));
      keys.insert(c.key());
    }
    CHECK(keys.size() == brute);
  }
}

TEST_CASE("index, point and coordinate mappings are consistent") {
  atf::tp a("a", atf::interval<std::int64_t>(1, 12));
  atf::tp b("b", atf::interval<std::int64_t>(1, 12), atf::divides(a));
  atf::tp c("c", atf::interval<std::int64_t>(1, 6));
  atf::tp d("d", atf::set({"u", "v", "w"}));
  atf::search_space s({a, b, c, d}, {c <= a, d != "w" || c == 1});
  const auto n = static_cast<std::uint64_t>(s.size());
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto p = s.point_at(i);
    CHECK(s.index_of(p) == atf::index_t(i));
    auto cfg = s.to_configuration(p);
    CHECK(s.contains(cfg));
    CHECK(*s.find(cfg) == p);
    keys.insert(cfg.key());
    // The centre of a point's coordinate cell maps back to the point.
    auto co = s.coordinates_of(p);
    CHECK(s.point_at_coordinates(co) == p);
  }
  CHECK(keys.size() == n);
  atf::configuration bad({{"a", std::int64_t{5}},
                          {"b", std::int64_t{2}},
                          {"c", std::int64_t{1}},
                          {"d", std::string("u")}});
  CHECK_FALSE(s.contains(bad));
  CHECK_THROWS_AS(s.at(s.size()), atf::error);

  // Uniform coordinates give (roughly) uniform configurations.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::map<std::uint64_t, int> hits;
  const int draws = 200 * static_cast<int>(n);
  for (int i = 0; i < draws; ++i) {
    std::vector<double> co(s.dimensions());
    for (auto& x : co) x = u(rng);
    hits[static_cast<std::uint64_t>(s.index_of(s.point_at_coordinates(co)))]++;
  }
  CHECK(hits.size() == n);
  for (const auto& [k, v] : hits) {
    CHECK(v > 200 * 0.6);
    CHECK(v < 200 * 1.4);
  }
}

TEST_CASE("neighbours differ in one parameter and are valid") {
  atf::tp a("a", atf::interval<std::int64_t>(1, 16));
  atf::tp b("b", atf::interval<std::int64_t>(1, 16), atf::divides(a));
  atf::search_space s(a, b);
  atf::configuration c({{"a", std::int64_t{12}}, {"b", std::int64_t{4}}});
  auto ns = s.neighbours(c);
  std::set<std::string> keys;
  for (const auto& n : ns) {
    CHECK(s.contains(n));
    int diff = (n.get<std::int64_t>("a") != 12) + (n.get<std::int64_t>("b") != 4);
    CHECK(diff == 1);
    keys.insert(n.key());
  }
  CHECK(keys.count("a=8;b=4"));   // nearest a below 12 that 4 divides
  CHECK(keys.count("a=16;b=4"));  // nearest above
  CHECK(keys.count("a=12;b=3"));
  CHECK(keys.count("a=12;b=6"));
}

TEST_CASE("huge spaces have exact sizes beyond 64 bits") {
  std::vector<atf::tp> ps;
  for (int i = 0; i < 22; ++i)
    ps.emplace_back("x" + std::to_string(i), atf::interval<std::int64_t>(1, 10));
  atf::search_space s(ps);
  atf::index_t expect = 1;
  for (int i = 0; i < 22; ++i) expect *= 10;
  CHECK(s.size() == expect);
  CHECK(atf::to_string(s.size()) == "10000000000000000000000");
  auto c = s.at(s.size() - 1);
  CHECK(c.get<std::int64_t>("x0") == 10);
}

// The published spaces ship with the tests (tests/atf/spaces/, README there names their origin).
const std::filesystem::path published_spaces = MDH_TEST_SPACES_DIR;

TEST_CASE("the five published spaces have their published counts") {
  const std::filesystem::path& spaces = published_spaces;
  REQUIRE_MESSAGE(std::filesystem::is_directory(spaces), "missing " << spaces.string());
  const std::map<std::string, std::uint64_t> expected = {{"dedispersion", 11130},
                                                         {"hotspot", 349853},
                                                         {"atf_prl_2x2", 1200},
                                                         {"atf_prl_4x4", 10800},
                                                         {"atf_prl_8x8", 48720}};
  for (const auto& [name, count] : expected) {
    CAPTURE(name);
    const auto path = spaces / (name + ".json");
    REQUIRE(std::filesystem::exists(path));
    auto d = atf::read_space_file(path);
    auto s = atf::make_space(d);
    CHECK(s.size() == atf::index_t(count));
    REQUIRE(d.valid_count.has_value());
    CHECK(*d.valid_count == count);
    // Spot-check: sampled configurations satisfy every constraint string.
    std::mt19937_64 rng(1);
    for (int i = 0; i < 50; ++i) {
      auto c = s.to_configuration(s.random_point(rng));
      CHECK(s.contains(c));
    }
  }
}

TEST_CASE("space generation in parallel equals sequential") {
  auto d = atf::read_space_file(published_spaces / "hotspot.json");
  atf::space_options one, four;
  one.threads = 1;
  four.threads = 4;
  auto s1 = atf::make_space(d, one);
  auto s4 = atf::make_space(d, four);
  REQUIRE(s1.size() == s4.size());
  for (atf::index_t i = 0; i < s1.size(); i += 997) CHECK(s1.at(i) == s4.at(i));
  CHECK(s1.hash() == s4.hash());
}

TEST_CASE("column-wise level checks agree with one-at-a-time checks") {
  // Wide ranges (several chunks of values), nested and/or, and a division that only
  // short-circuiting keeps from dividing by zero (the column-wise check falls back).
  atf::tp x("x", atf::interval<std::int64_t>(-70, 70));
  atf::tp y("y", atf::interval<std::int64_t>(-3, 150));
  auto brute = [&](auto pred) {
    std::uint64_t n = 0;
    for (std::int64_t a = -70; a <= 70; ++a)
      for (std::int64_t b = -3; b <= 150; ++b) n += pred(a, b) ? 1 : 0;
    return n;
  };
  const auto X = atf::param("x"), Y = atf::param("y");
  atf::search_space s1({x, y}, {(Y == 0) || ((X / Y) % 3 == 1)});
  CHECK(s1.size() == atf::index_t(brute([](std::int64_t a, std::int64_t b) {
          return b == 0 || (a / b) % 3 == 1;
        })));
  atf::search_space s2({x, y}, {(X < 5 && (Y > 100 || -X > Y)) || -(X - Y) == 7 || X - Y == 7});
  CHECK(s2.size() == atf::index_t(brute([](std::int64_t a, std::int64_t b) {
          return (a < 5 && (b > 100 || -a > b)) || (a - b == 7 || b - a == 7);
        })));
  atf::tp z("z", atf::interval<std::int64_t>(0, 3));
  atf::tp w("w", atf::interval<std::int64_t>(0, 80));
  CHECK_THROWS_WITH_AS(atf::search_space({w, z}, {atf::param("w") % atf::param("z") == 0}),
                       doctest::Contains("division by zero"), atf::error);
}

TEST_CASE("a constraint reads its dependencies by position as by name") {
  using atf::partial_config;
  auto by_name = [](std::int64_t z, const partial_config& c) {
    return c.get<std::int64_t>("x") * c.get<std::int64_t>("y") * z <= 64;
  };
  auto by_position = [](std::int64_t z, const partial_config& c) {
    return c.get_read<std::int64_t>(0) * c.get_read<std::int64_t>(1) * z <= 64;
  };
  auto space = [](auto f) {
    atf::tp x("x", atf::powers_of_two(1, 32)), y("y", atf::powers_of_two(1, 32));
    atf::tp z("z", atf::powers_of_two(1, 32), atf::constraint({"x", "y"}, f));
    return atf::search_space(std::vector<atf::tp>{x, y, z});
  };
  const atf::search_space a = space(by_name), b = space(by_position);
  CHECK(a.size() == b.size());
  CHECK(a.size() == 81);  // 2^i, 2^j, 2^k (i, j, k <= 5) with i + j + k <= 6
  auto beyond = [](std::int64_t, const partial_config& c) {
    return c.get_read<std::int64_t>(2) > 0;
  };
  CHECK_THROWS_WITH_AS(space(beyond), doctest::Contains("beyond its dependency list"), atf::error);
}
