"""Open MPI over UCX over ohca across VMs (issue 25, item 2).

mpirun on vm0 starts one or more ranks on each VM of the run. Its daemons
(orted) reach the other VMs through ohca_rsh.py (tests/vm/guest), a small
remote-shell agent each VM serves for the length of the job on the VMs'
own wire: there is no ssh in the image and no network outside the VMs.
The runtime's own control traffic (orted <-> mpirun) is TCP over eth0;
every MPI message goes through UCX's verbs transports on ohca: the UCX
PML is forced (it fails the job rather than fall back), the BTLs are
"self" only (no tcp, vader/sm shared memory or openib), UCX_TLS names
rc_verbs and ud_verbs only and UCX_NET_DEVICES the ohca port, so ranks on
one VM also talk through the device (looped back inside it). The device's
packet counters show the traffic.

The program (tests/integration/mpi/ohca_mpi_check.c, built on the host
with Debian's mpicc against the same Open MPI the guest runs) checks
every result: ping-pong payloads, streamed payloads, allreduce (sum of
int64, max of double), broadcast from every root, alltoall blocks; it
prints "CHECK <name> ok|FAIL <figure>" and exits nonzero on any mismatch.

make test runs the compact job (two VMs, one rank each, and 3 ranks on
two VMs); make test-apps adds three VMs and more ranks (OHCA_MPI_FULL=1).
"""

import os
import re
import shutil
import subprocess

import pytest

from vmtest import assert_ok, ohcavm, section

pytestmark = pytest.mark.ohca_only

SRC = os.path.join(ohcavm.TOP, "tests", "integration", "mpi", "ohca_mpi_check.c")
RSH = os.path.join(ohcavm.TOP, "tests", "vm", "guest", "ohca_rsh.py")
BIN_DIR = os.path.join(ohcavm.TOP, "build", "mpi")
ITERS = 30

# One job for every VM: each serves the agent; vm0 runs the mpirun
# commands in turn (one per "RUN name ranks-per-VM" line), the others wait
# for it at the end.
JOB = r"""
python3 /share/ohca_rsh.py serve 2222 >/tmp/rsh.log 2>&1 &
# every VM by its host name (vm<i>, each VM's own): Open MPI 5's runtime
# matches the --host list against its nodes' names and aliases, and the
# node mpirun runs on has no alias of its IP address ("not enough slots"
# for a list of addresses)
i=0
for ip in $OHCA_VM_IPS; do
	grep -qx "$ip vm$i" /etc/hosts || echo "$ip vm$i" >>/etc/hosts
	i=$((i + 1))
done
ohca_hw_counters
ohca_barrier rsh-up 120 || exit 1
rc=0
if [ "$OHCA_VM_INDEX" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	# the remote-shell agent: Open MPI 4's runtime (bookworm) reads
	# plm_rsh_agent, Open MPI 5's (PRRTE, trixie) plm_ssh_agent, which has
	# no rsh synonym (given --mca plm_rsh_agent, it started no daemon on
	# the other VMs); each ignores the other's variable
	export OMPI_MCA_plm_rsh_agent="python3 /share/ohca_rsh.py"
	export PRTE_MCA_plm_ssh_agent="python3 /share/ohca_rsh.py"
	while read -r name per_vm nvms; do
		hosts=
		for i in $(seq 0 $((nvms - 1))); do hosts=$hosts${hosts:+,}vm$i:$per_vm; done
		echo "=== $name ==="
		start=$(date +%s)
		# (mpirun forwards its standard input to rank 0: not this list)
		timeout 400 mpirun -np $((per_vm * nvms)) --host "$hosts" \
			--mca oob_tcp_if_include "$OHCA_IFACE" \
			--mca pml ucx --mca btl self --mca osc ^rdma,pt2pt \
			--mca pml_ucx_verbose 1 MPIRUN_ARGS \
			-x UCX_TLS=rc_verbs,ud_verbs -x UCX_NET_DEVICES="$OHCA_IBDEV:1" \
			-x UCX_WARN_UNUSED_ENV_VARS=n \
			/share/ohca_mpi_check ITERS </dev/null > /tmp/mpi.log 2>&1
		r=$?
		grep -av "^ *$" /tmp/mpi.log | tail -n 60
		echo "MPIRUN $name rc=$r seconds=$(($(date +%s) - start))"
		[ $r -eq 0 ] || rc=1
	done <<'EOF2'
RUNS
EOF2
fi
ohca_barrier mpi-done 1800 || rc=1
ohca_hw_counters
exit $rc
""".replace("ITERS", str(ITERS)).replace(
    # OHCA_MPIRUN_ARGS: more mpirun options for a diagnosis, e.g. Open MPI
    # 5's "--display-allocation --prtemca plm_base_verbose 5"
    "MPIRUN_ARGS", os.environ.get("OHCA_MPIRUN_ARGS", ""))

