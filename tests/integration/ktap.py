"""A small KTAP parser for KUnit results (/sys/kernel/debug/kunit/*/results
or the kernel log).

parse(text) -> list of Suite. A suite is a test line at the top level of a
document ("ok 1 ohca_cmd") whose subtest block ("# Subtest: ohca_cmd",
"1..N", indented case lines) precedes it; a case is a test line inside that
block. Lines may carry dmesg timestamps ("[   12.3] "), which are dropped;
indentation decides the level. Anything that is not KTAP is ignored, so
several results files can simply be concatenated.
"""

import re

_TS = re.compile(r"^\[\s*[0-9.]+\]\s?")
_RESULT = re.compile(r"^(not ok|ok) (\d+)(?: (?:- )?([^#]*?))?\s*(?:#\s*(\w+)(.*))?$")
_PLAN = re.compile(r"^1\.\.(\d+)")
_SUBTEST = re.compile(r"^# Subtest: (.*)$")


class Case:
    def __init__(self, name, number, status, directive=""):
        self.name = name
        self.number = number
        self.status = status  # "ok", "not ok", "skip"
        self.directive = directive

    def __repr__(self):
        return f"Case({self.name!r}, {self.status!r})"


class Suite:
    def __init__(self, name):
        self.name = name
        self.status = None  # the suite's own result line
        self.plan = None
        self.cases = []
        self.diagnostics = []  # "# ..." and other lines inside the block

    @property
    def failed(self):
        return [c for c in self.cases if c.status == "not ok"]

    @property
    def skipped(self):
        return [c for c in self.cases if c.status == "skip"]

    @property
    def passed(self):
        return [c for c in self.cases if c.status == "ok"]

    def problems(self):
        """Why this suite is not a pass (empty list: it passed)."""
        out = []
        if self.status is None:
            out.append(f"suite {self.name}: no result line (crashed or truncated?)")
        elif self.status == "not ok":
            out.append(f"suite {self.name}: not ok")
        if self.plan is None:
            out.append(f"suite {self.name}: no test plan")
        elif self.plan != len(self.cases):
            out.append(f"suite {self.name}: plan 1..{self.plan} but {len(self.cases)} results")
        for c in self.failed:
            out.append(f"suite {self.name}: not ok {c.number} {c.name}")
        return out

    def __repr__(self):
        return f"Suite({self.name!r}, {self.status!r}, {self.cases!r})"


def _status(word, directive):
    if directive and directive.upper() == "SKIP":
        return "skip"
    return word


def parse(text):
    suites = []
    current = None  # the suite whose subtest block we are in
    for raw in text.splitlines():
        line = _TS.sub("", raw.rstrip())
        body = line.lstrip(" \t")
        indent = len(line) - len(body)
        if not body:
            continue
        m = _SUBTEST.match(body)
        if m and indent > 0:
            current = Suite(m.group(1).strip())
            suites.append(current)
            continue
        m = _PLAN.match(body)
        if m:
            if current is not None and indent > 0 and current.plan is None:
                current.plan = int(m.group(1))
            continue
        m = _RESULT.match(body)
        if m:
            word, num, name, directive, rest = m.groups()
            name = (name or "").strip()
            status = _status(word, directive)
            if indent > 0:
                if current is None:
                    current = Suite("?")
                    suites.append(current)
                current.cases.append(Case(name, int(num), status,
                                          ((directive or "") + (rest or "")).strip()))
            else:
                # top level: the result of the suite whose block just ended
                suite = current
                if suite is None or suite.status is not None or (
                        name and suite.name != name):
                    suite = next((s for s in suites if s.name == name and s.status is None), None)
                if suite is None:
                    suite = Suite(name)
                    suites.append(suite)
                suite.status = status
                current = None
            continue
        if current is not None and indent > 0:
            current.diagnostics.append(body)
    return suites


def summary(suites):
    lines = []
    for s in suites:
        lines.append(f"{s.name}: {len(s.passed)} passed, {len(s.failed)} failed, "
                     f"{len(s.skipped)} skipped ({s.status or 'no result'})")
        for c in s.failed:
            lines.append(f"  not ok {c.number} {c.name}")
    return "\n".join(lines)
