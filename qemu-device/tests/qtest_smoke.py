#!/usr/bin/env python3
"""End-to-end smoke test of the ohca device inside the built QEMU.

Runs QEMU under the qtest accelerator (no guest code: this script plays the
driver through qtest's port, memory and MMIO commands), so it exercises the
real glue: PCI identity and BARs, MSI-X, pci_dma_* against guest RAM, the
bottom half, the netdev (a dgram socket this script sits on the other end
of), link changes and reset through QMP.

    qemu-device/tests/qtest_smoke.py [path/to/qemu-system-x86_64]
    OHCA_QEMU_VERSION=10.0 qemu-device/tests/qtest_smoke.py
                         (build/qemu-10.0/: make qemu QEMU=10.0; 11.1 alike)

Exit status 0 when every check passed.
"""

import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The interface, generated from firmware-interface/include/ohca by
# firmware-interface/tools/gen_python.py; make brings it up to date with
# the headers (a stale copy would test the device against old layouts).
subprocess.run(["make", "-s", "-C", os.path.join(TOP, "firmware-interface"), "python"],
               stdout=sys.stderr, check=True)
sys.path.insert(0, os.path.join(TOP, "build", "firmware-interface"))
import ohca_fwif as fw  # noqa: E402

SZ, OFF = fw.SIZEOF, fw.OFFSETOF
VENDOR, DEVICE = fw.OHCA_PCI_VENDOR_ID, fw.OHCA_PCI_DEVICE_ID
REG_MAGIC, REG_ABI, REG_CAPS = fw.OHCA_REG_MAGIC, fw.OHCA_REG_ABI_VERSION, fw.OHCA_REG_CAPS
REG_DEV_CTRL, REG_DEV_STATUS = fw.OHCA_REG_DEV_CTRL, fw.OHCA_REG_DEV_STATUS
REG_ERR = fw.OHCA_REG_ERR_COUNT
REG_CMDQ_LO, REG_CMDQ_LOG = fw.OHCA_REG_CMDQ_BASE_LO, fw.OHCA_REG_CMDQ_LOG_SIZE
REG_CMDQ_PI, REG_CMDQ_CI = fw.OHCA_REG_CMDQ_PI, fw.OHCA_REG_CMDQ_CI
REG_EQ_LO, REG_EQ_LOG, REG_EQ_DB = fw.OHCA_REG_EQ0_BASE_LO, fw.OHCA_REG_EQ0_LOG_SIZE, fw.OHCA_REG_EQ0_DB
REG_TX_PI, REG_RX_PI = fw.OHCA_REG_ETH_TX_PI, fw.OHCA_REG_ETH_RX_PI
REG_IRQ_MASK, REG_PORT = fw.OHCA_REG_ETH_IRQ_MASK, fw.OHCA_REG_PORT_STATUS
ST_READY, ST_RESET_DONE = fw.OHCA_DEV_STATUS_READY, fw.OHCA_DEV_STATUS_RESET_DONE
EQ_ARM = fw.OHCA_EQ_DB_ARM
DEVICE_OUT, STATS_OUT = SZ["ohca_query_device_out"], SZ["ohca_query_stats_out"]
CMD_FMT, EQE_FMT, ETH_DESC_FMT = "<HHBBHIHHQQ", "<BBHIII", "<QHHI"
SEND_WQE_FMT, RECV_WQE_FMT = "<QBBBBIQII32xQII", "<QB7xQII"  # one SGE after the header
CQE_FMT = "<QIIIIBBBBHBB"
QP_ATTR_FMT, AV_FMT = "<10BHIIIII", "<16s6sHIBBBB"
# Command inputs up to their page lists (which follow as PBL_FMT each).
ETH_RING_FMT, PBL_FMT, ADD_GID_FMT = "<BBHIQ", "<QIBBH", "<16sHBB6sHI"
CREATE_CQ_FMT, CREATE_MR_FMT, CREATE_QP_FMT = "<IIB7x", "<IIQQII", "<BBBBB3xIIIIII"
assert struct.calcsize(CMD_FMT) + fw.OHCA_CMD_INLINE_MAX == SZ["ohca_cmd"]
assert struct.calcsize(EQE_FMT) == SZ["ohca_eqe"]
assert struct.calcsize(ETH_DESC_FMT) == SZ["ohca_eth_desc"]
assert struct.calcsize(SEND_WQE_FMT) == SZ["ohca_send_wqe"] + SZ["ohca_sge"]
assert struct.calcsize(RECV_WQE_FMT) == SZ["ohca_recv_wqe"] + SZ["ohca_sge"]
assert struct.calcsize(CQE_FMT) == SZ["ohca_cqe"]
assert struct.calcsize(QP_ATTR_FMT) == OFF["ohca_qp_attr"]["av"]
assert struct.calcsize(AV_FMT) == SZ["ohca_av"]
assert struct.calcsize(ETH_RING_FMT) == SZ["ohca_create_eth_ring_in"]
assert struct.calcsize(PBL_FMT) == SZ["ohca_pbl"]
assert struct.calcsize(ADD_GID_FMT) == SZ["ohca_add_gid_in"]
assert struct.calcsize(CREATE_CQ_FMT) == OFF["ohca_create_cq_in"]["pbl"]
assert struct.calcsize(CREATE_MR_FMT) == OFF["ohca_create_mr_in"]["pbl"]
assert struct.calcsize(CREATE_QP_FMT) == OFF["ohca_create_qp_in"]["sq_pbl"]

