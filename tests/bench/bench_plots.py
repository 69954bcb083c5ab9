#!/usr/bin/env python3
"""make bench's record and pictures: results.json and PNG plots of the
two-VM figures, ohca and rxe and TCP on one chart each (issue 25 item 9):

  bandwidth.png  MB/s by message size: qperf rc_bw on ohca and on rxe,
                 tcp_bw on ohca's port; perftest's ib_write_bw (dashed)
  latency.png    us by message size: qperf rc_lat (events and polling), tcp_lat; ib_write_lat
  cpu.png        both VMs' CPU seconds per GiB moved, by message size
  storage.png    the NVMe and NFS over RDMA cells, ohca beside rxe

matplotlib (python3-matplotlib, tests/deps.sh) draws them, headless, as
fabric_bench.py does; without it only results.json is written. Redraw
from a saved record: python3 tests/bench/bench_plots.py build/bench/results.json
"""

import json
import os
import sys

RESULTS = "results.json"
SERIES = (("ohca0", "rc", "ohca RC", "tab:blue"), ("rxe0", "rc", "rxe RC", "tab:orange"),
          ("ohca0", "tcp", "TCP (ohca's port)", "tab:green"))


def to_json(record):
    """The record with its (dev, test, size) keys as 'dev test size'."""
    def flat(d):
        return {" ".join(str(x) for x in k) if isinstance(k, tuple) else k:
                flat(v) if isinstance(v, dict) else v for k, v in d.items()}
    return flat(record)


def from_json(data):
    def deep(d):
        out = {}
        for k, v in d.items():
            parts = k.split(" ")
            if len(parts) > 1:
                k = tuple(int(p) if p.isdigit() else p for p in parts)
            out[k] = deep(v) if isinstance(v, dict) and not ({"value", "iops"} & set(v)) else v
        return out
    return deep(data)


def save(record, out):
    """Writes out/results.json and the plots; returns the PNGs written."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, RESULTS), "w") as f:
        json.dump(to_json(record), f, indent=1, sort_keys=True)
    return draw(record, out)


def _series(res, dev, test, what="value"):
    pts = sorted((s, c[what] if isinstance(c, dict) else c)
                 for (d, t, s), c in res.items() if d == dev and t == test)
    return [(s, v) for s, v in pts if isinstance(v, float)]


def draw(record, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    two = record.get("two", {})
    qperf, perftest, storage = two.get("qperf", {}), two.get("perftest", {}), \
        two.get("storage", {})
    stamp = record.get("stamp", "")
    files = []

    def finish(fig, ax, name, title, ylabel):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size, bytes")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize="small")
        fig.suptitle(title, fontsize="medium")
        ax.set_title(stamp, fontsize="x-small")
        path = os.path.join(out, name)
        fig.savefig(path, dpi=80)
        plt.close(fig)
        files.append(path)

    for kind, name, ylabel, ptest in (("bw", "bandwidth.png", "MB/s", "ib_write_bw"),
                                      ("lat", "latency.png", "one-way latency, us",
                                       "ib_write_lat")):
        lines = [(label, color, "-", _series(qperf, dev, f"{p}_{kind}"))
                 for dev, p, label, color in SERIES]
        if kind == "lat":  # qperf -cp1: both ends poll their CQs
            lines += [(f"{label}, polling", color, ":", _series(qperf, dev, "rc_lat_poll"))
                      for dev, _, label, color in SERIES[:2]]
        lines += [(f"{dev[:-1]} {ptest} (perftest)", color, "--",
                   [(s, v) for (d, t, s), v in sorted(perftest.items())
                    if d == dev and t == ptest and isinstance(v, float)])
                  for dev, _, _, color in SERIES[:2]]
        if not any(pts for _, _, _, pts in lines):
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, color, style, pts in lines:
            if pts:
                ax.plot(*zip(*pts), style, marker="o", color=color, label=label)
        finish(fig, ax, name, f"two VMs (TCG): {'bandwidth' if kind == 'bw' else 'latency'}"
               " by message size", ylabel)

    lines = [(label, color, _series(qperf, dev, f"{p}_bw", "cpu_s_per_gib"))
             for dev, p, label, color in SERIES]
    if any(pts for _, _, pts in lines):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, color, pts in lines:
            if pts:
                ax.plot(*zip(*pts), "-", marker="o", color=color, label=label)
        finish(fig, ax, "cpu.png", "guest CPU per GiB moved (qperf send_cost + recv_cost)",
               "CPU seconds per GiB, both VMs")

    if storage:
        import bench_apps
        fig, axes = plt.subplots(1, 2, figsize=(9, 4.5))
        for ax, unit in zip(axes, ("IOPS", "MB/s")):
            cells = [(n, what) for n, _, u, what in bench_apps.STORAGE_CELLS if u == unit]
            key = "iops" if unit == "IOPS" else "mbs"
            for k, (dev, label, color) in enumerate((("ohca0", "ohca", "tab:blue"),
                                                     ("rxe0", "rxe", "tab:orange"))):
                vals = []
                for n, _ in cells:
                    c = storage.get((dev, n))
                    vals.append(c[key] if isinstance(c, dict) and c[key] > 0 else 0)
                ax.bar([i + k * 0.4 for i in range(len(cells))], vals, width=0.4,
                       color=color, label=label)
            ax.set_xticks([i + 0.2 for i in range(len(cells))])
            ax.set_xticklabels([n.replace("_", "\n", 1) for n, _ in cells], fontsize="small")
            ax.set_yscale("log")
            ax.set_ylabel(unit)
            ax.grid(True, axis="y", which="both", linewidth=0.3)
            ax.legend(fontsize="small")
        fig.suptitle(f"storage over RDMA between two VMs (TCG), fio\n{stamp}",
                     fontsize="medium")
        path = os.path.join(out, "storage.png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        files.append(path)
    return files


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    src = sys.argv[1] if len(sys.argv) > 1 else "build/bench/results.json"
    with open(src) as f:
        rec = from_json(json.load(f))
    for p in draw(rec, os.path.dirname(os.path.abspath(src))):
        print(p)
