#!/usr/bin/env python3
"""Write tiny_resnet.onnx: the small ResNet-style CNN the quickstart runs.

    make_tiny_resnet.py [-o tiny_resnet.onnx] [--batch 1] [--size 32] [--seed 7]

Stem conv 3x3/2 + BN + ReLU, a 3x3/2 max pool, two basic residual blocks (the
second with a strided 1x1 projection shortcut), global average pool, flatten,
and a 10-way dense layer: every kind of layer ResNet-50 has, in a model that
compiles and simulates in seconds. Weights are drawn from a seeded generator,
so the file is the same on every machine. Needs numpy and onnx (Debian
python3-numpy, python3-onnx).
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn(self, x, name, cin, cout, k, stride, relu=True):
        fan_in = cin * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin, k, k))
        self.nodes.append(helper.make_node(
            "Conv", [x, self.const(name + ".weight", w)], [name + ".conv"], name=name + "_conv",
            kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
        gamma = self.rng.uniform(0.5, 1.5, cout)
        beta = self.rng.normal(0.0, 0.1, cout)
        mean = self.rng.normal(0.0, 0.1, cout)
        var = self.rng.uniform(0.5, 1.5, cout)
        self.nodes.append(helper.make_node(
            "BatchNormalization",
            [name + ".conv", self.const(name + ".bn.gamma", gamma), self.const(name + ".bn.beta", beta),
             self.const(name + ".bn.mean", mean), self.const(name + ".bn.var", var)],
            [name + ".bn"], name=name + "_bn", epsilon=1e-5))
        if not relu:
            return name + ".bn"
        self.nodes.append(helper.make_node("Relu", [name + ".bn"], [name + ".relu"], name=name + "_relu"))
        return name + ".relu"

    def basic_block(self, x, name, cin, cout, stride):
        y = self.conv_bn(x, name + ".a", cin, cout, 3, stride)
        y = self.conv_bn(y, name + ".b", cout, cout, 3, 1, relu=False)
        shortcut = x if stride == 1 and cin == cout else self.conv_bn(x, name + ".proj", cin, cout, 1, stride, relu=False)
        self.nodes.append(helper.make_node("Add", [y, shortcut], [name + ".sum"], name=name + "_add"))
        self.nodes.append(helper.make_node("Relu", [name + ".sum"], [name + ".out"], name=name + "_relu"))
        return name + ".out"


def build(batch, size, seed):
    b = Builder(seed)
    x = b.conv_bn("input", "stem", 3, 16, 3, 2)
    b.nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1]))
    x = b.basic_block("pool", "block1", 16, 16, 1)
    x = b.basic_block(x, "block2", 16, 32, 2)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    w = b.rng.normal(0.0, np.sqrt(1.0 / 32), (10, 32))
    bias = b.rng.normal(0.0, 0.01, 10)
    b.nodes.append(helper.make_node("Gemm", ["flat", b.const("fc.weight", w), b.const("fc.bias", bias)], ["logits"],
                                    name="fc", transB=1))
    graph = helper.make_graph(
        b.nodes, "tiny_resnet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])],
        initializer=b.inits)
    model = helper.make_model(graph, producer_name="chiplet-toolkit examples/tiny_resnet",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="tiny_resnet.onnx")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=32, help="input height and width")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    model = build(args.batch, args.size, args.seed)
    with open(args.output, "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
