#!/usr/bin/env bash
# Builds Debian's QEMU with the ohca device added as hw/ohca and links the
# result to build/qemu/qemu-system-x86_64 (QEMU 7.2, the default) or
# build/qemu-<version>/qemu-system-x86_64 in the repository.
#
#   qemu-device/build.sh            build (or reuse) and link
#   qemu-device/build.sh --qemu=10.0
#   OHCA_QEMU_VERSION=10.0 ...      QEMU 10.0, Debian 13's (its source from
#                                   the trixie suite through
#                                   tests/vm/apt-suite.sh; meson >= 1.5
#                                   from bookworm-backports, unpacked into
#                                   the cache, not installed). The device's
#                                   version differences are in
#                                   hw/ohca-compat.h.
#   qemu-device/build.sh --qemu=11.1  QEMU 11.1, unstable's (sid's source,
#                                   the pinned upload below when the
#                                   mirror lacks the indexed one; configure
#                                   runs Debian's python3, and pycotap and
#                                   qemu.qmp come from sid, unpacked into
#                                   the cache like meson)
#   qemu-device/build.sh --asan     the sanitizer variant: the default build
#                                   with the device (glue, trace events,
#                                   engine) recompiled with ASan + UBSan and
#                                   relinked (qemu-device/asan_overlay.py
#                                   says why only the device), linked to
#                                   build/qemu-asan/qemu-system-x86_64
#                                   (with --qemu=10.0 or 11.1: that
#                                   version's build, build/qemu-10.0-asan/)
#   OHCA_QEMU_VARIANT=asan ...      the same as --asan
#   OHCA_CACHE=/path ...            cache location (default ~/.cache/ohca)
#   OHCA_JOBS=N ...                 ninja parallelism (default 2)
#
# Layout of the cache:
#   qemu-src-<ver>/            pristine `apt-get source qemu` (fetched once)
#   meson-<ver>/               a newer meson, unpacked (QEMU 10.0, 11.1)
#   python3-*-<ver>/           pycotap, qemu.qmp, unpacked (QEMU 11.1)
#   qemu-tree-<ver>/src        working copy with hw/ohca overlaid (builds
#                              are serialised by a lock)
#   qemu-tree-<ver>/build      the build directory, reused so that a change
#                              in qemu-device/ rebuilds incrementally; the
#                              sanitizer variant's device objects and binary
#                              in its ohca-asan/
#   qemu-bin/<hash>/           finished binaries keyed by a hash of the QEMU
#   qemu-bin/asan-<hash>/      version and every input file; a second run
#                              with unchanged inputs only relinks
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${OHCA_CACHE:-$HOME/.cache/ohca}
jobs=${OHCA_JOBS:-2}
variant=${OHCA_QEMU_VARIANT:-default}
qemu_version=${OHCA_QEMU_VERSION:-7.2}
for arg in "$@"; do
	case "$arg" in
	--asan) variant=asan ;;
	--qemu=*) qemu_version=${arg#--qemu=} ;;
	*) printf 'qemu-device/build: unknown argument %s\n' "$arg" >&2; exit 2 ;;
	esac
done
case "$variant" in
default | "") variant=default; suffix=""; bin_prefix="" ;;
asan) suffix=-asan; bin_prefix=asan- ;;
*) printf 'qemu-device/build: unknown OHCA_QEMU_VARIANT %s (default|asan)\n' "$variant" >&2; exit 2 ;;
esac
# Each version: the Debian suite its source comes from ("" is the host's
# own apt sources), the meson it needs at least, and (pin_*) a Debian upload
# to take when the mirror's pool lacks the source its index names.
pin_ver=""
pin_dsc_sha256=""
case "$qemu_version" in
7.2) suite=""; meson_min=0.61 ;;
10.0) suite=trixie; meson_min=1.5.0 ;;
11.1)
	suite=sid; meson_min=1.5.0
	# sid's index names 11.1.3+ds-1 (and forky's 11.1.2+ds-3), but the
	# mirror this project reaches has none of their files (404 on
	# 2026-12-06); sid's 11.1.1+ds-1 upload is in its pool. No signed index
	# lists that upload any more, so its .dsc is pinned by SHA-256 here, and
	# the .dsc names the tarballs' SHA-256 (apt-helper checks each file).
	pin_ver=1:11.1.1+ds-1
	pin_dsc_sha256=dfd4fbdd38517e2467002091bbcd938bbff8b2c851cc3f56b019236c7d1f21da
	;;
