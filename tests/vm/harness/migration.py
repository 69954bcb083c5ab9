"""Live migration of a harness VM to a second QEMU process on this host
(docs/migration.md): the destination has the VM's command line with
-incoming, opens the same disk overlay (Cluster(migratable=True)) and gets
the same wire socket; the source quits once the destination runs. And a
VM's restart from a savevm snapshot of its disk (-loadvm at start)."""

import os
import shlex
import subprocess
import time

from .checks import sanitizer_env
from .common import HarnessError, die_with_parent
from .qmp import QMP

# How long the source may refuse to start (the guest still has the 9p share
# mounted, a migration blocker) and how long the migration may run.
MIGRATE_START = 120
MIGRATE_RUN = 300


def migrate(vm):
    """Migrates vm; returns QEMU's figures: status, downtime_ms, total_ms,
    setup_ms, ram_mb and attempts, and resume_ms (_resumed): the VM stands
    still for downtime_ms + resume_ms. Only datagram wires qualify (dgram,
    faulty, and the switch wire of a migratable cluster, whose ports are
    datagram socket pairs; the switch stays, the peer is its port): the
    peers' frames reach whichever process runs the VM, while a stream
    socket read by two processes would lose its framing. The guest must
    unmount its share (9p refuses migration while mounted): the source's
    migrate is retried until it has."""
    c = vm.cluster
    if not c.migratable or c.wire not in ("dgram", "faulty", "switch") or c.capture:
        raise HarnessError("migrate needs Cluster(migratable=True) on a dgram or switch "
                           "wire without capture")
    vm.migrations += 1
    n = vm.migrations
    uri = f"unix:{os.path.join(c.sockdir, f'{vm.name}-mig{n}.sock')}"
    dest, log_f, dq, dest_qmp = _second_process(vm, f"in{n}")
    try:
        dq.execute("migrate-incoming", uri=uri)
        attempts = _start(vm, uri)
        info = _finish(vm, dest)
        resume_ms = _resumed(vm, dq, dest)
    except BaseException:
        _kill(dest, log_f)
        raise
    # The source is paused (postmigrate); the destination runs the VM.
    _replace(vm, dest, log_f, dq, dest_qmp)
    status = dq.execute("query-status")
    if status.get("status") != "running":
        raise HarnessError(f"{vm.name}: after the migration the destination is "
                           f"{status.get('status')}")
    ram = info.get("ram", {})
    return {"status": info.get("status"), "downtime_ms": info.get("downtime"),
            "total_ms": info.get("total-time"), "setup_ms": info.get("setup-time"),
            "ram_mb": ram.get("transferred", 0) / (1 << 20), "attempts": attempts,
            "resume_ms": resume_ms}

def restart_from_snapshot(vm, tag):
    """Ends vm's QEMU and starts a new process of it with -loadvm TAG
    (a savevm snapshot in its disk overlay; the old process must quit
    first, as it holds the image's lock), paused: the caller continues it.
    Returns the seconds from the old process's end to the new one's QMP."""
    vm.restarts = getattr(vm, "restarts", 0) + 1
    _end(vm.proc, getattr(vm, "qemu_log", None))
    t = time.monotonic()
    proc, log_f, qmp, qmp_path = _second_process(vm, f"loadvm{vm.restarts}", loadvm=tag)
    status = qmp.execute("query-status")
    _replace(vm, proc, log_f, qmp, qmp_path, old_ended=True)
    if status.get("status") not in ("prelaunch", "paused"):
        raise HarnessError(f"{vm.name}: after -loadvm {tag} QEMU is {status.get('status')}")
    return time.monotonic() - t


def _second_process(vm, what, loadvm=None):
    """A new QEMU process of vm (its command line in cmdline-WHAT.txt),
    appending to its qemu.log, with the same wire socket; returns it, its
    log file, its QMP and that QMP's path once QMP answers."""
    qmp_path = os.path.join(vm.cluster.sockdir, f"{vm.name}-{what}.qmp")
    argv = vm.qemu_argv(incoming=qmp_path, loadvm=loadvm)
    with open(os.path.join(vm.logdir, f"cmdline-{what}.txt"), "w") as f:
        f.write(shlex.join(argv) + "\n")
    log_f = open(os.path.join(vm.logdir, "qemu.log"), "a")
    fds = (vm.netdev_sock.fileno(),) if vm.netdev_sock else ()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_f,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=die_with_parent,
                            env=sanitizer_env(vm.logdir), pass_fds=fds)
    try:
        qmp = QMP(qmp_path)
        _qmp_ready(vm, qmp, proc)
    except BaseException:
        _kill(proc, log_f)
        raise
    return proc, log_f, qmp, qmp_path


