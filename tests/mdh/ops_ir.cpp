// SPDX-License-Identifier: MIT
// Operator library: symbolic IR == numeric lambda for every operator, golden MDH notation,
// stable structural hashes, dimension names and the benchmarks.md cases.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <expressions/all.hpp>
#include <nlohmann/json.hpp>

#include "ops_test_util.hpp"

using namespace ops_test;

// ---------------------------------------------------------------- IR == lambda, everywhere

TEST_CASE("symbolic IR agrees with the numeric lambda for every operator") {
  check_ir_matches_lambda(mdh::ops::dot(), 501);
  check_ir_matches_lambda(mdh::ops::matvec(), 502);
  check_ir_matches_lambda(mdh::ops::matmul(), 503);
  check_ir_matches_lambda(mdh::ops::matmul<double>(), 503);
  check_ir_matches_lambda(mdh::ops::matmul<std::int32_t>(), 503, 0, 0, -1000, 1000);
  check_ir_matches_lambda(mdh::ops::matmul_t(), 504);
  check_ir_matches_lambda(mdh::ops::bmatmul(), 505);
  check_ir_matches_lambda(mdh::ops::batch_matmul(), 506);
  check_ir_matches_lambda(mdh::ops::batch_matmul<float, true, true>(), 506);
  check_ir_matches_lambda(mdh::ops::conv2d(), 507);
  check_ir_matches_lambda(mdh::ops::mcc(2, 2), 508);
  check_ir_matches_lambda(mdh::ops::mcc_nchw(), 509);
  check_ir_matches_lambda(mdh::ops::mcc_capsule(), 510);
  check_ir_matches_lambda(mdh::ops::ccsd_t(), 511);
  check_ir_matches_lambda(mdh::ops::tccg_abcd_aebf_dfce(), 534);
  check_ir_matches_lambda(mdh::ops::tccg_abcd_eafd_fbec(), 535);
  check_ir_matches_lambda(mdh::ops::tccg_abc_adec_ebd(), 536);
  check_ir_matches_lambda(mdh::ops::tccg_abcdef_dega_gfbc(), 537);
  check_ir_matches_lambda(mdh::ops::tccg_abcdef_dfgb_geac(), 538);
  check_ir_matches_lambda(mdh::ops::row_sum(), 539);
  check_ir_matches_lambda(mdh::ops::jacobi1d(), 512);
  check_ir_matches_lambda(mdh::ops::jacobi2d(), 513);
  check_ir_matches_lambda(mdh::ops::jacobi3d(), 514);
  check_ir_matches_lambda(mdh::ops::prl(), 515, -2, 2, 1, 3);
  check_ir_matches_lambda(mdh::ops::histogram(), 516, -2, 2, 0, 3);
  check_ir_matches_lambda(mdh::ops::scan(), 517);
  check_ir_matches_lambda(mdh::ops::map([](auto x) { return mdh::exp(x) * 0.5f; }), 518);
  check_ir_matches_lambda(mdh::ops::map<float, std::int32_t>(
                              [](auto x) { return mdh::cast<std::int32_t>(x * 100.0f); }),
                          518);
  check_ir_matches_lambda(mdh::ops::reduce(), 519);
  check_ir_matches_lambda(mdh::ops::reduce_sum_max(), 520);
  check_ir_matches_lambda(mdh::ops::mbbs(), 521);
  check_ir_matches_lambda(mdh::ops::multiply(), 522);
  check_ir_matches_lambda(mdh::ops::subtract(), 523);
  check_ir_matches_lambda(mdh::ops::expand_dims<1, 3>(), 524);
  check_ir_matches_lambda(mdh::ops::bias_add(), 525);
  check_ir_matches_lambda(mdh::ops::bias_add_grad(), 526);
  check_ir_matches_lambda(mdh::ops::bert_mask(), 527);
  check_ir_matches_lambda(mdh::ops::attn_mask_add(), 528);
  // 1 + erf(v / sqrt 2) cancels for v << 0: an ulp of erff's result near -1 is a relative
  // 6e-8 / (1 + erf) of the result (1.3e-6 at v = -2, the end of this range).
  check_ir_matches_lambda(mdh::ops::bias_gelu(), 529, -1, 1, 0, 3, 1e-5);
  check_ir_matches_lambda(mdh::ops::softmax_stats(), 530, -30, 30);
  check_ir_matches_lambda(mdh::ops::softmax_normalize(), 531, 0.5, 4);
  check_ir_matches_lambda(mdh::ops::layernorm_stats(), 532);
  check_ir_matches_lambda(mdh::ops::layernorm_normalize(768), 533, 0.5, 4);
}

