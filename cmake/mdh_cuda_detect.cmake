# Finds the CUDA toolkit (NVRTC and the driver API) without requiring a GPU or the CUDA language.
# Looks at CUDAToolkit_ROOT, then /usr/local/cuda. Absence is a message, not an error: the CUDA
# backend is then left out and mdh::cuda does not exist.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS "/usr/local/cuda")
  set(CUDAToolkit_ROOT "/usr/local/cuda")
endif()
find_package(CUDAToolkit QUIET)
set(MDH_HAS_CUDA OFF)
if(CUDAToolkit_FOUND AND TARGET CUDA::nvrtc AND TARGET CUDA::cuda_driver)
  set(MDH_HAS_CUDA ON)
  message(STATUS "mdh: CUDA toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_ROOT}: CUDA backend enabled")
else()
  message(STATUS "mdh: no CUDA toolkit found (set CUDAToolkit_ROOT or install it at /usr/local/cuda): "
                 "the CUDA backend (mdh::cuda) is disabled")
endif()
