"""What a live migration's peer gap is made of (docs/migration.md, "The
peer's gap, per migration"): the host's timeline of the stop, the
devices' RC waits from their QEMU traces and the guest programs' own
account of the gap, put together into one line per migration.

Sources, all in the host's wall-clock time:
- each QEMU process (vm0's source and destinations, vm1) writes its
  `ohca_rc` and `ohca_vm_running` trace events to trace-<pid>.log with
  `-msg timestamp=on` (TRACE_ARGS): the VM's stop and resume, and every
  decided wait of an RC requester (a tail-loss probe, a timeout and why it
  was no probe, a credit wait's ACK request, an undone timeout, a probe
  answered), with the RTO in force and how late the timer ran;
- vm1's ohca_rc_integrity server prints the longest gap around the
  signal the host sends after the migration, its place against the
  signal, how much of it was TCP syncs and the longest time between two
  of its CQ polls; the file its job creates on the share right after the
  signal gives the signal's host time (the file's mtime)."""

import glob
import os
import re

# The QEMU options that write the traces (the log backend; %d: the
# process's pid, as a migration's source and destination share their
# command line).
def trace_args(logdir):
    return ["-msg", "timestamp=on", "-D", os.path.join(logdir, "trace-%d.log"),
            "-trace", "ohca_rc", "-trace", "ohca_vm_running"]


EVENTS = {0: "probe", 1: "timeout", 2: "credit ask", 3: "credit probe", 4: "undone",
          5: "probe answered"}
REASONS = {1: "after probe", 2: "full", 3: "frto", 4: "recovery", 5: "goback", 6: "read"}

TRACE_LINE = re.compile(r"^\d+@(\d+)\.(\d+):(ohca_rc|ohca_vm_running) (.*)$")
RC_ARGS = re.compile(r"RC QP 0x([0-9a-f]+) wait event (\d+) reason (\d+) rto_us (\d+) "
                     r"late_us (\d+)")
RUN_ARGS = re.compile(r"the VM runs (\d)")


def read_traces(logdir, names):
    """{vm name: {"rc": [(t, qpn, event, reason, rto_ms, late_ms)], "run":
    [(t, running, pid)]}} from the trace files of the pids in names
    ({pid: vm name}); t in seconds of the host's wall clock."""
    out = {}
    for path in glob.glob(os.path.join(logdir, "trace-*.log")):
        pid = int(re.search(r"trace-(\d+)\.log$", path).group(1))
        vm = names.get(pid)
        if vm is None:
            continue
        d = out.setdefault(vm, {"rc": [], "run": []})
        with open(path, errors="replace") as f:
            for line in f:
                m = TRACE_LINE.match(line)
                if not m:
                    continue
                t = int(m.group(1)) + int(m.group(2)) / 1e6
                if m.group(3) == "ohca_rc":
                    a = RC_ARGS.match(m.group(4))
                    if a:
                        d["rc"].append((t, int(a.group(1), 16), int(a.group(2)), int(a.group(3)),
                                        int(a.group(4)) / 1000, int(a.group(5)) / 1000))
                else:
                    a = RUN_ARGS.match(m.group(4))
                    if a:
                        d["run"].append((t, a.group(1) == "1", pid))
    for d in out.values():
        d["rc"].sort()
        d["run"].sort()
    return out


def stop_window(run, src_pid, dst_pid):
    """(stopped, resumed): when the destination first ran and when the
    source stopped for the last time before that, from their
    ohca_vm_running events; None for what is not there."""
    starts = [t for t, running, pid in run if pid == dst_pid and running]
    resumed = starts[0] if starts else None
    stops = [t for t, running, pid in run if pid == src_pid and not running
             and (resumed is None or t <= resumed)]
    return (stops[-1] if stops else None), resumed


SRV_GAP = re.compile(r"^server: that gap from (-?\d+) to (-?\d+) ms after SIGUSR1, (\d+) ms of it "
                     r"in TCP syncs, longest between two CQ polls (\d+) ms, ended by (.*)$", re.M)