*) printf 'qemu-device/build: QEMU %s is not supported (7.2, 10.0 or 11.1)\n' "$qemu_version" >&2; exit 2 ;;
esac
if [ "$qemu_version" = 7.2 ]; then
	out_dir=$top/build/qemu$suffix
else
	out_dir=$top/build/qemu-$qemu_version$suffix
	bin_prefix=$bin_prefix$qemu_version-
fi
apt_suite() { bash "$top/tests/vm/apt-suite.sh" "$suite" "$@"; }

log() { printf 'qemu-device/build: %s\n' "$*"; }
die() { printf 'qemu-device/build: error: %s\n' "$*" >&2; exit 1; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "need root for: $*"
	fi
}

# --- 1. build dependencies --------------------------------------------------
# tests/deps.sh is the one list of host packages (a no-op when all are there).
bash "$top/tests/deps.sh" >/dev/null || die "installing the build dependencies failed (tests/deps.sh)"

# --- 2. a deb-src entry ------------------------------------------------------
# Any deb822 file with "Types: deb-src" (ohca-src.sources, ohca-deb-src.sources
# or the distribution's own) will do; otherwise derive one from debian.sources
# so the mirror is whatever this machine already uses.
have_src() {
	grep -qsE '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources ||
		grep -qsE '^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list
}
if [ -z "$suite" ] && ! have_src; then
	[ -f /etc/apt/sources.list.d/debian.sources ] ||
		die "no deb-src entry and no /etc/apt/sources.list.d/debian.sources to derive one from"
	log "adding /etc/apt/sources.list.d/ohca-deb-src.sources"
	sed -E 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
		as_root tee /etc/apt/sources.list.d/ohca-deb-src.sources >/dev/null
	as_root apt-get update -q
fi

# --- 3. pristine source --------------------------------------------------------
showsrc() {
	if [ -n "$suite" ]; then apt_suite apt-cache showsrc qemu; else apt-cache showsrc qemu; fi 2>/dev/null |
		awk '/^Version:/ {print $2}' | sort -V | tail -n 1
}
full_ver=$(showsrc)
if [ -z "$full_ver" ] && [ -z "$suite" ]; then
	as_root apt-get update -q
	full_ver=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' |
		sort -V | tail -n 1)
fi
[ -n "$full_ver" ] || die "apt-cache showsrc qemu found no source package"
ver=${full_ver#*:}
case "$ver" in "$qemu_version"[.+]*) ;; *) die "expected QEMU $qemu_version source${suite:+ in $suite}, found $ver" ;; esac

