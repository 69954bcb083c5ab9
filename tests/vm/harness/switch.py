#!/usr/bin/env python3
"""switch.py: an Ethernet learning switch between QEMU stream netdevs.

    switch.py --port FD [--port FD ...] [--stats FILE]

Each --port is a connected stream socket (the harness passes one end of an
AF_UNIX socket pair per VM; QEMU's stream netdev has the other) carrying
QEMU's framing: a 4-byte big-endian length, then the frame. The switch
learns source MAC addresses; a frame to a known unicast address goes to
that port alone, a broadcast, multicast or unknown unicast one to every
other port. It never blocks on a slow port: each port has an output queue
of QUEUE_LIMIT bytes and a frame that does not fit is dropped (and
counted), as a switch drops at a full egress queue; a port whose peer
closed is dropped from the segment. On SIGTERM or SIGINT it writes its
statistics (JSON) to FILE and exits.

Standard library only; run as a process of its own, so that it does not
share the interpreter lock with the harness.
"""

import argparse
import json
import selectors
import signal
import socket
import struct
import sys

QUEUE_LIMIT = 8 << 20  # bytes waiting per output port
READ_SIZE = 256 << 10
ROCE_PORT = 4791
ETH_P_IP, ETH_P_IPV6, ETH_P_8021Q = 0x0800, 0x86DD, 0x8100


def is_roce(frame):
    """A RoCE v2 frame: UDP to port 4791 over IPv4 or IPv6 (one VLAN tag
    allowed)."""
    off = 12
    etype = int.from_bytes(frame[off:off + 2], "big")
    if etype == ETH_P_8021Q:
        off += 4
        etype = int.from_bytes(frame[off:off + 2], "big")
    off += 2
    if etype == ETH_P_IP and len(frame) >= off + 20:
        if frame[off + 9] != 17:
            return False
        off += (frame[off] & 0xF) * 4
    elif etype == ETH_P_IPV6 and len(frame) >= off + 40:
        if frame[off + 6] != 17:
            return False
        off += 40
    else:
        return False
    return len(frame) >= off + 4 and int.from_bytes(frame[off + 2:off + 4], "big") == ROCE_PORT


class Port:
    def __init__(self, index, sock):
        self.index = index
        self.sock = sock
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.open = True
        self.writing = False
        self.stats = {"frames_in": 0, "bytes_in": 0, "frames_out": 0, "bytes_out": 0,
                      "flooded": 0, "dropped": 0}


class Switch:
    def __init__(self, socks):
        self.ports = [Port(i, s) for i, s in enumerate(socks)]
        self.macs = {}  # MAC -> port index
        self.pairs = {}  # "src>dst" -> [frames, RoCE frames]
        self.sel = selectors.DefaultSelector()
        for p in self.ports:
            p.sock.setblocking(False)
            self.sel.register(p.sock, selectors.EVENT_READ, p)

    def _close(self, p):
        if not p.open:
            return
        p.open = False
        self.sel.unregister(p.sock)
        p.sock.close()
        for mac in [m for m, i in self.macs.items() if i == p.index]:
            del self.macs[mac]

    def _events(self, p):
        ev = selectors.EVENT_READ | (selectors.EVENT_WRITE if p.outbuf else 0)
        if p.open and bool(p.outbuf) != p.writing:
            p.writing = bool(p.outbuf)
            self.sel.modify(p.sock, ev, p)

    def _flush(self, p):
        if not p.open or not p.outbuf:
            return
        try:
            n = p.sock.send(p.outbuf)
        except BlockingIOError:
            n = 0
        except OSError:
            self._close(p)
            return
        del p.outbuf[:n]
        self._events(p)

    def _forward(self, src, frame):
        """Queues one frame (a memoryview) on its output port(s); returns
        the ports it was queued on."""
        if len(frame) < 14:
            src.stats["dropped"] += 1
            return ()
        dst, smac = bytes(frame[0:6]), bytes(frame[6:12])
        if not smac[0] & 1:
            self.macs[smac] = src.index
        out = self.macs.get(dst) if not dst[0] & 1 else None
        if out is None:
            targets = [p for p in self.ports if p.open and p is not src]
            src.stats["flooded"] += 1
        elif out == src.index:
            return ()  # the sender's own segment: a switch filters it
        else:
            targets = [self.ports[out]]
        roce = is_roce(frame)
        head = struct.pack(">I", len(frame))
        queued = []
        for p in targets:
            if len(p.outbuf) + 4 + len(frame) > QUEUE_LIMIT:
                p.stats["dropped"] += 1
                continue
            p.outbuf += head
            p.outbuf += frame
            p.stats["frames_out"] += 1
            p.stats["bytes_out"] += len(frame)
            pair = self.pairs.setdefault(f"{src.index}>{p.index}", [0, 0])
            pair[0] += 1
            pair[1] += roce
            queued.append(p)
        return queued

    def _read(self, p):
        try:
            data = p.sock.recv(READ_SIZE)
        except BlockingIOError:
            return ()
        except OSError:
            data = b""
        if not data:
            self._close(p)
            return ()
        p.inbuf += data
        buf = memoryview(p.inbuf)
        off, dirty = 0, set()
        while len(buf) - off >= 4:
            n = int.from_bytes(buf[off:off + 4], "big")
            if len(buf) - off - 4 < n:
                break
            p.stats["frames_in"] += 1
            p.stats["bytes_in"] += n
            dirty.update(self._forward(p, buf[off + 4:off + 4 + n]))
            off += 4 + n
        buf.release()
        del p.inbuf[:off]
        return dirty

    def run(self, stop):
        while not stop() and any(p.open for p in self.ports):
            dirty = set()
            for key, mask in self.sel.select(0.2):
                p = key.data
                if mask & selectors.EVENT_WRITE:
                    self._flush(p)
                if mask & selectors.EVENT_READ and p.open:
                    dirty.update(self._read(p))
            for p in dirty:
                self._flush(p)

    def stats(self):
        return {"ports": [p.stats for p in self.ports],
                "pairs": {k: {"frames": v[0], "roce_frames": v[1]}
                          for k, v in sorted(self.pairs.items())},
                "macs": {":".join(f"{b:02x}" for b in m): i for m, i in sorted(self.macs.items())}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, action="append", required=True,
                    help="file descriptor of a connected stream socket (repeatable)")
    ap.add_argument("--stats", help="write the statistics here (JSON) at exit")
    args = ap.parse_args(argv)
    stopped = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.append(1))
    socks = [socket.socket(fileno=fd) for fd in args.port]
    sw = Switch(socks)
    print(f"switch: {len(socks)} ports", flush=True)
    sw.run(lambda: bool(stopped))
    stats = sw.stats()
    print("switch: " + json.dumps(stats), flush=True)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(stats, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
