"""Judging a run: problems in the guest's kernel log and the reports of a
sanitizer build of QEMU."""

import os
import re

# Kernel log lines that make a run fail (matched case-sensitively).
KLOG_PATTERNS = [
    r"WARNING:",
    r"BUG:",
    r"\bOops\b",
    r"general protection fault",
    r"KASAN",
    r"UBSAN",
    # lockdep's own reports (its boot banner "RCU lockdep checking is
    # enabled" and "lockdep: ..." info lines are not problems)
    r"possible deadlock",
    r"INFO: trying to register non-static key",
    r"turning off the locking correctness validator",
    r"possible circular locking",
    r"possible recursive locking",
    r"inconsistent lock state",
    r"suspicious RCU usage",
    r"Call Trace",
    r"Kernel panic",
    r"kernel BUG at",
    r"DEBUG_LOCKS_WARN_ON",
    r"blocked for more than",
    r"unreferenced object",  # kmemleak
    r"suspected memory leak",  # kmemleak scan summary
    r"ODEBUG:",  # debug objects
]
KLOG_RE = re.compile("|".join(KLOG_PATTERNS))


# A sanitizer build of QEMU (qemu-device/build.sh --asan) stops at its first
# report and writes it to <vm logdir>/sanitizer.<pid>; any such file, or a
# report on QEMU's stderr, fails the run. The options are harmless for an
# uninstrumented QEMU. Leak checking is off: QEMU itself leaks at exit, the
# engine's leaks are the fuzzers' and unit tests' business.
SANITIZER_RE = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: UndefinedBehaviorSanitizer"
                          r"|SUMMARY: (Address|UndefinedBehavior)Sanitizer")


def sanitizer_env(logdir):
    path = os.path.join(logdir, "sanitizer")
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ("halt_on_error=1:abort_on_error=1:detect_leaks=0:"
                           f"print_stacktrace=1:log_path={path}")
    env["UBSAN_OPTIONS"] = f"halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path={path}"
    return env


def sanitizer_reports(logdir, qemu_log=""):
    """Texts of the sanitizer reports of one VM (empty list: clean)."""
    out = []
    try:
        names = sorted(os.listdir(logdir))
    except FileNotFoundError:
        names = []
    for name in names:
        if name.startswith("sanitizer."):
            with open(os.path.join(logdir, name), errors="replace") as f:
                text = f.read()
            # ASan's makecontext warning (QEMU's coroutines) is no report
            if SANITIZER_RE.search(text):
                out.append(f"{name}:\n{text}")
    if SANITIZER_RE.search(qemu_log):
        out.append("qemu.log:\n" + qemu_log[-4000:])
    return out


def scan_kernel_log(text, allow=None):
    """Lines of a console or dmesg text that indicate a kernel problem."""
    allow_re = re.compile(allow) if allow else None
    hits = []
    for line in text.splitlines():
        if KLOG_RE.search(line) and not (allow_re and allow_re.search(line)):
            hits.append(line.rstrip())
    return hits
