#!/usr/bin/env python3
"""Where zebusim's pe_conv durations differ from the ZeBu reference traces.

Runs zebusim on every reference program (gemini-ir/asm under the reference
directory), pairs each pe_conv with the reference trace's, and prints the
error summed per program and images per tile, then per tile shape (images N,
outputs K, inputs C, output map, kernel, stride, MTK0, MTC0, mini tile,
weights left in L2). Used for issue 19 (the PE model's batch dimension);
formats/ISA_Format.md section 9.4 quotes its output.

    scripts/pe_conv_table.py [--zebusim build/bin/zebusim] [--reference ../shared/reference] [--rows]
"""
import argparse, ast, os, re, subprocess, sys, tempfile
from collections import OrderedDict

ENUM = re.compile(r"<[A-Za-z0-9_]+\.([A-Za-z0-9_]+): (-?\d+)>")


def instructions(path):
    """(mnemonic, params, timing) of each line of a legacy-syntax program or trace."""
    for line in open(path):
        m = re.match(r"\s*\[(\w+),", line)
        if not m:
            continue
        v = ast.literal_eval("['" + m.group(1) + "'," + ENUM.sub(lambda e: e.group(2), line.strip()[m.end():]))
        yield v[0], v[-1], (v[2] if len(v) == 4 else {})


def pe_convs(path):
    cfg, in_l2, out = {}, {}, []
    for op, p, timing in instructions(path):
        if op.startswith("pe_cfg"):
            cfg[op] = p
        elif op == "lw_mov":
            in_l2[p["DTaddr"]] = p["SS"] == 0
        elif op == "pe_conv":
            tp, pm = cfg["pe_cfg_tp"], cfg["pe_cfg_pm"]
            n, k, c, h, w = tp["Tile"]
            shape = (n, k, c, "%dx%d" % (h, w), "k%d" % tp["KERNEL"][0], "s%d" % pm["STRIDE"][0], tp["MTK0"], tp["MTC0"],
                     "%dx%d" % (tp["MTI"][0] + 1, tp["MTI"][1] + 1), int(in_l2.get(p["SWaddr"], False)))
            out.append((shape, timing["time"][1] - timing["time"][0]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--zebusim", default=os.path.join(here, "..", "build", "bin", "zebusim"))
    ap.add_argument("--reference", default=os.environ.get("CCT_REFERENCE_DIR", os.path.join(here, "..", "..", "shared", "reference")))
    ap.add_argument("--rows", action="store_true", help="also print one line per tile shape and program")
    args = ap.parse_args()
    asm_dir = os.path.join(args.reference, "gemini-ir", "asm")
    per_n, per_shape = OrderedDict(), OrderedDict()
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(asm_dir)):
            program = os.path.join(asm_dir, name)
            ref = os.path.join(args.reference, "gemini-ir", "trace", name.replace("quanti_", "quantized_").replace("_asm.txt", "_sim.txt"))
            ours = os.path.join(tmp, "ours.txt")
            subprocess.run([args.zebusim, program, "--arch", "zebu-1core", "--legacy", "-o", ours], check=True)
            net = name.split(".")[0].replace("int8_", "") + "_" + name.split("_")[3]
            a, b = pe_convs(ours), pe_convs(ref)
            assert [s for s, _ in a] == [s for s, _ in b], name
            for (shape, o), (_, r) in zip(a, b):
                for key, table in (((net, shape[0]), per_n), ((net,) + shape, per_shape)):
                    e = table.setdefault(key, [0, 0, 0, set()])
                    e[0] += 1; e[1] += r; e[2] += o; e[3].add(r)
    print("%-14s %3s %6s %12s %12s %8s" % ("program", "N", "tiles", "reference", "zebusim", "error"))
    for (net, n), (cnt, r, o, _) in per_n.items():
        print("%-14s %3d %6d %12d %12d %+7.2f%%" % (net, n, cnt, r, o, 100.0 * (o - r) / r))
    if args.rows:
        print("\n%-14s %3s %5s %5s %7s %3s %3s %4s %4s %5s %3s %6s %9s %9s %8s" % (
            "program", "N", "K", "C", "map", "ker", "str", "MTK0", "MTC0", "mini", "L2", "tiles", "reference", "zebusim", "error"))
        for key, (cnt, r, o, refs) in per_shape.items():
            print("%-14s %3d %5d %5d %7s %3s %3s %4d %4d %5s %3d %6d %9d %9d %+7.2f%%%s" % (
                *key, cnt, r // cnt, o // cnt, 100.0 * (o - r) / r, "" if len(refs) == 1 else "  (reference durations vary)"))


if __name__ == "__main__":
    sys.exit(main())
