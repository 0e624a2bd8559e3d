#!/usr/bin/env python3
"""Run a zoo of networks through the whole chain and tabulate what happens.

  python3 examples/zoo/run_zoo.py [--networks A,B,...] [--archs A,B] [--batches 1,4]
                                  [--out DIR] [--timeout SEC] [--jobs N]
                                  [--readme FILE] [--results FILE] [--list]

Every (network, architecture, batch) goes through the tools as a user runs
them: onnx2fir (8 seeded random calibration inputs, golden activations), gemini
(--report), irgen, asm, zebusim (--stats-json), then zebusim --functional
--golden on onnx2fir's golden input, which checks every accelerator layer
bit for bit and writes the graph outputs, compared here with the golden
outputs (the quantized FIR interpreter's). Every intermediate file stays in
--out (default out/zoo): OUT/models/ holds the exported torchvision models
(exported once, reused by later runs), OUT/NET/bB/ the Frontend IR and its
data, OUT/NET/bB/ARCH/ the mapping, Scheduler IR, program, trace, statistics,
functional outputs and every tool's stderr.

Networks: torchvision models (random weights, exported by
examples/models/export_torchvision.py with Debian's python3-torch), the TFLite
files of the reference data (reference/tflite; a TFLite model has a fixed
batch: for another batch the script asks onnx2fir and records its answer),
libonnx-testdata's pytorch-converted Conv2d tests, and node tests of the
spatial operators (their parameters, inputs 1, 2, ... of test_data_set_0,
given to onnx2fir with --constant-input).

Recorded per case: the first stage that failed and the first line of its
error (or OK), zebusim's cycles, MACs and MAC utilisation (of the used
cores), the real MACs of the network (summed here from the Frontend IR's
shapes over the accelerator layers), gemini's predicted cycles and MAC
utilisation (of the whole chip), and the functional status. The results go to
--results (JSON, sorted keys) and a markdown table to --readme; both depend
only on the inputs (no times, no absolute paths: directories are written as
$OUT, $REPO, $REFERENCE, $ONNX_TESTDATA). Progress and wall times go to
stderr and OUT/run_zoo.log.

Python 3 standard library only (torch is used only by the export helper).
"""
import argparse
import ast
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

TORCHVISION = ["mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "regnet_x_400mf", "resnext50_32x4d", "resnet50",
               "squeezenet1_1", "googlenet", "densenet121", "shufflenet_v2_x1_0", "alexnet", "vgg11",
               "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "fcn_resnet50",
               "tiny_unet",  # tiny_unet: export_torchvision.py's own small U-Net (ConvTranspose2d, reflect padding)
               "convnext_tiny", "vit_b_16",
               "ssdlite320_mobilenet_v3_large"]  # post-processing on the host (the FIR's host graph)
TFLITE = ["mobilenet_v2_quantized_1x3x224x224", "person_detect", "hello_world_int8"]
ONNX_TESTS = ["test_Conv2d", "test_Conv2d_strided", "test_Conv2d_padding", "test_Conv2d_depthwise",
              "test_Conv2d_depthwise_padded", "test_Conv2d_depthwise_strided", "test_Conv2d_depthwise_with_multiplier",
              "test_Conv2d_groups", "test_Conv2d_dilated", "test_ConvTranspose2d", "test_ConvTranspose2d_no_bias",
              "test_ReflectionPad2d", "test_ReplicationPad2d", "test_ZeroPad2d", "test_ConstantPad2d"]
