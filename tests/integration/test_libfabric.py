"""libfabric's verbs provider over ohca between two VMs (issue 25, item 3).

fi_info lists ohca through the verbs provider for MSG endpoints (and the
datagram domain over UD) and through ofi_rxm over verbs for RDM endpoints;
then fi_pingpong, the test program Debian's libfabric-bin ships, between
the VMs with its data-integrity check (-c) at every size ("-S all"):
MSG endpoints (RC QPs connected through rdma_cm), RDM endpoints of
ofi_rxm over verbs in message and tagged mode, and DGRAM endpoints (UD).
vm0 serves every run, vm1 is the client.
"""

import re

import pytest

import peer_runs
from vmtest import assert_ok

pytestmark = pytest.mark.ohca_only

ITERS = 5
RUNS = [
    ("msg", "-p verbs -e msg"),
    ("rdm", "-p 'verbs;ofi_rxm' -e rdm"),
    ("rdm-tagged", "-p 'verbs;ofi_rxm' -e rdm -m tagged"),
    ("dgram", "-p verbs -e dgram -d {dev}-dgram"),
]

INFO = r"""
echo "=== fi_info ==="
fi_info -p verbs
fi_info -p 'verbs;ofi_rxm'
echo "=== end ==="
"""


def fi_info_entries(text):
    """[{field: value}] of fi_info's entries (provider, fabric, domain,
    type, protocol, ...)."""
    entries = []
    for line in text.splitlines():
        m = re.match(r"^\s*(provider|fabric|domain|version|type|protocol): (.*)$", line)
        if not m:
            continue
        if m.group(1) == "provider":
            entries.append({})
        if entries:
            entries[-1][m.group(1)] = m.group(2).strip()
    return entries


def test_libfabric_verbs_two_vms(vm_run):
    items = [(0, f"fi_pingpong {args} -I {ITERS} -S all -c -B {{port}} | "
                 f"fi_pingpong {args} -I {ITERS} -S all -c -P {{port}} {{addr}}")
             for _, args in RUNS]
    job = INFO + peer_runs.script(items)
    server, client = vm_run(job, nvms=2, timeout=900)
    info = server.output.split("=== fi_info ===")[1].split("=== end ===")[0]
    # ohca's device under verbs: the MSG domain (its IB device's name) over
    # RC with rdma_cm, the datagram one over UD; ofi_rxm's RDM over it
    found = {(e.get("provider"), e.get("type"), e.get("domain"), e.get("protocol"))
             for e in fi_info_entries(info)}
    for want in (("verbs", "FI_EP_MSG", "ohca0", "FI_PROTO_RDMA_CM_IB_RC"),
                 ("verbs", "FI_EP_DGRAM", "ohca0-dgram", "FI_PROTO_IB_UD"),
                 ("verbs;ofi_rxm", "FI_EP_RDM", "ohca0", "FI_PROTO_RXM")):
        assert want in found, f"fi_info does not list {want}:\n{info}"
    rcs, outs = peer_runs.parse(client.output)
    srcs, _ = peer_runs.parse(server.output)
    failed = [name for i, (name, _) in enumerate(RUNS, 1) if rcs.get(i) != 0 or srcs.get(i) != 0]
    assert not failed, f"fi_pingpong failed: {failed}\n{client.report()}\n{server.report()}"
    for i, (name, _) in enumerate(RUNS, 1):
        # the table's rows: bytes, iters, total, time, MB/sec, usec/xfer
        rows = re.findall(r"^(\d+\S*)\s+(\d+)\s+=\d+\s+\S+\s+\S+s\s+(\S+)\s+(\S+)\s", outs[i], re.M)
        assert rows, f"{name}: no figures\n{outs[i]}"
        print(f"libfabric {name}: " + ", ".join(f"{b} B {us} us {mb} MB/s"
                                                for b, _, mb, us in rows[::4]))
    assert_ok([server, client])
