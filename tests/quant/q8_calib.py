#!/usr/bin/env python3
"""The calibration of the nodes a q8 mode quantizes on the fly (`--q8-calib`):

  - `run` of LeNet-5 in q8u:exact (CPU): no option, `--q8-calib minmax` and
    `percentile:100` write the same logits byte for byte (the percentile at
    100 is the min and max); `percentile:99` and `percentile` (99.99) run and
    change them; `percentile` is `percentile:99.99` (every node's data
    here has fewer than 10000 values: ceil(0.9999 n) = n, the min and max);
  - `grad` and `bench --infer` accept the option;
  - `train` announces it, and a checkpoint written with `percentile` does not
    resume without the option, and resumes with `percentile:99.99` (the same
    run: P is part of the run's identity as a number);
  - bad values fail with a message and exit 2 in train, eval, run, grad and
    bench (`percentile:50`, `percentile:abc`, `foo`); `percentile` with no
    node quantized on the fly (acc32) exits 1;
  - every command's --help names the option.

usage: q8_calib.py AMDNN_ONNX MODELS_DIR FASHION_DIR   (77 without the data)
"""
import os
import sys
import tempfile

from fashion_cli import check, finish, run, start

_, models, fashion = start()


with tempfile.TemporaryDirectory() as tmp:
    model = os.path.join(models, "lenet5.onnx")
    tmodel = os.path.join(models, "lenet5_train.onnx")
    golden = os.path.join(models, "golden", "lenet5")

    def logits(mode, *calib):
        out = os.path.join(tmp, "run_" + "_".join(c.replace(":", "").replace(".", "") for c in calib))
        rc, log = run("run", model, "--input", os.path.join(models, "lenet5.input.pb"), "--output-dir", out,
                      "--mode", mode, "--device", "cpu", *calib)
        check(rc == 0, f"run --mode {mode} {' '.join(calib)}: exit {rc}")
        if rc:
            print(log)
            return {}
        return {f: open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out))}

    default = logits("q8u:exact")
    for calib in (["--q8-calib", "minmax"], ["--q8-calib", "percentile:100"]):
        got = logits("q8u:exact", *calib)
        check(got and got == default, f"run {' '.join(calib)}: the default's logits byte for byte")
    got = logits("q8u:exact", "--q8-calib", "percentile:99")
    check(got and sorted(got) == sorted(default) and got != default, "run --q8-calib percentile:99: other logits")
    got, want = logits("q8u:exact", "--q8-calib", "percentile"), logits("q8u:exact", "--q8-calib", "percentile:99.99")
    check(got and got == want, "run --q8-calib percentile = percentile:99.99 byte for byte")

    rc, log = run("grad", tmodel, "--input", os.path.join(golden, "input.pb"), "--labels",
                  os.path.join(golden, "labels.pb"), "--output-dir", os.path.join(tmp, "g"), "--mode", "q8s:exact",
                  "--q8-calib", "percentile:99.9", "--device", "cpu")
    check(rc == 0, f"grad --q8-calib percentile:99.9: exit {rc}")
    rc, log = run("bench", model, "--infer", "--batch", "8", "--steps", "2", "--warmup-steps", "1", "--mode", "q8u:exact",
                  "--q8-calib", "percentile", "--device", "cpu")
    check(rc == 0, f"bench --infer --q8-calib percentile: exit {rc}")

    # train: announced; part of a checkpoint's identity
    ck = os.path.join(tmp, "ck")
    common = ["train", tmodel, "--data", "mnist:" + fashion, "--limit", "256", "--epochs", "1", "--batch", "64",
              "--mode", "q8u:exact", "--device", "cpu", "-o", os.path.join(tmp, "r.onnx"), "--checkpoint-dir", ck]
    rc1, log1 = run(*common, "--q8-calib", "percentile", "--stop-after", "2")
    check(rc1 == 3 and "q8 data ranges at the 99.99-th percentile" in log1,
          f"train --q8-calib percentile: stopped after 2 steps (exit {rc1}), announced")
    rc2, log2 = run(*common, "--resume")
    check(rc2 != 0 and "q8calib=percentile:99.99" in log2,
          f"a --q8-calib percentile checkpoint does not resume with minmax: exit {rc2}: {log2.strip()[-160:]}")
    rc3, log3 = run(*common, "--resume", "--q8-calib", "percentile:99.99")
    check(rc3 == 0, f"... and resumes with percentile:99.99: exit {rc3}: {log3.strip()[-160:]}")

    # bad values
    data = ["--data", "mnist:" + fashion]
    cmds = {
        "train": ["train", tmodel, *data, "-o", os.path.join(tmp, "x.onnx")],
        "eval": ["eval", model, *data],
        "run": ["run", model, "--input", os.path.join(models, "lenet5.input.pb"), "--output-dir",
                os.path.join(tmp, "bad")],
        "grad": ["grad", tmodel, "--input", os.path.join(golden, "input.pb"), "--labels",
                 os.path.join(golden, "labels.pb"), "--output-dir", os.path.join(tmp, "bad")],
        "bench": ["bench", model, "--infer"],
    }
    for name, args in cmds.items():
        for bad in ("percentile:50", "percentile:abc", "foo"):
            rc, log = run(*args, "--mode", "q8u:exact", "--q8-calib", bad, "--device", "cpu")
            check(rc == 2 and f"--q8-calib '{bad}': expected minmax or percentile[:P] with 50 < P <= 100" in log,
                  f"{name} --q8-calib {bad}: exit {rc}: {log.strip()[-200:]}")
        rc, log = run(name, "--help")
        check(rc == 0 and "--q8-calib minmax|percentile[:P]" in log, f"{name} --help names --q8-calib")
    rc, log = run(*cmds["run"], "--q8-calib", "percentile", "--device", "cpu")
    check(rc == 1 and "--q8-calib percentile: no node is quantized on the fly" in log,
          f"run --q8-calib percentile in acc32: exit {rc}: {log.strip()[-200:]}")

finish()
