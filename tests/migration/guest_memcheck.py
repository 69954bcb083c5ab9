#!/usr/bin/env python3
"""A guest memory checker for live migration (docs/migration.md, "Two
vCPUs"): guest_memcheck.py CPU PAGES LOG.

On CPU (sched_setaffinity), keeps PAGES pages of anonymous memory and
sweeps them without a system call: each page is compared with the pattern
last written to it (its index and a generation number in every 16 bytes),
then written with the next generation. A page that does not hold what was
written last lost a write: a migration that did not carry a page the vCPU
wrote. Each such page is logged at once (STALE, with the generation it
holds); a progress line every 5 s (guest time) and a summary on SIGTERM.

A small working set (1 MiB by default) on a vCPU that runs nothing else
keeps the vCPU's TLB entries alive for seconds, as a process polling a
completion queue on its own vCPU does."""

import mmap
import os
import signal
import struct
import sys
import time

PAGE = 4096
MAGIC = 0x6B63656D  # "memc"


def pattern(page, gen):
    return struct.pack("<IIQ", MAGIC, page, gen) * (PAGE // 16)


def main():
    cpu, npages, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.sched_setaffinity(0, {cpu})
    out = open(path, "a", buffering=1)
    buf = mmap.mmap(-1, npages * PAGE)
    gen = [0] * npages
    for i in range(npages):
        buf[i * PAGE:(i + 1) * PAGE] = pattern(i, 0)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    stale = sweeps = 0
    print(f"memcheck: cpu {cpu} running, {npages} pages", file=out)
    last = time.monotonic()
    while not stop:
        for i in range(npages):
            off = i * PAGE
            if buf[off:off + PAGE] != pattern(i, gen[i]):
                magic, held, g = struct.unpack_from("<IIQ", buf, off)
                stale += 1
                print(f"STALE cpu {cpu} page {i}: holds page {held} generation {g} "
                      f"(magic {magic:#x}), expected generation {gen[i]}, sweep {sweeps}, "
                      f"time {time.monotonic():.3f}", file=out)
            gen[i] += 1
            buf[off:off + PAGE] = pattern(i, gen[i])
        sweeps += 1
        now = time.monotonic()
        if now - last >= 5:
            last = now
            print(f"memcheck: cpu {cpu} sweeps {sweeps} stale {stale} time {now:.3f}", file=out)
    print(f"MEMCHECK cpu {cpu} pages {npages} sweeps {sweeps} stale {stale}", file=out)


if __name__ == "__main__":
    main()
