#!/usr/bin/python3
"""Writes every initializer of an ONNX model to its own TensorProto file, for
the golden tests (tests/golden/train_golden.sh).

    /usr/bin/python3 tests/golden/extract_initializers.py MODEL.onnx OUTDIR

File name: the initializer name with every character outside [A-Za-z0-9._-]
replaced by '_', then '.pb' (the rule of tools/export_models.py and
`amdnn-onnx grad`); the TensorProto keeps the initializer name and holds its
data inline (raw_data; external data is read relative to the model). Prints
one line per initializer: file, dtype, dims. Exit status 1 when two names
give one file name or the model cannot be read. Needs Debian python3-onnx.
"""

import os
import re
import sys

import onnx
import onnx.numpy_helper


def file_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".pb"


def main():
    if len(sys.argv) != 3:
        print("usage: %s MODEL.onnx OUTDIR" % sys.argv[0], file=sys.stderr)
        return 2
    model_path, out_dir = sys.argv[1], sys.argv[2]
    try:
        model = onnx.load(model_path)  # also loads external data
    except Exception as e:  # noqa: BLE001 (any reader error is a failure)
        print("%s: %s" % (model_path, e), file=sys.stderr)
        return 1
    os.makedirs(out_dir, exist_ok=True)
    seen = {}
    for t in model.graph.initializer:
        f = file_name(t.name)
        if f in seen:
            print("%s: initializers %r and %r both give %s" % (model_path, seen[f], t.name, f), file=sys.stderr)
            return 1
        seen[f] = t.name
        try:
            out = onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(t), t.name)
        except Exception:  # noqa: BLE001 (a dtype numpy_helper cannot convert: keep the proto)
            out = onnx.TensorProto()
            out.CopyFrom(t)
        with open(os.path.join(out_dir, f), "wb") as fp:
            fp.write(out.SerializeToString())
        print("%s %s %s" % (f, onnx.TensorProto.DataType.Name(t.data_type), list(t.dims)))
    if model.graph.sparse_initializer:
        print("%s: %d sparse initializers not written" % (model_path, len(model.graph.sparse_initializer)),
              file=sys.stderr)
        return 1
    print("%d initializers into %s" % (len(seen), out_dir), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
