#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus, fuzz/corpus/<fuzzer>/, for the engine fuzzers.

Each seed is encoded for the structured decoders of fuzz_<fuzzer>.cpp
(fuzz_common.hpp's Input: little-endian integers; below(n) takes one byte
when n <= 256, else two; reads past the end give 0). The seeds walk the
paths a real driver takes — bring-up, every command with a valid input,
Ethernet rings with descriptors, frames of every kind — so that fuzzing
starts from deep states. Rerun after changing a decoder:
    qemu-device/engine/fuzz/gen_corpus.py
`--check BUILD_DIR` (the ctest fuzz_seeds) writes nothing: it fails when a
committed seed differs from what this script makes, or when an rdma seed
no longer reaches what EXPECT_RDMA says it does (fuzz_rdma_replay's
OHCA_FUZZ_VERBOSE lines) -- a decoder changed under it.
"""
import hashlib
import os
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADERS = os.path.join(HERE, "..", "..", "..", "firmware-interface", "include", "ohca")


def header_constants(*files):
    """The OHCA_ constants the firmware-interface headers define, which are
    the only place they are written: #defines of a number and enum members
    (one without a value is the member before it plus one, as OHCA_CMD_MAX)."""
    num = r"(0x[0-9a-fA-F]+|\d+)u?"
    consts = {}
    for f in files:
        with open(os.path.join(HEADERS, f)) as fh:
            following = None  # the value an enum member without one takes
            for line in fh:
                if re.match(r"\s*enum\b", line):
                    following = 0
                m = re.match(r"#define\s+(OHCA_\w+)\s+" + num + r"\s*(/\*.*)?$", line.strip())
                if m:
                    consts[m[1]] = int(m[2], 0)
                    continue
                m = re.match(r"\s*(OHCA_\w+)\s*(?:=\s*" + num + r")?\s*,?\s*(/\*.*)?$", line)
                if m and following is not None:
                    value = int(m[2], 0) if m[2] else following
                    consts[m[1]] = value
                    following = value + 1
    return consts


H = header_constants("ohca_regs.h", "ohca_cmd.h")
CMD_MAX = H["OHCA_CMD_MAX"]
OHCA_NUM_DB_PAGES = H["OHCA_NUM_DB_PAGES"]
OHCA_REGS_BAR_SIZE = H["OHCA_REGS_BAR_SIZE"]


class Enc:
    def __init__(self):
        self.b = bytearray()

    def u8(self, v):
        self.b += bytes([v & 0xFF])
        return self

    def u16(self, v):
        self.b += struct.pack("<H", v & 0xFFFF)
        return self

    def u32(self, v):
        self.b += struct.pack("<I", v & 0xFFFFFFFF)
        return self

    def u64(self, v):
        self.b += struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)
        return self

    def below(self, n, v):
        assert 0 <= v < max(n, 1)
        if n <= 1:
            return self
        if n <= 256:
            return self.u8(v)
        return self.u16(v) if n <= 65536 else self.u32(v)

    def rng(self, lo, hi, v):
        return self.below(hi - lo + 1, v - lo)

    def yes(self, n):  # one_in(n) true
        return self.below(n, 0)

    def no(self, n):  # one_in(n) false
        return self.below(n, 1)

    def flag(self, v):
        return self.u8(1 if v else 0)

    def raw(self, data):
        self.b += bytes(data)
        return self

    def preferred_addr(self, k=0):  # pick_addr: the preferred address + k*align
        return self.below(16, 7).below(8, k)


NATURAL_IN = {0: 0, 1: 0, 2: 8, 3: 16, 4: 16, 5: 8, 6: 0, 7: 8, 8: 32, 9: 8, 0xA: 0}
OUT = {1: 4096, 2: 4096, 6: 4096, 0xA: 4096}


def cmd_entry(e, op, payload, out=False):
    """A structured entry (decode_entry) with the natural input length."""
    e.no(8).no(16).below(CMD_MAX, op).u16(0x100 + op).no(32).no(32)
    if op not in NATURAL_IN:
        e.below(14, 0)  # natural_in_len for unknown opcodes: 0
    e.below(16, 5)  # keep the natural length
    n = NATURAL_IN.get(op, 0)
    data = bytes(payload).ljust(n, b"\0")[:n]
    e.raw(data)
    e.no(4)  # apply the fix-ups
    if op == 4 and n >= 16:
        e.preferred_addr()
    if n >= 8:
        e.no(3)  # no planted addresses
    if n <= 32:
        e.no(8)
    else:
        e.preferred_addr()
    if out:
        e.below(8, 3).below(8, 0)  # out_len 4096
        e.preferred_addr()
    else:
        e.below(8, 0)  # out_len 0
        e.no(16)  # out_addr 0


def batch_end(e):
    e.no(16).rng(1, 8, 4).no(8).no(4)


def cmdq_seeds():
    seeds = {}
    add_gid4 = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1]) + bytes([3, 0, 1, 1]) + \
        bytes([2, 0, 0, 0, 0, 1]) + b"\xff\xff" + bytes(4)
    add_gid6 = bytes([0xFE, 0x80]) + bytes(13) + b"\x01" + bytes([4, 0, 1, 2]) + \
        bytes([2, 0, 0, 0, 0, 1]) + b"\x05\x00" + bytes(4)
    payloads = {
        0: b"", 1: b"", 2: b"\x01", 3: struct.pack("<B3xIII", 1, 3, 1500, 1),
        4: struct.pack("<BB6xQ", 0, 4, 0), 5: b"\x00", 6: b"", 7: struct.pack("<II", 1, 0),
        8: add_gid4, 9: struct.pack("<HB5x", 3, 1), 0xA: b"",
    }
    for op, p in payloads.items():
        e = Enc().no(8).rng(1, 10, 4).rng(2, 12, 6)
        e.below(16, 0).rng(1, 8, 1)
        cmd_entry(e, op, p, out=op in OUT)
        batch_end(e)
        seeds[f"op{op:02x}"] = e.b
    # A driver session: alloc UAR, ADD_GID v4 + v6, rings, stats, dealloc.
    e = Enc().no(8).rng(1, 10, 5).rng(2, 12, 8)
    seq = [(6, b""), (8, add_gid4), (8, add_gid6), (4, payloads[4]),
           (4, struct.pack("<BB6xQ", 1, 5, 0)), (3, payloads[3]), (0xA, b""),
           (5, b"\x01"), (7, struct.pack("<II", 1, 0)), (9, payloads[9])]
    e.below(16, 0).rng(1, 8, 8)
    for op, p in seq[:8]:
        cmd_entry(e, op, p, out=op in OUT)
    batch_end(e)
    e.below(16, 0).rng(1, 8, 2)
    for op, p in seq[8:]:
        cmd_entry(e, op, p, out=op in OUT)
    batch_end(e)
    seeds["session"] = e.b
    # The RDMA opcodes (0x10..) with a 64-byte mailbox input each.
    e = Enc().no(8).rng(1, 10, 5).rng(2, 12, 8)
    for op in range(0x10, CMD_MAX):
        e.below(16, 0).rng(1, 8, 1)
        e.no(8).no(16).below(CMD_MAX, op).u16(op).no(32).no(32)
        e.below(14, 9)  # 64 bytes
        e.below(16, 5).raw(bytes(64)).no(4).yes(3).rng(1, 3, 1)
        e.below(8, 0).preferred_addr(1)  # an address in the first slot
        e.preferred_addr()  # mailbox
        e.below(8, 3).below(8, 0).preferred_addr()
        batch_end(e)
    seeds["rdma_opcodes"] = e.b
    # EQ 0 left unconsumed until it overflows, then reset + bring-up.
    e = Enc().no(8).rng(1, 10, 3).rng(2, 12, 2)
    for _ in range(5):
        e.below(16, 0).rng(1, 8, 4)
        for _ in range(4):
            cmd_entry(e, 0, b"")
        e.no(16).rng(1, 8, 4).yes(8)
    e.below(16, 11).rng(1, 10, 4).rng(2, 12, 6)
    seeds["eq_overflow"] = e.b
    return seeds


def regs_seeds():
    # fuzz_regs.cpp's kRegs: the decoder picks a register by its place there.
    with open(os.path.join(HERE, "fuzz_regs.cpp")) as fh:
        src = fh.read()
    table = src[src.index("kRegs[] = {"):]
    order = re.findall(r"OHCA_REG_\w+", table[:table.index("};")])
    nregs = len(order)

    def wr(e, reg, value_enc):
        e.below(16, 0).below(nregs, order.index(reg)).no(8)
        value_enc(e)

    seeds = {}
    # Manual bring-up through registers, then doorbells and reset mid-way.
    e = Enc().no(8).flag(False).below(8, 0)
    wr(e, "OHCA_REG_EQ0_BASE_LO", lambda e: e.preferred_addr())
    wr(e, "OHCA_REG_EQ0_BASE_HI", lambda e: e.no(4))
    wr(e, "OHCA_REG_EQ0_LOG_SIZE", lambda e: e.below(18, 6))
    wr(e, "OHCA_REG_EQ0_DB", lambda e: e.u16(0).flag(True))
    wr(e, "OHCA_REG_CMDQ_BASE_LO", lambda e: e.preferred_addr())
    wr(e, "OHCA_REG_CMDQ_BASE_HI", lambda e: e.no(4))
    wr(e, "OHCA_REG_CMDQ_LOG_SIZE", lambda e: e.below(18, 4))
    wr(e, "OHCA_REG_DEV_CTRL", lambda e: e.below(4, 1))
    e.below(16, 11).below(5, 0).below(2, 0).rng(2, 11, 4)  # TX ring
    e.below(16, 11).below(5, 0).below(2, 1).rng(2, 11, 4)  # RX ring
    e.below(16, 11).below(5, 2)  # ALLOC_UAR
    e.below(16, 6).no(8).below(OHCA_NUM_DB_PAGES + 2, 1).no(8).below(1024, 0).u64(5).below(4, 0)
    e.below(16, 12).below(2, 0).below(28, 0).preferred_addr().no(4).rng(1, 2048, 100)
    e.below(16, 7)
    e.below(16, 12).below(2, 1).below(28, 1).preferred_addr().no(4).rng(1, 2048, 1500)
    e.below(16, 13)
    frame(e, 0)
    wr(e, "OHCA_REG_DEV_CTRL", lambda e: e.below(4, 2))  # reset in the middle
    e.below(16, 10).rng(1, 10, 3).rng(2, 12, 5)
    e.below(16, 15).flag(True)
    seeds["manual_bringup"] = e.b
    # Bring-up by the driver, then hostile register traffic.
    e = Enc().no(8).flag(True).rng(1, 10, 4).rng(2, 12, 6).below(8, 0)
    for reg in ("OHCA_REG_CMDQ_BASE_LO", "OHCA_REG_EQ0_LOG_SIZE", "OHCA_REG_ETH_TX_PI",
                "OHCA_REG_ETH_IRQ_MASK", "OHCA_REG_CMDQ_PI"):
        wr(e, reg, lambda e: e.u8(0))
    dev_ctrl = H["OHCA_REG_DEV_CTRL"]
    e.below(16, 4).no(4).below(OHCA_REGS_BAR_SIZE + 8, dev_ctrl).below(7, 1).flag(True).u64(2)
    e.below(16, 4).no(4).below(OHCA_REGS_BAR_SIZE + 8, dev_ctrl + 2).below(7, 4).flag(False)  # unaligned
    e.below(16, 14).rng(1, 7, 1).u32(0x20).u32(2)
    e.below(16, 11).below(5, 4).below(CMD_MAX, 0)
    e.below(16, 9).flag(False).below(16, 9).flag(True)
    seeds["hostile"] = e.b
    return seeds



def frame(e, kind, dport=4791, payload=24, own=True):
    """build_frame(): kind 0 IPv4, 2 IPv6, 3 ARP, 4 raw ethertype."""
    e.below(4, 0 if own else 2).u8(0x99)
    e.no(4)  # no VLAN
    e.below(5, kind)
    if kind in (0, 1):
        e.no(4).u8(0).u16(20 + 8 + payload).u16(1).no(4).no(8).u16(0).raw([10, 0, 0, 2, 10, 0, 0, 1])
    elif kind == 2:
        e.no(8).u8(0).u16(0).u16(8 + payload).no(8).raw(bytes(32))
    elif kind == 4:
        e.u16(0x88B5)
    if kind in (0, 1, 2):
        e.u16(0xC000)
        if dport == 4791:
            e.no(4)
        else:
            e.yes(4).u16(dport)
        e.u16(8 + payload).u16(0)
    e.no(16).below(200, payload).raw(bytes([0x04] + [0] * (payload - 1)) if payload else b"")
    e.no(4)


def rx_seeds():
    seeds = {}
    for name, kind, dport in (("ipv4_roce", 0, 4791), ("ipv6_roce", 2, 4791),
                              ("ipv4_udp", 0, 53), ("arp", 3, 0), ("other", 4, 0)):
        e = Enc().no(16).no(16).rng(1, 10, 4).rng(2, 12, 6).no(8).rng(2, 11, 4).below(40, 8)
        for _ in range(8):
            e.no(8).no(8).flag(True)
        e.no(2).below(3, 1)  # one GID
        e.raw(bytes(16)).flag(True).below(16, 0).flag(True)
        e.below(2, 0)  # IRQ unmasked
        for _ in range(3):
            e.below(16, 0)
            frame(e, kind, dport)
        e.below(16, 11).rng(1, 4, 2).flag(True)
        seeds[name] = e.b
    # No ring (frames dropped), promiscuous, link flaps, ring recreated.
    e = Enc().no(16).no(16).rng(1, 10, 4).rng(2, 12, 6).yes(8).yes(2).rng(68, 9000, 9000).below(4, 1)
    e.below(3, 0).below(2, 1)
    e.below(16, 0)
    frame(e, 4, own=False)
    e.below(16, 12).flag(False).below(16, 0)
    frame(e, 0)
    e.below(16, 12).flag(True).below(16, 14).below(4, 1).rng(2, 11, 2)
    e.below(16, 10).rng(1, 8, 4)
    for _ in range(4):
        e.no(8).no(8).flag(False)
    e.below(16, 0)
    frame(e, 0, dport=80, payload=100)
    seeds["promisc_flaps"] = e.b
    return seeds


def eth_desc_seeds():
    seeds = {}
    e = Enc().no(16).rng(1, 10, 4).rng(2, 12, 6).rng(2, 11, 4).rng(2, 11, 4).below(2, 0).no(4)
    for _ in range(2):  # TX: 4 descriptors of 60..1514 bytes with header bytes
        e.below(16, 0).rng(1, 8, 4)
        for i in range(4):
            e.no(4).below(64, 0).below(8, 3).rng(14, 1600, [60, 100, 1514, 14][i]).no(8)
            e.no(4).raw(bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]) + bytes(50))
        e.no(4).no(4).rng(1, 4, 2)
    e.below(16, 5).rng(1, 8, 8)  # RX: 8 descriptors
    for _ in range(8):
        e.no(4).below(64, 0).below(8, 3).rng(14, 1600, 1600).no(8)
    e.no(4)
    for kind in (0, 2, 4):
        e.below(16, 7)
        frame(e, kind, dport=1234, payload=40)
    e.below(16, 12).below(3, 0).flag(True)
    e.below(16, 11).flag(True).below(2, 0)  # destroy TX
    e.below(16, 11).flag(False).no(4).below(2, 0).rng(2, 11, 5)  # recreate
    seeds["tx_rx"] = e.b
    # Hostile lengths and indices.
    e = Enc().no(16).rng(1, 10, 4).rng(2, 12, 6).rng(2, 11, 2).rng(2, 11, 2).below(2, 1).no(4)
    e.below(16, 0).rng(1, 8, 4)
    for i in range(4):
        e.no(4).below(64, 0).below(8, i % 3).raw(b"\0\0" if i % 3 == 0 else b"") \
            .raw(b"" if i % 3 == 0 else (b"\x05" if i % 3 == 1 else b"\x04"))
        e.no(8).yes(4)
    e.yes(4).below(8, 3).rng(1, 4096, 100).no(4).rng(1, 4, 1)
    e.below(16, 10).below(4, 1).below(0x800, 1).rng(1, 64, 2).no(2)
    e.below(16, 0).rng(1, 8, 1).no(4).below(64, 0).below(8, 3).rng(14, 1600, 60).no(8).yes(4).no(4).no(4).rng(1, 4, 1)
    seeds["hostile"] = e.b
    return seeds


# ---- fuzz_rdma: [op u8, len u16, args] records (fuzz_rdma.cpp) ---------------------
R_PD, R_MR, R_CQ, R_QP, R_CONNECT = 0, 2, 4, 6, 8
R_SEND, R_RECV, R_INJECT, R_RUN, R_POLL, R_EQ, R_HOLE, R_MISC = 10, 12, 13, 15, 16, 17, 18, 19


def rop(e, code, args=b""):
    e.u8(code).u16(len(args)).raw(args)


def r_run(step=1, rounds=63):
    """run: the clock moved by steps[step] (0, 1 ms, 70 ms, 1 s, 70 s), rounds+1 drains."""
    return Enc().below(5, step).below(64, rounds).b


# The decoders as they read today (fuzz_rdma.cpp), for the seeds below
# that must reach a given state: every byte named.
def d_mr(slot, odp=False, implicit=False):
    """create_mr: an MR over all data memory (or an ODP one) on the first PD."""
    a = Enc().below(8, slot).no(6)  # not a window
    a.u8(0).u8(0)  # pd(): not bad, from slot 0
    a.u8(0).u8(0).u8(0)  # access: not bad, no atomic/bind bits, none dropped
    a.u8(0).u8(0).u8(0).u8(0)  # offset 0, length: all of it
    a.u8(0)  # pbl: not bad
    if odp:
        a.yes(8).below(3, 0 if implicit else 1).u8(0)  # page_shift 12
    else:
        a.no(8).no(8).u8(0)  # not fast-reg, not bad
    return a.b


def d_rc_qp(slot, recv_cq):
    """create_qp: an RC QP, SQ stride 256 (12 SGEs), RQ stride 64."""
    a = Enc().u8(0).no(4).no(6)  # RC
    a.u8(0).below(2, 0).u8(0).below(3, 0).u8(0).below(2, 0).u8(0).below(3, 0)
    a.u8(0).u8(0)  # pd
    a.u8(0).below(4, 0).u8(0).below(4, recv_cq)  # send CQ 0, receive CQ
    a.u8(0).u8(0).u8(0).u8(0).u8(0)  # uar, inline, pbls, no stray bits
    return a.b


def d_connect_steps():
    """quick_start's connect()s: RESET->INIT, INIT->RTR (MTU 1024, the
    other QP, RNR timer 1), RTR->RTS (timeout 14, retries 7, RNR retry 7:
    for ever, as ODP's responder RNR NAKs need)."""
    init = Enc().u8(0).u8(0).b
    rtr = Enc().u8(0).below(5, 2).u8(0).u8(0).below(4, 0).u8(0).below(32, 1)
    rtr = rtr.u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).b
    rts = Enc().u8(0).below(4, 0).u8(0).below(15, 14).u8(0).below(8, 7).u8(0).below(8, 7)
    rts = rts.u8(0).below(8, 0).u8(0).b
    return (init + init) + (rtr + rtr) + (rts + rts)


