#!/usr/bin/env bash
# images: end to end from the command line, on folders made from
# Fashion-MNIST at test time (make_image_folder.py, PIL):
#  - LeNet-5 (1 channel) on a train/val folder of grey 28x28 PNGs: one epoch
#    of `train` learns, and `eval` of the written model gives the test top-1
#    that `train` reported;
#  - ResNet-8 (3 channels) on one folder of colour JPEGs of 32..64 pixels
#    (one split): `eval` and one epoch of `train` with --resize 32 --crop 32
#    --normalize imagenet;
#  - bad option values exit 2 with one line; a bad file without --skip-bad
#    exits 1 naming it; with --skip-bad the count is printed on stderr;
#  - eval streams the folder (decoding while the model runs) with the output
#    of --in-memory (decoding everything first), also with --tta, --limit,
#    --split train, and a JPEG that fails in the middle of the stream;
#  - train --augment rrc,flip (random resized crops): the same seed gives the
#    same model byte for byte, another seed another; stopped and resumed it
#    ends with the uninterrupted run's model; rrc where it cannot work
#    (mnist:, no --crop, a bad SMIN, with crop:P) exits 1 with one line.
# usage: test_images_cli.sh AMDNN_ONNX MODELS_DIR FASHION_DIR
set -u
amd=$1 models=$2 fashion=$3
py=/usr/bin/python3
[ -f "$fashion/t10k-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
$py -c "import PIL, numpy" 2>/dev/null || { echo "SKIP: no PIL/numpy for $py"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

$py "$here/make_image_folder.py" "$fashion" "$tmp/grey" grey 100 || { bad "make grey folder"; exit 1; }
$py "$here/make_image_folder.py" "$fashion" "$tmp/rgb" rgb32 20 || { bad "make rgb folder"; exit 1; }

# 1. LeNet-5 on grey PNGs: train one epoch, eval the written model
"$amd" train "$models/lenet5_train.onnx" --data "images:$tmp/grey" --epochs 1 --batch 32 --lr 0.05 --seed 2 \
  --device cpu -o "$tmp/l.onnx" >"$tmp/t.log" 2>&1
rc=$?
acc=$(sed -n 's/.*test loss [0-9.]* top1 \([0-9.]*\)%.*/\1/p' "$tmp/t.log" | tail -1)
grep -q "images: 1000 train / 1000 test, 1x28x28, 10 classes" "$tmp/t.log" && ok "grey PNG folder: 1x28x28, 1000 + 1000 images" \
  || { bad "grey folder description"; cat "$tmp/t.log"; }
if [ $rc -eq 0 ] && awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 30) }'; then ok "one epoch of LeNet-5 on PNGs: test top1 $acc% (>= 30%)"
else bad "train exit $rc, top1 ${acc:-none}"; cat "$tmp/t.log"; fi
"$amd" eval "$tmp/l.onnx" --data "images:$tmp/grey" --device cpu >"$tmp/e.log" 2>&1
eacc=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/e.log")
[ -n "$eacc" ] && [ "$eacc" = "$acc" ] && ok "eval of the trained model: top1 $eacc% as train reported" \
  || { bad "eval top1 '$eacc' vs train '$acc'"; cat "$tmp/e.log"; }

# 2. ResNet-8 on colour JPEGs of several sizes (one split)
opts=(--resize 32 --crop 32 --normalize imagenet --workers 2)
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" --device cpu >"$tmp/e2.log" 2>&1
[ $? -eq 0 ] && grep -q "^top1 .* 200 images\|: 200 images" "$tmp/e2.log" && ok "eval of ResNet-8 on 200 JPEGs (--resize 32 --crop 32 --normalize imagenet)" \
  || { bad "eval ResNet-8 on JPEGs"; cat "$tmp/e2.log"; }
"$amd" train "$models/resnet8_train.onnx" --data "images:$tmp/rgb" "${opts[@]}" --epochs 1 --batch 32 --lr 0.02 \
  --device cpu -o "$tmp/r.onnx" >"$tmp/t2.log" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "images: 200 train / 200 test, 3x32x32, 10 classes, mean 0.4850 0.4560 0.4060 std 0.2290 0.2240 0.2250 (one split: test = train)" "$tmp/t2.log" \
  && grep -q "^epoch 1/1" "$tmp/t2.log" && ok "one epoch of ResNet-8 on the JPEG folder" || { bad "train ResNet-8 exit $rc"; cat "$tmp/t2.log"; }

