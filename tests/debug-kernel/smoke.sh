#!/usr/bin/env bash
# `make test` stage debug-smoke: ohca.ko built against the debug kernel
# (make -C kernel debug), then the integration smoke tests in VMs booted
# with it (pytest --kernel debug): ibv_devinfo, link down/up, cmdtest, the harness's own WARNING check (the pool's own test
# runs in the integration stage), insmod/rmmod x5 while
# a process holds PD/MR/CQ/QP with its doorbell mapped (the disassociate
# path; test_lifecycle.py, 50 cycles on the normal kernel; the plain
# load/unload x20 runs on the normal kernel and the ASan QEMU),
# and RC traffic plus the rdma-core suite in one VM (test_debug_traffic.py:
# integrity and pingpong loopback, the RC error completions, the upstream
# suite without its rdma_cm cases), and the driver's KUnit suites
# (test_kunit.py; tests/debug-kernel/kunit.sh runs them alone). One pytest
# session: jobs of the same VM shape share a boot (tests/vm/ohcavm.py Pool).
# No two-VM job runs here for the time budget: a two-VM debug boot costs
# several minutes (docs/testing.md); the storage test would be the one to
# bring back first. Any KASAN, lockdep, DEBUG_OBJECTS or kmemleak report fails a test (the
# kernel-log scan; kmemleak is scanned after each boot's last job, see
# tests/integration/conftest.py). Needs build/debug-kernel
# (tests/debug-kernel/build.sh), QEMU, the provider and the root fs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

echo "debug-smoke: building ohca.ko and ohca_kunit.ko against the debug kernel"
make --no-print-directory -s -C kernel debug
make --no-print-directory -s -C kernel kunit
export OHCA_LIFECYCLE_RELOADS=${OHCA_LIFECYCLE_RELOADS:-5}
exec /usr/bin/python3 -m pytest -v -rA --kernel debug \
	tests/integration/test_devinfo.py \
	tests/integration/test_link.py \
	tests/integration/test_cmdtest.py \
	tests/integration/test_harness.py::test_scan_kernel_log_debug_kernel \
	tests/integration/test_harness.py::test_guest_kernel_warning_fails_the_run \
	tests/integration/test_lifecycle.py::test_reload_with_resources \
	tests/integration/test_debug_traffic.py \
	tests/integration/test_kunit.py \
	"$@"
