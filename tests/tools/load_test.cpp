// SPDX-License-Identifier: MIT
// Tuned kernels at run time: the record for this workload and device is picked and run; without
// one the default configuration runs with a one-line hint; a record for another device is an error.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include <backends/tuning/opencl_target.hpp>
#include <backends/tuning/tune.hpp>
#include <expressions/matmul.hpp>
#include <mdh/lower/random_config.hpp>

using namespace mdh;
namespace fs = std::filesystem;

TEST_CASE("load_opencl_kernel runs the parameter file's configuration, or the default") {
  static opencl::context ctx;
  auto mm = ops::matmul();
  auto n = mm.sizes(37, 29, 41);
  auto lim = ctx.limits();
  auto dir = fs::temp_directory_path() / ("mdh_load_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);

  // No record: the default configuration and a hint naming the command.
  std::ostringstream warn;
  auto k0 = tuning::load_opencl_kernel(mm, n, dir, ctx, &warn);
  CHECK_FALSE(k0.choice.record.has_value());
  CHECK(k0.choice.config == lower::default_config(mm.ir(), n));
  CHECK(warn.str().find("mdh-tune tune matmul --sizes 37,29,41") != std::string::npos);

  // A record with a random valid configuration for this device: picked, and it computes right.
  std::mt19937_64 rng(5);
  auto cfg = lower::random_config(mm.ir(), n, lim, rng);
  tuning::parameter_record r{tuning::workload::of(mm.ir(), n), {"opencl", lim.name, ""}, cfg, 1.0};
  tuning::write_parameter_file(dir / "mm.json", r);
  auto k1 = tuning::load_opencl_kernel(mm, n, dir, ctx, nullptr);
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
  CHECK_THROWS_WITH_AS(tuning::load_opencl_kernel(mm, n, dir / "other.json", ctx, nullptr),
                       doctest::Contains("device.name is 'some other GPU'"), mdh::error);
  fs::remove_all(dir);
}

TEST_CASE("a tuning log of another search space is set aside, not lost or overwritten") {
  auto dir = fs::temp_directory_path() / ("mdh_log_aside_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto log = dir / "op.log.jsonl";
  const std::string text =
      "{\"atf_log\":1,\"space_hash\":\"0123abcd\"}\n{\"configuration\":{},\"valid\":false}\n";
  auto write = [&](const std::string& t) { std::ofstream(log, std::ios::binary) << t; };
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write(text);
  tuning::set_aside_foreign_log(log, "0123abcd");  // same space: resumed, untouched
  CHECK(read(log) == text);
  tuning::set_aside_foreign_log(log, "ffff0000");  // another space: kept aside whole
  CHECK_FALSE(fs::exists(log));
  CHECK(read(dir / "op.log.jsonl.space-0123abcd") == text);
  write("not json\n");  // unreadable: left for atf to report
  tuning::set_aside_foreign_log(log, "ffff0000");
  CHECK(read(log) == "not json\n");
  tuning::set_aside_foreign_log(dir / "missing.jsonl", "ffff0000");  // no log: nothing to do
  CHECK_FALSE(fs::exists(dir / "missing.jsonl"));
  fs::remove_all(dir);
}
