#!/usr/bin/env bash
# SPEED_SCRIPT for tools/gpu_ab.sh (OLD = main 726202d's amdnn-onnx, NEW = this build): the GEMMs that add the
# bias and apply the Relu themselves (conv_direct), k_maxpool_fwd and k_xent_warp.
set -u
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p $W/w
$PY tools/export_torchvision.py resnet50 -o $W/w > $W/export.log 2>&1 || tail -3 $W/export.log
M=$W/w/resnet50.onnx
echo "== the same logits: ResNet-50 at batch 16 on one random input, main's binary and this one (run --device cuda)"
$PY - <<'PYEOF'
import numpy as np, onnx, os
from onnx import numpy_helper
x = np.random.default_rng(7).standard_normal((16, 3, 224, 224), dtype=np.float32)
open(os.environ["W"] + "/x.pb", "wb").write(numpy_helper.from_array(x, "x").SerializeToString())
PYEOF
for b in OLD NEW; do ${!b} run $M --input $W/x.pb --output-dir $W/o_$b --device cuda 2>&1 | tail -1; done
for f in $W/o_OLD/*.pb; do cmp "$f" "$W/o_NEW/$(basename $f)" && echo "$(basename $f): byte for byte the same"; done
echo "== ResNet-50 224x224 inference, batch 256, main / new alternated ($(el) s)"
bi() { $1 bench $M --infer --batch 256 --steps 20 --warmup-steps 3 --mode $2 2>&1 | grep -oE 'inference, batch.*|rror.*'; }
nvidia-smi -i 0 --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 200 > $OUT/clocks_acc32.txt 2>&1 &
smi=$!
for r in 1 2; do
  for b in OLD NEW; do echo "round $r $b acc32: $(bi ${!b} acc32)"; done
  [ $r = 1 ] && $PY tools/bench_imagefolder.py infer --model resnet50 --batch 256
done
kill $smi
echo "SM clock while the acc32 rounds ran (MHz: samples, every 200 ms):"; cut -d, -f1 $OUT/clocks_acc32.txt | sort | uniq -c | sort -rn | head -6
for b in OLD NEW; do echo "$b am16: $(bi ${!b} am16)"; done
$PY tools/bench_imagefolder.py infer --model resnet50 --batch 256
echo "== LeNet-5 MNIST training acc32 (MaxPool 2x2 in training), main / new ($(el) s)"
for b in OLD NEW OLD NEW; do
  echo "$b: $(${!b} train models/lenet5_train.onnx --data mnist:$BUNDLE/data/idx --batch 128 --lr 0.01 --epochs 2 --device cuda --mode acc32 -o $W/l.onnx 2>&1 | grep -E '^epoch 2' | grep -oE '[0-9]+ img/s')"
done

echo "== Nsight Compute over one acc32 ResNet-50 inference step of the new build ($(el) s)"
timeout 110 ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  $NEW bench $M --infer --batch 256 --steps 1 --warmup-steps 0 --mode acc32 > $OUT/r50_infer_acc32_ep.csv 2> $W/ncu.err
echo "ncu rc $? ($(el) s)"; tail -1 $W/ncu.err
python3 tools/ncu_kernel_table.py $OUT/r50_infer_acc32_ep.csv > $OUT/r50_infer_table_ep.txt; head -24 $OUT/r50_infer_table_ep.txt
xz -9 $OUT/r50_infer_acc32_ep.csv
echo "done ($(el) s)"
