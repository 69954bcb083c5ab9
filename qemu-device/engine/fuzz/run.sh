#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the engine fuzzers with clang (libFuzzer + ASan + UBSan) into
# build/fuzz, replays the seed corpus and the regression inputs, then fuzzes
# each fuzzer for the given time. Exits non-zero on any crash, sanitizer
# report, invariant violation, timeout or out-of-memory.
#
#   qemu-device/engine/fuzz/run.sh [seconds-per-fuzzer] [fuzzer...]
#
#   seconds-per-fuzzer   default 60; 0 = build and replay only
#   fuzzer               cmdq regs rx eth_desc rdma (default: all)
#
# Environment: OHCA_FUZZ_BUILD (build dir, default <repo>/build/fuzz),
# CXX (default clang++-14 or clang++), OHCA_FUZZ_ARGS (extra libFuzzer args).
#
# The working corpus grows in $OHCA_FUZZ_BUILD/corpus/<fuzzer> across runs
# (seeded from fuzz/corpus/<fuzzer>); crashes land in
# $OHCA_FUZZ_BUILD/artifacts/<fuzzer>/. To keep a crash as a regression:
# fix it, then copy the input to fuzz/regressions/<fuzzer>/<name>.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
engine=$(dirname "$here")
repo=$(cd "$engine/../.." && pwd)
secs=${1:-60}
shift || true
fuzzers=("$@")
[ ${#fuzzers[@]} -ne 0 ] || fuzzers=(cmdq regs rx eth_desc rdma)
build=${OHCA_FUZZ_BUILD:-$repo/build/fuzz}

if [ -z "${CXX:-}" ]; then
	if command -v clang++-14 >/dev/null; then CXX=clang++-14; else CXX=clang++; fi
fi
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (tests/deps.sh installs clang-14)" >&2; exit 1; }

# ccache (tests/deps.sh) keeps the objects outside the tree, as make does
export CCACHE_DIR=${CCACHE_DIR:-${OHCA_CACHE:-$HOME/.cache/ohca}/ccache}
export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=1
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$engine" -B "$build" "${gen[@]}" -DCMAKE_CXX_COMPILER="$CXX" \
		-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DOHCA_ENGINE_FUZZ=ON \
		-DOHCA_ENGINE_TESTS=OFF >"$build.cmake.log" 2>&1 ||
		{ cat "$build.cmake.log" >&2; exit 1; }
fi
cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 ||
	{ tail -40 "$build/build.log" >&2; echo "fuzz: build failed" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_one NAME: replays, then fuzzes one fuzzer; its summary line goes to
# $build/logs/NAME.summary, failures to stdout; returns non-zero on any.
fuzz_one() {
	local f=$1 bin=$build/fuzz_$1 seeds=$here/corpus/$1 regs=$here/regressions/$1
	local work=$build/corpus/$1 art=$build/artifacts/$1 log=$build/logs/$1.log
	local out=$build/logs/$1.summary replayed rc execs eps cov line
	mkdir -p "$work" "$art" "$build/logs"

	# 1. Replay seeds and regressions (same instrumented build).
	if ! "$build/fuzz_${f}_replay" "$seeds" "$regs" >"$build/logs/$f.replay.log" 2>&1; then
		echo "fuzz: $f: REPLAY FAILED (seed corpus or regression input crashes)"
		tail -30 "$build/logs/$f.replay.log"
		echo "replay FAILED" >"$out"
		return 1
	fi
	replayed=$(sed -n 's/^replay: \([0-9]*\) inputs.*/\1/p' "$build/logs/$f.replay.log")

	if [ "$secs" -eq 0 ]; then
		echo "replayed $replayed inputs" >"$out"
		return 0
	fi

	# 2. Fuzz. The first directory collects new inputs.
	rc=0
	# shellcheck disable=SC2086
	"$bin" "$work" "$seeds" -max_total_time="$secs" -max_len=4096 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
		${OHCA_FUZZ_ARGS:-} >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
	line="replayed ${replayed:-0}, ${execs:-?} execs, ${eps:-?} exec/s, ${cov:-no coverage line}"
	if [ "$rc" -ne 0 ]; then
		line="CRASH (rc $rc): $line"
		echo "fuzz: $f: crash, log $log, inputs:"
		ls -1 "$art" | sed "s|^|    $art/|"
		grep -E 'ERROR|invariant violated|runtime error|SUMMARY' "$log" | head -10
	fi
	echo "$line" >"$out"
	echo "fuzz: $f: $line"
	[ "$rc" -eq 0 ]
}

for f in "${fuzzers[@]}"; do
	[ -x "$build/fuzz_$f" ] || { echo "fuzz: no fuzzer $f" >&2; exit 2; }
	rm -f "$build/logs/$f.summary"
done

# One fuzzer per CPU at a time (each is single-threaded).
status=0
jobs=$(nproc)
running=0
for f in "${fuzzers[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || status=1
		running=$((running - 1))
	fi
	fuzz_one "$f" &
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	wait -n || status=1
	running=$((running - 1))
done

echo "fuzz: summary (${secs}s per fuzzer, build $build)"
for f in "${fuzzers[@]}"; do
	printf '  %-9s %s\n' "$f" "$(cat "$build/logs/$f.summary" 2>/dev/null || echo "not run")"
done
exit $status
