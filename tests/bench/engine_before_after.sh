#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The engine benchmark before and after a change (`make engine-bench-ab
# BEFORE=<commit>`, docs/bench.md): BEFORE is built (Release, as
# `make engine-bench-build` builds this tree) in a git worktree of its own
# under build/, then the two programs are compared in instructions per
# iteration (engine_ir.py, callgrind: independent of the host's load) and
# in time (engine_ab.py: RUNS interleaved runs each, best and median). The
# worktree is removed at the end; its build stays for the next run.
#
#   tests/bench/engine_before_after.sh BEFORE [AFTER_BIN]
#   env: RUNS (default 5), FILTER (a case regex for both), SKIP_TIME=1,
#        SKIP_IR=1
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
before=${1:?usage: $0 BEFORE_COMMIT [AFTER_BIN]}
after_bin=${2:-$top/build/engine-bench/ohca_engine_bench}
sha=$(git -C "$top" rev-parse --short=12 "$before^{commit}")
wt=$top/build/ab-before-$sha
bin=$wt-build/ohca_engine_bench

log() { printf 'engine-bench-ab: %s\n' "$*" >&2; }

if [ ! -x "$bin" ]; then
	log "building $before ($sha) in $wt"
	git -C "$top" worktree add --force --detach "$wt" "$sha" >/dev/null
	trap 'git -C "$top" worktree remove --force "$wt"' EXIT
	cmake -S "$wt/qemu-device/engine" -B "$wt-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
		-DOHCA_ENGINE_BENCH=ON -DOHCA_ENGINE_FUZZ_REPLAY=OFF -DOHCA_HEAP_COUNT=OFF >/dev/null
	cmake --build "$wt-build" -j2 --target ohca_engine_bench >/dev/null
fi

log "before: $sha ($bin); after: $after_bin"
log "start $(date -u '+%F %T') UTC, $(uptime | sed 's/.*load/load/')"
if [ "${SKIP_IR:-0}" != 1 ]; then
	python3 "$top/tests/bench/engine_ir.py" "$bin" "$after_bin" ${FILTER:+--filter "$FILTER"}
fi
if [ "${SKIP_TIME:-0}" != 1 ]; then
	python3 "$top/tests/bench/engine_ab.py" "$bin" "$after_bin" --runs "${RUNS:-5}" \
		${FILTER:+--filter "$FILTER"}
fi
log "end $(date -u '+%F %T') UTC, $(uptime | sed 's/.*load/load/')"
