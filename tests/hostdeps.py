#!/usr/bin/env python3
"""hostdeps: every host file the build uses must come from a package that
tests/deps.sh installs.

A fresh machine has only Debian's base system; whatever else the build reads
(a header, a library, a tool, rdma-core's test suite) must be installed by
tests/deps.sh, or `make test` works on the machine of the person who
installed it by hand and nowhere else. This tool finds such files:

    hostdeps.py trace NAME [--store FILE] -- CMD...
        runs CMD under strace (file opens and execs that succeed) and records
        the absolute paths it used in build/hostdeps/NAME.paths (and FILE,
        for builds that are cached: the record stays with the cached result)
    hostdeps.py check
        maps every recorded path, plus the paths and commands listed in
        tests/host-files.txt, to the Debian package that owns it and fails
        unless that package is Essential/required (the base system) or in the
        dependency closure of tests/deps.sh's list. Unowned files under
        /usr/local or /opt fail too (something installed by hand).
    hostdeps.py why PATH...
        the owner of each path and whether deps.sh covers it

Recorded traces: build/hostdeps/*.paths of this checkout and the
hostdeps*.paths files stored with cached builds in $OHCA_CACHE (one level
down).
"""

import glob
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
DEPS_SH = os.path.join(HERE, "deps.sh")
MANIFEST = os.path.join(HERE, "host-files.txt")
RECORDS = os.path.join(TOP, "build", "hostdeps")
CACHE = os.environ.get("OHCA_CACHE", os.path.expanduser("~/.cache/ohca"))
DPKG_INFO = "/var/lib/dpkg/info"

# Paths that are not inputs from packages: the tree, the caches, scratch
# space, pseudo file systems, generated machine state.
# /etc is configuration (the linker reads every ld.so.conf.d file there is,
# whoever installed it), not an input of the build.
IGNORED = ("/proc/", "/sys/", "/dev/", "/tmp/", "/run/", "/var/", "/root/",
           "/home/", "/etc/", "/usr/lib/locale/locale-archive", "/usr/share/locale/",
           "/usr/lib/python3/dist-packages/__pycache__", "/usr/share/mime/")
STRACE_LINE = re.compile(r"^(\d+) +(.*)$")
STRACE_EXIT = re.compile(r"^\+\+\+ exited with (\d+) \+\+\+")
PKGCONF = ("pkg-config", "pkgconf")
# Records since failed pkg-config lookups are told apart (see used_paths).
RECORD_HEADER = "# hostdeps record 2\n"
STRACE_PATH = re.compile(r'(?:execve|openat2?|open)\((?:AT_FDCWD, |)"(/[^"]*)"')


def die(msg):
    print(f"hostdeps: error: {msg}", file=sys.stderr)
    sys.exit(2)


def deps_packages():
    """The package names in tests/deps.sh's lists (packages=( ... ), which
    takes in debug_kernel_packages=( ... ) by reference)."""
    text = open(DEPS_SH).read()
    lists = re.findall(r"^\w*packages=\((.*?)^\)", text, re.S | re.M)
    if not lists:
        die(f"no packages=( ... ) list in {DEPS_SH}")
    names = []
    for body in lists:
        for line in body.splitlines():
            names += [w for w in line.split("#", 1)[0].split() if not w.startswith('"$')]
    return sorted(set(names))


def installed():
    """{package: (essential or required, [dependency alternatives groups])}."""
    fmt = "${Package}\t${Essential}\t${Priority}\t${Depends}, ${Pre-Depends}\t${Provides}\t${Status}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True,
                         check=True).stdout
    pkgs, provides = {}, {}
    for line in out.splitlines():
        name, ess, prio, deps, prov, status = line.split("\t")
        if not status.endswith(" installed"):
            continue
        groups = []
        for dep in deps.split(","):
            alts = [re.split(r"[ :(]", a.strip())[0] for a in dep.split("|") if a.strip()]
            if alts:
                groups.append(alts)
        pkgs[name] = (ess == "yes" or prio == "required", groups)
        for p in prov.split(","):
            p = re.split(r"[ (]", p.strip())[0]
            if p:
                provides.setdefault(p, []).append(name)
    return pkgs, provides


