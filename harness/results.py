#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise a `make check` run: one line per suite, then `N passed, N failed`.
With --guest, only the guest's suites (make check-arm64).

Inputs (in LOGS): host-test.log (cargo test), py-test.log (unittest),
series.log (ok/not ok lines), guest/console.log (kernel log with KUnit's KTAP), guest/results.log (the
kselftests' TAP between "### selftest NAME" and "### exit NAME RC" lines),
guest/rc (QEMU's exit status).  Exit status 1 on any failure, including a
kernel splat in the console or a guest that did not finish.
"""
import os
import re
import sys

RESULT = re.compile(r"^(\s*)(not ok|ok) (\d+)\s*-?\s*(.*?)\s*(#\s*(SKIP|TODO).*)?$")
SPLATS = [
    r"BUG:", r"WARNING:", r"Oops", r"Kernel panic", r"general protection fault",
    r"possible circular locking", r"possible recursive locking",
    r"inconsistent lock state", r"suspicious RCU usage", r"INFO: lockdep",
    r"sleeping function called from invalid context", r"KASAN:", r"UBSAN:",
    r"kmemleak: .*new suspected memory leaks", r"rcu: INFO: rcu_.*stall",
    r"watchdog: BUG: soft lockup", r"INFO: task .* blocked for more than",
    # A backtrace's header: x86's "Call Trace:", arm64's "Call trace:".
    r"rust_kernel: panicked", r"Call [Tt]race:",
]
SPLAT = re.compile("|".join(SPLATS))
STAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
# warn_alloc()'s report of a failed allocation, with a stack trace: what
# the fault-injection tests (fail-nth) make happen on purpose. Its "Call
# Trace:" a few lines below is not a splat; anything else still is.
ALLOC_FAILURE = re.compile(r": (vmalloc error: |page allocation failure: )")
ALLOC_TRACE_LINES = 6
CALL_TRACE = re.compile(r"Call [Tt]race:")


class Suite:
    def __init__(self, name):
        self.name, self.passed, self.failed, self.skipped, self.notes = name, 0, 0, 0, []

    def add(self, ok, skip=False, note=None):
        if skip:
            self.skipped += 1
        elif ok:
            self.passed += 1
        else:
            self.failed += 1
            if note:
                self.notes.append(note)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return None


def host_tests(logs):
    s = Suite("host: cargo test (rust/sframe, sframe_synth)")
    lines = read(os.path.join(logs, "host-test.log"))
    if lines is None:
        s.add(False, note="no host-test.log")
        return [s]
    seen = False
    for l in lines:
        m = re.match(r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored", l)
        if m:
            seen = True
            s.passed += int(m.group(2))
            s.failed += int(m.group(3))
            s.skipped += int(m.group(4))
        m = re.match(r"test (\S+) \.\.\. FAILED", l)
        if m:
            s.notes.append(m.group(1))
    if not seen or any(l.startswith("error") for l in lines):
        s.add(False, note="cargo test did not run to the end")
    return [s]


def py_tests(logs):
    """tools/unwind_user/python's unittest -v output."""
    s = Suite("host: python3.11 unittest (tools/unwind_user/python)")
    lines = read(os.path.join(logs, "py-test.log"))
    ran = None
    for l in lines or []:
        m = re.match(r"Ran (\d+) tests? in", l)
        if m:
            ran = int(m.group(1))
        m = re.match(r"(FAIL|ERROR): (\S+)", l)
        if m:
            s.failed += 1
            s.notes.append(m.group(2))
    if ran is None:
        s.add(False, note="no py-test.log" if lines is None else "unittest did not run to the end")
        return [s]
    s.passed += max(0, ran - s.failed)
    return [s]


def flat_tap(name, lines):
    s = Suite(name)
    for l in lines:
        m = RESULT.match(l)
        if m and not m.group(1):
            s.add(m.group(2) == "ok", bool(m.group(6)), m.group(4))
        elif l.startswith("#   "):
            s.notes.append(l[4:])
    return s


def verdicts(name, lines, tag):
    """A suite of the "TAG PROGRAM ok|fail DETAILS" lines of a report (make
    oracle-arm64's oracle-check lines); failed if it has none."""
    s = Suite(name)
    for l in lines:
        f = l.split(None, 3)
        if len(f) >= 3 and f[0] == tag:
            s.add(f[2] == "ok", note=f"{f[1]}: {f[3] if len(f) > 3 else ''}")
    if not s.passed + s.failed:
        s.add(False, note=f"no {tag} line")
    return s


def kunit(console):
    """KTAP from the kernel log: suite results at depth 0, their cases at depth 1."""
    suites, cur = [], None
    for raw in console:
        l = STAMP.sub("", raw.rstrip("\r"))
        m = re.match(r"^    # Subtest: (\S+)", l)
        if m:
            cur = Suite("kunit: " + m.group(1))
            suites.append(cur)
            continue
        m = RESULT.match(l)
        if not m or cur is None:
            continue
        depth = len(m.group(1)) // 4
        if depth == 1:
            cur.add(m.group(2) == "ok", bool(m.group(6)), m.group(4))
        elif depth == 0 and m.group(4) == cur.name[len("kunit: "):]:
            if cur.passed + cur.failed + cur.skipped == 0:
                cur.add(m.group(2) == "ok", bool(m.group(6)), m.group(4))
            cur = None
    return suites


def selftests(results):
    suites, cur, buf = [], None, []
    for l in results:
        m = re.match(r"^### selftest (\S+)", l)
        if m:
            cur, buf = m.group(1), []
            continue
        m = re.match(r"^### exit (\S+) (\d+)", l)
        if m and cur:
            s = flat_tap("selftest: " + cur, buf)
            rc = int(m.group(2))
            if rc not in (0, 4):  # 4 = KSFT_SKIP
                s.add(False, note=f"exit status {rc}")
            elif s.passed + s.failed + s.skipped == 0:
                s.add(False, note="no TAP results")
            suites.append(s)
            cur = None
            continue
        if cur:
            buf.append(l)
    if cur:
        s = flat_tap("selftest: " + cur, buf)
        s.add(False, note="did not finish")
        suites.append(s)
    return suites


def splats(console):
    """The splat lines of a kernel log, timestamps removed."""
    found, alloc_at = [], None
    for i, l in enumerate(console):
        if ALLOC_FAILURE.search(l):
            alloc_at = i
        elif SPLAT.search(l):
            excused = (alloc_at is not None and CALL_TRACE.search(l)
                       and i - alloc_at <= ALLOC_TRACE_LINES)
            if not excused:
                found.append(STAMP.sub("", l))
    return found


def clean_log(name, path):
    s = Suite(name)
    console = read(path)
    if console is None:
        s.add(False, note=f"no {path}")
        return s
    bad = splats(console)
    s.add(not bad, note="kernel log: " + "; ".join(bad[:5]))
    return s


def guest(logs):
    g = os.path.join(logs, "guest")
    console = read(os.path.join(g, "console.log")) or []
    results = read(os.path.join(g, "results.log")) or []
    health = Suite("guest: boot, clean log, kmemleak")
    rc = (read(os.path.join(g, "rc")) or ["?"])[0]
    health.add(rc == "0", note=f"QEMU exit status {rc} (124: timeout, guest hung)")
    health.add(any(l.startswith("guest: done") for l in results),
               note="guest did not reach the end of its tests")
    bad = splats(console)
    health.add(not bad, note="kernel log: " + "; ".join(bad[:5]))
    leak, inleak = [], False
    for l in results:
        if l.startswith("### kmemleak end"):
            inleak = False
        elif l.startswith("### kmemleak"):
            inleak = True
        elif inleak and l.strip():
            leak.append(l)
    health.add(not leak, note="kmemleak: " + " | ".join(leak[:4]))
    return [health] + kunit(console) + selftests(results)


def summary(suites):
    """Print one line a suite (and a failed one's first notes); return the
    totals passed, failed, skipped."""
    tp = tf = ts = 0
    for s in suites:
        status = "FAIL" if s.failed else "ok"
        print(f"{status:4} {s.name}: {s.passed} passed, {s.failed} failed"
              + (f", {s.skipped} skipped" if s.skipped else ""))
        for n in s.notes[:10] if s.failed else []:
            print(f"       - {n}")
        tp, tf, ts = tp + s.passed, tf + s.failed, ts + s.skipped
    return tp, tf, ts


def main():
    if sys.argv[1] == "--guest":
        # make check-arm64: its host checks (LOGS/host.log, ok/not ok lines),
        # its guest, under LOGS/guest, and make oracle-arm64's comparison
        # (LOGS/oracle.log, its guest's logs in LOGS/../oracle/run).
        logs = sys.argv[2]
        host = read(os.path.join(logs, "host.log")) or ["not ok 1 no host.log"]
        oracle = read(os.path.join(logs, "oracle.log")) or []
        finish(logs, [flat_tap("host: sframe-synth on arm64 objects", host)] + guest(logs)
               + [verdicts("oracle: kernel vs DWARF, per sample (perf, arm64)", oracle,
                           "oracle-check"),
                  clean_log("oracle guest: clean log",
                            os.path.join(logs, "..", "oracle", "run", "console.log"))])
    logs = sys.argv[1]
    series = read(os.path.join(logs, "series.log")) or []
    perf = read(os.path.join(logs, "perf.log")) or ["not ok 1 no perf.log"]
    lint = read(os.path.join(logs, "lint.log")) or ["not ok 1 no lint.log"]
    system = read(os.path.join(logs, "system-check.log")) or ["not ok 1 no system-check.log"]
    suites = (host_tests(logs) + py_tests(logs) + [flat_tap("series: git am + checkpatch", series),
                                  flat_tap("lint: rustfmt, clippy (host and kernel)", lint)]
              + guest(logs) + [flat_tap("perf tool: record --call-graph fp,defer and fp; Lua frames", perf),
                               clean_log("perf guest: clean log",
                                         os.path.join(logs, "demo", "run", "console.log")),
                               flat_tap("system-wide: programs started before perf, kernel vs DWARF",
                                        system),
                               clean_log("system-wide guest: clean log",
                                         os.path.join(logs, "system", "run", "console.log"))])
    finish(logs, suites)


def finish(logs, suites):
    """Print the summary of `suites` and exit: 1 if any failed."""
    tp, tf, _ = summary(suites)
    print(f"logs: {logs}")
    print(f"{tp} passed, {tf} failed")
    sys.exit(1 if tf else 0)


if __name__ == "__main__":
    main()