# (name, ranks per VM, VMs)
COMPACT = [("np2", 1, 2), ("np4", 2, 2)]
FULL = COMPACT + [("np3", 1, 3), ("np6", 2, 3)]


@pytest.fixture(scope="module")
def mpi_check_bin():
    """The MPI program, built on the host against Debian's Open MPI."""
    mpicc = shutil.which("mpicc")
    if not mpicc:
        pytest.fail("mpicc not found: tests/deps.sh installs libopenmpi-dev")
    os.makedirs(BIN_DIR, exist_ok=True)
    out = os.path.join(BIN_DIR, "ohca_mpi_check")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(SRC):
        subprocess.run([mpicc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", out, SRC],
                       check=True)
    return out


def counters(output):
    """[{name: value}] of the ohca_hw_counters lines of a VM's output."""
    return [dict(kv.split("=") for kv in line.split()[1:])
            for line in re.findall(r"^HW_COUNTERS .*$", output, re.M)]


def run_mpi(vm_run, mpi_check_bin, runs):
    nvms = max(n for _, _, n in runs)
    job = JOB.replace("RUNS", "\n".join(f"{name} {per} {n}" for name, per, n in runs))
    results = vm_run(job, nvms=nvms, timeout=300 + 400 * len(runs),
                     extra_files={"ohca_mpi_check": mpi_check_bin, "ohca_rsh.py": RSH})
    head = results[0]
    failed = []
    for name, per, n in runs:
        m = re.search(rf"^MPIRUN {name} rc=(\d+) seconds=(\d+)$", head.output, re.M)
        text = section(head.output, name)
        checks = re.findall(r"^CHECK (\S+) (ok|FAIL)(.*)$", text, re.M)
        ranks = re.findall(r"^RANK \d+ of (\d+) on ", text, re.M)
        if (not m or m.group(1) != "0" or "DONE ok" not in text or len(checks) != 13
                or any(v != "ok" for _, v, _ in checks) or len(ranks) != per * n):
            failed.append(name)
            continue
        print(f"MPI {name} ({per * n} ranks on {n} VMs, {m.group(2)} s): "
              + ", ".join(f"{c}{fig}" for c, _, fig in checks))
    assert not failed, f"MPI runs failed: {failed}\n" + head.report()
    # every VM's device carried the job's packets
    for r in results[:nvms]:
        c = counters(r.output)
        assert len(c) == 2, r.report()
        for key in ("roce_rx_pkts", "roce_tx_pkts"):
            assert int(c[1][key]) - int(c[0][key]) > 100, (key, c, r.report())
    assert_ok(results)


def test_mpi_ucx_two_vms(vm_run, mpi_check_bin):
    run_mpi(vm_run, mpi_check_bin, COMPACT)


@pytest.mark.skipif(os.environ.get("OHCA_MPI_FULL") != "1",
                    reason="the longer matrix: make test-apps (OHCA_MPI_FULL=1)")
def test_mpi_ucx_three_vms(vm_run, mpi_check_bin):
    run_mpi(vm_run, mpi_check_bin, FULL[len(COMPACT):])
