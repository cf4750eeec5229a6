// SPDX-License-Identifier: MIT
// mdh-tune: lists the operators of expressions/, tunes one for given sizes on the GPU (CUDA) or,
// without one, on an OpenCL device (PoCL on the CPU), resumes interrupted runs from their log,
// writes the parameter file, runs a tuned kernel against the CPU reference, and tunes every
// computation of a BERT encoder layer in one command (tune-layer, tools/tune_layer.hpp).
#include <expressions/catalog.hpp>
#include <tools/cli.hpp>
#include <tools/tune_layer.hpp>

int main(int argc, char** argv) {
  namespace cli = mdh::tuning::cli;
  if (argc > 1 && std::string(argv[1]) == "tune-layer") return cli::tune_layer_main(argc, argv);
  cli::extra_commands = {"tune-layer"};
  cli::extra_usage =
      "       mdh-tune tune-layer bert --batch N --seq N [--hidden N] [--heads N] [--ffn N]\n"
      "                [--type T] [--time S] [...]   (every computation of the layer)\n";
  return cli::main(argc, argv, [](std::string_view type, auto&& visit) {
    mdh::ops::for_each_operator(type, visit);
  });
}
