#!/usr/bin/env bash
# Loads the built libohca into the installed libibverbs on a host without an
# RDMA device and drives it through device discovery, matching, alloc_device,
# alloc_context (GET_CONTEXT + doorbell mmap), query_device_ex, query_port
# and free_context; then the PD/MR/CQ/QP verbs and the data path, with the
# test program playing the device on the rings (ohca_verbs_fake_test).  This is the run-time proof of the private layouts in
# compat/ibverbs_private.h: each step only works if libibverbs and libohca
# agree on verbs_device_ops, verbs_match_ent, verbs_sysfs_dev, verbs_device,
# verbs_context_ops and the command sizes.
#
# How: in a private mount namespace (unshare -m; the host is not touched)
#  - a tmpfs over /dev holds null/zero/urandom and infiniband/uverbs0, a
#    /dev/zero clone (ioctl -> ENOTTY, so libibverbs uses write(); mmap works)
#  - $SYSFS_PATH points libibverbs at a fake sysfs describing ohca0 with the
#    ohca PCI modalias and uverbs ABI version
#  - /usr/lib/<triplet>/libibverbs and /etc/libibverbs.d are replaced by
#    directories holding only libohca-rdmav<PABI>.so and ohca.driver: the same
#    install the VM harness makes
#  - fake_uverbs.so (LD_PRELOAD) answers the uverbs write() commands and
#    checks their framing and the doorbell mmap
#
#   tests/fakedev.sh <build/userspace> [PABI]  (needs root and unshare;
#                                              PABI 34 unless given)
set -euo pipefail

out=$(cd "${1:?usage: fakedev.sh <build dir> [PABI]}" && pwd)
pabi=${2:-34}
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "fakedev: needs root (mknod, mount in a private namespace)" >&2
	exit 1
fi

if [ "${FAKEDEV_INNER:-}" != 1 ]; then
	exec env FAKEDEV_INNER=1 unshare -m --propagation private "$0" "$out" "$pabi"
fi

# ---- inside the private mount namespace from here on ----
work=$(mktemp -d /tmp/ohca-fakedev.XXXXXX)
trap 'rm -rf "$work"' EXIT
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$triplet/libibverbs
fails=0

pass() { echo "  ok: $*"; }
fail() { echo "  FAIL: $*"; fails=$((fails + 1)); }
expect() { # expect FILE REGEX DESCRIPTION
	if grep -Eq -- "$2" "$1"; then pass "$3"; else fail "$3 (no /$2/ in $(basename "$1"))"; fi
}

# fake sysfs: what ohca.ko + ib_uverbs would show
mksys() { # mksys DIR ABI MODALIAS
	local sys=$1
	mkdir -p "$sys/class/infiniband_verbs/uverbs0" \
		"$sys/class/infiniband/ohca0/device"
	echo 6 > "$sys/class/infiniband_verbs/abi_version"
	echo ohca0 > "$sys/class/infiniband_verbs/uverbs0/ibdev"
	echo 1:5 > "$sys/class/infiniband_verbs/uverbs0/dev"
	echo "$2" > "$sys/class/infiniband_verbs/uverbs0/abi_version"
	echo 1 > "$sys/class/infiniband/ohca0/node_type"
	echo 0002:c903:00ab:cdef > "$sys/class/infiniband/ohca0/node_guid"
	echo "$3" > "$sys/class/infiniband/ohca0/device/modalias"
}
modalias=$(printf 'pci:v%08Xd%08Xsv00001AF4sd00000001bc02sc00i00' 0x1af4 0x10f0)
mksys "$work/sys" 2 "$modalias"
mksys "$work/sys-abi1" 1 "$modalias"
mksys "$work/sys-otherpci" 2 "${modalias/d000010F0/d000010F1}"

# /dev: only what the test needs
mount -t tmpfs -o mode=755 ohca-fakedev /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/urandom c 1 9
mkdir /dev/infiniband
mknod -m 666 /dev/infiniband/uverbs0 c 1 5

# the provider installed as in the guest, and nothing else
mkdir -p "$work/lib" "$work/etc"
cp "$out/libohca-rdmav$pabi.so" "$work/lib/"
cp "$out/ohca.driver" "$work/etc/"
mount --bind "$work/lib" "$libdir" 2>/dev/null ||
	{ mkdir -p "$libdir" && mount --bind "$work/lib" "$libdir"; }
mount --bind "$work/etc" /etc/libibverbs.d 2>/dev/null ||
	{ mkdir -p /etc/libibverbs.d && mount --bind "$work/etc" /etc/libibverbs.d; }

