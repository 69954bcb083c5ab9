"""Client/server runs between two VMs, shared by test_conformance.py and
test_interop.py. Each VM walks the same list of items; item i is served by
the VM the item names, the other connects, once the server listens (a
second barrier), to a TCP port of item i's own, so a client never meets another
item's server, and both VMs meet at a barrier before each item, so one
failed item leaves the rest of the list in step. An item is one command
for both sides (the client's gets the server's IPv4 address appended) or
"server command | client command" (rdma_cm programs that name the
address with an option). A command may use {dev}, {gid} and {port}: the VM's RDMA
device, its RoCE v2 GID index for its IPv4 address, and the item's port;
{addr}: the IPv4 address of the item's server; {self}: the VM's own;
and {gid6} / {gid6g}: the RoCE v2 GID indexes of its IPv6 link-local
address and of a unique-local address the job adds (IPV6_GLOBAL), reached
through neighbour discovery. Commands run in bash -c, so an item may be
a short shell sequence (files to copy and compare, a delay). With IPv6 items, each VM's eth0 gets a hop
limit of its own (IPV6_HOP_LIMITS), which the RDMA core copies from the
route into every RoCE v2 path, so the frames can show they carry it.
"""

import ipaddress
import re

IPV6_GLOBAL = ("fd00:77::1", "fd00:77::2")
IPV6_HOP_LIMITS = (41, 47)

SCRIPT = r"""
ohca_poll 30 ohca_gid_index >/dev/null || { echo "no RoCE v2 GID for $OHCA_IP"; exit 1; }
gid=$(ohca_gid_index)
echo "GID index $gid on $OHCA_IBDEV"
{ipv6}ohca_barrier up || exit 1
# PORT PID: the item's server listens: on its TCP port (pingpongs, perftest,
# UCX), with an rdma_cm ID (rping, udaddy, rcopy, perftest -R, ...), or as
# mckey's receiver, once it has joined; or it has exited already
item_ready() {
	kill -0 "$2" 2>/dev/null || return 0
	ss -Hltn "sport = :$1" | grep -q . ||
		rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN" ||
		grep -q "receiving data transfers" /tmp/out.log
}
i=0
while read -r server cmd; do
	i=$((i + 1))
	if [ "$server" = "$OHCA_VM_INDEX" ]; then server_ip=$OHCA_IP; else server_ip=$OHCA_PEER_IP; fi
	cmd=${cmd//\{dev\}/$OHCA_IBDEV}
	cmd=${cmd//\{gid\}/$gid}
	cmd=${cmd//\{gid6\}/$gid6}
	cmd=${cmd//\{gid6g\}/$gid6g}
	port=$((18600 + i))
	cmd=${cmd//\{port\}/$port}
	cmd=${cmd//\{addr\}/$server_ip}
	cmd=${cmd//\{self\}/$OHCA_IP}
	# "server command | client command", or one command for both (the
	# client's gets the server's address appended)
	peer=$OHCA_PEER_IP
	case $cmd in *' | '*) scmd=${cmd%% | *}; cmd=${cmd#* | }; peer= ;; *) scmd=$cmd ;; esac
	# both VMs start item i together, whatever became of item i-1 (a
	# failed item must not throw the two out of step for the rest)
	ohca_barrier "item$i" 300 || echo "ITEM $i: the peer did not reach the item within 300 s"
	# the client starts once the server listens (barrier "ready$i"): a
	# client that comes first is refused or rejected and retries, and a
	# retry has crashed (rxe's ib_send_bw -R, a general protection fault
	# in librdmacm at load 25)
	if [ "$server" = "$OHCA_VM_INDEX" ]; then
		timeout 120 bash -c "$scmd" > /tmp/out.log 2>&1 &
		srv=$!
		t0=$SECONDS
		if ! ohca_poll 60 item_ready "$port" "$srv"; then
			echo "ITEM $i: the server did not listen within 60 s"
		elif ! kill -0 "$srv" 2>/dev/null; then
			echo "ITEM $i: the server exited after $((SECONDS - t0)) s, before it listened"
		else
			echo "ITEM $i: server ready after $((SECONDS - t0)) s"
			# which listener (rdma_cm), for a client that is turned away
			rdma resource show cm_id 2>/dev/null | grep "state LISTEN" | sed "s/^/ITEM $i: /"
		fi
		ohca_barrier "ready$i" 300 || echo "ITEM $i: the peer did not get ready within 300 s"
		wait "$srv"
	else
		ohca_barrier "ready$i" 300 || echo "ITEM $i: the server did not get ready within 300 s"
		ohca_retry 40 timeout 120 bash -c "$cmd $peer" > /tmp/out.log 2>&1
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

# nodad: the address is unique by construction, and a tentative address
# cannot be a source yet
SCRIPT_IPV6 = r"""
ga=({ga})
hl=({hl})
ip -6 addr add "${ga[$OHCA_VM_INDEX]}/64" dev "$OHCA_IFACE" nodad || exit 1
echo "${hl[$OHCA_VM_INDEX]}" >"/proc/sys/net/ipv6/conf/$OHCA_IFACE/hop_limit" || exit 1
if ! ohca_poll 30 ohca_gid6_index link >/dev/null || ! ohca_poll 30 ohca_gid6_index global >/dev/null; then
	echo "no RoCE v2 GID for the IPv6 addresses: $(ip -6 -br addr show dev "$OHCA_IFACE")"
	exit 1
