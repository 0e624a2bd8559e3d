#!/usr/bin/env python3
"""Write the single-core mapping of a Frontend IR: every accelerator layer on
core 0, one layer per segment, in layer_index order (the custom-scheduler
example of formats/Mapping_Format.md; needs only the standard library).

    single_core_mapping.py MODEL.fir.json [--arch zebu-1core] [-o MAPPING.json]
"""
import argparse, json, os, sys

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fir", help="Frontend IR JSON ('-' = stdin)")
    ap.add_argument("--arch", default="zebu-1core", help="architecture name recorded in the mapping")
    ap.add_argument("-o", "--output", default="-", help="output file ('-' = stdout)")
    args = ap.parse_args()
    fir = json.load(sys.stdin if args.fir == "-" else open(args.fir))
    layers = sorted(fir.values(), key=lambda l: l["layer_index"])
    npu = [l for l in layers if l.get("device", "npu") == "npu"]
    name = os.path.basename(args.fir).removesuffix(".json").removesuffix(".fir")
    header = {"format": "cct-mapping", "version": 1, "arch": args.arch, "fir": name,
              "batch": layers[0]["output_shape"][0][0]}
    segments = [{"layers": [{"layer": l["name"], "cores": [0]}]} for l in npu]
    # One segment per line keeps the file easy to read and to diff.
    text = json.dumps(header)[:-1] + ', "segments": [\n'
    text += ",\n".join("  " + json.dumps(s) for s in segments) + "\n]}\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)

if __name__ == "__main__":
    main()