def d_create_cq(slot):
    """create_cq (the op, not quick_start's): log size 8, on EQ slot 0 if live."""
    return Enc().below(4, slot).u8(0).below(7, 0).u8(0).below(2, 0).u8(0).u8(0).u8(0).b


def d_remote_connect(qp_slot, timeout, retries):
    """connect() x3 of one QP towards the fake remote node (RNR timer 1,
    RNR retry 1): RESET->INIT->RTR->RTS."""
    init = Enc().below(4, qp_slot).u8(0).u8(0)
    rtr = Enc().below(4, qp_slot).u8(0).below(5, 2).u8(0xC0).below(16, 0)  # remote, QPN 0x100
    rtr.u8(0).below(4, 0).u8(0).below(32, 1).raw(bytes(6))
    rts = Enc().below(4, qp_slot).u8(0).below(4, 0).u8(0).below(15, timeout)
    rts.u8(0).below(8, retries).u8(0).below(8, 1).u8(0).below(8, 0).u8(0)
    return [init.b, rtr.b, rts.b]


def d_quick_start_rc():
    """quick_start with every byte given: PD, a plain MR in slot 0, CQs 0
    and 1, RC QPs 0 and 1 (receive CQ 1) connected to each other. (With
    all-zero arguments it makes a memory window and UC QPs.)"""
    a = Enc().below(4, 0).raw(d_mr(0))
    for cq in (0, 1):
        a.raw(d_create_cq(cq)[1:])  # quick_start names the slot itself
    a.raw(d_rc_qp(0, 0)).raw(d_rc_qp(1, 1)).raw(d_connect_steps())
    return a.b


