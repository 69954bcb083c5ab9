#!/usr/bin/env bash
# `make test-stack`: every Debian release the tree supports, one after the
# other (docs/testing.md, "Releases"): the driver and the provider built
# for it (in its build chroot unless it is the host's release), its guest
# image, then in its guest rdma-core's own test suite of that release
# (tests/integration/test_rc_rdma_core_suite.py: nothing excluded, each
# release's counts checked) and RC pingpong. Not part of `make test`: a
# release's cold build (chroot and image) alone takes about 25 minutes.
#
#   tests/stack.sh [DISTRO...]      default: bookworm trixie sid
# Env: QEMU (the QEMU the device is built into, default 7.2)
# Logs: build/test-logs/stack-<distro>.log; a summary at the end.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
logs=build/test-logs
mkdir -p "$logs"
[ $# -gt 0 ] || set -- bookworm trixie sid

declare -a rows
fails=0
for d in "$@"; do
	log=$logs/stack-$d.log
	start=$SECONDS
	echo "==> $d: build (kernel, userspace, rootfs), then the suite (log: $log)"
	{
		make --no-print-directory kernel userspace rootfs DISTRO="$d" &&
			OHCA_DISTRO=$d /usr/bin/python3 -m pytest -v -rA -s \
				tests/integration/test_rc_rdma_core_suite.py \
				tests/integration/test_rc.py::test_rc_pingpong_loopback
	} >"$log" 2>&1
	rc=$?
	counts=$(grep -m1 -o 'rdma-core suite on ohca0: ran .*; unittest' "$log" |
		sed 's/; unittest$//' || true)
	if [ "$rc" -eq 0 ]; then result=PASS; else result=FAIL; fails=$((fails + 1)); fi
	rows+=("$d: $result in $((SECONDS - start)) s; ${counts:-no suite counts}")
	echo "==> ${rows[-1]}"
	[ "$rc" -eq 0 ] || tail -n 30 "$log"
done

echo "==> test-stack ($(date -u +%Y-%m-%dT%H:%MZ), QEMU ${QEMU:-${OHCA_QEMU_VERSION:-7.2}}):"
printf '    %s\n' "${rows[@]}"
[ "$fails" -eq 0 ]
