#!/bin/sh
# Prints the major release of the installed rdma-core libibverbs (e.g. 44),
# which selects the layout record in compat/ibverbs_private.h.
# libibverbs' pkg-config version is 1.14.<rdma-core major>.<minor> ; the
# Debian package version is <major>.<minor>-<debian revision>.
set -eu
v=$(pkg-config --modversion libibverbs 2>/dev/null || true)
if [ -n "$v" ]; then
	echo "$v" | cut -d. -f3
	exit 0
fi
v=$(dpkg-query -W -f='${Version}' libibverbs-dev 2>/dev/null ||
    dpkg-query -W -f='${Version}' libibverbs1 2>/dev/null || true)
if [ -n "$v" ]; then
	echo "${v#*:}" | cut -d. -f1
	exit 0
fi
echo "rdma-core-version.sh: libibverbs not found (install libibverbs-dev)" >&2
exit 1
