#!/usr/bin/env bash
# Builds the guest root filesystem for the ohca test VMs: an ext4 image made
# from a bootstrapped (mmdebstrap) Debian release (trixie by default; OHCA_DISTRO=bookworm
# or sid) (minbase + the packages in
# guest/packages.txt), the guest kernel's /lib/modules, rdma-core's upstream
# Python test suite (gunzipped, in /opt/rdma-core-tests) and our init
# (/sbin/ohca-init).
#
# The image is cached as $OHCA_CACHE/rootfs-<key>.img, the key being a hash of
# this script, the package list, the init script, the guest kernel version and
# the host's rdma-core version (the test suite is copied from the host).
# build/rootfs.img links to bookworm's, the host's release
# (build/rootfs-<distro>.img to another release's).
#
# Bookworm's guest kernel and test suite are the host's; another release's
# come from its build chroot (tests/vm/chroot.sh), whose /boot holds the
# kernel and initrd the VMs boot, and whose tree (bootstrapped with the
# guest packages as well) the image is a copy of.
#
# Usage: mkrootfs.sh              build unless cached
#        mkrootfs.sh --print-path print the image path for the current inputs
#                                 (exit 1 if it is not built yet)
#        mkrootfs.sh --force      rebuild even if cached
# Env:   OHCA_CACHE       cache root (default ~/.cache/ohca)
#        OHCA_DISTRO      trixie (default), bookworm or sid
#        OHCA_GUEST_KVER  guest kernel version (default: newest
#                         /boot/vmlinuz-*-amd64 that has /lib/modules/<ver>,
#                         of the host or the release's chroot)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${OHCA_CACHE:-$HOME/.cache/ohca}
pkgfile=$here/guest/packages.txt
initfile=$here/guest/ohca-init
suite=${OHCA_DISTRO:-trixie}
# Where the guest kernel and the rdma-core test suite come from: the host
# for bookworm (the host's release), the release's build chroot otherwise.
kroot=""
case "$suite" in
bookworm) ;;
trixie | sid)
	if [ "${1:-}" = --print-path ]; then
		kroot=$(bash "$here/chroot.sh" "$suite" --print-path) ||
			{ echo "$kroot"; exit 1; }
	else
		kroot=$(bash "$here/chroot.sh" "$suite" | tail -n 1)
	fi
	;;
*) echo "mkrootfs: error: OHCA_DISTRO=$suite: expected bookworm, trixie or sid" >&2; exit 1 ;;
esac
testsrc=$kroot/usr/share/doc/rdma-core/tests

die() { echo "mkrootfs: error: $*" >&2; exit 1; }
say() { echo "mkrootfs: $*"; }

mode=build
case "${1:-}" in
	"") ;;
	--print-path) mode=print ;;
	--force) mode=force ;;
	-h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (try --help)" ;;
esac

