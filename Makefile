# ohca: top-level build and test entry points. See README.md.
#
#   make test    install what is missing, build everything, run every suite
#   make check   the quick tier (about 5 minutes with warm caches): interface,
#                engine unit tests, a short fuzz, driver and provider builds
#                with their static checks, the device smoke test
#   make demo    two VMs with ohca on one wire: devinfo and a ping
#   make demo FABRIC=ib  two VMs on an InfiniBand switch: opensm, ibstat,
#                ibnetdiscover, an IPoIB ping
#   make vm      interactive VM with ohca, the driver and the provider
#   make vm CMD='ibv_devinfo -v'   run a command in a fresh VM
#   make vm DISTRO=bookworm        the guest on Debian 12 (trixie, the default;
#                                  bookworm; sid)
#   make qemu QEMU=10.0            the device in QEMU 10.0 (7.2, 10.0, 11.1)
#   make soak    an hour (SOAK_SECONDS) of RC traffic through 1 % loss with
#                processes killed; the device's heap grows < 1 MiB over its second half
#   make test-viommu  the integration, storage and suite jobs behind a virtual IOMMU
#   make test-fabric  the switch jobs whole (IB switches in a line too) and congestion
#   make fabric-bench incast through the Ethernet switch: drop-tail, PFC, ECN+DCQCN side by side
#   make bench   perftest, qperf (RC against TCP) and storage over RDMA, ohca beside
#                rxe, with PNG plots in build/bench/ (docs/bench.md); make bench-quick
#                checks in a few minutes that every part still runs
#   make migration-test  a VM live-migrated MIGRATIONS (20) times during RC traffic
#   make packages  the Debian packages (ohca-dkms, ibverbs-providers-ohca,
#                ohca-tools) for DISTRO in build/packages/<distro>/, lintian
#                clean (docs/install.md)
#   make test-packages  those packages apt-installed in a fresh VM of DISTRO
#                (DKMS run once, on the host), a reboot: autoload at boot,
#                ibv_devinfo, RC
#   make test-stack  every release (STACK_DISTROS): its build, rdma-core's own
#                suite of that release and RC pingpong in its guest, its
#                packages and their check (test-packages)

SHELL := /bin/bash
PYTHON := /usr/bin/python3
export OHCA_CACHE ?= $(HOME)/.cache/ohca
# The engine's own builds (unit tests, benchmark, fuzzers) live in build/,
# which a clean clone does not have: ccache keeps their objects with the
# other caches, so a warm run compiles only what changed. A clone is a new
# directory: paths under it are hashed relative to it (BASEDIR), and not
# the directory itself (NOHASHDIR; the objects' debug info then names the
# clone that compiled them first).
export CCACHE_DIR ?= $(OHCA_CACHE)/ccache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
CCACHE := -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache

# The stack (docs/testing.md, "Releases"): the guest's Debian release and
# the QEMU the device is built into. The default guest is Debian 13
# (trixie); HOST_DISTRO is the release of the host's own compiler, kernel
# headers and libibverbs (tests/deps.sh installs bookworm's): its driver
# and provider are built on the host, another release's kernel, driver
# and provider come from its build chroot (tests/vm/chroot.sh). The
# harness reads OHCA_DISTRO and OHCA_QEMU_VERSION (tests/vm/harness/host.py
# names the same two releases).
DEFAULT_DISTRO := trixie
HOST_DISTRO := bookworm
DISTRO ?= $(or $(OHCA_DISTRO),$(DEFAULT_DISTRO))
QEMU ?= $(or $(OHCA_QEMU_VERSION),7.2)
export OHCA_DISTRO := $(DISTRO)
export OHCA_QEMU_VERSION := $(QEMU)

.PHONY: check all deps build qemu qemu-asan test-asan engine engine-test kernel \
	userspace rootfs firmware-interface firmware-interface-test test demo vm fuzz coverage \
	bench bench-quick soak migration-test test-apps test-viommu test-fabric fabric-bench clean wire wire-test fabric fabric-test engine-style engine-bench engine-bench-build engine-bench-smoke engine-bench-ab packages test-packages test-stack

