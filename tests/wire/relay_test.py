#!/usr/bin/env python3
"""ohca_wire end to end, without VMs: two UDP sockets on 127.0.0.1 stand for
the two QEMU dgram netdevs. Checks relaying both ways, the loss rate of RoCE
frames, that other frames pass untouched, the JSON statistics and the pcap."""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def free_ports(n):
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def frame(i, port):
    eth = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00"
    ip = bytes([0x45, 0]) + b"\0" * 7 + bytes([17]) + b"\0" * 10
    udp = struct.pack(">HHHH", 0xc000, port, 8 + 16, 0)
    return eth + ip + udp + struct.pack(">I", i) + b"\0" * 12


def main():
    wire = sys.argv[1]
    va, vb, wa, wb = free_ports(4)
    tmp = tempfile.mkdtemp(prefix="ohca-wire-test-")
    stats, pcap = os.path.join(tmp, "stats.json"), os.path.join(tmp, "wire.pcap")
    p = subprocess.Popen([wire, "--a", f"{wa}:{va}", "--b", f"{wb}:{vb}", "--loss-ab", "0.25",
                          "--seed", "3", "--stats", stats, "--pcap", pcap])
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.bind(("127.0.0.1", va))
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    b.bind(("127.0.0.1", vb))
    at_a, at_b = [], []

    def drain(s, into, wait):
        # Small batches, drained as they come: socket buffers are small.
        s.settimeout(wait)
        try:
            while True:
                into.append(s.recv(2048))
        except (socket.timeout, BlockingIOError):
            pass

    time.sleep(0.3)
    n = 400
    for i in range(n):
        a.sendto(frame(i, 4791), ("127.0.0.1", wa))     # lossy direction
        b.sendto(frame(i, 4791), ("127.0.0.1", wb))     # clean direction
        a.sendto(frame(i, 53), ("127.0.0.1", wa))       # not RoCE: never dropped
        if i % 10 == 9:
            drain(b, at_b, 0.02)
            drain(a, at_a, 0.02)
    drain(b, at_b, 0.5)
    drain(a, at_a, 0.5)
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0
    st = json.load(open(stats))
    roce_b = [f for f in at_b if f[36:38] == b"\x12\xb7"]
    dns_b = [f for f in at_b if f[36:38] == b"\x00\x35"]
    print(f"relay_test: A->B {len(roce_b)}/{n} RoCE, {len(dns_b)}/{n} other; B->A {len(at_a)}/{n};"
          f" stats {st}")
    assert len(at_a) == n and len(dns_b) == n, "frames lost on a clean path"
    assert st["a_to_b"]["dropped"] == n - len(roce_b)
    assert 0.15 * n < st["a_to_b"]["dropped"] < 0.35 * n
    assert st["a_to_b"]["roce"] == n and st["a_to_b"]["rx"] == 2 * n
    assert st["b_to_a"]["dropped"] == 0
    # pcap: header + one record per forwarded frame
    data = open(pcap, "rb").read()
    assert struct.unpack("<IHHiIII", data[:24])[0] == 0xa1b2c3d4
    off, count = 24, 0
    while off < len(data):
        incl = struct.unpack("<IIII", data[off:off + 16])[2]
        off += 16 + incl
        count += 1
    assert off == len(data) and count == len(at_a) + len(at_b), (count, len(at_a) + len(at_b))
    print("relay_test: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
