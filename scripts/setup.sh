#!/usr/bin/env bash
# Installs what mdh needs on a Debian/Ubuntu machine; does nothing for what is already there.
# The CUDA toolkit itself is expected at /usr/local/cuda (or $CUDAToolkit_ROOT).
set -euo pipefail
need=()
have() { dpkg -s "$1" >/dev/null 2>&1; }
for p in cmake g++ nlohmann-json3-dev doctest-dev \
         ocl-icd-opencl-dev opencl-headers pocl-opencl-icd; do
  have "$p" || need+=("$p")
done
if ((${#need[@]})); then
  echo "setup: installing ${need[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
cuda="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [ ! -x "$cuda/bin/nvcc" ] && [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "setup: no CUDA toolkit at $cuda (set CUDAToolkit_ROOT); the CUDA backend will be disabled" >&2
fi
