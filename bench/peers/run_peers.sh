#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The peer side of the device benchmark (issue #5), in one call on the GPU machine:
# builds bench/peers/vendor.cu with nvcc into a temporary folder, runs it (cuBLAS, cuBLASLt,
# cuDNN, the copy and SGEMM ceilings), runs bench/peers/frameworks.py (PyTorch eager,
# torch.compile, JAX), and leaves vendor.json, frameworks.json and their logs in OUTDIR.
#
#   bash bench/peers/run_peers.sh OUTDIR [frameworks.py arguments...]
#
# The peers run each case in its type (bench/cases.json "type": f32, bf16, tf32; see vendor.cu and
# frameworks.py); a tf32x3 case (ours: three TF32 tensor-core products per product, fp32 accuracy)
# is in the fp32 accuracy class: its peers are exactly the float32 case's (fp32, TF32 off). Environment: VENDOR_BIN=path uses a prebuilt vendor binary when the build fails (or
# VENDOR_PREBUILT_FIRST=1 to try it first); FRAMEWORKS_BUDGET_S (default 230) bounds
# frameworks.py; VENDOR_TIMEOUT_S (default 90) bounds the vendor run. PEER_CASES=a,b and/or
# PEER_SUITE=any_shape run only those cases (both peers; the ceilings are measured either way).
set -u
OUTDIR=${1:?usage: run_peers.sh OUTDIR [frameworks.py args...]}
shift
mkdir -p "$OUTDIR"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
T0=$(date +%s)
stamp() { echo "[run_peers $(( $(date +%s) - T0 ))s] $*"; }

export PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false

TMP=$(mktemp -d /tmp/mdh_peers.XXXXXX)
select=()
[ -n "${PEER_CASES:-}" ] && select+=(--cases "$PEER_CASES")
[ -n "${PEER_SUITE:-}" ] && select+=(--suite "$PEER_SUITE")
# Belt and braces: no TF32 in cuBLAS/cuDNN whatever a caller asks (NVIDIA_TF32_OVERRIDE=0), unless
# tf32 cases (issue 18) are selected: the override would turn their TF32 off too. The fp32 cases
# of such a run rely on their explicit settings, and their error check (TF32 fails it) still holds.
# tf32x3 cases are fp32 to the peers: they get the override like the float32 ones (",tf32x3,"
# does not match ",tf32,"), and the same explicit settings in a run that also selects tf32.
types=$("$PY" "$HERE/cases.py" --types "${select[@]}") || { stamp "cases.py failed"; exit 1; }
if [[ ",$types," == *",tf32,"* ]]; then
  unset NVIDIA_TF32_OVERRIDE
  stamp "types $types: NVIDIA_TF32_OVERRIDE left unset (tf32 cases selected)"
else
  export NVIDIA_TF32_OVERRIDE=0
  stamp "types $types: NVIDIA_TF32_OVERRIDE=0"
fi
"$PY" "$HERE/cases.py" --vendor-lines "${select[@]}" >"$TMP/vendor_cases.txt" ||
  { stamp "cases.py failed"; exit 1; }
