"""PyTorch side of kiln's benchmark suite: eager and torch.compile on the same workloads.

Run on a machine with PyTorch (the GPU machine has it); not run in CI:
    python3 bench/torch_suite.py --device cuda            # all workloads
    python3 bench/torch_suite.py --device cpu --filter seed
    python3 bench/torch_suite.py --device cpu --sweep --no-compile   # bench/sweep.txt
The workloads are `kiln bench`'s (tools/cli/bench.cpp), with the same names and sizes
(divided by 8 on a CPU); docs/benchmarks.md lists them. --bf16 adds the GPU rows that
kiln bench --target host-cuda has in bf16: the MLP, attention, and the train step under
bf16 autocast.
Prints one JSON object per line and implementation, in the format of `kiln bench`:
    {"name": ..., "impl": "torch-eager" | "torch-compile", "target": ..., "ms": ..., "GBps"|"TFLOPs": ...}
Times are medians of --reps runs after warm-up (CUDA events on the GPU, wall clock on the CPU).
fp32 matmuls run without TF32 so that fp32 means fp32 on both sides.
"""
import argparse, json, math, re, time

import torch

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--filter", default="")
p.add_argument("--reps", type=int, default=30)
p.add_argument("--no-compile", action="store_true")
p.add_argument("--bf16", action="store_true", help="also the bf16 MLP, attention and autocast train step (GPU only)")
p.add_argument("--sweep", action="store_true",
               help="the shape sweep of bench/sweep.txt instead of the suite (kiln bench --sweep runs the same)")
