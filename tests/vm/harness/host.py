"""Locating the pieces a VM is made of: the guest kernel and initrd, the
QEMU binary, the root file system image and the build outputs that go into
each VM's share."""

import functools
import glob
import os
import re
import shutil
import subprocess
import sys

from .common import GUEST_DIR, MKROOTFS, TOP, VM_DIR, HarnessError, log

DISTROS = ("bookworm", "trixie", "sid")
# The guest's release unless OHCA_DISTRO says otherwise (Debian 13 since
# 2026-12-07, issue 24), and the release of the host's own kernel headers,
# compiler and libibverbs (tests/deps.sh installs bookworm's): its driver
# and provider are built on the host, another release's in its build
# chroot (tests/vm/chroot.sh). The Makefile names both as well.
DEFAULT_DISTRO = "trixie"
HOST_DISTRO = "bookworm"


def distro():
    """The guest's Debian release (OHCA_DISTRO; make vm DISTRO=...)."""
    d = os.environ.get("OHCA_DISTRO") or DEFAULT_DISTRO
    if d not in DISTROS:
        raise HarnessError(f"OHCA_DISTRO={d}: expected one of {', '.join(DISTROS)}")
    return d


def kernel_root():
    """Where the guest kernel lives: the host for the host's release, that
    release's build chroot (tests/vm/chroot.sh) for another one."""
    d = distro()
    if d == HOST_DISTRO:
        return ""
    p = subprocess.run(["bash", os.path.join(VM_DIR, "chroot.sh"), d, "--print-path"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise HarnessError(f"the {d} build chroot is not built: run "
                           f"make rootfs DISTRO={d} (tests/vm/chroot.sh {d})")
    return p.stdout.strip()


def guest_kver():
    if os.environ.get("OHCA_GUEST_KVER"):
        return os.environ["OHCA_GUEST_KVER"]
    root = kernel_root()
    best = None
    for name in os.listdir(root + "/boot"):
        m = re.fullmatch(r"vmlinuz-(.*-amd64)", name)
        if m and os.path.isdir(f"{root}/lib/modules/{m.group(1)}"):
            v = m.group(1)
            key = [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)]
            if best is None or key > best[0]:
                best = (key, v)
    if best is None:
        raise HarnessError("no guest kernel: install linux-image-amd64")
    return best[1]


def kernel_and_initrd():
    kernel = os.environ.get("OHCA_KERNEL")
    initrd = os.environ.get("OHCA_INITRD")
    if not kernel:
        kver = guest_kver()
        root = kernel_root()
        kernel = f"{root}/boot/vmlinuz-{kver}"
        if initrd is None:
            initrd = f"{root}/boot/initrd.img-{kver}"
    if initrd in ("", "none"):
        initrd = None
    for path in (kernel, initrd):
        if path and not os.access(path, os.R_OK):
            raise HarnessError(f"{path} not readable (run as root?)")
    return kernel, initrd


def find_qemu(nic):
    env = os.environ.get("OHCA_QEMU")
    if env:
        path = env if os.path.isabs(env) else os.path.join(TOP, env)
        if not os.access(path, os.X_OK):
            raise HarnessError(f"OHCA_QEMU={env}: not an executable")
        return path
    version = os.environ.get("OHCA_QEMU_VERSION", "")
    other = f"-{version}" if version and version != "7.2" else ""
    variant = os.environ.get("OHCA_QEMU_VARIANT", "default")
    if variant == "asan":
        built = os.path.join(TOP, f"build/qemu{other}-asan/qemu-system-x86_64")
        if not os.access(built, os.X_OK):
            raise HarnessError(f"{built} missing: build it with "
                               f"make qemu-asan QEMU={version or '7.2'}")
        return built
    if variant not in ("default", ""):
        raise HarnessError(f"OHCA_QEMU_VARIANT={variant}: expected default or asan")
    if other:
        built = os.path.join(TOP, f"build/qemu{other}/qemu-system-x86_64")
        if not os.access(built, os.X_OK):
            raise HarnessError(f"{built} missing: build it with "
                               f"make qemu QEMU={version}")
        return built
    built = os.path.join(TOP, "build/qemu/qemu-system-x86_64")
    if os.access(built, os.X_OK):
        return built
    if nic == "ohca":
        raise HarnessError(f"{built} missing: build QEMU with the ohca device "
                           "(make qemu) or set OHCA_QEMU")
    system = shutil.which("qemu-system-x86_64")
    if not system:
        raise HarnessError(f"{built} missing and no qemu-system-x86_64 in PATH")
    log(f"note: {built} missing; using {system} (fine for --nic virtio)")
    return system


@functools.lru_cache(maxsize=None)
def qemu_version(path):
    """The (major, minor) of the QEMU binary at path (its -version line)."""
    try:
        p = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HarnessError(f"{path} -version: {e}") from e
    m = re.search(r"version (\d+)\.(\d+)", p.stdout)
    if p.returncode != 0 or not m:
        raise HarnessError(f"{path} -version: no version in {p.stdout.strip()!r} "
                           f"{p.stderr.strip()!r}")
    return int(m.group(1)), int(m.group(2))


def reads_migration_file(path):
    """Whether the QEMU at path takes -incoming file:PATH (8.2 on; 10.0 and
    later refuse a regular file's fd:, "Use file: instead"; 7.2 has only
    fd:)."""
    return qemu_version(path) >= (8, 2)


def rootfs_image(build=True):
    env = os.environ.get("OHCA_ROOTFS")
    if env:
        if not os.path.isfile(env):
            raise HarnessError(f"OHCA_ROOTFS={env}: no such file")
        return env
    p = subprocess.run(["bash", MKROOTFS, "--print-path"],
                       capture_output=True, text=True)
    path = p.stdout.strip()
    if p.returncode == 0 and os.path.isfile(path):
        return path
    if not path:
        raise HarnessError(f"mkrootfs.sh --print-path failed: {p.stderr.strip()}")
    if not build:
        raise HarnessError(f"root file system {path} not built: run make rootfs")
    log("root file system not built yet; running tests/vm/mkrootfs.sh")
    b = subprocess.run(["bash", MKROOTFS], stdout=sys.stderr)
    if b.returncode != 0 or not os.path.isfile(path):
        raise HarnessError("tests/vm/mkrootfs.sh failed")
    return path


def build_dir(part):
    """build/<part> (kernel, userspace) of the guest's release: the host's
    release's builds are build/<part>, another release's (made in its
    chroot by make kernel userspace DISTRO=...) build/<part>-<distro>."""
    d = distro()
    return os.path.join(TOP, "build/" + part + ("" if d == HOST_DISTRO else "-" + d))


def module_dir():
    """Where the guest's modules are: OHCA_MODULE_DIR, else build_dir("kernel")."""
    return os.environ.get("OHCA_MODULE_DIR", build_dir("kernel"))


# Guest scripts from tests/vm/guest, in every share.
GUEST_SCRIPTS = ("ohca_hostile_peer.py", "ohca_pyverbs.py")


def build_outputs(nic, tree=True):
    """Files to put into each share: {name in share: host path}. tree=False:
    the guest scripts alone, none of the tree's driver, provider and test
    program builds (which then need not exist)."""
    if not tree:
        return {s: os.path.join(GUEST_DIR, s) for s in GUEST_SCRIPTS}
    moddir = module_dir()
    provdir = os.environ.get("OHCA_PROVIDER_DIR", build_dir("userspace"))
    files = {
        # the driver: the PCI/Ethernet core and the RDMA driver on top
        "ohca_core.ko": os.path.join(moddir, "ohca_core.ko"),
        "ohca_ib.ko": os.path.join(moddir, "ohca_ib.ko"),
        "ohca.driver": os.path.join(provdir, "ohca.driver"),
    }
    # The provider is named by its release's private ABI: libohca-rdmav34.so
    # for rdma-core 44 and 56, libohca-rdmav65.so for 65 (userspace/Makefile).
    libs = sorted(glob.glob(os.path.join(provdir, "libohca-rdmav*.so")))
    for lib in libs:
        files[os.path.basename(lib)] = lib
    if not libs:
        files["libohca-rdmav34.so"] = os.path.join(provdir, "libohca-rdmav34.so")
    # Guest test programs: copied when built; the tests that run them check.
    for prog in ("ohca_ctx_test", "ohca_rc_loopback", "ohca_rc_nosyscall",
                 "ohca_rc_negative", "ohca_rc_integrity", "ohca_hostile",
                 "ohca_verbs_ex", "ohca_holder"):
        path = os.path.join(provdir, prog)
        if os.path.isfile(path):
            files[prog] = path
    # Guest scripts from tests/vm/guest.
    for script in GUEST_SCRIPTS:
        files[script] = os.path.join(GUEST_DIR, script)
    # The firmware interface for guest-side Python tools (ohca-cmdtest),
    # generated from the headers; cheap, so brought up to date here (make
    # regenerates it only when a header is newer): a stale copy tested the
    # new driver against the old opcodes.
    fwif = os.path.join(TOP, "build/firmware-interface/ohca_fwif.py")
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "firmware-interface"), "python"],
                   stdout=sys.stderr, check=False)
    files["ohca_fwif.py"] = fwif
    out = {}
    missing = []
    for name, path in files.items():
        if os.path.isfile(path):
            out[name] = path
        else:
            missing.append(path)
    if missing and nic == "ohca":
        raise HarnessError("missing build outputs for --nic ohca: "
                           + ", ".join(missing) + " (make kernel userspace)")
    return out
