#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make systemd's report (demo/run-systemd.sh, demo/guest-systemd.sh): the
guest's checks of the provider's unit, and per late program how many
samples of the whole-machine recording have a kernel user stack equal to
perf's DWARF unwind of the same sample, as make system's late phase
counts them (demo/system.py's dwarf_phase(), late_waiting(),
provider_figures()): a sample whose walk ended at a file still waiting
for the provider's answer is "waiting", not counted against exactness;
any wrong frame fails.

Lines:
  systemd-check NAME ok|fail WHAT     each of the guest's checks, then the
                                      late programs', the console's, the
                                      guest's end
  systemd: PASS|FAIL (N checks passed, M failed)

Usage: python3 -m demo.systemd RUNDIR OUTDIR   (from the top directory)
"""
import re
import sys

from demo.oracle import KINDS
from demo.system import (MIN_EQUAL_LATE, MIN_EQUAL_SHORT, MIN_SAMPLES_LATE, answers,
                         dwarf_phase, late_label, late_waiting, pct, provider_figures)
from harness import guestlog, results

# python3-late and python3-after by their thread ids (the guest prints
# them), zstd and bzip2 by command name (demo.system.LATE_COMMS).
PROGRAMS = ("python3-late", "python3-after", "zstd", "bzip2-short")


def main():
    run, outdir = sys.argv[1], sys.argv[2]
    log = guestlog.read(f"{run}/results.log")
    checks = []

    def check(name, good, what):
        checks.append(good)
        print(f"systemd-check {name} {'ok' if good else 'fail'} {what}")

    pids = {}
    for line in log.lines:
        if line.startswith("### systemd-check "):
            _, _, name, verdict, *what = line.split(" ")
            check(name, verdict == "ok", " ".join(what))
        elif line.startswith("### systemd-late-pids"):
            pids = {int(v): k for k, v in re.findall(r"([\w-]+)=(\d+)", line)
                    if k.startswith("python3")}
        elif line.startswith(("### systemd-start", "### systemd-boot", "### systemd-phase",
                              "# pid1:", "# counters", "# perf record", "# kmemleak")):
            print(line.removeprefix("### "))
    for tag, name in (("systemd-journal", "journal.txt"), ("systemd-dmesg", "dmesg.txt"),
                      ("systemd-kmemleak", "kmemleak.txt")):
        texts = log.texts(tag, "systemd", name)
        if "boot" in texts:
            with open(f"{outdir}/{name}", "w") as f:
                f.write(texts["boot"])
    scripts = log.texts("systemd-script", "systemd")
    raws = log.texts("systemd-raw", "systemd", "perf report -D output")
    if "late" in scripts and "late" in raws and pids:
        with open(f"{outdir}/systemd-examples.txt", "w") as report:
            late = dwarf_phase(scripts["late"], raws["late"], pids, report, "late", PROGRAMS,
                               late_label, late_waiting(answers(log.lines)))
        for prog in PROGRAMS:
            c = late[prog]
            n = c["samples"]
            print(f"systemd: late {prog:13} samples {n:5}  waiting {c['waiting']} "
                  f"({pct(c['waiting'], n):.1f}%)  "
                  + "  ".join(f"{k} {c[k]} ({pct(c[k], n):.1f}%)" for k in KINDS))
            # Of the samples not taken while a file of the stack was
            # waited for, and whose DWARF unwind is whole.
            m = n - c["waiting"] - c["dwarf_shorter"]
            eq = pct(c["equal"], m)
            least = MIN_EQUAL_SHORT if prog == "bzip2-short" else MIN_EQUAL_LATE
            check(f"late-{prog}", m >= MIN_SAMPLES_LATE and c["differ"] == 0 and eq >= least,
                  f"equal={eq:.1f}% wrong={c['differ']} samples={m} waiting={c['waiting']} "
                  f"dwarf_shorter={c['dwarf_shorter']}")
        provider_figures(log.lines)
        print(f"systemd: examples of every kind that is not 'equal' in {outdir}/systemd-examples.txt")
    else:
        check("late", False, "no recording of the late programs")
    console = results.read(f"{run}/console.log") or []
    bad = results.splats(console)
    check("console-clean", console and not bad,
          "; ".join(bad[:5]) or ("no splat in the kernel console" if console else "no console log"))
    rc = (results.read(f"{run}/rc") or ["?"])[0]
    ended = any(line.startswith("### systemd-end") for line in log.lines)
    check("guest-finished", ended and rc == "0",
          f"test unit {'reached its end' if ended else 'did not finish'}, QEMU exit {rc} "
          "(0: the guest powered off; 124: timeout)")
    failed = checks.count(False)
    print(f"systemd: {'PASS' if failed == 0 and checks else 'FAIL'} "
          f"({checks.count(True)} checks passed, {failed} failed); "
          f"logs in {run}, journal and dmesg in {outdir}")
    return 1 if failed or not checks else 0


if __name__ == "__main__":
    sys.exit(main())
