#!/usr/bin/env bash
# `make test` stage debug-smoke: ohca_core.ko and ohca_ib.ko built against
# the debug kernel
# (make -C kernel debug), then the integration smoke tests in one pooled VM
# booted with it (pytest --kernel debug): ibv_devinfo, cmdtest, the
# harness's own WARNING check, insmod/rmmod x2 while a process holds
# PD/MR/CQ/QP with its doorbell mapped (the disassociate path;
# test_lifecycle.py, 50 cycles on the normal kernel; the plain load/unload
# x20 runs on the normal kernel and the ASan QEMU), the RDMA driver
# unloaded and reloaded under a ping with the Ethernet port staying up
# (test_module_load.py), RC traffic plus the
# rdma-core suite's passing tests in one job (test_debug_traffic.py:
# integrity and pingpong loopback, the RC error completions, the suite's
# tests of rdma-core-suite.pass without its rdma_cm cases), and the
# driver's KUnit suites (test_kunit.py; tests/debug-kernel/kunit.sh runs
# them alone). One pytest session: jobs of the same VM shape share a boot
# (tests/vm/ohcavm.py Pool). Measured 2026-12-01 with link down/up, 5
# reloads and the whole suite: 36 minutes, 14 of them two boots and 10 the
# reloads; so no job here boots a VM of its own (link down/up and the
# other two-VM tests run on the normal kernel). Any KASAN, lockdep,
# DEBUG_OBJECTS or kmemleak report fails a test (the kernel-log scan;
# kmemleak is scanned after each boot's last job, see
# tests/integration/conftest.py). One boot of two VMs serves everything
# (OHCA_VM_POOL_PAIR: a one-VM job runs on the first, the second idles),
# so the storage test (NVMe and NFS over RDMA between the two) costs no
# boot of its own. The harness's WARNING check comes last:
# a job with a kernel warning retires its VM, and the next test would pay
# for a new debug boot (4-5 minutes). Needs build/debug-kernel
# (tests/debug-kernel/build.sh), QEMU, the provider and the root fs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

echo "debug-smoke: building ohca_core.ko, ohca_ib.ko and ohca_kunit.ko against the debug kernel"
make --no-print-directory -s -j"$(nproc)" -C kernel debug
make --no-print-directory -s -j"$(nproc)" -C kernel kunit
export OHCA_LIFECYCLE_RELOADS=${OHCA_LIFECYCLE_RELOADS:-2}
export OHCA_VM_POOL_PAIR=1
exec /usr/bin/python3 -m pytest -v -rA --durations=10 --kernel debug \
	tests/integration/test_devinfo.py \
	tests/integration/test_cmdtest.py \
	tests/integration/test_harness.py::test_scan_kernel_log_debug_kernel \
	tests/integration/test_harness.py::test_pool_pairs_one_vm_jobs_with_two_vm_ones \
	tests/integration/test_lifecycle.py::test_reload_with_resources \
	tests/integration/test_lifecycle.py::test_reset_during_traffic \
	tests/integration/test_module_load.py::test_rdma_driver_reload_keeps_ethernet \
	tests/integration/test_debug_traffic.py \
	tests/integration/test_kunit.py \
	tests/integration/test_storage.py::test_nvme_and_nfs_over_rdma_two_vms \
	tests/integration/test_harness.py::test_guest_kernel_warning_fails_the_run \
	"$@"
