#!/usr/bin/env python3
"""Fill the test suite's model cache: export torchvision models once, before the tests.

  export_models.py --cache DIR [--jobs N] SPEC...

SPEC is NAME (batch 1, written to DIR/NAME.onnx) or NAME@BATCH (DIR/NAME-bBATCH.onnx),
the names tests/testing/testing.cpp's torchvision_onnx() reads. Models already in
DIR are kept. N worker processes (default: the CPU count) share one import of
torch, each export on one thread: the exports are CPU-bound and CI has two cores.
Each model is exported under DIR/FILE.lock (the lock the tests take when they
export a missing model themselves), written aside and renamed into place.
"""
import argparse
import fcntl
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "models"))


def cache_file(cache, spec):
    name, _, batch = spec.partition("@")
    return name, int(batch or 1), os.path.join(cache, name + (f"-b{batch}" if batch and batch != "1" else "") + ".onnx")


def export_one(job):
    cache, spec = job
    import torch
    import export_torchvision

    torch.set_num_threads(1)
    name, batch, path = cache_file(cache, spec)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            return f"{spec}: cached"
        start = time.monotonic()
        tmp = f"{path}.tmp{os.getpid()}"
        export_torchvision.export(name, tmp, batch=batch)
        os.replace(tmp, path)
        return f"{spec}: exported in {time.monotonic() - start:.1f} s"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("specs", nargs="+")
    a = p.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    todo = [(a.cache, s) for s in a.specs if not os.path.exists(cache_file(a.cache, s)[2])]
    if not todo:
        print(f"export_models.py: all {len(a.specs)} models are in {a.cache}")
        return
    try:
        import torch  # noqa: F401  (once, before the workers fork)
        import torchvision  # noqa: F401
    except ImportError:
        sys.exit("export_models.py: python3-torch and python3-torchvision are needed (scripts/setup.sh installs them)")
    with multiprocessing.get_context("fork").Pool(max(1, min(a.jobs, len(todo)))) as pool:
        for line in pool.imap_unordered(export_one, todo):
            print(line, flush=True)


if __name__ == "__main__":
    main()
