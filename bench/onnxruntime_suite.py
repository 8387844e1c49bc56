#!/usr/bin/env python3
"""onnxruntime's side of `kiln bench --onnx DIR`: each .onnx model in DIR on ONNX's dummy
input (arange(n) / n in the input's shape, named dims 1, as `kiln bench --onnx` feeds it),
the median of --reps runs after 3 warm-up runs, wall clock, one JSON line per model in
kiln bench's format ({"name", "impl": "onnxruntime", "target": "cpu", "ms", "runs",
"compile_s"}). Same names as kiln's lines (the file's stem). Needs numpy and onnxruntime
(pip install onnxruntime); not run in CI.

  python3 bench/onnxruntime_suite.py DIR [--threads N] [--reps N] [--filter REGEX]
"""
import argparse
import json
import os
import re
import statistics
import time

import numpy as np
import onnxruntime as ort


def dummy(shape):
    dims = [d if isinstance(d, int) else 1 for d in shape]
    n = int(np.prod(dims)) if dims else 1
    return (np.arange(n).reshape(dims) / n).astype(np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="intra-op threads (default: all cores)")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--filter", default="")
    a = p.parse_args()
    for f in sorted(os.listdir(a.dir)):
        if not f.endswith(".onnx") or not re.search(a.filter, f[:-5]):
            continue
        t0 = time.perf_counter()
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        s = ort.InferenceSession(os.path.join(a.dir, f), so, providers=["CPUExecutionProvider"])
        feeds = {i.name: dummy(i.shape) for i in s.get_inputs()}
        s.run(None, feeds)
        compile_s = time.perf_counter() - t0
        for _ in range(3):
            s.run(None, feeds)
        ms = []
        for _ in range(a.reps):
            t = time.perf_counter()
            s.run(None, feeds)
            ms.append((time.perf_counter() - t) * 1e3)
        print(json.dumps({"name": f[:-5], "impl": "onnxruntime", "target": "cpu", "ms": round(statistics.median(ms), 4),
                          "compile_s": round(compile_s, 2), "runs": len(ms), "threads": a.threads}), flush=True)


if __name__ == "__main__":
    main()
