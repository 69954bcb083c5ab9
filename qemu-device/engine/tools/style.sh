#!/usr/bin/env bash
# The engine's style gates, run by `make engine-style` (and so by `make
# check` and `make test`): clang-format on every engine source, test,
# fuzzer and benchmark, then clang-tidy (.clang-tidy beside this folder)
# on every source file of the engine, with zero findings allowed.
#
# clang-tidy parses each file as the compiler does (about 20 s a file on
# this 2-core host), so a file's result is kept, keyed by content in the
# shared cache (every checkout of the same files reuses it): a file is
# checked again only when it, a header of the engine or firmware
# interface, the build or clang-tidy configuration, or clang-tidy changed.
set -euo pipefail

engine=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$engine/../.." && pwd)
build=${OHCA_TIDY_BUILD:-$top/build/engine-tidy}
jobs=${OHCA_JOBS:-2}

log() { printf 'engine-style: %s\n' "$*"; }

mapfile -t all < <(cd "$engine" && find src tests testing bench fuzz include \
	-name '*.cpp' -o -name '*.hpp' -o -name '*.h' | sort)
log "clang-format: ${#all[@]} files"
(cd "$engine" && clang-format --dry-run -Werror "${all[@]}") || {
	log "clang-format found differences: run clang-format -i on the files above"
	exit 1
}

cmake -S "$engine" -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
	-DOHCA_ENGINE_TESTS=OFF >/dev/null
ok=${OHCA_CACHE:-$HOME/.cache/ohca}/engine-tidy-ok
mkdir -p "$ok"
# (stamps are empty files; those no checkout used for 30 days go)
find "$ok" -type f -mtime +30 -delete
# What every file's result depends on besides the file itself.
common=$( (clang-tidy --version; cat "$engine/.clang-tidy" "$engine/CMakeLists.txt") |
	cat - \
	$(find "$engine/src" "$engine/include" "$top/firmware-interface/include" \
		-name '*.hpp' -o -name '*.h' | sort) | sha256sum | cut -c1-16)
mapfile -t sources < <(cd "$engine" && find src -name '*.cpp' | sort)
todo=()
for f in "${sources[@]}"; do
	key=$(cat "$engine/$f" | sha256sum | cut -c1-16)-$common
	touch -c "$ok/${f//\//_}-$key"
	[ -e "$ok/${f//\//_}-$key" ] || todo+=("$f")
done
log "clang-tidy: ${#sources[@]} files, $((${#sources[@]} - ${#todo[@]})) unchanged since they passed, ${#todo[@]} to check"
[ "${#todo[@]}" -eq 0 ] && exit 0

check_one() {
	local f=$1 out
	if out=$(clang-tidy -p "$build" --quiet --warnings-as-errors='*' \
		--extra-arg=--cuda-path=/nonexistent --extra-arg=-Wno-unused-command-line-argument \
		--header-filter="$engine/src/.*" "$engine/$f" 2>&1); then
		touch "$ok/${f//\//_}-$2"
		printf 'engine-style: clang-tidy ok  %s\n' "$f"
	else
		printf '%s\n' "$out" | grep -v '^[0-9]* warnings generated' >&2
		printf 'engine-style: clang-tidy FAIL %s\n' "$f"
		return 1
	fi
}
export -f check_one
export build engine ok
fail=0
for f in "${todo[@]}"; do
	printf '%s %s\n' "$f" "$(cat "$engine/$f" | sha256sum | cut -c1-16)-$common"
done | xargs -P "$jobs" -n 2 bash -c 'check_one "$0" "$1"' || fail=1
if [ "$fail" -ne 0 ]; then
	log "clang-tidy found problems (above); fix them, or say in .clang-tidy why a check is off"
	exit 1
fi
log "clean"
