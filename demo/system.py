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

The "late" recording is of programs started after the provider of file
tables (sframe-synth serve) came up, which map files nothing mapped
before: per program the same figures and the same check (MIN_EQUAL_LATE)
for the samples taken once the provider had answered for the files of
their stacks; a sample whose walk ended at a file still waited for is
"waiting" (short by design, counted apart; any wrong frame fails). From
the provider's log, how long after the first walk that met a file its
table was attached (the latency), with the provider's peak RSS and CPU
time.

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
# Programs started after the provider came up (demo/guest-system.sh's late
# phase): labelled by thread id (python3-late) or by command name.
LATE_PROGRAMS = ("python3-late", "zstd", "xz-ns", "bzip2-short", "gcc-build")
LATE_COMMS = {"zstd": "zstd", "xz-ns": "xz-ns", "bzip2": "bzip2-short",
              "gcc": "gcc-build", "cc1": "gcc-build", "as": "gcc-build"}
# Short-lived processes: MIN_EQUAL_SHORT.
LATE_SHORT = ("bzip2-short", "gcc-build")
MIN_EQUAL_LATE = 99.0
MIN_SAMPLES_LATE = 20


def label(comm, tid, pids):
    """The program a sample is of, or None (the shell, perf, cat...)."""
    if tid in pids:
        return pids[tid]
    return SHORT if comm == "xz" else None


def late_label(comm, tid, pids):
    """The late program a sample is of, or None."""
    if tid in pids:
        return pids[tid]
    return LATE_COMMS.get(comm)


def answers(lines):
    """{file name: CLOCK_MONOTONIC ns of the provider's answer} from its
    log lines ("# serveN: attached PATH (...) at SECONDS")."""
    out = {}
    for line in lines:
        m = re.match(r"# serve\d: (?:attached|nothing for) (\S+) .* at (\d+)\.(\d{9})$", line)
        if m:
            name = m.group(1).rsplit("/", 1)[-1]
            t = int(m.group(2)) * 10**9 + int(m.group(3))
            out[name] = min(t, out.get(name, t))
    return out


def late_waiting(answered):
    """For the late recording, whose times are CLOCK_MONOTONIC: whether a
    sample (thread @tid, time @t, kind @what, kernel frames @k) is
    "waiting" rather than counted against the program's exactness: its
    kernel stack is shorter than DWARF's and ends in a file the provider
    had not answered yet when it was taken (the walk ended there rather
    than guess); or it is, once per thread and file, the first such sample
    after the answer: a walk at sample time cannot attach the table, it
    ends there and asks for the deferred unwind that attaches it (as the
    selftests' first walks after an exec do). @answered: answers()."""
    attaching = set()

    def waiting(tid, t, what, k):
        if what != "kernel_shorter" or not k:
            return False
        name = k[-1][2].rsplit("/", 1)[-1]
        at = answered.get(name)
        if at is not None and at <= t:
            if (tid, name) in attaching:
                return False
            attaching.add((tid, name))
        return True

    return waiting


def dwarf_phase(script, raw, pids, report, phase, programs=PROGRAMS, labeller=label,
                waiting=None):
    """{program: {kind: count, "samples": n, "vdso": n, "waiting": n}} of
    one recording; writes a few examples of every kind but "equal" to
    @report. @waiting, if given, tells the samples counted as "waiting"
    instead of by their kind (late_waiting())."""
    chains = raw_chains(raw)
    out = {p: dict.fromkeys(KINDS + ("samples", "vdso", "waiting"), 0) for p in programs}
    shown = {}
    for comm, tid, t, frames in script_samples(script):
        prog = labeller(comm, tid, pids)
        if prog is None:
            continue
        c = out[prog]
        c["samples"] += 1
        if frames and frames[0][2] == "[vdso]":
            c["vdso"] += 1
        what, k, d, bad = classify(frames, chains.get((tid, t)))
        if waiting is not None and waiting(tid, t, what, k):
            c["waiting"] += 1
            continue
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


