#!/usr/bin/env bash
# `make demo`: two VMs with ohca on one wire. Each loads the driver and the
# provider, shows its RDMA device and pings the other over its ohca port.
# `make demo FABRIC=ib` (tests/demo.sh ib): an InfiniBand fabric instead,
# two VMs on one ohca-switch: opensm in VM 0 sweeps it, each VM prints
# ibstat, VM 0 ibnetdiscover, and each pings the other over IPoIB.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-eth}" in
eth) ;;
ib)
	echo "demo: booting an InfiniBand fabric (TCG, a few minutes): two VMs with" \
		"-device ohca,link-layer=ib on one ohca-switch, opensm in vm0"
	exec /usr/bin/python3 tests/vm/ohcavm.py run --vms 2 --wire switch --link-layer ib \
		--timeout 900 --logdir build/test-logs/demo-ib -- '
if [ "$OHCA_VM_INDEX" -eq 0 ]; then
	echo "--- $OHCA_VM_NAME: opensm -B (the subnet manager)"
	opensm -B -f /tmp/opensm.log
fi
if ! ohca_wait_port ACTIVE 300; then
	[ "$OHCA_VM_INDEX" -eq 0 ] && tail -n 30 /tmp/opensm.log
	exit 1
fi
ohca_barrier active 360
echo "--- $OHCA_VM_NAME: ibstat $OHCA_IBDEV"
ibstat "$OHCA_IBDEV"
if [ "$OHCA_VM_INDEX" -eq 0 ]; then
	echo "--- $OHCA_VM_NAME: ibnetdiscover"
	ibnetdiscover
fi
modprobe ib_ipoib
ohca_poll 30 test -e /sys/class/net/ib0
ip addr add "$OHCA_IP/$OHCA_PREFIX" dev ib0
ip link set ib0 up
ohca_barrier ipoib 180
echo "--- $OHCA_VM_NAME: ping $OHCA_PEER_IP over IPoIB (ib0)"
ohca_retry 90 ping -c 1 -W 2 "$OHCA_PEER_IP" >/dev/null
ping -c 5 -W 2 "$OHCA_PEER_IP"
ohca_barrier done
'
	;;
*)
	echo "demo: FABRIC=$1: eth or ib" >&2
	exit 2
	;;
esac

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
