// SPDX-License-Identifier: MIT
// The umbrella header: the expression language, the IR and the CPU reference.
#pragma once

#include <mdh/combine.hpp>      // cc, pw, ps, add, mul, max, min, custom
#include <mdh/computation.hpp>  // computation, describe
#include <mdh/epilogue.hpp>     // with_epilogue: a point-wise step after the reduction
#include <mdh/error.hpp>        // mdh::error
#include <mdh/fused.hpp>        // fuse: two computations, one kernel
#include <mdh/index.hpp>        // indices<N>(), affine index functions
#include <mdh/ir/computation.hpp>
#include <mdh/ir/evaluate.hpp>
#include <mdh/ir/hash.hpp>
#include <mdh/ir/print.hpp>
#include <mdh/kernel_generation.hpp>  // kernel_generation: which kernels a tuning log measured
#include <mdh/math.hpp>               // exp, log, sqrt, tanh, erf, abs, select, cast
#include <mdh/md_hom.hpp>             // md_hom
#include <mdh/reference.hpp>          // reference
#include <mdh/tensor.hpp>             // host_tensor, buffer_ref
#include <mdh/version.hpp>
#include <mdh/view.hpp>           // in, out, inp_view, out_view
#include <mdh/with_producer.hpp>  // with_producer: a contraction feeding a consumer, one kernel