def d_sge(mr_slot, off, length):
    return Enc().below(8, mr_slot).u8(0).u32(off).u16(length).b


def d_send(qp, op_index, sges, remote_mr=0, remote_off=0, flags=1, imm=0):
    """post_send: one WQE of kOps[op_index] (flags: SIGNALED) with these SGEs."""
    a = Enc().below(4, qp).below(4, 0).u8(0).below(12, op_index)
    a.yes(2).below(4, 0).u64(0).u8(flags).u8(0).u32(imm)  # cmp_add, swap, flags, imm
    a.below(8, remote_mr).u8(0).u16(remote_off).u8(0)  # remote MR, not inline
    a.u8(0).below(5, len(sges))
    for sge in sges:
        a.raw(d_sge(*sge))
    return a.no(4).below(4, 0).u8(0).u8(0).below(16, 15).b  # xrc 0, pi, drain


def d_recv(qp, mr_slot, off, length, more=()):
    """post_recv: one WQE (RQ stride 64: up to 3 SGEs) of (off, length) SGEs of a slot's MR."""
    sges = [(off, length), *more]
    a = Enc().below(4, qp).below(8, 0).u8(0).below(3, len(sges) - 1)
    for o, ln in sges:
        a.raw(d_sge(mr_slot, o, ln))
    return a.u8(0).u8(0).below(8, 7).b


