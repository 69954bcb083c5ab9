#!/usr/bin/env bash
# Runs apt-get or apt-cache against one Debian suite (trixie, sid,
# bookworm-backports, ...) without touching the host's apt configuration:
# the suite's sources and package lists live in $OHCA_CACHE/apt/<suite>/,
# and the host's installed packages are not consulted (an empty status), so
# only `source`, `download`, `showsrc`, `show` and `policy` make sense.
#
#   tests/vm/apt-suite.sh SUITE apt-get source qemu
#   tests/vm/apt-suite.sh SUITE apt-cache showsrc qemu
#   tests/vm/apt-suite.sh --mirror [SUITE]  print the mirror (host's own, for
#                                           SUITE if the host has a source for it)
#
# The mirror is the one the host's apt already uses for Debian's main
# archive (read from /etc/apt/sources.list.d/*.sources or sources.list at
# run time; nothing is written into the repository). The lists are
# refreshed when older than a day.
# Env: OHCA_CACHE (default ~/.cache/ohca)
set -euo pipefail

cache=${OHCA_CACHE:-$HOME/.cache/ohca}
die() { echo "apt-suite: error: $*" >&2; exit 1; }

# The host's own Debian mirror for a suite: the URI of the first "deb" entry
# whose suites include it (so not the -security suite's).
host_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v suite="$1" '
			function flush() {
				if (isdeb && hassuite && uri != "" && !done) { print uri; done = 1 }
				isdeb = 0; hassuite = 0; uri = ""
			}
			/^[[:space:]]*$/ { flush(); next }
			/^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") isdeb = 1 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hassuite = 1 }
			/^URIs:/ { uri = $2 }
			END { flush() }' "$f"
	done
	if [ -f /etc/apt/sources.list ]; then
		awk -v suite="$1" '$1 == "deb" && $0 !~ /\[/ && $3 == suite { print $2 }
			$1 == "deb" && $2 ~ /^\[/ && $4 == suite { print $3 }' /etc/apt/sources.list
	fi
}

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
# --mirror SUITE: the host's source for SUITE if it has one, else the one for
# its own release (the same archive serves every suite).
if [ "${1:-}" = --mirror ] && [ -n "${2:-}" ]; then
	mirror=$(host_mirror "$2" | head -n1 || true)
	[ -n "$mirror" ] || mirror=$(host_mirror "$codename" | head -n1 || true)
else
	mirror=$(host_mirror "$codename" | head -n1 || true)
fi
[ -n "$mirror" ] || die "no Debian mirror in the host's apt sources to derive one from"
if [ "${1:-}" = --mirror ]; then
	echo "$mirror"
	exit 0
fi
[ $# -ge 2 ] || die "usage: apt-suite.sh SUITE apt-get|apt-cache ARGS..."
suite=$1
shift
case "$1" in apt-get | apt-cache) ;; *) die "only apt-get and apt-cache, not $1" ;; esac
case "$suite" in *[!a-z0-9-]* | "") die "bad suite name '$suite'" ;; esac

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "$keyring missing (package debian-archive-keyring)"
dir=$cache/apt/$suite
mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc/preferences.d" \
	"$dir/etc/sources.list.d"
printf 'deb [signed-by=%s] %s %s main\ndeb-src [signed-by=%s] %s %s main\n' \
	"$keyring" "$mirror" "$suite" "$keyring" "$mirror" "$suite" >"$dir/etc/sources.list.new"
cmp -s "$dir/etc/sources.list.new" "$dir/etc/sources.list" || {
	mv "$dir/etc/sources.list.new" "$dir/etc/sources.list"
	rm -f "$dir/.updated"
}
rm -f "$dir/etc/sources.list.new"
: >"$dir/status"
opts=(-o "Dir::Etc::SourceList=$dir/etc/sources.list"
	-o "Dir::Etc::SourceParts=$dir/etc/sources.list.d"
	-o "Dir::Etc::Preferences=$dir/etc/preferences"
	-o "Dir::Etc::PreferencesParts=$dir/etc/preferences.d"
	-o "Dir::State::Lists=$dir/lists"
	-o "Dir::State::status=$dir/status"
	-o "Dir::Cache=$dir/cache"
	-o "APT::Sandbox::User=root")

# One update at a time per suite; refreshed daily.
exec 8>"$dir/.lock"
flock 8
if [ -z "$(find "$dir/.updated" -mmin -1440 2>/dev/null)" ]; then
	echo "apt-suite: updating the package lists of $suite ($mirror)" >&2
	apt-get "${opts[@]}" -q update >"$dir/update.log" 2>&1 ||
		{ tail -n 20 "$dir/update.log" >&2; die "apt-get update for $suite failed"; }
	touch "$dir/.updated"
fi
flock -u 8
tool=$1
shift
exec "$tool" "${opts[@]}" "$@"