# 3. errors
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" --resize 0 >"$tmp/x.log" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$tmp/x.log")" -eq 1 ] && grep -q "resize" "$tmp/x.log" && ok "eval --resize 0: exit 2, one line" \
  || { bad "eval --resize 0"; cat "$tmp/x.log"; }
"$amd" train "$models/resnet8_train.onnx" --data "images:$tmp/rgb" --normalize 1,2/3 -o "$tmp/y.onnx" >"$tmp/x.log" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$tmp/x.log")" -eq 1 ] && ok "train --normalize 1,2/3: exit 2, one line" || { bad "train --normalize"; cat "$tmp/x.log"; }
"$amd" eval "$models/lenet5.onnx" --data "mnist:$fashion" --crop 20 --limit 10 >"$tmp/x.log" 2>&1
[ $? -eq 1 ] && grep -q "images: data only" "$tmp/x.log" && ok "--crop on mnist: refused" || { bad "--crop on mnist"; cat "$tmp/x.log"; }
first=$(ls "$tmp/rgb/bag" | head -1)
printf 'not an image' >"$tmp/rgb/bag/$first"
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" --device cpu >"$tmp/x.log" 2>&1
[ $? -eq 1 ] && [ "$(wc -l <"$tmp/x.log")" -eq 1 ] && grep -q "$first: not a JPEG or PNG image" "$tmp/x.log" \
  && ok "a bad file: exit 1, one line naming it" || { bad "bad file"; cat "$tmp/x.log"; }
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" --skip-bad --device cpu >"$tmp/x.log" 2>"$tmp/x.err"
[ $? -eq 0 ] && grep -q "1 bad files skipped" "$tmp/x.err" && grep -q ": 199 images" "$tmp/x.log" \
  && ok "--skip-bad: 199 images, the count on stderr" || { bad "--skip-bad"; cat "$tmp/x.log" "$tmp/x.err"; }
# 4. eval decodes only what it evaluates (a normalisation other than dataset): the val split of a
#    train/val folder, and with --limit N only N images spread over the classes
"$amd" eval "$tmp/l.onnx" --data "images:$tmp/grey" --normalize none --device cpu >"$tmp/p.log" 2>&1
"$amd" eval "$tmp/l.onnx" --data "images:$tmp/grey" --normalize none --limit 1000 --device cpu >"$tmp/p2.log" 2>&1
"$amd" eval "$tmp/l.onnx" --data "images:$tmp/grey" --normalize none --limit 37 --device cpu >"$tmp/p3.log" 2>&1
grep -q "images: 1000 train / 1000 test, .*(only the evaluated images decoded)" "$tmp/p.log" \
  && grep -q "images: 37 train / 37 test" "$tmp/p3.log" && grep -q ": 37 images" "$tmp/p3.log" \
  && [ "$(grep -c '% of [34]$' "$tmp/p3.log")" -eq 10 ] \
  && [ "$(grep '^top1' "$tmp/p.log" | cut -d' ' -f1-6)" = "$(grep '^top1' "$tmp/p2.log" | cut -d' ' -f1-6)" ] \
  && ok "eval --normalize none: only the val split decoded; --limit 37: only 37 images, 3 or 4 of each class" \
  || { bad "partial decoding for eval"; cat "$tmp/p.log" "$tmp/p2.log" "$tmp/p3.log"; }
# 5. eval streams an image folder (decoding while the model runs) unless --in-memory: the same
#    output (top-1, top-5, loss, per-class accuracy, confusion matrix; not the images/s)
$py "$here/make_image_folder.py" "$fashion" "$tmp/rgbs" rgb32 20 3 || { bad "make rgb folder"; exit 1; }
same_eval() { # NAME MODEL EVAL-ARGS...: streamed and --in-memory print the same
  local name=$1 model=$2
  shift 2
  "$amd" eval "$model" --device cpu "$@" >"$tmp/s.log" 2>"$tmp/s.err"
  local rs=$?
  "$amd" eval "$model" --device cpu "$@" --in-memory >"$tmp/m.log" 2>"$tmp/m.err"
  local rm=$?
  sed -i 's/  [0-9]* images\/s$//' "$tmp/s.log" "$tmp/m.log"
  if [ $rs -eq 0 ] && [ $rm -eq 0 ] && grep -q "decoding streamed on .* threads" "$tmp/s.err" &&
    grep -q "loaded in" "$tmp/m.err" && grep -q "^top1" "$tmp/s.log" && cmp -s "$tmp/s.log" "$tmp/m.log"; then
    ok "streamed eval = --in-memory eval: $name ($(grep '^top1' "$tmp/s.log"))"
  else
    bad "streamed eval vs --in-memory: $name (exit $rs / $rm)"; cat "$tmp/s.err" "$tmp/m.err"; diff "$tmp/s.log" "$tmp/m.log"
  fi
}
same_eval "ResNet-8, 200 JPEGs, batch 7" "$models/resnet8.onnx" --data "images:$tmp/rgbs" "${opts[@]}" --batch 7
same_eval "ResNet-8, batch 64, 1 worker, --tta" "$models/resnet8.onnx" --data "images:$tmp/rgbs" --resize 32 \
  --crop 32 --normalize imagenet --workers 1 --batch 64 --tta