# rc_opcode_info() (wire/opcodes): which headers and payload an RC opcode has.
RC_RETH = {0x06, 0x0A, 0x0B, 0x0C}
RC_AETH = {0x0D, 0x0F, 0x10, 0x11}
RC_IMM = {0x03, 0x05, 0x09, 0x0B}
RC_PAYLOAD = set(range(0x0C)) | {0x0D, 0x0E, 0x0F, 0x10}


def d_inject(qp, op, payload=b"", reth=None, aeth=None, psn_delta=0, ack_req=True):
    """inject: an RC frame from the QP's peer. reth (mr_slot, off, len); aeth
    (kind 0 ACK / 1 RNR NAK / 2 NAK, its 5-bit value, MSN); psn_delta -4..2
    from the PSN the QP expects (requests) or its last sent (responses)."""
    assert op < 0x15 and op not in (0x12, 0x13, 0x14)  # no atomics
    a = Enc().below(4, qp).u16(0xC123).below(0x15, op).no(16).no(16).u8(0)
    a.flag(False).flag(ack_req).u8(0).u8(0).below(9, psn_delta + 4).u8(0)
    if op in RC_RETH:
        a.below(8, reth[0]).u8(0).u32(reth[1]).no(4).below(8192, reth[2])
    if op in RC_AETH:
        a.below(3, aeth[0]).u8(aeth[1]).u32(aeth[2]).u8(0)
    if op in RC_IMM:
        a.u32(0x11223344)
    if op in RC_PAYLOAD:
        if len(payload) >= 300:
            a.yes(8).below(4200, len(payload))
        else:
            a.no(8).below(300, len(payload))
        a.raw(payload)
    else:
        a.u8(0)  # not a bad one: no payload
    return a.u8(0).below(8, 3).b  # not corrupted, 4 drains


