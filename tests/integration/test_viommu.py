"""ohca behind a virtual IOMMU (issue 26 item 5): two VMs on q35 with VT-d
in front of the device (interrupt remapping: MSI-X goes through it too;
caching mode) and the guest's IOMMU on in strict mode, so every DMA of
the device is translated through a mapping the guest can revoke
(Cluster(iommu=True); OHCA_IOMMU=1 puts every job of a run there:
`make test-viommu`).

One job: the device is in a translating IOMMU group; the kernel verbs
check, whose IOMMU case unmaps a receive buffer and a send buffer while
their addresses still go to the device: both operations complete in
error, the memory behind them stays as it was, and the guest's VT-d logs
the device's refused write and read; RC traffic between the VMs checked
byte for byte at two path MTUs; NVMe over RDMA (a kernel ULP mapping
through the IOMMU) with fio verifying every block; the Ethernet side
(the netdev's rings) carries all of it."""

import re

import pytest

from test_rc import GID, INTEGRITY_ITERS, INTEGRITY_TWO_VM, KVERBS_MODULE
from test_storage import FIO_SMALL, check_nvme, nvme, script
from vmtest import assert_ok, section

pytestmark = pytest.mark.ohca_only

MTUS = (1024, 4096)

KVERBS_IOMMU = rf"""echo "=== iommu ==="
dev=$(readlink -f /sys/class/infiniband/$OHCA_IBDEV/device)
echo "IOMMU_GROUP_TYPE=$(cat "$dev/iommu_group/type" 2>/dev/null || echo none)"
if [ "$OHCA_VM_INDEX" = 0 ]; then
	insmod /share/ohca_kverbs_test.ko gid_index={GID} || fail "kverbs insmod"
	rmmod ohca_kverbs_test 2>/dev/null
	dmesg | grep ohca_kverbs_test
	# the faults VT-d recorded for the device (its BDF), as the guest saw them
	dmesg | grep -i "DMAR" | grep -i "fault\|DMA Read\|DMA Write" | grep "${{dev##*/0000:}}" | head -n 4 |
		sed 's/^/DMAR_FAULT /'
fi
"""


def test_rc_nvme_and_kverbs_behind_viommu(vm_run):
    integrity = INTEGRITY_TWO_VM.format(mtus=" ".join(map(str, MTUS)), gid=GID,
                                        iters=INTEGRITY_ITERS)
    # inside the storage job's frame: its rc, its exit
    integrity = integrity.replace("rc=0\n", "", 1).replace("exit $rc\n", "")
    job = script(KVERBS_IOMMU, 'echo "=== integrity ==="\n', integrity,
                 nvme(0, fio=FIO_SMALL))
    target, host = vm_run({0: job, 1: job}, nvms=2, iommu=True, timeout=1200,
                          extra_files={"ohca_kverbs_test.ko": KVERBS_MODULE})
    assert_ok([target, host])
    for r in (target, host):
        # DMA (not identity): a paging domain behind the DMA API, strict
        assert "IOMMU_GROUP_TYPE=DMA\n" in section(r.output, "iommu"), r.report()
    kv = section(target.output, "iommu")
    assert "ohca_kverbs_test: 67 sends on ohca0 OK" in kv, target.report()
    assert re.search(r"iommu: receive into an unmapped IOVA: recv status \d+, send status \d+, "
                     r"memory untouched", kv), target.report()
    assert "iommu: SEND from an unmapped IOVA: status" in kv, target.report()
    assert "IOMMU check skipped" not in kv, target.report()
    # the refusals were the IOMMU's: VT-d logged a write and a read fault
    faults = re.findall(r"^DMAR_FAULT .*$", kv, re.M)
    assert any("Write" in f for f in faults) and any("Read" in f for f in faults), \
        target.report()
    for role, r in (("server", target), ("client", host)):
        for mtu in MTUS:
            assert re.search(rf"^ohca_rc_integrity: PASS role={role} mtu={mtu} "
                             rf"\S+ iterations={INTEGRITY_ITERS}/", r.output, re.M), r.report()
    check_nvme(host, 0)
