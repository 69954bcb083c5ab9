#!/usr/bin/env bash
# make packages: ohca's Debian packages in build/packages/, built with
# dpkg-buildpackage from a staged copy of the tree's files (tracked and
# new, not ignored ones) and checked with lintian, which must report
# nothing (an override only with its reason, in debian/*.lintian-overrides).
#
#   ohca-dkms               the kernel modules' sources; DKMS builds them
#   ibverbs-providers-ohca  libohca-rdmav<PABI>.so and ohca.driver, for the
#                           build system's rdma-core release
#   ohca-tools              ohca-switch, ohca_wire, ohca-cmdtest
#
# The version is <VERSION below>~git<commit date>.<commit>; the
# distribution in the changelog is this system's codename. Build
# dependencies come from tests/deps.sh.
set -euo pipefail

base_version=0.1.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
out=$top/build/packages
stage=$out/stage

die() { echo "packages: error: $*" >&2; exit 1; }

cd "$top"
sha=$(git rev-parse --short=7 HEAD)
date=$(git log -1 --format=%cd --date=format:%Y%m%d HEAD)
version=$base_version~git$date.$sha
# shellcheck disable=SC1091 # the running system's file
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unstable}")

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

echo "packages: building ohca $version for $codename"
(cd "$src" && dpkg-buildpackage -b -us -uc -j2) >"$out/build.log" 2>&1 ||
	{ tail -n 40 "$out/build.log" >&2; die "dpkg-buildpackage failed (log: $out/build.log)"; }
rm -f "$out"/*.deb
mv "$stage"/*.deb "$out/"
mv "$stage"/*.buildinfo "$stage"/*.changes "$out/" 2>/dev/null || true

debs=("$out"/*.deb)
for d in "${debs[@]}"; do echo "packages: ${d#"$top"/}"; done
lintian --info --display-info --pedantic --display-experimental "${debs[@]}" >"$out/lintian.log" 2>&1 || true
# Every tag lintian prints is a finding: errors, warnings, info,
# pedantic and experimental ones alike (overridden tags are not printed).
if grep -E '^[EWIPX]: ' "$out/lintian.log"; then
	die "lintian findings above ($out/lintian.log)"
fi
echo "packages: lintian clean (errors, warnings, info, pedantic, experimental) on ${#debs[@]} packages"
rm -rf "$stage"
