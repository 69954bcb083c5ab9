"""Booted VMs saved once and restored instead of booted (BootImages).

A TCG boot of Debian's kernel to the serving init costs 15-80 s on this
host (more under load); restoring the same VM from a migration stream
written to a file costs a few seconds. The first serving VM of a shape is
saved right after its boot, before its first job: its init runs a
snapshot job that unmounts the 9p share (a mounted share blocks
migration), the host migrates the VM to a file (`exec:cat >FILE`), copies
the disk overlay the guest wrote so far (the RAM's page cache and the
file system's state must match), writes the share's `sync/host.restored`
and continues the VM. A later VM of the same shape starts with
`-incoming file:FILE` (`fd:` on 7.2: vm.py) on a new overlay of that
disk and a new share holding its own `host.restored`; its guest finds
the share again, sets its clock and mixes fresh bytes into its random
pool from that file, and ends the snapshot job as init ends every job
(the job's processes gone, the driver not loaded, interfaces reset): the
state a pooled VM offers its next job. The device, the NIC's MAC, node GUID, address and host name
are the saved VM's: the shape's key is the whole QEMU command line but
the parts a restore replaces (disk, share, QMP, console, the wire's
netdev and capture), plus the files the boot read.

A restore that fails (QEMU exits, the guest does not finish the job)
falls back to a boot. OHCA_VM_SNAPSHOTS=0 turns the images off. The
images of a session are deleted at its end (Pool.close)."""

import hashlib
import os
import shlex
import shutil
import sys
import tempfile
import threading
import time

from .common import TOP, HarnessError, log

# how long a guest may take to reach the snapshot job's mark, and a saved
# or restored guest to end the job (find the share again)
READY_TIMEOUT = 180
# how long the source may refuse the migration (the guest had its share
# mounted) and the save may take
SAVE_START = 120
SAVE_RUN = 300

# The snapshot job: runs from /tmp (the share is unmounted under it),
# cycles the share off and on until it finds the host's restored file
# (migrate is refused while the share is mounted, and a mount fails while a
# migration runs), then sets the clock and reseeds. Its log goes to the
# share it finds at the end.
SNAPSHOT_JOB = r"""cd /
cat >/tmp/ohca-snapshot.sh <<'EOF'
exec >/tmp/ohca-snapshot.log 2>&1 </dev/null
cd /
sync
: >/share/sync/guest.snapshot-ready
tries=0
while :; do
	tries=$((tries + 1))
	if ! umount /share; then
		sleep 0.5
		continue
	fi
	sleep 1
	until mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share /share; do
		sleep 0.2
	done
	[ -e /share/sync/host.restored ] && break
done
read -r now seed </share/sync/host.restored
date -s "@$now" >/dev/null
echo "$seed" >/dev/urandom
echo "share found again after $tries unmount(s); clock set to $(date -u +%FT%TZ)"
cp /tmp/ohca-snapshot.log /share/output.log
EOF
exec bash /tmp/ohca-snapshot.sh
"""

# command-line options a restore replaces (the value after each)
_REPLACED = ("-drive", "-virtfs", "-qmp", "-chardev", "-netdev", "-object", "-incoming")


def _file_id(path):
    if not path:
        return "-"
    st = os.stat(path)
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


