#!/usr/bin/env bash
# Packs what the GPU suite and the GPU benchmarks need into one folder, to be
# carried to a GPU machine that has only the CUDA driver, runtime and cuBLAS
# (the device runs of issue 5): the tool and test binaries, the shared
# libraries they use besides CUDA's and glibc's, the models and goldens, the
# test scripts, an IDX data set, tools/gpu_run_all.sh as run_all.sh, and
# amdnn-onnx, a wrapper that runs bin/amdnn-onnx with the bundle's libraries.
# Not carried: NCCL (large; run_all.sh finds the GPU machine's libnccl.so.2)
# and Open MPI with its helpers (hwloc, libevent): the ranks must use the
# libraries of the machine's own mpirun.
# usage: tools/gpu_bundle.sh BUILD_DIR IDX_DIR OUT_DIR
set -eu
build=$1 idx=$2 out=$3
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tests/golden" "$out/tests/gpu" "$out/tests/data" "$out/tests/cli" "$out/tests/dist" "$out/tests/faults" "$out/tools" \
  "$out/data"
# meson 1.0's nvcc rule records no header dependencies (nvcc -MD names its file
# differently from what ninja reads): rebuild the CUDA sources when a header
# they may include is newer than their objects
if find "$src/cuda" "$src/src" -name '*.h' -newer "$(ls -t "$build"/cuda/libamdnn_cuda.a.p/*.o 2>/dev/null | tail -1)" \
  2>/dev/null | grep -q .; then
  touch "$src"/cuda/*.cu "$src"/cuda/ops/*.cu "$src"/tests/gpu/*.cu
fi
ninja -C "$build" >/dev/null
ninja -C "$build" tests/gpu/bench-cuda-gemm tests/gpu/gemm-hashes >/dev/null
cp "$build/src/amdnn-onnx" "$build/tests/backend_ops/test_backend_ops" "$build/tests/gpu/test_cuda_products" \
  "$build/tests/gpu/test_cuda_gemm" "$build/tests/gpu/test_cuda_repro" "$build/tests/gpu/bench-cuda-gemm" \
  "$build/tests/gpu/gemm-hashes" \
  "$build/tests/gpu/test_cuda_q8_gemm" "$build/tests/gpu/test_cuda_q8f" "$build/tests/gpu/test_cuda_q8_grad" \
  "$build/tests/data/bench-image-stream" "$build/tests/gpu/test_api_cuda" \
  "$build/tests/golden/golden-compare" "$out/bin/"
cp "$src/tests/mult/am_vectors.tsv" "$out/"
# libraries other than glibc's, the dynamic loader, CUDA's large ones (cudart is small: taken along),
# NCCL and Open MPI's (see above)
ldd "$build/src/amdnn-onnx" "$build/tests/backend_ops/test_backend_ops" | awk '/=> \// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so|libcublas|libnccl' |
  grep -v -E '/lib(mpi|open-rte|open-pal|hwloc|event_core|event_pthreads|udev)[^/]*\.so' |
  while read -r l; do cp -L "$l" "$out/lib/"; done
# models/ travels with the checkout: run_all.sh reads ../models
cp "$src"/tests/golden/*.sh "$src"/tests/golden/*.py "$out/tests/golden/"
cp "$src"/tests/gpu/*.sh "$out/tests/gpu/"
cp "$src/tests/data/image_folder_case.sh" "$out/tests/data/" # sourced by tests/gpu/eval_stream_gpu.sh
cp "$src/tests/cli/test_sweep.sh" "$out/tests/cli/"
cp "$src"/tests/faults/*.sh "$src"/tests/faults/*.py "$out/tests/faults/"
cp "$src/tests/dist/compare_models.py" "$out/tests/dist/"
cp "$src/tools/export_models.py" "$src/tools/bench_torch_train.py" "$src/tools/ncu_kernel_table.py" \
  "$src/tools/torch_python.sh" "$src/tools/alloc_replay.py" "$out/tools/"
cp "$src/tools/gpu_run_all.sh" "$out/run_all.sh"
# OUT_DIR/amdnn-onnx: the tool with the bundle's libraries, for commands of one's own
# (AMDNN_ONNX=OUT_DIR/amdnn-onnx tools/train_fastnet.sh ...)
cat >"$out/amdnn-onnx" <<'WRAPPER'
#!/bin/sh
# bin/amdnn-onnx with this bundle's libraries; the machine's CUDA runtime and cuBLAS first, as in run_all.sh
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$here/lib:${LD_LIBRARY_PATH:-}"
exec "$here/bin/amdnn-onnx" "$@"
WRAPPER
chmod +x "$out/amdnn-onnx"
cp -r "$idx" "$out/data/idx"
du -sh "$out"
