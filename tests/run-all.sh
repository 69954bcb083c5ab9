#!/usr/bin/env bash
# `make test`: builds every part and runs every suite in order. Each stage
# prints its duration; the run ends with a summary and exits non-zero when
# any stage failed. A failed build stage skips the stages that need it.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
logs=build/test-logs
mkdir -p "$logs"

declare -a names results times
failed_deps=()

# stage NAME NEEDS COMMAND...: runs COMMAND unless a stage named in NEEDS
# (comma-separated) failed; logs to build/test-logs/NAME.log.
stage() {
	local name=$1 needs=$2
	shift 2
	local dep
	for dep in ${needs//,/ }; do
		if [[ " ${failed_deps[*]-} " == *" $dep "* ]]; then
			echo "==> $name: not run, '$dep' failed"
			names+=("$name"); results+=("NOT RUN"); times+=("-")
			failed_deps+=("$name")
			return
		fi
	done
	echo "==> $name: $*"
	local start=$SECONDS rc
	"$@" 2>&1 | tee "$logs/$name.log"
	rc=${PIPESTATUS[0]}
	local took=$((SECONDS - start))
	names+=("$name"); times+=("${took}s")
	if [ "$rc" -eq 0 ]; then
		results+=("PASS")
	else
		results+=("FAIL")
		failed_deps+=("$name")
	fi
	echo "==> $name: ${results[-1]} in ${took}s (log: $logs/$name.log)"
}

stage firmware-interface "" make --no-print-directory firmware-interface-test
stage engine-unit "" make --no-print-directory engine-test
stage engine-fuzz "" bash qemu-device/engine/fuzz/run.sh 30
stage wire-unit "" make --no-print-directory wire-test
stage qemu "" make --no-print-directory qemu
stage device-smoke qemu /usr/bin/python3 qemu-device/tests/qtest_smoke.py
stage kernel "" make --no-print-directory kernel
stage userspace "" make --no-print-directory userspace
stage userspace-abi userspace make --no-print-directory -C userspace check
stage rootfs "" make --no-print-directory rootfs
stage integration qemu,kernel,userspace,rootfs \
	/usr/bin/python3 -m pytest -v -rA tests/integration
# QEMU built with ASan + UBSan (about 9 minutes once, cached) and the
# device-facing integration tests, the hostile guest among them, on it.
stage asan qemu,kernel,userspace,rootfs bash tests/asan/run.sh
# The debug kernel (KASAN, lockdep, kmemleak, debug objects, KUnit): built
# once (about 13 minutes on 2 cores), cached in ~/.cache/ohca. Then the
# smoke tests and the driver's KUnit suites in VMs booted with it.
stage debug-kernel "" bash tests/debug-kernel/build.sh
stage debug-smoke qemu,userspace,rootfs,debug-kernel bash tests/debug-kernel/smoke.sh
stage kunit qemu,userspace,rootfs,debug-kernel bash tests/debug-kernel/kunit.sh

echo
echo "ohca test summary"
pass=0 fail=0
for i in "${!names[@]}"; do
	printf '  %-20s %-8s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
	if [ "${results[$i]}" = PASS ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
echo "stages: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