# libonnx-testdata's node tests of the spatial operators of CNNs (pooling,
# resize, constant padding, standalone BatchNormalization, activations and
# PReLU) and of slicing (token tensors [N, T, D]).
ONNX_NODE_TESTS = ["test_averagepool_2d_ceil", "test_averagepool_2d_default", "test_averagepool_2d_pads",
                   "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_precomputed_pads",
                   "test_averagepool_2d_precomputed_pads_count_include_pad",
                   "test_averagepool_2d_precomputed_same_upper", "test_averagepool_2d_precomputed_strides",
                   "test_averagepool_2d_same_lower", "test_averagepool_2d_same_upper", "test_averagepool_2d_strides",
                   "test_batchnorm_epsilon", "test_batchnorm_example", "test_clip", "test_clip_default_inbounds",
                   "test_clip_default_max", "test_clip_default_min",
                   "test_clip_example", "test_clip_inbounds", "test_clip_outbounds", "test_clip_splitbounds",
                   "test_elu", "test_elu_default", "test_elu_example", "test_leakyrelu", "test_leakyrelu_default",
                   "test_leakyrelu_example", "test_maxpool_2d_ceil", "test_maxpool_2d_default",
                   "test_maxpool_2d_dilations", "test_maxpool_2d_pads", "test_maxpool_2d_precomputed_pads",
                   "test_maxpool_2d_precomputed_same_upper", "test_maxpool_2d_precomputed_strides",
                   "test_maxpool_2d_same_lower", "test_maxpool_2d_same_upper", "test_maxpool_2d_strides",
                   "test_resize_downsample_scales_linear",
                   "test_resize_downsample_scales_linear_align_corners", "test_resize_downsample_scales_nearest",
                   "test_resize_downsample_sizes_linear_pytorch_half_pixel", "test_resize_downsample_sizes_nearest",
                   "test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn", "test_resize_upsample_scales_linear",
                   "test_resize_upsample_scales_linear_align_corners", "test_resize_upsample_scales_nearest",
                   "test_resize_upsample_sizes_nearest_ceil_half_pixel",
                   "test_resize_upsample_sizes_nearest_floor_align_corners",
                   "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric", "test_upsample_nearest",
                   "test_prelu_broadcast", "test_constant_pad", "test_slice_default_axes", "test_slice_default_steps",
                   "test_slice_end_out_of_bounds", "test_slice_neg", "test_slice_negative_axes",
                   "test_convtranspose", "test_convtranspose_autopad_same", "test_convtranspose_dilations",
                   "test_convtranspose_kernel_shape", "test_convtranspose_output_shape", "test_convtranspose_pad",
                   "test_convtranspose_pads", "test_convtranspose_with_kernel", "test_edge_pad",
                   "test_reflect_pad",
                   # networks all on the host: gemini maps no layer, the program waits for one host step
                   "test_transpose_all_permutations_0", "test_reduce_mean_keepdims_example", "test_softmax_example",
                   # 1-D pooling and transposed convolution over a row [N, C, 1, L]
                   "test_maxpool_1d_default", "test_averagepool_1d_default", "test_convtranspose_1d",
                   # LayerNormalization over the trailing axes (not the batch: the table repeats samples to
                   # the batch), with its Mean and InvStdDev outputs, on the host
                   "test_layer_normalization_2d_axis1", "test_layer_normalization_2d_axis_negative_1",
                   "test_layer_normalization_3d_axis1_epsilon", "test_layer_normalization_3d_axis2_epsilon",
                   "test_layer_normalization_3d_axis_negative_1_epsilon",
                   "test_layer_normalization_3d_axis_negative_2_epsilon", "test_layer_normalization_4d_axis1",
                   "test_layer_normalization_4d_axis2", "test_layer_normalization_4d_axis3",
                   "test_layer_normalization_4d_axis_negative_1", "test_layer_normalization_4d_axis_negative_2",
                   "test_layer_normalization_4d_axis_negative_3", "test_layer_normalization_default_axis"]
ARCHS = ["zebu-1core", "chip-64tops"]
BATCHES = [1, 4]
STAGES = ["export", "onnx2fir", "gemini", "irgen", "asm", "zebusim", "functional"]


def reference_dir():
    return os.environ.get("CCT_REFERENCE_DIR") or os.path.normpath(os.path.join(REPO, "..", "shared", "reference"))


def onnx_testdata_dir():
    return os.environ.get("CCT_ONNX_TESTDATA") or "/usr/share/libonnx-testdata/data"


class Network:
    def __init__(self, name, kind, path=None):
        self.name = name
        self.kind = kind  # torchvision, tflite, onnx-testdata, onnx-node
        self.path = path  # the model file (None for torchvision: exported into OUT/models)


def all_networks():
    nets = [Network(n, "torchvision") for n in TORCHVISION]
    nets += [Network(n, "tflite", os.path.join(reference_dir(), "tflite", n + ".tflite")) for n in TFLITE]
    nets += [Network(n, "onnx-testdata", os.path.join(onnx_testdata_dir(), "pytorch-converted", n, "model.onnx"))
             for n in ONNX_TESTS]
    nets += [Network(n, "onnx-node", os.path.join(onnx_testdata_dir(), "node", n, "model.onnx"))
             for n in ONNX_NODE_TESTS]
    return nets


# ---- .npy (stdlib) ----------------------------------------------------------