CLI_GAP = re.compile(r"^client: that gap from (-?\d+) to (-?\d+) ms after SIGUSR1, (\d+) ms of it "
                     r"in TCP syncs, longest between two CQ polls (\d+) ms, ended by (.*)$", re.M)
SRV_GAPS = re.compile(r"^server: a gap from (-?\d+) to (-?\d+) ms after SIGUSR1", re.M)
QPS = re.compile(r"^(?:server|client): qp (\d+) psn \S+ <-> peer qp (\d+)", re.M)


def conn_chunks(out, role):
    """The output of each connection of ROLE, in order (split at its
    summary line, which ends each)."""
    return re.split(rf"^ohca_rc_integrity: \S+ role={role} .*$", out, flags=re.M)


def server_gap(chunk):
    """vm1's server's account of the gap at the signal: (start_ms, end_ms
    relative to the signal, tcp_ms, poll_ms, ended_by), and (its QPN, the
    peer's), or None."""
    g = SRV_GAP.search(chunk)
    q = QPS.search(chunk)
    gap = (int(g.group(1)), int(g.group(2)), int(g.group(3)), int(g.group(4)),
           g.group(5)) if g else None
    return gap, ((int(q.group(1)), int(q.group(2))) if q else None)


def stop_gap(chunk, mark, stop):
    """The longest of the server's gaps (each of at least 50 ms in the
    window it lists) that overlaps the stop (stopped, resumed) on the
    host's clock, given the signal's host time 'mark'; in ms, or None (a
    program that lists none, or no gap at the stop)."""
    ts, tr = stop
    if ts is None or tr is None:
        return None
    best = None
    for a, b in SRV_GAPS.findall(chunk):
        gs, ge = mark + int(a) / 1000, mark + int(b) / 1000
        if gs <= tr and ge >= ts and (best is None or ge - gs > best):
            best = ge - gs
    return None if best is None else round(best * 1000)


def client_gap(chunk):
    g = CLI_GAP.search(chunk)
    return (int(g.group(1)), int(g.group(2)), int(g.group(3)), int(g.group(4)),
            g.group(5)) if g else None


def _describe(events):
    """'2 probes, 3 timeouts (frto 2, after probe 1)' for a list of rc
    events."""
    counts, reasons = {}, {}
    for _, _, ev, why, _, _ in events:
        counts[ev] = counts.get(ev, 0) + 1
        if ev == 1:
            reasons[why] = reasons.get(why, 0) + 1
    parts = []
    for ev in sorted(counts):
        s = f"{counts[ev]} {EVENTS.get(ev, ev)}"
        if ev == 1 and reasons:
            s += " (" + ", ".join(f"{REASONS.get(r, r)} {n}" for r, n in sorted(reasons.items())) + ")"
        parts.append(s)
    return ", ".join(parts) or "no wait"


def device_wait(events, since, until):
    """The device's own wait in (since, until] from these rc events: from
    'since' to the moment its last timer in it meant to run (its lateness,
    the host's, taken off), with that timer's event; 0 when that series
    ended in a timeout undone (within half a second after: the answers
    were late, not lost, the peer's wait and not the device's) or when no
    timer ran."""
    waits = [e for e in events if since < e[0] <= until and e[2] in (0, 1, 2, 3)]
    if not waits:
        return 0.0, None
    last = waits[-1]
    if any(e[2] == 4 and last[0] <= e[0] <= until + 0.5 for e in events):
        return 0.0, last
    return max(0.0, (last[0] - last[5] / 1000 - since) * 1000), last


