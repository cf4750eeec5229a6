// SPDX-License-Identifier: MIT
// Runs kernel plans through the OpenCL runtime: device selection, program build cache, launch.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/lower/device_limits.hpp>
#include <mdh/lower/dump.hpp>
#include <mdh/lower/kernel_plan.hpp>
#include <mdh/tensor.hpp>

#include <backends/opencl/emit.hpp>

namespace mdh::opencl {

namespace detail {
inline void check(cl_int rc, const char* call) {
  if (rc != CL_SUCCESS)
    throw error(std::string(call) + " failed with OpenCL error " + std::to_string(rc));
}
#define MDH_CL(call) ::mdh::opencl::detail::check((call), #call)

// Whether a failed clBuildProgram is the implementation's failure rather than the program's: the
// compiler ran out of memory or resources, or could not write its files (PoCL's kernel cache,
// shared by every process of the user, lost a race: "unable to rename temporary ... to output
// file"; an unusable POCL_CACHE_DIR). A program's own errors come with a compiler diagnostic
// ("error: <file>:<line>:<column>: ..."); a build log without one is the implementation's too.
inline bool build_failure_is_infrastructure(cl_int rc, const std::string& log) {
  if (rc == CL_OUT_OF_RESOURCES || rc == CL_OUT_OF_HOST_MEMORY || rc == CL_COMPILER_NOT_AVAILABLE)
    return true;
  for (const char* sign : {"unable to rename temporary", "unable to open output file",
                           "No space left on device", "Cannot allocate memory", "out of memory",
                           "Too many open files", "Resource temporarily unavailable", "mkstemp"})
    if (log.find(sign) != std::string::npos) return true;
  return log.find("error:") == std::string::npos;
}

// How often a build that failed is tried: a failure of the implementation (above) up to this
// many times, a program's error twice (a second, identical log confirms it).
inline constexpr int build_attempts = 3;
}  // namespace detail

// One OpenCL device with its context and an in-order queue. MDH_OPENCL_DEVICE=<n> picks the
// n-th device over all platforms (default 0).
class context {
 public:
  context() {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0)
      throw error("no OpenCL platform found (Debian: pocl-opencl-icd)");
    std::vector<cl_platform_id> plats(np);
    MDH_CL(clGetPlatformIDs(np, plats.data(), nullptr));
    std::vector<cl_device_id> devs;
    for (auto pl : plats) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
      std::vector<cl_device_id> d(nd);
      MDH_CL(clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, nd, d.data(), nullptr));
      devs.insert(devs.end(), d.begin(), d.end());
    }
    if (devs.empty()) throw error("no OpenCL device found");
    std::size_t pick = 0;
    if (const char* e = std::getenv("MDH_OPENCL_DEVICE")) pick = std::size_t(std::atoi(e));
    if (pick >= devs.size())
      throw error("MDH_OPENCL_DEVICE=" + std::to_string(pick) + " but only " +
                  std::to_string(devs.size()) + " OpenCL devices exist");
    device_ = devs[pick];
    cl_int rc;
    ctx_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &rc);
    detail::check(rc, "clCreateContext");
    // profiling: program::launch_and_time reads each kernel's own start and end
    queue_ = clCreateCommandQueue(ctx_, device_, CL_QUEUE_PROFILING_ENABLE, &rc);
    detail::check(rc, "clCreateCommandQueue");
  }
  ~context() {
    for (auto& [k, prog] : programs_) clReleaseProgram(prog);
    if (queue_) clReleaseCommandQueue(queue_);
    if (ctx_) clReleaseContext(ctx_);
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  cl_context get() const { return ctx_; }
  cl_command_queue queue() const { return queue_; }
  cl_device_id device() const { return device_; }

  // The device's limits, read from the runtime.
  lower::device_limits limits() const {
    lower::device_limits l;
    char name[256] = {};
    clGetDeviceInfo(device_, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
    l.name = name;
    size_t wg = 0, items[3] = {1, 1, 1};
    cl_ulong local = 0;
    cl_uint cus = 1;
    cl_device_type type = 0;
    MDH_CL(clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr));
    MDH_CL(clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr));
    MDH_CL(clGetDeviceInfo(device_, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr));
    MDH_CL(clGetDeviceInfo(device_, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, nullptr));
    MDH_CL(clGetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof type, &type, nullptr));
    l.max_threads_per_block = std::int64_t(wg);
    for (int a = 0; a < 3; ++a) l.max_block[a] = std::int64_t(items[a]), l.max_grid[a] = 2147483647;
    l.shared_per_block = l.shared_per_block_optin = std::int64_t(local);
    l.sm_count = int(cus);
    l.warp_size = 1;
    l.cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    return l;
  }

  // Builds (or finds in the cache) the program for this source; errors carry the build log and
  // the path of the dumped source. A failed build is tried again (detail::build_attempts); one
  // that is not the program's fault throws mdh::infrastructure_error, a program's error
  // mdh::error. Builds are serialised: PoCL's compiler is not safe to run twice at once in a
  // process, and its kernel cache is shared with other processes (the retry covers those).
  cl_program build(const std::string& src, const std::string& name) {
    std::lock_guard lock(mutex_);
    auto it = programs_.find(src);
    if (it != programs_.end()) return it->second;
    const char* text = src.c_str();
    std::size_t len = src.size();
    std::string first_log;
    for (int attempt = 1;; ++attempt) {
      cl_int rc;
      cl_program prog = clCreateProgramWithSource(ctx_, 1, &text, &len, &rc);
      detail::check(rc, "clCreateProgramWithSource");
      rc = clBuildProgram(prog, 1, &device_, "-cl-std=CL1.2", nullptr, nullptr);
      if (rc == CL_SUCCESS) {
        programs_[src] = prog;
        return prog;
      }
      std::size_t n = 0;
      clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      clReleaseProgram(prog);
      const bool infrastructure = detail::build_failure_is_infrastructure(rc, log);
      if (attempt == 1) first_log = log;
      // A program's own error repeats word for word; anything else is worth another try.
      const bool confirmed = !infrastructure && attempt >= 2 && log == first_log;
      if (!confirmed && attempt < detail::build_attempts) continue;
      std::string dir = lower::dump_dir().empty()
                            ? (std::filesystem::temp_directory_path() / "mdh").string()
                            : lower::dump_dir();
      std::string path = lower::write_text_file(dir, name + ".cl", src);
      if (!confirmed)
        throw infrastructure_error("OpenCL build of " + name + " failed " +
                                   std::to_string(attempt) + " times (error " + std::to_string(rc) +
                                   ") for a reason that is not the program's (the compiler's "
                                   "resources or files, e.g. its kernel cache), source in " +
                                   path + ":\n" + log);
      throw error("OpenCL build of " + name + " failed (error " + std::to_string(rc) +
                  "), source in " + path + ":\n" + log);
    }
  }

 private:
  cl_device_id device_ = nullptr;
  cl_context ctx_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::mutex mutex_;
  std::map<std::string, cl_program> programs_;
};

