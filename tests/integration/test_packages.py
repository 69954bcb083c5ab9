"""The Debian packages in a fresh guest (make test-packages; skipped in
make test, whose budget has no room for it), for the guest's release
(OHCA_DISTRO): the packages `make packages` built for it, installed with
apt, then a reboot of the guest, in whose boot udev loads the modules
from the packages' files, then ibv_devinfo and an RC ping-pong on ohca0
through the packaged provider.

DKMS is what a user's machine runs, once: packaging/dkms-modules.sh (make
test-packages runs it first) installs ohca-dkms with apt in a throwaway
copy of this release's guest image on the host's CPU, where the package's
postinst builds and installs the modules against the guest kernel's
headers, and wraps what DKMS installed into ohca-modules-<kver>. The guest
installs that, the provider and the tools: seconds, where DKMS under TCG
takes over 30 minutes. OHCA_PACKAGES_IN_GUEST_DKMS=1 installs ohca-dkms
and the headers in the guest instead, as before: the image has no DKMS
and the guest no route to a mirror, so the image's own apt (in a
throwaway copy of it on the host) downloads what the install needs into
a local archive the guest's apt reads on its share.

Nothing of ohca is copied by hand: the job uses no file of the build tree,
and its VM's share has none of the tree's driver and provider builds
(tree_files=False), which need not exist."""

import glob
import os
import re
import subprocess

import pytest

from harness.host import distro
from vmtest import assert_ok, ohcavm

TOP = ohcavm.TOP
IN_GUEST_DKMS = os.environ.get("OHCA_PACKAGES_IN_GUEST_DKMS") == "1"

pytestmark = [
    pytest.mark.ohca_only,
    pytest.mark.skipif(os.environ.get("OHCA_PACKAGES_TEST") != "1",
                       reason="make test-packages runs it (make test has no time for its boot)"),
]


def _pkg_dir():
    return os.path.join(TOP, "build/packages", distro())


GID = 1

