// SPDX-License-Identifier: MIT
// Parameter files: round trip, lookup by workload and device, errors naming file and field.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <mdh/mdh.hpp>
#include <mdh/tuning/parameter_file.hpp>

using namespace mdh;
namespace fs = std::filesystem;

namespace {
auto matmul() {
  auto [i, j, k] = indices<3>();
  return computation("matmul", out_view(out<float, "C">(i, j)),
                     md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                     inp_view(in<float, "A">(i, k), in<float, "B">(k, j)));
}
fs::path fresh_dir(const char* name) {
  auto d = fs::temp_directory_path() / ("mdh_params_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("parameter files round-trip and are found for their workload and device only") {
  auto mm = matmul();
  auto w = tuning::workload::of(mm.ir(), {64, 64, 64});
  tuning::device_id h200{"cuda", "NVIDIA H200", "9.0"};
  tuning::parameter_record r{w, h200, {{"blk_0", 4}}, 12.5, "us", {{"technique", "random"}}};
  auto dir = fresh_dir("roundtrip");
  auto file = dir / tuning::file_name(w);
  tuning::write_parameter_file(file, r);
  auto back = tuning::read_parameter_file(file);
  CHECK(back.work == w);
  CHECK(back.device == h200);
  CHECK(back.configuration == r.configuration);
  CHECK(back.cost == 12.5);

  // a faster record for another size, and one for another device, in the same folder
  auto r2 = r;
  r2.work.sizes = {128, 64, 64};
  r2.cost = 1;
  tuning::write_parameter_file(dir / "other_size.json", r2);
  auto r3 = r;
  r3.device.name = "NVIDIA H100";
  r3.cost = 2;
  tuning::write_parameter_file(dir / "other_device.json", r3);
  std::ofstream(dir / "not_params.json") << "{\"hello\": 1}";

  auto found = tuning::find_parameters(dir, w, h200);
  REQUIRE(found.has_value());
  CHECK(found->cost == 12.5);
  CHECK_FALSE(tuning::find_parameters(dir, tuning::workload::of(mm.ir(), {1, 2, 3}), h200));
  CHECK_FALSE(tuning::find_parameters(dir / "missing", w, h200));
  CHECK_THROWS_WITH_AS(tuning::find_parameters(dir / "other_device.json", w, h200),
                       doctest::Contains("device.name is 'NVIDIA H100'"), mdh::error);
  CHECK_THROWS_WITH_AS(tuning::find_parameters(dir / "other_size.json", w, h200),
                       doctest::Contains("other_size.json' does not fit: workload.sizes"),
                       mdh::error);
  // a mistyped explicit file is an error, not "no parameter file"
  CHECK_THROWS_WITH_AS(tuning::find_parameters(dir / "mistyped.json", w, h200),
                       doctest::Contains("mistyped.json' does not exist"), mdh::error);
}

// Found on the H200: the BERT layer's softmax file (tuned with its input in L2, 10.1 us) was
// taken for the stand-alone softmax over the stand-alone file (measured cold, 11.3 us), and ran
// 13.4 us cold against the other's 11.5.
TEST_CASE("a folder's record measured cold is taken before a cheaper one measured warm") {
  auto mm = matmul();
  auto w = tuning::workload::of(mm.ir(), {64, 64, 64});
  tuning::device_id h200{"cuda", "NVIDIA H200", "9.0"};
  auto dir = fresh_dir("warm");
  tuning::parameter_record warm{w, h200, {{"blk_0", 8}}, 5.0, "us", {{"warm_inputs", {0}}}};
  tuning::write_parameter_file(dir / "a_layer" / tuning::file_name(w), warm);
  CHECK(tuning::measured_warm(warm));
  // only the warm record: it is the one
  auto only = tuning::find_parameters(dir, w, h200);
  REQUIRE(only.has_value());
  CHECK(only->cost == 5.0);
  // a cold record beside it: taken although its cost is higher
  tuning::parameter_record cold{w,   h200, {{"blk_0", 4}},
                                7.0, "us", {{"warm_inputs", nlohmann::json::array()}}};
  CHECK_FALSE(tuning::measured_warm(cold));
  tuning::write_parameter_file(dir / tuning::file_name(w), cold);
  auto found = tuning::find_parameters(dir, w, h200);
  REQUIRE(found.has_value());
  CHECK(found->cost == 7.0);
  CHECK(found->configuration == cold.configuration);
  // among cold records, the cheapest
  cold.cost = 6.0;
  cold.configuration = {{"blk_0", 2}};
  tuning::write_parameter_file(dir / "b.json", cold);
  CHECK(tuning::find_parameters(dir, w, h200)->cost == 6.0);
}

TEST_CASE("a corrupt file named for the workload in a folder is reported, other JSON is not") {
  auto dir = fresh_dir("corrupt_in_folder");
  auto mm = matmul();
  auto w = tuning::workload::of(mm.ir(), {64, 64, 32});
  tuning::device_id h200{"cuda", "NVIDIA H200", "9.0"};
  std::ofstream(dir / tuning::file_name(w)) << "{ \"format\": \"mdh-parameters/1\", cut";
  std::ofstream(dir / "declares.json") << "{\"format\": \"mdh-parameters/1\"}";
  std::ofstream(dir / "notes.json") << "{\"hello\": 1}";
  std::ofstream(dir / "x.log.json") << "not json at all";
  std::vector<std::string> unusable;
  CHECK_FALSE(tuning::find_parameters(dir, w, h200, &unusable));
  REQUIRE(unusable.size() == 2);
  CHECK(unusable[0].find("declares.json': missing field 'library_version'") != std::string::npos);
  CHECK(unusable[1].find(tuning::file_name(w) + "': not valid JSON") != std::string::npos);
}

TEST_CASE("malformed parameter files name the file and the field") {
  auto dir = fresh_dir("malformed");
  std::ofstream(dir / "broken.json") << "{ not json";
  CHECK_THROWS_WITH_AS(tuning::read_parameter_file(dir / "broken.json"),
                       doctest::Contains("broken.json': not valid JSON"), mdh::error);
  auto w = tuning::workload::of(matmul().ir(), {8, 8, 8});
  auto j = tuning::to_json({w, {"cuda", "X", "9.0"}, nlohmann::json::object(), 1.0});
  j["workload"].erase("sizes");
  std::ofstream(dir / "nosizes.json") << j.dump();
  CHECK_THROWS_WITH_AS(tuning::read_parameter_file(dir / "nosizes.json"),
                       doctest::Contains("missing field 'workload.sizes'"), mdh::error);
  j = tuning::to_json({w, {"cuda", "X", "9.0"}, nlohmann::json::object(), 1.0});
  j["cost"]["value"] = "fast";
  std::ofstream(dir / "badcost.json") << j.dump();
  CHECK_THROWS_WITH_AS(tuning::read_parameter_file(dir / "badcost.json"),
                       doctest::Contains("badcost.json': malformed field"), mdh::error);
  CHECK_THROWS_WITH_AS(tuning::read_parameter_file(dir / "absent.json"),
                       doctest::Contains("absent.json': cannot be opened"), mdh::error);
}
