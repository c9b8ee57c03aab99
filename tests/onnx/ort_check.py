"""Runs a model written by amd_graph_write in onnxruntime and compares its
outputs with the ones `amdnn-onnx run` wrote for the same model and input.

usage: python3 ort_check.py MODEL.onnx INPUT.pb AMDNN_OUTPUT_DIR

The model must pass onnx.checker (full check, with shape inference) and hold
no training-mode node (BatchNormalization with more than one output or
training_mode = 1, Dropout with a training_mode input). Each graph output NAME is compared with AMDNN_OUTPUT_DIR/NAME.pb (characters
outside [A-Za-z0-9._-] replaced by '_', as `run` names them); the test fails
when max |ort - amdnn| > 1e-4 * max |ort|. Exit 77 (skipped) when onnxruntime
or onnx is not installed (pip: onnxruntime, onnx)."""
import re
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper
except ImportError as e:
    print(f"SKIP: {e} (python3 -m pip install onnxruntime onnx)")
    sys.exit(77)


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    model, input_pb, out_dir = sys.argv[1:]
    ok = True
    m = onnx.load(model)
    onnx.checker.check_model(m, full_check=True)
    for n in m.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "BatchNormalization" and (len(n.output) > 1 or attrs.get("training_mode", 0)):
            print(f"FAIL node {n.name}: training-mode BatchNormalization ({len(n.output)} outputs)")
            ok = False
        if n.op_type == "Dropout" and len(n.input) > 2 and n.input[2]:
            print(f"FAIL node {n.name}: Dropout keeps its training_mode input")
            ok = False
    print(f"ok   onnx.checker (full) passes, {len(m.graph.node)} nodes, {len(m.graph.initializer)} initializers, "
          f"outputs {[o.name for o in m.graph.output]}")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    x = read_pb(input_pb)
    feeds = {sess.get_inputs()[0].name: x}
    outs = sess.run(None, feeds)
    for meta, got in zip(sess.get_outputs(), outs):
        ref = read_pb(f"{out_dir}/{re.sub(r'[^A-Za-z0-9._-]', '_', meta.name)}.pb")
        if ref.shape != got.shape:
            print(f"FAIL {meta.name}: onnxruntime shape {got.shape}, amdnn-onnx {ref.shape}")
            ok = False
            continue
        scale = float(np.max(np.abs(got))) if got.size else 0.0
        diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if got.size else 0.0
        tol = 1e-4 * max(scale, 1e-30)
        good = np.isfinite(got).all() and diff <= tol
        print(f"{'ok  ' if good else 'FAIL'} {meta.name} {list(got.shape)}: max |onnxruntime - amdnn-onnx| = "
              f"{diff:.3g} (max |logit| {scale:.4g}, tolerance {tol:.3g}), onnxruntime {ort.__version__}")
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
