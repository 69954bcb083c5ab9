#!/usr/bin/env bash
# A build chroot of another Debian release (trixie, sid): its compiler, its
# kernel (image, modules and headers: the guest kernel of that release's
# VMs) and its libibverbs. The driver and the provider are built in it when
# the host's compiler and libraries are not that release's (a 6.12 kernel
# is built with gcc 14, and its flags are not all gcc 12's).
#
#   tests/vm/chroot.sh DISTRO                 build unless cached, print its path
#   tests/vm/chroot.sh DISTRO --print-path    print the path (exit 1 if not built)
#   tests/vm/chroot.sh DISTRO --run CMD...    run CMD in it, the repository
#                                             bind-mounted at its own path
#
# Cached as $OHCA_CACHE/chroot-<distro>-<key>/ (mmdebstrap --variant=buildd
# plus the packages below; the key hashes the distribution and the packages).
# Nothing stays mounted: --run mounts in a private mount namespace.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${OHCA_CACHE:-$HOME/.cache/ohca}
die() { echo "chroot: error: $*" >&2; exit 1; }
say() { echo "chroot: $*" >&2; }

distro=${1:-}
case "$distro" in
trixie | sid) ;;
*) die "usage: chroot.sh trixie|sid [--print-path | --run CMD...]" ;;
esac
shift
packages=(
	# the guest kernel of this release's VMs and its headers
	linux-image-amd64 linux-headers-amd64 kmod
	# the provider: libibverbs and its private provider ABI; the upstream
	# test suite the guest image carries (python3-pyverbs)
	libibverbs-dev rdma-core ibverbs-providers python3-pyverbs pkg-config
	# the provider's fake-device check (make -C userspace check); the
	# driver's sparse check against this release's headers (make kernel)
	valgrind sparse
)
# and the guest's packages: the release's guest image is a copy of this
# tree (tests/vm/mkrootfs.sh), so one mmdebstrap serves both (existing
# chroots get them through the step below)
mapfile -t guest < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$here/guest/packages.txt")
packages+=("${guest[@]}")
# The key: the release (not this script's plumbing, not the package list:
# packages added to the list are installed into an existing chroot with its
# own apt); bump the generation when the way it is built changes.
generation=1
key=$(echo "chroot generation $generation: $distro" | sha256sum | cut -c1-16)
root=$cache/chroot-$distro-$key

case "${1:-}" in
--print-path)
	echo "$root"
	[ -f "$root/.complete" ]
	exit
	;;
esac