// A device buffer (RAII).
class buffer {
 public:
  buffer(context& c, std::size_t bytes, const void* init = nullptr) : bytes_(bytes) {
    cl_int rc;
    mem_ = clCreateBuffer(c.get(), CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                          std::max<std::size_t>(bytes, 1), const_cast<void*>(init), &rc);
    detail::check(rc, "clCreateBuffer");
  }
  ~buffer() {
    if (mem_) clReleaseMemObject(mem_);
  }
  buffer(buffer&& o) noexcept : mem_(o.mem_), bytes_(o.bytes_) { o.mem_ = nullptr; }
  buffer(const buffer&) = delete;
  cl_mem get() const { return mem_; }
  std::size_t bytes() const { return bytes_; }
  void download(context& c, void* dst) const {
    MDH_CL(clEnqueueReadBuffer(c.queue(), mem_, CL_TRUE, 0, bytes_, dst, 0, nullptr, nullptr));
  }

 private:
  cl_mem mem_ = nullptr;
  std::size_t bytes_ = 0;
};

// A plan built for one context: launch() on device buffers, run() on host buffers.
class program {
 public:
  // `tag` is appended to the source as a comment: a distinct tag forces a fresh build.
  program(context& c, lower::kernel_plan plan, const std::string& tag = "")
      : ctx_(&c), plan_(std::move(plan)) {
    source_ = emit(plan_);
    if (!tag.empty()) source_ += "// " + tag + "\n";
    lower::dump(plan_.name + ".plan.txt", lower::to_string(plan_));
    lower::dump(plan_.name + ".cl", source_);
    prog_ = c.build(source_, plan_.name);
    for (auto& k : plan_.kernels) {
      cl_int rc;
      cl_kernel kk = clCreateKernel(prog_, k.name.c_str(), &rc);
      detail::check(rc, "clCreateKernel");
      kernels_.push_back(kk);
    }
    for (auto& g : plan_.partials)
      partials_.emplace_back(c, std::size_t(g.elements) * size_of(g.type));
    // Zeroed once: the kernel leaves every counter at zero again (last-block combine).
    for (auto& g : plan_.counters) {
      std::vector<unsigned char> zero(std::size_t(g.elements) * size_of(g.type), 0);
      partials_.emplace_back(c, zero.size(), zero.data());
    }
  }
  ~program() {
    for (auto k : kernels_) clReleaseKernel(k);
  }
  program(const program&) = delete;
  program& operator=(const program&) = delete;

  const lower::kernel_plan& plan() const { return plan_; }
  const std::string& source() const { return source_; }