p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (CPU; 0: PyTorch's default)")
args = p.parse_args()
dev = args.device
gpu = dev.startswith("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
target = torch.cuda.get_device_name() if gpu else "cpu"
if args.threads:
    torch.set_num_threads(args.threads)


def timed(fn, inputs):
    for _ in range(5):
        fn(*inputs)
    ts = []
    for _ in range(args.reps):
        if gpu:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(*inputs); e.record(); torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter(); fn(*inputs); ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def run(name, fn, inputs, bytes_=None, flops=None):
    if args.filter and not re.search(args.filter, name):
        return
    impls = [("torch-eager", fn)] + ([] if args.no_compile else [("torch-compile", torch.compile(fn))])
    for impl, f in impls:
        ms = timed(f, inputs)
        r = {"name": name, "impl": impl, "target": target, "ms": round(ms, 4)}
        if bytes_:
            r["GBps"] = round(bytes_ / ms / 1e6, 1)
        if flops:
            r["TFLOPs"] = round(flops / ms / 1e9, 2)
        print(json.dumps(r), flush=True)


def seed(x):
    return torch.exp(torch.sin(x)) + torch.log(torch.abs(torch.cos(x)))


def seed_grad(x):
    y = seed(x)
    (g,) = torch.autograd.grad(y.sum(), x)
    return g


def sweep():
    """bench/sweep.txt: the rows kiln bench --sweep has, with the same names."""
    import os
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sweep.txt")
    for line in open(spec):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "gemm":
            name, k, n = f[1], int(f[2]), int(f[3])
            for m in (1, 7, 32, 100, 1000):
                a, b = torch.randn(m, k, device=dev), torch.randn(k, n, device=dev) / math.sqrt(k)
                run(f"gemm_{name}_m{m}_k{k}_n{n}", torch.matmul, (a, b), flops=2 * m * k * n)
        elif f[0] == "conv":
            name = f[1]
            cin, cout, kernel, stride, pad, groups, hw = (int(v) for v in f[2:9])
            out = (hw + 2 * pad - kernel) // stride + 1
            for nb in (1, 8):
                x = torch.randn(nb, cin, hw, hw, device=dev)
                w = torch.randn(cout, cin // groups, kernel, kernel, device=dev) * 0.05
                fn = lambda x, w, s=stride, p_=pad, g=groups: torch.nn.functional.conv2d(x, w, None, s, p_, 1, g)
                run(f"conv_{name}_n{nb}", fn, (x, w), flops=2 * nb * cout * out * out * (cin // groups) * kernel * kernel)
        else:
            raise SystemExit(f"bench/sweep.txt: unknown kind {f[0]!r}")
    print(json.dumps({"torch": torch.__version__, "target": target, "threads": torch.get_num_threads()}))


if args.sweep:
    with torch.no_grad():
        sweep()
    raise SystemExit(0)

scale = 1 if gpu else 8  # smaller problems on a CPU, as kiln bench
N = (1 << 26) // scale
x = torch.rand(N, device=dev) * 6 - 3
run(f"seed_fwd_n{N}", seed, (x,), bytes_=8 * N)
run(f"seed_fwd_bwd_n{N}", seed_grad, (x.clone().requires_grad_(),), bytes_=8 * N)

R, C = 8192 // scale, 4096
a = torch.randn(R, C, device=dev)
run(f"softmax_{R}x{C}", lambda t: torch.softmax(t, -1), (a,), bytes_=2 * a.numel() * 4)
w, b = torch.randn(C, device=dev), torch.randn(C, device=dev)
run(f"layernorm_{R}x{C}", lambda t, w, b: torch.nn.functional.layer_norm(t, (C,), w, b), (a, w, b), bytes_=2 * a.numel() * 4)

M, K, H = 8192 // scale, 1024, 4096
xm = torch.randn(M, K, device=dev)
W1, b1 = torch.randn(K, H, device=dev) / 32, torch.randn(H, device=dev)
W2, b2 = torch.randn(H, K, device=dev) / 64, torch.randn(K, device=dev)


def mlp(x, W1, b1, W2, b2):
    return torch.nn.functional.gelu(x @ W1 + b1) @ W2 + b2


run(f"mlp_f32_{M}x{K}x{H}", mlp, (xm, W1, b1, W2, b2), flops=4 * M * K * H)
if gpu and args.bf16:
    run(f"mlp_bf16_{M}x{K}x{H}", mlp, tuple(t.bfloat16() for t in (xm, W1, b1, W2, b2)), flops=4 * M * K * H)

B, NH, S, D = 8 // min(scale, 8) or 1, 16, 1024 // scale, 64
q, k, v = (torch.randn(B, NH, S, D, device=dev) for _ in range(3))


def attn(q, k, v):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    mask = torch.triu(torch.ones(S, S, device=q.device, dtype=torch.bool), 1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v


run(f"attn_causal_f32_b{B}h{NH}s{S}d{D}", attn, (q, k, v), flops=4 * B * NH * S * S * D)
if gpu and args.bf16:
    run(f"attn_causal_bf16_b{B}h{NH}s{S}d{D}", attn, (q.bfloat16(), k.bfloat16(), v.bfloat16()), flops=4 * B * NH * S * S * D)

NB = 32 // scale
xc = torch.randn(NB, 64, 56, 56, device=dev)
wc, bc = torch.randn(64, 64, 3, 3, device=dev) / 24, torch.randn(64, device=dev)
run(f"conv3x3_bias_relu_n{NB}c64hw56", lambda x, w, b: torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1)),
    (xc, wc, bc), flops=2 * NB * 64 * 64 * 9 * 56 * 56)

params = [t.clone().requires_grad_() for t in (W1, b1, W2, b2)]
yt = torch.randn(M, K, device=dev)


def train_step(x, y):
    out = mlp(x, *params)
    loss = ((out - y) ** 2).mean()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p_, g in zip(params, grads):
            p_.sub_(1e-3 * g)
    return loss


run(f"mlp_train_step_f32_{M}x{K}x{H}", train_step, (xm, yt), flops=12 * M * K * H)
if gpu and args.bf16:
    def train_step_autocast(x, y):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            return train_step(x, y)
    run(f"mlp_train_step_bf16_autocast_{M}x{K}x{H}", train_step_autocast, (xm, yt), flops=12 * M * K * H)
print(json.dumps({"torch": torch.__version__, "target": target}))
