// SPDX-License-Identifier: MIT
// The operator library at small sizes (mostly primes) for the backend sweeps, and a call of
// mdh::reference with run-time buffer lists.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <expressions/all.hpp>
#include <mdh/reference.hpp>

namespace mdh::test {

// visit(name, computation, sizes) for every operator of expressions/ at a small size.
template <class Visit>
void for_each_expression_case(Visit&& visit) {
  using namespace mdh::ops;
  using sz = std::vector<std::int64_t>;
  visit(std::string_view("attn_mask_add"), ops::attn_mask_add(), sz{2, 3, 5, 7});
  visit(std::string_view("batch_matmul_nt"), ops::batch_matmul<float, false, true>(),
        sz{2, 3, 5, 7, 6});
  visit(std::string_view("batch_matmul_tn"), ops::batch_matmul<float, true, false>(),
        sz{2, 1, 5, 7, 6});
  visit(std::string_view("bert_mask"), ops::bert_mask(), sz{2, 1, 7, 9});
  visit(std::string_view("bias_add"), ops::bias_add(), sz{2, 3, 5, 7});
  visit(std::string_view("bias_add_grad"), ops::bias_add_grad(), sz{37, 11});
  visit(std::string_view("bias_gelu"), ops::bias_gelu(), sz{7, 13});
  visit(std::string_view("bmatmul"), ops::bmatmul(), sz{2, 5, 7, 9});
  visit(std::string_view("ccsd_t"), ops::ccsd_t(), sz{3, 2, 3, 2, 3, 2, 3});
  visit(std::string_view("conv2d"), ops::conv2d(), sz{7, 6, 3, 3});
  visit(std::string_view("dot"), ops::dot(), sz{257});
  visit(std::string_view("expand_dims"), ops::expand_dims<1, 3>(), sz{3, 1, 5});
  visit(std::string_view("histogram"), ops::histogram(), sz{97, 11});
  visit(std::string_view("jacobi1d"), ops::jacobi1d(), sz{29});
  visit(std::string_view("jacobi2d"), ops::jacobi2d(), sz{9, 11});
  visit(std::string_view("jacobi3d"), ops::jacobi3d(), sz{5, 6, 7});
  visit(std::string_view("layernorm_stats"), ops::layernorm_stats(), sz{7, 33});
  visit(std::string_view("layernorm_normalize"), ops::layernorm_normalize(33), sz{7, 33});
  visit(std::string_view("matmul"), ops::matmul(), sz{13, 17, 19});
  visit(std::string_view("matmul_t"), ops::matmul_t(), sz{13, 17, 19});
  visit(std::string_view("matvec"), ops::matvec(), sz{13, 29});
  visit(std::string_view("mbbs"), ops::mbbs(), sz{9, 7});
  visit(std::string_view("mcc_s2"), ops::mcc(2, 2), sz{2, 3, 3, 4, 3, 3, 2});
  visit(std::string_view("mcc_capsule"), ops::mcc_capsule(), sz{2, 2, 2, 2, 2, 2, 2, 2, 2, 2});
  visit(std::string_view("mcc_nchw"), ops::mcc_nchw(), sz{2, 3, 4, 4, 2, 3, 3});
  visit(std::string_view("multiply"), ops::multiply(), sz{7, 13});
  visit(std::string_view("prl"), ops::prl(), sz{13, 17});
  visit(std::string_view("reduce"), ops::reduce(), sz{101});
  visit(std::string_view("reduce_sum_max"), ops::reduce_sum_max(), sz{101});
  visit(std::string_view("row_sum"), ops::row_sum(), sz{7, 37});
  visit(std::string_view("scan"), ops::scan(), sz{37});
  visit(std::string_view("softmax_stats"), ops::softmax_stats(), sz{5, 37});
  visit(std::string_view("softmax_normalize"), ops::softmax_normalize(), sz{5, 37});
  visit(std::string_view("subtract"), ops::subtract(), sz{7, 13});
  visit(std::string_view("tccg_abcd_aebf_dfce"), ops::tccg_abcd_aebf_dfce(), sz{3, 2, 5, 3, 3, 2});
  visit(std::string_view("tccg_abcd_eafd_fbec"), ops::tccg_abcd_eafd_fbec(), sz{2, 3, 3, 5, 2, 3});
  visit(std::string_view("tccg_abc_adec_ebd"), ops::tccg_abc_adec_ebd(), sz{5, 3, 7, 3, 2});
  visit(std::string_view("tccg_abcdef_dega_gfbc"), ops::tccg_abcdef_dega_gfbc(),
        sz{3, 2, 2, 3, 2, 2, 5});
  visit(std::string_view("tccg_abcdef_dfgb_geac"), ops::tccg_abcdef_dfgb_geac(),
        sz{2, 3, 2, 2, 3, 2, 5});
}

namespace detail {
template <class C, std::size_t... I, std::size_t... O>
void reference_n(const C& comp, const std::vector<std::int64_t>& sizes,
                 const std::vector<buffer_ref>& in, const std::vector<buffer_ref>& out,
                 std::index_sequence<I...>, std::index_sequence<O...>) {
  mdh::reference(comp, sizes, {in[I]...}, {out[O]...});
}
template <class C, std::size_t NI, std::size_t... O>
bool try_outputs(const C& comp, const std::vector<std::int64_t>& sizes,
                 const std::vector<buffer_ref>& in, const std::vector<buffer_ref>& out,
                 std::index_sequence<O...>) {
  bool done = false;
  ((!done && out.size() == O + 1
        ? (reference_n(comp, sizes, in, out, std::make_index_sequence<NI>{},
                       std::make_index_sequence<O + 1>{}),
           done = true)
        : false),
   ...);
  return done;
}
template <class C, std::size_t... I>
bool try_inputs(const C& comp, const std::vector<std::int64_t>& sizes,
                const std::vector<buffer_ref>& in, const std::vector<buffer_ref>& out,
                std::index_sequence<I...>) {
  bool done = false;
  ((!done && in.size() == I + 1
        ? (done = try_outputs<C, I + 1>(comp, sizes, in, out, std::make_index_sequence<3>{}))
        : false),
   ...);
  return done;
}
}  // namespace detail

// mdh::reference with up to 6 inputs and 3 outputs given as vectors.
template <class C>
void call_reference(const C& comp, const std::vector<std::int64_t>& sizes,
                    const std::vector<buffer_ref>& in, const std::vector<buffer_ref>& out) {
  if (!detail::try_inputs(comp, sizes, in, out, std::make_index_sequence<6>{}))
    throw error("call_reference: unsupported buffer counts");
}

}  // namespace mdh::test