// ---------------------------------------------------------------- printing and hashing

TEST_CASE("golden MDH notation") {
  CHECK(mdh::ops::matmul().str() ==
        "matmul = out_view<f32>(C: (i,j,k) -> (i, j))\n"
        "  o md_hom(f, (++, ++, pw(add)))\n"
        "  o inp_view<f32,f32>(A: (i,j,k) -> (i, k), B: (i,j,k) -> (k, j))\n"
        "  f(A, B) = (A * B)");
  CHECK(mdh::ops::bert_mask().str() ==
        "bert_mask = out_view<f32>(OB1: (i1,i2,i3,i4) -> (i1, i2, i3, i4))\n"
        "  o md_hom(f, (++, ++, ++, ++))\n"
        "  o inp_view<f32,f32>(IB1: (i1,i2,i3,i4) -> (i1, i3, 0), "
        "IB2: (i1,i2,i3,i4) -> (i1, 0, i4))\n"
        "  f(IB1, IB2) = ((1 - (IB1 * IB2)) * -10000)");
  CHECK(mdh::ops::mcc(2, 2).str() ==
        "mcc = out_view<f32>(O: (n,p,q,k,r,s,c) -> (n, p, q, k))\n"
        "  o md_hom(f, (++, ++, ++, ++, pw(add), pw(add), pw(add)))\n"
        "  o inp_view<f32,f32>(I: (n,p,q,k,r,s,c) -> (n, 2*p + r, 2*q + s, c), "
        "F: (n,p,q,k,r,s,c) -> (k, r, s, c))\n"
        "  f(I, F) = (I * F)");
  CHECK(mdh::ops::softmax_stats().str() ==
        "softmax_stats = out_view<f32,f32>(M: (r,c) -> (r), S: (r,c) -> (r))\n"
        "  o md_hom(f, (++, pw(max_sum)))\n"
        "  o inp_view<f32>(X: (r,c) -> (r, c))\n"
        "  f(X) = (X, 1)\n"
        "  max_sum(l, r) = (max(l0, r0), (select((l0 == max(l0, r0)), l1, "
        "(l1 * exp((l0 - max(l0, r0))))) + select((r0 == max(l0, r0)), r1, "
        "(r1 * exp((r0 - max(l0, r0))))))), identity (-inf, 0)");
  CHECK(mdh::ops::histogram().str() ==
        "histogram = out_view<i32>(Out: (e,b) -> (b))\n"
        "  o md_hom(f, (pw(add), ++))\n"
        "  o inp_view<i32,i32>(Elems: (e,b) -> (e), Bins: (e,b) -> (b))\n"
        "  f(Elems, Bins) = select((Elems == Bins), 1, 0)");
}

TEST_CASE("structural hashes: stable, equal for equal structure, distinct otherwise") {
  // A fixed value: changing it means every stored parameter file is invalidated.
  CHECK(mdh::ops::matmul().hash() == "127c1d4bfaf45952");
  CHECK(mdh::ops::matmul().hash() == mdh::ops::matmul().hash());
  {  // the same structure spelled by hand, with other names, hashes the same
    using namespace mdh;
    auto [x, y, z] = indices<3>();
    auto mine = computation("my_gemm", out_view(out<float, "Z">(x, y)),
                            md_hom([](auto a, auto b) { return a * b; }, cc, cc, pw(add)),
                            inp_view(in<float, "X">(x, z), in<float, "Y">(z, y)));
    CHECK(mine.hash() == mdh::ops::matmul().hash());
  }
  CHECK(mdh::ops::matmul().hash() != mdh::ops::matmul_t().hash());
  CHECK(mdh::ops::matmul().hash() != mdh::ops::matmul<double>().hash());
  CHECK(mdh::ops::mcc(1, 1).hash() != mdh::ops::mcc(2, 2).hash());
  CHECK(mdh::ops::jacobi1d().hash() != mdh::ops::jacobi1d(0.5f).hash());

  const std::vector<std::string> all = {mdh::ops::dot().hash(),
                                        mdh::ops::matvec().hash(),
                                        mdh::ops::matmul().hash(),
                                        mdh::ops::matmul_t().hash(),
                                        mdh::ops::bmatmul().hash(),
                                        mdh::ops::batch_matmul().hash(),
                                        mdh::ops::batch_matmul<float, false, true>().hash(),
                                        mdh::ops::conv2d().hash(),
                                        mdh::ops::mcc().hash(),
                                        mdh::ops::mcc_nchw().hash(),
                                        mdh::ops::mcc_capsule().hash(),
                                        mdh::ops::ccsd_t().hash(),
                                        mdh::ops::tccg_abcd_aebf_dfce().hash(),
                                        mdh::ops::tccg_abcd_eafd_fbec().hash(),
                                        mdh::ops::tccg_abc_adec_ebd().hash(),
                                        mdh::ops::tccg_abcdef_dega_gfbc().hash(),
                                        mdh::ops::tccg_abcdef_dfgb_geac().hash(),
                                        mdh::ops::row_sum().hash(),
                                        mdh::ops::jacobi1d().hash(),
                                        mdh::ops::jacobi2d().hash(),
                                        mdh::ops::jacobi3d().hash(),
                                        mdh::ops::prl().hash(),
                                        mdh::ops::histogram().hash(),
                                        mdh::ops::scan().hash(),
                                        mdh::ops::reduce().hash(),
                                        mdh::ops::reduce_sum_max().hash(),
                                        mdh::ops::mbbs().hash(),
                                        mdh::ops::multiply().hash(),
                                        mdh::ops::subtract().hash(),
                                        mdh::ops::expand_dims<1, 3>().hash(),
                                        mdh::ops::bias_add().hash(),
                                        mdh::ops::bias_add_grad().hash(),
                                        mdh::ops::bert_mask().hash(),
                                        mdh::ops::attn_mask_add().hash(),
                                        mdh::ops::bias_gelu().hash(),
                                        mdh::ops::softmax_stats().hash(),
                                        mdh::ops::softmax_normalize().hash(),
                                        mdh::ops::layernorm_stats().hash(),
                                        mdh::ops::layernorm_normalize(768).hash()};
  CHECK(std::set<std::string>(all.begin(), all.end()).size() == all.size());
}

