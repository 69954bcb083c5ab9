#!/usr/bin/env bash
# The device-facing integration tests on the sanitizer build of QEMU
# (qemu-device/build.sh --asan: hw/ohca and the engine with ASan + UBSan,
# the rest of QEMU under ASan's allocator and interceptors). The harness (tests/vm/ohcavm.py, OHCA_QEMU_VARIANT=asan)
# runs QEMU with halt_on_error and a log_path in each VM's log directory;
# any sanitizer report fails the test that produced it.
#
# The set is tests/asan/tests.txt (why there).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bash qemu-device/build.sh --asan
export OHCA_QEMU_VARIANT=asan
sel=()
while read -r t; do
	case $t in '' | '#'*) continue ;; esac
	[ -f "tests/integration/${t%%::*}" ] || { echo "asan: tests/asan/tests.txt: no tests/integration/${t%%::*}" >&2; exit 1; }
	sel+=("tests/integration/$t")
done <tests/asan/tests.txt
exec /usr/bin/python3 -m pytest -v -rA "${sel[@]}"