fi
gid6=$(ohca_gid6_index link)
gid6g=$(ohca_gid6_index global)
echo "IPV6 link $(ohca_ipv6_addr link) GID index $gid6"
echo "IPV6 global $(ohca_ipv6_addr global) GID index $gid6g"
"""


def script(items):
    """The job for both VMs: items are (server VM index, command)."""
    items = list(items)
    ipv6 = ""
    if any("{gid6" in cmd for _, cmd in items):
        ipv6 = (SCRIPT_IPV6.replace("{ga}", " ".join(IPV6_GLOBAL))
                .replace("{hl}", " ".join(map(str, IPV6_HOP_LIMITS))).lstrip("\n"))
    return (SCRIPT.replace("{ipv6}", ipv6)
            .replace("{items}", "\n".join(f"{s} {cmd}" for s, cmd in items)))


def ipv6_addrs(output):
    """{"link": address, "global": address} a VM's job reported, in the
    compressed form tshark prints."""
    return {m.group(1): ipaddress.IPv6Address(m.group(2)).compressed
            for m in re.finditer(r"^IPV6 (link|global) (\S+) ", output, re.M)}


def ready_waits(output):
    """{item: seconds} the server VM waited for each of its servers to
    listen (None: it did not within 60 s, or exited first), from its output."""
    waits = {}
    for m in re.finditer(r"^ITEM (\d+): (?:server ready after (\d+) s|the server did not listen"
                         r"|the server exited)",
                         output, re.M):
        waits[int(m.group(1))] = int(m.group(2)) if m.group(2) else None
    return waits


def parse(output):
    """({item: exit code}, {item: its output lines}) from one VM's output."""
    rcs, outs = {}, {}
    for m in re.finditer(r"^ITEM (\d+) rc=(\d+)$", output, re.M):
        rcs[int(m.group(1))] = int(m.group(2))
    for m in re.finditer(r"^ITEM (\d+): (.*)$", output, re.M):
        outs.setdefault(int(m.group(1)), []).append(m.group(2))
    return rcs, {k: "\n".join(v) for k, v in outs.items()}


# rcopy (rsockets over rdma_cm: a file written through RDMA, compared on
# the server, which serves forever and is stopped once the copy is whole)
# and mckey (rdma_cm multicast: the receiver joins the group, the sender
# joins a few seconds later and sends to it across the wire; the receiver
# gives up after 60 s, not the item's 120: its cell took 18 s in CI on
# 2026-12-07 when all ten arrived, and a sender that lost some (rxe,
# test_interop.py) would hold the run for the rest).
RCOPY = ("seq 300000 >/tmp/rc.src; rcopy -p {port} & p=$!;"
         " for i in $(seq 90); do cmp -s /tmp/rc.src /tmp/rc.dst && break; sleep 1; done;"
         " kill $p; cmp /tmp/rc.src /tmp/rc.dst && echo RCOPY_COMPARED"
         " | seq 300000 >/tmp/rc.src; rcopy /tmp/rc.src {addr}:/tmp/rc.dst -p {port}")
MCKEY = ("timeout 60 stdbuf -oL mckey -m 239.1.2.4 -b {addr} -C 10 -S 512"
         " | sleep 3; mckey -m 239.1.2.4 -b {self} -s -C 10 -S 512")

