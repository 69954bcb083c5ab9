"""make test's compatibility job: a Debian release other than the default
(bookworm: Linux 6.1, rdma-core 44, the driver and provider built on the
host) in ONE VM job, while the whole suite runs on the default release
(trixie). Its parts: the driver unloaded and loaded again in that
release's kernel (the preamble loaded it first), ibv_devinfo, RC
ping-pong loopback (polling and events) and a handful of that release's
rdma-core suite tests that pass on ohca (one of each module, rdma_cm left
out: each of its cases runs two processes for many seconds). Skipped on
the default release, where the whole suite runs; `make test-stack` runs
each release's whole rdma-core suite.

    OHCA_DISTRO=bookworm pytest tests/integration/test_compat.py
"""

import re

import pytest

from harness.host import DEFAULT_DISTRO, distro
from test_debug_traffic import check_parts, job, sample
from test_devinfo import EXPECTED_FW_VER
from test_rc import PINGPONG_LOOPBACK, check_pingpong_loopback
from test_rc_rdma_core_suite import check_suite, release_baseline, suite_script

pytestmark = [
    pytest.mark.ohca_only,
    pytest.mark.skipif(distro() == DEFAULT_DISTRO,
                       reason=f"the compatibility job of a release other than {DEFAULT_DISTRO}"),
]

RELOAD = """
ohca_rmmod || exit 1
ohca_insmod && ohca_net_up && ohca_wait_carrier 1 30 && ohca_wait_port ACTIVE 60
"""

DEVINFO = 'ibv_devinfo -v -d "$OHCA_IBDEV"'


def check_devinfo(out):
    for want in (r"hca_id:\s+ohca0", rf"fw_ver:\s+{re.escape(EXPECTED_FW_VER)}",
                 r"state:\s+PORT_ACTIVE", r"link_layer:\s+Ethernet"):
        assert re.search(want, out), f"ibv_devinfo: no {want}\n{out}"


# one passing test of each suite module: 16 on rdma-core 44 (about a
# second each on Debian's kernel)
SAMPLE = sample((t for t in release_baseline() if "rdmacm" not in t), per_module=1)
SUITE_TIMEOUT = 300

PARTS = (
    ("reload", RELOAD, lambda out: None),
    ("devinfo", DEVINFO, check_devinfo),
    ("pingpong", PINGPONG_LOOPBACK, check_pingpong_loopback),
    ("suite", suite_script(SUITE_TIMEOUT, exclude=("rdmacm",), only=SAMPLE),
     lambda out: check_suite(out, expected=SAMPLE, total=len(SAMPLE))),
)


def test_release_compatibility(vm_run):
    (r,) = vm_run(job(PARTS), timeout=SUITE_TIMEOUT + 400)
    print(f"\ncompatibility job on {distro()}: {len(SAMPLE)} suite tests, "
          f"{', '.join(name for name, _, _ in PARTS)}")
    check_parts(r, PARTS)
