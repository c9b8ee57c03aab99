#!/usr/bin/env bash
# Command-line behaviour: help texts, bad arguments and bad files end with one
# clear line on stderr and a non-zero exit; run and info work on real models.
# usage: test_cli.sh AMDNN_ONNX TESTDATA_NODE_DIR MODELS_DIR
set -u
amd=$1 node=$2 models=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

check() { # name, expected exit code, expected stderr substring ('' = none), command...
  local name=$1 want_rc=$2 want_err=$3
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL $name: exit $rc, expected $want_rc"; sed 's/^/  /' "$tmp/err" | head -5; fail=$((fail + 1)); return
  fi
  if [ -n "$want_err" ]; then
    if ! grep -qF -- "$want_err" "$tmp/err"; then
      echo "FAIL $name: stderr lacks '$want_err':"; sed 's/^/  /' "$tmp/err" | head -5; fail=$((fail + 1)); return
    fi
    if [ "$want_rc" -eq 1 ] && [ "$lines" -ne 1 ]; then
      echo "FAIL $name: $lines lines on stderr, expected one"; fail=$((fail + 1)); return
    fi
  fi
  echo "ok   $name${want_err:+: $(head -1 "$tmp/err")}"
  pass=$((pass + 1))
}

check "no command" 2 "usage: amdnn-onnx" "$amd"
check "help" 0 "" "$amd" --help
check "unknown command" 2 "unknown command 'frobnicate'" "$amd" frobnicate
for c in info run lut; do check "$c --help" 0 "" "$amd" "$c" --help; done
check "run without output dir" 2 "--output-dir" "$amd" run "$node/test_relu/model.onnx"
check "run unknown option" 2 "unknown option '--bogus'" "$amd" run x.onnx --bogus
# --gemm fast|exact (the GPU's tier of am16 / mbm14): a bad value is refused by every command that takes it;
# on the CPU either value is accepted (the CPU has only the exact tier)
for c in train eval bench sweep grad run; do
  check "$c --gemm bogus" 2 "--gemm: 'bogus' is not one of fast, exact" "$amd" "$c" "$models/lenet5.onnx" --gemm bogus
  "$amd" "$c" --help | grep -q -- "--gemm fast|exact" && { echo "ok   $c --help names --gemm"; pass=$((pass + 1)); } ||
    { echo "FAIL $c --help lacks --gemm"; fail=$((fail + 1)); }
done
check "bench --gemm exact on the CPU" 0 "" "$amd" bench "$models/lenet5_train.onnx" --device cpu --steps 1 --warmup-steps 0 \
  --batch 4 --mode am16 --gemm exact

check "missing model" 1 "cannot open" "$amd" info "$tmp/missing.onnx"
printf 'not a model at all\n' >"$tmp/text.onnx"
check "text file as model" 1 "not a valid ONNX model" "$amd" info "$tmp/text.onnx"
head -c 100 "$models/lenet5.onnx" >"$tmp/trunc.onnx"
check "truncated model" 1 "not a valid ONNX model" "$amd" run "$tmp/trunc.onnx" --input "$models/lenet5.input.pb" --output-dir "$tmp/o"
check "unsupported op" 1 "uses op 'ConvTranspose'" "$amd" info "$node/test_convtranspose_pad/model.onnx"
check "wrong input rank" 1 "the model expects rank 4" \
  "$amd" run "$models/lenet5.onnx" --input "$node/test_relu/test_data_set_0/input_0.pb" --output-dir "$tmp/o"
check "unknown input name" 2 "no input named 'nope'" \
  "$amd" run "$models/lenet5.onnx" --input "nope=$models/lenet5.input.pb" --output-dir "$tmp/o"
check "missing input file" 1 "cannot open" "$amd" run "$models/lenet5.onnx" --input "$tmp/none.pb" --output-dir "$tmp/o"
check "input not a tensor" 1 "not a valid TensorProto" \
  "$amd" run "$models/lenet5.onnx" --input "$tmp/text.onnx" --output-dir "$tmp/o"
[ -e "$tmp/o" ] && { echo "FAIL failed runs created the output folder"; fail=$((fail + 1)); }

check "run lenet5" 0 "" "$amd" run "$models/lenet5.onnx" --input "$models/lenet5.input.pb" --output-dir "$tmp/o"
out=$(ls "$tmp/o" 2>/dev/null | wc -l)
if [ "$out" -eq 1 ]; then echo "ok   run wrote one output file"; pass=$((pass + 1)); else echo "FAIL run wrote $out files"; fail=$((fail + 1)); fi
check "info lenet5" 0 "" "$amd" info "$models/lenet5.onnx"
if grep -q "GEMM" "$tmp/out" && grep -q "MACs per sample: [1-9]" "$tmp/out" && grep -q "parameters: [1-9]" "$tmp/out"; then
  echo "ok   info shows parameters, MACs and GEMM nodes"; pass=$((pass + 1))
else
  echo "FAIL info output:"; cat "$tmp/out"; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
