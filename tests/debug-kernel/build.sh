#!/usr/bin/env bash
# Builds the debug test kernel (KUnit, KASAN, lockdep, kmemleak, debug
# objects, RDMA core and rdma_rxe built in) from Debian's linux-source-6.1,
# cached by the source version and the config fragment. About 18 minutes
# on two cores the first time; nothing afterwards.
#
# Output: $OHCA_CACHE/debug-kernel-<key>/ with bzImage and a prepared tree
# (`make -C <dir>/linux M=...` builds modules against it); build/debug-kernel
# in the repo links to it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${OHCA_CACHE:-$HOME/.cache/ohca}
tarball=/usr/src/linux-source-6.1.tar.xz

if [ ! -f "$tarball" ]; then
	echo "debug-kernel: $tarball missing (package linux-source-6.1)" >&2
	exit 1
fi

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
key=$(cat "$here/debug.config" "$here/build.sh" <(echo "$srcver") | sha256sum | cut -c1-16)
out=$cache/debug-kernel-$key
mkdir -p "$top/build"

if [ -f "$out/bzImage" ]; then
	echo "debug-kernel: cached ($out)"
	ln -sfn "$out" "$top/build/debug-kernel"
	exit 0
fi

[ -z "${OHCA_COLD_MARK:-}" ] || echo debug-kernel >>"$OHCA_COLD_MARK"
work=$cache/debug-kernel-$key.tmp
rm -rf "$work"
mkdir -p "$work"
echo "debug-kernel: unpacking linux-source $srcver"
tar -C "$work" -xf "$tarball"
mv "$work/linux-source-6.1" "$work/linux"
cd "$work/linux"

echo "debug-kernel: configuring"
make -s allnoconfig
# (its log has the choices the fragment overrides: allnoconfig's HZ,
# preemption and unwinder; the check below is what counts)
./scripts/kconfig/merge_config.sh -m -O . .config kernel/configs/kvm_guest.config \
	"$here/debug.config" >"$work/merge-config.log" 2>&1 ||
	{ cat "$work/merge-config.log" >&2; echo "debug-kernel: merge_config failed" >&2; exit 1; }
make -s olddefconfig

# merge_config does not fail on options that did not stick: check ourselves.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=y)
		opt=${line%%=*}
		if ! grep -qx "$opt=y" .config; then
			echo "debug-kernel: $opt did not end up =y" >&2
			bad=1
		fi
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		if grep -q "^$opt=" .config; then
			echo "debug-kernel: $opt is still set (something selects it)" >&2
			bad=1
		fi
		;;
	esac
done <"$here/debug.config"
[ "$bad" -eq 0 ] || exit 1

# The host tools (objtool, fixdep, certificate tools) are built by
# `prepare`, traced: what they use must come from tests/deps.sh's packages.
echo "debug-kernel: building the host tools (make prepare, traced)"
/usr/bin/python3 "$top/tests/hostdeps.py" trace debug-kernel-prepare \
	--store "$work/hostdeps-prepare.paths" -- make -s -j"$(nproc)" prepare >"$work/prepare.log" 2>&1 ||
	{ tail -n 30 "$work/prepare.log" >&2; echo "debug-kernel: make prepare failed" >&2; exit 1; }
echo "debug-kernel: building bzImage and modules (about 16 minutes on 2 cores)"
start=$SECONDS
jobs=$(nproc)
log=$work/build.log
n=0
set +o pipefail
make -j"$jobs" bzImage modules 2>&1 | tee "$log" | while IFS= read -r line; do
	case "$line" in
	"  CC"*) n=$((n + 1))
		if [ $((n % 1000)) -eq 0 ]; then
			echo "debug-kernel: $n objects compiled, $((SECONDS - start))s"
		fi ;;
	*error:*) echo "$line" ;;
	esac
done
rc=${PIPESTATUS[0]}
set -o pipefail
if [ "$rc" -ne 0 ] || [ ! -f arch/x86/boot/bzImage ]; then
	echo "debug-kernel: build failed (exit $rc); see $log" >&2
	exit 1
fi
make -s modules_prepare
cp arch/x86/boot/bzImage "$work/bzImage"
echo "debug-kernel: built in $((SECONDS - start))s"

cd /
rm -rf "$out"
mv "$work" "$out"
ln -sfn "$out" "$top/build/debug-kernel"
echo "debug-kernel: ready ($out)"