# One job, two boots of the same guest (QEMU lets it reboot; its disk is
# kept): init runs /share/job.sh on each boot, and a mark on the guest's
# disk tells the second from the first. The first installs the packages
# with apt and reboots (its output saved as /share/install.log; the second
# boot's init writes output.log afresh). The second is the boot a user's
# machine makes after the install: the modules load from the packages'
# files alone. udev is in the image but the test VMs' init does not start
# it: started here with the coldplug systemd-udev-trigger.service runs
# (trigger subsystems, then devices), ohca_core from the PCI device's
# modalias, ohca_ib from its auxiliary device's. A third boot (a panic
# reboots the guest too, panic=-1) fails the job.
JOB = rf"""
set -e
state=/var/lib/ohca-packages-test
echo "SHARE_TREE_FILES $(ls /share | grep -E '\.ko$|^libohca|\.driver$' | tr '\n' ' ')"
if [ ! -e $state/installed ]; then
	echo "=== boot 1 at $(cut -d' ' -f1 /proc/uptime) s: install"
	echo "deb [trusted=yes] file:/share ./" >/etc/apt/sources.list
	rm -f /etc/apt/sources.list.d/*
	apt-get update -q
	export DEBIAN_FRONTEND=noninteractive
	t0=$SECONDS
	apt-get install -y -q --no-install-recommends {{debs}}
	echo "INSTALL_SECONDS $((SECONDS - t0))"
	if command -v dkms >/dev/null; then echo "=== dkms status"; dkms status; fi
	echo "=== modules after the install"
	grep '^ohca' /proc/modules || echo "(none)"
	mkdir -p $state
	: >$state/installed
	echo "REBOOT at $(cut -d' ' -f1 /proc/uptime) s"
	cp /share/output.log /share/install.log
	sync
	mount -o remount,ro / || echo "(/ stays read-write: synced)"
	echo b >/proc/sysrq-trigger
	sleep 60
	echo "no reboot"
	exit 1
fi
[ ! -e $state/booted ] || {{ echo "a third boot: the second one did not finish"; exit 1; }}
: >$state/booted
echo "=== boot 2 at $(cut -d' ' -f1 /proc/uptime) s: the modules load at boot"
kver=$(uname -r)
echo "=== modules before udev"
grep '^ohca' /proc/modules || echo "(none)"
/lib/systemd/systemd-udevd --daemon
t0=$SECONDS
for type in subsystems devices; do
	# an error on any one device fails the trigger (systemd 257): reported,
	# the ohca devices' own outcome is checked below
	udevadm trigger --type=$type --action=add || echo "udevadm trigger --type=$type: exit $?"
	echo "trigger $type at $((SECONDS - t0)) s"
done
# settle waits for every device's rules (under TCG over two minutes in
# trixie): the ohca devices are what this job waits for
udevadm settle --timeout=30 || echo "udev still busy after $((SECONDS - t0)) s"
# rdma-core's udev rule (60-rdma-persistent-naming.rules, NAME_FALLBACK)
# renames the device after its PCI slot (rocep0s3): the one whose parent
# ohca_core drives, by whatever name
ohca_ibdev() {{
	local d
	for d in /sys/class/infiniband/*; do
		[ "$(basename "$(readlink -f "$d/device/driver")")" = ohca_core ] &&
			{{ echo "${{d##*/}}"; return 0; }}
	done
	return 1
}}
ohca_poll 120 ohca_ibdev >/dev/null || {{
	echo "no RDMA device on the PCI function ohca_core drives:"
	ls -l /sys/class/infiniband/ /sys/bus/auxiliary/devices/
	for d in /sys/class/infiniband/*; do echo "$d -> $(readlink -f "$d/device")"; done
	exit 1
}}
udevadm settle --timeout=30 || true
OHCA_IBDEV=$(ohca_ibdev)
echo "UDEV_SECONDS $((SECONDS - t0))"
echo "IBDEV $OHCA_IBDEV"
echo "=== modules after udev"
grep '^ohca' /proc/modules
for m in ohca_core ohca_ib; do echo "MODPATH $m $(modinfo -n $m)"; done
for m in ohca_core ohca_ib; do echo "MODPKG $m $(dpkg -S "$(realpath "$(modinfo -n $m)")" 2>&1)"; done
# the provider of the release's private ABI (34 or 65), whichever it is
for p in /usr/lib/*/libibverbs/libohca-rdmav*.so; do echo "PROVIDER $(dpkg -S "$p")"; done
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


def _newest(pattern):
    found = sorted(glob.glob(os.path.join(_pkg_dir(), pattern)))
    if not found:
        pytest.fail(f"{_pkg_dir()}/{pattern} missing: run make packages DISTRO={distro()}"
                    + ("" if IN_GUEST_DKMS else f" and packaging/dkms-modules.sh {distro()}"))
    return found[-1]


def _debs(kver):
    """The packages the guest installs: the modules DKMS built on the host
    for its kernel (or ohca-dkms itself), the provider and the tools."""
    first = "ohca-dkms_*.deb" if IN_GUEST_DKMS else f"modules/ohca-modules-{kver}_*.deb"
    return [_newest(p) for p in (first, "ibverbs-providers-ohca_*.deb", "ohca-tools_*.deb")]


def _local_archive(debs, kver):
    """The guest's local archive: the packages, and with in-guest DKMS what
    their install needs beyond the image's (the closure the image's own apt
    computes, downloaded in a throwaway copy of the image), with a Packages
    index: {file name in the share: host path}."""
    archive = os.path.join(_pkg_dir(), "guest-archive")
    os.makedirs(os.path.join(archive, "partial"), exist_ok=True)
    for f in glob.glob(os.path.join(archive, "ohca*.deb")) + glob.glob(
            os.path.join(archive, "ibverbs-providers-ohca*.deb")):
        os.remove(f)
    if IN_GUEST_DKMS:
        subprocess.run(["bash", os.path.join(TOP, "packaging/release-root.sh"), distro(),
                        ohcavm.rootfs_image(), os.path.join(_pkg_dir(), "download-root"),
                        "bash", "-c", 'apt-get update -q >/dev/null && apt-get install '
                        '--download-only -y -q --no-install-recommends '
                        '-o Dir::Cache::archives="$0" "$@" >/dev/null', archive]
                       + debs + [f"linux-headers-{kver}"], check=True)
        # apt copies local .deb files into the archive too: the index below
        # names only the ones the job hands over
        for f in glob.glob(os.path.join(archive, "ohca*.deb")) + glob.glob(
                os.path.join(archive, "ibverbs-providers-ohca*.deb")):
            os.remove(f)
    files = {os.path.basename(p): p for p in glob.glob(os.path.join(archive, "*.deb"))}
    for d in debs:
        os.link(d, os.path.join(archive, os.path.basename(d)))
        files[os.path.basename(d)] = d
    index = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=archive,
                           capture_output=True, text=True, check=True).stdout
    with open(os.path.join(archive, "Packages"), "w") as f:
        f.write(index)
    files["Packages"] = os.path.join(archive, "Packages")
    return files


def test_packages_install_and_run(vm_run):
    kver = ohcavm.guest_kver()
    debs = _debs(kver)
    files = _local_archive(debs, kver)
    if IN_GUEST_DKMS:
        debs.append(f"linux-headers-{kver}")
    job = JOB.replace("{debs}", " ".join(d if d.startswith("linux-headers-")
                                         else "./" + os.path.basename(d) for d in debs))
    # two boots: sid's took 65-95 s under TCG at load 10, 260-270 s at
    # load 25 (dracut's initrd)
    (r,) = vm_run(job, preamble=False, fresh=True, timeout=7200 if IN_GUEST_DKMS else 1800,
                  extra_files=files, reboot=True, tree_files=False)
    assert_ok([r])
    with open(os.path.join(r.logdir, "share", "install.log"), errors="replace") as f:
        install = f.read()
    out = r.output
    # the share had no driver or provider of the tree's: only the packages'
    for text in (install, out):
        assert re.search(r"^SHARE_TREE_FILES\s*$", text, re.M), text
    assert len(re.findall(r"ohca-init: userspace up", r.console)) == 2, r.console_tail()
    for text, step in ((install, "INSTALL_SECONDS"), (install, "REBOOT at"),
                       (out, "=== boot 2 at"), (out, "UDEV_SECONDS")):
        print(re.search(rf"^{step} \d+(\.\d+)?", text, re.M).group(0))
    if IN_GUEST_DKMS:
        assert re.search(rf"^ohca/\S+, {re.escape(kver)}, x86_64: installed", install, re.M), install
    # nothing loads them on the install: the boot after it does
    assert "=== modules after the install\n(none)" in install, install
    assert "=== modules before udev\n(none)" in out, out
    owner = "ohca-dkms" if IN_GUEST_DKMS else f"ohca-modules-{re.escape(kver)}"
    for m in ("ohca_core", "ohca_ib"):
        assert re.search(rf"^MODPATH {m} (/usr)?/lib/modules/{re.escape(kver)}/updates/dkms/"
                         rf"{m}\.ko", out, re.M), out
        if not IN_GUEST_DKMS:  # DKMS's own files belong to no package
            assert re.search(rf"^MODPKG {m} {owner}(:amd64)?: ", out, re.M), out
    assert re.search(r"^PROVIDER ibverbs-providers-ohca(:amd64)?: .*/libohca-rdmav\d+\.so$",
                     out, re.M), out
    ibdev = re.search(r"^IBDEV (\S+)", out, re.M).group(1)
    print(f"IBDEV {ibdev}")
    assert re.search(rf"hca_id:\s+{re.escape(ibdev)}\b", out), out
    assert re.search(r"state:\s+PORT_ACTIVE", out), out
    assert len(re.findall(r"500 iters in", out)) == 2, out