def read_npy(path):
    """(descr, shape, data bytes) of a version 1-3 .npy file in C order."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = blob[6]
    if major == 1:
        hlen, start = int.from_bytes(blob[8:10], "little"), 10
    else:
        hlen, start = int.from_bytes(blob[8:12], "little"), 12
    header = ast.literal_eval(blob[start:start + hlen].decode("latin1"))
    if header.get("fortran_order"):
        raise ValueError(f"{path}: Fortran order")
    return header["descr"], tuple(header["shape"]), blob[start + hlen:]


def compare_npy(got_path, want_path):
    """None when equal bit for bit, else what differs."""
    gd, gs, gb = read_npy(got_path)
    wd, ws, wb = read_npy(want_path)
    if gd != wd:
        return f"dtype {gd} != {wd}"
    if gs != ws:
        return f"shape {list(gs)} != {list(ws)}"
    if gb == wb:
        return None
    size = int(gd[2:]) if gd[2:].isdigit() else 1
    n = sum(1 for k in range(0, min(len(gb), len(wb)), size) if gb[k:k + size] != wb[k:k + size])
    first = next(k for k in range(0, len(gb), size) if gb[k:k + size] != wb[k:k + size]) // size
    return f"{n} of {len(wb) // size} elements differ (first at flat index {first})"


# ---- the Frontend IR --------------------------------------------------------

def is_name(n, prefix):
    return n.startswith(prefix) and n[len(prefix):].isdigit()


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def layer_macs(l):
    """Multiply-accumulates of one accelerator layer from its Frontend IR shapes.

    conv2d: every output element sums (C / groups) * kh * kw products, C the
    input channels; dense: every output element sums the flattened input
    sample ([N, C, H, W] x [K, C, H, W] -> [N, K, 1, 1]) or the last input axis
    for token inputs ([N, T, D] -> [N, T, K]); matmul: the last axis of the
    first input. Other layers do no MACs."""
    op = l["operation"]
    out = l["output_shape"][0]
    x = l["input_shape"][0]
    if op == "conv2d":
        groups = l.get("groups", 1) or 1
        w = l["input_shape"][1]
        kh, kw = l.get("kernel_size") or w[2:4]
        if x[1] % groups:
            raise ValueError(f"layer {l['name']}: {x[1]} input channels in {groups} groups")
        return prod(out) * (x[1] // groups) * kh * kw
    if op == "dense":
        if len(x) == 4:
            return prod(out) * prod(x[1:])
        return prod(out) * x[-1]
    if op == "matmul":
        return prod(out) * x[-1]
    return 0


def fir_summary(fir):
    npu = [l for l in fir.values() if l["device"] == "npu"]
    ops = {}
    for l in fir.values():
        key = l["operation"] + ("" if l["device"] == "npu" else " (cpu)")
        if l["operation"] == "conv2d" and (l.get("groups") or 1) > 1:
            key = "conv2d grouped" if l["input_shape"][1][1] > 1 else "conv2d depthwise"
        if l["operation"] == "conv2d" and any(d != 1 for d in (l.get("dilation") or [1, 1])):
            key += " dilated"
        ops[key] = ops.get(key, 0) + 1
    # Data movement done by transfers alone has no compute instruction of its
    # own: it is checked through its readers (whose every output is compared).
    moves = [l for l in npu if l["operation"] in ("concat", "slice", "gather")]
    return {"layers": len(fir), "npu_layers": len(npu), "npu_moves": len(moves),
            "macs": sum(layer_macs(l) for l in npu), "operations": ops}


def by_index(fir):
    return sorted(fir.values(), key=lambda l: l["layer_index"])


def graph_input_files(fir):
    """The golden input file of each graph input input1, input2, ... (as zebusim's
    functional model finds the inputs: the first layer in layer_index order that
    reads inputN, its input_activation<k+1> for inputN at position k)."""
    found = {}
    for l in by_index(fir):
        for k, p in enumerate(l["previous_layer"]):
            if is_name(p, "input") and p not in found:
                found[p] = l["file_list"]["input_activation" + str(k + 1)]
    return [found[k] for k in sorted(found, key=lambda n: int(n[5:]))]


def graph_outputs(fir):
    """{output name: producer layer} of a Frontend IR."""
    out = {}
    for l in fir.values():
        for n in l["next_layer"]:
            if is_name(n, "output"):
                out[n] = l["name"]
    return out


# ---- running tools ----------------------------------------------------------

class Runner:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.abspath(args.bin)
        self.out = os.path.abspath(args.out)
        self.locks = {}
        self.locks_lock = threading.Lock()
        self.log_lock = threading.Lock()
        self.log = open(os.path.join(self.out, "run_zoo.log"), "a")
        self.substitutions = sorted([(self.out, "$OUT"), (REPO, "$REPO"), (reference_dir(), "$REFERENCE"),
                                     (onnx_testdata_dir(), "$ONNX_TESTDATA")], key=lambda p: -len(p[0]))

    def lock(self, key):
        with self.locks_lock:
            return self.locks.setdefault(key, threading.Lock())

    def note(self, text):
        with self.log_lock:
            print(text, file=sys.stderr, flush=True)
            print(text, file=self.log, flush=True)

    def clean(self, text):
        for path, name in self.substitutions:
            text = text.replace(path, name)
        return text

    def run(self, stage, cmd, cwd, log_name):
        """Runs cmd in cwd with the per-stage timeout; stderr goes to cwd/log_name.
        Returns (ok, stderr text, first error line)."""
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=self.args.timeout)
            err = p.stderr.decode("utf-8", "replace")
            code = p.returncode
        except subprocess.TimeoutExpired as e:
            err = (e.stderr or b"").decode("utf-8", "replace")
            code = None
        except OSError as e:
            err, code = f"{cmd[0]}: {e.strerror}", 127
        secs = time.monotonic() - t0
        with open(os.path.join(cwd, log_name), "w") as f:
            f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n" + err)
        self.note(f"    {stage}: {'timeout' if code is None else 'exit ' + str(code)} in {secs:.1f} s ({self.clean(cwd)})")
        if code == 0:
            return True, err, None
        if code is None:
            return False, err, f"timed out after {self.args.timeout:g} s"
        lines = [l for l in err.splitlines() if l.strip() and ": warning: " not in l]
        first = lines[0] if lines else ""
        if code < 0:
            first = f"killed by signal {-code}" + (f" ({first})" if first else "")
        elif not first:
            first = f"exit {code} without a message"
        return False, err, self.clean(first)

    def tool(self, name):
        return os.path.join(self.bin, name)


# torch's export writes the batch into these models (ShuffleNetV2's channel
# shuffle reshapes to a constant [1, 2, C/2, H, W], ViT's attention to
# [T, N*H, D/H]): exported at each batch instead of resized by onnx2fir --batch.
EXPORT_AT_BATCH = {"shufflenet_v2_x1_0", "vit_b_16", "ssdlite320_mobilenet_v3_large"}

# The FIR member holding a post-processing of data-dependent shapes (SSDlite's
# box decoding, score thresholds, TopK and NMS), which the host runs.
HOST_GRAPH = "$host_graph"


def export_model(r, net, batch=1):
    """The ONNX file of a torchvision model in OUT/models, exported once."""
    models = os.path.join(r.out, "models")
    os.makedirs(models, exist_ok=True)
    at_batch = net.name in EXPORT_AT_BATCH and batch != 1
    stem = net.name + (f"_b{batch}" if at_batch else "")
    path = os.path.join(models, stem + ".onnx")
    with r.lock("export:" + stem):
        if os.path.exists(path):
            return path, None
        tmp = path + ".tmp"
        script = os.path.join(REPO, "examples", "models", "export_torchvision.py")
        extra = ["--batch", str(batch)] if at_batch else []
        ok, _, first = r.run("export", [r.args.python, script, net.name, tmp] + extra, models, stem + ".export.log")
        if not ok:
            return None, first
        os.replace(tmp, path)
        return path, None


def compile_fir(r, net, batch, case_dir):
    """onnx2fir at a batch: (fir dict, fir path, data dir) or raises StageError."""
    if net.kind == "torchvision":
        model, err = export_model(r, net, batch)
        if err:
            raise StageError("export", err)
    else:
        model = net.path
        if not os.path.exists(model):
            raise StageError("onnx2fir", r.clean(f"{model}: no such file"))
    fir_path = os.path.join(case_dir, net.name + ".fir.json")
    data = os.path.join(case_dir, "data")
    cmd = [r.tool("onnx2fir"), model, "--batch", str(batch), "--calib-random", "8", "--data-dir", "data",
           "-o", os.path.basename(fir_path), "--quiet"]
    if net.kind == "onnx-node":
        # The operator's parameters (inputs 1, 2, ... of the test set) as constants.
        k = 1
        while os.path.exists(os.path.join(os.path.dirname(model), "test_data_set_0", f"input_{k}.pb")):
            cmd += ["--constant-input", os.path.join(os.path.dirname(model), "test_data_set_0", f"input_{k}.pb")]
            k += 1
    ok, _, first = r.run("onnx2fir", cmd, case_dir, "onnx2fir.log")
    if not ok:
        raise StageError("onnx2fir", first)
    with open(fir_path) as f:
        fir = json.load(f)
    host_graph = fir.pop(HOST_GRAPH, None)  # the rest are layers
    return fir, fir_path, data, host_graph


class StageError(Exception):
    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage
        self.message = message


def parse_gemini_report(text):
    """Predicted cycles, utilisation of the chip's peak, and the MAC and DRAM bounds (cycles)."""
    cycles = util = mac_bound = dram_bound = None
    for line in text.splitlines():
        words = line.split()
        if line.startswith("predicted latency") and len(words) > 2 and words[2].isdigit():
            cycles = int(words[2])
        if line.startswith("MAC utilisation") and len(words) > 2 and words[2].endswith("%"):
            util = float(words[2][:-1]) / 100.0
        if line.startswith("bounds") and len(words) > 5 and words[1] == "MAC" and words[4] == "DRAM":
            mac_bound, dram_bound = int(words[2]), int(words[5])
    return cycles, util, mac_bound, dram_bound


