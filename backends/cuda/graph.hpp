// SPDX-License-Identifier: MIT
// cuda::graph: the launches a function enqueues on a stream, captured once and replayed as one
// CUDA graph (one submission for a whole sequence of kernels: a model layer's launch overhead
// gone).
//
//   cuda::stream s;
//   cuda::graph g(s.get(), [&](CUstream st) { seq.launch(st); });
//   g.launch(s.get());  s.synchronize();
#pragma once

#include <utility>

#include <backends/cuda/driver.hpp>

namespace mdh::cuda {

class graph {
 public:
  // Captures what `record(s)` enqueues on `s` (a stream of its own, not the legacy default
  // stream); nothing runs until launch().
  template <class Record>
  graph(CUstream s, Record&& record) {
    MDH_CU(cuStreamBeginCapture, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    try {
      std::forward<Record>(record)(s);
    } catch (...) {
      CUgraph broken = nullptr;
      driver_table().cuStreamEndCapture(s, &broken);  // leave the stream usable
      if (broken) driver_table().cuGraphDestroy(broken);
      throw;
    }
    MDH_CU(cuStreamEndCapture, s, &graph_);
    MDH_CU(cuGraphInstantiate, &exec_, graph_, 0);
  }
  ~graph() {
    if (exec_) driver_table().cuGraphExecDestroy(exec_);
    if (graph_) driver_table().cuGraphDestroy(graph_);
  }
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

  // Enqueues one replay on `s` (asynchronous).
  void launch(CUstream s) const { MDH_CU(cuGraphLaunch, exec_, s); }

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace mdh::cuda
