#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Instructions per iteration of each engine benchmark case, under
callgrind, for two builds of ohca_engine_bench side by side (BEFORE and
AFTER; `make engine-bench-build`).

Timing on a shared host cannot resolve a few per cent; instruction counts
can: they do not depend on the host's load. Each case runs under
`valgrind --tool=callgrind` with a minimum time it never reaches, so Google
Benchmark's rounds take 1, 10, 100, 1000, ... iterations; callgrind dumps
its counts at the start and the end of each round's timed loop, and the
cost per iteration is (round of HI - round of LO) / (HI - LO), HI = 10 LO,
which leaves out the case's setup and its first LO iterations' warm-up (LO:
the first round of at least 100 iterations and --min-ir instructions in
BEFORE; AFTER uses the same). The program is stopped once the round of HI iterations is
dumped.

Each figure is split into the engine's own work (inside the ohca_engine_*
calls, less the host callbacks), the fake host (the test driver's
callbacks, wherever called from) and the harness (the rest: posting work,
polling, the fake wire). The ratios are after/before of the whole
iteration (what the timed benchmark measures) and of the engine's own part.

  python3 tests/bench/engine_ir.py BEFORE_BIN [AFTER_BIN]
      [--filter REGEX] [--min-ir 5e6] [--jobs 1]
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DEFAULT_FILTER = "^BM_(FakeHost|Send|Write|Read|IdlePass/(1|1024)$)"
LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+([<*>]?)\s*(.*)$")


def case_names(binary, flt):
    out = subprocess.run([binary, "--benchmark_list_tests=true",
                          "--benchmark_filter=" + flt],
                         check=True, capture_output=True, text=True).stdout
    return [n for n in out.split() if n]


def dump_total(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return 0


def round_dumps(binary, case, lo_round, min_ir, workdir):
    """Runs one case under callgrind; returns (k, dump of round k's timed
    loop, dump of round k+1's), round k (1-based) having 10**(k-1)
    iterations: k is lo_round, or when 0 the first round of at least 100
    iterations and min_ir instructions. Both rounds begin with the same
    10**(k-1) iterations, so the warm-up (rings that wrap once, buffers
    that grow once) cancels out when it is shorter than that."""
    prefix = os.path.join(workdir, "cg")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + prefix,
           "--dump-before=benchmark::State::StartKeepRunning*",
           "--dump-before=benchmark::State::FinishKeepRunning*",
           binary, "--benchmark_filter=^" + re.escape(case) + "$",
           "--benchmark_min_time=1000000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    # Dump 2k-1 opens round k's loop, 2k closes it; dump 2k+1 (the next
    # round's start) existing means dump 2k is complete.
    def done(k):
        return os.path.exists(f"{prefix}.{2 * k + 1}")
    k = 1
    try:
        while True:
            while not done(k):
                if proc.poll() is not None:
                    raise RuntimeError(f"{binary} {case}: ended in round {k}")
                time.sleep(0.1)
            if lo_round == 0 and k >= 3 and dump_total(f"{prefix}.{2 * k}") >= min_ir:
                lo_round = k
            if lo_round and k == lo_round + 1:
                break
            k += 1
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return lo_round, f"{prefix}.{2 * lo_round}", f"{prefix}.{2 * lo_round + 2}"


def split(dump):
    """(total, engine own, fake host, harness) instructions of one dump."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller",
                          "--threshold=100", dump],
                         check=True, capture_output=True, text=True).stdout
    total = engine = fake = fake_in_engine = 0
    callers = []
    for line in out.splitlines():
        if not line.strip():
            callers = []
            continue
        m = LINE.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        mark, rest = m.group(2), m.group(3)
        if rest.startswith("PROGRAM TOTALS"):
            total = ir
            continue
        fn = re.sub(r" \[[^\]]*\]$", "", rest)
        fn = re.sub(r" \([\d,]+x\)$", "", fn)
        fn = fn.split(":", 1)[1] if ":" in fn else fn
        if mark == "<":
            callers.append((fn, ir))
        elif mark == "*":
            if fn.startswith("ohca_engine_"):
                engine += ir
            elif fn.startswith("ohca::test::FakeHost::ops()::{lambda") and "::_FUN" in fn:
                fake += ir
                fake_in_engine += sum(c for f, c in callers
                                      if f.startswith("ohca") and not f.startswith("ohca::test::"))
    return total, engine - fake_in_engine, fake, total - engine - (fake - fake_in_engine)


def measure(binary, case, lo_round, min_ir):
    """(round used, per-iteration (total, engine, fake host, harness))."""
    with tempfile.TemporaryDirectory(prefix="ohca-ir-") as d:
        k, lo, hi = round_dumps(binary, case, lo_round, min_ir, d)
        a = split(lo)
        b = split(hi)
    n = 10 ** k - 10 ** (k - 1)
    return k, tuple((y - x) / n for x, y in zip(a, b))


def measure_pair(progs, case, lo_round, min_ir):
    """Both programs, the second with the round the first chose."""
    out = {}
    for which, binary in progs:
        lo_round, out[which] = measure(binary, case, lo_round, min_ir)
    return lo_round, out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after", nargs="?")
    p.add_argument("--filter", default=DEFAULT_FILTER)
    p.add_argument("--min-ir", type=float, default=5e6,
                   help="instructions of the base round (default 5e6)")
    p.add_argument("--jobs", type=int, default=1, help="cases measured at once")
    a = p.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed")

    progs = [("before", a.before)] + ([("after", a.after)] if a.after else [])
    cases = case_names(progs[-1][1], a.filter)
    if a.after:
        have = set(case_names(a.before, a.filter))
        cases = [c for c in cases if c in have]
    res = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {c: ex.submit(measure_pair, progs, c, 0, a.min_ir) for c in cases}
        for c, f in futs.items():
            res[c] = f.result()
            print(f"{c} done", file=sys.stderr)

    w = max(len(c) for c in cases)
    cols = f"{'engine':>9} {'fake host':>9} {'harness':>9} {'total':>9}"
    print(f"{'':<{w}}  {'LO':>6}  {'before':^39}" + (f"  {'after':^39}" if a.after else ""))
    print(f"{'case':<{w}}  {'':>6}  {cols}" + (f"  {cols}  {'after/before: total':>19}"
                                                      f" {'engine':>6}" if a.after else ""))
    worst = 0.0
    for c in cases:
        k, r = res[c]
        b = r["before"]
        line = f"{c:<{w}}  {10 ** (k - 1):>6.0e}  " + " ".join(f"{x:>9.0f}" for x in b[1:] + b[:1])
        if a.after:
            f = r["after"]
            ratio = f[0] / b[0]
            e = f"{f[1] / b[1]:.3f}" if b[1] > 0 else "-"
            worst = max(worst, ratio)
            line += "  " + " ".join(f"{x:>9.0f}" for x in f[1:] + f[:1])
            line += f"  {ratio:>19.3f} {e:>6}"
        print(line)
    print("instructions per iteration (callgrind Ir): rounds of 10 LO and LO iterations differenced"
          + (f"; worst total after/before: {worst:.3f}" if a.after else ""))


if __name__ == "__main__":
    main()
