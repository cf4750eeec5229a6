// SPDX-License-Identifier: MIT
// mdh::kernel_sequence: several computations' kernels run in order over named device tensors,
// on either backend - a model layer, where one kernel's output is the next one's input and
// nothing goes through the host in between.
//
//   kernel_sequence seq(cuda_sequence_backend{&dev});     // or opencl_sequence_backend{&ctx}
//   seq.add_tensor("X", scalar_type::f32, {2048, 768});   // zero-filled device memory
//   seq.add_step("qkv", plan, {"X", "W", "b"}, {"QKV"});  // a lowered plan and its tensors
//   seq.upload("X", x);  seq.launch(stream);  auto y = seq.download("QKV");
//
// A step may read a tensor through a shape of its own (a view of the same memory: the
// attention reads [tokens, 3*hidden] as rows of hidden) as long as the kernel's buffer has the
// tensor's element type and reads no more elements than the tensor holds; an output must cover
// the tensor exactly.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/tensor.hpp>
#if MDH_WITH_CUDA
#include <backends/cuda/device_buffer.hpp>
#include <backends/cuda/program.hpp>
#endif
#if MDH_WITH_OPENCL
#include <backends/opencl/runtime.hpp>
#endif

namespace mdh {

#if MDH_WITH_CUDA
// Device memory and launches on a CUDA device (launches are asynchronous on the given stream).
struct cuda_sequence_backend {
  using program = cuda::program;
  using memory = cuda::device_buffer<unsigned char>;
  using handle = CUdeviceptr;
  using queue = CUstream;
  const cuda::device* dev = nullptr;

  std::string name() const { return "cuda"; }
  lower::device_limits limits() const { return dev->limits(); }
  memory allocate(std::size_t bytes) const {
    dev->make_current();
    memory m(bytes);
    if (bytes) {
      MDH_CU(cuMemsetD8, m.get(), 0, bytes);
      // cuMemsetD8 returns before it runs, ordered only on the legacy stream: wait, so that no
      // launch on a non-blocking stream finds the memory before it is zero (or is zeroed after)
      MDH_CU(cuCtxSynchronize);
    }
    return m;
  }
  static handle handle_of(const memory& m) { return m.get(); }
  void upload(memory& m, const void* src) const {
    dev->make_current();
    m.upload(std::span<const unsigned char>(static_cast<const unsigned char*>(src), m.size()));
  }
  void download(const memory& m, void* dst) const {
    dev->make_current();
    MDH_CU(cuCtxSynchronize);
    m.download(std::span<unsigned char>(static_cast<unsigned char*>(dst), m.size()));
  }
  std::unique_ptr<program> load(lower::kernel_plan plan) const {
    return std::make_unique<program>(*dev, std::move(plan));
  }
  // Programmatic dependent launch between the steps (program::launch's `overlap`; sm_90 on):
  // each step's kernels may start while the previous step's last kernel finishes.
  bool overlap = false;
  // `after_step`: the launch follows another step of the sequence on the same queue.
  void launch(program& p, std::span<const handle> in, std::span<const handle> out, queue q,
              bool after_step) const {
    p.launch(in, out, q, overlap && after_step);
  }
  void finish(queue q) const {
    dev->make_current();
    if (q)
      MDH_CU(cuStreamSynchronize, q);
    else
      MDH_CU(cuCtxSynchronize);
  }
};
#endif

#if MDH_WITH_OPENCL
// Device memory and launches on an OpenCL device (its context's in-order queue).
struct opencl_sequence_backend {
  using program = opencl::program;
  using memory = opencl::buffer;
  using handle = cl_mem;
  using queue = cl_command_queue;  // unused: the context's queue runs everything in order
  opencl::context* ctx = nullptr;

  std::string name() const { return "opencl"; }
  lower::device_limits limits() const { return ctx->limits(); }
  memory allocate(std::size_t bytes) const {
    std::vector<unsigned char> zero(bytes, 0);
    return memory(*ctx, bytes, zero.data());
  }
  static handle handle_of(const memory& m) { return m.get(); }
  void upload(memory& m, const void* src) const {
    MDH_CL(clEnqueueWriteBuffer(ctx->queue(), m.get(), CL_TRUE, 0, m.bytes(), src, 0, nullptr,
                                nullptr));
  }
  void download(const memory& m, void* dst) const { m.download(*ctx, dst); }
  std::unique_ptr<program> load(lower::kernel_plan plan) const {
    return std::make_unique<program>(*ctx, std::move(plan));
  }
  void launch(program& p, std::span<const handle> in, std::span<const handle> out, queue,
              bool) const {
    p.launch(in, out);
  }
  void finish(queue) const { MDH_CL(clFinish(ctx->queue())); }
};
#endif

template <class Backend>
class kernel_sequence {
 public:
  using handle = typename Backend::handle;
  using queue = typename Backend::queue;

  struct tensor {
    std::string name;
    scalar_type type = scalar_type::f32;
    shape_t shape;
    typename Backend::memory memory;
  };
  struct step {
    std::string name;
    std::unique_ptr<typename Backend::program> program;
    std::vector<std::string> inputs, outputs;  // tensor names, in the kernel's buffer order
    std::vector<handle> in, out;
    std::string origin;  // where the configuration came from (a parameter file, the default)
  };

