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

ITERS = 20
RUNS = [
    ("msg", "-p verbs -e msg"),
    ("rdm", "-p 'verbs;ofi_rxm' -e rdm"),
    ("rdm-tagged", "-p 'verbs;ofi_rxm' -e rdm -m tagged"),
    ("dgram", "-p verbs -e dgram -d {dev}-dgram"),
]

INFO = r"""
echo "=== fi_info ==="
fi_info -p verbs -l
for ep in msg rdm dgram; do
	prov=verbs
	[ $ep = rdm ] && prov='verbs;ofi_rxm'
	echo "--- $ep"
	FI_LOG_LEVEL=warn fi_info -p "$prov" -e $ep 2>&1 | grep -E "provider:|domain:|fabric:|type:|protocol:" | sort -u
done
echo "=== end ==="
"""


def test_libfabric_verbs_two_vms(vm_run):
    items = [(0, f"fi_pingpong {args} -I {ITERS} -S all -c -B {{port}} | "
                 f"fi_pingpong {args} -I {ITERS} -S all -c -P {{port}} {{addr}}")
             for _, args in RUNS]
    job = INFO + peer_runs.script(items)
    server, client = vm_run(job, nvms=2, timeout=900)
    info = server.output.split("=== fi_info ===")[1].split("=== end ===")[0]
    # ohca's device under verbs: the MSG domain (its IB device's name) and
    # the datagram one; ofi_rxm's RDM over it
    msg = info.split("--- msg")[1].split("--- rdm")[0]
    rdm = info.split("--- rdm")[1].split("--- dgram")[0]
    dgram = info.split("--- dgram")[1]
    assert re.search(r"domain: ohca\d+$", msg, re.M) and "verbs" in msg, info
    assert re.search(r"provider: verbs;ofi_rxm", rdm) and re.search(r"domain: ohca\d+$", rdm, re.M), info
    assert re.search(r"domain: ohca\d+-dgram", dgram), info
    rcs, outs = peer_runs.parse(client.output)
    srcs, _ = peer_runs.parse(server.output)
    failed = [name for i, (name, _) in enumerate(RUNS, 1) if rcs.get(i) != 0 or srcs.get(i) != 0]
    assert not failed, f"fi_pingpong failed: {failed}\n{client.report()}\n{server.report()}"
    for i, (name, _) in enumerate(RUNS, 1):
        # the table's rows: bytes, iters, total, time, MB/sec, usec/xfer
        rows = re.findall(r"^(\d+\S*)\s+(\d+)\s+\S+\s+\S+s\s+(\S+)\s+(\S+)\s", outs[i], re.M)
        assert rows, f"{name}: no figures\n{outs[i]}"
        print(f"libfabric {name}: " + ", ".join(f"{b} B {us} us {mb} MB/s"
                                                for b, _, mb, us in rows[::4]))
    assert_ok([server, client])
