#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Before/after comparison of two builds of the engine benchmark
(ohca_engine_bench, `make engine-bench-build`).

The two programs run interleaved, N times each (before, after, after,
before, ...), so a change in the host's load hits both alike; each case's
time per iteration is reported as the best and the median of its runs, with
after/before of each (above 1.00: after is slower).

  python3 tests/bench/engine_ab.py BEFORE_BIN AFTER_BIN [--runs 5]
      [--filter REGEX] [--cpu N] [--min-time S]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(binary, args, cpu):
    """One run of the benchmark program: each case's time per iteration (ns)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        cmd = ([] if cpu is None else ["taskset", "-c", str(cpu)]) + [
            binary, "--benchmark_out=" + out, "--benchmark_out_format=json"] + args
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out, encoding="utf-8") as f:
            data = json.load(f)
    finally:
        os.unlink(out)
    times = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        times[b["name"]] = b["real_time"] * scale
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--filter", default="")
    p.add_argument("--cpu", type=int, default=None, help="pin both to this core (taskset)")
    p.add_argument("--min-time", default=None, help="--benchmark_min_time per case")
    a = p.parse_args()

    args = []
    if a.filter:
        args.append("--benchmark_filter=" + a.filter)
    if a.min_time:
        args.append("--benchmark_min_time=" + a.min_time)
    progs = {"before": a.before, "after": a.after}
    results = {"before": [], "after": []}
    for i in range(a.runs):
        for which in ["before", "after"] if i % 2 == 0 else ["after", "before"]:
            results[which].append(run_once(progs[which], args, a.cpu))
            print(f"run {i + 1}/{a.runs}: {which} done", file=sys.stderr)

    names = list(results["before"][0].keys())
    w = max(len(n) for n in names)
    print(f"{'case':<{w}}  {'before best (median)':>24}  {'after best (median)':>24}  "
          f"{'after/before best (median)':>27}")
    worst = 0.0
    for n in names:
        b = [r[n] for r in results["before"] if n in r]
        f = [r[n] for r in results["after"] if n in r]
        if not b or not f:
            continue
        bb, bm = min(b), statistics.median(b)
        fb, fm = min(f), statistics.median(f)
        rb, rm = fb / bb, fm / bm
        worst = max(worst, rb, rm)
        print(f"{n:<{w}}  {fmt(bb):>11} ({fmt(bm):>9})  {fmt(fb):>11} ({fmt(fm):>9})  "
              f"{rb:>15.3f} ({rm:.3f})")
    print(f"time per iteration; {a.runs} runs each, interleaved; worst after/before: {worst:.3f}")


def fmt(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.1f} ns"


if __name__ == "__main__":
    main()
