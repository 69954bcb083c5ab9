#!/usr/bin/env bash
# A throwaway root of a Debian release: an overlay whose lower layer is the
# release's build chroot (a directory) or its guest image (an ext4 file,
# mounted read-only), whose upper layer is a fresh directory, so nothing
# the command installs reaches the shared caches. Packages and builds of
# another release than the host's run in one (packaging/build.sh,
# packaging/dkms-modules.sh).
#
#   packaging/release-root.sh DISTRO LOWER UPPER CMD...
#
# UPPER is emptied first. The repository is bind-mounted at its own path
# and CMD runs there, as root, with the network (the lower layer's apt
# sources name the mirror). apt's lists and downloaded packages are kept
# between runs in $OHCA_CACHE/packages-apt-<distro>/. Everything is
# mounted in a private mount namespace: nothing stays mounted.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
cache=${OHCA_CACHE:-$HOME/.cache/ohca}
die() { echo "release-root: error: $*" >&2; exit 1; }

[ $# -ge 4 ] || die "usage: release-root.sh DISTRO LOWER UPPER CMD..."
distro=$1 lower=$2 upper=$3
shift 3
[ "$(id -u)" -eq 0 ] || die "mounting an overlay needs root"
[ -e "$lower" ] || die "$lower: no such chroot or image"
# The host's own release: its apt sources (with -updates and -security,
# where the guest kernel, the host's, and its headers come from), which
# the root is given in place of its own.
# shellcheck disable=SC1091 # the running system's file
host_codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
sources=()
if [ "$distro" = "$host_codename" ]; then
	[ -f /etc/apt/sources.list ] && sources+=(/etc/apt/sources.list)
	for f in /etc/apt/sources.list.d/*.sources; do
		grep -Eq '^Types:.*\bdeb\b' "$f" && sources+=("$f")
	done
fi
apt=$cache/packages-apt-$distro
mkdir -p "$apt/lists/partial" "$apt/archives/partial"
rm -rf "$upper"
mkdir -p "$upper"/{upper,work,lower,root}

# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare -m --propagation private bash -c '
	set -e
	lower=$1 upper=$2 top=$3 apt=$4 nsources=$5
	shift 5
	sources=("${@:1:nsources}")
	shift "$nsources"
	if [ -f "$lower" ]; then
		# the image, read-only and without replaying its journal: VMs
		# may read it at the same time
		mount -o ro,noload,loop "$lower" "$upper/lower"
		lower=$upper/lower
	fi
	mount -t overlay overlay \
		-o "lowerdir=$lower,upperdir=$upper/upper,workdir=$upper/work" "$upper/root"
	r=$upper/root
	mkdir -p "$r$top"
	mount --bind "$top" "$r$top"
	mount -t proc proc "$r/proc"
	mount --bind /dev "$r/dev"
	mount -t sysfs sysfs "$r/sys"
	mount -t tmpfs tmpfs "$r/tmp"
	mount --bind "$apt/lists" "$r/var/lib/apt/lists"
	mount --bind "$apt/archives" "$r/var/cache/apt/archives"
	# the host resolver: an image may carry the guest network'"'"'s
	rm -f "$r/etc/resolv.conf"
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	if [ ${#sources[@]} -gt 0 ]; then
		rm -f "$r/etc/apt/sources.list" "$r"/etc/apt/sources.list.d/*
		cp "${sources[@]}" "$r/etc/apt/sources.list.d/"
		[ ! -f "$r/etc/apt/sources.list.d/sources.list" ] ||
			mv "$r/etc/apt/sources.list.d/sources.list" "$r/etc/apt/sources.list"
	fi
	# apt: keep what it downloads (the cache above); its download user
	# cannot write a cache owned by root
	printf "%s\n" "APT::Sandbox::User \"root\";" "APT::Keep-Downloaded-Packages \"true\";" \
		"Binary::apt::APT::Keep-Downloaded-Packages \"true\";" >"$r/etc/apt/apt.conf.d/99ohca"
	exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		bash -c "cd \"\$0\" && exec \"\$@\"" "$top" "$@"
' _ "$lower" "$upper" "$top" "$apt" "${#sources[@]}" "${sources[@]}" "$@"
