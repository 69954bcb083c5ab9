"""Pause and PFC through the driver: `ethtool -a`/`-A` (802.3x global pause),
`dcb pfc show|set` (dcbnl IEEE PFC) and the pause counters in `ethtool -S`
read and set the device's setting (QUERY_PFC / SET_PFC). The job leaves
both off again for the next job in the pooled VM."""

import re

import pytest

from vmtest import assert_ok, make_logdir, section

SCRIPT = r"""
dev=$OHCA_IFACE
echo "=== pause0 ==="; ethtool -a "$dev"
ethtool -A "$dev" rx on tx on; echo "pause on rc=$?"
echo "=== pause1 ==="; ethtool -a "$dev"
echo "=== refused ==="
dcb pfc set dev "$dev" prio-pfc 3:on 2>&1
dcb pfc show dev "$dev" prio-pfc
echo "=== set ==="
ethtool -A "$dev" rx off tx off; echo "pause off rc=$?"
dcb pfc set dev "$dev" prio-pfc 3:on; echo "pfc on rc=$?"
echo "=== pfc ==="; dcb -s pfc show dev "$dev"
echo "=== refused2 ==="; ethtool -A "$dev" rx on 2>&1; echo "refused rc=$?"
echo "=== stats ==="; ethtool -S "$dev" | grep -E 'pause|storm'
echo "=== pfc_off ==="
dcb pfc set dev "$dev" prio-pfc all:off; echo "pfc off rc=$?"
dcb pfc show dev "$dev" prio-pfc
echo "=== end ==="
"""


@pytest.fixture(scope="module")
def pfc(nic, vm_pool, vm_cluster_class):
    logdir = make_logdir("test_pfc")
    (r,) = vm_pool.run(vm_cluster_class, SCRIPT, nic=nic, timeout=300, logdir=logdir)
    assert_ok([r])
    return r.output


pytestmark = pytest.mark.ohca_only


def test_ethtool_pause(pfc):
    assert re.search(r"RX:\s+off", section(pfc, "pause0")), section(pfc, "pause0")
    assert "pause on rc=0" in section(pfc, "pause0"), section(pfc, "pause0")
    p1 = section(pfc, "pause1")
    assert re.search(r"RX:\s+on", p1) and re.search(r"TX:\s+on", p1), p1
    assert re.search(r"Autonegotiate:\s+off", p1), p1


def test_dcb_pfc(pfc):
    # PFC while global pause is on is refused (the kernel log says why;
    # dcbnl answers the error in an attribute, so dcb's status is 0).
    assert "3:off" in section(pfc, "refused"), section(pfc, "refused")
    st = section(pfc, "set")
    assert "pause off rc=0" in st and "pfc on rc=0" in st, st
    s = section(pfc, "pfc")
    assert "pfc-cap 8" in s, s
    assert re.search(r"prio-pfc .*\b3:on\b", s) and re.search(r"\b2:off\b", s), s
    assert "requests" in s and "indications" in s, s
    assert "refused rc=0" not in section(pfc, "refused2"), section(pfc, "refused2")
    off = section(pfc, "pfc_off")
    assert "pfc off rc=0" in off and "3:off" in off and ":on" not in off, off


def test_pause_counters(pfc):
    s = section(pfc, "stats")
    for name in ("rx_prio3_pause", "tx_prio3_pause", "rx_pause_ctrl_phy", "tx_pause_ctrl_phy",
                 "rx_pfc_storm_events"):
        assert re.search(rf"^\s*{name}: \d+$", s, re.M), f"{name} missing:\n{s}"
