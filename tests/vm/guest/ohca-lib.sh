# ohca-lib.sh: shell helpers for jobs running in an ohca test VM.
#
# tests/vm/ohcavm.py copies this file into every VM's share and sources it
# (after /share/env.sh) at the top of /share/job.sh, before the preamble and
# the user's script, so jobs can call these functions directly. Interactive
# shells get it too (source /share/ohca-lib.sh).
#
# Environment (from /share/env.sh): OHCA_VM_INDEX OHCA_VM_NAME OHCA_NUM_VMS
# OHCA_NIC (ohca|virtio|rxe) OHCA_MTU OHCA_IFACE OHCA_IBDEV OHCA_IP OHCA_PREFIX
# OHCA_PEER_IP (the first other VM) OHCA_PEER_IPS (every other VM) OHCA_VM_IPS
# (every VM, by index) OHCA_MAC OHCA_NODE_GUID OHCA_MODULE_PARAMS.
#
# Host/guest synchronisation goes through files in /share/sync/:
#   ohca_mark NAME          guest -> host: creates sync/guest.NAME
#   ohca_wait_host NAME [T] guest waits up to T s (default 60) for the host
#                           to create sync/host.NAME (VM.post(NAME) in Python)
#   ohca_barrier NAME [T]   all VMs of the run: creates sync/barrier.NAME and
#                           waits until the harness, having seen it in every
#                           VM's share, creates sync/barrier.NAME.go
#   ohca_retry T CMD...     runs CMD until it succeeds, at most T seconds

ohca_log() { echo "ohca[$OHCA_VM_NAME]: $*" >&2; }

# ohca_poll TIMEOUT CMD...: true as soon as CMD succeeds, false after TIMEOUT
# seconds (polling every 0.2 s).
ohca_poll() {
	local timeout=$1 start=$SECONDS
	shift
	while :; do
		"$@" && return 0
		[ $((SECONDS - start)) -ge "$timeout" ] && return 1
		sleep 0.2
	done
}

ohca_retry() {
	local timeout=$1 start=$SECONDS
	shift
	while :; do
		"$@" && return 0
		if [ $((SECONDS - start)) -ge "$timeout" ]; then
			ohca_log "gave up after ${timeout}s: $*"
			return 1
		fi
		sleep 0.5
	done
}

ohca_mark() {
	mkdir -p /share/sync
	: >"/share/sync/guest.$1"
}

ohca_wait_host() {
	if ! ohca_poll "${2:-60}" test -e "/share/sync/host.$1"; then
		ohca_log "timed out waiting for host event '$1'"
		return 1
	fi
}

ohca_barrier() {
	mkdir -p /share/sync
	: >"/share/sync/barrier.$1"
	if ! ohca_poll "${2:-120}" test -e "/share/sync/barrier.$1.go"; then
		ohca_log "timed out at barrier '$1'"
		return 1
	fi
}

# --- the RDMA stack ---------------------------------------------------------

# Loads the RDMA core modules ohca_ib.ko depends on (ohca_insmod loads the
# driver itself from the share).
ohca_load_core() {
	local m
	for m in ib_core ib_uverbs rdma_cm rdma_ucm; do
		# built into a debug kernel (no modules in the image for it)
		[ -d "/sys/module/$m" ] && continue
		[ -e "/lib/modules/$(uname -r)/modules.dep" ] || continue
		modprobe "$m" || { ohca_log "modprobe $m failed"; return 1; }
	done
}

# The driver: ohca_core.ko (PCI function, Ethernet) and the RDMA driver
# ohca_ib.ko on top (it binds to ohca_core's auxiliary device).
ohca_insmod() {
	ohca_insmod_core && ohca_insmod_ib
}

ohca_insmod_core() {
	if [ ! -f /share/ohca_core.ko ]; then
		ohca_log "/share/ohca_core.ko missing (build/kernel not built?)"
		return 1
	fi
	# shellcheck disable=SC2086
	insmod /share/ohca_core.ko $OHCA_MODULE_PARAMS || { ohca_log "insmod ohca_core.ko failed"; return 1; }
}

