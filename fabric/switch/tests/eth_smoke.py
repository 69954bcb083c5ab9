#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""eth_smoke.py OHCA_SWITCH: ohca-switch --mode eth end to end on real
sockets. Two ports on socket pairs (as the VM harness passes them), a
third listening on a unix socket path. A broadcast floods, a unicast to a
learned station goes to its port only, a burst on priority 3 into a
10 Mbit/s port takes the line rate's time, is ECN-marked past Kmin
(IPv4 checksums still right) and makes the switch send PFC XOFF then XON
upstream; SIGTERM writes the statistics; the capture decodes with tshark
as Ethernet. Standard library (and tshark from tests/deps.sh)."""

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def mac(n):
    return bytes([0x52, 0x54, 0, 0, 0, n])


def csum(h):
    s = sum(struct.unpack(f">{len(h) // 2}H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(dst, src, size=100, pcp=None, tos=0, seq=0):
    hdr = dst + src
    if pcp is not None:
        hdr += struct.pack(">HH", 0x8100, pcp << 13 | 7)
    hdr += struct.pack(">H", 0x0800)
    total = size - len(hdr)
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, tos, total, 0, 0, 64, 17, 0,
                               bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
    ip[10:12] = struct.pack(">H", csum(bytes(ip)))
    udp = struct.pack(">HHHH", 9, 9, total - 20, 0)  # discard, no checksum
    body = struct.pack(">I", seq)
    return hdr + bytes(ip) + udp + body + bytes(size - len(hdr) - 28 - 4)


def send(s, f):
    s.sendall(struct.pack(">I", len(f)) + f)


class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def frames(self, want, timeout=10, pred=lambda f: True):
        """Reads until `want` frames matching pred arrived (or timeout)."""
        out = []
        end = time.time() + timeout
        self.s.settimeout(0.05)
        while len(out) < want and time.time() < end:
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            self.buf += chunk
            while len(self.buf) >= 4:
                n = struct.unpack(">I", self.buf[:4])[0]
                if len(self.buf) < 4 + n:
                    break
                f, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                if pred(f):
                    out.append(f)
        return out


def is_pfc(f):
    return f[12:16] == b"\x88\x08\x01\x01"


def main():
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="ohca-switch-eth.")
    try:
        a1, b1 = socket.socketpair()
        a2, b2 = socket.socketpair()
        path3 = os.path.join(tmp, "port3.sock")
        stats = os.path.join(tmp, "stats.json")
        cap = os.path.join(tmp, "cap.pcap")
        timeline = os.path.join(tmp, "timeline.jsonl")
        sw = subprocess.Popen([binary, "--mode", "eth", "--timeline", timeline,
                               "--timeline-ms", "2", "--port", str(b1.fileno()),
                               "--port", f"fd:{b2.fileno()}", "--port", f"listen:{path3}",
                               "--line-rate", "10", "--mtu", "1500", "--burst", "2000", "--pfc", "3", "--xoff", "20000",
                               "--xon", "5000", "--ecn", "5000:15000:1", "--stats", stats,
                               "--capture", cap],
                              pass_fds=(b1.fileno(), b2.fileno()), stdout=subprocess.PIPE,
                              text=True)
        b1.close()
        b2.close()
        assert "3 ports, Ethernet, 10 Mbit/s" in sw.stdout.readline()
        for _ in range(50):
            if os.path.exists(path3):
                break
            time.sleep(0.05)
        c3 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c3.connect(path3)
        time.sleep(0.2)  # the switch accepts port 3
        r1, r2, r3 = Reader(a1), Reader(a2), Reader(c3)
        # Port 2's station announces itself by broadcast: flooded.
        send(a2, frame(b"\xff" * 6, mac(2), seq=1))
        assert r1.frames(1) and r3.frames(1), "broadcast not flooded"
        # A unicast to it goes to port 2 only.
        send(a1, frame(mac(2), mac(1), seq=2))
        got = r2.frames(1)
        assert got and got[0][42:46] == struct.pack(">I", 2), got
        assert not r3.frames(1, timeout=0.3), "a learned unicast was flooded"
        # 40 frames of 1000 bytes on priority 3, ECN-capable (ECT(0)), at
        # once: 40 KB at 10 Mbit/s take ~33 ms on the line.
        t0 = time.time()
        burst = b"".join(struct.pack(">I", 1000) + frame(mac(2), mac(1), 1000, 3, 0x02, 100 + i)
                         for i in range(40))
        a1.sendall(burst)
        data = r2.frames(40)
        elapsed = time.time() - t0
        assert len(data) == 40, f"{len(data)} of 40 frames"
        assert elapsed >= 0.025, f"40 KB in {elapsed * 1000:.1f} ms: not shaped to 10 Mbit/s"
        marked = 0
        for f in data:
            ip = f[18:38]
            assert csum(ip) == 0, "bad IPv4 checksum after marking"
            marked += (ip[1] & 3) == 3
        assert 10 <= marked < 40, f"{marked} of 40 marked CE"
        pfc = r1.frames(2, pred=is_pfc)
        assert len(pfc) == 2, f"PFC frames upstream: {len(pfc)}"
        xoff, xon = (struct.unpack(">H8H", f[16:34]) for f in pfc)
        assert xoff[0] == 8 and xoff[4] == 0xFFFF, xoff
        assert xon[0] == 8 and xon[4] == 0, xon
        sw.send_signal(signal.SIGTERM)
        sw.wait(timeout=10)
        assert sw.returncode == 0, sw.returncode
        st = json.load(open(stats))
        p1, p2 = st["ports"][0], st["ports"][1]
        assert p1["prio"][3]["pauses_sent"] == 1 and p1["prio"][3]["resumes_sent"] == 1, p1
        assert p2["prio"][3]["ecn_marks"] == marked, p2
        assert p2["prio"][3]["tx_packets"] == 40 and p2["prio"][3]["drops"] == 0, p2
        assert p2["prio"][3]["queue_hwm_bytes"] >= 20000, p2
        assert st["mac_entries"] == 2 and st["ports"][2]["connected"], st
        assert 0 < p2["queue_p99_bytes"] <= p2["prio"][3]["queue_hwm_bytes"] + 2048, p2
        lines = [json.loads(line) for line in open(timeline)]
        assert len(lines) >= 10, len(lines)
        assert max(line["ports"][1]["queue_bytes"] for line in lines) > 0, lines
        # The last line is the state at exit.
        assert lines[-1]["ports"][1]["tx_bytes"] == p2["bytes_out"], (lines[-1], p2)
        if shutil.which("tshark"):
            out = subprocess.run(["tshark", "-r", cap, "-V"], capture_output=True, text=True,
                                 check=True)
            assert out.stdout.count("Internet Protocol Version 4") >= 42, out.stdout[-3000:]
            assert "MAC Control" in out.stdout, out.stdout[-3000:]
            assert "Malformed" not in out.stdout, out.stdout[-3000:]
        print(f"eth_smoke: ok ({marked} of 40 marked, {elapsed * 1000:.0f} ms)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