# Where this test places things in the 128 MiB guest's address space.
BAR0, BAR2, BAR4 = 0xE0000000, 0xE0200000, 0xE0400000
EQ, CMDQ, OUT, TXR, RXR, BUF = 0x100000, 0x110000, 0x120000, 0x130000, 0x140000, 0x150000
MBOX, RDMA = 0x160000, 0x200000  # command mailbox; RDMA rings and buffers
MSI_ADDR = 0x90000  # MSI-X messages land in RAM here, one u32 per vector

failures = []


def check(cond, what):
    print(("  ok   " if cond else "  FAIL ") + what)
    if not cond:
        failures.append(what)


class QTest:
    def __init__(self, qemu, udp_local, udp_remote, tmp):
        self.qmp_path = os.path.join(tmp, "qmp.sock")
        self.trace_path = os.path.join(tmp, "trace.log")
        argv = [qemu, "-accel", "qtest", "-qtest", "stdio", "-qtest-log", "/dev/null",
                "-trace", "ohca_*", "-D", self.trace_path,
                "-display", "none", "-nodefaults", "-m", "128",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                "-netdev", "dgram,id=n0,local.type=inet,local.host=127.0.0.1,"
                f"local.port={udp_local},remote.type=inet,remote.host=127.0.0.1,"
                f"remote.port={udp_remote}",
                "-device", "ohca,id=ohca0,netdev=n0,mac=02:00:00:00:00:01,addr=04.0"]
        for d in ("/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"):
            if os.path.isdir(d):
                argv += ["-L", d]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=sys.stderr, text=True, bufsize=1)
        for _ in range(100):
            if os.path.exists(self.qmp_path):
                break
            time.sleep(0.05)
        self.qmp = socket.socket(socket.AF_UNIX)
        self.qmp.connect(self.qmp_path)
        self.qmpf = self.qmp.makefile("rw")
        self.qmpf.readline()
        self.qmp_cmd("qmp_capabilities")

    def qmp_cmd(self, execute, **args):
        self.qmpf.write(json.dumps({"execute": execute, "arguments": args}) + "\n")
        self.qmpf.flush()
        while True:
            r = json.loads(self.qmpf.readline())
            if "return" in r or "error" in r:
                return r

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        while True:
            r = self.p.stdout.readline()
            if not r:
                raise RuntimeError("qemu exited")
            if r.startswith("OK") or r.startswith("FAIL") or r.startswith("ERR"):
                break
        if not r.startswith("OK"):
            raise RuntimeError(f"qtest: {line}: {r.strip()}")
        parts = r.split()
        return int(parts[1], 16) if len(parts) > 1 else None

    def readl(self, a):
        return self.cmd(f"readl {a:#x}")

    def writel(self, a, v):
        self.cmd(f"writel {a:#x} {v:#x}")

    def writeq(self, a, v):
        self.cmd(f"writeq {a:#x} {v:#x}")

    def readb(self, a):
        return self.cmd(f"readb {a:#x}")

    def write(self, a, data):
        if data:
            self.cmd(f"write {a:#x} {len(data)} 0x{data.hex()}")

    def read(self, a, n):
        self.p.stdin.write(f"read {a:#x} {n}\n")
        self.p.stdin.flush()
        r = self.p.stdout.readline().split()
        return bytes.fromhex(r[1][2:])

    def cfg_addr(self, slot, reg):
        return 0x80000000 | (slot << 11) | reg

    def cfg_read(self, slot, reg):
        self.cmd(f"outl 0xcf8 {self.cfg_addr(slot, reg & ~3):#x}")
        v = self.cmd("inl 0xcfc")
        return (v >> (8 * (reg & 3))) & 0xFFFFFFFF

    def cfg_write(self, slot, reg, v):
        self.cmd(f"outl 0xcf8 {self.cfg_addr(slot, reg):#x}")
        self.cmd(f"outl 0xcfc {v:#x}")

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()


# Standard PCI config space (Linux include/uapi/linux/pci_regs.h).
PCI_CAP_ID_MSIX, PCI_CAP_ID_AF = 0x11, 0x13
PCI_CAP_AF_SIZEOF, PCI_AF_CAP_TP, PCI_AF_CAP_FLR, PCI_AF_CTRL_FLR = 6, 0x01, 0x02, 0x01


def find_cap(q, slot, cap_id):
    """Config offset of capability cap_id, walking the list, or None."""
    cap, seen = q.cfg_read(slot, 0x34) & 0xFC, 0
    while cap and seen < 48:
        v = q.cfg_read(slot, cap)
        if v & 0xFF == cap_id:
            return cap
        cap, seen = (v >> 8) & 0xFC, seen + 1
    return None


def wait_for(pred, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.01)
    return False