def d_odp_map(mr_slot, page, fail=False):
    """misc -> odp(): ODP_MAP of one page of a slot's MR (identity, writable)."""
    a = Enc().below(13, 9).below(8, mr_slot).u8(0).u8(0).below(32, page).no(3)
    a.u8(0).below(8, 0 if fail else 1).u8(0).below(32, 0).u8(0)
    if not fail:
        a.no(4).u8(0)
    return a.u8(0).b


def d_odp_unmap(mr_slot, page):
    a = Enc().below(13, 9).below(8, mr_slot).u8(0).u8(0).below(32, page).yes(3)
    return a.u8(0).below(64, 0).u8(0).b


def odp_seed():
    """On-demand paging end to end: a SEND gathering from an ODP MR
    (requester fault, then ODP_MAP), an RDMA WRITE into it (responder RNR
    NAK until mapped), a SEND from an implicit MR, then ODP_UNMAP and the
    first SEND again, answered by a failed map (LOC_PROT_ERR)."""
    e = Enc().u8(0)
    qs = d_quick_start_rc()
    e.u16(len(qs)).raw(qs)
    rop(e, R_MR, d_mr(1, odp=True))
    rop(e, R_RECV, d_recv(1, 0, 0x8000, 100))
    rop(e, R_SEND, d_send(0, 2, [(1, 0x1000, 100)]))  # SEND from ODP page 1
    rop(e, R_RUN, r_run(0, 15))  # the fault reaches EQ 0
    rop(e, R_MISC, d_odp_map(1, 1))
    rop(e, R_RUN, r_run(1))
    rop(e, R_POLL, bytes([0, 0]))
    rop(e, R_POLL, bytes([1, 0]))
    rop(e, R_SEND, d_send(0, 0, [(0, 0, 64)], remote_mr=1, remote_off=0x2000))  # WRITE into page 2
    rop(e, R_RUN, r_run(1))
    rop(e, R_MISC, d_odp_map(1, 2))
    for _ in range(3):
        rop(e, R_RUN, r_run(1))
    rop(e, R_POLL, bytes([0, 0]))
    rop(e, R_MR, d_mr(2, odp=True, implicit=True))
    rop(e, R_RECV, d_recv(1, 0, 0xa000, 64))
    rop(e, R_SEND, d_send(0, 2, [(2, 0x3000, 64)]))  # SEND from the implicit MR
    rop(e, R_RUN, r_run(0, 15))
    rop(e, R_MISC, d_odp_map(2, 3))
    rop(e, R_RUN, r_run(1))
    rop(e, R_POLL, bytes([0, 0]))
    rop(e, R_POLL, bytes([1, 0]))
    rop(e, R_MISC, d_odp_unmap(1, 1))
    rop(e, R_RECV, d_recv(1, 0, 0x9000, 100))
    rop(e, R_SEND, d_send(0, 2, [(1, 0x1000, 100)]))  # the unmapped page again
    rop(e, R_RUN, r_run(0, 15))
    rop(e, R_MISC, d_odp_map(1, 1, fail=True))
    rop(e, R_RUN, r_run(1))
    rop(e, R_POLL, bytes([0, 0]))
    return e.b


