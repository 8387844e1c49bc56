"""PyTorch side of `kiln bench`, timed the way kiln times itself: a host clock around
call + torch.cuda.synchronize(), median of --reps runs after warm-up.

bench/torch_suite.py times PyTorch with CUDA events, which leave out host-side
launch overhead that kiln's host-clock numbers include; run both in the same command as
`kiln bench` and compare like with like. Prints the same JSON lines (impl torch-*-hostclock).
"""
import argparse, json, re, time

import torch

p = argparse.ArgumentParser()
p.add_argument("--filter", default="")
p.add_argument("--reps", type=int, default=30)
args = p.parse_args()
target = torch.cuda.get_device_name()


def timed(fn, x):
    for _ in range(5):
        fn(x)
    torch.cuda.synchronize()
    ts = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def seed(x):
    return torch.exp(torch.sin(x)) + torch.log(torch.abs(torch.cos(x)))


N = 1 << 26
name = f"seed_fwd_n{N}"
if not args.filter or re.search(args.filter, name):
    x = torch.rand(N, device="cuda") * 6 - 3
    for impl, f in (("torch-eager-hostclock", seed), ("torch-compile-hostclock", torch.compile(seed))):
        ms = timed(f, x)
        print(json.dumps({"name": name, "impl": impl, "target": target, "ms": round(ms, 4),
                          "GBps": round(8 * N / ms / 1e6, 1)}), flush=True)