# The guest kernel: newest Debian amd64 kernel with both an image and modules.
guest_kver() {
	if [ -n "${OHCA_GUEST_KVER:-}" ]; then
		echo "$OHCA_GUEST_KVER"
		return
	fi
	local v best=
	for v in "$kroot"/boot/vmlinuz-*-amd64; do
		[ -e "$v" ] || continue
		v=${v#"$kroot"/boot/vmlinuz-}
		[ -d "$kroot/lib/modules/$v" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	[ -n "$best" ] || die "no guest kernel: install linux-image-amd64 (need /boot/vmlinuz-*-amd64 and /lib/modules/<ver>)"
	echo "$best"
}

kver=$(guest_kver)
[ -d "$kroot/lib/modules/$kver" ] || die "$kroot/lib/modules/$kver missing"
[ -f "$pkgfile" ] || die "$pkgfile missing"
[ -f "$initfile" ] || die "$initfile missing"
rdma_ver=$(dpkg-query --admindir="$kroot/var/lib/dpkg" -W -f='${Version}' rdma-core 2>/dev/null || echo none)

packages=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$pkgfile" | paste -sd, -)
key=$( { cat "$0" "$pkgfile" "$initfile"; echo "kver=$kver rdma-core=$rdma_ver suite=$suite"; } |
	sha256sum | cut -c1-16)
img=$cache/rootfs-$key.img

if [ "$mode" = print ]; then
	echo "$img"
	[ -f "$img" ]
	exit
fi

mkdir -p "$top/build"
link=$top/build/rootfs.img
[ "$suite" = bookworm ] || link=$top/build/rootfs-$suite.img
if [ -f "$img" ] && [ "$mode" != force ]; then
	ln -sfn "$img" "$link"
	say "cached ($img)"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "mmdebstrap needs root; run as root"
[ -z "${OHCA_COLD_MARK:-}" ] || echo rootfs >>"$OHCA_COLD_MARK"
for tool in mmdebstrap mke2fs sha256sum; do
	command -v "$tool" >/dev/null || die "'$tool' not found (install mmdebstrap e2fsprogs: tests/deps.sh)"
done
[ -d "$testsrc" ] || die "$testsrc missing: it comes from the package python3-pyverbs (tests/deps.sh installs it)"

# The mirror: the host's own apt source for $suite (or, for another release,
# for its own), read at run time by tests/vm/apt-suite.sh; if the host has
# none, mmdebstrap's built-in default.
mirror=$(bash "$here/apt-suite.sh" --mirror "$suite" 2>/dev/null || true)

mkdir -p "$cache"
work=$(mktemp -d "$cache/rootfs-$key.XXXXXX.tmp")
cleanup() {
	local rc=$?
	rm -rf "$work"
	[ "$rc" -eq 0 ] || echo "mkrootfs: FAILED (exit $rc)" >&2
}
trap cleanup EXIT

start=$SECONDS
root=$work/root
say "building $img"
say "  $suite, guest kernel $kver, rdma-core tests from ${kroot:-the host} ($rdma_ver)"
say "  mirror: ${mirror:-mmdebstrap default}"
say "  packages: $packages"
if [ -n "$kroot" ]; then
	# Another release: its build chroot was bootstrapped with the guest's
	# packages too (tests/vm/chroot.sh), so the image is a copy of that tree
	# (a second debootstrap of the same release cost 10-25 minutes cold).
	# It carries the chroot's compiler and kernel headers besides.
	say "[1/5] the $suite build chroot's tree ($kroot)"
	for p in ${packages//,/ }; do
		[ "$(dpkg-query --admindir="$kroot/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null)" = \
			"install ok installed" ] || die "$p is not installed in $kroot (tests/vm/chroot.sh $suite)"
	done
	mkdir "$root"
	# the system's own top-level entries (not the repository mount points
	# chroot.sh --run makes, nor what builds left in /tmp or /root)
	for d in bin boot dev etc home lib lib32 lib64 media mnt opt sbin srv usr var; do
		[ -e "$kroot/$d" ] || [ -L "$kroot/$d" ] || continue
		cp -a "$kroot/$d" "$root/"
	done
	mkdir -p "$root/proc" "$root/sys" "$root/run" "$root/tmp" "$root/root"
	chmod 1777 "$root/tmp"
	chmod 0700 "$root/root"
else
	say "[1/5] mmdebstrap --variant=minbase $suite (minutes on a cold cache)"
	# mmdebstrap rather than debootstrap, as for the other releases' build
	# chroots (tests/vm/chroot.sh says why: apt fetches every package at
	# once and dpkg installs them in batches), in a mount namespace of its
	# own so that nothing it mounts in the tree outlives it.
	# shellcheck disable=SC2086
	unshare -m --propagation private \
		mmdebstrap --variant=minbase --include="$packages" "$suite" "$root" $mirror \
		>"$work/mmdebstrap.log" 2>&1 || {
		tail -n 30 "$work/mmdebstrap.log" >&2
		die "mmdebstrap failed"
	}
fi
say "      done in $((SECONDS - start)) s"

say "[2/5] guest kernel modules ($kver)"
mkdir -p "$root/lib/modules"
cp -a "$kroot/lib/modules/$kver" "$root/lib/modules/"
# /lib/modules/<ver>/extra is where a test may drop ohca.ko before depmod.
mkdir -p "$root/lib/modules/$kver/extra"
depmod -b "$root" "$kver"

say "[3/5] rdma-core tests -> /opt/rdma-core-tests"
mkdir -p "$root/opt"
cp -a "$testsrc" "$root/opt/rdma-core-tests"
find "$root/opt/rdma-core-tests" -name '*.gz' -exec gunzip -f {} +

say "[4/5] init and configuration"
install -m 0755 "$initfile" "$root/sbin/ohca-init"
mkdir -p "$root/share"
echo ohca-vm >"$root/etc/hostname"
cat >"$root/etc/hosts" <<'HOSTS'
127.0.0.1	localhost
::1		localhost ip6-localhost ip6-loopback
10.77.0.1	vm0
10.77.0.2	vm1
HOSTS
: >"$root/etc/fstab"
sed -i 's/^root:[^:]*:/root::/' "$root/etc/shadow"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root/debootstrap"

say "[5/5] ext4 image"
used_mb=$(du -sm "$root" | cut -f1)
size_mb=$((used_mb + used_mb / 2 + 256))
mke2fs -q -t ext4 -L ohca-root -d "$root" "$work/root.img" "${size_mb}M" ||
	die "mke2fs -d failed"
mv "$work/root.img" "$img"
ln -sfn "$img" "$link"
say "done: $img (${size_mb} MiB, ${used_mb} MiB used) in $((SECONDS - start)) s"
