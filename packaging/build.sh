#!/usr/bin/env bash
# make packages [DISTRO=trixie|bookworm|sid]: ohca's Debian packages for
# one release in build/packages/<distro>/, built with dpkg-buildpackage
# from a staged copy of the tree's files (tracked and new, not ignored
# ones) and checked with that release's lintian, which must report nothing
# (an override only with its reason, in debian/*.lintian-overrides).
#
#   ohca-dkms               the kernel modules' sources; DKMS builds them
#   ibverbs-providers-ohca  libohca-rdmav<PABI>.so and ohca.driver, for the
#                           release's rdma-core (and depending on it alone)
#   ohca-tools              ohca-switch, ohca_wire, ohca-cmdtest
#
# The host's release (bookworm) builds on the host, its build
# dependencies from tests/deps.sh. Another release builds in a throwaway
# overlay of its build chroot (tests/vm/chroot.sh, packaging/release-root.sh)
# with the build dependencies its own apt resolves from debian/control,
# against its own libibverbs, compiler and lintian.
#
# The version is <VERSION below>~git<commit date>.<commit>; the
# distribution in the changelog is the release's codename.
#
#   packaging/build.sh --in-root SRC   (inside the release's root: the
#                                       dependencies, the build, lintian)
set -euo pipefail

base_version=0.1.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
die() { echo "packages: error: $*" >&2; exit 1; }

# dpkg-buildpackage in SRC (its parent gets the .deb files), then lintian
# on them: every tag it prints is a finding (errors, warnings, info,
# pedantic and experimental ones alike; overridden tags are not printed).
build_and_check() {
	local src=$1 dir
	dir=$(dirname "$src")
	(cd "$src" && dpkg-buildpackage -b -us -uc -j2) >"$dir/build.log" 2>&1 ||
		{ tail -n 40 "$dir/build.log" >&2; die "dpkg-buildpackage failed (log: $dir/build.log)"; }
	lintian --info --display-info --pedantic --display-experimental "$dir"/*.deb \
		>"$dir/lintian.log" 2>&1 || true
	if grep -E '^[EWIPX]: ' "$dir/lintian.log"; then
		die "lintian $(dpkg-query -W -f='${Version}' lintian) findings above ($dir/lintian.log)"
	fi
	local debs=("$dir"/*.deb)
	echo "packages: lintian $(dpkg-query -W -f='${Version}' lintian) clean (errors, warnings, info, pedantic, experimental) on ${#debs[@]} packages"
}

if [ "${1:-}" = --in-root ]; then
	src=$2
	t=$SECONDS
	apt-get update -q >/dev/null
	if ! { apt-get build-dep -y -q --no-install-recommends "$src" &&
		apt-get install -y -q --no-install-recommends lintian; } >"$src/../apt.log" 2>&1; then
		tail -n 30 "$src/../apt.log" >&2
		die "installing the build dependencies failed"
	fi
	echo "packages: build dependencies and lintian installed in $((SECONDS - t)) s"
	build_and_check "$src"
	exit 0
fi

cd "$top"
# shellcheck disable=SC1091 # the running system's file
host_codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unstable}")
codename=${OHCA_DISTRO:-$host_codename}
out=$top/build/packages/$codename
stage=$out/stage
sha=$(git rev-parse --short=7 HEAD)
date=$(git log -1 --format=%cd --date=format:%Y%m%d HEAD)
version=$base_version~git$date.$sha
rm -rf "$stage"
mkdir -p "$stage/ohca-$version"
src=$stage/ohca-$version
# What the packages are built from; the rest of the tree stays out.
git ls-files -z -c -o --exclude-standard -- kernel/Makefile kernel/core kernel/ib \
	kernel/tools/ohca-cmdtest firmware-interface/include firmware-interface/tools \
	userspace tests/wire fabric packaging |
	tar --null -T - -c | tar -x -C "$src"
mv "$src/packaging/debian" "$src/debian"
{
	echo "ohca ($version) $codename; urgency=medium"
	echo
	echo "  * Snapshot of commit $(git rev-parse HEAD)."
	echo
	echo " -- $(sed -n 's/^Maintainer: //p' "$src/debian/control")  $(git log -1 --format=%cD HEAD)"
} >"$src/debian/changelog"

start=$SECONDS
echo "packages: building ohca $version for $codename"
if [ "$codename" = "$host_codename" ]; then
	build_and_check "$src"
else
	root=$(bash "$top/tests/vm/chroot.sh" "$codename" | tail -n 1)
	bash "$here/release-root.sh" "$codename" "$root" "$out/build-root" \
		bash packaging/build.sh --in-root "$src"
	rm -rf "$out/build-root"
fi
rm -f "$out"/*.deb
mv "$stage"/*.deb "$out/"
mv "$stage"/*.buildinfo "$stage"/*.changes "$stage"/*.log "$out/" 2>/dev/null || true
for d in "$out"/*.deb; do echo "packages: ${d#"$top"/}"; done
echo "packages: $codename built and checked in $((SECONDS - start)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
rm -rf "$stage"
