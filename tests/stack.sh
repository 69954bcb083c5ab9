#!/usr/bin/env bash
# `make test-stack`: every Debian release the tree supports, one after the
# other (docs/testing.md, "Releases"): the driver and the provider built
# for it (in its build chroot unless it is the host's release), its guest
# image, then in its guest rdma-core's own test suite of that release
# (tests/integration/test_rc_rdma_core_suite.py: nothing excluded, each
# release's counts checked) and RC pingpong; then its Debian packages
# (make packages, lintian silent) and their check in a fresh guest (make
# test-packages: apt install, a reboot, the modules loaded at boot,
# ibv_devinfo and RC pingpong through the packaged provider). Not part of
# `make test`: a release's cold build (chroot and image) alone takes about
# 25 minutes.
#
#   tests/stack.sh [DISTRO...]      default: bookworm trixie sid
# Env: QEMU (the QEMU the device is built into, default 7.2)
# Logs: build/test-logs/stack-<distro>.log (the suite) and
# stack-<distro>-packages.log; a summary at the end, a line per release.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
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
	row="$d: suite: $result in $((SECONDS - start)) s, ${counts:-no suite counts}"
	echo "==> $row"
	[ "$rc" -eq 0 ] || tail -n 30 "$log"

	# the packages whatever the suite did: they are checked on their own
	log=$logs/stack-$d-packages.log
	start=$SECONDS
	echo "==> $d: packages (make packages, make test-packages; log: $log)"
	make --no-print-directory test-packages DISTRO="$d" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then result=PASS; else result=FAIL; fails=$((fails + 1)); fi
	# each step's own time: the build with lintian, DKMS on the host, the guest job
	steps=$(sed -nE -e 's/^packages: .* built and checked in ([0-9]+ s).*/build \1/p' \
		-e 's/^dkms-modules: .* done in ([0-9]+ s).*/DKMS \1/p' \
		-e 's/.* ([0-9]+ passed in [0-9.]+s).*/guest job: \1/p' "$log" | paste -sd, - | sed 's/,/, /g')
	rows+=("$row; packages: $result in $((SECONDS - start)) s${steps:+ ($steps)}")
	echo "==> ${rows[-1]}"
	[ "$rc" -eq 0 ] || tail -n 30 "$log"
done

echo "==> test-stack ($(date -u +%Y-%m-%dT%H:%MZ), QEMU ${QEMU:-${OHCA_QEMU_VERSION:-7.2}}):"
printf '    %s\n' "${rows[@]}"
[ "$fails" -eq 0 ]