same_eval "ResNet-8, --limit 37, batch 10" "$models/resnet8.onnx" --data "images:$tmp/rgbs" "${opts[@]}" --limit 37 \
  --batch 10
same_eval "LeNet-5, grey PNGs, val split, batch 256" "$tmp/l.onnx" --data "images:$tmp/grey" --normalize none
same_eval "LeNet-5, grey PNGs, --split train, --limit 333" "$tmp/l.onnx" --data "images:$tmp/grey" \
  --normalize 0.2/0.3 --split train --limit 333 --batch 32
# a JPEG cut in half passes the header pass and fails while decoding, in the middle of the stream
victim=$(ls "$tmp/rgbs/dress" | sed -n 5p)
head -c 600 "$tmp/rgbs/dress/$victim" >"$tmp/cut.jpg" && mv "$tmp/cut.jpg" "$tmp/rgbs/dress/$victim"
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgbs" "${opts[@]}" --batch 16 --device cpu >"$tmp/x.log" 2>"$tmp/x.err"
rs=$?
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgbs" "${opts[@]}" --batch 16 --device cpu --in-memory \
  >/dev/null 2>"$tmp/y.err"
[ $rs -eq 1 ] && [ ! -s "$tmp/x.log" ] && grep -q "$victim" "$tmp/x.err" && [ "$(tail -1 "$tmp/x.err")" = "$(tail -1 "$tmp/y.err")" ] \
  && ok "a JPEG that fails while streaming: exit 1, the in-memory load's message: $(tail -1 "$tmp/x.err")" \
  || { bad "a file failing while streaming (exit $rs)"; cat "$tmp/x.log" "$tmp/x.err" "$tmp/y.err"; }
same_eval "--skip-bad with that JPEG, batch 16" "$models/resnet8.onnx" --data "images:$tmp/rgbs" "${opts[@]}" \
  --batch 16 --skip-bad
grep -q "warning: 1 bad files skipped, e.g. .*$victim" "$tmp/s.err" && grep -q ": 199 images" "$tmp/s.log" \
  && ok "--skip-bad while streaming: 199 images, the count on stderr" || { bad "--skip-bad while streaming"; cat "$tmp/s.err"; }

# 6. train --augment rrc refused where it makes no sense (reproducible and resumable: train_rrc.sh)
$py "$here/make_image_folder.py" "$fashion" "$tmp/rrc" rgb32 20 4 || { bad "make rgb folder"; exit 1; }
refused() { # WANT_RC WHAT WORDS TRAIN-ARGS...: exit WANT_RC (1 a failure, 2 a bad argument), one line holding WORDS
  local want=$1 what=$2 words=$3
  shift 3
  "$amd" train "$models/resnet8_train.onnx" "$@" -o "$tmp/no.onnx" >"$tmp/x.log" 2>&1
  local rc=$?
  [ $rc -eq "$want" ] && [ "$(wc -l <"$tmp/x.log")" -eq 1 ] && grep -q -- "$words" "$tmp/x.log" && [ ! -e "$tmp/no.onnx" ] \
    && ok "$what: exit $want, $(cat "$tmp/x.log")" || { bad "$what (exit $rc)"; cat "$tmp/x.log"; }
}
refused 1 "rrc on mnist:" "images: data only" --data "mnist:$fashion" --augment rrc
refused 1 "rrc without --crop" "needs --crop" --data "images:$tmp/rrc" --resize 40 --augment rrc
refused 2 "rrc:0" "bad item 'rrc:0'" --data "images:$tmp/rrc" --crop 32 --augment rrc:0
refused 2 "rrc with crop:P" "both crop" --data "images:$tmp/rrc" --crop 32 --augment rrc,crop:2

"$amd" eval --help | grep -q -- "--normalize NORM" && "$amd" train --help | grep -q -- "--fast-decode" \
  && "$amd" train --help | grep -q -- "rrc\[:SMIN\]" \
  && ok "--help of eval and train lists the image options" || bad "--help"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