def main():
    version = os.environ.get("OHCA_QEMU_VERSION", "7.2")
    built = "build/qemu" if version == "7.2" else f"build/qemu-{version}"
    qemu = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, built, "qemu-system-x86_64")
    if not os.access(qemu, os.X_OK):
        sys.exit(f"qtest_smoke: {qemu} missing: make qemu QEMU={version}")
    wire = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    wire.bind(("127.0.0.1", 0))
    wire.settimeout(5)
    udp_remote = wire.getsockname()[1]
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    udp_local = probe.getsockname()[1]
    probe.close()

    check_max_qp_property(qemu)
    check_link_layer_property(qemu)
    with tempfile.TemporaryDirectory() as tmp:
        q = QTest(qemu, udp_local, udp_remote, tmp)
        try:
            run(q, wire, udp_local)
        finally:
            q.close()
        check_trace(q.trace_path)
    print(f"qtest smoke: {'PASS' if not failures else 'FAIL (' + str(len(failures)) + ')'}")
    return 1 if failures else 0


def check_max_qp_property(qemu):
    """-device ohca,max-qp=N: 1..65536 (the engine's QP table); QEMU
    refuses anything else at realize, with the range in the message."""
    for bad in ("0", "65537"):
        argv = [qemu, "-accel", "qtest", "-display", "none", "-nodefaults", "-m", "128",
                "-device", f"ohca,max-qp={bad}"]
        for d in ("/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"):
            if os.path.isdir(d):
                argv += ["-L", d]
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=60)
        check(r.returncode != 0 and "max-qp must be 1..65536" in r.stderr,
              f"max-qp={bad} refused ({r.returncode}: {r.stderr.strip()[:120]})")


def check_link_layer_property(qemu):
    """-device ohca,link-layer=eth|ib: anything else is refused at realize
    with a message that names the choices."""
    argv = [qemu, "-accel", "qtest", "-display", "none", "-nodefaults", "-m", "128",
            "-device", "ohca,link-layer=roce"]
    for d in ("/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"):
        if os.path.isdir(d):
            argv += ["-L", d]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60)
    check(r.returncode != 0 and "link-layer must be eth or ib" in r.stderr,
          f"link-layer=roce refused ({r.returncode}: {r.stderr.strip()[:120]})")


# What the run above must have left in the device's trace (-trace 'ohca_*'):
# every kind of event, with the fields of a few known ones.
TRACE_EXPECT = [
    (r"ohca_reg_write BAR0 0x", "register writes"),
    (r"ohca_reg_read BAR0 0x", "register reads"),
    (r"ohca_db_write doorbell page \d+ offset", "doorbell writes"),
    (r"ohca_irq MSI-X vector \d+ delivered 1", "MSI-X deliveries"),
    (r"ohca_cmd command 0x1 status 0x0 syndrome 0x0", "QUERY_DEVICE completed"),
    (r"ohca_cmd command 0x1 status 0x4 syndrome 0x1", "QUERY_DEVICE to a bad address"),
    (r"ohca_eqe EQ 0 event type \d+", "EQ 0 events"),
    (r"ohca_wqe QP 0x[0-9a-f]+ send WQE \d+ opcode \d+ taken", "send WQEs taken"),
    (r"ohca_cqe CQE on CQ \d+: QP 0x[0-9a-f]+ opcode \d+ status 0 wr_id", "CQEs"),
    (r"ohca_tx frame out, \d+ bytes", "frames sent"),
    (r"ohca_rx frame in, \d+ bytes", "frames received"),
    (r"ohca_run engine run took \d+ ns", "engine runs"),
    (r"ohca_reset device reset", "the reset"),
]


