// SPDX-License-Identifier: MIT
// Tuned kernels at run time: the record for this workload and device is picked and run; without
// one the default configuration runs with a one-line hint; a record for another device is an error.
#include <doctest/doctest.h>

#include <unistd.h>

#include <any>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include <backends/load_kernel.hpp>
#include <expressions/gemm_epilogues.hpp>
#include <expressions/matmul.hpp>
#include <mdh/kernel_generation.hpp>
#include <mdh/lower/random_config.hpp>
#include <tuning/opencl_target.hpp>
#include <tuning/tune.hpp>

using namespace mdh;
namespace fs = std::filesystem;

TEST_CASE("load_kernel runs the parameter file's configuration, or the default") {
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto n = mm.sizes(37, 29, 41);
  auto lim = ctx.limits();
  auto dir = fs::temp_directory_path() / ("mdh_load_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);

  // No record: the default configuration and a hint naming the command.
  std::ostringstream warn;
  auto k0 = mdh::load_kernel(mm, n, dir, ctx, &warn);
  CHECK_FALSE(k0.choice.record.has_value());
  CHECK(k0.choice.config == lower::default_config(mm.ir(), n));
  CHECK(warn.str().find("mdh-tune tune matmul --sizes 37,29,41") != std::string::npos);

  // A record with a random valid configuration for this device: picked, and it computes right.
  std::mt19937_64 rng(5);
  auto cfg = lower::random_config(mm.ir(), n, lim, rng);
  tuning::parameter_record r{tuning::workload::of(mm.ir(), n), {"opencl", lim.name, ""}, cfg, 1.0};
  tuning::write_parameter_file(dir / "mm.json", r);
  auto k1 = mdh::load_kernel(mm, n, dir, ctx, nullptr);
  REQUIRE(k1.choice.record.has_value());
  CHECK(k1.choice.config == cfg);
  auto data = tuning::make_workload_data(mm, n, 9);
  host_buffer got(scalar_type::f32, mm.shape("C", n));
  auto in = data.input_refs();
  std::vector<buffer_ref> out{got};
  k1(in, out);
  CHECK(tuning::compare(got, data.expected[0], 41) == "");

  // A record made on another device is never used silently.
  auto other = r;
  other.device.name = "some other GPU";
  tuning::write_parameter_file(dir / "other.json", other);
  CHECK_THROWS_WITH_AS(mdh::load_kernel(mm, n, dir / "other.json", ctx, nullptr),
                       doctest::Contains("device.name is 'some other GPU'"), mdh::error);
  fs::remove_all(dir);
}

TEST_CASE(
    "a tuning log of another search space, kernel generation or cache context is set aside, not "
    "lost") {
  auto dir = fs::temp_directory_path() / ("mdh_log_aside_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto log = dir / "op.log.jsonl";
  const std::string gen = std::to_string(mdh::kernel_generation);
  const std::string text = "{\"atf_log\":2,\"space_hash\":\"0123abcd\",\"mdh_kernels\":" + gen +
                           "}\n{\"configuration\":{},\"valid\":false}\n";
  auto write = [&](const std::string& t) { std::ofstream(log, std::ios::binary) << t; };
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write(text);
  CHECK_FALSE(tuning::set_aside_stale_log(log, "0123abcd"));  // same space and kernels: resumed
  CHECK(read(log) == text);
  auto aside = tuning::set_aside_stale_log(log, "ffff0000");  // another space: kept aside whole
  CHECK_FALSE(fs::exists(log));
  REQUIRE(aside);
  CHECK(*aside == dir / "op.log.jsonl.space-0123abcd");
  CHECK(read(*aside) == text);
  write(text);  // again: the first one set aside is not overwritten
  CHECK(tuning::set_aside_stale_log(log, "ffff0000") == dir / "op.log.jsonl.space-0123abcd.2");
  CHECK(read(dir / "op.log.jsonl.space-0123abcd") == text);

  // the same space, measured with kernels mdh no longer prints (a log without a generation is
  // older than the first tag)
  const std::string old =
      "{\"atf_log\":2,\"space_hash\":\"0123abcd\"}\n{\"configuration\":{},\"valid\":false}\n";
  write(old);
  CHECK(tuning::set_aside_stale_log(log, "0123abcd") == dir / "op.log.jsonl.kernels-0");
  CHECK(read(dir / "op.log.jsonl.kernels-0") == old);
  const std::string other = "{\"atf_log\":2,\"space_hash\":\"0123abcd\",\"mdh_kernels\":" +
                            std::to_string(mdh::kernel_generation + 1) + "}\n";
  write(other);  // a newer mdh's log, too: its costs are not this mdh's kernels'
  CHECK(tuning::set_aside_stale_log(log, "0123abcd") ==
        dir / ("op.log.jsonl.kernels-" + std::to_string(mdh::kernel_generation + 1)));

  // the same space and kernels, timed with other inputs in L2 (tune_options::warm_inputs): a log
  // without warm inputs flushed every input
  write(text);
  CHECK_FALSE(tuning::set_aside_stale_log(log, "0123abcd", {}));
  CHECK(tuning::set_aside_stale_log(log, "0123abcd", {0, 3}) == dir / "op.log.jsonl.warm-none");
  const std::string warm = "{\"atf_log\":2,\"space_hash\":\"0123abcd\",\"mdh_kernels\":" + gen +
                           ",\"warm_inputs\":[0,3]}\n";
  write(warm);
  CHECK_FALSE(tuning::set_aside_stale_log(log, "0123abcd", {0, 3}));  // the same: resumed
  CHECK(tuning::set_aside_stale_log(log, "0123abcd", {0}) == dir / "op.log.jsonl.warm-0,3");
  CHECK(read(dir / "op.log.jsonl.warm-0,3") == warm);

  write("not json\n");  // unreadable: left for atf to report
  CHECK_FALSE(tuning::set_aside_stale_log(log, "ffff0000"));
  CHECK(read(log) == "not json\n");
  CHECK_FALSE(tuning::set_aside_stale_log(dir / "missing.jsonl", "ffff0000"));  // no log
  CHECK_FALSE(fs::exists(dir / "missing.jsonl"));
  fs::remove_all(dir);
}

namespace {
// The configuration of a log's first evaluation, as atf::configuration::key() writes it.
std::string first_evaluated(const fs::path& log) {
  for (const auto& j : atf::log_records(log))
    return atf::configuration::from_json(j["configuration"]).key();
  return "";
}

// A valid configuration of `tuned` at sizes `from` that is still valid carried over to `here`
// as a configuration of `target` (the same computation, or the same product with an epilogue).
lower::config carried_config(const ir::computation& tuned, const ir::computation& target,
                             const std::vector<std::int64_t>& from,
                             const std::vector<std::int64_t>& here, const lower::device_limits& lim,
                             std::mt19937_64& rng) {
  auto space = tuning::make_search_space(tuned, from, lim);
  for (int k = 0; k < 2000; ++k) {
    auto cfg = tuning::to_config(space.to_configuration(space.random_point(rng)), tuned, from);
    try {
      lower::check(cfg, tuned, from, lim);
      lower::check(tuning::carry_over(cfg, from, here), target, here, lim);
      return cfg;
    } catch (const mdh::error&) {
    }
  }
  FAIL("no configuration carries over");
  return lower::config{};
}
}  // namespace

TEST_CASE("a new log starts from what earlier runs found: the parameter file, a set-aside log") {
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto n = mm.sizes(37, 29, 41);
  auto dir = fs::temp_directory_path() / ("mdh_carry_over_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  tuning::opencl_target target(ctx);
  const auto lim = target.limits();
  // three valid points of the space (random: none of them a generic start)
  auto space = tuning::make_search_space(mm.ir(), n, lim);
  std::mt19937_64 rng(11);
  std::vector<atf::configuration> pts;
  while (pts.size() < 3) {
    auto a = space.to_configuration(space.random_point(rng));
    try {
      lower::check(tuning::to_config(a, mm.ir(), n), mm.ir(), n, lim);
      pts.push_back(a);
    } catch (const mdh::error&) {
    }
  }
  REQUIRE(pts[0].key() != pts[1].key());

  // best_of_log: valid evaluations only, cheapest first, each once; a cut-short line is skipped
  const fs::path old = dir / "old.jsonl";
  {
    std::ofstream o(old);
    auto line = [&](const atf::configuration& c, double cost, bool valid) {
      o << nlohmann::json{{"configuration", c.to_json()}, {"cost", cost}, {"valid", valid}}.dump()
        << "\n";
    };
    o << R"({"atf_log":1,"space_hash":"0123abcd"})"
      << "\n";
    line(pts[0], 9.0, true);
    line(pts[1], 2.0, true);
    line(pts[2], 1.0, false);
    line(pts[0], 5.0, true);
    o << R"({"configuration":{"blk_0":1},"co)";
  }
  auto best = tuning::best_of_log(old, 8);
  REQUIRE(best.size() == 2);
  CHECK(best[0].key() == pts[1].key());
  CHECK(best[1].key() == pts[0].key());
  CHECK(tuning::best_of_log(old, 1).size() == 1);
  CHECK(tuning::best_of_log(dir / "missing.jsonl", 8).empty());
  {  // format 3: the values in the header's parameter order
    const fs::path compact = dir / "compact.jsonl";
    std::ofstream o(compact);
    nlohmann::json names = nlohmann::json::array();
    const nlohmann::json first = pts[0].to_json();
    for (const auto& [name, v] : first.items()) names.push_back(name);
    o << nlohmann::json{{"atf_log", 3}, {"space_hash", "0123abcd"}, {"parameters", names}}.dump()
      << "\n";
    for (auto [c, cost] : {std::pair{&pts[0], 4.0}, std::pair{&pts[1], 3.0}}) {
      nlohmann::json values = nlohmann::json::array();
      for (const auto& n : names) values.push_back(c->to_json()[n.get<std::string>()]);
      o << nlohmann::json{{"configuration", values}, {"cost", cost}, {"valid", true}}.dump()
        << "\n";
    }
    o << R"({"configuration":[1],"cost":0.5,"valid":true})"
      << "\n";  // not named: passed over
  }
  auto named = tuning::best_of_log(dir / "compact.jsonl", 8);
  REQUIRE(named.size() == 2);
  CHECK(named[0].key() == pts[1].key());
  CHECK(named[1].key() == pts[0].key());

  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 1;
  opt.progress = atf::progress_mode::off;
  // a log of another space is set aside and its best is measured first
  fs::copy_file(old, dir / "mm.log.jsonl");
  opt.log = dir / "mm.log.jsonl";
  tuning::tune(mm, n, target, opt);
  CHECK(fs::exists(dir / "mm.log.jsonl.space-0123abcd"));
  CHECK(first_evaluated(opt.log) == pts[1].key());
  // the new log records the kernels its costs were measured with
  CHECK(tuning::log_kernel_generation(atf::log_header(opt.log).value()) == mdh::kernel_generation);
  // an existing parameter file for this workload: its configuration first
  tuning::parameter_record r{tuning::workload::of(mm.ir(), n), target.id(),
                             tuning::to_config(pts[2], mm.ir(), n), 1.0};
  tuning::write_parameter_file(dir / "mm.json", r);
  opt.log = dir / "fresh.log.jsonl";
  opt.parameter_file = dir / "mm.json";
  tuning::tune(mm, n, target, opt);
  // the same configuration (a tile of one step that is also the whole chunk is two points of the
  // space: t_sm_steps 1 and 0; the parameter file holds the configuration)
  const auto records = atf::log_records(opt.log);
  REQUIRE(!records.empty());
  const auto& j = records.front();
  CHECK(tuning::to_config(atf::configuration::from_json(j["configuration"]), mm.ir(), n) ==
        tuning::to_config(pts[2], mm.ir(), n));
  fs::remove_all(dir);
}

namespace {
// The OpenCL target, counting the measurements of each configuration (the real device runs them).
struct counting_target : tuning::opencl_target {
  using tuning::opencl_target::opencl_target;
  std::map<std::string, int> measured;  // configuration (JSON) -> successful measurements
  double measure(std::any& prepared, std::size_t worker) {
    auto& prog = *std::any_cast<std::shared_ptr<opencl::program>&>(prepared);
    const double us = tuning::opencl_target::measure(prepared, worker);
    ++measured[tuning::kernel_key(prog.plan().cfg)];
    return us;
  }
};
}  // namespace

TEST_CASE("points of the space that configure the same kernel are measured once") {
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto n = mm.sizes(3, 2, 5);
  auto dir = fs::temp_directory_path() / ("mdh_measured_once_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  counting_target target(ctx, 1);
  const auto lim = target.limits();
  // Two points of the space with one kernel, for certain: a dimension whose step (thr * t_rm)
  // covers its whole chunk has the same tile at t_sm_steps 0 (the chunk in whole steps) and 1.
  auto space = tuning::make_search_space(mm.ir(), n, lim);
  std::mt19937_64 rng(7);
  std::optional<atf::configuration> a, b;
  for (int k = 0; k < 5000 && !b; ++k) {
    auto p = space.to_configuration(space.random_point(rng));
    const auto cfg = tuning::to_config(p, mm.ir(), n);
    try {
      lower::check(cfg, mm.ir(), n, lim);
    } catch (const mdh::error&) {
      continue;
    }
    for (std::size_t d = 0; d < 3 && !b; ++d) {
      const std::string steps = "t_sm_steps_" + std::to_string(d);
      auto j = p.to_json();
      if (j[steps] != 0) continue;
      j[steps] = 1;
      auto q = atf::configuration::from_json(j);
      if (space.contains(q) && tuning::to_config(q, mm.ir(), n) == cfg) a = p, b = q;
    }
  }
  REQUIRE(b);
  REQUIRE(a->key() != b->key());
  // ... handed to the search first, as the best of a log of another space (set aside)
  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 12;
  opt.progress = atf::progress_mode::off;
  opt.log = dir / "mm.log.jsonl";
  {
    std::ofstream o(opt.log);
    o << R"({"atf_log":1,"space_hash":"0123abcd"})"
      << "\n";
    for (auto* c : {&*a, &*b})
      o << nlohmann::json{{"configuration", c->to_json()}, {"cost", 1.0}, {"valid", true}}.dump()
        << "\n";
  }
  tuning::tune(mm, n, target, opt);
  // the new log's valid evaluations, by the kernel they configure
  std::map<std::string, int> evaluated;
  int valid = 0;
  for (const auto& j : atf::log_records(opt.log)) {
    if (!j.value("valid", false)) continue;
    ++valid;
    auto cfg = tuning::to_config(atf::configuration::from_json(j["configuration"]), mm.ir(), n);
    ++evaluated[tuning::kernel_key(cfg)];
  }
  MESSAGE(valid, " valid evaluations of ", evaluated.size(), " kernels, ", target.measured.size(),
          " measured");
  REQUIRE(valid > int(evaluated.size()));  // a and b at least
  const std::string def = tuning::kernel_key(lower::default_config(mm.ir(), n));
  for (auto& [cfg, times] : target.measured) {
    INFO(cfg);
    CHECK(times <= (cfg == def ? 2 : 1));  // the default is measured once outside the search
  }
  fs::remove_all(dir);
}

TEST_CASE("a search starts from the nearest other shape's tuned configuration, carried over") {
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto dir = fs::temp_directory_path() / ("mdh_nearest_shape_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  tuning::opencl_target target(ctx, 1);
  const auto lim = target.limits();
  const std::vector<std::int64_t> near{37, 29, 41}, far{150, 140, 160}, here{40, 31, 45};
  std::mt19937_64 rng(3);
  const lower::config at_near = carried_config(mm.ir(), mm.ir(), near, here, lim, rng),
                      at_far = carried_config(mm.ir(), mm.ir(), far, here, lim, rng);
  auto record = [&](const std::vector<std::int64_t>& s, const lower::config& cfg,
                    const tuning::device_id& dev) {
    return tuning::parameter_record{tuning::workload::of(mm.ir(), s), dev, cfg, 1.0};
  };
  auto file_of = [&](const std::vector<std::int64_t>& s) {
    return dir / tuning::file_name(tuning::workload::of(mm.ir(), s));
  };
  const fs::path mine = file_of(here);  // what the run for `here` writes
  // nothing in the folder yet
  CHECK(!tuning::nearest_shape_start(mine, mm.ir(), here, target.id(), lim));
  // a record of another device is not used
  tuning::device_id other = target.id();
  other.name = "another device";
  tuning::write_parameter_file(file_of(near), record(near, at_near, other));
  CHECK(!tuning::nearest_shape_start(mine, mm.ir(), here, target.id(), lim));
  // of two shapes on this device, the nearer one, carried over to these sizes
  tuning::write_parameter_file(file_of(near), record(near, at_near, target.id()));
  tuning::write_parameter_file(file_of(far), record(far, at_far, target.id()));
  auto start = tuning::nearest_shape_start(mine, mm.ir(), here, target.id(), lim);
  REQUIRE(start);
  const lower::config carried = tuning::carry_over(at_near, near, here);
  CHECK(tuning::to_config(*start, mm.ir(), here) == carried);
  for (std::size_t d = 0; d < 3; ++d) {  // threads, register tile kept where the sizes allow
    CHECK(carried.dims[d].thr == at_near.dims[d].thr);
    CHECK(carried.dims[d].t_rm == at_near.dims[d].t_rm);
  }
  // tune() evaluates it first
  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 1;
  opt.progress = atf::progress_mode::off;
  opt.parameter_file = mine;
  opt.log = dir / "here.log.jsonl";
  tuning::tune(mm, here, target, opt);
  CHECK(first_evaluated(opt.log) == start->key());
  fs::remove_all(dir);
}

TEST_CASE("without a record of this device, one of another device of the same architecture") {
  // An H200's tuned tiling starts an H100's search (both CUDA 9.0); an sm_80 device's does not,
  // and neither do OpenCL devices (no architecture to compare). Only device ids matter here:
  // the configurations are checked against PoCL's limits.
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto dir = fs::temp_directory_path() / ("mdh_same_arch_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "h100");
  fs::create_directories(dir / "h200");
  fs::create_directories(dir / "a100");
  tuning::opencl_target target(ctx, 1);
  const auto lim = target.limits();
  const tuning::device_id h100{"cuda", "NVIDIA H100 80GB HBM3", "9.0"},
      h200{"cuda", "NVIDIA H200", "9.0"}, a100{"cuda", "NVIDIA A100-SXM4-80GB", "8.0"};
  CHECK(tuning::same_architecture(h200, h100));
  CHECK_FALSE(tuning::same_architecture(a100, h100));
  CHECK_FALSE(tuning::same_architecture(target.id(), target.id()));  // OpenCL
  const std::vector<std::int64_t> near{37, 29, 41}, far{150, 140, 160}, here{40, 31, 45};
  std::mt19937_64 rng(4);
  const lower::config at_near = carried_config(mm.ir(), mm.ir(), near, here, lim, rng),
                      at_far = carried_config(mm.ir(), mm.ir(), far, here, lim, rng),
                      at_here = carried_config(mm.ir(), mm.ir(), here, here, lim, rng);
  auto write = [&](const fs::path& folder, const std::vector<std::int64_t>& s,
                   const lower::config& cfg, const tuning::device_id& dev) {
    tuning::write_parameter_file(folder / tuning::file_name(tuning::workload::of(mm.ir(), s)),
                                 {tuning::workload::of(mm.ir(), s), dev, cfg, 1.0});
  };
  const fs::path mine = dir / "h100" / tuning::file_name(tuning::workload::of(mm.ir(), here));
  auto start = [&] { return tuning::nearest_shape_start(mine, mm.ir(), here, h100, lim, {dir}); };
  write(dir / "a100", near, at_near, a100);
  CHECK_FALSE(start());  // another architecture
  write(dir / "h200", near, at_near, h200);
  REQUIRE(start());
  CHECK(tuning::to_config(*start(), mm.ir(), here) == tuning::carry_over(at_near, near, here));
  // another device's record of these very sizes is the nearest (this device's would be
  // parameter_file_start's)
  write(dir / "h200", here, at_here, h200);
  REQUIRE(start());
  CHECK(tuning::to_config(*start(), mm.ir(), here) == tuning::carry_over(at_here, here, here));
  // any record of this device wins over the other device's, however far
  write(dir / "h100", far, at_far, h100);
  REQUIRE(start());
  CHECK(tuning::to_config(*start(), mm.ir(), here) == tuning::carry_over(at_far, far, here));
  fs::remove_all(dir);
}

TEST_CASE("a product with an epilogue starts from the bare product tuned in another folder") {
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto mb = ops::matmul_bias();  // the same product, with a bias added in its epilogue
  auto root = fs::temp_directory_path() / ("mdh_start_from_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path tuned = root / "tuned" / "f32", mine = root / "layer";
  fs::create_directories(tuned);
  fs::create_directories(mine);
  tuning::opencl_target target(ctx, 1);
  const auto lim = target.limits();
  const std::vector<std::int64_t> near{36, 30, 40}, here{40, 31, 45};
  // a configuration of the bare product at `near` that is valid for the epilogue at `here`
  std::mt19937_64 rng(5);
  const lower::config at_near = carried_config(mm.ir(), mb.ir(), near, here, lim, rng);
  tuning::write_parameter_file(
      tuned / tuning::file_name(tuning::workload::of(mm.ir(), near)),
      tuning::parameter_record{tuning::workload::of(mm.ir(), near), target.id(), at_near, 1.0});
  const fs::path file = mine / tuning::file_name(tuning::workload::of(mb.ir(), here));
  // not in the run's own folder; found under a start_from folder (recursively)
  CHECK(!tuning::nearest_shape_start(file, mb.ir(), here, target.id(), lim));
  auto start = tuning::nearest_shape_start(file, mb.ir(), here, target.id(), lim, {root / "tuned"});
  REQUIRE(start);
  CHECK(tuning::to_config(*start, mb.ir(), here) == tuning::carry_over(at_near, near, here));
  // the bare product at these very sizes is product_start's, from the same folder
  tuning::write_parameter_file(
      tuned / tuning::file_name(tuning::workload::of(mm.ir(), here)),
      tuning::parameter_record{tuning::workload::of(mm.ir(), here), target.id(),
                               tuning::carry_over(at_near, near, here), 1.0});
  CHECK(!tuning::product_start(file, mb.ir(), here, target.id(), lim));
  auto same = tuning::product_start(file, mb.ir(), here, target.id(), lim, {root / "tuned"});
  REQUIRE(same);
  // tune() measures it first
  tuning::tune_options opt;
  opt.seconds = 0;
  opt.evaluations = 1;
  opt.progress = atf::progress_mode::off;
  opt.parameter_file = file;
  opt.log = mine / "here.log.jsonl";
  opt.start_from = {root / "tuned"};
  tuning::tune(mb, here, target, opt);
  CHECK(first_evaluated(opt.log) == same->key());
  fs::remove_all(root);
}