run() { # run NAME SYSFS CMD...: logs in $work/NAME.*
	local name=$1 sys=$2
	shift 2
	set +e
	env SYSFS_PATH="$sys" LD_PRELOAD="$out/fake_uverbs.so" \
		FAKE_UVERBS_LOG="$work/$name.fake" \
		VERBS_LOG_LEVEL=4 VERBS_LOG_FILE="$work/$name.verbs" \
		IBV_SHOW_WARNINGS=1 \
		LD_DEBUG=files LD_DEBUG_OUTPUT="$work/$name.ld" \
		"$@" > "$work/$name.out" 2> "$work/$name.err"
	local rc=$?
	set -e
	cat "$work/$name".ld.* > "$work/$name.ld" 2>/dev/null || true
	touch "$work/$name.fake" "$work/$name.verbs"
	return $rc
}

echo "fakedev: ohca_ctx_test on a fake ohca0 (uverbs ABI 2, PCI 1af4:10f0)"
if run ctx "$work/sys" "$out/ohca_ctx_test" ohca0; then
	pass "ohca_ctx_test exit 0"
else
	fail "ohca_ctx_test exit non-zero"
fi
sed 's/^/    | /' "$work/ctx.out"
expect "$work/ctx.ld" "libohca-rdmav$pabi.so.*dynamically loaded by .*libibverbs" \
	"libibverbs dlopened libohca-rdmav$pabi.so from $libdir (verbs_register_driver_$pabi resolved)"
expect "$work/ctx.fake" "NETLINK_RDMA refused" "discovery fell back to the fake sysfs"
expect "$work/ctx.verbs" "ohca_alloc_device.*device ohca0 \(uverbs0\) uverbs abi 2 modalias $modalias" \
	"alloc_device read ibdev_name/sysfs_name/abi_ver/modalias at the recorded verbs_sysfs_dev offsets"
expect "$work/ctx.fake" "GET_CONTEXT in_words=6 out_words=8 " \
	"GET_CONTEXT: 16-byte ibv_get_context + 8-byte ohca_ibv_alloc_ucontext, 8+24-byte response (ohca_ibv_alloc_ucontext_resp as UHW)"
expect "$work/ctx.fake" "MMAP doorbell ok" "doorbell page mmapped at db_mmap_key, db_page_size, PROT_WRITE, MAP_SHARED"
expect "$work/ctx.verbs" "context on ohca0: doorbell page \(4096 bytes\) at .*, max inline 128" "driver response fields read at their offsets"
expect "$work/ctx.fake" "QUERY_DEVICE_EX in_words=1 out_words=38 provider_out_words=0" \
	"query_device_ex slot reached ibv_cmd_query_device_any with a 304-byte ib_uverbs_ex_query_device_resp"
expect "$work/ctx.out" "^fw_ver: 1\.2\.3$" "fw_ver formatted by ohca_query_device_ex"
expect "$work/ctx.out" "vendor_id: 0x1af4 vendor_part_id: 0x10f0" "device attributes passed through"
expect "$work/ctx.fake" "QUERY_PORT in_words=6 out_words=10 port=1" "query_port slot: 24-byte ibv_query_port"
expect "$work/ctx.out" "port 1: state active \(4\).*link_layer Ethernet" "port attributes passed through"
expect "$work/ctx.fake" "MUNMAP doorbell len=4096" "free_context slot unmapped the doorbell page"
if grep -q UNHANDLED "$work/ctx.fake"; then fail "unexpected uverbs commands: $(grep UNHANDLED "$work/ctx.fake")"; fi

echo "fakedev: ohca_verbs_fake_test: PD/MR/CQ/QP commands, WQE bytes in the rings, fabricated CQEs"
if run verbs "$work/sys" "$out/ohca_verbs_fake_test" ohca0; then
	pass "ohca_verbs_fake_test exit 0"
else
	fail "ohca_verbs_fake_test exit non-zero"
fi
sed 's/^/    | /' "$work/verbs.out"
# Word counts prove the wrapper sizes (header + core, then the ohca driver
# data) libibverbs and libohca agree on.
expect "$work/verbs.fake" "ALLOC_PD in_words=4 out_words=1 " \
	"ALLOC_PD: 16-byte ibv_alloc_pd, 4-byte response (no driver data)"
expect "$work/verbs.fake" "REG_MR in_words=12 out_words=3 " "REG_MR: 48-byte ibv_reg_mr, 12-byte response"
expect "$work/verbs.fake" "CREATE_CQ in_words=16 out_words=4 " \
	"CREATE_CQ: 40-byte ibv_create_cq + 24-byte ohca_ibv_create_cq, 8+8-byte response"
expect "$work/verbs.fake" "CREATE_CQ cqe=5 comp_channel=-1 buf_addr=0x[0-9a-f]*000 log_size=3" \
	"CREATE_CQ driver data: page-aligned ring, log_size 3 for 5 CQEs"
expect "$work/verbs.fake" "CREATE_QP in_words=26 out_words=10 " \
	"CREATE_QP: 64-byte ibv_create_qp + 40-byte ohca_ibv_create_qp, 32+8-byte response"
