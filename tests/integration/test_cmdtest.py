"""Malformed commands: the kernel team's guest tool kernel/tools/ohca-cmdtest
posts the driver's own malformed-command templates through debugfs
(/sys/kernel/debug/ohca/<pci>/malformed; no raw command can be written, so
no guest address or live object can be named) and checks every status and
syndrome against the programming manual, then that NOP, QUERY_DEVICE and
QUERY_PORT still work. Here it runs in a VM with
the driver loaded; afterwards the device must still be usable and the
driver must unload cleanly, with a clean kernel log throughout."""

import os

import pytest

from vmtest import assert_ok, ohcavm

CMDTEST = os.path.join(ohcavm.TOP, "kernel", "tools", "ohca-cmdtest")

SCRIPT = r"""
fail() { echo "FAIL: $*"; exit 1; }
echo "=== cmdtest ==="
python3 /share/ohca-cmdtest -v || fail "ohca-cmdtest exit code $?"
d=$(ls -d /sys/kernel/debug/ohca/0000:* | head -n 1)
[ ! -e "$d/cmd" ] || fail "raw commands still offered: $d/cmd"
! echo nonexistent_template >"$d/malformed" 2>/dev/null || fail "an unknown template name was accepted"
echo "=== after ==="
[ "$(ohca_port_state)" = ACTIVE ] || fail "port state $(ohca_port_state) after the malformed commands"
ibv_devinfo -d ohca0 | grep -q 'PORT_ACTIVE' || fail "ibv_devinfo after cmdtest: $(ibv_devinfo -d ohca0 2>&1)"
ohca_eth_ok 2 || fail "the Ethernet port stopped working"
ohca_rmmod || fail "rmmod after cmdtest"
echo "CMDTEST OK"
"""


@pytest.mark.ohca_only
def test_malformed_commands(vm_run):
    (r,) = vm_run(SCRIPT, timeout=400, extra_files={"ohca-cmdtest": CMDTEST})
    assert_ok([r])
    assert "CMDTEST OK" in r.output
