#!/usr/bin/env python3
"""Issue 6's bars from the JSON lines of one machine's runs.

    python3 apps/bench/bars.py kernels.jsonl [--models kiln_bench.jsonl [models.jsonl ...]]

kernels.jsonl: `kiln bench-kernels` (one run: every schedule of a generator timed in
the same interleaved rounds). Prints, per generator, manual, Kiln, Kiln-tuned and the best
of Halide's autoschedulers for the target (CPU: Adams2019, Li2018, Mullapudi2016; CUDA:
Anderson2021, Li2018, Mullapudi2016), the ratios the bars compare (higher is faster for
kiln), their geomeans, and which bars hold. A generator where no Halide autoscheduler
finished is left out of the comparisons with Halide, and said so.
--models: `kiln bench --scheduler both` and `kiln models --scheduler both --json`, one
or more files of one machine; the geomean of rules / Kiln over all their workloads.
"""
import argparse, json, math, sys
from collections import defaultdict

HALIDE = {"cpu": ["Adams2019", "Li2018", "Mullapudi2016"], "cuda": ["Anderson2021", "Li2018", "Mullapudi2016"]}


def rows(*paths):
    out = defaultdict(dict)
    for path in paths:
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                d = json.loads(line)
                out[(d["name"], d["target"])][d["impl"]] = d["ms"]
    return out


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def kernels(path):
    table = rows(path)
    vs_best, tuned_vs_best, tuned_vs_manual = [], [], []
    floor_kiln, floor_tuned, skipped = [], [], []
    print(f"{'generator':14s} {'target':6s} {'manual':>9s} {'Kiln':>9s} {'tuned':>9s} {'best Halide':>22s}"
          f" {'Kiln/best':>9s} {'tuned/best':>10s} {'tuned/manual':>12s}")
    for (name, target), r in table.items():
        kind = "cpu" if target == "cpu" else "cuda"
        halide = {k: r[k] for k in HALIDE[kind] if k in r}
        kiln, tuned, manual = r.get("Kiln"), r.get("Kiln-tuned"), r.get("manual")
        best = min(halide.items(), key=lambda kv: kv[1]) if halide else None
        cells = [f"{name.removeprefix('kiln_'):14s} {target[:6]:6s}",
                 f"{manual:9.3f}" if manual else f"{'-':>9s}", f"{kiln:9.3f}" if kiln else f"{'-':>9s}",
                 f"{tuned:9.3f}" if tuned else f"{'-':>9s}",
                 f"{best[1]:9.3f} ({best[0]:>11s})" if best else f"{'none finished':>22s}"]
        if best and kiln:
            vs_best.append(best[1] / kiln)
            if best[1] / kiln < 0.9:
                floor_kiln.append(name)
        if best and tuned:
            tuned_vs_best.append(best[1] / tuned)
            if tuned > best[1]:
                floor_tuned.append(name)
        if tuned and manual:
            tuned_vs_manual.append(manual / tuned)
        if not best:
            skipped.append(name)
        cells.append(f"{best[1] / kiln:8.2f}x" if best and kiln else f"{'-':>9s}")
        cells.append(f"{best[1] / tuned:9.2f}x" if best and tuned else f"{'-':>10s}")
        cells.append(f"{manual / tuned:11.2f}x" if tuned and manual else f"{'-':>12s}")
        print(" ".join(cells))
    print(f"geomean: Kiln / best Halide {geomean(vs_best):.2f}x, tuned / best Halide {geomean(tuned_vs_best):.2f}x, "
          f"tuned / manual {geomean(tuned_vs_manual):.2f}x")
    print(f"Kiln below 0.9x of the best Halide: {', '.join(floor_kiln) or 'none'}")
    print(f"tuned slower than the best Halide: {', '.join(floor_tuned) or 'none'}")
    if skipped:
        print(f"no Halide autoscheduler finished: {', '.join(skipped)}")


def models(paths):
    table = rows(*paths)
    ratios = []
    for (name, target), r in table.items():
        if "kiln-compiled-rules" in r and "kiln-compiled-Kiln" in r:
            ratios.append(r["kiln-compiled-rules"] / r["kiln-compiled-Kiln"])
            print(f"{name:40s} {target[:10]:10s} rules {r['kiln-compiled-rules']:9.3f}  Kiln {r['kiln-compiled-Kiln']:9.3f}"
                  f"  {ratios[-1]:5.2f}x")
    print(f"geomean rules / Kiln: {geomean(ratios):.2f}x over {len(ratios)} workloads")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("kernels", nargs="?")
    p.add_argument("--models", nargs="+")
    a = p.parse_args()
    if not a.kernels and not a.models:
        p.error("give a bench-kernels file, --models FILE, or both")
    if a.kernels:
        kernels(a.kernels)
    if a.models:
        models(a.models)