def run_arch(r, net, batch, arch, fir, fir_path, data, info):
    """gemini .. functional for one architecture; fills `res`."""
    res = {"stage": None, "error": None}
    d = os.path.join(os.path.dirname(fir_path), arch)
    os.makedirs(d, exist_ok=True)
    fir_rel = os.path.join("..", os.path.basename(fir_path))
    data_rel = os.path.join("..", os.path.basename(data))

    def fail(stage, message):
        res["stage"], res["error"] = stage, message
        return res

    ok, err, first = r.run("gemini", [r.tool("gemini"), fir_rel, "--arch", arch, "--report", "--no-progress",
                                      "-o", "model.map.json"], d, "gemini.log")
    if not ok:
        return fail("gemini", first)
    (res["gemini_cycles"], res["gemini_mac_utilization"], res["mac_bound"],
     res["dram_bound"]) = parse_gemini_report(err)
    ok, _, first = r.run("irgen", [r.tool("irgen"), fir_rel, "model.map.json", "--arch", arch, "-o", "model.sir.json"], d,
                         "irgen.log")
    if not ok:
        return fail("irgen", first)
    ok, _, first = r.run("asm", [r.tool("asm"), "model.sir.json", "--fir", fir_rel, "--arch", arch, "-o", "model.asm"], d,
                         "asm.log")
    if not ok:
        return fail("asm", first)
    ok, _, first = r.run("zebusim", [r.tool("zebusim"), "model.asm", "--arch", arch, "--stats-json", "stats.json",
                                     "-o", "model.trace"], d, "zebusim.log")
    if not ok:
        return fail("zebusim", first)
    with open(os.path.join(d, "stats.json")) as f:
        stats = json.load(f)
    res["cycles"] = stats["total_cycles"]
    res["macs"] = stats["macs"]
    res["mac_utilization"] = stats["mac_utilization"]
    res["cores_used"] = stats["cores_used"]
    res["instructions"] = stats["instructions"]
    res["macs_equal_fir"] = stats["macs"] == info["macs"]
    # Functional: the whole network (host layers run by the reference interpreter), onnx2fir's golden input.
    outputs = graph_outputs(fir)
    host = sorted(n for n, l in fir.items() if l["device"] == "cpu")
    notes = ["host layers " + ", ".join(host)] if host else []
    if info.get("host_graph_outputs"):
        notes.append(f"host graph of {info['host_graph_nodes']} nodes: "
                     f"{len(info['host_graph_outputs'])} model outputs equal to their goldens")
    if notes:
        res["functional_note"] = "; ".join(notes)
    inputs = [os.path.join(data_rel, f) for f in graph_input_files(fir)]
    cmd = [r.tool("zebusim"), "model.asm", "--arch", arch, "--functional", "--fir", fir_rel, "--fir-data", data_rel,
           "--sir", "model.sir.json"]
    for x in inputs:
        cmd += ["--input", x]
    cmd += ["--golden", data_rel, "--outputs", "outputs", "-o", "/dev/null"]
    ok, err, first = r.run("functional", cmd, d, "functional.log")
    if not ok:
        res["functional"] = first
        return fail("functional", first)
    checked = None
    for line in err.splitlines():
        if "golden: " in line and " layers match" in line:
            checked = int(line.split("golden: ")[1].split()[0])
    res["layers_golden"] = checked
    problems = []
    if checked is None or not info["npu_layers"] - info["npu_moves"] <= checked <= info["npu_layers"]:
        problems.append(f"{checked} of {info['npu_layers']} accelerator layers ({info['npu_moves']} data movement) "
                        "checked against the golden")
    def check_output(written, golden, what):
        got = os.path.join(d, "outputs", written)
        if not os.path.exists(got):
            problems.append(f"zebusim wrote no {written}")
            return
        diff = compare_npy(got, os.path.join(data, golden))
        if diff:
            problems.append(f"{what} differs from its golden {golden}: {diff}")

    for name in sorted(outputs, key=lambda n: int(n[6:])):
        golden = fir[outputs[name]]["file_list"].get("output_activation1")
        if not golden:
            problems.append(f"{name}: layer {outputs[name]} has no golden output file")
            continue
        check_output(name + ".npy", golden, name)
    # The host graph's outputs (the model's), written as their goldens are named.
    for golden in info.get("host_graph_outputs", []):
        check_output(golden, golden, "the host graph's output")
    if problems:
        res["functional"] = "; ".join(problems)
        return fail("functional", res["functional"])
    res["functional"] = "bit-exact"
    return res