def check_trace(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        check(False, f"trace log: {e}")
        return
    for pattern, what in TRACE_EXPECT:
        check(re.search(pattern, text, re.M), f"trace shows {what} ({pattern})")


def run(q, wire, udp_local):
    slot = 4
    print("PCI identity")
    ids = q.cfg_read(slot, 0)
    check(ids == (DEVICE << 16) | VENDOR, f"vendor:device {ids & 0xffff:04x}:{ids >> 16:04x}")
    check(q.cfg_read(slot, 8) >> 8 == fw.OHCA_PCI_CLASS << 8, "class 0x0200, prog-if 0")
    check(q.cfg_read(slot, 8) & 0xFF == fw.OHCA_PCI_REVISION, "revision")
    check(q.cfg_read(slot, 0x2C) == (fw.OHCA_PCI_SUBSYS_ID << 16) | fw.OHCA_PCI_SUBSYS_VENDOR_ID,
          "subsystem ids")

    print("BARs")
    sizes = {}
    for bar, base in ((fw.OHCA_BAR_REGS, BAR0), (fw.OHCA_BAR_DB, BAR2), (fw.OHCA_BAR_MSIX, BAR4)):
        reg = 0x10 + 4 * bar
        q.cfg_write(slot, reg, 0xFFFFFFFF)
        q.cfg_write(slot, reg + 4, 0xFFFFFFFF)
        lo, hi = q.cfg_read(slot, reg), q.cfg_read(slot, reg + 4)
        check(lo & 0x7 == 0x4, f"BAR{bar} is 64-bit memory")
        size = (~(((hi << 32) | lo) & ~0xF) + 1) & 0xFFFFFFFFFFFFFFFF
        sizes[bar] = size
        q.cfg_write(slot, reg, base)
        q.cfg_write(slot, reg + 4, 0)
    check(sizes[0] == fw.OHCA_REGS_BAR_SIZE, f"BAR0 size ({sizes[0]:#x})")
    check(sizes[2] == fw.OHCA_BAR2_SIZE, f"BAR2 size ({sizes[2]:#x})")
    check(sizes[4] == fw.OHCA_MSIX_BAR_SIZE, f"BAR4 size ({sizes[4]:#x})")
    q.cfg_write(slot, 0x4, 0x6)  # memory space + bus master

    print("MSI-X")
    msix = find_cap(q, slot, PCI_CAP_ID_MSIX)
    check(msix is not None, "MSI-X capability present")
    ctrl = q.cfg_read(slot, msix) >> 16
    check((ctrl & 0x7FF) + 1 == fw.OHCA_NUM_MSIX, f"vectors ({(ctrl & 0x7ff) + 1})")
    table = q.cfg_read(slot, msix + 4)
    check(table & 7 == 4, "table in BAR4")

    def msix_enable():
        for v in range(fw.OHCA_NUM_MSIX):
            e = BAR4 + (table & ~7) + 16 * v
            q.writel(e, MSI_ADDR + 4 * v)
            q.writel(e + 4, 0)
            q.writel(e + 8, 0xA000 + v)
            q.writel(e + 12, 0)
        q.cfg_write(slot, msix, (1 << 31) | msix)  # enable (bit 15 of control)

    msix_enable()

    def msi(v):
        return struct.unpack("<I", q.read(MSI_ADDR + 4 * v, 4))[0]

    print("registers")
    check(q.readl(BAR0 + REG_MAGIC) == fw.OHCA_MAGIC, "MAGIC")
    # the engine's heap, which the soak bounds (0 only in an ASan build)
    heap = q.qmp_cmd("qom-get", path="/machine/peripheral/ohca0", property="x-engine-heap")
    check(isinstance(heap.get("return"), int) and heap["return"] > 4096,
          f"x-engine-heap counts the engine's memory ({heap})")
    check(q.readl(BAR0 + REG_ABI) == fw.OHCA_ABI_VERSION, "ABI_VERSION")
    caps = (fw.OHCA_CAP_ROCE_V2 | fw.OHCA_CAP_ETH | fw.OHCA_CAP_RESET | fw.OHCA_CAP_UD
            | fw.OHCA_CAP_UC)
    check(q.readl(BAR0 + REG_CAPS) == caps, "CAPS")
    check(q.readl(BAR0 + REG_PORT) == 1, "PORT_STATUS link up")

    def bring_up():
        q.writel(BAR0 + REG_DEV_CTRL, fw.OHCA_DEV_CTRL_RESET)
        check(q.readl(BAR0 + REG_DEV_STATUS) == ST_RESET_DONE, "RESET_DONE")
        q.write(EQ, bytes(16 * 16))
        q.writel(BAR0 + REG_EQ_LO, EQ)
        q.writel(BAR0 + REG_EQ_LOG, 4)
        q.writel(BAR0 + REG_EQ_DB, EQ_ARM)
        q.writel(BAR0 + REG_CMDQ_LO, CMDQ)
        q.writel(BAR0 + REG_CMDQ_LOG, 3)
        q.writel(BAR0 + REG_DEV_CTRL, fw.OHCA_DEV_CTRL_ENABLE)
        check(q.readl(BAR0 + REG_DEV_STATUS) == ST_READY, "READY")

    print("bring-up")
    bring_up()
    check(q.readb(BAR0 + REG_MAGIC) == 0, "byte read reads 0")
    q.writel(BAR0 + REG_MAGIC, 0)
    check(q.readl(BAR0 + REG_ERR) == 2, "ERR_COUNT counted both")
    check(q.readl(BAR2 + 0x5000) == 0, "doorbell page reads 0")
    q.writel(BAR2 + 0x5000, 1)  # unowned page: counted in db_errors

    state = {"pi": 0, "eq": 0}

    def command(opcode, inline=b"", out_len=0, out_addr=0):
        slot_ = state["pi"] & 7
        in_addr, body = 0, inline
        if len(inline) > fw.OHCA_CMD_INLINE_MAX:  # mailbox
            q.write(MBOX, inline)
            in_addr, body = MBOX, b""
        entry = struct.pack(CMD_FMT, opcode, 0x55 + state["pi"], 0, 0, len(inline), 0,
                            out_len, 0, in_addr, out_addr) + body.ljust(fw.OHCA_CMD_INLINE_MAX, b"\0")
        q.write(CMDQ + 64 * slot_, entry)
        state["pi"] += 1
        q.writel(BAR0 + REG_CMDQ_PI, state["pi"])
        ok = wait_for(lambda: q.readl(BAR0 + REG_CMDQ_CI) == state["pi"])
        check(ok, f"command {opcode:#x} consumed (CI advanced)")
        e = q.read(CMDQ + 64 * slot_, 64)
        status = e[OFF["ohca_cmd"]["status"]]
        syndrome = struct.unpack_from("<I", e, OFF["ohca_cmd"]["syndrome"])[0]
        eqe = q.read(EQ + 16 * (state["eq"] & 15), 16)
        typ, flags, code, p0, p1, p2 = struct.unpack(EQE_FMT, eqe)
        owner = 0 if (state["eq"] >> 4) & 1 else 1  # flips on every wrap of the 16 entries
        check(typ == fw.OHCA_EQE_CMD_DONE and flags & fw.OHCA_EQE_OWNER == owner and code == status and p0 == 0x55 + state["pi"] - 1
              and p2 == slot_, f"CMD_DONE event for {opcode:#x}")
        state["eq"] += 1
        q.writel(BAR0 + REG_EQ_DB, state["eq"] | EQ_ARM)
        return status, syndrome

    print("commands")
    before = msi(0)
    st, _ = command(fw.OHCA_CMD_QUERY_DEVICE, out_len=DEVICE_OUT, out_addr=OUT)
    check(st == 0, "QUERY_DEVICE OK")
    out = q.read(OUT, DEVICE_OUT)
    guid = struct.unpack_from("<Q", out, OFF["ohca_query_device_out"]["node_guid"])[0]
    part = struct.unpack_from("<I", out, OFF["ohca_query_device_out"]["vendor_part_id"])[0]
    check(guid == 0x000000FFFE000001, f"node GUID is the MAC's EUI-64 ({guid:#018x})")
    check(part == DEVICE, "vendor_part_id")
    check(msi(0) == 0xA000 and before == 0, "MSI-X vector 0 delivered")
    st, syn = command(0x7F)
    check(st == fw.OHCA_STATUS_BAD_OPCODE and syn == 0x7F, "bad opcode -> BAD_OPCODE")
    st, syn = command(fw.OHCA_CMD_QUERY_DEVICE, out_len=DEVICE_OUT, out_addr=0xFFFFFFF000)
    check(st == fw.OHCA_STATUS_BAD_ADDR and syn == 1, "output outside RAM -> BAD_ADDR(1)")
    st, _ = command(fw.OHCA_CMD_ALLOC_UAR, out_len=SZ["ohca_alloc_uar_out"], out_addr=OUT)
    uar = struct.unpack_from("<I", q.read(OUT, 4))[0]
    check(st == 0 and uar == 1, "ALLOC_UAR -> page 1")
    # Owned page, but a 32-bit store names no queue (doorbells are one
    # 64-bit store: queue number low, value high): counted too.
    q.writel(BAR2 + fw.OHCA_DB_PAGE_SIZE * uar, 1)

    print("Ethernet TX")
    for typ, base in ((fw.OHCA_ETH_RING_TX, TXR), (fw.OHCA_ETH_RING_RX, RXR)):
        st, _ = command(fw.OHCA_CMD_CREATE_ETH_RING, struct.pack(ETH_RING_FMT, typ, 4, 0, 0, base))
        check(st == 0, f"CREATE_ETH_RING type {typ}")
    frame = bytes.fromhex("ffffffffffff020000000001" "0806") + bytes(range(28))
    q.write(BUF, frame)
    q.write(TXR, struct.pack(ETH_DESC_FMT, BUF, len(frame), 0, 0))
    q.writel(BAR0 + REG_TX_PI, 1)
    try:
        got, _ = wire.recvfrom(65536)
    except socket.timeout:
        got = b""
    check(got[: len(frame)] == frame and len(got) == fw.OHCA_ETH_MIN_FRAME,
          f"frame on the wire, padded to the minimum ({len(got)})")
    ok = wait_for(lambda: struct.unpack_from("<H", q.read(TXR + 10, 2))[0] == 1)
    check(ok, "TX descriptor DONE")
    check(wait_for(lambda: msi(1) == 0xA001), "MSI-X vector 1 delivered")

    print("Ethernet RX")
    q.writel(BAR0 + REG_IRQ_MASK, 0)
    q.write(RXR, struct.pack(ETH_DESC_FMT, BUF + 0x1000, 2048, 0, 0))
    q.writel(BAR0 + REG_RX_PI, 1)
    rx = bytes.fromhex("020000000001" "020000000002" "0800") + bytes(50)
    wire.sendto(rx, ("127.0.0.1", udp_local))
    ok = wait_for(lambda: struct.unpack_from("<H", q.read(RXR + 10, 2))[0] == 1)
    check(ok, "RX descriptor DONE")
    ln = struct.unpack_from("<H", q.read(RXR + 8, 2))[0]
    check(ln == len(rx) and q.read(BUF + 0x1000, ln) == rx, "received frame in the buffer")
    # An ordinary frame with no descriptor is dropped and counted, as on a
    # NIC: nothing waits in QEMU's queue to hold back the backend ...
    wire.sendto(rx, ("127.0.0.1", udp_local))
    # ... so this RoCEv2 frame is taken at once; it never uses the ring.
    roce = (bytes.fromhex("020000000001" "020000000002" "0800")
            + bytes.fromhex("4500003c00004000401100000a0000020a000001")
            + struct.pack(">HHHH", 49152, 4791, 40, 0) + bytes(32))
    wire.sendto(roce, ("127.0.0.1", udp_local))
    time.sleep(0.3)
    q.write(RXR + 16, struct.pack(ETH_DESC_FMT, BUF + 0x2000, 2048, 0, 0))
    q.writel(BAR0 + REG_RX_PI, 2)
    time.sleep(0.3)
    check(struct.unpack_from("<H", q.read(RXR + 16 + 10, 2))[0] == 0,
          "the dropped frame is not delivered once a descriptor is posted")
    st, _ = command(fw.OHCA_CMD_QUERY_STATS, out_len=STATS_OUT, out_addr=OUT)
    raw = q.read(OUT, STATS_OUT)

    def stat(name):
        return struct.unpack_from("<Q", raw, OFF["ohca_query_stats_out"][name])[0]

    check(stat("eth_rx_frames") == 1, f"eth_rx_frames 1 ({stat('eth_rx_frames')})")
    check(stat("eth_rx_dropped_no_desc") == 1,
          f"eth_rx_dropped_no_desc 1 ({stat('eth_rx_dropped_no_desc')})")
    check(stat("eth_tx_frames") == 1, f"eth_tx_frames 1 ({stat('eth_tx_frames')})")
    check(stat("roce_rx_frames") == 1, f"roce_rx_frames 1 ({stat('roce_rx_frames')})")
    check(stat("reg_errors") == 2, f"reg_errors 2 ({stat('reg_errors')})")
    check(stat("db_errors") == 2, f"db_errors 2 ({stat('db_errors')})")

    rdma_loopback(q, command)

    print("link")
    r = q.qmp_cmd("set_link", name="n0", up=False)
    check("return" in r, "QMP set_link down")
    check(wait_for(lambda: q.readl(BAR0 + REG_PORT) == 0), "PORT_STATUS down")
    eqe = q.read(EQ + 16 * (state["eq"] & 15), 16)
    typ, flags, code, p0 = struct.unpack_from(EQE_FMT[:5], eqe)
    owner = 0 if (state["eq"] >> 4) & 1 else 1
    check(typ == fw.OHCA_EQE_PORT_CHANGE and flags & fw.OHCA_EQE_OWNER == owner
          and code == fw.OHCA_PORT_DOWN and p0 == 1, "PORT_CHANGE(DOWN) event")
    q.qmp_cmd("set_link", name="n0", up=True)
    check(wait_for(lambda: q.readl(BAR0 + REG_PORT) == 1), "PORT_STATUS up again")

    print("function level reset (PCI Advanced Features)")
    af = find_cap(q, slot, PCI_CAP_ID_AF)
    check(af is not None, "AF capability present")
    hdr = q.cfg_read(slot, af)
    check((hdr >> 16) & 0xFF == PCI_CAP_AF_SIZEOF, "AF length 6")
    check((hdr >> 24) & 0xFF == PCI_AF_CAP_TP | PCI_AF_CAP_FLR, "AF_CAP: TP and FLR")
    # AF_CAP is read-only; reserved AF_CTRL bits and AF_STATUS change nothing.
    q.cfg_write(slot, af, hdr & 0x00FFFFFF)
    q.cfg_write(slot, af + 4, 0xFFFE)
    check(q.cfg_read(slot, af) == hdr and q.cfg_read(slot, af + 4) & 0xFFFF == 0,
          "AF registers ignore writes other than FLR")
    check(q.readl(BAR0 + REG_DEV_STATUS) == ST_READY, "still READY without FLR")
    check(q.readl(BAR0 + REG_ERR) != 0, "ERR_COUNT non-zero before the FLR")
    q.cfg_write(slot, af + 4, PCI_AF_CTRL_FLR)
    check(q.cfg_read(slot, af + 4) & 0xFF == 0, "AF_CTRL FLR bit reads 0")
    check(q.cfg_read(slot, 0x4) & 0x7 == 0, "FLR cleared memory space and bus master")
    check(q.cfg_read(slot, 0x10) == 0x4, "FLR cleared BAR0")
    check(q.cfg_read(slot, msix) >> 31 == 0, "FLR disabled MSI-X")
    # Map the function again, as the OS restores it after an FLR.
    for bar, base in ((fw.OHCA_BAR_REGS, BAR0), (fw.OHCA_BAR_DB, BAR2), (fw.OHCA_BAR_MSIX, BAR4)):
        q.cfg_write(slot, 0x10 + 4 * bar, base)
        q.cfg_write(slot, 0x14 + 4 * bar, 0)
    q.cfg_write(slot, 0x4, 0x6)
    check(q.readl(BAR0 + REG_DEV_STATUS) == ST_RESET_DONE, "FLR reset the engine (RESET_DONE)")
    check(q.readl(BAR0 + REG_CMDQ_LO) == 0 and q.readl(BAR0 + REG_ERR) == 0,
          "FLR: registers at power-on values")
    msix_enable()
    q.write(MSI_ADDR, bytes(4 * fw.OHCA_NUM_MSIX))
    bring_up()
    state["pi"], state["eq"] = 0, 0
    st, _ = command(fw.OHCA_CMD_QUERY_DEVICE, out_len=DEVICE_OUT, out_addr=OUT)
    check(st == 0 and msi(0) == 0xA000, f"QUERY_DEVICE and its MSI-X after the FLR ({st}, {msi(0):#x})")
    st, _ = command(fw.OHCA_CMD_CREATE_PD, out_len=SZ["ohca_create_out"], out_addr=OUT)
    pd = struct.unpack_from("<I", q.read(OUT, 4))[0]
    check(st == 0 and pd == 1, "FLR freed every resource (CREATE_PD -> 1 again)")

    print("reset")
    r = q.qmp_cmd("system_reset")
    check("return" in r, "QMP system_reset")
    # The BARs and bus master go away with a system reset; map BAR0 again.
    q.cfg_write(slot, 0x10, BAR0)
    q.cfg_write(slot, 0x14, 0)
    q.cfg_write(slot, 0x4, 0x6)
    check(wait_for(lambda: q.readl(BAR0 + REG_DEV_STATUS) == ST_RESET_DONE), "DEV_STATUS RESET_DONE")
    check(q.readl(BAR0 + REG_CMDQ_LO) == 0 and q.readl(BAR0 + REG_ERR) == 0, "registers at power-on values")


def rdma_loopback(q, command):
    """RC RDMA WRITE and SEND between two QPs of the device, looped back
    inside it: commands by mailbox, 64-bit doorbells in BAR2 page 0, CQEs."""
    print("RDMA loopback")
    cq_ring, sq = RDMA, [RDMA + 0x1000, RDMA + 0x3000]
    rq, src, dst, pbls = [RDMA + 0x2000, RDMA + 0x4000], RDMA + 0x10000, RDMA + 0x11000, RDMA + 0x20000

    def pbl(n, pages):
        addr = pbls + 0x1000 * n
        q.write(addr, struct.pack(f"<{len(pages)}Q", *pages))
        return struct.pack(PBL_FMT, addr, len(pages), 12, 1, 0)

    def create(opcode, inline=b""):
        st, _ = command(opcode, inline, out_len=SZ["ohca_create_out"], out_addr=OUT)
        return st, struct.unpack_from("<I", q.read(OUT, 4))[0]

    q.write(RDMA, bytes(0x22000))
    gid = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])
    st, _ = command(fw.OHCA_CMD_ADD_GID,
                    struct.pack(ADD_GID_FMT, gid, 0, 1, fw.OHCA_GID_TYPE_ROCE_V2_IPV4,
                                bytes.fromhex("020000000001"), 0xFFFF, 0))
    check(st == 0, "ADD_GID ::ffff:10.0.0.1")
    st, pd = create(fw.OHCA_CMD_CREATE_PD)
    check(st == 0 and pd == 1, "CREATE_PD -> 1")
    st, cqn = create(fw.OHCA_CMD_CREATE_CQ, struct.pack(CREATE_CQ_FMT, 0, 0, 4) + pbl(0, [cq_ring]))
    check(st == 0 and cqn == 1, "CREATE_CQ -> 1")
    access = (fw.OHCA_ACCESS_LOCAL_WRITE | fw.OHCA_ACCESS_REMOTE_WRITE
              | fw.OHCA_ACCESS_REMOTE_READ)
    st, key = create(fw.OHCA_CMD_CREATE_MR,
                     struct.pack(CREATE_MR_FMT, pd, access, src, 0x2000, 0, 0) + pbl(1, [src, dst]))
    check(st == 0 and key >> 8 == 1, f"CREATE_MR -> key {key:#x}")
    qpn = []
    for i in range(2):
        qp_in = struct.pack(CREATE_QP_FMT, fw.OHCA_QPT_RC, 2, 2, fw.OHCA_SQ_LOG_STRIDE_MIN,
                            fw.OHCA_RQ_LOG_STRIDE_MIN, pd, cqn, cqn, 0, 64, 0)
        st, n = create(fw.OHCA_CMD_CREATE_QP,
                       qp_in + pbl(2 + 2 * i, [sq[i]]) + pbl(3 + 2 * i, [rq[i]]))
        qpn.append(n)
    # QPNs come from a cursor seeded per device instance (not always 2, 3),
    # in 2..max_qp+1 (QEMU's max-qp default: 65536).
    check(len(set(qpn)) == 2 and all(2 <= n <= 65537 for n in qpn), f"CREATE_QP -> {qpn}")
    av = struct.pack(AV_FMT, gid, bytes.fromhex("020000000001"), 0xFFFF, 0, 64, 0, 0, 1)
    TO_INIT = fw.OHCA_QP_STATE | fw.OHCA_QP_ACCESS_FLAGS | fw.OHCA_QP_PKEY_INDEX | fw.OHCA_QP_PORT
    TO_RTR = (fw.OHCA_QP_STATE | fw.OHCA_QP_AV | fw.OHCA_QP_PATH_MTU | fw.OHCA_QP_RQ_PSN
              | fw.OHCA_QP_MIN_RNR_TIMER | fw.OHCA_QP_MAX_DEST_RD_ATOMIC | fw.OHCA_QP_DEST_QPN)
    TO_RTS = (fw.OHCA_QP_STATE | fw.OHCA_QP_TIMEOUT | fw.OHCA_QP_RETRY_CNT | fw.OHCA_QP_RNR_RETRY
              | fw.OHCA_QP_SQ_PSN | fw.OHCA_QP_MAX_QP_RD_ATOMIC)
    ok = True
    for i in range(2):
        for mask, attr in (
                (TO_INIT, struct.pack(QP_ATTR_FMT, fw.OHCA_QPS_INIT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                      access, 0, 0, 0, 0)),
                (TO_RTR, struct.pack(QP_ATTR_FMT, fw.OHCA_QPS_RTR, 0, 3, 0, 0, 0, 1, 0, 4, 0, 0, 0,
                                       qpn[1 - i], 100, 0, 0)),
                (TO_RTS, struct.pack(QP_ATTR_FMT, fw.OHCA_QPS_RTS, 0, 0, 14, 7, 7, 0, 4, 0, 0, 0, 0, 0, 0,
                                      100, 0))):
            # qpn, attr_mask, attr with its AV; udp_sport 0 (the device's)
            inp = struct.pack("<II", qpn[i], mask) + attr + av
            inp += bytes(fw.SIZEOF["ohca_modify_qp_in"] - len(inp))
            st, syn = command(fw.OHCA_CMD_MODIFY_QP, inp)
            ok = ok and st == 0
    check(ok, "MODIFY_QP RESET -> INIT -> RTR -> RTS (both)")

    payload = bytes((i * 7 + 1) & 0xFF for i in range(3000))
    q.write(src, payload)
    # RQ of QP 3: one receive WQE for the SEND.
    q.write(rq[1], struct.pack(RECV_WQE_FMT, 0xBEEF, 1, dst + 3000, 1000, key))
    q.writeq(BAR2 + fw.OHCA_DB_RQ, (1 << 32) | qpn[1])
    # SQ of QP 2: RDMA WRITE of 3000 bytes, then SEND of 500.
    sig = fw.OHCA_WQE_SIGNALED
    q.write(sq[0], struct.pack(SEND_WQE_FMT, 0x11, fw.OHCA_WR_RDMA_WRITE, sig, 1, 0, 0, dst, key, 0, src, 3000, key))
    q.write(sq[0] + (1 << fw.OHCA_SQ_LOG_STRIDE_MIN),
            struct.pack(SEND_WQE_FMT, 0x22, fw.OHCA_WR_SEND, sig, 1, 0, 0, 0, 0, 0,
                                     src, 500, key))
    q.writeq(BAR2 + fw.OHCA_DB_SQ, (2 << 32) | qpn[0])

    def cqe(i):
        return struct.unpack(CQE_FMT, q.read(cq_ring + SZ["ohca_cqe"] * i, SZ["ohca_cqe"]))

    check(wait_for(lambda: cqe(2)[11] == 1), "three CQEs written")
    c = [cqe(i) for i in range(3)]
    by_id = {e[0]: e for e in c}
    check(by_id.get(0x11, (0,) * 12)[5:7] == (fw.OHCA_CQE_RDMA_WRITE, fw.OHCA_CQE_SUCCESS), "RDMA WRITE completed: opcode, status OK")
    check(by_id.get(0x22, (0,) * 12)[5:7] == (fw.OHCA_CQE_SEND, fw.OHCA_CQE_SUCCESS), "SEND completed")
    r = by_id.get(0xBEEF, (0,) * 12)
    check(r[5:7] == (fw.OHCA_CQE_RECV, fw.OHCA_CQE_SUCCESS) and r[1] == 500 and r[3] == qpn[1] and r[4] == qpn[0],
          "RECV completion: byte_len 500, qpn, src_qp")
    check(q.read(dst, 3000) == payload, "written bytes arrived")
    check(q.read(dst + 3000, 500) == payload[:500], "sent bytes arrived")

    # DMA reaches guest RAM only: the engine runs a doorbell's work without
    # the BQL, which an MMIO access would take with the engine lock held.
    # An MR over the I/O APIC's registers (MMIO another device owns,
    # harmless to read; a DMA of it before 2026-12-06 read them): a SEND
    # gathering from it completes with LOC_PROT_ERR.
    mmio = 0xFEC00000
    st, mmio_key = create(fw.OHCA_CMD_CREATE_MR,
                          struct.pack(CREATE_MR_FMT, pd, access, mmio, 0x1000, 0, 0) + pbl(6, [mmio]))
    check(st == 0, f"CREATE_MR over MMIO -> key {mmio_key:#x}")
    q.write(rq[1] + (1 << fw.OHCA_RQ_LOG_STRIDE_MIN),
            struct.pack(RECV_WQE_FMT, 0xBEF0, 1, dst + 3500, 100, key))
    q.writeq(BAR2 + fw.OHCA_DB_RQ, (2 << 32) | qpn[1])
    q.write(sq[0] + 2 * (1 << fw.OHCA_SQ_LOG_STRIDE_MIN),
            struct.pack(SEND_WQE_FMT, 0x33, fw.OHCA_WR_SEND, sig, 1, 0, 0, 0, 0, 0,
                        mmio, 64, mmio_key))
    q.writeq(BAR2 + fw.OHCA_DB_SQ, (3 << 32) | qpn[0])
    check(wait_for(lambda: cqe(3)[11] == 1), "a fourth CQE written")
    e = cqe(3)
    check(e[0] == 0x33 and e[6] == fw.OHCA_CQE_LOC_PROT_ERR,
          f"SEND from MMIO refused: wr_id {e[0]:#x} status {e[6]} (LOC_PROT_ERR)")



if __name__ == "__main__":
    sys.exit(main())
