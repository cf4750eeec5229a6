// SPDX-License-Identifier: MIT
// bf16, f16 and TF32 on OpenCL (PoCL on the CPU, which has no cl_khr_fp16: the conversions run
// as written out in the kernel): the conversion helpers bit for bit against the host's over
// every 16-bit pattern and the rounding edge cases, random valid configurations of every case
// of types_cases.hpp against mdh::reference, and TF32 really rounding the inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <backends/opencl/runtime.hpp>

#include "types_cases.hpp"

using namespace mdh;

namespace {
opencl::context& shared_context() {
  static opencl::context ctx;
  return ctx;
}
lower::device_limits limits() {
  auto lim = shared_context().limits();
  lim.name = "pocl-cpu";
  return lim;
}

// Runs a plan on OpenCL; PoCL's loop vectoriser miscompiles a few kernels of the sweep (see
// opencl_check.hpp), so a mismatch is re-run once under work-item replication, which must match.
std::string check_on_opencl(const lower::kernel_plan& plan, const test::case_data& d,
                            std::int64_t L, int& retried) {
  auto run_with = [&](const std::string& tag) {
    return test::run_and_compare(plan, d, L, [&](const auto& p, const auto& in, const auto& out) {
      opencl::program prog(shared_context(), p, tag);
      prog.run(in, out);
    });
  };
  std::string first = run_with("");
  if (first.empty()) return first;
  const char* old = std::getenv("POCL_WORK_GROUP_METHOD");
  std::string saved = old ? old : "";
  setenv("POCL_WORK_GROUP_METHOD", "repl", 1);
  std::string again = run_with("pocl work-item replication");
  if (old)
    setenv("POCL_WORK_GROUP_METHOD", saved.c_str(), 1);
  else
    unsetenv("POCL_WORK_GROUP_METHOD");
  if (again.empty()) return ++retried, again;
  return first + " (and under POCL_WORK_GROUP_METHOD=repl: " + again + ")";
}

// y = x as a map over n elements, with x of type From and y of type To: the kernel converts.
template <class To, class From>
auto convert_map() {
  auto [i] = indices<1>();
  return computation("convert", out_view(out<To, "y">(i)), md_hom([](auto x) { return x; }, cc),
                     inp_view(in<From, "x">(i)));
}

// Runs convert_map<To, From> on `x` (raw bits of From) with one simple configuration.
template <class To, class From, class Bits>
std::vector<std::uint8_t> run_convert(const std::vector<Bits>& x) {
  auto c = convert_map<To, From>();
  std::vector<std::int64_t> sizes{std::int64_t(x.size())};
  auto lim = limits();
  auto plan = lower::lower(c.ir(), sizes, lower::default_config(c.ir(), sizes), lim);
  mdh::host_buffer in(scalar_type_of<From>(), {sizes[0]}), out(scalar_type_of<To>(), {sizes[0]});
  std::memcpy(in.data(), x.data(), in.bytes());
  std::vector<buffer_ref> ir{in}, orf{out};
  opencl::program prog(shared_context(), plan);
  prog.run(ir, orf);
  auto* p = static_cast<const std::uint8_t*>(out.data());
  return std::vector<std::uint8_t>(p, p + out.bytes());
}
}  // namespace

TEST_CASE("OpenCL: bf16/f16 -> f32 is exact for all 65536 bit patterns") {
  std::vector<std::uint16_t> all(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) all[b] = std::uint16_t(b);
  auto check = [&](auto got_bytes, float (*host)(std::uint16_t), const char* type) {
    int bad = 0;
    for (std::uint32_t b = 0; b < 65536; ++b) {
      float g, w = host(std::uint16_t(b));
      std::memcpy(&g, got_bytes.data() + 4 * b, 4);
      bool ok = std::isnan(w) ? std::isnan(g) : detail::float_bits(g) == detail::float_bits(w);
      if (!ok && bad++ < 5) FAIL_CHECK(type, " bits ", b, ": got ", g, ", want ", w);
    }
    CHECK(bad == 0);
  };
  check(run_convert<float, bf16>(all), bf16_bits_to_float, "bf16");
  check(run_convert<float, f16>(all), f16_bits_to_float, "f16");
}