[ ${#select[@]} -gt 0 ] && stamp "selected: $("$PY" "$HERE/cases.py" --names "${select[@]}")"

# ---- find cuDNN (system, CUDA toolkit, or the Python wheel that PyTorch uses) and cuBLAS
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA_HOME/bin/nvcc")}
inc_flags=() lib_dirs=()
find_dir_of() { # $1 file name, rest: roots
  local f=$1; shift
  for r in "$@"; do
    [ -d "$r" ] || continue
    local hit
    hit=$(find "$r/" -maxdepth 6 -name "$f" -print -quit 2>/dev/null)
    [ -n "$hit" ] && { dirname "$hit"; return 0; }
  done
  return 1
}
PYSITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
ROOTS=("$CUDA_HOME/include" "$CUDA_HOME/lib64" /usr/include /usr/lib/x86_64-linux-gnu /usr/local/cuda/targets
       ${PYSITE:+"$PYSITE/nvidia"} /opt /usr/local/lib)
add_unique() { # $1 array name, $2 value
  local -n arr=$1
  for x in "${arr[@]}"; do [ "$x" = "$2" ] && return 0; done
  arr+=("$2")
}
for hdr in cudnn.h cublas_v2.h; do
  d=$(find_dir_of "$hdr" "${ROOTS[@]}") && add_unique inc_flags "-I$d"
done
for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13; do
  d=$(find_dir_of "$lib" "${ROOTS[@]}") && add_unique lib_dirs "$d"
done
# Only the vendor binary gets these on its library path: PyTorch brings its own cuDNN and fails
# when a different one is found first.
VENDOR_LD_PATH="$(printf '%s:' "${lib_dirs[@]}")${LD_LIBRARY_PATH:-}"
stamp "nvcc: $NVCC; include: ${inc_flags[*]:-none}; libs: ${lib_dirs[*]:-none}"
# cuDNN wheels ship libcudnn.so.9 but not libcudnn.so: link against the versioned names.
link_flags=()
for d in "${lib_dirs[@]}"; do link_flags+=("-L$d" "-Xlinker" "-rpath=$d"); done
mklinks() {
  mkdir -p "$TMP/lib"
  for l in cudnn cublas cublasLt; do
    for d in "${lib_dirs[@]}"; do
      f=$(ls "$d"/lib$l.so.[0-9]* 2>/dev/null | head -1)
      [ -n "$f" ] && { ln -sf "$f" "$TMP/lib/lib$l.so"; break; }
    done
  done
  link_flags+=("-L$TMP/lib")
}
mklinks

VBIN=""
try_prebuilt() {
  if [ -n "${VENDOR_BIN:-}" ] && [ -x "$VENDOR_BIN" ] &&
      LD_LIBRARY_PATH="$VENDOR_LD_PATH" "$VENDOR_BIN" --help >/dev/null 2>&1; then
    VBIN=$VENDOR_BIN; stamp "using prebuilt $VBIN"; return 0
  fi
  return 1
}
if [ "${VENDOR_PREBUILT_FIRST:-0}" = 1 ]; then try_prebuilt; fi
if [ -z "$VBIN" ]; then
  stamp "building vendor.cu"
  if "$NVCC" -O2 -arch=sm_90 -std=c++17 "${inc_flags[@]}" "$HERE/vendor.cu" -o "$TMP/vendor" \
      "${link_flags[@]}" -lcublas -lcublasLt -lcudnn >"$OUTDIR/vendor_build.log" 2>&1; then
    VBIN=$TMP/vendor
  else
    stamp "vendor build failed:"; tail -20 "$OUTDIR/vendor_build.log"
    try_prebuilt
  fi
fi

# ---- vendor
if [ -n "$VBIN" ]; then
  stamp "running vendor"
  LD_LIBRARY_PATH="$VENDOR_LD_PATH" timeout "${VENDOR_TIMEOUT_S:-90}" "$VBIN" --cases "$TMP/vendor_cases.txt" --out "$OUTDIR/vendor.json" \
    >"$OUTDIR/vendor.log" 2>&1
  stamp "vendor rc=$?"; tail -30 "$OUTDIR/vendor.log"
else
  stamp "no vendor binary: vendor peers not measured"
fi

# ---- frameworks
stamp "running frameworks.py"
timeout $(( ${FRAMEWORKS_BUDGET_S:-230} + 40 )) "$PY" "$HERE/frameworks.py" --out "$OUTDIR/frameworks.json" \
  --budget-s "${FRAMEWORKS_BUDGET_S:-230}" "${select[@]}" "$@" >"$OUTDIR/frameworks.log" 2>&1
stamp "frameworks rc=$?"
grep -v '^\s*$' "$OUTDIR/frameworks.log" | grep -E '^\[|Error|error' | tail -90

# ---- a first look: the report with no results of ours
"$PY" "$HERE/../report.py" --vendor "$OUTDIR/vendor.json" --frameworks "$OUTDIR/frameworks.json" \
  --out "$OUTDIR/RESULTS.md" --no-git "${select[@]}" >/dev/null 2>&1 && stamp "report: $OUTDIR/RESULTS.md"
rm -rf "$TMP"
stamp "done"