  // Runs all kernels of the plan on device buffers (inputs then outputs, in computation order).
  // Launches of one program must not run concurrently: they share the partials and counters.
  void launch(std::span<const cl_mem> inputs, std::span<const cl_mem> outputs) {
    enqueue(inputs, outputs, nullptr);
  }

  // launch(), waits for it and returns the time its kernels ran on the device, in µs: the sum
  // of each kernel's start to end (profiling events), as CUDA events time a GPU. The host's
  // enqueue and PoCL's waking of its worker threads are left out: on a loaded 2-core machine
  // they took 20-35 us of a 45 us launch + clFinish, whatever the kernel.
  double launch_and_time(std::span<const cl_mem> inputs, std::span<const cl_mem> outputs) {
    std::vector<cl_event> events;
    struct release {
      std::vector<cl_event>& e;
      ~release() {
        for (auto x : e) clReleaseEvent(x);
      }
    } guard{events};
    enqueue(inputs, outputs, &events);
    MDH_CL(clWaitForEvents(cl_uint(events.size()), events.data()));
    double us = 0;
    for (auto e : events) {
      cl_ulong start = 0, end = 0;
      MDH_CL(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr));
      MDH_CL(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr));
      us += double(end - start) / 1000.0;
    }
    return us;
  }

  // Copies host buffers to the device, runs, copies the outputs back (shapes are checked).
  void run(std::span<const buffer_ref> inputs, std::span<const buffer_ref> outputs) {
    auto check_ref = [&](const buffer_ref& r, const lower::global_buffer& g, const char* what) {
      if (r.type != g.type || r.shape != g.shape)
        throw error(std::string(what) + " '" + g.name + "' of " + plan_.name + " must be " +
                    std::string(short_name(g.type)) + to_string(g.shape) + ", is " +
                    std::string(short_name(r.type)) + to_string(r.shape));
    };
    std::vector<buffer> in, out;
    std::vector<cl_mem> in_m, out_m;
    for (std::size_t k = 0; k < inputs.size() && k < plan_.inputs.size(); ++k) {
      check_ref(inputs[k], plan_.inputs[k], "input");
      in.emplace_back(*ctx_, std::size_t(inputs[k].size()) * size_of(inputs[k].type),
                      inputs[k].data);
      in_m.push_back(in.back().get());
    }
    for (std::size_t k = 0; k < outputs.size() && k < plan_.outputs.size(); ++k) {
      check_ref(outputs[k], plan_.outputs[k], "output");
      out.emplace_back(*ctx_, std::size_t(outputs[k].size()) * size_of(outputs[k].type),
                       outputs[k].data);
      out_m.push_back(out.back().get());
    }
    if (in_m.size() != inputs.size() || out_m.size() != outputs.size())
      throw error("run of " + plan_.name + ": wrong number of buffers");
    launch(in_m, out_m);
    for (std::size_t k = 0; k < out.size(); ++k) out[k].download(*ctx_, outputs[k].data);
    MDH_CL(clFinish(ctx_->queue()));
  }

 private:
  // Enqueues the plan's kernels; with `events`, each kernel's event is appended (the caller
  // releases them).
  void enqueue(std::span<const cl_mem> inputs, std::span<const cl_mem> outputs,
               std::vector<cl_event>* events) {
    if (inputs.size() != plan_.inputs.size() || outputs.size() != plan_.outputs.size())
      throw error("launch of " + plan_.name + ": expected " + std::to_string(plan_.inputs.size()) +
                  " inputs and " + std::to_string(plan_.outputs.size()) + " outputs, got " +
                  std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
    std::vector<cl_mem> args(inputs.begin(), inputs.end());
    args.insert(args.end(), outputs.begin(), outputs.end());
    for (auto& p : partials_) args.push_back(p.get());
    for (std::size_t k = 0; k < kernels_.size(); ++k) {
      for (cl_uint a = 0; a < args.size(); ++a)
        MDH_CL(clSetKernelArg(kernels_[k], a, sizeof(cl_mem), &args[a]));
      const auto& l = plan_.kernels[k].launch;
      std::size_t global[3], local[3];
      for (int a = 0; a < 3; ++a)
        local[a] = std::size_t(l.block[a]), global[a] = std::size_t(l.grid[a] * l.block[a]);
      cl_event e = nullptr;
      MDH_CL(clEnqueueNDRangeKernel(ctx_->queue(), kernels_[k], 3, nullptr, global, local, 0,
                                    nullptr, events ? &e : nullptr));
      if (events) events->push_back(e);
    }
  }

  context* ctx_;
  lower::kernel_plan plan_;
  std::string source_;
  cl_program prog_ = nullptr;
  std::vector<cl_kernel> kernels_;
  std::vector<buffer> partials_;  // then the counters, as in the kernels' parameters
};

}  // namespace mdh::opencl