def quick_start(e):
    qs = d_quick_start_rc()
    return e.u16(len(qs)).raw(qs)


def rdma_seeds():
    seeds = {"odp": odp_seed()}
    e = Enc().u8(0xFF)  # no quick start: every op once with default arguments
    for code in range(20):
        rop(e, code)
    seeds["each_op"] = e.b

    # SEND and SEND with immediate, one and two SGEs, QP 0 -> QP 1.
    e = quick_start(Enc().u8(0))
    rop(e, R_RECV, d_recv(1, 0, 0x8000, 100))
    rop(e, R_SEND, d_send(0, 2, [(0, 0, 100)]))
    rop(e, R_RECV, d_recv(1, 0, 0x9000, 3000, more=[(0xA000, 2000)]))
    rop(e, R_SEND, d_send(0, 3, [(0, 0, 2500), (0, 0x4000, 2000)], imm=0xABCDEF))
    rop(e, R_RUN, r_run())
    rop(e, R_POLL, bytes([0, 1]))
    rop(e, R_POLL, bytes([1, 1]))
    seeds["loopback_send"] = e.b

    # WRITE (3 packets), WRITE with immediate, READ both ways (one fenced).
    e = quick_start(Enc().u8(0))
    rop(e, R_SEND, d_send(0, 0, [(0, 0, 5000)], remote_off=0x6000))
    rop(e, R_RECV, d_recv(1, 0, 0x8000, 64))
    rop(e, R_SEND, d_send(0, 1, [(0, 0x100, 64)], remote_off=0x7000))
    rop(e, R_SEND, d_send(0, 4, [(0, 0x10000, 4000)], remote_off=0x100))
    rop(e, R_SEND, d_send(1, 4, [(0, 0x12000, 300)], remote_off=0x200, flags=5))
    rop(e, R_RUN, r_run())
    rop(e, R_POLL, bytes([0, 0]))
    rop(e, R_POLL, bytes([1, 0]))
    seeds["loopback_write_read"] = e.b

    # Frames injected as QP 1 towards QP 0: requests (SEND, WRITE, a
    # two-packet SEND, READ), one out of sequence, then responses to QP 0's
    # own requester (ACK, a sequence NAK, a READ response nobody asked for).
    e = quick_start(Enc().u8(0))
    rop(e, R_RECV, d_recv(0, 0, 0x8000, 200))
    rop(e, R_RECV, d_recv(0, 0, 0x9000, 2000))
    rop(e, R_INJECT, d_inject(0, 0x04, bytes(range(32))))
    rop(e, R_INJECT, d_inject(0, 0x0A, bytes(range(64)), reth=(0, 0x1000, 64)))
    rop(e, R_INJECT, d_inject(0, 0x00, bytes(1024)))
    rop(e, R_INJECT, d_inject(0, 0x02, bytes(100)))
    rop(e, R_INJECT, d_inject(0, 0x0C, reth=(0, 0x2000, 3000)))
    rop(e, R_INJECT, d_inject(0, 0x04, bytes(16), psn_delta=2))
    rop(e, R_INJECT, d_inject(0, 0x11, aeth=(0, 0x1F, 0)))
    rop(e, R_INJECT, d_inject(0, 0x11, aeth=(2, 0, 1)))
    rop(e, R_INJECT, d_inject(0, 0x10, bytes(16), aeth=(0, 0, 1)))
    rop(e, R_RUN, r_run(2))
    rop(e, R_POLL, bytes([0, 0]))
    seeds["inject"] = e.b

    # QP 2 towards the fake remote node: an RNR NAK, then nothing answers,
    # so the retransmission timer fires until retry_cnt is exhausted.
    e = quick_start(Enc().u8(0))
    rop(e, R_CQ, d_create_cq(2))
    rop(e, R_QP, Enc().below(4, 2).raw(d_rc_qp(2, 2)).b)
    for step in d_remote_connect(2, timeout=1, retries=1):
        rop(e, R_CONNECT, step)
    rop(e, R_SEND, d_send(2, 2, [(0, 0, 3000)]))
    rop(e, R_INJECT, d_inject(2, 0x11, aeth=(1, 4, 0)))
    for step in (2, 2, 3, 3, 4):
        rop(e, R_RUN, r_run(step))
    rop(e, R_POLL, bytes([0, 0]))
    seeds["remote_retry"] = e.b

    # EQ 0 (4 entries) under CQ 3, a hole over part of CQ 0's ring while a
    # SEND completes into it, then a device reset.
    e = quick_start(Enc().u8(0))
    rop(e, R_EQ, bytes([0]))
    rop(e, R_CQ, d_create_cq(3))
    rop(e, R_HOLE, bytes([0, 0, 0x10, 0x40, 0x00]))
    rop(e, R_RECV, d_recv(1, 0, 0x8000, 100))
    rop(e, R_SEND, d_send(0, 2, [(0, 0, 100)]))
    rop(e, R_HOLE, bytes([1]))
    rop(e, R_MISC, Enc().below(13, 12).flag(True).b)  # default: reset
    rop(e, R_CQ, d_create_cq(0))
    seeds["eq_hole_reset"] = e.b
    return seeds


