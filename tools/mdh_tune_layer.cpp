// SPDX-License-Identifier: MIT
// mdh-tune-layer: `mdh-tune tune-layer` as a program of its own (the same code,
// tools/tune_layer.hpp), without mdh-tune's catalog of every operator in three element types:
// it builds in a fraction of the time, which the device benchmark (bench/device.sh layer) needs.
//   mdh-tune-layer bert --batch 16 --seq 128 [options of mdh-tune tune-layer]
#include <string>
#include <vector>

#include <tools/tune_layer.hpp>

int main(int argc, char** argv) {
  std::string command = "tune-layer";
  std::vector<char*> args{argv[0], command.data()};
  for (int k = 1; k < argc; ++k) args.push_back(argv[k]);
  args.push_back(nullptr);
  return mdh::tuning::cli::tune_layer_main(int(args.size()) - 1, args.data());
}
