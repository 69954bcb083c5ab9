#!/usr/bin/env bash
# Installs the Debian packages that building and testing ohca need, and only
# those that are missing. Safe to run repeatedly; a no-op when all are there.
# --debug-kernel: only those of the debug kernel's build, which `make test`
# installs first so that the build starts while the rest install.
set -euo pipefail

debug_kernel_packages=(
	# the debug kernel's build (tests/debug-kernel/build.sh: objtool needs
	# libelf, certificates openssl; its host tools are built traced)
	build-essential flex bison bc libelf-dev libssl-dev xz-utils linux-source-6.1
	python3 strace
)
packages=(
	"${debug_kernel_packages[@]}"
	# toolchains and build systems
	cmake ninja-build meson pkg-config dpkg-dev
	# the engine's builds in build/ keep their objects in ~/.cache/ohca/ccache
	ccache
	# the QEMU build (Debian's 7.2 source) and its runtime firmware
	rsync bzip2 libglib2.0-dev libpixman-1-dev libfdt-dev libslirp-dev libattr1-dev
	libcap-ng-dev qemu-system-data seabios ipxe-qemu
	# QEMU 11's configure makes a venv of Debian's python3 and checks for
	# setuptools, wheel and pip in it (make qemu QEMU=11.1)
	python3-venv python3-setuptools python3-wheel python3-pip
	# qemu-img: a migrating VM's disk overlay, which the source and the
	# destination QEMU share (tests/vm/harness/vm.py)
	qemu-utils
	# the guest kernel and the headers the driver builds against
	linux-image-amd64 linux-headers-amd64 sparse kmod
	# the provider and the host side of the RDMA stack
	libibverbs-dev rdma-core ibverbs-providers
	# rdma-core's upstream test suite (/usr/share/doc/rdma-core/tests), which
	# the guest image carries
	python3-pyverbs
	# engine unit tests
	googletest libgtest-dev libgmock-dev valgrind
	# the engine's Google Benchmark program (make engine-bench)
	libbenchmark-dev
	# the guest root filesystem and the harness (python3 above)
	e2fsprogs python3-pytest
	# other releases' sources, images and build chroots (tests/vm/apt-suite.sh,
	# chroot.sh, mkrootfs.sh): their archive keys, and the bootstrapper of images and chroots
	debian-archive-keyring mmdebstrap
	# (the host-dependency audit, tests/hostdeps.py: strace above)
	# engine fuzzers (libFuzzer, ASan, UBSan) and coverage reports
	clang-14 libclang-rt-14-dev gcovr
	# fabric/'s fuzzers: CMake archives clang objects with llvm-ar-14, and
	# ASan symbolizes with llvm-symbolizer-14 (make fabric-test)
	llvm-14
	# the engine's style gates (make engine-style)
	clang-format clang-tidy
	# the RoCEv2 conformance check (tests/integration/roce_pcap.py)
	tshark
	# make packages (packaging/build.sh): the Debian packages' build and check
	debhelper dh-dkms lintian
	# the MPI test program of tests/integration/test_mpi.py, built on the
	# host against the Open MPI the guest image runs (mpicc)
	libopenmpi-dev
	# make fabric-bench's and make bench's plots (fabric_bench.py, bench_plots.py)
	python3-matplotlib
	# make bench --wire hosts: network namespaces and a veth pair (ip netns)
	iproute2
)

[ "${1:-}" != --debug-kernel ] || packages=("${debug_kernel_packages[@]}")

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages present"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run as root (or install them with apt-get) and try again" >&2
	exit 1
fi

echo "deps: installing ${#missing[@]} packages: ${missing[*]}"
[ -z "${OHCA_COLD_MARK:-}" ] || echo packages >>"$OHCA_COLD_MARK"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture: no (tests read
# capture files only), answered beforehand so the install stays silent.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps: done"
