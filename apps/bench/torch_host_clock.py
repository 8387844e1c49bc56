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
p.add_argument("--sweep", action="store_true",
               help="the convolutions of bench/sweep.txt (torch eager), instead of the seed")
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


def sweep_convs():
    """bench/sweep.txt's convolutions, named and sized as torch_suite.py --sweep has them."""
    import os
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "sweep.txt")
    for line in open(spec):
        f = line.split()
        if len(f) < 9 or f[0] != "conv":
            continue
        cin, cout, kernel, stride, pad, groups, hw = (int(v) for v in f[2:9])
        for nb in (1, 8):
            name = f"conv_{f[1]}_n{nb}"
            if args.filter and not re.search(args.filter, name):
                continue
            x = torch.randn(nb, cin, hw, hw, device="cuda")
            w = torch.randn(cout, cin // groups, kernel, kernel, device="cuda") * 0.05
            fn = lambda x, w=w, s=stride, p_=pad, g=groups: torch.nn.functional.conv2d(x, w, None, s, p_, 1, g)
            print(json.dumps({"name": name, "impl": "torch-eager-hostclock", "target": target,
                              "ms": round(timed(fn, x), 4)}), flush=True)


torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
if args.sweep:
    with torch.no_grad():
        sweep_convs()
    raise SystemExit(0)

N = 1 << 26
name = f"seed_fwd_n{N}"
if not args.filter or re.search(args.filter, name):
    x = torch.rand(N, device="cuda") * 6 - 3
    for impl, f in (("torch-eager-hostclock", seed), ("torch-compile-hostclock", torch.compile(seed))):
        ms = timed(f, x)
        print(json.dumps({"name": name, "impl": impl, "target": target, "ms": round(ms, 4),
                          "GBps": round(8 * N / ms / 1e6, 1)}), flush=True)