def _kill(proc, log_f):
    proc.kill()
    proc.wait()
    log_f.close()


def _end(proc, log_f):
    try:
        proc.terminate()
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if log_f:
        log_f.close()


def _replace(vm, proc, log_f, qmp, qmp_path, old_ended=False):
    """vm runs in proc from now on; its old process ends (if it has not)."""
    old, old_log = vm.proc, getattr(vm, "qemu_log", None)
    vm.proc, vm.qemu_log, vm.qmp, vm.qmp_path = proc, log_f, qmp, qmp_path
    if not old_ended:
        _end(old, old_log)


def _retry(step, retryable, timeout, period, expired):
    """step() until it succeeds; an error retryable(e) accepts is tried
    again every period seconds for timeout seconds, then expired(e) is the
    message. Returns step's result and the number of calls."""
    deadline = time.monotonic() + timeout
    calls = 0
    while True:
        calls += 1
        try:
            return step(), calls
        except (OSError, HarnessError) as e:
            if not retryable(e):
                raise
            if time.monotonic() > deadline:
                raise HarnessError(expired(e)) from None
            time.sleep(period)


def _qmp_ready(vm, qmp, proc, timeout=60):
    def step():
        if proc.poll() is not None:
            raise HarnessError(f"{vm.name}: its second QEMU process exited "
                               f"({proc.returncode}); see {vm.logdir}/qemu.log")
        qmp.execute("query-status")
    _retry(step, lambda e: proc.poll() is None, timeout, 0.2,
           lambda e: f"{vm.name}: no QMP from its second QEMU process within {timeout} s")


def _blocked(e):
    """Whether migrate was refused for a blocker (the guest's 9p mount)."""
    msg = str(e).lower()
    return isinstance(e, HarnessError) and ("blocker" in msg or "disabled" in msg)


def _start(vm, uri):
    _, attempts = _retry(lambda: vm.qmp.execute("migrate", uri=uri), _blocked, MIGRATE_START, 0.3,
                         lambda e: f"{vm.name}: migration refused for {MIGRATE_START} s: {e}")
    return attempts


def _resumed(vm, qmp, proc, timeout=60):
    """Milliseconds from the source's completion (as _finish saw it, within
    its 0.1 s poll) until the destination runs the VM. QEMU's downtime
    ends on the source, when it has sent its last byte; the destination
    then still reads and loads the rest of the stream (the devices' state
    comes last) and starts the vCPUs, the VM standing still meanwhile."""
    t0 = time.monotonic()
    while True:
        if qmp.execute("query-status").get("status") == "running":
            return round((time.monotonic() - t0) * 1000)
        if proc.poll() is not None:
            raise HarnessError(f"{vm.name}: the destination QEMU exited ({proc.returncode}) "
                               f"after the migration; see {vm.logdir}/qemu.log")
        if time.monotonic() - t0 > timeout:
            raise HarnessError(f"{vm.name}: the destination does not run {timeout} s "
                               f"after the migration completed")
        time.sleep(0.01)


def _finish(vm, dest):
    deadline = time.monotonic() + MIGRATE_RUN
    while True:
        info = vm.qmp.execute("query-migrate")
        st = info.get("status")
        if st == "completed":
            return info
        if st in ("failed", "cancelled"):
            raise HarnessError(f"{vm.name}: migration {st}: "
                               f"{info.get('error-desc', '')}; see {vm.logdir}/qemu.log")
        if dest.poll() is not None:
            raise HarnessError(f"{vm.name}: the destination QEMU exited "
                               f"({dest.returncode}) during the migration")
        if time.monotonic() > deadline:
            vm.qmp.execute("migrate_cancel")
            raise HarnessError(f"{vm.name}: migration not done in {MIGRATE_RUN} s "
                               f"({st})")
        time.sleep(0.1)