class BootImages:
    """The session's saved VMs, by shape (key) and restored on demand."""

    def __init__(self, root=None, enabled=None):
        if enabled is None:
            enabled = os.environ.get("OHCA_VM_SNAPSHOTS", "1") != "0"
        self.enabled = enabled
        self.root = root
        self.images = {}   # key -> {"mig": path, "disk": path}
        self.failed = set()  # keys whose save failed: not tried again
        self.log = []      # (event, vm name, seconds) for the session's summary
        self._lock = threading.Lock()  # saves run in threads

    def _dir(self):
        if self.root is None:
            base = os.path.join(TOP, "build")
            os.makedirs(base, exist_ok=True)
            self.root = tempfile.mkdtemp(prefix="vm-images-", dir=base)
        os.makedirs(self.root, exist_ok=True)
        return self.root

    def key(self, vm):
        """The VM's shape: its command line without what a restore replaces,
        the netdev's kind (a user netdev carries slirp's state in the
        stream), the cluster's class and the files the boot read."""
        c = vm.cluster
        argv = vm.qemu_argv()
        kept, skip = [], False
        for a in argv:
            if skip:
                skip = False
                continue
            if a in _REPLACED:
                skip = True
                continue
            kept.append(a)
        netdev = "user" if c.wire == "user" else "socket"
        parts = [type(c).__module__ + "." + type(c).__qualname__, c.env_tail, netdev,
                 _file_id(c.qemu), _file_id(c.kernel), _file_id(c.initrd),
                 _file_id(c.rootfs), shlex.join(kept)]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]

    def lookup(self, vm):
        if not self.enabled:
            return None
        return self.images.get(self.key(vm))

    def wanted(self, vm):
        """Whether vm's shape has no image yet (so its boot is saved)."""
        if not self.enabled:
            return False
        k = self.key(vm)
        return k not in self.images and k not in self.failed

    def note(self, event, name, seconds):
        with self._lock:
            self.log.append((event, name, seconds))
        log(f"images: {name} {event} in {seconds:.1f} s")

    def summary(self):
        """One line per kind of event: count, total and range of seconds."""
        out = []
        for ev in ("booted", "saved", "restored", "restore failed"):
            s = [t for e, _, t in self.log if e == ev]
            if s:
                out.append(f"{ev}: {len(s)} VM(s), {sum(s):.0f} s in all "
                           f"({min(s):.1f}-{max(s):.1f} s each)")
        return out

    # -- saving --
    def save_from(self, clusters, new):
        """Before the cluster new starts: each of its VMs' shapes that has no
        image yet is saved from an idle VM of that shape in clusters (the
        pool's, between two jobs: cleaned up as for its next job). Nothing is
        saved for a shape no later cluster asks for."""
        want = {self.key(vm) for vm in new.vms if self.wanted(vm)}
        for c in clusters:
            if not want:
                return
            if c is new or not c.fit():
                continue
            vms = [vm for vm in c.vms if vm.serving and self.key(vm) in want]
            if vms:
                self.save(c, vms)
                want -= {self.key(vm) for vm in vms}

    def save(self, cluster, vms):
        """Saves each of vms (serving, before their first job) as the image
        of its shape; a VM whose save fails is left as it was if it can
        still serve (the error is logged, the shape not tried again)."""
        vms = [vm for vm in vms if self.wanted(vm)]
        if not vms:
            return
        root = self._dir()
        for vm in vms:
            vm.dispatch(SNAPSHOT_JOB, False, cluster.files)
        # side by side: each saving QEMU is one thread's work
        threads = [threading.Thread(target=self._save_thread, args=(cluster, vm, root))
                   for vm in vms]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _save_thread(self, cluster, vm, root):
        k = self.key(vm)
        t0 = time.monotonic()
        try:
            image = self._save_one(vm, os.path.join(root, k))
            with self._lock:
                self.images[k] = image
            self.note("saved", f"{cluster.logdir}/{vm.name}", time.monotonic() - t0)
        except (HarnessError, OSError) as e:
            with self._lock:
                self.failed.add(k)
            # not trusted for another job: the pool boots the next one
            log(f"images: saving {vm.name} failed ({e}); its shape boots, the VM is stopped")
            vm.kill()

    @staticmethod
    def _release(vm):
        """Lets the snapshot job end in the VM that was saved (or failed to)."""
        restored = os.path.join(vm.sync, "host.restored")
        if not os.path.exists(restored):
            _write_restored(restored)
        try:
            if vm.qmp.execute("query-status").get("status") != "running":
                vm.qmp.execute("cont")
        except HarnessError:
            pass

    def _save_one(self, vm, base):
        t0 = time.monotonic()
        vm.wait_mark("snapshot-ready", READY_TIMEOUT)
        t_ready = time.monotonic()
        mig, disk = base + ".mig", base + ".qcow2"
        # the stream goes to a file on this host: no bandwidth limit
        vm.qmp.execute("migrate-set-parameters", **{"max-bandwidth": 1 << 40})
        # through a pipe of 1 MiB (64 KiB by default: on a loaded host each
        # pipe's worth waits for the reader to be scheduled)
        copy = ("import fcntl, shutil, sys; fcntl.fcntl(0, 1031, 1 << 20); "
                f"shutil.copyfileobj(sys.stdin.buffer, open({mig!r}, 'wb'), 1 << 20)")
        uri = f"exec:{shlex.quote(sys.executable)} -c {shlex.quote(copy)}"
        deadline = time.monotonic() + SAVE_START
        while True:
            try:
                vm.qmp.execute("migrate", uri=uri)
                # the guest waits with its share unmounted: stopped, it
                # dirties no page, and one pass over the RAM saves it
                vm.qmp.execute("stop")
                break
            except HarnessError as e:
                msg = str(e).lower()
                if ("blocker" not in msg and "disabled" not in msg) or time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        deadline = time.monotonic() + SAVE_RUN
        while True:
            info = vm.qmp.execute("query-migrate")
            st = info.get("status")
            if st == "completed":
                break
            if st in ("failed", "cancelled") or time.monotonic() > deadline:
                if st not in ("failed", "cancelled"):
                    vm.qmp.execute("migrate_cancel")
                raise HarnessError(f"saving {vm.name}: migration {st} "
                                   f"{info.get('error-desc', '')}")
            time.sleep(0.1)
        t_saved = time.monotonic()
        # paused, its disk flushed and inactive: the overlay is the disk of
        # the RAM just written
        shutil.copyfile(vm.overlay, disk)
        self._release(vm)
        t_cont = time.monotonic()
        deadline = time.monotonic() + READY_TIMEOUT
        while not vm.has_result():
            if not vm.alive() or time.monotonic() > deadline:
                raise HarnessError(f"{vm.name}: the snapshot job did not end after the save")
            time.sleep(0.2)
        r = vm.collect()
        if r.exit_code != 0 or vm.unfit():
            raise HarnessError(f"{vm.name}: the snapshot job ended with {r.summary()}")
        log(f"images: {vm.name}: job to its mark {t_ready - t0:.1f} s, migration "
            f"{t_saved - t_ready:.1f} s ({os.path.getsize(mig) / (1 << 20):.0f} MiB, "
            f"{info.get('total-time')} ms in QEMU), disk copy {t_cont - t_saved:.1f} s "
            f"({os.path.getsize(disk) / (1 << 20):.1f} MiB), share back and job end "
            f"{time.monotonic() - t_cont:.1f} s")
        return {"mig": mig, "disk": disk}

    # -- restoring --
    @staticmethod
    def prepare_restore(vm, image):
        """Before vm.start(): the share's restored file (its clock and seed)."""
        vm.restore = image
        _write_restored(os.path.join(vm.sync, "host.restored"))

    def wait_restored(self, cluster, vms, boot):
        """Waits for restored vms to end the snapshot job; one that does not
        is killed and boot(vm) boots it instead."""
        deadline = time.monotonic() + READY_TIMEOUT
        pending = list(vms)
        loaded = {}
        while pending:
            for vm in list(pending):
                if vm not in loaded:
                    try:
                        status = vm.qmp.execute("query-status").get("status")
                        if status == "paused":
                            # saved stopped: QEMU keeps the saved run state
                            vm.qmp.execute("cont")
                        elif status == "running":
                            loaded[vm] = time.monotonic() - vm.t_start
                    except (HarnessError, OSError):
                        pass
                if vm.has_result() and vm.collect().exit_code == 0 and not vm.unfit():
                    pending.remove(vm)
                    vm.serving, vm.restore = True, None
                    self.note("restored", f"{cluster.logdir}/{vm.name}",
                              time.monotonic() - vm.t_start)
                    if vm in loaded:
                        log(f"images: {vm.name}: running {loaded[vm]:.1f} s after QEMU's start")
                elif not vm.alive() or vm.has_result() or time.monotonic() > deadline:
                    pending.remove(vm)
                    self.note("restore failed", f"{cluster.logdir}/{vm.name}",
                              time.monotonic() - vm.t_start)
                    vm.kill()
                    kept = vm.logdir + "-restore-failed"
                    shutil.rmtree(kept, ignore_errors=True)
                    shutil.copytree(vm.logdir, kept, ignore=shutil.ignore_patterns("*.qcow2"))
                    log(f"images: {vm.name}: restore failed (logs in {kept}); booting")
                    vm.restore = None
                    boot(vm)
            time.sleep(0.2)

    def close(self):
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
        self.images.clear()


def _write_restored(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{time.time():.3f} {os.urandom(32).hex()}\n")
    os.rename(tmp, path)
