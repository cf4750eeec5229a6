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
# tools/plot_convergence.py draws with matplotlib (from PyPI when the python3 on PATH lacks it)
if command -v python3 >/dev/null && ! python3 -c "import matplotlib" 2>/dev/null; then
  echo "setup: installing matplotlib (PyPI) for tools/plot_convergence.py"
  python3 -m pip install -q matplotlib >/dev/null 2>&1 ||
    python3 -m pip install -q --user matplotlib >/dev/null 2>&1 ||
    echo "setup: could not install matplotlib; tools/plot_convergence.py will not run" >&2
fi
cuda="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [ ! -x "$cuda/bin/nvcc" ] && [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "setup: no CUDA toolkit at $cuda (set CUDAToolkit_ROOT); the CUDA backend will be disabled" >&2
fi