TEST_CASE("dimension names") {
  auto names = [](const auto& c) {
    std::string s;
    for (auto& d : c.ir().dims) s += (s.empty() ? "" : ",") + d.name;
    return s;
  };
  CHECK(names(mdh::ops::mcc()) == "n,p,q,k,r,s,c");
  CHECK(names(mdh::ops::mcc_nchw()) == "n,k,p,q,c,r,s");
  CHECK(names(mdh::ops::ccsd_t()) == "a,b,c,d,e,f,g");
  CHECK(names(mdh::ops::tccg_abcd_aebf_dfce()) == "a,b,c,d,e,f");
  CHECK(names(mdh::ops::tccg_abc_adec_ebd()) == "a,b,c,d,e");
  CHECK(names(mdh::ops::tccg_abcdef_dega_gfbc()) == "a,b,c,d,e,f,g");
  CHECK(names(mdh::ops::row_sum()) == "i,j");
  CHECK(names(mdh::ops::batch_matmul()) == "b1,b2,i,j,k");
  CHECK(names(mdh::ops::expand_dims<2, 4>()) == "i1,i2,i3,i4");
  CHECK(names(mdh::ops::histogram()) == "e,b");
}

TEST_CASE("benchmark cases: every benchmarks.md case, with the table's shapes") {
  std::vector<std::string> seen;
  std::map<std::string, std::string> shapes;  // "case:buffer" -> shape
  mdh::ops::for_each_benchmark_case([&](std::string_view name, const auto& c, const auto& n) {
    seen.emplace_back(name);
    for (auto* bufs : {&c.ir().inputs, &c.ir().outputs})  // a fused pair: the pair's buffers
      for (auto& b : *bufs)
        shapes[std::string(name) + ":" + b.name] = mdh::to_string(c.shape(b.name, n));
  });
  // + issue 19's any_shape suite, issue 20's epilogues; softmax, layernorm: fused pairs
  CHECK(seen.size() == 25 + 13 + 5);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == seen.size());
  CHECK(shapes["mask_sc21:OB1"] == "[16,1,384,384]");
  CHECK(shapes["mask_sc21:IB1"] == "[16,384,1]");
  CHECK(shapes["mask_sc21:IB2"] == "[16,1,384]");
  CHECK(shapes["attn_mask_subgraph:mask"] == "[16,1,1,128]");
  CHECK(shapes["bmm_qk:IB2"] == "[16,12,128,64]");
  CHECK(shapes["bmm_qk:OB1"] == "[16,12,128,128]");
  CHECK(shapes["bmm_pv:OB1"] == "[16,12,128,64]");
  CHECK(shapes["conv3x3_resnet:I"] == "[32,256,16,16]");
  CHECK(shapes["conv3x3_resnet:O"] == "[32,256,14,14]");
  CHECK(shapes["mcc_resnet50_l1:O"] == "[16,112,112,64]");
  CHECK(shapes["jacobi3d_256:x"] == "[256,256,256]");
  CHECK(shapes["softmax:X"] == "[24576,128]");
  CHECK(shapes["softmax:Y"] == "[24576,128]");
  CHECK(shapes["layernorm:gamma"] == "[768]");
  CHECK(shapes["bias_add_grad_s384:IB1"] == "[6144,768]");
  CHECK(shapes["dot:C"] == "[]");
  CHECK(shapes["bmm_12x333x333x77:A"] == "[12,333,77]");
  CHECK(shapes["row_sum_3001x4093:Y"] == "[3001]");
  CHECK(shapes["col_sum_3001x4093:OB1"] == "[4093]");
  CHECK(shapes["tccg_abcd_aebf_dfce:A"] == "[48,48,48,48]");
  CHECK(shapes["tccg_abc_adec_ebd:A"] == "[72,48,48,72]");
  CHECK(shapes["tccg_abc_adec_ebd:B"] == "[48,72,48]");
  CHECK(shapes["tccg_abcdef_dega_gfbc:A"] == "[24,16,24,24]");
  CHECK(shapes["tccg_abcdef_dega_gfbc:B"] == "[24,16,16,16]");
  CHECK(shapes["tccg_abcdef_dega_gfbc:C"] == "[24,16,16,24,16,16]");
}