expect "$work/verbs.fake" "CREATE_QP type=2 .* caps wr 8/4 sge 4/3 inline 128 sig_all 0 sq 0x[0-9a-f]*000 log 3 stride 8 rq 0x[0-9a-f]*000 log 2 stride 6 max_inline 128" \
	"CREATE_QP sizes: the rings' caps in the core request, logs and strides in the driver data"
expect "$work/verbs.fake" "MODIFY_QP in_words=30 out_words=0 " "MODIFY_QP: 120-byte ibv_modify_qp"
expect "$work/verbs.fake" "MODIFY_QP ok handle=1 mask=0x129181 state=2 " "INIT->RTR with AV, MTU, dest QPN, RQ PSN, rd atomic, RNR timer"
expect "$work/verbs.fake" "QUERY_QP in_words=6 out_words=32 " "QUERY_QP: 24-byte ibv_query_qp, 128-byte response"
expect "$work/verbs.fake" "DESTROY_QP ok" "DESTROY_QP"
expect "$work/verbs.fake" "CREATE_AH in_words=[0-9]* out_words=5 " \
	"CREATE_AH: 4+16-byte response (ohca_ibv_create_ah_resp)"
expect "$work/verbs.fake" "CREATE_AH pd=[0-9]* port=1 is_global=1 sgid_index=1 hop_limit=9" \
	"CREATE_AH: the GRH reaches the kernel"
expect "$work/verbs.fake" "CREATE_QP type=4 " "CREATE_QP of a UD QP"
expect "$work/verbs.fake" "DESTROY_AH ok" "DESTROY_AH"
expect "$work/verbs.fake" "DESTROY_CQ ok handle=2" "DESTROY_CQ of both CQs"
expect "$work/verbs.fake" "DEREG_MR ok" "DEREG_MR"
expect "$work/verbs.fake" "DEALLOC_PD ok" "DEALLOC_PD"
expect "$work/verbs.fake" "EX_CREATE_QP len=[0-9]* refused" \
	"RSS QP: ibv_cmd_create_qp_ex2 (the release's signature) reached the kernel"
if grep -qw "UNHANDLED\|bad" "$work/verbs.fake"; then fail "unexpected or malformed commands: $(grep -w "UNHANDLED\|bad" "$work/verbs.fake")"; fi
# poll_cq on CQEs of several QPs (and of an unknown QPN) looks QPs up
# under its CQ spinlock: without a pthread mutex.
if grep -q MUTEX_UNDER_SPINLOCK "$work/verbs.fake"; then
	fail "a pthread mutex was taken under a spinlock: $(grep -c MUTEX_UNDER_SPINLOCK "$work/verbs.fake") times"
else
	pass "no pthread mutex taken under a spinlock"
fi

# The optional opcodes need the device's capabilities from the ucontext
# response: refused without them, from a kernel that does not send them
# (an older one) as from a device that lacks them.
for caps in none 3f76; do
	echo "fakedev: ohca_verbs_fake_test nocaps: device caps ${caps} (ATOMIC_WRITE, LOCAL_INV, SEND_INV, BIND_MW refused)"
	if run "nocaps-$caps" "$work/sys" env FAKE_UVERBS_DEVICE_CAPS="$caps" \
		"$out/ohca_verbs_fake_test" ohca0 nocaps; then
		pass "optional opcodes refused with EOPNOTSUPP (caps $caps)"
	else
		fail "optional opcodes with caps $caps"
	fi
	sed 's/^/    | /' "$work/nocaps-$caps.out"
done
expect "$work/nocaps-none.verbs" "device caps 0 \(not sent by the kernel\)" \
	"a response without OHCA_UCTX_RESP_DEVICE_CAPS reads as no capability"
expect "$work/nocaps-3f76.verbs" "does not execute 0x[0-9a-f]* \(device caps 0x3f76\)" \
	"ibv_create_qp_ex says which send_ops_flags the device lacks"
expect "$work/verbs.verbs" "device caps 0x3fff$" "the device's capabilities read from the ucontext response"
expect "$work/verbs.verbs" "doorbell records off" \
	"a kernel without OHCA_UCTX_RESP_DB_RECORD: MMIO doorbells for RQs and CQs"

# Doorbell records: the RQ's producer index and the CQ's consumer index in
# the provider's memory, no MMIO doorbell for them (the same checks, read
# from the records), when the kernel offers them.
echo "fakedev: ohca_verbs_fake_test with doorbell records (OHCA_UCTX_RESP_DB_RECORD)"
if run dbrec "$work/sys" env FAKE_UVERBS_DB_RECORD=1 \
	"$out/ohca_verbs_fake_test" ohca0; then
	pass "ohca_verbs_fake_test with doorbell records exit 0"