def closure(roots, pkgs, provides):
    """Installed packages reachable from roots through Depends/Pre-Depends."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        for real in [name] + provides.get(name, []):
            if real in seen or real not in pkgs:
                continue
            seen.add(real)
            for alts in pkgs[real][1]:
                todo += alts
    return seen


def owners():
    """{path: package} from dpkg's file lists."""
    table = {}
    for lst in glob.glob(os.path.join(DPKG_INFO, "*.list")):
        pkg = os.path.basename(lst)[:-5].split(":")[0]
        with open(lst, errors="replace") as f:
            for line in f:
                table[line.rstrip("\n")] = pkg
    return table


def owner_of(path, table):
    """The package owning path (trying its merged-/usr and resolved forms)."""
    cands = [path, os.path.realpath(path)]
    for p in list(cands):
        if p.startswith("/usr/"):
            cands.append(p[4:])
        else:
            cands.append("/usr" + p)
    for p in cands:
        if p in table:
            return table[p]
    return None


def recorded_paths():
    """{path: [record names]} from every stored trace."""
    files = glob.glob(os.path.join(RECORDS, "*.paths"))
    files += glob.glob(os.path.join(CACHE, "*", "hostdeps*.paths"))
    used = {}
    for fname in files:
        with open(fname) as f:
            lines = f.read().splitlines()
        # An older record cannot tell a failed pkg-config lookup's scan of
        # every .pc file from a library in use: its .pc files are left out.
        old = not lines or lines[0] + "\n" != RECORD_HEADER
        for p in lines:
            if p and not p.startswith("#") and not (old and p.endswith(".pc")):
                used.setdefault(p, []).append(os.path.basename(fname))
    return used


def manifest_paths():
    """(used, optional) from tests/host-files.txt: 'cmd NAME', a path glob,
    or 'optional PATH' (a tool a build uses only when the host has it, such
    as git in the kernel's version script)."""
    used, optional = {}, set()
    with open(MANIFEST) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("optional "):
                optional.add(line[9:].strip())
                continue
            if line.startswith("cmd "):
                name = line[4:].strip()
                path = shutil.which(name)
                if not path:
                    used.setdefault(f"(command {name})", []).append(f"host-files.txt:{n}")
                    continue
                used.setdefault(path, []).append(f"host-files.txt:{n}")
            else:
                hits = glob.glob(line)
                if not hits:
                    used.setdefault(f"(missing {line})", []).append(f"host-files.txt:{n}")
                for p in hits:
                    used.setdefault(p, []).append(f"host-files.txt:{n}")
    return used, optional


def ignored(path):
    if path.startswith(TOP + "/") or path.startswith(CACHE + "/"):
        return True
    # Python's startup reads every .pth file in its site directories,
    # whoever put it there; a module one of them adds is judged when a
    # file of it is opened.
    if path.endswith(".pth") and "/python3" in path:
        return True
    return path.startswith(IGNORED)


def cmd_trace(argv):
    if "--" not in argv:
        die("usage: hostdeps.py trace NAME [--store FILE] -- CMD...")
    i = argv.index("--")
    head, cmd = argv[:i], argv[i + 1:]
    if not head or not cmd:
        die("usage: hostdeps.py trace NAME [--store FILE] -- CMD...")
    name, store = head[0], None
    if len(head) == 3 and head[1] == "--store":
        store = head[2]
    if not shutil.which("strace"):
        die("strace missing (tests/deps.sh installs it)")
    os.makedirs(RECORDS, exist_ok=True)
    raw = os.path.join(RECORDS, f"{name}.strace")
    # -q, not -qq: the exit status of each process is needed (see used_paths)
    rc = subprocess.call(["strace", "-f", "-q", "-z", "--seccomp-bpf", "-e", "signal=none",
                          "-e", "trace=execve,open,openat,openat2", "-o", raw] + cmd)
    try:
        with open(raw, errors="replace") as f:
            paths = used_paths(f)
        os.unlink(raw)
    except FileNotFoundError:
        paths = set()
    text = RECORD_HEADER + "".join(p + "\n" for p in sorted(paths))
    for dest in filter(None, (os.path.join(RECORDS, f"{name}.paths"), store)):
        with open(dest, "w") as f:
            f.write(text)
    return rc


