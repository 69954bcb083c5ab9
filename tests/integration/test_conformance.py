"""RoCEv2 conformance of ohca's frames, judged by an independent dissector:
two VMs with ohca, vm0's netdev captured by QEMU filter-dump, traffic with
every implemented RC opcode (SEND, WRITE, READ request/response, ACK),
two QPs at once (UDP source port per QP) and sizes whose last packet needs
pad 1, 2 and 3 from each side; then tshark: no malformed frame, no expert
error, fields asserted (roce_pcap.check) on what each VM sent, in its own
capture. The ohca<->rxe captures are checked the same way in
test_interop.py. READ traffic comes from ib_read_lat (one READ in flight):
many READs in flight over a lossy host wire still hit a known requester
retry bug (docs/interop.md).
"""

import pytest

import roce_pcap
from vmtest import assert_ok, ohcavm

pytestmark = pytest.mark.ohca_only

GID = 1
CMDS = [
    f"ibv_rc_pingpong -d ohca0 -g {GID} -m 1024 -s 3001 -n 50 -p {{port}}",
    f"ib_write_bw -d ohca0 -x {GID} -m 1024 -F -q 2 -s 5002 -n 50 -p {{port}}",
    f"ib_read_lat -d ohca0 -x {GID} -m 4096 -F -s 9002 -n 50 -p {{port}}",
    f"ib_send_bw -d ohca0 -x {GID} -m 4096 -F -s 4097 -n 50 -p {{port}}",
    f"ib_write_lat -d ohca0 -x {GID} -m 1024 -F -s 3 -n 50 -p {{port}}",
]

SCRIPT = r"""
ohca_barrier up || exit 1
i=0 rc=0
while read -r cmd; do
	i=$((i + 1))
	cmd=${cmd//\{port\}/$((18700 + i))}
	if [ "$OHCA_VM_INDEX" = 0 ]; then
		timeout 120 $cmd > /tmp/out.log 2>&1
	else
		sleep 1
		ohca_retry 40 timeout 120 $cmd "$OHCA_PEER_IP" > /tmp/out.log 2>&1
	fi
	r=$?
	echo "ITEM $i rc=$r: $cmd"
	[ $r -eq 0 ] || { rc=1; tail -n 20 /tmp/out.log; }
done <<'EOF'
{cmds}
EOF
exit $rc
"""


def test_conformance_ohca_ohca(vm_run, vm_logdir):
    results = vm_run(SCRIPT.replace("{cmds}", "\n".join(CMDS)), nvms=2, timeout=600,
                     mtu=9000, capture={0, 1})
    assert_ok(results)
    problems = []
    for i, ip in enumerate(ohcavm.IPS):
        rows = roce_pcap.dissect(f"{vm_logdir}/vm{i}/wire.pcap")
        p, summary = roce_pcap.check(rows, {ip})
        print(ip, summary)
        p += roce_pcap.require_opcodes(summary, roce_pcap.OPCODE_GROUPS)
        if summary["concurrent_qp_groups"] < 1:
            p.append("no two QPs of one host were connected at once (ib_write_bw -q 2)")
        # pad counts 1..3 occur (odd message sizes)
        pads = {r["infiniband.bth.padcnt"] for r in rows
                if r["infiniband.bth.opcode"] and r["ip.src"] == ip}
        if not {"1", "2", "3"} <= pads:
            p.append(f"pad counts seen: {sorted(pads)}")
        if summary["sent_frames"] < 200:
            p.append(f"only {summary['sent_frames']} frames sent")
        problems += [f"{ip}: {x}" for x in p]
    assert not problems, "\n".join(problems)


def test_icrc_checker_rejects_corruption(tmp_path):
    """The ICRC check is real: a frame built by hand passes, the same frame
    with one payload bit or a masked field changed fails or passes as the
    annex says."""
    import struct
    import zlib

    ip = bytearray(b"\x45\x00\x00\x30\x00\x00\x40\x00\x40\x11\x00\x00"
                   b"\x0a\x4d\x00\x01\x0a\x4d\x00\x02")
    udp = bytearray(struct.pack(">HHHH", 0xC002, 4791, 28, 0))
    bth = bytearray(struct.pack(">BBHII", 0x11, 0, 0xFFFF, 0x11, 5))
    aeth = struct.pack(">I", 0x1F000001)
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"

    def frame(ip, udp, bth):
        mi, mu, mb = bytearray(ip), bytearray(udp), bytearray(bth)
        mi[1] = mi[8] = 0xFF
        mi[10:12] = b"\xff\xff"
        mu[6:8] = b"\xff\xff"
        mb[4] = 0xFF
        crc = zlib.crc32(b"\xff" * 8 + bytes(mi) + bytes(mu) + bytes(mb) + aeth)
        return eth + bytes(ip) + bytes(udp) + bytes(bth) + aeth + struct.pack("<I", crc)

    good = frame(ip, udp, bth)
    assert roce_pcap.icrc_status(good) is True
    bad = bytearray(good)
    bad[-6] ^= 1  # AETH MSN
    assert roce_pcap.icrc_status(bytes(bad)) is False
    ttl = bytearray(good)
    ttl[14 + 8] = 7  # TTL is variant: still good
    assert roce_pcap.icrc_status(bytes(ttl)) is True
    qp = bytearray(good)
    qp[14 + 20 + 8 + 7] ^= 1  # destination QP is invariant
    assert roce_pcap.icrc_status(bytes(qp)) is False
    assert roce_pcap.icrc_status(eth[:12] + b"\x08\x06" + bytes(28)) is None