TEST_CASE(
    "bench/cases.json and for_each_benchmark_case_of_every_type list the same cases, ops, sizes "
    "and types") {
  const char* root = std::getenv("MDH_SOURCE_DIR");
  if (!root) {
    MESSAGE("MDH_SOURCE_DIR unset (run through ctest): skipped");
    return;
  }
  std::ifstream f(std::string(root) + "/bench/cases.json");
  REQUIRE(f.good());
  auto doc = nlohmann::json::parse(f);
  std::map<std::string, std::pair<std::string, std::vector<std::int64_t>>> json_cases;
  std::map<std::string, std::string> json_type;  // "type" of the bf16/tf32 variants, else f32
  for (auto& c : doc["cases"]) {
    json_cases[c["name"]] = {c["op"], c["sizes"].get<std::vector<std::int64_t>>()};
    json_type[c["name"]] = c.value("type", std::string("f32"));
  }
  std::size_t seen = 0;
  mdh::ops::for_each_benchmark_case_of_every_type(
      [&](std::string_view name, const auto& c, const auto& n) {
        INFO(name);
        ++seen;
        auto it = json_cases.find(std::string(name));
        REQUIRE_MESSAGE(it != json_cases.end(), "not in bench/cases.json");
        CHECK(it->second.second == n);
        // cases.json names the mdh::ops function; two computations are named after TensorFlow's ops
        const std::map<std::string, std::string> function_of = {{"mul", "multiply"},
                                                                {"sub", "subtract"}};
        std::string op = c.name();
        CHECK(it->second.first == (function_of.count(op) ? function_of.at(op) : op));
        // the variant's type is what the computation reads and stores: bf16 buffers, or f32 at tf32
        std::vector<const mdh::ir::computation*> parts;
        if constexpr (mdh::is_fused_v<std::decay_t<decltype(c)>>)
          parts = {&c.first().ir(), &c.second().ir()};
        else
          parts = {&c.ir()};
        bool bf16 = false, f32 = false, tf32 = false, tf32x3 = false;
        // a fused pair's statistics (its first stage's outputs, and the second's reads of them)
        // are float in a 16-bit pair (expressions/layernorm.hpp, softmax.hpp)
        std::set<std::string> statistics;
        if (parts.size() == 2)
          for (auto& b : parts[0]->outputs) statistics.insert(b.name);
        for (auto* p : parts) {
          tf32 = tf32 || mdh::ir::reads_tf32(*p);
          tf32x3 = tf32x3 || mdh::ir::splits_tf32(*p);
          for (auto* bufs : {&p->inputs, &p->outputs})
            for (auto& b : *bufs)
              bf16 = bf16 || b.type == mdh::scalar_type::bf16,
              f32 = f32 || (b.type == mdh::scalar_type::f32 && !statistics.count(b.name));
        }
        const std::string& type = json_type[std::string(name)];
        CHECK(tf32 == (type == "tf32"));
        CHECK(tf32x3 == (type == "tf32x3"));
        CHECK(bf16 == (type == "bf16"));
        if (type == "bf16") CHECK_FALSE(f32);  // every buffer, not one of them
      });
  CHECK(seen == json_cases.size());
}
