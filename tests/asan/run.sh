#!/usr/bin/env bash
# The device-facing integration tests on the sanitizer build of QEMU
# (qemu-device/build.sh --asan: all of QEMU, hw/ohca and the engine with
# ASan + UBSan). The harness (tests/vm/ohcavm.py, OHCA_QEMU_VARIANT=asan)
# runs QEMU with halt_on_error and a log_path in each VM's log directory;
# any sanitizer report fails the test that produced it.
#
# The set is chosen for the 90-minute budget of `make test`: every test
# here drives guest-controlled input into the device (module load/unload,
# the Ethernet path, RC data, RC error paths, malformed commands
# through the driver, and the hostile guest).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bash qemu-device/build.sh --asan
export OHCA_QEMU_VARIANT=asan
tests=(
	test_module_load.py
	"test_wire.py::test_ping"
	"test_rc.py::test_rc_data_integrity_loopback"
	test_rc_negative.py
	test_cmdtest.py
	test_hostile.py
)
sel=()
for t in "${tests[@]}"; do
	f=${t%%::*}
	[ -f "tests/integration/$f" ] && sel+=("tests/integration/$t")
done
exec /usr/bin/python3 -m pytest -v -rA "${sel[@]}"
