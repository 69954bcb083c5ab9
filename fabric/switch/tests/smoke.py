#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""smoke.py OHCA_SWITCH: the ohca-switch program end to end. Two ports on
socket pairs (as the VM harness passes them), a third listening on a unix
socket path, a fourth connecting to one; a directed-route NodeInfo Get
from port 1 is answered, others forwarded out ports 3 and 4; a fifth port
on an AF_UNIX datagram socket pair (dgram-fd:, a frame per datagram): an
SMP from it is answered as one datagram, one forwarded to it comes as one
datagram, a datagram longer than the largest frame is counted and dropped;
SIGTERM writes the
statistics; the capture decodes with tshark as InfiniBand without errors.
Standard library (and tshark from tests/deps.sh)."""

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
import zlib


def crc16(data):
    reg = 0xFFFF
    for b in data:
        reg ^= b
        for _ in range(8):
            reg = (reg >> 1) ^ 0xD008 if reg & 1 else reg >> 1
    return reg ^ 0xFFFF


def smp_frame(path):
    mad = bytearray(256)
    mad[0:4] = bytes([1, 0x81, 1, 0x01])  # DR SMP, Get
    mad[6] = 1  # hop pointer
    mad[7] = len(path)  # hop count
    mad[8:16] = struct.pack(">Q", 0x77)
    mad[16:18] = struct.pack(">H", 0x11)  # NodeInfo
    mad[32:36] = b"\xff\xff\xff\xff"  # DrSLID, DrDLID permissive
    for i, p in enumerate(path):
        mad[128 + 1 + i] = p
    lrh = bytearray(8)
    lrh[0] = 0xF0  # VL15
    lrh[1] = 0x02  # LNH local
    lrh[2:4] = b"\xff\xff"
    lrh[6:8] = b"\xff\xff"
    bth = bytearray(12)
    bth[0] = 0x64
    bth[2:4] = b"\xff\xff"
    deth = bytes(8)
    body = bytes(lrh) + bytes(bth) + deth + bytes(mad)
    n = len(body) + 4
    body = bytearray(body)
    body[4:6] = struct.pack(">H", n // 4)
    masked = bytearray(body[:20])
    masked[0] |= 0xF0
    masked[8 + 4] = 0xFF
    icrc = zlib.crc32(bytes(masked) + bytes(body[20:]))
    pkt = bytes(body) + struct.pack("<I", icrc)
    return pkt + struct.pack("<H", crc16(pkt))


def fcp(vl, fctbs, fccl):
    b = bytes([fctbs >> 8 & 0xF, fctbs & 0xFF, vl << 4 | fccl >> 8 & 0xF, fccl & 0xFF])
    return b + struct.pack("<H", crc16(b))


def send(s, frame):
    s.sendall(struct.pack(">I", len(frame)) + frame)


def frames(s, want_data, timeout=10):
    """Reads frames until want_data data frames arrived; returns them."""
    s.settimeout(timeout)
    buf, out = b"", []
    end = time.time() + timeout
    while len(out) < want_data and time.time() < end:
        buf += s.recv(65536)
        while len(buf) >= 4:
            n = struct.unpack(">I", buf[:4])[0]
            if len(buf) < 4 + n:
                break
            f, buf = buf[4:4 + n], buf[4 + n:]
            if n != 6:
                out.append(f)
    return out


def dgram_frames(s, want_data):
    """Reads datagrams (a frame each) until want_data data frames came
    (flow control packets, 6 bytes, skipped); returns them."""
    out = []
    while len(out) < want_data:
        f = s.recv(65536)
        if len(f) != 6:
            out.append(f)
    return out


def main():
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="ohca-switch-smoke.")
    try:
        a1, b1 = socket.socketpair()
        a2, b2 = socket.socketpair()
        path3 = os.path.join(tmp, "port3.sock")
        stats = os.path.join(tmp, "stats.json")
        cap = os.path.join(tmp, "cap.pcap")
        path4 = os.path.join(tmp, "port4.sock")
        l4 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        l4.bind(path4)
        l4.listen(1)
        a5, b5 = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        sw = subprocess.Popen([binary, "--port", str(b1.fileno()), "--port", f"fd:{b2.fileno()}",
                               "--port", f"listen:{path3}", "--port", f"connect:{path4}",
                               "--port", f"dgram-fd:{b5.fileno()}",
                               "--stats", stats, "--capture", cap],
                              pass_fds=(b1.fileno(), b2.fileno(), b5.fileno()),
                              stdout=subprocess.PIPE, text=True)
        b1.close()
        b2.close()
        b5.close()
        assert "5 ports" in sw.stdout.readline()
        for _ in range(50):
            if os.path.exists(path3):
                break
            time.sleep(0.05)
        c3 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c3.connect(path3)
        l4.settimeout(10)
        c4, _ = l4.accept()
        for s in (a1, a2, c3, c4):
            for vl in range(4):
                send(s, fcp(vl, 0, 256))
        for vl in range(4):
            a5.send(fcp(vl, 0, 256))
        send(a1, smp_frame([1]))
        reply = frames(a1, 1)
        assert reply, "no reply to NodeInfo"
        mad = reply[0][28:28 + 256]
        assert mad[3] == 0x81 and mad[4] & 0x80, "not a GetResp with D set"
        assert mad[64 + 2] == 2, "NodeInfo.NodeType is not switch"
        assert mad[64 + 3] == 5, "NodeInfo.NumPorts is not 5"
        send(a1, smp_frame([1, 3]))
        fwd = frames(c3, 1)
        assert fwd and fwd[0][28 + 6] == 2, "the SMP did not come out port 3 with hop pointer 2"
        send(a1, smp_frame([1, 4]))
        fwd4 = frames(c4, 1)
        assert fwd4 and fwd4[0][28 + 6] == 2, "the SMP did not come out port 4 (connect:)"
        send(a1, smp_frame([1, 5]))
        a5.settimeout(10)
        fwd5 = dgram_frames(a5, 1)
        assert fwd5[0][28 + 6] == 2, "the SMP did not come out port 5 (dgram-fd:)"
        a5.send(bytes(4223))  # one byte over the largest IB frame
        a5.send(smp_frame([5]))
        reply5 = dgram_frames(a5, 1)
        assert reply5[0][28 + 3] == 0x81 and reply5[0][28 + 4] & 0x80, "no GetResp on port 5"
        sw.send_signal(signal.SIGTERM)
        sw.wait(timeout=10)
        assert sw.returncode == 0, sw.returncode
        st = json.load(open(stats))
        assert st["ports"][1]["smp_local"] == 1 and st["ports"][1]["smp_forwarded"] == 3, st
        assert st["ports"][3]["connected"] and st["ports"][4]["connected"], st
        assert st["ports"][5]["smp_local"] == 1, st
        assert st["datagram_ports"] == [{"port": 5, "oversize": 1, "unsent": 0}], st
        if shutil.which("tshark"):
            # This tshark (4.0) has no pcap mapping for LINKTYPE_INFINIBAND
            # (247): the same records as user DLT 147, decoded as InfiniBand.
            data = bytearray(open(cap, "rb").read())
            assert int.from_bytes(data[20:24], "little") == 247, "not LINKTYPE_INFINIBAND"
            data[20:24] = (147).to_bytes(4, "little")
            user = os.path.join(tmp, "user.pcap")
            open(user, "wb").write(data)
            out = subprocess.run(["tshark", "-o", 'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""',
                                  "-r", user, "-V"], capture_output=True, text=True, check=True)
            assert out.stdout.count("Local Route Header") >= 3, out.stdout
            assert "Malformed" not in out.stdout and "Expert Info" not in out.stdout, out.stdout
        print(f"smoke: ok ({len(reply)} reply, {len(fwd)} forwarded)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
