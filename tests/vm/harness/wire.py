"""The wires between the VMs: what each VM's netdev is and what runs
between them.

  user    one VM (or several, each alone): QEMU's user-mode network
  dgram   two VMs: a UDP socket each on 127.0.0.1, connected to the other's
          (the harness opens them, with WIRE_SOCKET_BUFFER; OHCA_DGRAM=qemu
          lets QEMU open its own)
  stream  two VMs: one AF_UNIX stream socket pair (lossless, length-framed)
  faulty  two VMs: dgram sockets to ohca_wire (tests/wire), which drops,
          duplicates, reorders, delays and corrupts frames (FaultWire)
  switch  two to MAX_VMS VMs on the project's emulated switch ohca-switch
          (fabric/switch, build/fabric/ohca-switch): each VM's stream netdev
          on an AF_UNIX socket pair whose other end is a switch port, in the
          switch's mode for the VMs' link layer (eth: a learning bridge with
          a shaped line rate, a finite buffer, ECN, PFC; ib: an InfiniBand
          switch with credits and an SMA on port 0); one switch, or two in
          a line (SwitchFabric); a migratable cluster's VMs have dgram
          netdevs on AF_UNIX datagram socket pairs instead (the switch's
          dgram-fd: ports), which a migration's two QEMUs can share

No wire needs root or the host's network: the sockets live on 127.0.0.1
or are socket pairs (two switches in a line: a unix socket in the
cluster's socket directory). Each function returns the sockets the VMs'
QEMUs get (to pass as file descriptors) and their -netdev arguments.
"""

import ctypes
import json
import os
import shlex
import signal
import socket
import subprocess
import threading

from .common import TOP, HarnessError, die_with_parent, log

WIRE_KINDS = ("user", "dgram", "stream", "faulty", "switch", "hosts")


# The wire's sockets: the harness opens both ends of a two-VM dgram wire
# itself and hands them to QEMU as file descriptors (local.type=fd), with
# receive and send buffers of this size. QEMU's own sockets get the host's
# default receive buffer (net.core.rmem_default, 208 KiB here: 92 frames of
# 1 KiB, 25 of 4 KiB), less than the requester's window puts on the wire, so
# a burst overflowed it and every drop cost an ACK timeout (issue 12).
# 16 MiB (the kernel doubles it for its bookkeeping) holds 1024 frames of
# 9 KiB, the requester's largest window. OHCA_DGRAM=qemu lets QEMU open its
# own sockets again (the old wire, for comparison). OHCA_WIRE_BUFFER sets
# another size (experiments: docs/migration.md, the UD flood).
WIRE_SOCKET_BUFFER = int(os.environ.get("OHCA_WIRE_BUFFER", 16 << 20))
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
CLONE_NEWNET = 0x40000000  # setns(2)'s namespace type
_buffer_note = []