all: build

deps:
	@bash tests/deps.sh

# (fabric: ohca-switch, the VM harness's switch wire)
build: firmware-interface qemu kernel userspace fabric

qemu: deps
	@bash qemu-device/build.sh --qemu=$(QEMU)

# QEMU with ASan + UBSan (build/qemu-asan), and the device-facing
# integration tests on it.
qemu-asan: deps
	@bash qemu-device/build.sh --asan

test-asan: deps kernel userspace rootfs
	@bash tests/asan/run.sh

engine: deps
	@cmake -S qemu-device/engine -B build/engine -G Ninja -DCMAKE_BUILD_TYPE=Debug $(CCACHE) >/dev/null
	@cmake --build build/engine -j2

engine-test: engine
	@ctest --test-dir build/engine --output-on-failure -j2

# The engine's style gates: clang-format and clang-tidy, zero findings
# (qemu-device/engine/tools/style.sh; a file's clean result is kept).
engine-style: deps
	@bash qemu-device/engine/tools/style.sh

# Google Benchmark of the engine with the fake host (Release build of its
# own); figures in docs/results.md. The smoke run only keeps it building and
# running (a few iterations of each case, seconds).
engine-bench-build: deps
	@cmake -S qemu-device/engine -B build/engine-bench -G Ninja -DCMAKE_BUILD_TYPE=Release \
		$(CCACHE) -DOHCA_ENGINE_BENCH=ON -DOHCA_ENGINE_FUZZ_REPLAY=OFF -DOHCA_HEAP_COUNT=OFF >/dev/null
	@cmake --build build/engine-bench -j2 --target ohca_engine_bench

engine-bench: engine-bench-build
	@build/engine-bench/ohca_engine_bench $(BENCH_ARGS)

engine-bench-smoke: engine-bench-build
	@build/engine-bench/ohca_engine_bench --benchmark_min_time=0.001 >/dev/null

# This tree's engine benchmark against BEFORE's (a commit, built in a
# worktree under build/): instructions per iteration (callgrind) and time
# (interleaved runs, best and median); docs/bench.md.
BEFORE ?= main
engine-bench-ab: engine-bench-build
	@bash tests/bench/engine_before_after.sh $(BEFORE)

ifeq ($(DISTRO),$(HOST_DISTRO))
kernel: deps
	@$(MAKE) -C kernel -j$(shell nproc)

userspace: deps
	@$(MAKE) -C userspace
else
# In the release's build chroot: its compiler, headers and libibverbs.
kernel: deps
	@bash tests/vm/chroot.sh $(DISTRO) >/dev/null
	@bash tests/vm/chroot.sh $(DISTRO) --run make -C kernel distro DISTRO=$(DISTRO) -j2

userspace: deps
	@bash tests/vm/chroot.sh $(DISTRO) >/dev/null
	@bash tests/vm/chroot.sh $(DISTRO) --run make -C userspace OUT=$(CURDIR)/build/userspace-$(DISTRO)
endif

rootfs: deps
	@bash tests/vm/mkrootfs.sh

# libFuzzer fuzzers of the device engine with ASan+UBSan; FUZZ_SECONDS each.
FUZZ_SECONDS ?= 300
fuzz: deps
	@bash qemu-device/engine/fuzz/run.sh $(FUZZ_SECONDS)

# perftest on ohca0 and rxe0 in one VM and between two, qperf's RC against
# TCP and storage over RDMA between two, tables with ratios and plots in
# build/bench/ (not a test; docs/bench.md).
bench: deps build rootfs
	@$(PYTHON) tests/bench/bench.py
	@echo "bench: the whole ohca<->rxe interop matrix (both path MTUs)"
	@OHCA_INTEROP_FULL=1 $(PYTHON) -m pytest -q -rA tests/integration/test_interop.py

# every part of make bench once, small (two VMs of each kind, a few cells)
bench-quick: deps build rootfs
	@$(PYTHON) tests/bench/bench.py --quick