def run_network_batch(r, net, batch, archs):
    """All architectures of one (network, batch): [(arch, result)]."""
    case_dir = os.path.join(r.out, net.name, "b" + str(batch))
    os.makedirs(case_dir, exist_ok=True)
    t0 = time.monotonic()
    r.note(f"{net.name} b{batch}: start")
    results = []
    try:
        fir, fir_path, data, host_graph = compile_fir(r, net, batch, case_dir)
        info = fir_summary(fir)
        if host_graph:
            info["host_graph_nodes"] = len(host_graph["nodes"])
            info["host_graph_outputs"] = [o["file"] for o in host_graph["outputs"]]
    except StageError as e:
        skipped = net.kind in ("tflite", "onnx-node") and batch != 1 and e.stage == "onnx2fir"
        for arch in archs:
            res = {"stage": e.stage, "error": e.message}
            if skipped:
                res["skipped"] = ("a TFLite model has a fixed batch" if net.kind == "tflite" else
                                  "the node test fixes its batch (e.g. a Resize's sizes)") + \
                    "; onnx2fir --batch " + str(batch) + " refuses it"
            results.append((arch, res, None))
        r.note(f"{net.name} b{batch}: {e.stage} failed ({time.monotonic() - t0:.1f} s)")
        return results
    for arch in archs:
        t1 = time.monotonic()
        res = run_arch(r, net, batch, arch, fir, fir_path, data, info)
        r.note(f"{net.name} b{batch} {arch}: {res['stage'] or 'OK'} ({time.monotonic() - t1:.1f} s)")
        results.append((arch, res, info))
    return results


