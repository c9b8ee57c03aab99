#!/usr/bin/env bash
# Installs every Debian package that the build and the tests need, then
# configures and builds amdnn-onnx in ./build (and ./build-asan with
# AddressSanitizer + UndefinedBehaviorSanitizer for the hardening tests), and
# installs the Python package (python/, `pip install .`) into ./.venv, a
# virtual environment of Debian's python3 that sees its packages (torch,
# numpy, onnx). Run from anywhere; needs root (or sudo) for apt-get on a
# fresh machine. AMD_SKIP_PYTHON=1 leaves the Python package out;
# AMD_PYTHON_CUDA=1 or 0 builds its CUDA backend or not (default: if a GPU is seen).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  meson ninja-build pkg-config gcc clang libclang-rt-14-dev valgrind
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev
  libpng-dev libturbojpeg0-dev zlib1g-dev libcairo2-dev
  libonnx-testdata dataset-fashion-mnist
  python3-torch python3-torchvision python3-pil python3-onnx python3-numpy
  python3-venv python3-pip python3-pytest patchelf
  libopenmpi-dev openmpi-bin
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# onnxruntime (the check that written models load for inference) comes from PyPI.
python3 -c "import onnxruntime, onnx" 2>/dev/null || python3 -m pip install -q onnxruntime onnx

[ -d build ] || meson setup build
ninja -C build
if [ "${AMD_SKIP_ASAN:-0}" != 1 ]; then
  [ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dcuda=disabled
  ninja -C build-asan
fi
echo "setup: built build/src/amdnn-onnx"
if [ "${AMD_SKIP_PYTHON:-0}" != 1 ]; then
  # Debian marks its python3 externally managed: the package goes into .venv
  [ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv
  # The package's library with the CUDA backend where this machine has a GPU
  # (or AMD_PYTHON_CUDA=1); a wheel for other machines: `pip wheel .` (docs/python.md)
  cuda_arg=--config-settings=setup-args=-Dcuda=disabled
  if [ "${AMD_PYTHON_CUDA:-}" = 1 ] || { [ "${AMD_PYTHON_CUDA:-}" != 0 ] && nvidia-smi -L >/dev/null 2>&1; }; then
    cuda_arg=--config-settings=setup-args=-Dcuda=auto
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check "$cuda_arg" .
  echo "setup: installed the Python package amdnn into .venv ($(.venv/bin/python -c 'import amdnn; print(amdnn.__version__)'))"
fi
