// SPDX-License-Identifier: MIT
// mdh-tune: lists the operators of expressions/, tunes one for given sizes on the GPU (CUDA) or,
// without one, on an OpenCL device (PoCL on the CPU), resumes interrupted runs from their log,
// writes the parameter file, and runs a tuned kernel against the CPU reference.
#include <expressions/catalog.hpp>
#include <tools/cli.hpp>

int main(int argc, char** argv) {
  return mdh::tuning::cli::main(argc, argv, [](std::string_view type, auto&& visit) {
    mdh::ops::for_each_operator(type, visit);
  });
}