if [ ! -f "$root/.complete" ]; then
	[ "$(id -u)" -eq 0 ] || die "mmdebstrap needs root"
	command -v mmdebstrap >/dev/null || die "mmdebstrap missing (tests/deps.sh)"
	[ -z "${OHCA_COLD_MARK:-}" ] || echo "chroot-$distro" >>"$OHCA_COLD_MARK"
	mirror=$(bash "$here/apt-suite.sh" --mirror)
	exec 9>"$root.lock"
	flock 9
	if [ ! -f "$root/.complete" ]; then
		start=$SECONDS
		say "building the $distro build chroot $root (mmdebstrap --variant=buildd; minutes)"
		rm -rf "$root.tmp"
		list=$(IFS=,; echo "${packages[*]}")
		# A mirror that is a copy frozen in time serves Release files past
		# their Valid-Until (sid's lasts a week); where the host's apt is
		# told to accept them, so is the chroot's (the option stays in its
		# apt.conf.d, and in the image made from it)
		aptopt=()
		if [ "$(apt-config dump Acquire::Check-Valid-Until)" = 'Acquire::Check-Valid-Until "false";' ]; then
			aptopt=(--aptopt='Acquire::Check-Valid-Until "false"')
		fi
		# mmdebstrap, not debootstrap: the same variant (minbase plus
		# build-essential), but apt fetches every package in one go and
		# dpkg installs them in a few batches, where debootstrap's shell
		# spends a second or more on each package under load (2026-12-06,
		# load 17-23: 420 s of its 1827 s went to fetching and checking 303
		# packages one by one, 365 MiB the mirror serves in seconds).
		# mmdebstrap mounts /proc, /sys and /dev in the tree while it
		# works: in a mount namespace of its own, so that nothing stays
		# mounted even when its unmount fails (it did once, "target is
		# busy"). Each log line is stamped with the seconds since the start.
		unshare -m --propagation private \
			mmdebstrap --variant=buildd "${aptopt[@]}" --include="$list" "$distro" "$root.tmp" "$mirror" 2>&1 |
			while IFS= read -r line; do echo "$((SECONDS - start)) $line"; done >"$root.log" ||
			{ tail -n 30 "$root.log" >&2; die "mmdebstrap $distro failed (log: $root.log)"; }
		rm -rf "$root.tmp"/var/cache/apt/archives/*.deb
		mv "$root.tmp" "$root"
		touch "$root/.complete"
		say "done in $((SECONDS - start)) s ($(du -sm "$root" | cut -f1) MiB)"
	fi
	flock -u 9
fi

# Packages added to the list since the chroot was made.
missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "installing ${missing[*]} into $root needs root"
	exec 9>"$root.lock"
	flock 9
	say "installing ${missing[*]} into the $distro chroot"
	unshare -m --propagation private chroot "$root" /bin/sh -c \
		'mount -t proc proc /proc && export DEBIAN_FRONTEND=noninteractive &&
		 apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' _ "${missing[@]}" \
		>"$root.apt.log" 2>&1 || { tail -n 20 "$root.apt.log" >&2; die "apt-get install in the chroot failed"; }
	rm -rf "$root"/var/cache/apt/archives/*.deb
	# a package's trigger may have had dracut make a host-only initrd again
	rm -f "$root/.initrd-generic"
	flock -u 9
fi

# The guest boots this release's initrd. dracut (sid's default since
# 2025) makes a host-only one when the kernel is installed into the chroot:
# without the virtio disk driver, the guest waits for /dev/vda for ever.
# Made generic once (initramfs-tools' images, trixie's, hold every driver).
if [ -x "$root/usr/bin/dracut" ] && [ ! -f "$root/.initrd-generic" ]; then
	[ "$(id -u)" -eq 0 ] || die "regenerating the $distro initrd needs root"
	exec 9>"$root.lock"
	flock 9
	say "making the $distro initrd generic (dracut --no-hostonly)"
	for k in "$root"/boot/vmlinuz-*; do
		[ -e "$k" ] || continue
		kver=${k#"$root"/boot/vmlinuz-}
		unshare -m --propagation private chroot "$root" /bin/sh -c \
			'mount -t proc proc /proc &&
			 dracut --force --no-hostonly --add-drivers "virtio_blk virtio_pci" \
				"/boot/initrd.img-$1" "$1"' _ "$kver" >"$root.dracut.log" 2>&1 ||
			{ tail -n 20 "$root.dracut.log" >&2; die "dracut in the $distro chroot failed"; }
	done
	touch "$root/.initrd-generic"
	flock -u 9
fi

if [ "${1:-}" = --run ]; then
	shift
	[ $# -gt 0 ] || die "--run needs a command"
	[ "$(id -u)" -eq 0 ] || die "chroot needs root"
	# shellcheck disable=SC2016
	exec unshare -m --propagation private bash -c '
		set -e
		root=$1 top=$2
		shift 2
		mkdir -p "$root$top"
		# the root a mount point, so that unshare works inside as well
		mount --bind "$root" "$root"
		mount --bind "$top" "$root$top"
		mount -t proc proc "$root/proc"
		mount --bind /dev "$root/dev"
		exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 bash -c "cd \"\$0\" && exec \"\$@\"" "$top" "$@"
	' _ "$root" "$top" "$@"
fi
echo "$root"
