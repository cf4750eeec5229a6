// SPDX-License-Identifier: MIT
// The tensor map of a TMA operand (mma_operand::tma, written by the mma_tiles pass): the plan
// describes the map (extents, strides, box, swizzle); this encodes it for one device pointer
// with cuTensorMapEncodeTiled, checking what the driver would refuse with a bare error code.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include <mdh/error.hpp>
#include <mdh/lower/mma_plan.hpp>

#include <backends/cuda/driver.hpp>

namespace mdh::cuda {

// The map of operand `o` over the buffer at `ptr`; `where` names the launch in errors.
inline CUtensorMap encode_tensor_map(const lower::mma_operand& o, CUdeviceptr ptr,
                                     const std::string& where) {
  const auto& d = driver();
  if (!d.cuTensorMapEncodeTiled)
    throw error(where + ": mma_tma=1 needs cuTensorMapEncodeTiled, which this CUDA driver lacks");
  if (ptr % 16 != 0)
    throw error(where + ": mma_tma=1 needs input " + std::to_string(o.input) +
                " aligned to 16 bytes (TMA), its device pointer is not");
  const auto rank = cuuint32_t(o.tma_dim.size());
  std::vector<cuuint64_t> extent, stride;
  std::vector<cuuint32_t> box, step(rank, 1);
  for (cuuint32_t j = 0; j < rank; ++j) {
    extent.push_back(cuuint64_t(o.tma_extent[j]));
    box.push_back(cuuint32_t(o.tma_box[j]));
    if (j > 0) stride.push_back(cuuint64_t(o.tma_stride[j]));
  }
  const CUtensorMapDataType type = o.type == scalar_type::bf16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : o.type == scalar_type::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUtensorMapSwizzle swizzle = o.tma_swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : o.tma_swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                           : CU_TENSOR_MAP_SWIZZLE_32B;
  CUtensorMap map;
  const CUresult rc = d.cuTensorMapEncodeTiled(
      &map, type, rank, reinterpret_cast<void*>(ptr), extent.data(), stride.data(), box.data(),
      step.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS) {
    std::string shape;
    for (cuuint32_t j = 0; j < rank; ++j)
      shape +=
          (j ? " " : "") + std::to_string(o.tma_extent[j]) + "/box " + std::to_string(o.tma_box[j]);
    throw error(where + ": cuTensorMapEncodeTiled for input " + std::to_string(o.input) +
                " (extents/boxes innermost first: " + shape + ") failed: " + result_string(rc));
  }
  return map;
}

}  // namespace mdh::cuda
