#!/usr/bin/env python3
"""The README walk-through's excerpts, from a real run of its commands.

Runs the walk-through (examples/tiny_resnet on chip-64tops) with the built
tools and renders each excerpt between `<!-- excerpt: NAME -->` and
`<!-- /excerpt -->` in README.md from the files they wrote.
  scripts/readme_excerpts.py [--bin build/bin] --write   # regenerate README.md
  scripts/readme_excerpts.py [--bin build/bin] --check   # exit 1 when README.md differs (a test runs this)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def j(v):
    return json.dumps(v)


def short(x):
    """Floats to four significant digits, as an excerpt shows them."""
    if isinstance(x, float):
        return float(f"{x:.4g}") if abs(x) < 1000 else round(x, 1)
    return x


def run_walkthrough(b, d):
    def sh(*args):
        subprocess.run(args, cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    arch = ["--arch", "chip-64tops"]
    sh(f"{b}/onnx2fir", os.path.join(HERE, "examples/tiny_resnet/tiny_resnet.onnx"), "--calib-random", "8",
       "--data-dir", "data", "-o", "t.fir.json", "--quiet")
    sh(f"{b}/gemini", "t.fir.json", *arch, "--no-progress", "-o", "t.map.json")
    sh(f"{b}/irgen", "t.fir.json", "t.map.json", *arch, "-o", "t.sir.json")
    sh(f"{b}/asm", "t.sir.json", "--fir", "t.fir.json", *arch, "-o", "t.asm")
    sh(f"{b}/zebusim", "t.asm", *arch, "-o", "t.trace")


def excerpts(d):
    out = {}
    fir = json.load(open(os.path.join(d, "t.fir.json")))
    c = fir["Conv_0"]
    q = c["quant_info"]
    files = c["file_list"]
    out["fir"] = (
        f'"Conv_0": {{"layer_index": {c["layer_index"]}, "operation": {j(c["operation"])}, "device": {j(c["device"])},\n'
        f'  "input_shape": {j(c["input_shape"])}, "output_shape": {j(c["output_shape"])},\n'
        f'  "quant_info": {{"input_scale1": {short(q["input_scale1"])}, "output_scale": {short(q["output_scale"])}, ...}},\n'
        f'  "previous_layer": {j(c["previous_layer"])}, "next_layer": {j(c["next_layer"])},\n'
        f'  "file_list": {{"k": {j(files["k"])}, "b": {j(files["b"])}, ...}}, ...}}')
    m = json.load(open(os.path.join(d, "t.map.json")))
    ml = next(l for s in m["segments"] for l in s["layers"] if l["layer"] == "Conv_0")
    out["mapping"] = (f'{{"layer": {j(ml["layer"])}, "cores": {j(ml["cores"])},\n'
                      f' "partition": {j(ml["partition"])}, "dram": {j(ml["dram"])}}}')
    keys = ["SPHI", "SPWI", "STaddr", "SWaddr", "DTaddr", "Prev_Insts", "Next_Insts"]

    def first_conv(path):
        for line in open(os.path.join(d, path)):
            v = json.loads(line)
            if v[0] == "pe_conv":
                return v
    a = first_conv("t.asm")
    where = ", ".join(f'"{k}": {j(a[1][k])}' for k in ["slyr", "wkl", "tile", "core"])
    params = ", ".join(f'"{k}": {j(a[2][k])}' for k in keys)
    out["asm"] = f'["pe_conv", {{{where}, ...}},\n {{{params}}}]'
    t = first_conv("t.trace")
    timing = ", ".join(f'"{k}": {j(short(t[2][k]))}' for k in ["inst_idx", "time", "issue", "energy", "bytes", "ops"])
    out["trace"] = f'["pe_conv", {{...}}, {{{timing}}}, {{...}}]'
    return out


def render(readme, ex):
    def block(m):
        name = m.group(1)
        if name not in ex:
            sys.exit(f"readme_excerpts: README.md names an unknown excerpt '{name}'")
        body = "\n".join("    " + line for line in ex[name].split("\n"))
        return f"<!-- excerpt: {name} -->\n\n{body}\n\n<!-- /excerpt -->"
    return re.sub(r"<!-- excerpt: (\w+) -->\n.*?<!-- /excerpt -->", block, readme, flags=re.S)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(HERE, "build", "bin"))
    p.add_argument("--readme", default=os.path.join(HERE, "README.md"))
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    a = p.parse_args()
    path = a.readme
    readme = open(path).read()
    with tempfile.TemporaryDirectory() as d:
        run_walkthrough(os.path.abspath(a.bin), d)
        ex = excerpts(d)
    new = render(readme, ex)
    found = set(re.findall(r"<!-- excerpt: (\w+) -->", readme))
    if found != set(ex):
        sys.exit(f"readme_excerpts: README.md has excerpts {sorted(found)}, expected {sorted(ex)}")
    if a.check:
        if new != readme:
            import difflib
            sys.stdout.writelines(difflib.unified_diff(readme.splitlines(True), new.splitlines(True), "README.md",
                                                       "README.md (from the run)"))
            print("readme_excerpts: README.md's excerpts are stale: run scripts/readme_excerpts.py --write", file=sys.stderr)
            return 1
        print(f"readme_excerpts: {len(ex)} excerpts match the run")
        return 0
    if new != readme:
        open(path, "w").write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
