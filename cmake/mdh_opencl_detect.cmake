# Finds an OpenCL ICD loader and headers (Debian: ocl-icd-opencl-dev, opencl-headers).
find_package(OpenCL QUIET)
set(MDH_HAS_OPENCL OFF)
if(OpenCL_FOUND)
  set(MDH_HAS_OPENCL ON)
  message(STATUS "mdh: OpenCL ${OpenCL_VERSION_STRING}: OpenCL backend enabled")
else()
  message(STATUS "mdh: no OpenCL found (Debian: ocl-icd-opencl-dev): the OpenCL backend is disabled")
endif()
