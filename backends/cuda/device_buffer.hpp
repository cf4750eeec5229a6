// SPDX-License-Identifier: MIT
// device_buffer<T>: RAII device memory with upload/download (on the current context).
#pragma once

#include <span>
#include <string>
#include <vector>

#include <backends/cuda/driver.hpp>

namespace mdh::cuda {

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : count_(count) {
    if (count_) MDH_CU(cuMemAlloc, &ptr_, count_ * sizeof(T));
  }
  explicit device_buffer(std::span<const T> host) : device_buffer(host.size()) { upload(host); }
  ~device_buffer() { reset(); }
  device_buffer(device_buffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) {
    o.ptr_ = 0, o.count_ = 0;
  }
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = o.ptr_, count_ = o.count_;
      o.ptr_ = 0, o.count_ = 0;
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  CUdeviceptr get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  // Host -> device; `host` must hold size() elements. With a stream: asynchronous; without,
  // complete on return.
  void upload(std::span<const T> host, CUstream s = nullptr) {
    if (host.size() != count_)
      throw error("device_buffer::upload: " + std::to_string(host.size()) + " elements for a " +
                  std::to_string(count_) + "-element buffer");
    if (!count_) return;
    if (s) {
      MDH_CU(cuMemcpyHtoDAsync, ptr_, host.data(), bytes(), s);
      return;
    }
    MDH_CU(cuMemcpyHtoD, ptr_, host.data(), bytes());
    // From pageable memory cuMemcpyHtoD may return once the data is staged, before its DMA
    // lands, and the copy is ordered only on the legacy stream: a kernel on a non-blocking
    // stream could still read the old contents. Without a stream, upload means "on the device".
    MDH_CU(cuCtxSynchronize);
  }
  void download(std::span<T> host, CUstream s = nullptr) const {
    if (host.size() != count_)
      throw error("device_buffer::download: " + std::to_string(host.size()) + " elements for a " +
                  std::to_string(count_) + "-element buffer");
    if (!count_) return;
    if (s)
      MDH_CU(cuMemcpyDtoHAsync, host.data(), ptr_, bytes(), s);
    else
      MDH_CU(cuMemcpyDtoH, host.data(), ptr_, bytes());
  }
  std::vector<T> download() const {
    std::vector<T> v(count_);
    download(std::span<T>(v));
    return v;
  }

 private:
  void reset() {
    if (ptr_) driver_table().cuMemFree(ptr_);  // no throw from a destructor
    ptr_ = 0, count_ = 0;
  }
  CUdeviceptr ptr_ = 0;
  std::size_t count_ = 0;
};

}  // namespace mdh::cuda
