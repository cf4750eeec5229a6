// SPDX-License-Identifier: MIT
// A kernel plan compiled for a CUDA device: compile() (NVRTC, cached), and program, which loads
// the module and launches the plan's kernels through the driver API.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <mdh/lower/dump.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/tensor.hpp>

#include <backends/cuda/device.hpp>
#include <backends/cuda/device_buffer.hpp>
#include <backends/cuda/emit.hpp>
#include <backends/cuda/nvrtc.hpp>
#include <backends/cuda/tensor_map.hpp>

namespace mdh::cuda {

// Emits and compiles a plan for `arch` (e.g. "sm_90"; a wgmma plan for "sm_90" is compiled for
// "sm_90a"); needs NVRTC only, no device.
inline std::shared_ptr<const compiled_module> compile(
    const lower::kernel_plan& plan, const std::string& arch,
    module_cache& cache = default_module_cache()) {
  lower::dump(plan.name + ".plan.txt", lower::to_string(plan));
  // wgmma (mma = 2) exists only in the architecture-specific sm_90a target
  if (plan.mma.wgmma && arch == "sm_90") return cache.compile(emit(plan), plan.name, "sm_90a");
  return cache.compile(emit(plan), plan.name, arch);
}

class program {
 public:
  // Compiles (or finds in the cache) and loads the plan on `dev`.
  program(const device& dev, lower::kernel_plan plan, module_cache& cache = default_module_cache())
      : dev_(&dev), plan_(std::move(plan)) {
    dev.make_current();
    overlap_supported_ = driver_table().cuLaunchKernelEx &&
                         dev.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) >= 9;
    module_ = compile(plan_, dev.arch(), cache);
    MDH_CU(cuModuleLoadData, &mod_, module_->cubin.data());
    for (auto& k : plan_.kernels) {
      CUfunction f;
      MDH_CU(cuModuleGetFunction, &f, mod_, k.name.c_str());
      if (k.launch.shared_bytes > 48 * 1024)  // above 48 KB only after opting in
        MDH_CU(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
               int(k.launch.shared_bytes));
      functions_.push_back(f);
    }
    for (auto& g : plan_.partials)
      partials_.emplace_back(std::size_t(g.elements) * size_of(g.type));
    // Zeroed once: the kernel leaves every counter at zero again (last-block combine).
    for (auto& g : plan_.counters) {
      std::vector<unsigned char> zero(std::size_t(g.elements) * size_of(g.type), 0);
      partials_.emplace_back(std::span<const unsigned char>(zero));
    }
  }
  ~program() {
    if (mod_) driver_table().cuModuleUnload(mod_);
  }
  program(const program&) = delete;
  program& operator=(const program&) = delete;

  const lower::kernel_plan& plan() const { return plan_; }
  const compiled_module& module() const { return *module_; }