def explain(i, gap_host, stop, vm_events, srv, cli, still_ms):
    """One line: what migration i's gap was made of, and its cause.

    gap_host: (start, end) of vm1's gap in host seconds, or None;
    stop: (stopped, resumed) host seconds (either may be None);
    vm_events: {"vm0": [rc events of the connection's QP], "vm1": [...]};
    srv, cli: the programs' accounts (server_gap, client_gap);
    still_ms: the harness's standing still (downtime + resume).

    The cause is the largest of: standing still; a host stall (the longest
    either program went without polling its CQ, or a device timer ran
    late); the device's own wait after the resume (device_wait); the peer
    late after the resume otherwise (the destination cold, its program, TCP).
    A gap that ended before the stop is no stop's: its cause is the RAM
    copy's end, with a host stall named when one covers half of it."""
    if gap_host is None:
        return f"migration {i}: gap not placed (no account from vm1's server)"
    gs, ge = gap_host
    gap_ms = (ge - gs) * 1000
    ts, tr = stop
    if ts is None or tr is None:
        return f"migration {i}: gap {gap_ms:.0f} ms, the stop not traced"
    before = max(0.0, min(ge, ts) - gs) * 1000
    during = max(0.0, min(ge, tr) - max(gs, ts)) * 1000
    after = max(0.0, ge - max(gs, tr)) * 1000
    parts = [f"{before:.0f} ms before the stop + {during:.0f} standing still "
             f"+ {after:.0f} after the resume"]
    # The devices' waits inside the gap (their QPs of this connection).
    inside = {vm: [e for e in ev if gs - 0.01 <= e[0] <= ge + 0.01]
              for vm, ev in vm_events.items()}
    late = 0.0
    for vm in ("vm0", "vm1"):
        ev = inside.get(vm, [])
        if ev:
            late = max(late, max(e[5] for e in ev))
            parts.append(f"{vm}'s QP: {_describe(ev)}, RTO at the end {ev[-1][4]:.0f} ms, "
                         f"its timer up to {max(e[5] for e in ev):.0f} ms late")
    if srv:
        parts.append(f"vm1's program: {srv[2]} ms in TCP syncs, {srv[3]} ms without polling, "
                     f"ended by {srv[4]}")
    if cli:
        parts.append(f"vm0's program (its clock): a gap of {cli[1] - cli[0]} ms, {cli[2]} ms in "
                     f"TCP syncs, {cli[3]} ms without polling, ended by {cli[4]}")
    stalls = [(srv[3] if srv else 0, "vm1 did not poll"), (cli[3] if cli else 0, "vm0 did not poll"),
              (late, "a device timer ran late")]
    stall, what = max(stalls)
    if during == 0 and after == 0:
        cause = f"not the stop: a wait {before:.0f} ms before it, while the RAM was copied"
        if stall >= before / 2:
            cause += f" (host stall {stall:.0f} ms: {what})"
        return (f"migration {i}: gap {gap_ms:.0f} ms (standing still {still_ms} ms): "
                + "; ".join(parts) + f". Cause: {cause}")
    causes = [(during, f"standing still {during:.0f} ms"),
              (stall, f"host stall {stall:.0f} ms ({what})")]
    if before:
        causes.append((before, f"a wait from {before:.0f} ms before the stop (the RAM copy's end)"))
    dev, dev_vm, dev_last = 0.0, None, None
    for vm, ev in vm_events.items():
        w, last = device_wait(ev, max(tr, gs), ge + 0.01)
        if w > dev:
            dev, dev_vm, dev_last = w, vm, last
    if dev_last is not None:
        why = EVENTS[dev_last[2]] + (", " + REASONS[dev_last[3]] if dev_last[2] == 1 else "")
        causes.append((dev, f"device waited {dev:.0f} ms after the resume ({dev_vm}'s RC: {why}, "
                            f"RTO then {dev_last[4]:.0f} ms)"))
    if after - dev > 0:
        rest = after - dev
        if stall >= rest / 2:
            causes.append((rest, f"host stall {stall:.0f} ms ({what}) in the {rest:.0f} ms "
                                 f"after the resume"))
        else:
            causes.append((rest, f"the peer late {rest:.0f} ms after the resume "
                                 f"(vm0's destination cold, its program, TCP)"))
    causes.sort(key=lambda c: c[0], reverse=True)
    return (f"migration {i}: gap {gap_ms:.0f} ms (standing still {still_ms} ms): "
            + "; ".join(parts) + f". Cause: {causes[0][1]}")
