#!/usr/bin/env python3
"""Adds PyTorch's results to kiln_fuzz's program files (the golden data of tests/fuzz).

    make_golden.py FILE_OR_DIR...

Each file is a program in the text form of tests/fuzz/program.h with its loss weights
(`kiln_fuzz --export DIR` writes them). This script runs the program in PyTorch on the
CPU, in the program's own dtypes, and rewrites the file with PyTorch's outputs, the
gradient of the loss sum_k sum(output_k * weight_k) w.r.t. every float data input, or the
error PyTorch raised. Run outside CI: it needs PyTorch (`pip install torch numpy`).
"""
import math
import pathlib
import sys

import torch
import torch.nn.functional as F

DTYPES = {
    "bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
    "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
}
NAMES = {v: k for k, v in DTYPES.items()}


def parse_number(s):
    if s in ("nan", "inf", "-inf"):
        return float(s)
    if "x" in s or "p" in s:
        return float.fromhex(s)
    return float(s) if any(c in s for c in ".e") else int(s)


def parse_tensor(words):
    """'f32 [2,3] [index=N] : v...' -> (tensor, index_limit)."""
    dtype = DTYPES[words[0]]
    shape = [int(d) for d in words[1].strip("[]").split(",") if d]
    rest = words[2:]
    index = 0
    if rest[0].startswith("index="):
        index = int(rest[0][6:])
        rest = rest[1:]
    assert rest[0] == ":", words
    values = [parse_number(v) for v in rest[1:]]
    t = torch.tensor([float(v) for v in values], dtype=torch.float64).to(dtype).reshape(shape)
    return t, index


def number(c):
    """A C++ double as the fuzzer's Python number: integral finite values are ints."""
    return int(c) if math.isfinite(c) and c == math.trunc(c) else c


def scalar_tensor(c, like):
    # kiln's maximum(x, c) takes a number: a 0-d tensor of the result's dtype acts alike.
    return torch.tensor(number(c), dtype=torch.result_type(like, number(c)))


