#!/usr/bin/env bash
# DKMS as a user's machine runs it, on the host's CPU: ohca-dkms installed
# with apt, with the guest kernel's headers, into a throwaway copy of the
# release's guest image (packaging/release-root.sh), where the package's own
# postinst and dkms.conf build and install the modules; then those modules,
# as DKMS installed them, in a binary package for that one kernel,
# ohca-modules-<kver>, which make test-packages installs in a fresh guest
# instead of compiling there (over 30 minutes under TCG).
#
#   packaging/dkms-modules.sh DISTRO [KVER]
#
# Reads build/packages/<distro>/ohca-dkms_*.deb (make packages DISTRO=...);
# writes build/packages/<distro>/modules/ohca-modules-<kver>_<version>_amd64.deb
# and prints the time of each step. KVER: the kernel in the image (its only
# /lib/modules entry) unless given.
#
# Debian's dkms (3.0.10 in bookworm, 3.2.2 in trixie) has no mkbmdeb any
# more, and its mktarball's archive needs dkms, and by its dependencies a
# compiler, on the machine that loads it: so the package is made here, with
# the release's own dpkg-deb, from the files DKMS installed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
die() { echo "dkms-modules: error: $*" >&2; exit 1; }

distro=${1:-}
[ -n "$distro" ] || die "usage: dkms-modules.sh DISTRO [KVER]"
kver=${2:-}
out=$top/build/packages/$distro
image=$(OHCA_DISTRO=$distro bash "$top/tests/vm/mkrootfs.sh" --print-path) ||
	die "no $distro guest image: make rootfs DISTRO=$distro"
dkms_deb=$(find "$out" -maxdepth 1 -name 'ohca-dkms_*.deb' | sort | tail -n 1)
[ -n "$dkms_deb" ] || die "no $out/ohca-dkms_*.deb: make packages DISTRO=$distro"
rm -rf "$out/modules"
mkdir -p "$out/modules"

start=$SECONDS
# shellcheck disable=SC2016 # expanded in the release's root
bash "$here/release-root.sh" "$distro" "$image" "$out/dkms-root" bash -c '
	set -euo pipefail
	deb=$1 out=$2 kver=$3 copyright=$4
	if [ -z "$kver" ]; then
		kver=$(ls /lib/modules)
		[ "$(echo "$kver" | wc -l)" = 1 ] || { echo "dkms-modules: kernels: $kver; name one" >&2; exit 1; }
	fi
	t=$SECONDS
	apt-get update -q >/dev/null
	echo "dkms-modules: apt-get update $((SECONDS - t)) s"
	t=$SECONDS
	# what a user runs (docs/install.md): DKMS builds in the postinst
	apt-get install -y -q --no-install-recommends "$deb" "linux-headers-$kver" >/tmp/apt.log 2>&1 ||
		{ tail -n 40 /tmp/apt.log; cat /var/lib/dkms/ohca/*/build/make.log 2>/dev/null || true; exit 1; }
	grep -E "^(Building|Installing|Signing|Running|Error)|dkms|DKMS" /tmp/apt.log || true
	echo "dkms-modules: apt-get install ohca-dkms linux-headers-$kver (DKMS build) $((SECONDS - t)) s"
	echo "=== dkms status"
	dkms status
	dkms status -k "$kver" ohca | grep -q ": installed" ||
		{ echo "dkms-modules: DKMS did not install ohca for $kver" >&2; exit 1; }

	version=$(dpkg-query -W -f="\${Version}" ohca-dkms)
	name=ohca-modules-$kver
	# where the release keeps modules (/usr/lib/modules since the /usr merge)
	dir=$(realpath "/lib/modules/$kver/updates/dkms")
	pkg=/tmp/$name
	mkdir -p "$pkg/DEBIAN" "$pkg$dir" "$pkg/usr/share/doc/$name"
	cp -a "$dir"/ohca_core.ko* "$dir"/ohca_ib.ko* "$pkg$dir/"
	cp "$copyright" "$pkg/usr/share/doc/$name/copyright"
	# (a native version: changelog.gz)
	printf "%s\n" "$name ($version) unstable; urgency=medium" "" \
		"  * The modules of ohca-dkms $version," "    built by DKMS for $kver." "" \
		" -- ohca maintainers <maintainers@users.noreply.a-seed-ee6ea073.example>  $(date -R)" |
		gzip -9n >"$pkg/usr/share/doc/$name/changelog.gz"
	cat >"$pkg/DEBIAN/control" <<-EOF
	Package: $name
	Source: ohca
	Version: $version
	Architecture: $(dpkg --print-architecture)
	Maintainer: ohca maintainers <maintainers@users.noreply.a-seed-ee6ea073.example>
	Installed-Size: $(du -sk "$pkg" | cut -f1)
	Depends: kmod
	Provides: ohca-modules
	Conflicts: ohca-dkms
	Section: kernel
	Priority: optional
	Description: driver for the ohca emulated RDMA adapter (modules for $kver)
	 The kernel modules ohca_core and ohca_ib as DKMS built them from
	 ohca-dkms $version
	 for the kernel $kver only. They load by themselves
	 when an ohca PCI device is present.
	EOF
	printf "%s\n" "#!/bin/sh" "set -e" "if [ \"\$1\" = configure ]; then depmod -a $kver; fi" \
		>"$pkg/DEBIAN/postinst"
	printf "%s\n" "#!/bin/sh" "set -e" \
		"if [ \"\$1\" = remove ] || [ \"\$1\" = purge ]; then depmod -a $kver || true; fi" \
		>"$pkg/DEBIAN/postrm"
	chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/postrm"
	(cd "$pkg" && find . -type f ! -path "./DEBIAN/*" -printf "%P\0" | xargs -0 md5sum >DEBIAN/md5sums)
	dpkg-deb --root-owner-group --build "$pkg" "$out/" >/dev/null
	ls "$out"
' _ "$dkms_deb" "$out/modules" "$kver" "$here/debian/copyright"
echo "dkms-modules: $distro done in $((SECONDS - start)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
