#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise a `make vng` run like harness/results.py does `make check`'s.

Inputs (in OUTDIR): results.log, the TAP of run_kselftest.sh (one line
"ok N selftests: unwind_user: NAME" a test program, the program's own TAP
before it, indented with "# "); console.log, the kernel log (KUnit's KTAP,
splats, kmemleak); rc, vng's exit status. One line a suite, then
`N passed, N failed`; exit status 1 on any failure.
"""
import os
import re
import sys

from harness import results

TOP = re.compile(r"^(not ok|ok) (\d+) selftests: (\S+): (\S+)(\s*#\s*(\S+).*)?$")


def kselftests(lines):
    suites, buf, planned, cur = [], [], None, None
    for l in lines:
        m = re.match(r"^1\.\.(\d+)$", l)
        if m and planned is None:
            planned = int(m.group(1))
            continue
        m = re.match(r"^# selftests: (\S+): (\S+)$", l)
        if m:
            cur, buf = m.group(2), []
            continue
        m = TOP.match(l)
        if m:
            s = results.flat_tap("kselftest: " + m.group(4), buf)
            if m.group(6) == "SKIP" and s.passed + s.failed == 0:
                s.skipped = max(s.skipped, 1)
            elif m.group(1) != "ok":
                s.add(False, note=l)
            elif s.passed + s.failed + s.skipped == 0:
                s.add(True)
            suites.append(s)
            cur = None
            continue
        if cur is not None and l.startswith("# "):
            buf.append(l[2:])
    return suites, planned


def main():
    out = sys.argv[1]
    res = results.read(os.path.join(out, "results.log")) or []
    console = results.read(os.path.join(out, "console.log")) or []
    rc = (results.read(os.path.join(out, "rc")) or ["?"])[0]
    tests, planned = kselftests(res)
    health = results.Suite("vng guest: boot, all tests ran, clean log, kmemleak")
    health.add(planned is not None and len(tests) == planned,
               note=f"{len(tests)} of {planned} test programs reported"
               f" (vng exit status {rc}; 124: timeout)")
    bad = results.splats(console)
    health.add(not bad, note="kernel log: " + "; ".join(bad[:5]))
    leaks = [l for l in res if re.match(r"^# vng-guest: kmemleak: [1-9]", l)]
    health.add(not leaks, note="; ".join(leaks))
    suites = [health] + results.kunit(console) + tests
    tp, tf, ts = results.summary(suites)
    print(f"logs: {out}")
    print(f"{tp} passed, {tf} failed" + (f", {ts} skipped" if ts else ""))
    sys.exit(1 if tf else 0)


if __name__ == "__main__":
    main()
