"""ibv_devinfo -v -d ohca0 reports what the QEMU device was configured with."""

import pytest

from vmtest import assert_ok, ohcavm, parse_devinfo, section, make_logdir

# What the device reports as firmware version (register FW_VERSION,
# formatted major.minor.sub by the driver). Adjust with the device.
EXPECTED_FW_VER = "1.0.0"
EXPECTED_VENDOR_ID = "0x1af4"
EXPECTED_VENDOR_PART_ID = "4336"  # 0x10f0

# Waits (bounded) until the GID table has the RoCE v2 IPv4 GID and an IPv6
# link-local GID, reading a few sysfs entries with the shell's read (forking
# per entry is slow under TCG), then prints ibv_devinfo.
SCRIPT = r"""
gids=/sys/class/infiniband/ohca0/ports/1/gids
have_gids() {
    local i g v4= ll=
    for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
        [ -e "$gids/$i" ] || break
        read -r g < "$gids/$i" || continue
        case "$g" in
        0000:0000:0000:0000:0000:ffff:*) v4=1 ;;
        fe80:*) ll=1 ;;
        esac
    done
    [ -n "$v4" ] && [ -n "$ll" ]
}
ohca_poll 60 have_gids || echo "warning: GID table incomplete after 60 s"
echo "=== devinfo ==="
ibv_devinfo -v -d ohca0
echo "=== devices ==="
ibv_devices
echo "=== end ==="
"""


@pytest.fixture(scope="module")
def devinfo(nic, vm_pool, vm_cluster_class):
    # One job for the whole module, in the session's pooled VM; its logs in
    # build/test-logs/test_devinfo.
    logdir = make_logdir("test_devinfo")
    (r,) = vm_pool.run(vm_cluster_class, SCRIPT, nic=nic, timeout=300, logdir=logdir)
    assert_ok([r])
    return r, parse_devinfo(section(r.output, "devinfo"))


pytestmark = pytest.mark.ohca_only


def test_identity(devinfo):
    r, d = devinfo
    f = d["fields"]
    want = {
        "transport": "InfiniBand (0)",
        "node_guid": ohcavm.format_guid(ohcavm.NODE_GUIDS[0]),
        "fw_ver": EXPECTED_FW_VER,
        "vendor_id": EXPECTED_VENDOR_ID,
        "vendor_part_id": EXPECTED_VENDOR_PART_ID,
        "phys_port_cnt": "1",
    }
    assert f.get("fw_ver"), "fw_ver empty"
    wrong = {k: (f.get(k), v) for k, v in want.items() if f.get(k) != v}
    assert not wrong, "ibv_devinfo field: (got, expected): " + repr(wrong)
    assert "ohca0" in section(r.output, "devices")


def test_limits(devinfo):
    _, d = devinfo
    f = d["fields"]
    for key in ("max_qp", "max_cq", "max_mr", "max_pd", "max_qp_wr", "max_cqe"):
        assert key in f, f"{key} missing from ibv_devinfo -v"
        assert int(f[key], 0) > 0, f"{key} = {f[key]}"
    # QEMU's max-qp default: every QP the engine has (EQ 0's size does
    # not lower it, OHCA_DEV_CAP_EQ0_HOLD)
    assert f["max_qp"] == "65536", f["max_qp"]


def test_port(devinfo):
    _, d = devinfo
    assert list(d["ports"]) == [1], d["ports"].keys()
    p = d["ports"][1]["fields"]
    assert p.get("state") == "PORT_ACTIVE (4)", p
    assert p.get("link_layer") == "Ethernet", p


def test_gid_table(devinfo):
    _, d = devinfo
    gids = d["ports"][1]["gids"]
    ip = ohcavm.IPS[0]
    assert any(g == f"::ffff:{ip}" and t == "RoCE v2" for _, g, t in gids), \
        f"no RoCE v2 GID ::ffff:{ip}: {gids}"
    assert any(g.lower().startswith("fe80:") for _, g, _ in gids), \
        f"no IPv6 link-local GID: {gids}"
