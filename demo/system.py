#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make system's report (demo/guest-system.sh): per program, how many
samples of a whole-machine recording have a kernel user stack equal to
perf's DWARF unwind of the same sample, before and after the agent
attached the files' tables; and how many stacks of perf record
--call-graph fp,defer alone reach libc's start (__libc_start_main, _start).

A sample is the program's by its thread id (the long-running ones are
single-threaded; the guest prints their PIDs); any other xz is one of the
shell loop's short-lived processes. Lines for make check:

  system-check PROGRAM ok|fail KEY=VALUE...

ok when, after the agent, at least 99 % of the program's samples are
equal (97 % for the short-lived processes: MIN_EQUAL_SHORT), none has a
wrong frame (a kernel frame that is not DWARF's at its depth) and there
are at least MIN_SAMPLES of them.

Usage: python3 -m demo.system RESULTS_LOG OUTDIR   (from the top directory)
"""
import re
import sys

from demo.oracle import KINDS, classify, fmt, raw_chains, script_samples
from harness import guestlog

PROGRAMS = ("python3", "sqlite3", "xz", "xz-suid", "xz-short")
SHORT = "xz-short"
MIN_SAMPLES = 30
MIN_EQUAL = 99.0
# The short-lived processes spend a larger share of their samples in
# ld.so's and libc's start-up, where sframe-synth leaves out a few
# functions whose CFI SFrame cannot express (the kernel's stack then ends
# there: shorter, never wrong); and they get a few dozen samples each run,
# where one such sample is 1.5 %.
MIN_EQUAL_SHORT = 97.0


def label(comm, tid, pids):
    """The program a sample is of, or None (the shell, perf, cat...)."""
    if tid in pids:
        return pids[tid]
    return SHORT if comm == "xz" else None


def dwarf_phase(script, raw, pids, report, phase):
    """{program: {kind: count, "samples": n, "vdso": n}} of one recording;
    writes a few examples of every kind but "equal" to @report."""
    chains = raw_chains(raw)
    out = {p: dict.fromkeys(KINDS + ("samples", "vdso"), 0) for p in PROGRAMS}
    shown = {}
    for comm, tid, t, frames in script_samples(script):
        prog = label(comm, tid, pids)
        if prog is None:
            continue
        c = out[prog]
        c["samples"] += 1
        if frames and frames[0][2] == "[vdso]":
            c["vdso"] += 1
        what, k, d, bad = classify(frames, chains.get((tid, t)))
        c[what] += 1
        if what not in ("equal", "unmatched") and shown.get((prog, what), 0) < 3:
            shown[prog, what] = shown.get((prog, what), 0) + 1
            report.write(f"{phase} {prog} {what} (first difference at {bad}):\n"
                         f"  kernel: {fmt(k)}\n  dwarf:  {fmt(d)}\n")
    return out


def fp_phase(script, pids):
    """{program: (samples, stacks that reach _start)} of the fp,defer
    recording."""
    out = {p: [0, 0] for p in PROGRAMS}
    for comm, tid, _, frames in script_samples(script):
        prog = label(comm, tid, pids)
        if prog is None:
            continue
        out[prog][0] += 1
        # Down to libc's start: _start (named or not) called it.
        out[prog][1] += any(f[1].startswith(("__libc_start_main", "_start")) for f in frames[-2:])
    return out


def pct(a, b):
    return 100.0 * a / max(b, 1)


def main():
    path, outdir = sys.argv[1], sys.argv[2]
    log = guestlog.read(path)
    scripts = log.texts("system-script", "system")
    raws = log.texts("system-raw", "system", "perf report -D output")
    pids = {}
    for line in log.lines:
        if line.startswith(("### system-phase", "### system-agent", "### system-startup", "# ")):
            print(line)
        if line.startswith("### system-pids"):
            pids = {int(v): k for k, v in re.findall(r"([\w-]+)=(\d+)", line)}
    ok = bool(pids)
    if not ok:
        print("system: no program started")
    results = {}
    with open(f"{outdir}/system-examples.txt", "w") as report:
        for phase in ("before", "after"):
            if phase not in scripts or phase not in raws:
                # "before" only gives figures (SYSTEM_BEFORE=0 skips it).
                print(f"system: {phase}: {'not run' if phase == 'before' else 'missing output'}")
                ok &= phase == "before"
                continue
            results[phase] = dwarf_phase(scripts[phase], raws[phase], pids, report, phase)
            for prog, c in results[phase].items():
                n = c["samples"]
                print(f"system: {phase:6} {prog:8} samples {n:5}  "
                      + "  ".join(f"{k} {c[k]} ({pct(c[k], n):.1f}%)" for k in KINDS)
                      + f"  vdso {c['vdso']}")
    fp = fp_phase(scripts["fp"], pids) if "fp" in scripts else None
    if fp is None:
        print("system: fp: missing output")
        ok = False
    else:
        for prog, (n, whole) in fp.items():
            print(f"system: fp,defer {prog:8} samples {n:5}  reach libc's start {whole} "
                  f"({pct(whole, n):.1f}%)")
    after = results.get("after", {})
    before = results.get("before", {})
    for prog in PROGRAMS:
        c = after.get(prog)
        if c is None:
            print(f"system-check {prog} fail missing")
            ok = False
            continue
        n = c["samples"]
        eq = pct(c["equal"], n)
        good = (n >= MIN_SAMPLES and c["differ"] == 0
                and eq >= (MIN_EQUAL_SHORT if prog == SHORT else MIN_EQUAL))
        b = before.get(prog, {})
        fields = f"equal={eq:.1f}% wrong={c['differ']} samples={n} vdso={c['vdso']}"
        if b:
            fields += (f" before_equal={pct(b['equal'], b['samples']):.1f}%"
                       f" before_wrong={pct(b['differ'], b['samples']):.1f}%")
        if fp is not None:
            fields += f" fp_defer_whole={pct(fp[prog][1], fp[prog][0]):.1f}%"
        print(f"system-check {prog} {'ok' if good else 'fail'} {fields}")
        ok &= good
    starts = [guestlog.fields(line) for line in log.lines if line.startswith("### system-startup")]
    starts = [d for d in starts if d.get("plain_ms", "").isdigit() and d.get("attached_ms", "").isdigit()]
    if starts:
        runs = sum(int(d["runs"]) for d in starts)
        plain = sum(int(d["plain_ms"]) for d in starts) / runs
        attached = sum(int(d["attached_ms"]) for d in starts) / runs
        print(f"system: start-up of curl, {runs} starts each: {plain:.1f} ms with none of its "
              f"objects' tables attached, {attached:.1f} ms with all of them "
              f"({attached / max(plain, 1e-9):.2f}x)")
    print(f"system: examples of every kind that is not 'equal' in {outdir}/system-examples.txt")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