# ---- output -----------------------------------------------------------------

def fmt_int(v):
    return "" if v is None else f"{v:,}"


def fmt_pct(v):
    return "" if v is None else f"{100.0 * v:.2f}%"


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def status_text(c):
    if c.get("skipped"):
        return "skipped: " + c["skipped"]
    if c["stage"] is None:
        return "OK"
    if c["stage"] == "functional":
        return "functional (see the last column)"
    return f"{c['stage']}: {c['error']}"


def write_outputs(r, cases, networks, archs, batches):
    nets = {}
    for net in networks:
        nets[net.name] = {"kind": net.kind, "model": r.clean(net.path) if net.path else "torchvision " + net.name}
    for c in cases:
        if c.get("fir"):
            nets[c["network"]].setdefault("fir", {})["b" + str(c["batch"])] = c["fir"]
    doc = {"format": "zoo-results", "version": 1, "architectures": archs, "batches": batches,
           "networks": nets, "cases": [{k: v for k, v in c.items() if k != "fir"} for c in cases]}
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    write_atomic(r.args.results, text)

    ok = sum(1 for c in cases if c["stage"] is None)
    skipped = sum(1 for c in cases if c.get("skipped"))
    cmdline = "python3 examples/zoo/run_zoo.py --jobs 2"
    chosen = []
    if [n.name for n in networks] != [n.name for n in all_networks()]:
        chosen.append("--networks " + ",".join(n.name for n in networks))
    if archs != ARCHS:
        chosen.append("--archs " + ",".join(archs))
    if batches != BATCHES:
        chosen.append("--batches " + ",".join(map(str, batches)))
    if chosen:
        cmdline += " " + " ".join(chosen)
    lines = [
        "# The network zoo through the whole chain",
        "",
        "Generated by `examples/zoo/run_zoo.py`: do not edit by hand. To regenerate, build",
        "the tools (`build/bin`) and run from the checkout:",
        "",
        "    " + cmdline,
        "",
        "It takes every network through onnx2fir (8 seeded random calibration inputs),",
        "gemini, irgen, asm, zebusim and `zebusim --functional --golden`, keeps every",
        "intermediate file and every tool's stderr in `out/zoo/` (`--out`), and writes",
        "this table and `results.json` beside it (same inputs, same files).",
        "`python3 examples/zoo/run_zoo.py --help` explains the options. The test suite",
        "checks the same matrix in-process (`ctest --test-dir build -R '^zoo'`: tests/zoo,",
        "`zoo` at batch 1, `zoo_heavy` at batch 4) and runs four real photos",
        "(`photo_input.py`, python3-skimage's samples) through the TFLite INT8 MobileNetV2",
        "(`zoo_photos`).",
        "",
        "Columns: **status** is OK (every stage passed, functional bit-exact) or the",
        "first stage that failed with the first line of its error; **cycles** are zebusim's",
        "(`--stats-json`); **bound** is max(MAC bound, DRAM bound) from `gemini --report`",
        "(the real MACs at the whole chip's peak; the weights, the network's inputs and",
        "outputs crossing DRAM once at every channel's bandwidth), and **x bound** the",
        "cycles over it; **util** is the real MACs over the whole chip's peak for those",
        "cycles (zebusim) and for gemini's predicted cycles (**gemini util**), so the two",
        "compare on one base, and **gemini/sim** is predicted over simulated cycles;",
        "**sim MACs** are the MACs zebusim's PE instructions count, **real MACs** the",
        "network's, summed by the script from the Frontend IR's shapes over the",
        "accelerator layers (conv2d `N*K*OH*OW*(C/groups)*kh*kw`, dense `N*K*C`), and",
        "**sim/real** their ratio; **functional** is `bit-exact` when every layer matched",
        "its golden activations (data movement done by transfers alone, having no",
        "compute instruction of its own, is checked through its readers) and every",
        "graph output equalled the quantized FIR",
        "interpreter's (host (cpu) layers run by the reference interpreter on the",
        "accelerator's outputs, named in brackets), else the first divergence.",
        "",
        f"{len(cases)} cases: {ok} OK, {skipped} skipped, {len(cases) - ok - skipped} failing.",
        "",
        "| network | arch | batch | status | cycles | bound | x bound | util | gemini util | gemini/sim | sim MACs | real MACs | sim/real | functional |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in cases:
        real = c.get("real_macs")
        ratio = f"{c['macs'] / real:.2f}" if c.get("macs") is not None and real else ""
        func = c.get("functional")
        if func is None:
            func = "not run" if c["stage"] != "functional" else ""
        if c.get("functional_note"):
            func += " (" + c["functional_note"] + ")"
        cycles, gcycles = c.get("cycles"), c.get("gemini_cycles")
        bounds = [b for b in (c.get("mac_bound"), c.get("dram_bound")) if b is not None]
        bound = max(bounds) if bounds else None
        xbound = f"{cycles / bound:.2f}" if cycles and bound else ""
        # The chip's peak MACs per cycle from the MAC bound gemini reports (real MACs / peak).
        peak = real / c["mac_bound"] if real and c.get("mac_bound") else None
        util = fmt_pct(real / (cycles * peak)) if cycles and peak else ""
        gutil = fmt_pct(real / (gcycles * peak)) if gcycles and peak else ""
        gratio = f"{gcycles / cycles:.3f}" if cycles and gcycles else ""
        row = [c["network"], c["arch"], str(c["batch"]), status_text(c), fmt_int(cycles), fmt_int(bound), xbound, util,
               gutil, gratio, fmt_int(c.get("macs")), fmt_int(real), ratio, func]
        lines.append("| " + " | ".join(cell(x) for x in row) + " |")
    lines.append("")
    notes = []
    for name, n in nets.items():
        if n["kind"] == "tflite" and any(c.get("skipped") for c in cases if c["network"] == name):
            notes.append(f"- `{name}`: " + next(c["error"] for c in cases if c["network"] == name and c.get("skipped")))
    if notes:
        lines += ["Skipped cases (onnx2fir's answer):", ""] + notes + [""]
    lines += ["Networks (Frontend IR at batch 1: layers, accelerator layers, real MACs, operations):", ""]
    for name, n in nets.items():
        f = (n.get("fir") or {}).get("b1") or next(iter((n.get("fir") or {}).values()), None)
        if not f:
            lines.append(f"- `{name}` ({n['kind']}): no Frontend IR")
            continue
        ops = ", ".join(f"{k} {v}" for k, v in sorted(f["operations"].items()))
        lines.append(f"- `{name}` ({n['kind']}): {f['layers']} layers, {f['npu_layers']} on the accelerator, "
                     f"{f['macs']:,} MACs; {ops}")
    lines.append("")
    write_atomic(r.args.readme, "\n".join(lines))


def write_atomic(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def choose(given, known, what):
    if given is None:
        return list(known)
    out = [g.strip() for g in given.split(",") if g.strip()]
    for g in out:
        if g not in known:
            sys.exit(f"run_zoo.py: unknown {what} '{g}' (known: {', '.join(map(str, known))})")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--networks", help="comma-separated network names (default: all; --list shows them)")
    p.add_argument("--archs", help="comma-separated architectures (default: zebu-1core,chip-64tops)")
    p.add_argument("--batches", help="comma-separated batch sizes (default: 1,4)")
    p.add_argument("--out", default=os.path.join(REPO, "out", "zoo"), help="directory of all intermediate files")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per stage (default 1800)")
    p.add_argument("--jobs", type=int, default=1, help="(network, batch) pairs run in parallel (default 1)")
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"), help="the built tools (default build/bin)")
    p.add_argument("--python", default="/usr/bin/python3", help="python with torch for the export (default /usr/bin/python3)")
    p.add_argument("--readme", default=os.path.join(HERE, "README.md"), help="the markdown table (default examples/zoo/README.md)")
    p.add_argument("--results", default=os.path.join(HERE, "results.json"), help="the JSON results (default examples/zoo/results.json)")
    p.add_argument("--list", action="store_true", help="list the networks and exit")
    a = p.parse_args()
    known = all_networks()
    if a.list:
        for n in known:
            print(f"{n.name}\t{n.kind}\t{n.path or ''}")
        return 0
    if a.jobs < 1 or a.timeout <= 0:
        sys.exit("run_zoo.py: --jobs must be at least 1 and --timeout positive")
    names = choose(a.networks, [n.name for n in known], "network")
    networks = [n for n in known if n.name in names]
    networks.sort(key=lambda n: names.index(n.name))
    # A preset name or an architecture file, as --arch of the tools takes.
    archs = [x.strip() for x in a.archs.split(",") if x.strip()] if a.archs else list(ARCHS)
    try:
        batches = [int(b) for b in (a.batches.split(",") if a.batches else BATCHES)]
    except ValueError:
        sys.exit("run_zoo.py: --batches takes comma-separated integers")
    if any(b < 1 for b in batches):
        sys.exit("run_zoo.py: batches must be at least 1")
    for t in ("onnx2fir", "gemini", "irgen", "asm", "zebusim"):
        if not os.access(os.path.join(a.bin, t), os.X_OK):
            sys.exit(f"run_zoo.py: {os.path.join(a.bin, t)}: not found (build the tools or give --bin)")
    os.makedirs(a.out, exist_ok=True)
    r = Runner(a)
    t0 = time.monotonic()
    r.note(f"run_zoo: {len(networks)} networks x {len(archs)} archs x {len(batches)} batches, --jobs {a.jobs}")
    units = [(net, b) for net in networks for b in batches]
    found = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futures = {ex.submit(run_network_batch, r, net, b, archs): (net.name, b) for net, b in units}
        for f in concurrent.futures.as_completed(futures):
            found[futures[f]] = f.result()
    cases = []
    for net in networks:
        for arch in archs:
            for b in batches:
                for ar, res, info in found[(net.name, b)]:
                    if ar != arch:
                        continue
                    c = {"network": net.name, "arch": arch, "batch": b, "fir": info,
                         "real_macs": info["macs"] if info else None}
                    c.update(res)
                    cases.append(c)
    write_outputs(r, cases, networks, archs, batches)
    r.note(f"run_zoo: {len(cases)} cases in {time.monotonic() - t0:.1f} s; wrote {a.readme} and {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