else
	fail "ohca_verbs_fake_test with doorbell records exit non-zero"
fi
sed 's/^/    | /' "$work/dbrec.out"
expect "$work/dbrec.verbs" "doorbell records on" "the provider uses records when the kernel offers them"
expect "$work/dbrec.fake" "CREATE_CQ ok" "CREATE_CQ with a record accepted"
if grep -qw "UNHANDLED\|bad" "$work/dbrec.fake"; then fail "malformed commands with records: $(grep -w "UNHANDLED\|bad" "$work/dbrec.fake")"; fi
# An SRQ's producer index in a record too, when the kernel takes SRQ
# records (OHCA_UCTX_RESP_SRQ_DB_RECORD); above, a kernel that offers
# records but not the SRQ's got none in CREATE_SRQ (it would refuse it).
echo "fakedev: ohca_verbs_fake_test with SRQ doorbell records (OHCA_UCTX_RESP_SRQ_DB_RECORD)"
if run dbrec-srq "$work/sys" env FAKE_UVERBS_DB_RECORD=1 FAKE_UVERBS_SRQ_DB_RECORD=1 \
	"$out/ohca_verbs_fake_test" ohca0; then
	pass "ohca_verbs_fake_test with SRQ doorbell records exit 0"
else
	fail "ohca_verbs_fake_test with SRQ doorbell records exit non-zero"
fi
expect "$work/dbrec-srq.fake" "CREATE_SRQ .*comp_mask=0x1 db_addr=0x[1-9a-f]" "the SRQ's record reached CREATE_SRQ"
expect "$work/dbrec.fake" "CREATE_SRQ .*comp_mask=0x0 db_addr=0x0$" "no SRQ record for a kernel that takes only RQ and CQ records"
if grep -qw "UNHANDLED\|bad" "$work/dbrec-srq.fake"; then fail "malformed commands with SRQ records: $(grep -w "UNHANDLED\|bad" "$work/dbrec-srq.fake")"; fi
echo "fakedev: the same with OHCA_DB_RECORD=0 in the environment (MMIO doorbells)"
if run dbrec0 "$work/sys" env FAKE_UVERBS_DB_RECORD=1 OHCA_DB_RECORD=0 \
	"$out/ohca_verbs_fake_test" ohca0; then
	fail "OHCA_DB_RECORD=0 still used records (the record checks passed)"
else
	pass "OHCA_DB_RECORD=0: no records (the record checks fail as expected)"
fi
expect "$work/dbrec0.verbs" "doorbell records off" "OHCA_DB_RECORD=0 turns records off"

echo "fakedev: ohca_verbs_fake_test under valgrind memcheck (rings, CQEs, verbs_cq/verbs_qp/verbs_mr)"
if run vgverbs "$work/sys" valgrind -q --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite "$out/ohca_verbs_fake_test" ohca0; then
	pass "no invalid accesses or definite leaks reported"
else
	fail "valgrind reported errors"; sed 's/^/    | /' "$work/vgverbs.err" "$work/vgverbs.out"
fi

echo "fakedev: the same run under valgrind memcheck (libibverbs writes into the provider's verbs_device/context)"
if run vg "$work/sys" valgrind -q --error-exitcode=99 --leak-check=no \
	"$out/ohca_ctx_test" ohca0; then
	pass "no invalid reads or writes reported"
else
	fail "valgrind reported errors"; sed 's/^/    | /' "$work/vg.err"
fi

echo "fakedev: uverbs ABI 1 must be refused (match_min/max_abi_version = 2)"
if run abi1 "$work/sys-abi1" "$out/ohca_ctx_test" ohca0; then
	fail "ohca_ctx_test opened a device with uverbs ABI 1"
else
	pass "ohca_ctx_test failed as expected"
fi
expect "$work/abi1.err" "Driver ohca does not support the kernel ABI of 1 \(supports 2 to 2\)" \
	"libibverbs read name and the ABI range from verbs_device_ops"

echo "fakedev: PCI 1af4:10f1 must not match (VERBS_PCI_MATCH 1af4:10f0)"
if run otherpci "$work/sys-otherpci" "$out/ohca_ctx_test" ohca0; then
	fail "ohca_ctx_test opened a device with another PCI id"
else
	pass "ohca_ctx_test failed as expected"
fi
expect "$work/otherpci.err" "no userspace device-specific driver found for ohca0" \
	"the match table was walked and did not match"

if [ "$fails" -ne 0 ]; then
	echo "fakedev: $fails check(s) failed; logs:"
	for f in "$work"/ctx.{err,verbs,fake} "$work"/verbs.{err,verbs,fake} "$work"/abi1.err "$work"/otherpci.err; do
		echo "--- $f"; cat "$f"
	done
	exit 1
fi
echo "fakedev: all checks passed"