def set_wire_buffers(s):
    """WIRE_SOCKET_BUFFER for both directions of s: SO_*BUFFORCE (root, or
    CAP_NET_ADMIN), else SO_*BUF, which net.core.rmem_max/wmem_max cap."""
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF),
                         (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            s.setsockopt(socket.SOL_SOCKET, force, WIRE_SOCKET_BUFFER)
        except PermissionError:
            s.setsockopt(socket.SOL_SOCKET, plain, WIRE_SOCKET_BUFFER)


def wire_socket():
    """A UDP socket on 127.0.0.1 with WIRE_SOCKET_BUFFER for both
    directions: SO_*BUFFORCE (root, or CAP_NET_ADMIN), else SO_*BUF, which
    net.core.rmem_max/wmem_max cap (said once). The caller connects it:
    QEMU sends on an fd netdev with send(), to the connected peer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", 0))
        set_wire_buffers(s)
        got = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
        if got < WIRE_SOCKET_BUFFER and not _buffer_note:
            _buffer_note.append(got)
            log(f"note: not allowed to force socket buffers (not root): the wire's "
                f"receive buffer is {got} bytes (net.core.rmem_max), not "
                f"{WIRE_SOCKET_BUFFER}; bursts may be dropped (sysctl -w "
                f"net.core.rmem_max={WIRE_SOCKET_BUFFER} net.core.wmem_max="
                f"{WIRE_SOCKET_BUFFER} lifts it)")
        return s
    except BaseException:
        s.close()
        raise


def socket_drops(s):
    """Datagrams the kernel dropped at UDP socket s because its receive
    queue was full (the drops column of /proc/net/udp[6]); None if s is
    not found there."""
    ino = str(os.fstat(s.fileno()).st_ino)
    for path in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if len(cols) > 12 and cols[9] == ino:
                        return int(cols[12])
        except OSError:
            continue
    return None


def stream_pair():
    """The two ends of a stream wire: a connected AF_UNIX stream socket
    pair with WIRE_SOCKET_BUFFER for both directions. QEMU's stream netdev
    frames each packet with its length and reads up to 68 KiB per call, so
    a burst reaches the device in one main-loop pass instead of one pass
    per frame (its dgram netdev reads one datagram per pass); and it does
    not drop (a full socket holds the sender back), like a lossless RoCE
    fabric."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for s in (a, b):
        set_wire_buffers(s)
    return a, b


def stream_fd_args(sock):
    """QEMU -netdev arguments for a stream netdev on an already connected
    socket."""
    return f"stream,server=off,addr.type=fd,addr.str={sock.fileno()}"


def dgram_fd_args(sock):
    """QEMU -netdev arguments for an fd dgram netdev on sock."""
    return f"dgram,local.type=fd,local.str={sock.fileno()}"


def free_udp_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()



def user_ends(n):
    """QEMU's user-mode network for each of n VMs (no sockets)."""
    return [None] * n, ["user,restrict=on,net=10.77.0.0/24,host=10.77.0.254"] * n


def dgram_ends(via_wire):
    """The two VMs' dgram netdevs: to each other, or via_wire to a port of
    the fault wire each. Returns (sockets, netdev arguments, ports): the
    VMs' ports, then the wire's (via_wire)."""
    if os.environ.get("OHCA_DGRAM", "fd") == "qemu":
        # QEMU opens its own sockets (default buffers): the old wire.
        ports = free_udp_ports(4 if via_wire else 2)
        remote = ports[2:] if via_wire else ports[1::-1]
        args = [f"dgram,local.type=inet,local.host=127.0.0.1,local.port={lp},"
                f"remote.type=inet,remote.host=127.0.0.1,remote.port={rp}"
                for lp, rp in zip(ports, remote)]
        return [None, None], args, ports
    socks = [wire_socket() for _ in range(2)]
    try:
        ports = [s.getsockname()[1] for s in socks]
        # (the VMs' sockets are held: the wire's ports differ from them)
        ports += free_udp_ports(2) if via_wire else []
        remote = ports[2:] if via_wire else ports[1::-1]
        for sock, rp in zip(socks, remote):
            sock.connect(("127.0.0.1", rp))
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks, [dgram_fd_args(s) for s in socks], ports


def stream_ends():
    """The two VMs' stream netdevs on one socket pair."""
    socks = list(stream_pair())
    return socks, [stream_fd_args(s) for s in socks]


def dgram_pair():
    """The two ends of a datagram switch port: a connected AF_UNIX datagram
    socket pair with WIRE_SOCKET_BUFFER for both directions. One frame per
    datagram (QEMU's dgram netdev, ohca-switch's dgram-fd: port); a full
    receiver holds the sender back (EAGAIN) instead of dropping. Unlike a
    byte stream, two QEMU processes can share one end: what each reads is
    whole frames, so a migration's destination takes the VM's end over."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a, b):
        set_wire_buffers(s)
    return a, b


def switch_ends(n, datagram=False):
    """n VMs' netdevs, each on a socket pair whose other end is a port of
    the switch: stream netdevs, or datagram ones (dgram_pair; a VM that
    migrates). Returns (the VMs' sockets, their netdev arguments, the
    switch's sockets), port i being VM i's."""
    vm_socks, sw_socks = [], []
    try:
        for _ in range(n):
            a, b = dgram_pair() if datagram else stream_pair()
            vm_socks.append(a)
            sw_socks.append(b)
    except BaseException:
        for s in vm_socks + sw_socks:
            s.close()
        raise
    fd_args = dgram_fd_args if datagram else stream_fd_args
    return vm_socks, [fd_args(s) for s in vm_socks], sw_socks


def _socket_in(ns, local, remote):
    """A UDP socket of network namespace ns (a thread of ours enters it:
    setns moves only the calling thread), bound to local, connected to
    remote, with the wire's buffers (set_wire_buffers: SO_*BUFFORCE, which
    a namespace's own sysctls cannot raise)."""
    out = {}

    def work():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {ns}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            out["sock"] = sock
            sock.bind(local)
            set_wire_buffers(sock)
            sock.connect(remote)
        except BaseException as e:  # handed to the caller's thread
            out["error"] = e

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in out:
        if "sock" in out:
            out["sock"].close()
        raise HarnessError(f"a socket in {ns}: {out['error']}")
    return out["sock"]


class Hosts:
    """Two "hosts" on this machine (issue 25 item 8): two network
    namespaces joined by nothing but a veth pair, each VM's QEMU started in
    its own (prefix()), its netdev a UDP socket on its host's veth address
    connected to the other host's (made in the namespace, passed to QEMU as
    on the dgram wire): the VMs' frames cross between the hosts as UDP over
    IP, as between two machines (docs/bench.md: the same -netdev with real
    addresses). Needs root (ip netns). stop() deletes the namespaces, and
    with them the veth pair."""

    PORT = 4792  # the UDP port of each host's end of the wire

    def __init__(self, tag):
        n = os.getpid() % 250 + 1
        self.ns = [f"ohca-{tag}-{n}-h{i}" for i in range(2)]
        self.ips = [f"10.231.{n}.1", f"10.231.{n}.2"]
        links = [f"ohv{n}h{i}" for i in range(2)]
        try:
            for ns in self.ns:
                self._ip("netns", "add", ns)
            self._ip("link", "add", links[0], "netns", self.ns[0], "type", "veth",
                     "peer", "name", links[1], "netns", self.ns[1])
            for ns, link, ip in zip(self.ns, links, self.ips):
                self._ip("-n", ns, "addr", "add", f"{ip}/30", "dev", link)
                self._ip("-n", ns, "link", "set", link, "up")
                self._ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _ip(*args):
        try:
            subprocess.run(("ip",) + args, check=True, capture_output=True, text=True)
        except FileNotFoundError as e:
            raise HarnessError("ip missing (iproute2)") from e
        except subprocess.CalledProcessError as e:
            raise HarnessError(f"ip {' '.join(args)}: {e.stderr.strip()} "
                               "(the hosts wire needs root)") from e

    def prefix(self, i):
        """The command line's head that starts VM i's QEMU on host i."""
        return ["ip", "netns", "exec", self.ns[i]]

    def ends(self):
        """The two VMs' sockets and -netdev arguments (the caller owns the
        sockets)."""
        socks = []
        try:
            for i in range(2):
                socks.append(_socket_in(self.ns[i], (self.ips[i], self.PORT),
                                        (self.ips[1 - i], self.PORT)))
        except BaseException:
            for sock in socks:
                sock.close()
            raise
        return socks, [dgram_fd_args(sock) for sock in socks]

    def stop(self):
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Relay:
    """A process between the VMs' netdevs (ohca_wire or the switch), with
    its command line, log and statistics (stats.json, written when it is
    stopped) in one directory."""

    def __init__(self, wdir, argv, pass_fds=()):
        os.makedirs(wdir, exist_ok=True)
        self.stats_path = os.path.join(wdir, "stats.json")
        if os.path.exists(self.stats_path):  # a previous job's (Pool)
            os.unlink(self.stats_path)
        argv = argv + ["--stats", self.stats_path]
        with open(os.path.join(wdir, "cmdline.txt"), "w") as f:
            f.write(" ".join(shlex.quote(a) for a in argv) + "\n")
        self.log = open(os.path.join(wdir, "wire.log"), "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     pass_fds=tuple(pass_fds), preexec_fn=die_with_parent)

    def stop(self):
        """Stops the process (SIGTERM: it writes its statistics) and returns
        the statistics, or None."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


class FaultWire(Relay):
    """ohca_wire between the two VMs' dgram netdevs (ports: vm0, vm1, the
    wire's side for each; dgram_ends(via_wire=True)). Keys of faults: loss,
    dup, reorder, delay, corrupt (probabilities, both directions; a
    "_ab"/"_ba" suffix for one direction: vm0 to vm1 is ab), delay_us,
    hold_us, seed (default 1), all_frames (False: only RoCE frames get
    faults), pcap (True: <wdir>/wire.pcap). Its statistics:
    {"a_to_b": {...}, "b_to_a": {...}} (a is vm0)."""

    FAULTS = ("loss", "dup", "reorder", "delay", "corrupt")

    def __init__(self, wdir, faults, ports):
        binary = os.environ.get("OHCA_WIRE", os.path.join(TOP, "build/wire/ohca_wire"))
        if "OHCA_WIRE" not in os.environ:
            # Small and quick to build: make sure it is current.
            r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "tests/wire")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise HarnessError(f"building ohca_wire failed:\n{r.stdout}{r.stderr}")
        argv = [binary, "--a", f"{ports[2]}:{ports[0]}", "--b", f"{ports[3]}:{ports[1]}"]
        cfg = dict(faults)
        argv += ["--seed", str(cfg.pop("seed", 1))]
        for key, val in cfg.items():
            base = key[:-3] if key.endswith(("_ab", "_ba")) else key
            if base in self.FAULTS:
                argv += [f"--{base}{'-' + key[-2:] if base != key else ''}", str(val)]
            elif key in ("delay_us", "hold_us"):
                argv += [f"--{key.replace('_', '-')}", str(val)]
            elif key == "all_frames":
                if val:
                    argv.append("--all-frames")
            elif key == "pcap":
                if val:
                    argv += ["--pcap", os.path.join(wdir, "wire.pcap")]
            else:
                raise HarnessError(f"unknown fault wire option '{key}'")
        super().__init__(wdir, argv)


# ohca-switch: OHCA_SWITCH, or make fabric's build (build/fabric).
SWITCH_BINARY = os.path.join(TOP, "build/fabric/ohca-switch")

# switch= options of Cluster (wire "switch"): name -> (ohca-switch flag,
# the mode that has it). README: fabric/README.md.
SWITCH_FLAGS = {
    "line_rate": ("--line-rate", "eth ib"),     # Mbit/s of every egress port (ib: none by default)
    "burst": ("--burst", "eth"),
    "away_after_us": ("--away-after-us", "eth"),  # an idle port earns the switch's absence
    "buffer": ("--buffer", "eth"),              # the shared buffer, bytes
    "headroom": ("--headroom", "eth"),          # more for lossless priorities
    "mtu": ("--mtu", "eth"),
    "ecn": ("--ecn", "eth"),                    # "KMIN:KMAX:PMAX"
    "seed": ("--seed", "eth"),
    "pfc": ("--pfc", "eth"),                    # lossless priorities, "3" or "3,4"
    "pfc_trust": ("--pfc-trust", "eth"),        # "pcp" or "dscp"
    "xoff": ("--xoff", "eth"),
    "xon": ("--xon", "eth"),
    "pause_quanta": ("--pause-quanta", "eth"),
    "mac_table": ("--mac-table", "eth"),
    "mac_per_port": ("--mac-per-port", "eth"),
    "mac_age": ("--mac-age", "eth"),
    "timeline_ms": ("--timeline-ms", "eth ib"),
    "vl_buffer": ("--vl-buffer", "ib"),         # 64-byte blocks per data VL and port
}
# Options of the harness itself: switches (1, or 2 in a line), split (the
# VMs on the first of two switches; default half, rounded up), capture
# (True: each switch's pcap in its directory), timeline (True: the
# switch's --timeline there; eth: queues and counters, ib: each port's
# bytes in and out and its input buffer).
SWITCH_TOPOLOGY = ("switches", "split", "capture", "timeline")
# The Ethernet mode's defaults in the harness: the switch is no bottleneck
# unless a test asks for one (ohca-switch's own are 1 Gbit/s and 1 MiB),
# like a fast switch with deep buffers; the line rate, buffer, ECN and PFC
# are for the tests that make congestion on purpose.
ETH_SWITCH_DEFAULTS = {"line_rate": 100000, "buffer": 16 << 20}
# The InfiniBand switches' node GUIDs: this plus the switch's index + 1.
SWITCH_GUID_BASE = 0x0002C90300FAB000


def switch_options(mode, options):
    """Checks switch= options for a mode: (the flags' options, the
    topology's), each a dict; a HarnessError names a bad one."""
    flags, topo = {}, {}
    for key, val in (options or {}).items():
        if key in SWITCH_TOPOLOGY:
            topo[key] = val
        elif key in SWITCH_FLAGS:
            if mode not in SWITCH_FLAGS[key][1].split():
                raise HarnessError(f"switch option '{key}' is for the {SWITCH_FLAGS[key][1]} "
                                   f"mode; these VMs' link layer makes the switch {mode}")
            flags[key] = val
        else:
            raise HarnessError(f"unknown switch option '{key}' "
                               f"({', '.join(list(SWITCH_FLAGS) + list(SWITCH_TOPOLOGY))})")
    if mode == "eth":
        flags = dict(ETH_SWITCH_DEFAULTS, **flags)
    switches = topo.get("switches", 1)
    if switches not in (1, 2):
        raise HarnessError("switch option 'switches': 1, or 2 in a line")
    return flags, topo


def switch_binary():
    path = os.environ.get("OHCA_SWITCH", SWITCH_BINARY)
    if not os.access(path, os.X_OK):
        raise HarnessError(f"{path} missing: make fabric builds ohca-switch")
    return path


class OhcaSwitch(Relay):
    """One ohca-switch process. ports: its external ports in order, each a
    socket (its file descriptor is passed and closed here: the switch holds
    it; a stream socket is an fd: port, a datagram one a dgram-fd: port) or
    a port SPEC string (listen:PATH, connect:PATH); flags: the
    SWITCH_FLAGS options; index: the switch's index in the fabric (its
    GUID, its description). In wdir: cmdline.txt, wire.log, stats.json,
    switch.pcap (capture), timeline.jsonl (timeline)."""

    def __init__(self, wdir, mode, ports, flags, index=0, capture=False, timeline=False):
        argv = [switch_binary(), "--mode", mode]
        fds = []
        for p in ports:
            if isinstance(p, socket.socket):
                fds.append(p.fileno())
                kind = "dgram-fd" if p.type == socket.SOCK_DGRAM else "fd"
                argv += ["--port", f"{kind}:{p.fileno()}"]
            else:
                argv += ["--port", p]
        if mode == "ib":
            argv += ["--guid", f"{SWITCH_GUID_BASE + index + 1:#x}",
                     "--description", f"ohca-switch sw{index}"]
        for key, val in flags.items():
            argv += [SWITCH_FLAGS[key][0], str(val)]
        if capture:
            argv += ["--capture", os.path.join(wdir, "switch.pcap")]
        if timeline:
            argv += ["--timeline", os.path.join(wdir, "timeline.jsonl")]
        try:
            super().__init__(wdir, argv, pass_fds=fds)
        finally:
            for p in ports:
                if isinstance(p, socket.socket):
                    p.close()


class SwitchFabric:
    """The switch wire's processes: one ohca-switch with VM i on port i+1,
    or two in a line: switch 0 has VMs 0..split-1 on ports 1..split and
    its port split+1 listens on a unix socket in sockdir, where switch 1's
    port 1 connects; switch 1 has the other VMs on ports 2, 3, ...
    sw_socks: the switch's ends of switch_ends() (closed here). The
    logs of switch k go to wdir/swk/. stop() returns the statistics of
    the one switch (its --stats JSON), or {"switches": [sw0's, sw1's]};
    each has "vm_ports": {VM index: its port}, and in a line
    "isl_port": the port of the link to the other switch."""

    def __init__(self, wdir, sockdir, mode, sw_socks, options=None):
        self.procs = []
        try:
            self._start(wdir, sockdir, mode, list(sw_socks), options)
        except BaseException:
            for s in sw_socks:
                s.close()
            self.stop()
            raise

    def _start(self, wdir, sockdir, mode, sw_socks, options):
        flags, topo = switch_options(mode, options)
        n = len(sw_socks)
        count = topo.get("switches", 1)
        if count == 1:
            self.layout = [({i: i + 1 for i in range(n)}, None)]
            plan = [sw_socks]
        else:
            split = topo.get("split", (n + 1) // 2)
            if not 1 <= split <= n - 1:
                raise HarnessError(f"switch option 'split': 1 to {n - 1} VMs on the first switch")
            isl = os.path.join(sockdir, "isl.sock")
            self.layout = [({i: i + 1 for i in range(split)}, split + 1),
                           ({i: i - split + 2 for i in range(split, n)}, 1)]
            plan = [sw_socks[:split] + [f"listen:{isl}"], [f"connect:{isl}"] + sw_socks[split:]]
        for k, ports in enumerate(plan):
            self.procs.append(OhcaSwitch(os.path.join(wdir, f"sw{k}"), mode, ports, flags,
                                         index=k, capture=topo.get("capture", False),
                                         timeline=topo.get("timeline", False)))

    def stop(self):
        """Stops the switches (each writes its statistics) and returns them
        (see the class), or None when none wrote any."""
        # All at once: a switch that saw its neighbour go first would
        # report the link between them Down. Stopped, then the SIGTERM
        # pending in each as they resume; one that reads its neighbour's
        # EOF after its own SIGTERM keeps the link up (PortSet::run).
        live = [p.proc for p in self.procs if p.proc.poll() is None]
        for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGCONT):
            for proc in live:
                proc.send_signal(sig)
        stats = []
        for (vm_ports, isl), proc in zip(getattr(self, "layout", []), self.procs):
            st = proc.stop()
            if st is not None:
                st["vm_ports"] = dict(vm_ports)
                if isl is not None:
                    st["isl_port"] = isl
            stats.append(st)
        self.procs = []
        if not stats or all(st is None for st in stats):
            return None
        return stats[0] if len(stats) == 1 else {"switches": stats}


def switch_port_stats(stats, vm):
    """The statistics of the switch port VM vm is on, from stop()'s."""
    for st in stats.get("switches", [stats]):
        if st and vm in st["vm_ports"]:
            port = st["vm_ports"][vm]
            return next(p for p in st["ports"] if p["port"] == port)
    raise KeyError(f"vm{vm} is on no switch port")


def switch_timeline(cluster, index=0):
    """The switch's --timeline lines (switch option timeline: True) as
    dicts, in order; [] before the switch wrote any."""
    path = os.path.join(cluster.logdir, "wire", f"sw{index}", "timeline.jsonl")
    lines = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    break  # a line still being written
    except FileNotFoundError:
        pass
    return lines


def timeline_window(lines, t0, t1, port):
    """What switch port 'port' did between time.monotonic() t0 and t1 (e.g.
    Cluster.barrier_times of a phase's start and end), from the timeline's
    mono_us: the counters' growth ({rx_bytes, tx_bytes, drops, ecn_marks}
    of the port, pauses_sent of every port; egress_us, the port's egress
    time split into idle, line, blocked and paused), the egress queue's samples
    (queue_bytes at each line) and its deepest (queue_max_bytes), and
    the seconds covered. None without a line in the window."""
    inside = [ln for ln in lines if t0 * 1e6 <= ln["mono_us"] <= t1 * 1e6]
    if not inside:
        return None
    before = [ln for ln in lines if ln["mono_us"] < t0 * 1e6]
    first = before[-1] if before else inside[0]
    last = inside[-1]

    def at(ln):
        return next(p for p in ln["ports"] if p["port"] == port)

    out = {k: at(last)[k] - at(first)[k]
           for k in ("rx_bytes", "tx_bytes", "drops", "ecn_marks")}
    # where the port's egress time went (ohca-switch's idle_us, line_us,
    # blocked_us, paused_us: EthPortStats::egress_*), when the switch has them
    out["egress_us"] = {k: at(last)[f"{k}_us"] - at(first)[f"{k}_us"]
                        for k in ("idle", "line", "blocked", "paused") if f"{k}_us" in at(last)}
    out["pauses_sent"] = (sum(p["pauses_sent"] for p in last["ports"])
                          - sum(p["pauses_sent"] for p in first["ports"]))
    out["queue_samples"] = [at(ln)["queue_bytes"] for ln in inside]
    out["queue_max_bytes"] = max(at(ln)["queue_max_bytes"] for ln in inside)
    out["seconds"] = (last["mono_us"] - first["mono_us"]) / 1e6
    # (seconds since t0, running bytes) at each line: rates over time
    out["tx_series"] = [((ln["mono_us"] / 1e6) - t0, at(ln)["tx_bytes"]) for ln in inside]
    out["rx_series"] = [((ln["mono_us"] / 1e6) - t0, at(ln)["rx_bytes"]) for ln in inside]
    return out