  explicit kernel_sequence(Backend backend) : backend_(std::move(backend)) {}

  const Backend& backend() const { return backend_; }
  Backend& backend() { return backend_; }  // e.g. cuda_sequence_backend::overlap

  // A zero-filled device tensor; names are unique.
  void add_tensor(const std::string& name, scalar_type type, shape_t shape) {
    if (find(name)) throw error("kernel_sequence: tensor '" + name + "' added twice");
    const std::size_t bytes = std::size_t(element_count(shape)) * size_of(type);
    tensors_.push_back(
        std::make_unique<tensor>(tensor{name, type, std::move(shape), backend_.allocate(bytes)}));
  }

  const tensor& at(const std::string& name) const {
    if (auto* t = find(name)) return *t;
    throw error("kernel_sequence: no tensor '" + name + "'");
  }

  // Host -> device; `host` must have the tensor's type and shape.
  void upload(const std::string& name, const buffer_ref& host) {
    auto& t = const_cast<tensor&>(at(name));
    if (host.type != t.type || host.shape != t.shape)
      throw error("kernel_sequence: upload of '" + name + "': the tensor is " +
                  std::string(short_name(t.type)) + to_string(t.shape) + ", the data " +
                  std::string(short_name(host.type)) + to_string(host.shape));
    backend_.upload(t.memory, host.data);
  }

  // Device -> host, after everything launched so far has finished.
  host_buffer download(const std::string& name) const {
    const auto& t = at(name);
    host_buffer h(t.type, t.shape);
    backend_.download(t.memory, h.data());
    return h;
  }

  // Appends a kernel: `plan`'s inputs are the tensors `inputs`, its outputs `outputs`, in the
  // plan's buffer order. Loads (compiles) it now; throws mdh::error naming the step and buffer
  // when a tensor does not fit the kernel's buffer.
  void add_step(const std::string& name, lower::kernel_plan plan,
                const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                std::string origin = "") {
    if (inputs.size() != plan.inputs.size() || outputs.size() != plan.outputs.size())
      throw error("kernel_sequence: step '" + name + "' has " + std::to_string(inputs.size()) +
                  " inputs and " + std::to_string(outputs.size()) + " outputs, its kernel " +
                  std::to_string(plan.inputs.size()) + " and " +
                  std::to_string(plan.outputs.size()));
    auto s = std::make_unique<step>();
    s->name = name, s->inputs = inputs, s->outputs = outputs, s->origin = std::move(origin);
    auto bind = [&](const std::string& tname, const lower::global_buffer& g, bool output) {
      const auto& t = at(tname);
      const auto need = element_count(g.shape), have = element_count(t.shape);
      if (g.type != t.type || (output ? need != have : need > have))
        throw error("kernel_sequence: step '" + name + "' " + (output ? "writes" : "reads") + " '" +
                    g.name + "' as " + std::string(short_name(g.type)) + to_string(g.shape) +
                    ", but tensor '" + tname + "' is " + std::string(short_name(t.type)) +
                    to_string(t.shape));
      return Backend::handle_of(t.memory);
    };
    for (std::size_t k = 0; k < inputs.size(); ++k)
      s->in.push_back(bind(inputs[k], plan.inputs[k], false));
    for (std::size_t k = 0; k < outputs.size(); ++k)
      s->out.push_back(bind(outputs[k], plan.outputs[k], true));
    s->program = backend_.load(std::move(plan));
    steps_.push_back(std::move(s));
  }

  std::size_t size() const { return steps_.size(); }
  // Whether some step combines its blocks' results by atomics, whose order varies from run to
  // run (otherwise every run on the same inputs gives the same bits).
  bool combines_by_atomics() const {
    for (auto& s : steps_)
      if (s->program->plan().blk_combine == lower::block_combine_kind::atomic) return true;
    return false;
  }
  const step& at(std::size_t k) const { return *steps_.at(k); }

  // Enqueues step k, or every step in order (CUDA: asynchronous on `q`; capture it into a graph
  // with cuda::graph). `after_step`: what `q` ran last is another step of this sequence (the
  // backend may then overlap the two, cuda_sequence_backend::overlap).
  void launch_step(std::size_t k, queue q = {}, bool after_step = false) {
    auto& s = *steps_.at(k);
    backend_.launch(*s.program, s.in, s.out, q, after_step);
  }
  void launch(queue q = {}) {
    for (std::size_t k = 0; k < steps_.size(); ++k) launch_step(k, q, k > 0);
  }
  // Waits for everything enqueued on `q`.
  void finish(queue q = {}) const { backend_.finish(q); }

 private:
  const tensor* find(const std::string& name) const {
    for (auto& t : tensors_)
      if (t->name == name) return t.get();
    return nullptr;
  }

  Backend backend_;
  std::vector<std::unique_ptr<tensor>> tensors_;  // stable addresses
  std::vector<std::unique_ptr<step>> steps_;
};

}  // namespace mdh