ohca_insmod_ib() {
	if [ ! -f /share/ohca_ib.ko ]; then
		ohca_log "/share/ohca_ib.ko missing (build/kernel not built?)"
		return 1
	fi
	insmod /share/ohca_ib.ko || { ohca_log "insmod ohca_ib.ko failed"; return 1; }
}

# Unloads the driver, the RDMA driver first.
ohca_rmmod() {
	rmmod ohca_ib ohca_core
}

# Installs the provider: libohca-rdmav<PABI>.so (34 for rdma-core 44 and
# 56, 65 for 65) and ohca.driver from the share.
ohca_install_provider() {
	local libdir=/usr/lib/x86_64-linux-gnu/libibverbs lib
	lib=$(ls /share/libohca-rdmav*.so 2>/dev/null | head -n 1)
	if [ -z "$lib" ] || [ ! -f /share/ohca.driver ]; then
		ohca_log "provider missing from the share (build/userspace not built?)"
		return 1
	fi
	mkdir -p "$libdir" /etc/libibverbs.d
	cp /share/libohca-rdmav*.so "$libdir/" &&
		cp /share/ohca.driver /etc/libibverbs.d/
}

ohca_port_state() {
	local s
	s=$(cat "/sys/class/infiniband/$OHCA_IBDEV/ports/1/state" 2>/dev/null) || return 1
	echo "${s#*: }"
}

# ohca_wait_port STATE [TIMEOUT]: waits for port 1 of $OHCA_IBDEV to reach
# STATE (ACTIVE, DOWN, ...).
ohca_wait_port() {
	local want=$1 timeout=${2:-60}
	if ! ohca_poll "$timeout" eval '[ "$(ohca_port_state)" = "$want" ]'; then
		ohca_log "port 1 of $OHCA_IBDEV not $want after ${timeout}s (state: $(ohca_port_state || echo none))"
		return 1
	fi
}

ohca_carrier() { cat "/sys/class/net/$OHCA_IFACE/carrier" 2>/dev/null; }

# ohca_wait_carrier 0|1 [TIMEOUT]
ohca_wait_carrier() {
	local want=$1 timeout=${2:-60}
	if ! ohca_poll "$timeout" eval '[ "$(ohca_carrier)" = "$want" ]'; then
		ohca_log "carrier of $OHCA_IFACE not $want after ${timeout}s"
		return 1
	fi
}

# Brings the port's net_device up with this VM's address.
ohca_net_up() {
	if ! ohca_poll 30 test -e "/sys/class/net/$OHCA_IFACE"; then
		ohca_log "no network interface $OHCA_IFACE; interfaces: $(ls /sys/class/net | tr '\n' ' ')"
		return 1
	fi
	if [ -n "$OHCA_MTU" ]; then
		ip link set "$OHCA_IFACE" mtu "$OHCA_MTU" || return 1
	fi
	ip link set "$OHCA_IFACE" up || return 1
	ip addr add "$OHCA_IP/$OHCA_PREFIX" dev "$OHCA_IFACE" || return 1
}

# ohca_eth_ok N: the port's Ethernet side works. On the user-mode network
# N pings of its gateway are answered. Paired with an idle VM (debug-smoke's
# OHCA_VM_POOL_PAIR: $OHCA_PEER_IP set, the peer's interface down) nobody
# answers, so the frames must at least leave: N or more of them sent.
ohca_eth_ok() {
	local n=$1 tx=/sys/class/net/$OHCA_IFACE/statistics/tx_packets tx0
	tx0=$(cat "$tx") || return 1
	ping -c "$n" -W 2 "${OHCA_PEER_IP:-10.77.0.254}" >/dev/null && return 0
	[ -n "$OHCA_PEER_IP" ] && [ $(($(cat "$tx") - tx0)) -ge "$n" ]
}

