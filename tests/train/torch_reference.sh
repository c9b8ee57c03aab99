#!/usr/bin/env bash
# The PyTorch column of the accuracy table (tools/train_torch_mnist.py)
# follows `amdnn-onnx train`'s recipe: LeNet-300-100 and LeNet-5 trained
# from their ONNX weights on 640 Fashion-MNIST images, 2 epochs of 5 steps
# (a new shuffle each epoch, the cosine schedule, momentum), by the tool in
# acc32 and by PyTorch on the CPU: the same lr column, and losses and
# accuracies within 2e-5 and one sample (the two sum in other orders, so
# not bit for bit). Skips (77) without the data or a Python with torch and
# onnx (tools/torch_python.sh).
# usage: torch_reference.sh AMDNN_ONNX REPO_ROOT FASHION_DIR
set -u
amd=$1 root=$2 fashion=$3
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
py=$("$root/tools/torch_python.sh" torch onnx numpy) || { echo "SKIP: no Python with torch and onnx"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
recipe=(--epochs 2 --batch 128 --lr 0.05 --momentum 0.9 --seed 1 --limit 640)
for m in lenet300 lenet5; do
  onnx=$root/models/${m}_train.onnx
  "$amd" train "$onnx" --data "mnist:$fashion" "${recipe[@]}" --schedule cosine -o "$tmp/$m.onnx" \
    --metrics "$tmp/$m.amdnn.tsv" >"$tmp/$m.amdnn.log" 2>&1 || { echo "FAIL $m: amdnn-onnx train"; cat "$tmp/$m.amdnn.log"; fail=1; continue; }
  "$py" "$root/tools/train_torch_mnist.py" --model "$onnx" --data "$fashion" "${recipe[@]}" --device cpu \
    --metrics "$tmp/$m.torch.tsv" >"$tmp/$m.torch.log" 2>&1 || { echo "FAIL $m: train_torch_mnist.py"; cat "$tmp/$m.torch.log"; fail=1; continue; }
  # columns: epoch hours train_loss train_acc test_loss test_top1 lr images_per_s
  if paste "$tmp/$m.amdnn.tsv" "$tmp/$m.torch.tsv" | awk -F'\t' -v m="$m" '
      NR == 1 { next }
      { rows++
        d = 0; for (c = 3; c <= 6; c++) { x = $c - $(c + 8); if (x < 0) x = -x; if (x > d) d = x; lim[c] = c == 4 || c == 6 ? 1.0 / 640 + 1e-6 : 2e-5; if (x > lim[c]) bad = 1 }
        printf "     %s epoch %d: tool loss %s acc %s test %s top1 %s lr %s | torch %s %s %s %s lr %s | max |diff| %.2g\n", m, $1, $3, $4, $5, $6, $7, $11, $12, $13, $14, $15, d
        if ($7 != $15) bad = 1 }
      END { exit !(rows == 2 && !bad) }'; then
    echo "ok   $m: PyTorch follows amdnn-onnx train's recipe (2 epochs, 10 steps)"
  else
    echo "FAIL $m: the PyTorch reference and amdnn-onnx train differ"
    fail=1
  fi
done
exit $fail