# What each rdma seed must reach, as lines of fuzz_rdma_replay's
# OHCA_FUZZ_VERBOSE output (CQE opcodes and statuses: ohca_queue.h).
EXPECT_RDMA = {
    "loopback_send": [r"op 0x80 status 0 verr 0 len 100$", r"op 0x80 status 0 verr 0 len 4500$",
                      r"cq \d+ qp \d+ op 0 status 0 verr 0 len 4500$"],
    "loopback_write_read": [r"op 0x1 status 0 verr 0 len 5000$", r"op 0x2 status 0 verr 0 len 4000$",
                            r"op 0x2 status 0 verr 0 len 300$", r"op 0x81 status 0 verr 0 len 64$"],
    "inject": [r"op 0xa psn \d+ len 64: rq_psn (\d+) -> (?!\1\b)",  # the WRITE executed
               r"op 0x80 status 0 verr 0 len 1124$",  # the two-packet SEND
               r"op 0xc psn (\d+) len 0: rq_psn \1 -> ",  # the READ in sequence
               r"op 0x4 psn \d+ len 16: rq_psn (\d+) -> \1$"],  # out of sequence: dropped
    "remote_retry": [r"op 0 status 12 verr"],  # RETRY_EXC_ERR
    "odp": [r"op 0x80 status 0 verr 0 len 100$", r"op 0 status 4 verr 16 "],  # LOC_PROT_ERR
    "eq_hole_reset": [r"sq doorbell qp \d+ pi 1$", r"^reset$", r"^op 4 "],
}