def apply_op(name, a, ints, reals, text):
    x = a[0]
    unary = {
        "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "exp": torch.exp, "log": torch.log,
        "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "asinh": torch.asinh,
        "acosh": torch.acosh, "atanh": torch.atanh,
        "abs": torch.abs, "neg": torch.neg, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
        "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu, "erf": torch.erf,
        "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "silu": F.silu,
        "softplus": F.softplus, "logical_not": torch.logical_not,
    }
    if name in unary:
        return unary[name](x)
    binary = {
        "add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
        "div": lambda p, q: p / q, "pow": lambda p, q: p ** q,
        "eq": lambda p, q: p == q, "ne": lambda p, q: p != q, "lt": lambda p, q: p < q,
        "le": lambda p, q: p <= q, "gt": lambda p, q: p > q, "ge": lambda p, q: p >= q,
    }
    tensor_only = {
        "maximum": torch.maximum, "minimum": torch.minimum,
        "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    }
    if name in binary or name in tensor_only:
        if len(a) == 2:
            p, q = a
        elif name in binary:
            p, q = (number(reals[0]), x) if ints[0] else (x, number(reals[0]))
        else:
            p, q = (scalar_tensor(reals[0], x), x) if ints[0] else (x, scalar_tensor(reals[0], x))
        return binary[name](p, q) if name in binary else tensor_only[name](p, q)
    if name in ("sum", "mean", "max", "min", "prod"):
        keepdim, axes = bool(ints[0]), list(ints[1:])
        if not axes:
            if name in ("max", "min"):
                return torch.max(x) if name == "max" else torch.min(x)
            axes = list(range(x.dim()))
            if not axes:  # 0-d
                return {"sum": torch.sum, "mean": torch.mean, "prod": torch.prod}[name](x)
        if name == "sum":
            return torch.sum(x, dim=axes, keepdim=keepdim)
        if name == "mean":
            return torch.mean(x, dim=axes, keepdim=keepdim)
        if name == "max":
            return torch.amax(x, dim=axes, keepdim=keepdim)
        if name == "min":
            return torch.amin(x, dim=axes, keepdim=keepdim)
        y = x  # torch.prod takes one dim at a time
        for d in sorted((d % x.dim() for d in axes), reverse=True):
            y = torch.prod(y, dim=d, keepdim=keepdim)
        return y
    if name in ("var", "std_dev"):
        fn = torch.var if name == "var" else torch.std
        axes = list(ints[2:]) or None
        return fn(x, dim=axes, correction=ints[0], keepdim=bool(ints[1]))
    if name == "gelu":
        return F.gelu(x, approximate=text)
    if name == "leaky_relu":
        return F.leaky_relu(x, reals[0])
    if name == "clamp":
        lo = number(reals[0]) if ints[0] else None
        hi = number(reals[1]) if ints[1] else None
        return torch.clamp(x, lo, hi)
    if name == "cast":
        return x.to(DTYPES[text])
    if name == "where":
        return torch.where(a[0], a[1], a[2])
    if name == "argmax":
        return torch.argmax(x, dim=ints[0], keepdim=bool(ints[1]))
    if name == "softmax":
        return torch.softmax(x, ints[0])
    if name == "log_softmax":
        return torch.log_softmax(x, ints[0])
    if name == "layer_norm":
        shape = list(x.shape[x.dim() - ints[0]:])
        return F.layer_norm(x, shape, a[1] if len(a) > 1 else None, a[2] if len(a) > 2 else None, reals[0])
    if name == "rms_norm":
        shape = list(x.shape[x.dim() - ints[0]:])
        return F.rms_norm(x, shape, a[1] if len(a) > 1 else None, reals[0])
    if name == "reshape":
        return x.reshape(list(ints))
    if name == "permute":
        return x.permute(list(ints))
    if name == "transpose":
        return x.transpose(ints[0], ints[1])
    if name == "expand":
        return x.expand(list(ints))
    if name == "unsqueeze":
        return x.unsqueeze(ints[0])
    if name == "squeeze":
        return x.squeeze(ints[0])
    if name == "slice":
        index = [slice(None)] * x.dim()
        index[ints[0]] = slice(ints[1], ints[2], ints[3])
        return x[tuple(index)]
    if name == "concat":
        return torch.cat(a, ints[0])
    if name == "stack":
        return torch.stack(a, ints[0])
    if name == "split":
        return torch.split(x, ints[0], ints[1])[ints[2]]
    if name == "pad":
        value = reals[0] if x.dtype.is_floating_point else number(reals[0])
        return F.pad(x, list(ints), value=value)
    if name == "matmul":
        return torch.matmul(a[0], a[1])
    if name == "linear":
        return F.linear(a[0], a[1], a[2] if len(a) > 2 else None)
    if name == "conv_transpose2d":
        return F.conv_transpose2d(a[0], a[1], a[2] if len(a) > 2 else None, ints[0], ints[1], ints[2], ints[4], ints[3])
    if name == "conv2d":
        return F.conv2d(a[0], a[1], a[2] if len(a) > 2 else None, ints[0], ints[1], ints[2], ints[3])
    if name == "max_pool2d":
        return F.max_pool2d(x, ints[0], ints[1] or None, ints[2], ints[3], bool(ints[4]))
    if name == "avg_pool2d":
        return F.avg_pool2d(x, ints[0], ints[1] or None, ints[2], bool(ints[3]), bool(ints[4]))
    if name == "adaptive_avg_pool2d":
        return F.adaptive_avg_pool2d(x, (ints[0], ints[1]))
    if name == "gather":
        return torch.gather(a[0], ints[0], a[1])
    if name == "index_select":
        return torch.index_select(a[0], ints[0], a[1])
    if name == "embedding":  # kiln: embedding(weight, indices)
        return F.embedding(a[1], a[0])
    if name == "one_hot":
        return F.one_hot(x, ints[0])
    if name == "tril":
        return torch.tril(x, ints[0])
    if name == "triu":
        return torch.triu(x, ints[0])
    if name == "cross_entropy":
        return F.cross_entropy(a[0], a[1], reduction=text)
    if name == "mse_loss":
        return F.mse_loss(a[0], a[1])
    if name == "dropout":
        if ints[1] and reals[0] > 0:
            raise ValueError("dropout in training draws from kiln's generator; not golden data")
        return x
    raise ValueError(f"unknown op {name}")


def parse(lines):
    inputs, ops, outputs, weights = [], [], [], []
    for line in lines:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "input":
            inputs.append(parse_tensor(words[1:]))
        elif words[0] == "op":
            op = {"name": words[1], "args": [], "ints": [], "reals": [], "text": ""}
            section = "args"
            it = iter(words[2:])
            for w in it:
                if w == "|":
                    section = next(it)
                elif section == "args":
                    op["args"].append(int(w))
                elif section == "ints":
                    op["ints"].append(int(w))
                elif section == "reals":
                    op["reals"].append(float(parse_number(w)))
                elif section == "text":
                    op["text"] = w
            ops.append(op)
        elif words[0] == "output":
            outputs = [int(w) for w in words[1:]]
        elif words[0] == "weight":
            weights.append(parse_tensor(words[1:])[0])
    return inputs, ops, outputs, weights


def fmt(v, dtype):
    if not dtype.is_floating_point:
        return str(int(v))
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == math.trunc(v) and abs(v) < 1e15 and not (v == 0 and math.copysign(1, v) < 0):
        return str(int(v))
    return float(v).hex()


def tensor_line(head, t):
    t = t.detach()
    values = t.to(torch.float64).reshape(-1).tolist() if t.dtype != torch.bool else t.reshape(-1).int().tolist()
    shape = ",".join(str(d) for d in t.shape)
    return f"{head} {NAMES[t.dtype]} [{shape}] : " + " ".join(fmt(v, t.dtype) for v in values)


def run(lines):
    inputs, ops, outputs, weights = parse(lines)
    leaves = [t.clone().requires_grad_(t.dtype.is_floating_point and index == 0) for t, index in inputs]
    values = list(leaves)
    for op in ops:
        values.append(apply_op(op["name"], [values[i] for i in op["args"]], op["ints"], op["reals"], op["text"]))
    outs = [values[i] for i in outputs]
    result = [tensor_line("torch output", o) for o in outs]
    argnums = [leaf for leaf in leaves if leaf.requires_grad]
    floats = [o for o in outs if o.dtype.is_floating_point]
    if argnums and floats:
        assert len(weights) == len(floats), "one loss weight per float output"
        loss = sum(torch.sum(o * w) for o, w in zip(floats, weights))
        if loss.requires_grad:
            grads = torch.autograd.grad(loss, argnums, allow_unused=True)
        else:
            grads = [None] * len(argnums)
        for leaf, g in zip(argnums, grads):
            result.append(tensor_line("torch grad", g if g is not None else torch.zeros_like(leaf)))
    return result


def main(paths):
    files = []
    for p in map(pathlib.Path, paths):
        files += sorted(p.glob("*.txt")) if p.is_dir() else [p]
    torch.use_deterministic_algorithms(True)
    for f in files:
        lines = [l for l in f.read_text().splitlines() if not l.startswith("torch ")]
        try:
            result = run(lines)
        except Exception as e:  # PyTorch rejects the program: kiln_fuzz reports it
            result = ["torch error : " + " ".join(f"{type(e).__name__}: {e}".split())]
        f.write_text("\n".join(lines + result) + "\n")
    print(f"wrote PyTorch {torch.__version__} results into {len(files)} files")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