  // Launches every kernel of the plan, in order, on `s` (inputs, then outputs, in computation
  // order; device pointers to dense row-major arrays of the plan's shapes). Asynchronous.
  // Launches of one program must not run concurrently (e.g. on two streams): they share the
  // partials and counters buffers.
  // `overlap`: programmatic dependent launch on devices of compute capability 9.0 on (ignored
  // elsewhere): each kernel may be scheduled while the grid before it on `s` finishes, and
  // waits for it before any memory access (the generated kernels' mdh_grid_dependency()).
  // Meant to shrink the gap between kernels of a sequence (a model layer), also inside a CUDA
  // graph; for the BERT layer on an H200 it did not (docs/bert-layer.md): off unless asked for.
  void launch(std::span<const CUdeviceptr> inputs, std::span<const CUdeviceptr> outputs,
              CUstream s = nullptr, bool overlap = false) {
    if (inputs.size() != plan_.inputs.size() || outputs.size() != plan_.outputs.size())
      throw error("launch of " + plan_.name + ": expected " + std::to_string(plan_.inputs.size()) +
                  " inputs and " + std::to_string(plan_.outputs.size()) + " outputs, got " +
                  std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
    // vector accesses assume buffers aligned to the vector (cudaMalloc: 256): width elements
    // of the buffer's type, at most 16 bytes
    const std::int64_t width = std::max(plan_.cfg.vec, plan_.cfg.vec_pw);
    if (width > 1)
      for (int io = 0; io < 2; ++io) {
        const auto& list = io ? outputs : inputs;
        const auto& bufs = io ? plan_.outputs : plan_.inputs;
        for (std::size_t k = 0; k < list.size(); ++k) {
          const std::int64_t size = std::int64_t(size_of(bufs[k].type));
          if (size != 2 && size != 4) continue;  // never read or written as vectors
          const std::int64_t bytes = std::min<std::int64_t>(16, size * width);
          if (list[k] % CUdeviceptr(bytes) != 0)
            throw error("launch of " + plan_.name + ": vec=" + std::to_string(plan_.cfg.vec) +
                        ", vec_pw=" + std::to_string(plan_.cfg.vec_pw) + " need " +
                        (io ? "output " : "input ") + std::to_string(k) + " ('" + bufs[k].name +
                        "') aligned to " + std::to_string(bytes) + " bytes");
        }
      }
    // a tensor-core contraction's operands copied in 16-byte chunks (cp.async, or the shifted
    // copies of rows that do not start on the grid) assume the buffer starts on it
    if (plan_.mma.on && !plan_.mma.tma)
      for (const auto* o : {plan_.mma.land_a ? &plan_.mma.a_land : &plan_.mma.a,
                            plan_.mma.land_b ? &plan_.mma.b_land : &plan_.mma.b})
        if ((o->async_copy || o->shifted_copy) && inputs[o->input] % 16 != 0)
          throw error("launch of " + plan_.name + ": the tensor cores' tile copies read input " +
                      std::to_string(o->input) + " ('" + plan_.inputs[o->input].name +
                      "') in 16-byte chunks and need it aligned to 16 bytes; its device pointer "
                      "is not");
    // the tensor-core attention's 16-byte cp.async copies (producer_plan's operand and value
    // chunks) and 16-byte result stores (results_chunks) assume tile rows on the 16-byte grid,
    // so buffers that start on it
    if (plan_.producer.on && plan_.producer_cfg.mma) {
      std::vector<std::size_t> chunked;
      if (plan_.producer.operand_chunks)
        for (auto& o : plan_.producer.operands) chunked.push_back(o.kernel_input);
      if (plan_.producer.value_chunks) chunked.push_back(plan_.producer.value_input);
      for (std::size_t k : chunked)
        if (inputs[k] % 16 != 0)
          throw error("launch of " + plan_.name + ": mma=1 copies input " + std::to_string(k) +
                      " ('" + plan_.inputs[k].name +
                      "') in 16-byte chunks and needs it aligned to 16 bytes; its device pointer "
                      "is not");
      if (plan_.producer.results_chunks && outputs[0] % 16 != 0)
        throw error("launch of " + plan_.name + ": mma=1 writes output 0 ('" +
                    plan_.outputs[0].name +
                    "') in 16-byte stores and needs it aligned to 16 bytes; its device pointer "
                    "is not");
    }
    dev_->make_current();
    std::vector<CUdeviceptr> ptrs(inputs.begin(), inputs.end());
    ptrs.insert(ptrs.end(), outputs.begin(), outputs.end());
    for (auto& p : partials_) ptrs.push_back(p.get());
    std::vector<void*> args;
    for (auto& p : ptrs) args.push_back(&p);
    if (plan_.mma.tma) {  // the operands' tensor maps, encoded again only for new pointers
      std::size_t j = 0;
      for (const lower::mma_operand* o : {&plan_.mma.a, &plan_.mma.b}) {
        tensor_map& t = maps_[j++];
        const CUdeviceptr p = inputs[o->input];
        if (!t.encoded || t.ptr != p)
          t.map = encode_tensor_map(*o, p, "launch of " + plan_.name), t.ptr = p, t.encoded = true;
        args.push_back(&t.map);
      }
    }
    const bool programmatic = overlap && overlap_supported_;
    for (std::size_t k = 0; k < functions_.size(); ++k) {
      const auto& l = plan_.kernels[k].launch;
      if (!programmatic) {
        MDH_CU(cuLaunchKernel, functions_[k], unsigned(l.grid[0]), unsigned(l.grid[1]),
               unsigned(l.grid[2]), unsigned(l.block[0]), unsigned(l.block[1]),
               unsigned(l.block[2]), unsigned(l.shared_bytes), s, args.data(), nullptr);
        continue;
      }
      CUlaunchAttribute attr{};
      attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig c{};
      c.gridDimX = unsigned(l.grid[0]), c.gridDimY = unsigned(l.grid[1]);
      c.gridDimZ = unsigned(l.grid[2]);
      c.blockDimX = unsigned(l.block[0]), c.blockDimY = unsigned(l.block[1]);
      c.blockDimZ = unsigned(l.block[2]);
      c.sharedMemBytes = unsigned(l.shared_bytes), c.hStream = s;
      c.attrs = &attr, c.numAttrs = 1;
      MDH_CU(cuLaunchKernelEx, &c, functions_[k], args.data(), nullptr);
    }
  }

  // Whether launch(..., overlap = true) launches programmatically dependent grids here.
  bool overlap_supported() const { return overlap_supported_; }

  // Host convenience: allocates, uploads, launches, downloads the outputs, synchronises.
  // Outputs are uploaded too, so elements the computation does not write keep their values.
  void run(std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs) {
    if (inputs.size() != plan_.inputs.size() || outputs.size() != plan_.outputs.size())
      throw error("run of " + plan_.name + ": wrong number of buffers");
    dev_->make_current();
    std::vector<device_buffer<unsigned char>> bufs;
    std::vector<CUdeviceptr> in, out;
    auto add = [&](const buffer_ref& r, const lower::global_buffer& g, const char* what) {
      if (r.type != g.type || r.shape != g.shape)
        throw error(std::string(what) + " '" + g.name + "' of " + plan_.name + " must be " +
                    std::string(short_name(g.type)) + to_string(g.shape) + ", is " +
                    std::string(short_name(r.type)) + to_string(r.shape));
      std::size_t n = std::size_t(r.size()) * size_of(r.type);
      bufs.emplace_back(
          std::span<const unsigned char>(static_cast<const unsigned char*>(r.data), n));
      return bufs.back().get();
    };
    bufs.reserve(inputs.size() + outputs.size());
    for (std::size_t k = 0; k < inputs.size(); ++k)
      in.push_back(add(inputs[k], plan_.inputs[k], "input"));
    for (std::size_t k = 0; k < outputs.size(); ++k)
      out.push_back(add(outputs[k], plan_.outputs[k], "output"));
    launch(in, out);
    MDH_CU(cuCtxSynchronize);
    for (std::size_t k = 0; k < outputs.size(); ++k)
      bufs[inputs.size() + k].download(std::span<unsigned char>(
          static_cast<unsigned char*>(outputs[k].data), bufs[inputs.size() + k].size()));
  }

  // Mean time of one launch of all kernels in milliseconds, over `reps` launches after a warm-up.
  float time_ms(std::span<const CUdeviceptr> inputs, std::span<const CUdeviceptr> outputs,
                int reps = 10, CUstream s = nullptr) {
    launch(inputs, outputs, s);
    CUevent a, b;
    MDH_CU(cuEventCreate, &a, CU_EVENT_DEFAULT);
    MDH_CU(cuEventCreate, &b, CU_EVENT_DEFAULT);
    MDH_CU(cuEventRecord, a, s);
    for (int r = 0; r < reps; ++r) launch(inputs, outputs, s);
    MDH_CU(cuEventRecord, b, s);
    MDH_CU(cuEventSynchronize, b);
    float ms = 0;
    MDH_CU(cuEventElapsedTime, &ms, a, b);
    driver_table().cuEventDestroy(a);
    driver_table().cuEventDestroy(b);
    return ms / float(reps);
  }

 private:
  const device* dev_;
  lower::kernel_plan plan_;
  std::shared_ptr<const compiled_module> module_;
  CUmodule mod_ = nullptr;
  std::vector<CUfunction> functions_;
  bool overlap_supported_ = false;  // programmatic dependent launch: sm_90 on, cuLaunchKernelEx
  std::vector<device_buffer<unsigned char>> partials_;  // then the counters, as in params
  struct tensor_map {
    CUtensorMap map{};
    CUdeviceptr ptr = 0;
    bool encoded = false;
  };
  tensor_map maps_[2];  // TMA (plan.mma.tma): A's and B's, for the pointer last launched with
};

}  // namespace mdh::cuda
