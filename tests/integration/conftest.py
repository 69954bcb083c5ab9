"""Fixtures for the ohca integration tests: VMs booted by tests/vm/ohcavm.py.

Options: --nic ohca|virtio (default: env OHCA_NIC or ohca). With --nic virtio
the tests marked `ohca_only` are deselected, so the pipeline (boot, wire,
QMP, synchronisation) can be proven without the ohca device.

Fixtures:
  nic          the NIC model of this session ("ohca" or "virtio")
  vm_logdir    build/test-logs/<test name>/ (emptied first)
  vm_run       vm_run(scripts, nvms=1, preamble=True, timeout=300, **kw)
               -> list of ohcavm.Result; boots, runs, waits, cleans up
  vm_cluster   vm_cluster(nvms=1, **kw) -> ohcavm.Cluster (not started);
               for tests that interleave host actions (QMP) with the guest.
               Closed (QEMU killed) at teardown.
"""

import os
import re

import pytest

from vmtest import ohcavm, make_logdir


def pytest_addoption(parser):
    parser.addoption("--nic", choices=("ohca", "virtio"),
                     default=os.environ.get("OHCA_NIC", "ohca"),
                     help="NIC model for the test VMs (default ohca)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ohca_only: needs the ohca device (deselected with --nic virtio)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--nic") == "ohca":
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("ohca_only") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def nic(pytestconfig):
    return pytestconfig.getoption("--nic")


@pytest.fixture
def vm_logdir(request):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    return make_logdir(name)


@pytest.fixture
def vm_cluster(nic, vm_logdir):
    made = []

    def make(nvms=1, **kw):
        kw.setdefault("nic", nic)
        kw.setdefault("logdir", vm_logdir)
        c = ohcavm.Cluster(os.path.basename(vm_logdir), nvms=nvms, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def vm_run(vm_cluster):
    def run(scripts, nvms=1, preamble=True, timeout=ohcavm.DEFAULT_TIMEOUT, **kw):
        c = vm_cluster(nvms=nvms, **kw)
        c.start(scripts, preamble=preamble)
        return c.wait(timeout)

    return run
