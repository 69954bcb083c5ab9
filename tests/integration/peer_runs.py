"""Client/server runs between two VMs, shared by test_conformance.py and
test_interop.py. Each VM walks the same list of items; item i is served by
the VM the item names, the other connects (retrying until the server
listens) to a TCP port of item i's own, so a client never meets another
item's server. A command may use {dev}, {gid} and {port}: the VM's RDMA
device, its RoCE v2 GID index for its IPv4 address, and the item's port.
"""

import re

SCRIPT = r"""
ohca_poll 30 ohca_gid_index >/dev/null || { echo "no RoCE v2 GID for $OHCA_IP"; exit 1; }
gid=$(ohca_gid_index)
echo "GID index $gid on $OHCA_IBDEV"
ohca_barrier up || exit 1
i=0
while read -r server cmd; do
	i=$((i + 1))
	cmd=${cmd//\{dev\}/$OHCA_IBDEV}
	cmd=${cmd//\{gid\}/$gid}
	cmd=${cmd//\{port\}/$((18600 + i))}
	if [ "$server" = "$OHCA_VM_INDEX" ]; then
		timeout 120 $cmd > /tmp/out.log 2>&1
	else
		sleep 1
		ohca_retry 40 timeout 120 $cmd "$OHCA_PEER_IP" > /tmp/out.log 2>&1
	fi
	rc=$?
	echo "ITEM $i rc=$rc"
	# without the noise of connection attempts before the server listened
	grep -v -e "Couldn't connect" -e "Unable to open file descriptor" \
		-e "inline feature" -e "^ *-*$" /tmp/out.log | sed "s/^/ITEM $i: /" | tail -n 30
done <<'EOF'
{items}
EOF
true
"""


def script(items):
    """The job for both VMs: items are (server VM index, command)."""
    return SCRIPT.replace("{items}", "\n".join(f"{s} {cmd}" for s, cmd in items))


def parse(output):
    """({item: exit code}, {item: its output lines}) from one VM's output."""
    rcs, outs = {}, {}
    for m in re.finditer(r"^ITEM (\d+) rc=(\d+)$", output, re.M):
        rcs[int(m.group(1))] = int(m.group(2))
    for m in re.finditer(r"^ITEM (\d+): (.*)$", output, re.M):
        outs.setdefault(int(m.group(1)), []).append(m.group(2))
    return rcs, {k: "\n".join(v) for k, v in outs.items()}