# ohca_stat_pairs: every hw counter of port 1 as "name=value " pairs, from
# one read of the device: rdma statistic makes one get_hw_stats call for all
# of them, so an event is in every counter it touches or in none. (Reading
# the sysfs files asks the device again whenever the core's 10 ms cache has
# expired, which under TCG happens between two files: a timeout could be in
# rc_local_ack_timeouts and not yet in its rc_timeouts_* reason.) The sysfs
# files where rdma cannot show them.
ohca_stat_pairs() {
	local d=/sys/class/infiniband/$OHCA_IBDEV/ports/1/hw_counters
	[ -d "$d" ] || return 0
	rdma statistic show link "$OHCA_IBDEV/1" 2>/dev/null | tr '\n' ' ' |
		awk '$1 == "link" { for (i = 3; i < NF; i += 2) printf "%s=%s ", $i, $(i + 1); n++ }
		     END { exit n != 1 }' ||
		(cd "$d" && grep -H '' -- * | sed 's/:/=/' | tr '\n' ' ')
}

# ohca_hw_counters: port 1's transport counters on one line (name=value),
# so that a failed run shows what the device saw (retransmissions, timeouts).
ohca_hw_counters() {
	[ -d "/sys/class/infiniband/$OHCA_IBDEV/ports/1/hw_counters" ] || return 0
	echo "HW_COUNTERS $(ohca_stat_pairs)"
}

# ohca_cc_counters: one line of the congestion counters, key=value
# (test_congestion.py and the fabric bench compare two of them around a
# phase): RC retransmissions and timeouts (spurious: the timeouts F-RTO
# undid, the ACK came after all), DCQCN's CNPs and CE marks, PFC pauses of
# priority 0; then why the requesters waited (rc_tail_probes,
# rc_timeouts_*, rc_credit_*: their hw counter names), all from one read.
ohca_cc_counters() {
	local eth
	eth=$(ethtool -S "$OHCA_IFACE")
	ohca_stat_pairs | tr ' ' '\n' |
	awk -F= -v rx="$(echo "$eth" | awk '$1 == "rx_prio0_pause:" {print $2}')" \
		-v tx="$(echo "$eth" | awk '$1 == "tx_prio0_pause:" {print $2}')" '
		BEGIN {
			short["rc_retrans_pkts"] = "retrans"
			short["rc_local_ack_timeouts"] = "timeouts"
			short["rc_spurious_timeouts"] = "spurious"
			short["np_cnp_sent"] = "cnp_sent"
			short["rp_cnp_handled"] = "cnp_handled"
			short["np_ecn_marked_roce_packets"] = "ce"
		}
		$1 in short { printf "%s=%s ", short[$1], $2; next }
		$1 ~ /^rc_(tail_probes|timeouts_|credit_)/ { printf "%s=%s ", $1, $2 }
		END { printf "rx_pause=%s tx_pause=%s\n", rx, tx }'
}

# ohca_clear_bus_master PCI_ADDR: clears the function's Bus Master Enable
# (bit 2 of the PCI command register) behind the driver's back, so the
# device's DMA fails and the driver has to go fatal and recover.
ohca_clear_bus_master() {
	python3 - "/sys/bus/pci/devices/$1/config" <<'PYEOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4)
    cmd = int.from_bytes(f.read(2), "little") & ~4
    f.seek(4)
    f.write(cmd.to_bytes(2, "little"))
PYEOF
}

