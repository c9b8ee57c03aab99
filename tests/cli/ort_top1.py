"""Top-1 accuracy of an ONNX model in onnxruntime on TensorProto files X.pb
and Y.pb, printed as 'top1 P%' with two decimals (as `amdnn-onnx eval`).
Exit 77 (skip) when onnxruntime is missing.
usage: ort_top1.py MODEL.onnx X.pb Y.pb"""
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

model, xp, yp = sys.argv[1:4]
x = numpy_helper.to_array(onnx.load_tensor(xp))
y = numpy_helper.to_array(onnx.load_tensor(yp))
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
name = sess.get_inputs()[0].name
logits = np.concatenate([sess.run(None, {name: x[i:i + 256]})[0] for i in range(0, len(x), 256)])
print(f"top1 {100.0 * np.mean(logits.argmax(1) == y):.2f}%")