GENS = {"cmdq": cmdq_seeds, "regs": regs_seeds, "rx": rx_seeds, "eth_desc": eth_desc_seeds,
        "rdma": rdma_seeds}


def check(build_dir):
    bad = []
    for fuzzer, gen in GENS.items():
        d = os.path.join(HERE, "corpus", fuzzer)
        made = {f"seed-{n}": bytes(b) for n, b in gen().items()}
        have = {f for f in os.listdir(d) if f.startswith("seed-")}
        for f in sorted(have ^ set(made)):
            bad.append(f"corpus/{fuzzer}/{f}: only {'in the tree' if f in have else 'made here'}")
        for f in sorted(have & set(made)):
            with open(os.path.join(d, f), "rb") as fh:
                if fh.read() != made[f]:
                    bad.append(f"corpus/{fuzzer}/{f}: differs from what gen_corpus.py makes")
    replay = os.path.join(build_dir, "fuzz_rdma_replay")
    for name, patterns in EXPECT_RDMA.items():
        out = subprocess.run([replay, os.path.join(HERE, "corpus", "rdma", f"seed-{name}")],
                             env={**os.environ, "OHCA_FUZZ_VERBOSE": "1"}, capture_output=True,
                             text=True, check=False)
        lines = out.stderr.splitlines()
        if out.returncode != 0:
            bad.append(f"rdma/seed-{name}: replay exited {out.returncode}")
        for pat in patterns:
            if not any(re.search(pat, line) for line in lines):
                bad.append(f"rdma/seed-{name}: no line matches {pat!r}")
    for b in bad:
        print(f"gen_corpus --check: {b}", file=sys.stderr)
    if bad:
        print("gen_corpus --check: rerun qemu-device/engine/fuzz/gen_corpus.py, and fix the seed's "
              "encoders (the d_* functions) where a decoder changed", file=sys.stderr)
        return 1
    print(f"gen_corpus --check: every seed as made, {len(EXPECT_RDMA)} rdma seeds reach their states")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        return check(sys.argv[2])
    total = 0
    for fuzzer, gen in GENS.items():
        d = os.path.join(HERE, "corpus", fuzzer)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.startswith("seed-"):
                os.remove(os.path.join(d, f))
        for name, data in gen().items():
            with open(os.path.join(d, f"seed-{name}"), "wb") as fh:
                fh.write(data)
            total += len(data)
    print(f"gen_corpus: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
