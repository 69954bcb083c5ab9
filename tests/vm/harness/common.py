"""What every part of the harness shares: where things are, the VMs'
addresses on the wire, the harness's error and log line, and the
pre-exec hook that ties a child process's life to the harness's."""

import os
import signal
import sys

VM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/vm
TOP = os.path.dirname(os.path.dirname(VM_DIR))
GUEST_DIR = os.path.join(VM_DIR, "guest")
MKROOTFS = os.path.join(VM_DIR, "mkrootfs.sh")

DEFAULT_TIMEOUT = 300
PREAMBLE_FAILED = 90  # job exit code when the preamble fails

# The wire: VM i gets 10.77.0.(i+1), MAC 02:00:00:00:00:(i+1) and node GUID
# 0x0002c9fffe0000(i+1); at most MAX_VMS VMs (the switch wire). IPS, MACS
# and NODE_GUIDS are those of the two-VM wires (vm0 and vm1), which the
# tests index and iterate.
MAX_VMS = 8
PREFIX = 24


def vm_ip(i):
    return f"10.77.0.{i + 1}"


def vm_mac(i):
    return f"02:00:00:00:00:{i + 1:02x}"


def vm_node_guid(i):
    return 0x0002C9FFFE000000 + i + 1


IPS = [vm_ip(i) for i in range(2)]
MACS = [vm_mac(i) for i in range(2)]
NODE_GUIDS = [vm_node_guid(i) for i in range(2)]
IBDEV = "ohca0"
IFACE = "eth0"
NETDEV_ID = "n0"
FIRMWARE_DIRS = ["/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"]
NIC_ID = "nic0"
RXE_IBDEV = "rxe0"
# ohca: the device; virtio: virtio-net only; rxe: virtio-net + rdma_rxe
NIC_KINDS = ("ohca", "virtio", "rxe")
# the ohca port's link layer: eth (RoCEv2) or ib (the device's link-layer=ib)
LINK_LAYERS = ("eth", "ib")
# A virtual IOMMU (Cluster(iommu=True), OHCA_IOMMU=1): q35 with VT-d in
# front of the PCI devices realized after it, interrupt remapping (MSI-X
# goes through it too) and caching mode (every map is reported to QEMU, so
# the device sees a translation the moment the guest makes it); the guest's
# IOMMU on, strict: an unmap is flushed before dma_unmap returns.
IOMMU_ARGS = ["-machine", "q35", "-device", "intel-iommu,intremap=on,caching-mode=on"]
IOMMU_APPEND = "intel_iommu=on iommu.strict=1 "


class HarnessError(Exception):
    """A setup problem on the host (missing build output, QEMU, ...)."""


def log(msg):
    print(f"ohcavm: {msg}", file=sys.stderr, flush=True)


def format_guid(guid):
    """A node GUID as ibv_devinfo prints it: xxxx:xxxx:xxxx:xxxx."""
    h = f"{guid:016x}"
    return ":".join(h[i:i + 4] for i in range(0, 16, 4))


def die_with_parent():
    """preexec_fn: QEMU gets SIGTERM when the harness process dies, so an
    interrupted test run leaves no VM behind."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 (best effort)
        pass