# The pinned upload (see pin_ver above), from the pool directory the index
# names for qemu, each file checked by SHA-256 before dpkg-source unpacks it.
fetch_pinned() {
	local dir=$1 mirror pool dsc sum name
	mirror=$(bash "$top/tests/vm/apt-suite.sh" --mirror)
	pool=$(apt_suite apt-cache showsrc qemu 2>/dev/null | awk '/^Directory:/ {print $2; exit}')
	[ -n "$pool" ] || die "no Directory for qemu in $suite's index"
	dsc=qemu_${pin_ver#*:}.dsc
	# (apt-helper runs as root: the cache is not the _apt user's)
	/usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file \
		"${mirror%/}/$pool/${dsc//+/%2b}" "$dir/$dsc" "SHA256:$pin_dsc_sha256" ||
		die "fetching the pinned $dsc failed"
	awk '/^Checksums-Sha256:/ {f = 1; next} /^[^ ]/ {f = 0} f {print $1, $3}' "$dir/$dsc" |
		while read -r sum name; do
			/usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file \
				"${mirror%/}/$pool/${name//+/%2b}" "$dir/$name" "SHA256:$sum" ||
				die "fetching $name failed"
		done
	(cd "$dir" && dpkg-source -x "$dsc") || die "dpkg-source -x $dsc failed"
}
# Is the .dsc the index names for $full_ver in the pool? (fetched, then
# dropped: a 404 answers at once)
index_source_fetchable() {
	local uri tmp rc
	uri=$(apt_suite apt-get source -q --print-uris "qemu=$full_ver" 2>/dev/null |
		awk -F"'" '$2 ~ /\.dsc$/ {print $2; exit}')
	[ -n "$uri" ] || return 1
	tmp=$(mktemp -d)
	/usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file "$uri" "$tmp/probe.dsc" \
		>/dev/null 2>&1
	rc=$?
	rm -rf "$tmp"
	return $rc
}
if [ -n "$pin_ver" ] && [ ! -f "$cache/qemu-src-$ver/.complete" ] &&
	{ [ -f "$cache/qemu-src-${pin_ver#*:}/.complete" ] || ! index_source_fetchable; }; then
	log "qemu $full_ver's source is not in the mirror's pool: taking the pinned $pin_ver"
	full_ver=$pin_ver
	ver=${full_ver#*:}
fi
src_cache=$cache/qemu-src-$ver
if [ ! -f "$src_cache/.complete" ]; then
	log "fetching qemu $full_ver source into $src_cache"
	rm -rf "$src_cache.tmp"
	mkdir -p "$src_cache.tmp"
	if [ "$full_ver" = "$pin_ver" ]; then
		fetch_pinned "$src_cache.tmp"
	elif [ -n "$suite" ]; then
		(cd "$src_cache.tmp" && apt_suite apt-get source -q "qemu=$full_ver")
	else
		(cd "$src_cache.tmp" && apt-get source -q "qemu=$full_ver")
	fi
	rm -rf "$src_cache"
	mv "$src_cache.tmp" "$src_cache"
	touch "$src_cache/.complete"
fi
pristine=$(find -H "$src_cache" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n 1)
[ -n "$pristine" ] && [ -f "$pristine/meson.build" ] || die "no unpacked source in $src_cache"

# Pure-Python Debian packages the host lacks or has too old: unpacked from
# another suite into the cache (not installed) and put on configure's
# PYTHONPATH (and into the build's pyvenv, for ninja's regeneration runs).
py_path=""
# unpack_python_deb SUITE PACKAGE DIR-PREFIX CHECK-DIR
unpack_python_deb() {
	local suite=$1 pkg=$2 prefix=$3 check=$4 pkg_ver dir
	pkg_ver=$(bash "$top/tests/vm/apt-suite.sh" "$suite" apt-cache show "$pkg" 2>/dev/null |
		awk '/^Version:/ {print $2}' | sort -V | tail -n 1)
	[ -n "$pkg_ver" ] || die "$suite has no $pkg"
	dir=$cache/$prefix-$pkg_ver
	if [ ! -f "$dir/.complete" ]; then
		log "unpacking $pkg $pkg_ver from $suite into $dir"
		rm -rf "$dir.tmp"
		mkdir -p "$dir.tmp/deb"
		(cd "$dir.tmp/deb" &&
			bash "$top/tests/vm/apt-suite.sh" "$suite" apt-get download -q "$pkg=$pkg_ver") >&2 ||
			die "downloading $pkg $pkg_ver failed"
		dpkg-deb -x "$dir.tmp"/deb/"${pkg}"_*.deb "$dir.tmp"
		rm -rf "$dir.tmp/deb" "$dir"
		mv "$dir.tmp" "$dir"
		touch "$dir/.complete"
	fi
	[ -d "$dir/usr/lib/python3/dist-packages/$check" ] || die "no $check in $dir"
	py_path=${py_path:+$py_path:}$dir/usr/lib/python3/dist-packages
}
# QEMU 8.1 and later need a newer meson than Debian 12's 1.0 (and the
# Debian source has no vendored wheel): the host's backports suite has one.
host_meson=$(meson --version 2>/dev/null || echo 0)
if [ "$(printf '%s\n%s\n' "$meson_min" "$host_meson" | sort -V | head -n 1)" != "$meson_min" ]; then
	unpack_python_deb "$(. /etc/os-release && echo "$VERSION_CODENAME")-backports" meson meson mesonbuild
fi
# QEMU 11 checks at configure time for pycotap (its test runner's TAP
# output) and qemu.qmp (its Python tooling), which the +ds tarball does not
# vendor as wheels and bookworm does not package: the source suite's.
if [ "${qemu_version%%.*}" -ge 11 ]; then
	/usr/bin/python3 -c 'import pycotap' 2>/dev/null ||
		unpack_python_deb "$suite" python3-pycotap python3-pycotap pycotap
	/usr/bin/python3 -c 'import qemu.qmp' 2>/dev/null ||
		unpack_python_deb "$suite" python3-qemu-qmp python3-qemu-qmp qemu/qmp
fi

# --- 4. input hash: cached result? ------------------------------------------------
inputs_hash=$(
	{
		echo "$full_ver"
		cd "$top"
		find qemu-device firmware-interface/include fabric/ib fabric/eth -type f \
			! -path 'qemu-device/engine/tests/*' ! -path 'qemu-device/engine/testing/*' \
			! -path 'qemu-device/tests/*' ! -path 'fabric/ib/tests/*' \
			! -name '*.md' -print0 | sort -z |
			xargs -0 sha256sum
	} | sha256sum | cut -c1-16
)
bin_dir=$cache/qemu-bin/$bin_prefix$inputs_hash
mkdir -p "$out_dir"
if [ -x "$bin_dir/qemu-system-x86_64" ]; then
	ln -sfn "$bin_dir/qemu-system-x86_64" "$out_dir/qemu-system-x86_64"
	log "up to date ($inputs_hash): $out_dir/qemu-system-x86_64"
	exit 0
fi

# --- 5. working tree: pristine copy + overlay ---------------------------------------
tree=$cache/qemu-tree-$ver
src=$tree/src
build=$tree/build
# Both variants overlay the one source tree: one build at a time.
mkdir -p "$tree"
exec 9>"$cache/qemu-tree-$ver.lock"
flock 9
if [ ! -f "$tree/.src-complete" ]; then
	log "copying pristine source to $src"
	rm -rf "$tree"
	mkdir -p "$tree"
	cp -a "$pristine" "$src"
	touch "$tree/.src-complete"
fi

# Overlay hw/ohca. Only files whose content differs are copied, and they
# get the current time, not their own: worktrees share this tree, and a
# file copied back with an older mtime than the object built from another
# worktree's version would not be recompiled (a stale object in the binary).
mkdir -p "$src/hw/ohca"
rsync -rlp --checksum --delete --exclude=/firmware-interface --exclude=/fabric --exclude=/build.sh \
	--exclude=/asan_overlay.py --exclude=/devices.mak --exclude=/qemu-patches \
	--exclude=/engine/tests --exclude=/engine/testing --exclude=/tests \
	--exclude=/engine/CMakeLists.txt \
	"$top/qemu-device/" "$src/hw/ohca/"
mkdir -p "$src/hw/ohca/firmware-interface"
rsync -rlp --checksum --delete "$top/firmware-interface/include" "$src/hw/ohca/firmware-interface/"
# fabric/ib (the InfiniBand wire formats and SMA the engine shares with
# ohca-switch): its sources, not its tests.
mkdir -p "$src/hw/ohca/fabric"
rsync -rlp --checksum --delete --exclude=/tests "$top/fabric/ib" "$src/hw/ohca/fabric/"
# fabric/eth (Ethernet frames: the PFC and PAUSE frames).
rsync -rlp --checksum --delete "$top/fabric/eth" "$src/hw/ohca/fabric/"

# The two edits that hook hw/ohca into the tree, and no edk2 blobs (the dfsg
# tarball has none).
grep -qx "subdir('ohca')" "$src/hw/meson.build" ||
	sed -i "/^subdir('nvme')$/a subdir('ohca')" "$src/hw/meson.build"
grep -qx "subdir('ohca')" "$src/hw/meson.build" || die "could not edit hw/meson.build"
grep -qx "source ohca/Kconfig" "$src/hw/Kconfig" ||
	sed -i "/^source nvme\/Kconfig$/a source ohca/Kconfig" "$src/hw/Kconfig"
grep -qx "source ohca/Kconfig" "$src/hw/Kconfig" || die "could not edit hw/Kconfig"
# Fixes to QEMU itself that a VM with ohca needs (qemu-device/qemu-patches/<version>/,
# each file says why), applied once to the working tree: a patch that
# reverses cleanly is in already.
for p in "$top/qemu-device/qemu-patches/$qemu_version"/*.patch; do
	[ -f "$p" ] || continue
	if ! patch -d "$src" -p1 -R -f -s --dry-run <"$p" >/dev/null 2>&1; then
		log "applying $(basename "$p")"
		patch -d "$src" -p1 -f -s <"$p" || die "$p does not apply to QEMU $qemu_version"
	fi
done
# Only the devices the VMs use (configure --with-devices-x86_64=ohca).
cmp -s "$top/qemu-device/devices.mak" "$src/configs/devices/x86_64-softmmu/ohca.mak" ||
	cp "$top/qemu-device/devices.mak" "$src/configs/devices/x86_64-softmmu/ohca.mak"
# (sed only when needed: rewriting meson.build would make meson regenerate)
if grep -q '^ *unpack_edk2_blobs = bzip2.found()$' "$src/meson.build"; then
	sed -i 's/^\( *\)unpack_edk2_blobs = bzip2.found()$/\1unpack_edk2_blobs = false/' \
		"$src/meson.build"
fi

# --- 6. configure (once) and build -----------------------------------------------
configure_args=(--target-list=x86_64-softmmu --without-default-features
	--enable-slirp --enable-tcg --enable-fdt=system --enable-virtfs --enable-attr --enable-cap-ng
	--disable-docs --disable-install-blobs
	--without-default-devices --with-devices-x86_64=ohca
	# Debian spreads the firmware over qemu-system-data, seabios and
	# ipxe-qemu; search all three so no -L is needed.
	--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu)
# QEMU 11's configure checks its tooling group (setuptools, wheel, pip) in
# a venv of the python3 it runs: Debian's, which has them as packages (not
# whichever python3 is first on PATH; an offline pip cannot add them).
[ "${qemu_version%%.*}" -lt 11 ] || configure_args+=(--python=/usr/bin/python3)
# (what older versions of this script kept: configure traces, and the
# sanitizer variant's own build of all of QEMU)
rm -rf "$tree"/hostdeps-configure*.paths "$tree/build-asan" "$tree/.configure-args-asan" \
	"$tree/configure-asan.log" "$tree/ninja-asan.log"
if [ ! -f "$build/build.ninja" ] ||
	[ "$(cat "$tree/.configure-args" 2>/dev/null)" != "${configure_args[*]}" ]; then
	# Re-running configure in an existing build directory keeps its
	# objects: ninja then rebuilds only what the new flags affect.
	log "configuring (${configure_args[*]})"
	mkdir -p "$build"
	# Not traced by tests/hostdeps.py: --without-default-features makes the
	# features above the only ones, and configure fails without their
	# packages; its probes for everything else (compilers, gdb, docker,
	# libraries it then leaves out) are not inputs of the build.
	(cd "$build" && PYTHONPATH=$py_path "$src/configure" "${configure_args[@]}") >"$tree/configure.log" 2>&1 ||
		{ tail -n 40 "$tree/configure.log"; die "configure failed (log: $tree/configure.log)"; }
	echo "${configure_args[*]}" >"$tree/.configure-args"
fi

if [ -n "$py_path" ]; then
	for site in "$build"/pyvenv/lib/python3*/site-packages; do
		[ -d "$site" ] && tr ':' '\n' <<<"$py_path" >"$site/ohca-meson.pth"
	done
fi

log "building QEMU $ver with ninja -j$jobs in $build"
# tests/run-all.sh: this run builds, so its time counts as a clean-cache run
[ -z "${OHCA_COLD_MARK:-}" ] || echo "qemu$suffix" >>"$OHCA_COLD_MARK"
start=$SECONDS
# ninja's status line shows progress ([n/total]); keep it to one line per
# 200 steps plus errors so long builds show progress without flooding logs.
set +e
# meson's own regeneration chatter (when a meson.build changed) goes to the
# log only.
run_ninja() {
	local logfile=$1
	shift
	ninja -C "$build" -j"$jobs" "$@" 2>&1 | tee "$logfile" |
		awk '/^\[[0-9]+\/[0-9]+\]/ { n++; if (n % 200 == 1) { print; fflush() } next }
		     /error|Error|ERROR|warning:|FAILED|ninja:/ { print; fflush() }'
	local rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ]; then
		grep -v '^\[[0-9]*/[0-9]*\]' "$logfile" | tail -n 60 >&2
		die "ninja failed (log: $logfile)"
	fi
}
# -d keeprsp: meson >= 1.5 (QEMU 10.0, 11.1) links through a response file,
# which ninja deletes after the link; the sanitizer overlay reads the
# link's arguments from it
run_ninja "$tree/ninja.log" -d keeprsp qemu-system-x86_64
binary=$build/qemu-system-x86_64
if [ "$variant" = asan ] && [ ! -f "$build/qemu-system-x86_64.rsp" ] &&
	ninja -C "$build" -t commands qemu-system-x86_64 | tail -n 1 | grep -q '@qemu-system-x86_64\.rsp'; then
	log "relinking once to keep the link's response file"
	rm -f "$binary"
	run_ninja "$tree/ninja.log" -d keeprsp qemu-system-x86_64
fi
if [ "$variant" = asan ]; then
	log "recompiling the device with ASan + UBSan and relinking"
	/usr/bin/python3 "$top/qemu-device/asan_overlay.py" "$build" || die "asan_overlay.py failed"
	run_ninja "$tree/ninja-asan-overlay.log" -f ohca-asan.ninja
	binary=$build/ohca-asan/qemu-system-x86_64
	# The device must really be instrumented (a flag lost on the way would
	# leave a sanitizer stage that cannot fail).
	nm "$build/ohca-asan/hw/ohca/libohca-engine.a" 2>/dev/null | grep ' U __asan_report_load' >/dev/null ||
		die "the engine in the sanitizer build is not instrumented"
	# (libcommon.fa.p on 7.2's meson, libcommon.a.p on later ones)
	nm "$build"/ohca-asan/libcommon.*a.p/hw_ohca_hw_ohca.c.o 2>/dev/null | grep ' U __ubsan_handle' >/dev/null ||
		die "the glue in the sanitizer build is not instrumented"
fi
set -e
log "built in $((SECONDS - start))s"

mkdir -p "$bin_dir.tmp"
cp "$binary" "$bin_dir.tmp/"
rm -rf "$bin_dir"
mv "$bin_dir.tmp" "$bin_dir"
ln -sfn "$bin_dir/qemu-system-x86_64" "$out_dir/qemu-system-x86_64"

# Keep the eight most recent binaries of this variant (hashes are 16 hex
# digits, so the default variant's pattern does not match asan-*), and any
# older one a running process was started from: several worktrees build at
# once, and a test that starts QEMU again from the same link (a migration's
# destination) must not find its binary gone.
in_use=$(for exe in /proc/[0-9]*/exe; do readlink "$exe" 2>/dev/null || true; done |
	sed -n "s|^\($cache/qemu-bin/[^/]*\)/qemu-system-x86_64.*|\1/|p" | sort -u)
ls -1dt "$cache"/qemu-bin/"$bin_prefix"????????????????/ 2>/dev/null | tail -n +9 |
	while IFS= read -r old; do
		grep -qxF "$old" <<<"$in_use" || rm -rf "$old"
	done

log "done: $out_dir/qemu-system-x86_64 -> $bin_dir/qemu-system-x86_64"