def provider_figures(lines):
    """What the provider's log and stats lines say: the latency of its
    answers (ms from the first walk that met a file to its table
    attached), and its peak RSS and CPU time."""
    since = sorted(float(m.group(1)) for line in lines
                   for m in [re.search(r"^# serve\d: attached .*, ([\d.]+) ms since asked", line)]
                   if m)
    nothing = sum(1 for line in lines if re.match(r"^# serve\d: nothing for ", line))
    failed = sum(1 for line in lines if re.match(r"^# serve\d: failed ", line))
    if since:
        def q(f):
            return since[min(len(since) - 1, int(f * len(since)))]

        print(f"system: late: provider answered {len(since)} files with a table, {nothing} "
              f"with nothing, {failed} failed; ms from the first walk to the answer: "
              f"min {since[0]:.0f}, median {q(0.5):.0f}, p90 {q(0.9):.0f}, max {since[-1]:.0f}")
    for line in lines:
        if line.startswith("### system-memory"):
            d = guestlog.fields(line)
            if d.get("file_bytes", "?").isdigit() and d.get("file_tables", "?").isdigit():
                tables, kib = int(d["file_tables"]), int(d["file_bytes"]) / 1024
                print(f"system: late: kernel memory of file tables: {kib:.0f} KiB for "
                      f"{tables} tables ({kib / max(tables, 1):.1f} KiB each), "
                      f"{d.get('files_in_use')} files mapped executable now; "
                      f"{d.get('files_wanted')} files asked for, {d.get('wants_dropped')} dropped")
        if line.startswith("### system-serve"):
            d = guestlog.fields(line)
            secs = int(d.get("cpu_ticks", 0)) / int(d.get("hz", 100))
            print(f"system: late: provider {d.get('name')}: peak RSS {int(d.get('rss_kb', 0)) / 1024:.1f} MiB, "
                  f"CPU {secs:.1f} s")


def main():
    path, outdir = sys.argv[1], sys.argv[2]
    log = guestlog.read(path)
    scripts = log.texts("system-script", "system")
    raws = log.texts("system-raw", "system", "perf report -D output")
    pids, late_pids = {}, {}
    for line in log.lines:
        if line.startswith(("### system-phase", "### system-agent", "### system-startup", "# ")):
            print(line)
        if line.startswith("### system-pids"):
            pids = {int(v): k for k, v in re.findall(r"([\w-]+)=(\d+)", line)}
        if line.startswith("### system-late-pids"):
            # python3-late by its thread; the others by command name.
            late_pids = {int(v): k for k, v in re.findall(r"([\w-]+)=(\d+)", line)
                         if k == "python3-late"}
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
        # Figures only (SYSTEM_FP=0 skips it).
        print("system: fp: not run")
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
    if "late" in scripts and "late" in raws:
        with open(f"{outdir}/system-examples.txt", "a") as report:
            late = dwarf_phase(scripts["late"], raws["late"], late_pids, report, "late",
                               LATE_PROGRAMS, late_label, late_waiting(answers(log.lines)))
        # The build only if it ran (SYSTEM_BUILD=1).
        built = "### system-build" in log.lines
        for prog in (p for p in LATE_PROGRAMS if built or p != "gcc-build"):
            c = late[prog]
            n = c["samples"]
            # Exactness once the provider answered: of the samples not
            # taken while a file of the stack was waited for, and whose
            # DWARF unwind is whole (not shorter than the kernel's).
            m = n - c["waiting"] - c["dwarf_shorter"]
            print(f"system: late   {prog:12} samples {n:5}  waiting {c['waiting']} "
                  f"({pct(c['waiting'], n):.1f}%)  "
                  + "  ".join(f"{k} {c[k]} ({pct(c[k], n):.1f}%)" for k in KINDS)
                  + f"  vdso {c['vdso']}")
            eq = pct(c["equal"], m)
            # A short-lived process whose walk met a file just answered
            # ends there once (its address space attaches the table at its
            # next deferred walk): MIN_EQUAL_SHORT, as for xz-short.
            least = MIN_EQUAL_SHORT if prog in LATE_SHORT else MIN_EQUAL_LATE
            good = m >= MIN_SAMPLES_LATE and c["differ"] == 0 and eq >= least
            print(f"system-check late-{prog} {'ok' if good else 'fail'} "
                  f"equal={eq:.1f}% wrong={c['differ']} samples={m} "
                  f"waiting={c['waiting']} dwarf_shorter={c['dwarf_shorter']} vdso={c['vdso']}")
            ok &= good
        provider_figures(log.lines)
    else:
        print("system-check late fail missing")
        ok = False
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
