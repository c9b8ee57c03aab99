#!/usr/bin/python3
"""Rewrites every training-mode Dropout node of an ONNX model as the random ops
that PyTorch's dynamo exporter writes for F.dropout in train mode:

    u    = RandomUniformLike(x)                  (float, [0, 1))
    keep = Less(u, 1 - ratio)
    mask = Cast(keep, to=float)
    y    = Mul(Mul(x, mask), 1 / (1 - ratio))

The ratio is read from the Dropout's constant input (opset 12+) or its ratio
attribute; a mask output, if the Dropout had one, must be unused. Everything
else (weights, opset, names) stays as it is.

usage: dropout_to_random.py IN.onnx OUT.onnx
(models/lenet5r_train.onnx: models/lenet5d_train.onnx rewritten by this script.)"""
import sys

try:  # say which interpreter to use, instead of a bare ImportError
    import onnx  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"dropout_to_random.py: {e}: run it with a Python that has onnx, e.g. "
             "$(tools/torch_python.sh onnx) tools/dropout_to_random.py ...")
import onnx
from onnx import helper, numpy_helper


def constants(graph):
    """Output name -> value of the graph's scalar Constant nodes and initializers."""
    vals = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    vals[n.output[0]] = numpy_helper.to_array(a.t)
                elif a.name == "value_float":
                    vals[n.output[0]] = a.f
    return vals


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model = onnx.load(sys.argv[1])
    graph = model.graph
    vals = constants(graph)
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    nodes = []
    count = 0
    for n in graph.node:
        if n.op_type != "Dropout":
            nodes.append(n)
            continue
        ratio = 0.5
        for a in n.attribute:
            if a.name == "ratio":
                ratio = a.f
        if len(n.input) > 1 and n.input[1]:
            ratio = float(vals[n.input[1]])
        if len(n.output) > 1 and n.output[1] in used:
            sys.exit(f"Dropout {n.name}: its mask output is used")
        keep_p = 1.0 - ratio
        p = f"{n.name or n.output[0]}/random"
        x, y = n.input[0], n.output[0]
        nodes += [
            helper.make_node("RandomUniformLike", [x], [p + "_u"], name=p + "_u", dtype=onnx.TensorProto.FLOAT),
            helper.make_node("Constant", [], [p + "_keep_p"], name=p + "_keep_p", value_float=keep_p),
            helper.make_node("Less", [p + "_u", p + "_keep_p"], [p + "_keep"], name=p + "_keep"),
            helper.make_node("Cast", [p + "_keep"], [p + "_mask"], name=p + "_mask", to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [x, p + "_mask"], [p + "_masked"], name=p + "_masked"),
            helper.make_node("Constant", [], [p + "_scale"], name=p + "_scale", value_float=1.0 / keep_p),
            helper.make_node("Mul", [p + "_masked", p + "_scale"], [y], name=p + "_scaled"),
        ]
        count += 1
    # the Dropouts' ratio / training_mode constants, now unread
    read = {i for n in nodes for i in n.input} | {o.name for o in graph.output}
    nodes = [n for n in nodes if n.op_type != "Constant" or n.output[0] in read]
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"{count} Dropout nodes rewritten as RandomUniformLike -> Less -> Cast -> Mul")


if __name__ == "__main__":
    main()
