#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds fabric/'s fuzzers with clang (libFuzzer + ASan + UBSan) into
# build/fabric-fuzz and runs each for the given seconds (default 30; 0 =
# build only). Non-zero on any crash, sanitizer report or broken bound.
#
#   fabric/fuzz/run.sh [seconds-per-fuzzer] [fuzzer...]   (ib switch eth)
#
# Crashes land in build/fabric-fuzz/artifacts/<fuzzer>/; the corpus grows
# in build/fabric-fuzz/corpus/<fuzzer> across runs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fabric=$(dirname "$here")
repo=$(dirname "$fabric")
secs=${1:-30}
shift || true
fuzzers=("$@")
[ ${#fuzzers[@]} -ne 0 ] || fuzzers=(ib switch eth)
build=${OHCA_FABRIC_FUZZ_BUILD:-$repo/build/fabric-fuzz}

if [ -z "${CXX:-}" ]; then
	if command -v clang++-14 >/dev/null; then CXX=clang++-14; else CXX=clang++; fi
fi
command -v "$CXX" >/dev/null || { echo "fabric-fuzz: $CXX not found (tests/deps.sh installs clang-14)" >&2; exit 1; }
export CCACHE_DIR=${CCACHE_DIR:-${OHCA_CACHE:-$HOME/.cache/ohca}/ccache}
export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=1
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
	# --cuda-path: clang's driver would probe /usr/local/cuda, and CMake
	# would try ld.lld: files of no package in tests/deps.sh (the
	# host-dependency audit refuses them).
	cmake -S "$fabric" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$CXX" \
		-DCMAKE_CXX_FLAGS="--cuda-path=/nonexistent -Wno-unused-command-line-argument" \
		-DCMAKE_LINKER=/usr/bin/ld \
		-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DOHCA_FABRIC_FUZZ=ON -DOHCA_FABRIC_TESTS=OFF >"$build/cmake.log" 2>&1 ||
		{ cat "$build/cmake.log" >&2; exit 1; }
fi
cmake --build "$build" -j2 >"$build/build.log" 2>&1 ||
	{ tail -40 "$build/build.log" >&2; echo "fabric-fuzz: build failed" >&2; exit 1; }
[ "$secs" -gt 0 ] || exit 0

# LeakSanitizer cannot run under ptrace: the traced stage of make test
# (tests/hostdeps.py traces it with strace) fuzzes without it.
leaks=1
[ "$(awk '/^TracerPid:/ {print $2}' /proc/self/status)" = 0 ] || leaks=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=$leaks:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fail=0
for f in "${fuzzers[@]}"; do
	mkdir -p "$build/corpus/$f" "$build/artifacts/$f"
	log=$build/fuzz_$f.log
	if "$build/fuzz_$f" -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix="$build/artifacts/$f/" "$build/corpus/$f" >"$log" 2>&1; then
		echo "fabric-fuzz: $f ok: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1)"
	else
		tail -30 "$log"
		echo "fabric-fuzz: $f FAILED (log $log, inputs in $build/artifacts/$f/)"
		fail=1
	fi
done
exit $fail
