"""Two VMs on one wire (a dgram netdev pair): ping and a 100 MB TCP transfer
over the ports' net_devices. Runs with --nic virtio too (pipeline check)."""

import re

from vmtest import assert_ok

PING = r"""
ohca_barrier up || exit 1
ping -c 5 -W 2 "$OHCA_PEER_IP"
rc=$?
# Stay up until the peer has its replies too: a VM that powers off early
# drops the peer's last echo request.
ohca_barrier pinged || exit 1
exit $rc
"""


def test_ping(vm_run):
    results = vm_run(PING, nvms=2)
    assert_ok(results)
    for r in results:
        assert re.search(r"5 packets transmitted, 5 received", r.output), r.report()


PORT = 5001
SIZE_MB = 100

# vm0 receives, vm1 sends; vm1 retries the connection until vm0 listens
# (after the barrier the listener is normally up already).
RECEIVER = rf"""
timeout 240 nc -l {PORT} > /tmp/recv &
nc_pid=$!
ohca_barrier listening || exit 1
wait $nc_pid || {{ echo "receiver: nc failed"; exit 1; }}
echo "bytes $(stat -c %s /tmp/recv)"
echo "sha256 $(sha256sum < /tmp/recv | cut -d' ' -f1)"
"""

SENDER = rf"""
head -c {SIZE_MB}M /dev/urandom > /tmp/data
echo "sha256 $(sha256sum < /tmp/data | cut -d' ' -f1)"
ohca_barrier listening || exit 1
start=$(date +%s.%N)
ohca_retry 60 nc -N "$OHCA_PEER_IP" {PORT} < /tmp/data || exit 1
end=$(date +%s.%N)
echo "seconds $(echo "$start $end" | awk '{{printf "%.2f", $2 - $1}}')"
"""


def test_tcp_100mb(vm_run):
    recv, send = vm_run({0: RECEIVER, 1: SENDER}, nvms=2, timeout=600)
    assert_ok([recv, send])
    assert f"bytes {SIZE_MB * 1024 * 1024}" in recv.output, recv.report()
    sent = re.search(r"^sha256 ([0-9a-f]{64})$", send.output, re.M)
    got = re.search(r"^sha256 ([0-9a-f]{64})$", recv.output, re.M)
    assert sent and got, (send.output, recv.output)
    assert sent.group(1) == got.group(1), "data corrupted in transit"
