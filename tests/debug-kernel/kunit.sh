#!/usr/bin/env bash
# `make test` stage kunit: the driver's KUnit suites (kernel/tests/) built
# against the debug kernel (make -C kernel kunit) and run in a debug-kernel
# VM; results from /sys/kernel/debug/kunit/*/results, parsed and checked
# for any `not ok` by tests/integration/test_kunit.py (plus the kernel's
# kunit.py parse as a cross-check).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

echo "kunit: building ohca_kunit.ko against the debug kernel"
make --no-print-directory -s -C kernel kunit
exec /usr/bin/python3 -m pytest -v -rA --kernel debug \
	tests/integration/test_kunit.py "$@"
