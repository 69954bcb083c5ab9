#!/usr/bin/env bash
# `make demo`: two VMs with ohca on one wire. Each loads the driver and the
# provider, shows its RDMA device and pings the other over its ohca port.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "demo: booting two VMs (TCG, about a minute) with -device ohca on a shared dgram wire"
exec /usr/bin/python3 tests/vm/ohcavm.py run --vms 2 --logdir build/test-logs/demo -- '
echo "--- $OHCA_VM_NAME: PCI function"
grep -l 0x10f0 /sys/bus/pci/devices/*/device | while read -r f; do
	d=${f%/device}; echo "${d##*/} $(cat "$d/vendor"):$(cat "$d/device") driver=$(basename "$(readlink "$d/driver")")"
done
echo "--- $OHCA_VM_NAME: ip -br addr / link"
ip -br link show "$OHCA_IFACE"; ip -br addr show "$OHCA_IFACE"
echo "--- $OHCA_VM_NAME: ibv_devinfo -v -d $OHCA_IBDEV"
ibv_devinfo -v -d "$OHCA_IBDEV"
ohca_barrier ping
echo "--- $OHCA_VM_NAME: ping $OHCA_PEER_IP over $OHCA_IFACE"
ping -c 5 -W 2 "$OHCA_PEER_IP"
ohca_barrier done
'