TEST_CASE("OpenCL: f32 -> bf16/f16 rounds to nearest even like the host, edge cases included") {
  // Every bf16 and f16 value, the midpoints between neighbours (ties), one float ulp either
  // side of them, overflow and underflow thresholds, NaN, infinities, float subnormals, and
  // random floats of every exponent.
  std::vector<float> x;
  auto around = [&](float v) {
    x.push_back(v);
    x.push_back(std::nextafter(v, INFINITY));
    x.push_back(std::nextafter(v, -INFINITY));
  };
  for (std::uint32_t b = 0; b < 65536; ++b) {
    float h = f16_bits_to_float(std::uint16_t(b)), bf = bf16_bits_to_float(std::uint16_t(b));
    around(h), around(bf);
    if (std::isfinite(h) && b != 0x7bff && b != 0xfbff) {
      float next = f16_bits_to_float(std::uint16_t(b + 1));
      if (std::isfinite(next)) around(h + (next - h) / 2);  // exact in float
    }
    x.push_back(detail::bits_float((std::uint32_t(b) << 16) | 0x8000u));  // bf16 ties
    x.push_back(detail::bits_float((std::uint32_t(b) << 16) | 0x8001u));
    x.push_back(detail::bits_float((std::uint32_t(b) << 16) | 0x7fffu));
  }
  for (float v :
       {65504.0f, 65519.99f, 65520.0f, 65536.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-24f, 0x1p-14f,
        0x1.ffcp-15f, 3.3895314e38f, 3.4028235e38f, 1e-45f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN})
    around(v), around(-v);
  std::mt19937_64 rng(5);
  for (int k = 0; k < 20000; ++k) x.push_back(detail::bits_float(std::uint32_t(rng())));
  auto check = [&](auto got_bytes, std::uint16_t (*host)(double), const char* type) {
    int bad = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      std::uint16_t g, w = host(double(x[k]));
      std::memcpy(&g, got_bytes.data() + 2 * k, 2);
      bool w_nan = (w & 0x7fff) > (type[0] == 'b' ? 0x7f80 : 0x7c00);
      bool g_nan = (g & 0x7fff) > (type[0] == 'b' ? 0x7f80 : 0x7c00);
      bool ok = w_nan ? g_nan : g == w;
      if (!ok && bad++ < 5)
        FAIL_CHECK(type, " of float bits ", detail::float_bits(x[k]), ": got ", g, ", want ", w);
    }
    CHECK(bad == 0);
  };
  check(run_convert<bf16, float>(x), bf16_bits_from, "bf16");
  check(run_convert<f16, float>(x), f16_bits_from, "f16");
  MESSAGE(x.size(), " floats converted to bf16 and to f16");
}

TEST_CASE(
    "OpenCL: bf16, f16 and TF32 cases match mdh::reference over random valid configurations") {
  auto lim = limits();
  int total = 0, retried = 0;
  test::for_each_type_case([&](const std::string& name, const auto& op, const auto& sizes) {
    INFO(name);
    const auto& x = op.ir();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    auto d = test::make_case_data(op, sizes, 17);
    const std::int64_t L = test::reduction_length_of(x, sizes);
    auto cfgs = test::case_configs(x, sizes, lim, rng, 4);
    for (auto& cfg : cfgs) {
      auto plan = lower::lower(x, sizes, cfg, lim);
      INFO(lower::to_string(plan));
      auto msg = check_on_opencl(plan, d, L, retried);
      REQUIRE_MESSAGE(msg.empty(), msg);
      ++total;
    }
  });
  MESSAGE(total, " kernels of bf16/f16/tf32 cases checked on OpenCL (", retried,
          " re-run under PoCL work-item replication)");
  CHECK(total > 100);
}

TEST_CASE("OpenCL: 16-bit buffers move as 8-element (16-byte) vectors and match mdh::reference") {
  auto lim = limits();
  int retried = 0, total = 0;
  test::for_each_vector16_case(
      [&](const std::string& name, const auto& op, const auto& sizes, const lower::config& c) {
        INFO(name);
        auto plan = lower::lower(op.ir(), sizes, c, lim);
        INFO(lower::to_string(plan));
        REQUIRE(plan.vector_groups.size() == 1);
        CHECK(plan.vector_groups[0].width == 8);
        bool vector_read = false;  // an input read as one vector per group, not element-wise
        for (auto& r : plan.reads) vector_read |= !r.vector_groups.empty();
        CHECK((vector_read || plan.vector_write));
        auto d = test::make_case_data(op, sizes, 23);
        auto msg = check_on_opencl(plan, d, test::reduction_length_of(op.ir(), sizes), retried);
        CHECK_MESSAGE(msg.empty(), msg);
        ++total;
      });
  CHECK(total == 6);
}

TEST_CASE("OpenCL: a TF32 matmul rounds its inputs (it does not match the fp32 reference)") {
  auto lim = limits();
  std::vector<std::int64_t> sizes{16, 16, 64};
  auto ieee = ops::matmul<float>();
  auto tf32 = ieee.with_precision(ir::precision::tf32);
  auto d = test::make_case_data(tf32, sizes, 3);
  auto d_ieee = test::make_case_data(ieee, sizes, 3);  // same inputs, fp32 reference
  auto plan = lower::lower(tf32.ir(), sizes, lower::default_config(tf32.ir(), sizes), lim);
  const std::int64_t L = 64;
  int retried = 0;
  CHECK(check_on_opencl(plan, d, L, retried).empty());
  // The same kernel against the fp32 reference: off by about TF32's epsilon, far above the
  // f32 tolerance; an fp32 kernel matches it.
  auto msg =
      test::run_and_compare(plan, d_ieee, L, [&](const auto& p, const auto& in, const auto& out) {
        opencl::program(shared_context(), p).run(in, out);
      });
  CHECK(msg.find("relative L2 error") != std::string::npos);
  auto plan_ieee = lower::lower(ieee.ir(), sizes, lower::default_config(ieee.ir(), sizes), lim);
  CHECK(check_on_opencl(plan_ieee, d_ieee, L, retried).empty());
}
