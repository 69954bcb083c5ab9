#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Line and function coverage of the engine (engine/src) by its unit tests,
# then by the unit tests plus the fuzz seed corpus and regression inputs.
# gcc --coverage + gcovr (tests/deps.sh installs it).
#
#   qemu-device/engine/coverage.sh [build-dir]     default <repo>/build/coverage
#
# Prints a per-file table and the totals; writes an HTML report to
# <build-dir>/html/index.html. Exits non-zero if the build or a test fails.
set -euo pipefail

engine=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$engine/../.." && pwd)
build=${1:-$repo/build/coverage}

command -v gcovr >/dev/null || { echo "coverage: gcovr missing (tests/deps.sh)" >&2; exit 1; }
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
mkdir -p "$build"
cmake -S "$engine" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug \
	-DCMAKE_CXX_COMPILER="${CXX:-g++}" -DCMAKE_CXX_FLAGS="--coverage -O0" \
	-DCMAKE_EXE_LINKER_FLAGS="--coverage" >"$build/cmake.log" 2>&1 ||
	{ cat "$build/cmake.log" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 ||
	{ tail -40 "$build/build.log" >&2; echo "coverage: build failed" >&2; exit 1; }

report() { # title
	echo "== coverage of engine/src: $1"
	gcovr --root "$engine" --filter "$engine/src/" --object-directory "$build" \
		--txt - --print-summary "$build/CMakeFiles/ohca_engine.dir" | sed 's/^/  /'
}

find "$build" -name '*.gcda' -delete
# A failing test still yields coverage: report it, and fail at the end.
status=0
"$build/ohca_engine_tests" --gtest_brief=1 >"$build/unit.log" 2>&1 ||
	{ grep -E 'FAILED|Failure' "$build/unit.log" >&2; echo "coverage: unit tests failed" >&2; status=1; }
report "unit tests (ohca_engine_tests)"

if ctest --test-dir "$build" -N -R '^fuzz_replay_' | grep -q 'Total Tests: [1-9]'; then
	ctest --test-dir "$build" -R '^fuzz_replay_' --output-on-failure >"$build/replay.log" 2>&1 ||
		{ tail -40 "$build/replay.log" >&2; echo "coverage: corpus replay failed" >&2; status=1; }
	report "unit tests + fuzz seed corpus and regressions"
fi
mkdir -p "$build/html"
gcovr --root "$engine" --filter "$engine/src/" --object-directory "$build" \
	--html-details "$build/html/index.html" "$build/CMakeFiles/ohca_engine.dir" >/dev/null
echo "coverage: HTML report $build/html/index.html"
exit $status
