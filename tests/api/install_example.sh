#!/bin/sh
# The installed library as a user meets it: `meson install` into a temporary
# root, then examples/eval_two_modes.c compiled with the installed header and
# pkg-config file alone (cc `pkg-config --cflags --libs amdnn`), run on the
# shared library under two modes, and the installed tool's --version.
# usage: install_example.sh BUILD_DIR SOURCE_DIR IDX_DATA_DIR
set -eu
build=$1 src=$2 idx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
meson install -C "$build" --destdir "$root" --no-rebuild >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "FAIL meson install"; exit 1; }
pc=$(find "$root" -name amdnn.pc | head -1)
header=$(find "$root" -name amdnn.h | head -1)
tool=$(find "$root" -name amdnn-onnx -type f | head -1)
[ -n "$pc" ] && [ -n "$header" ] && [ -n "$tool" ] || { echo "FAIL: installed amdnn.pc '$pc', amdnn.h '$header', amdnn-onnx '$tool'"; exit 1; }
echo "ok   installed $pc, $header, $tool"
# the installed paths, under the temporary root
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs amdnn)
echo "ok   pkg-config --cflags --libs amdnn: $flags"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Werror "$src/examples/eval_two_modes.c" $flags -o "$tmp/eval_two_modes"
libdir=$(dirname "$(find "$root" -name 'libamdnn.so*' | head -1)")
"$tool" --version | grep -q "amdnn-onnx " || { echo "FAIL installed amdnn-onnx --version"; exit 1; }
if [ ! -r "$idx/train-labels-idx1-ubyte.gz" ] && [ ! -r "$idx/train-labels-idx1-ubyte" ]; then
  echo "ok   built the example (no IDX data in $idx to run it on)"
  exit 0
fi
LD_LIBRARY_PATH="$libdir" "$tmp/eval_two_modes" "$src/models/lenet5.onnx" "mnist:$idx" acc32 am16 500 >"$tmp/out" ||
  { cat "$tmp/out"; echo "FAIL the example"; exit 1; }
cat "$tmp/out"
grep -q "^acc32 *top-1 [0-9.]*%" "$tmp/out" && grep -q "^am16 *top-1 [0-9.]*%" "$tmp/out" &&
  grep -q "^difference [-+][0-9.]* points" "$tmp/out" || { echo "FAIL the example's output"; exit 1; }
# the program resolved amdnn_* from the installed shared library, not a copy of its own
ldd "$tmp/eval_two_modes" | grep -q "$libdir/libamdnn.so" 2>/dev/null ||
  LD_LIBRARY_PATH="$libdir" ldd "$tmp/eval_two_modes" | grep -q "libamdnn.so" || { echo "FAIL not linked to libamdnn.so"; exit 1; }
echo "ok   the example ran on the installed library"