# The application jobs' longer matrix (docs/testing.md): UCX perftest in
# every test, transport and size between two VMs, Open MPI over UCX on
# three VMs as well, libfabric's verbs provider; make test runs their
# compact share.
test-apps: deps build rootfs
	@OHCA_UCX_FULL=1 OHCA_MPI_FULL=1 $(PYTHON) -m pytest -v -rA -s \
		tests/integration/test_ucx.py tests/integration/test_mpi.py \
		tests/integration/test_libfabric.py

# The fabric's VM jobs whole: ohca-switch in both modes (four VMs on an
# Ethernet switch, three IB VMs on one switch and on two in a line with
# opensm), the congestion job and the live migration of a VM on an IB
# switch; make test runs all but the two IB switches in a line and the
# migration.
test-fabric: deps build rootfs fabric
	@OHCA_IB_FABRIC_FULL=1 $(PYTHON) -m pytest -v -rA -s tests/integration/test_switch.py \
		tests/integration/test_infiniband.py tests/integration/test_congestion.py \
		tests/integration/test_migration.py::test_live_migration_on_infiniband_switch

# Incast of 2 and 3 senders into one receiver through ohca-switch's
# Ethernet mode, with a latency probe, in drop-tail, PFC and ECN+DCQCN
# cells of one boot (tests/bench/fabric_bench.py; docs/congestion.md):
# build/fabric-bench/results.json, plots, the table in docs/bench.md.
fabric-bench: deps build rootfs fabric
	@$(PYTHON) tests/bench/fabric_bench.py

# The Debian packages for one release, DISTRO (packaging/build.sh): the
# host's builds on the host, another in a throwaway overlay of its build
# chroot; dpkg-buildpackage on a staged copy of the tree, then the
# release's lintian, which must find nothing. In build/packages/<distro>/.
packages: deps
	@bash packaging/build.sh

# Those packages in a fresh guest of DISTRO (tests/integration/test_packages.py):
# DKMS builds the modules from ohca-dkms with apt in a throwaway copy of the
# guest image, on the host's CPU (packaging/dkms-modules.sh), into a binary
# package for the guest kernel; the guest installs it, the provider and the
# tools with apt and reboots, udev loads the modules at boot, ibv_devinfo
# and ibv_rc_pingpong run through the packaged provider. No driver or
# provider of the tree's own builds (make kernel userspace) is used, nor
# needed. OHCA_PACKAGES_IN_GUEST_DKMS=1: DKMS in the guest instead (over
# 30 minutes under TCG). Result in docs/testing.md.
test-packages: deps qemu packages rootfs
ifneq ($(OHCA_PACKAGES_IN_GUEST_DKMS),1)
	@bash packaging/dkms-modules.sh $(DISTRO)
endif
	@OHCA_PACKAGES_TEST=1 $(PYTHON) -m pytest -v -rA -s tests/integration/test_packages.py

# Every Debian release in turn (tests/stack.sh): the driver and the
# provider built for it, its image, rdma-core's suite of that release
# (nothing excluded) and RC pingpong in its guest, then make packages and
# make test-packages of that release; result in docs/testing.md. Not in
# make test: a release's cold build alone takes about 25 minutes.
STACK_DISTROS ?= bookworm trixie sid
test-stack: deps qemu fabric
	@bash tests/stack.sh $(STACK_DISTROS)

# The integration, storage, rdma-core suite and UD/rdma_cm jobs with
# every VM behind a virtual IOMMU (q35, VT-d, the guest's IOMMU strict;
# tests/integration/test_viommu.py is make test's share of it).
VIOMMU_TESTS ?= tests/integration/test_viommu.py tests/integration/test_rc.py \
	tests/integration/test_storage.py tests/integration/test_rc_rdma_core_suite.py \
	tests/integration/test_ud_cm.py
test-viommu: deps build rootfs
	@OHCA_IOMMU=1 $(PYTHON) -m pytest -v -rA $(VIOMMU_TESTS)

