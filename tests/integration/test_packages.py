"""The Debian packages in a fresh guest (make test-packages; skipped in
make test, whose budget has no room for it): `apt install` of the .deb
files that `make packages` built, DKMS building the modules against the
guest kernel's headers, udev loading them as at boot, then ibv_devinfo
and an RC ping-pong on ohca0 through the packaged provider.

The guest image has no compiler, DKMS or kernel headers, and the guest no
route to a Debian mirror: the host downloads what the install needs (the
closure apt computes against the image's own dpkg status) into a cache,
and the guest's apt reads it as a local archive on its share. Nothing of
ohca is copied by hand: the job uses no file of the build tree."""

import glob
import os
import re
import subprocess

import pytest

from vmtest import assert_ok, ohcavm

TOP = ohcavm.TOP
PKG_DIR = os.path.join(TOP, "build/packages")
CACHE = os.environ.get("OHCA_CACHE", os.path.expanduser("~/.cache/ohca"))

pytestmark = [
    pytest.mark.ohca_only,
    pytest.mark.skipif(os.environ.get("OHCA_PACKAGES_TEST") != "1",
                       reason="make test-packages runs it (make test has no time for its boot)"),
]

# The three packages, by their file name's start.
PACKAGES = ("ohca-dkms_", "ibverbs-providers-ohca_", "ohca-tools_")

GID = 1

# udev is in the image but the test VMs' init does not start it: started
# here, its coldplug (trigger, settle) is what a boot does. ohca_core comes
# from the PCI device's modalias, ohca_ib from its auxiliary device's.
JOB = rf"""
set -e
kver=$(uname -r)
echo "deb [trusted=yes] file:/share ./" >/etc/apt/sources.list
rm -f /etc/apt/sources.list.d/*
apt-get update -q
export DEBIAN_FRONTEND=noninteractive
t0=$SECONDS
apt-get install -y -q --no-install-recommends {{debs}} linux-headers-$kver
echo "INSTALL_SECONDS $((SECONDS - t0))"
echo "=== dkms status"
dkms status
echo "=== modules before udev"
grep '^ohca' /proc/modules || echo "(none)"
/lib/systemd/systemd-udevd --daemon
udevadm trigger --type=subsystems --action=add
udevadm trigger --type=devices --action=add
udevadm settle --timeout=120
ohca_poll 60 test -e /sys/class/infiniband/$OHCA_IBDEV
echo "=== modules after udev"
grep '^ohca' /proc/modules
for m in ohca_core ohca_ib; do echo "MODPATH $m $(modinfo -n $m)"; done
echo "PROVIDER $(dpkg -S /usr/lib/x86_64-linux-gnu/libibverbs/libohca-rdmav34.so)"
# udev may have renamed the interface: the one ohca_core drives
for i in /sys/class/net/*; do
	[ "$(basename "$(readlink -f $i/device/driver)")" = ohca_core ] && OHCA_IFACE=${{i##*/}}
done
ohca_net_up
ohca_wait_carrier 1 30
ohca_wait_port ACTIVE 60
ibv_devinfo -d $OHCA_IBDEV
timeout 120 ibv_rc_pingpong -d $OHCA_IBDEV -g {GID} -n 500 >/tmp/srv.log 2>&1 &
srv=$!
ohca_retry 20 ibv_rc_pingpong -d $OHCA_IBDEV -g {GID} -n 500 127.0.0.1
wait $srv
echo "pingpong server:"; cat /tmp/srv.log
"""


def _debs():
    debs = []
    for start in PACKAGES:
        found = sorted(glob.glob(os.path.join(PKG_DIR, start + "*.deb")))
        if not found:
            pytest.fail(f"{PKG_DIR}/{start}*.deb missing: run make packages")
        debs.append(found[-1])
    return debs


def _guest_archive(debs, kver):
    """The packages the install needs beyond the image's, in a local
    archive (a directory with a Packages index): {file name: host path}."""
    image = ohcavm.rootfs_image()
    key = os.path.basename(os.path.realpath(image)).removesuffix(".img")
    archive = os.path.join(CACHE, f"packages-guest-{key}")
    os.makedirs(os.path.join(archive, "partial"), exist_ok=True)
    status = os.path.join(archive, "status")
    with open(status, "wb") as f:
        subprocess.run(["debugfs", "-R", "cat /var/lib/dpkg/status", image],
                       stdout=f, stderr=subprocess.DEVNULL, check=True)
    # the host's apt with the guest's dpkg status: what the guest lacks
    # (files already in the cache are not fetched again)
    subprocess.run(["apt-get", "install", "--download-only", "-y", "-q",
                    "--no-install-recommends",
                    "-o", f"Dir::State::status={status}",
                    "-o", f"Dir::Cache::archives={archive}",
                    "-o", "Debug::NoLocking=true",
                    # root's cache, which apt's download user cannot write
                    "-o", "APT::Sandbox::User=root"]
                   + debs + [f"linux-headers-{kver}"],
                   stdout=subprocess.DEVNULL, check=True)
    files = {os.path.basename(p): p for p in glob.glob(os.path.join(archive, "*.deb"))}
    index = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=archive,
                           capture_output=True, text=True, check=True).stdout
    with open(os.path.join(archive, "Packages"), "w") as f:
        f.write(index)
    files["Packages"] = os.path.join(archive, "Packages")
    return files


def test_packages_install_and_run(vm_run):
    debs = _debs()
    kver = ohcavm.guest_kver()
    files = _guest_archive(debs, kver)
    files.update({os.path.basename(d): d for d in debs})
    job = JOB.replace("{debs}", " ".join("./" + os.path.basename(d) for d in debs))
    (r,) = vm_run(job, preamble=False, fresh=True, timeout=7200, extra_files=files)
    assert_ok([r])
    out = r.output
    print(re.search(r"^INSTALL_SECONDS \d+", out, re.M).group(0))
    assert re.search(rf"^ohca/\S+, {re.escape(kver)}, x86_64: installed", out, re.M), out
    assert "=== modules before udev\n(none)" in out, out
    for m in ("ohca_core", "ohca_ib"):
        assert re.search(rf"^MODPATH {m} /lib/modules/{re.escape(kver)}/updates/dkms/{m}\.ko",
                         out, re.M), out
    assert re.search(r"^PROVIDER ibverbs-providers-ohca(:amd64)?: ", out, re.M), out
    assert re.search(r"hca_id:\s+ohca0", out), out
    assert re.search(r"state:\s+PORT_ACTIVE", out), out
    assert len(re.findall(r"500 iters in", out)) == 2, out
