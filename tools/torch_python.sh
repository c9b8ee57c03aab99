#!/bin/sh
# Prints the path of the first Python interpreter that can import every
# MODULE named (default: torch), trying in this order: $AMDNN_PYTHON,
# python3 on PATH, /usr/bin/python3 (Debian's, where tools/setup.sh installs
# python3-torch, python3-torchvision, python3-onnx, python3-pil and
# python3-numpy). A pyenv or venv python3 often lacks torch; this finds the
# one that has it. Exit 1, naming every interpreter tried, when none can.
#
# usage: $(tools/torch_python.sh [MODULE ...]) tools/SCRIPT.py ...
#   e.g. $(tools/torch_python.sh) tools/export_torchvision.py resnet18 -o exp
#        $(tools/torch_python.sh onnx onnxruntime) tools/quantize_ort.py ...
[ $# -gt 0 ] || set -- torch
imports=$(printf 'import %s; ' "$@")
tried=
for py in "${AMDNN_PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$py" ] || continue
  path=$(command -v "$py" 2>/dev/null) || { tried="$tried $py (not found);"; continue; }
  if "$path" -c "$imports" >/dev/null 2>&1; then
    echo "$path"
    exit 0
  fi
  tried="$tried $path;"
done
echo "torch_python.sh: no Python interpreter can import $*; tried:$tried" \
  "install them (tools/setup.sh installs Debian's python3-torch, python3-torchvision, python3-onnx)" \
  "or point AMDNN_PYTHON at an interpreter that has them" >&2
exit 1