# ohca_gid_lookup GID: the index of the RoCE v2 entry holding GID (in the
# sysfs form, eight groups of four hex digits) on port 1 of $OHCA_IBDEV.
# ohca has RoCE v2 GIDs only; rxe has a v1 and a v2 entry per address, in an
# order that depends on events.
ohca_gid_lookup() {
	local d=/sys/class/infiniband/$OHCA_IBDEV/ports/1 g i
	for g in "$d"/gids/*; do
		i=${g##*/}
		if [ "$(cat "$g" 2>/dev/null)" = "$1" ] &&
			[ "$(cat "$d/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# ohca_gid_index [IP]: the index of the RoCE v2 GID of IPv4 address IP
# (default $OHCA_IP), IPv4-mapped.
ohca_gid_index() {
	local ip=${1:-$OHCA_IP}
	ohca_gid_lookup "$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${ip//./ })"
}

# ohca_ipv6_addr [link|global]: $OHCA_IFACE's IPv6 address of that scope
# (default link), in the GID table's form; fails while it is tentative
# (duplicate address detection not done: not usable as a source yet).
ohca_ipv6_addr() {
	local want=00 a idx plen scope flags dev
	[ "${1:-link}" = link ] && want=20
	while read -r a idx plen scope flags dev; do
		[ "$dev" = "$OHCA_IFACE" ] && [ "$scope" = "$want" ] || continue
		[ $((0x$flags & 0x40)) -eq 0 ] || continue
		echo "${a:0:4}:${a:4:4}:${a:8:4}:${a:12:4}:${a:16:4}:${a:20:4}:${a:24:4}:${a:28:4}"
		return 0
	done </proc/net/if_inet6
	return 1
}

# ohca_gid6_index [link|global]: the index of the RoCE v2 GID of
# $OHCA_IFACE's IPv6 address of that scope (default link).
ohca_gid6_index() {
	local a
	a=$(ohca_ipv6_addr "$@") && ohca_gid_lookup "$a"
}

# The standard preamble: driver, provider, address, link (and port) up.
# An InfiniBand port (OHCA_LINK_LAYER=ib): no eth0 of ohca; the management
# datagram device (umad) for opensm and infiniband-diags; the port's link
# up (INIT, or further if a subnet manager already swept it).
ohca_ib_preamble() {
	[ -d /sys/module/ib_umad ] || modprobe ib_umad ||
		{ ohca_log "modprobe ib_umad failed"; return 1; }
	if ! ohca_poll 60 eval 'case "$(ohca_port_state)" in INIT|ARMED|ACTIVE) true;; *) false;; esac'; then
		ohca_log "port 1 of $OHCA_IBDEV has no link after 60s (state: $(ohca_port_state || echo none))"
		return 1
	fi
}

ohca_preamble() {
	case "$OHCA_NIC" in
	ohca)
		ohca_load_core && ohca_insmod && ohca_install_provider || return 1
		if [ "$OHCA_LINK_LAYER" = ib ]; then
			ohca_ib_preamble || return 1
			ohca_log "preamble done at $(cut -d' ' -f1 /proc/uptime) s: $OHCA_IBDEV InfiniBand, port $(ohca_port_state)"
			return 0
		fi
		ohca_net_up || return 1
		ohca_wait_carrier 1 30 || return 1
		ohca_wait_port ACTIVE 60 || return 1
		;;
	rxe)
		# the interop peer: Linux soft-RoCE on virtio-net
		modprobe virtio_net 2>/dev/null
		ohca_net_up || return 1
		ohca_wait_carrier 1 30 || return 1
		modprobe rdma_rxe || { ohca_log "modprobe rdma_rxe failed"; return 1; }
		rdma link add "$OHCA_IBDEV" type rxe netdev "$OHCA_IFACE" || return 1
		ohca_wait_port ACTIVE 60 || return 1
		;;
	*)
		modprobe virtio_net 2>/dev/null
		ohca_net_up || return 1
		ohca_wait_carrier 1 30 || return 1
		;;
	esac
	ohca_log "preamble done at $(cut -d' ' -f1 /proc/uptime) s: $OHCA_IFACE $OHCA_IP up"
}

# ohca_pfc SPEC [TIMEOUT]: `dcb pfc set dev $OHCA_IFACE prio-pfc SPEC`
# (P:on or all:off) until `dcb pfc show` has it. Under load dcb's netlink
# exchange has failed now and then ("Attribute write: Protocol error") on a
# VM busy with RDMA traffic; the setting is checked, not the tool's status.
_ohca_pfc_once() {
	local shown
	dcb pfc set dev "$OHCA_IFACE" prio-pfc "$1" 2>&1 | sed 's/^/dcb: /'
	shown=$(dcb pfc show dev "$OHCA_IFACE" prio-pfc) || return 1
	if [ "$1" = all:off ]; then
		! echo "$shown" | grep -q ':on'
	else
		echo "$shown" | grep -qw -- "$1"
	fi
}
ohca_pfc() {
	ohca_retry "${2:-30}" _ohca_pfc_once "$1"
}