def used_paths(lines):
    """The paths an `strace -f -q -z` log shows in use. pkgconf reads every
    .pc file there is when a lookup fails (configure probes for optional
    libraries it then leaves out), so the .pc files a failed pkg-config
    process opened are not inputs; those of a successful one are."""
    procs = {}  # pid -> [paths, runs pkg-config, exit status]
    for line in lines:
        m = STRACE_LINE.match(line)
        if not m:
            continue
        pid, call = m.groups()
        proc = procs.setdefault(pid, [[], False, 0])
        e = STRACE_EXIT.match(call)
        if e:
            proc[2] = int(e.group(1))
            continue
        m = STRACE_PATH.search(call)
        if not m or ignored(m.group(1)):
            continue
        path = os.path.normpath(m.group(1))
        if call.startswith("execve(") and os.path.basename(path) in PKGCONF:
            proc[1] = True
        proc[0].append(path)
    used = set()
    for paths, pkgconf, status in procs.values():
        failed_lookup = pkgconf and status != 0
        used.update(p for p in paths if not (failed_lookup and p.endswith(".pc")))
    return used


def judge(used, optional=()):
    """(problems, files from packages) for {path: [sources]}; paths in
    optional are used when present and not judged."""
    pkgs, provides = installed()
    roots = deps_packages()
    missing = [r for r in roots if r not in pkgs and r not in provides]
    allowed = closure(roots, pkgs, provides)
    allowed |= closure([p for p, (base, _) in pkgs.items() if base], pkgs, provides)
    table = owners()
    problems = [f"tests/deps.sh lists {r}, which is not installed" for r in missing]
    owned = 0
    for path in sorted(used):
        srcs = ", ".join(sorted(set(used[path])))
        if path.startswith("("):
            problems.append(f"{path[1:-1]}: not on this machine (listed in {srcs})")
            continue
        # directories belong to many packages; what is in them is judged
        if ignored(path) or path in optional or not os.path.exists(path) or os.path.isdir(path):
            continue
        pkg = owner_of(path, table)
        if pkg is None:
            if path.startswith(("/usr/local/", "/opt/")):
                problems.append(f"{path} (used by {srcs}) belongs to no package: installed by hand?")
            continue
        owned += 1
        if pkg not in allowed:
            problems.append(f"{path} (used by {srcs}) comes from package {pkg}, which "
                            f"tests/deps.sh does not install (add it, or what needs it)")
    return problems, owned


def cmd_check():
    used = recorded_paths()
    traced = len(used)
    listed, optional = manifest_paths()
    for p, srcs in listed.items():
        used.setdefault(p, []).extend(srcs)
    problems, owned = judge(used, optional)
    print(f"hostdeps: {traced} traced paths and the manifest, {owned} files from packages")
    for p in problems:
        print(f"hostdeps: {p}")
    if problems:
        print(f"hostdeps: FAIL ({len(problems)} problem(s))")
        return 1
    print("hostdeps: every host file the build used comes from tests/deps.sh's packages")
    return 0


def cmd_why(paths):
    problems, _ = judge({os.path.abspath(p): ["command line"] for p in paths})
    for p in problems:
        print(p)
    return 1 if problems else 0


def main(argv):
    if len(argv) < 2:
        die("usage: hostdeps.py trace|check|why ...")
    if argv[1] == "trace":
        return cmd_trace(argv[2:])
    if argv[1] == "check":
        return cmd_check()
    if argv[1] == "why":
        return cmd_why(argv[2:])
    die(f"unknown command {argv[1]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