# Live migration (tests/integration/test_migration.py): vm0 migrated to a
# new QEMU MIGRATIONS times, each in the middle of a byte-checked RC
# connection of MIG_ITERS iterations (make test: one of 2000); make test
# migrates once. Ends with one summary line. The connections' QPs at
# timeout 18 (rdma_cm's retry budget; make test's one migration: 14).
# MIG_NVME=1 adds the NVMe-over-RDMA fio loop (20 of 20 on 2026-12-06:
# docs/migration.md). MIG_IB=1 migrates a VM on an InfiniBand switch
# instead (link-layer=ib, opensm in the migrating VM, RC by LID; its LID,
# port state and opensm's view checked after each migration).
MIGRATIONS ?= 20
MIG_ITERS ?= 600
MIG_NVME ?= 0
MIG_IB ?= 0
MIG_TEST = $(if $(filter 1,$(MIG_IB)),OHCA_IB_FABRIC_FULL=1 $(PYTHON) -m pytest -v -rA -s \
	tests/integration/test_migration.py::test_live_migration_on_infiniband_switch,$(PYTHON) -m pytest -v -rA -s \
	tests/integration/test_migration.py -k live_migration_during_rc_traffic)
migration-test: deps build rootfs $(if $(filter 1,$(MIG_IB)),fabric)
	@OHCA_MIGRATIONS=$(MIGRATIONS) OHCA_MIG_ITERS=$(MIG_ITERS) OHCA_MIG_UD=1 OHCA_MIG_NVME=$(MIG_NVME) OHCA_MIG_QP_TIMEOUT=18 $(MIG_TEST)

# The soak (tests/integration/test_soak.py): SOAK_SECONDS of RC traffic
# through the fault wire at 1 % loss with clients killed; make test runs
# a minute of it.
SOAK_SECONDS ?= 3600
soak: deps build rootfs
	@OHCA_SOAK_SECONDS=$(SOAK_SECONDS) $(PYTHON) -m pytest -v -rA -s tests/integration/test_soak.py

# Line and function coverage of the engine by its unit tests.
coverage: deps
	@bash qemu-device/engine/coverage.sh

# fabric/: the InfiniBand wire formats and agents (fabric/ib) and the
# emulated switch ohca-switch (fabric/switch), in build/fabric; the test
# target checks their format (fabric/.clang-format), runs their unit tests,
# then each fuzzer briefly (FABRIC_FUZZ_SECONDS).
FABRIC_FUZZ_SECONDS ?= 10
fabric: deps
	@cmake -S fabric -B build/fabric -G Ninja -DCMAKE_BUILD_TYPE=Debug $(CCACHE) >/dev/null
	@cmake --build build/fabric -j2

fabric-test: fabric
	@cd fabric && find . -name '*.cpp' -o -name '*.hpp' | sort | xargs clang-format --dry-run -Werror
	@ctest --test-dir build/fabric --output-on-failure -j2
	@bash fabric/fuzz/run.sh $(FABRIC_FUZZ_SECONDS)

# The fault-injection wire between two VMs (tests/wire, docs/wire.md).
wire:
	@$(MAKE) --no-print-directory -C tests/wire

wire-test:
	@$(MAKE) --no-print-directory -C tests/wire test

# ohca_fwif.py: the interface for Python tools, generated from the headers.
firmware-interface:
	@$(MAKE) -C firmware-interface python

firmware-interface-test:
	@$(MAKE) -C firmware-interface test

# run-all.sh installs the packages itself (its first stage), so the
# installation counts against the suite's time budget.
test:
	@bash tests/run-all.sh

# The quick tier for people editing the code; no VM boots.
check: deps
	@bash tests/run-all.sh --quick

# FABRIC=ib: an InfiniBand fabric (two VMs on ohca-switch, opensm,
# ibstat, ibnetdiscover, an IPoIB ping) instead of the RoCE wire
FABRIC ?= eth
demo: deps build rootfs
	@bash tests/demo.sh $(FABRIC)

vm: deps build rootfs
ifeq ($(CMD),)
	@$(PYTHON) tests/vm/ohcavm.py shell $(if $(TRACE),--trace '$(TRACE)')
else
	@$(PYTHON) tests/vm/ohcavm.py run $(if $(TRACE),--trace '$(TRACE)') -- '$(subst ','\'',$(CMD))'
endif

clean:
	rm -rf build
	-$(MAKE) -C kernel clean
