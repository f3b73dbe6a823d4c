#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare, sample by sample, the user stack the kernel unwound with the
one perf unwound with DWARF from the same sample's stack copy (make oracle,
demo/guest-oracle.sh).

perf script prints a sample's callchain as the kernel's user frames
followed by perf's DWARF frames; perf report -D gives the raw callchain,
hence how many of the printed frames are the kernel's. A kernel frame
matches a DWARF frame at the same depth when the addresses are equal, or
for callers when the DWARF one is the return address minus one (libdw
reports the call, the kernel the return address).

Usage: python3 -m demo.oracle RESULTS_LOG OUTDIR [--min-equal PCT]
       [--described PROGRAM=FDES]...
(from the top directory). With --min-equal (make oracle-arm64, which
measures no start-up), each program must have no wrong frame, and at
least PCT % of its samples whose DWARF unwind is whole (not shorter than
the kernel's) equal: an "oracle-check" line says so. --described gives
the functions PROGRAM's own section describes (FDES: "start size" lines,
hex and decimal, objdump --sframe's), for a static program whose C
library has no section: a kernel stack that ends at a frame in code the
section does not describe, where DWARF goes on, ends where the walk may
not guess ("section_ends"), and counts with the equal ones.
"""
import argparse
import re
import sys

from harness import guestlog

PERF_CONTEXT_MAX = 0xFFFFFFFFFFFFF001


def blocks(path):
    """{(kind, name): text} of the script and raw blocks, and the run lines."""
    log = guestlog.read(path)
    out = {}
    for kind, what in (("script", "perf script output"), ("raw", "perf report -D output")):
        for name, text in log.texts(f"oracle-{kind}", "oracle", what).items():
            out[kind, name] = text
    runs = [line for line in log.lines
            if line.startswith(("### oracle-run", "### oracle-startup", "# "))]
    # Every program that began a block, even one whose output did not decode.
    names = {name for tag, name in log.blocks if tag in ("oracle-script", "oracle-raw")}
    return out, runs, names


def raw_chains(text):
    """{(tid, time_ns): [user addresses]} from perf report -D."""
    chains, key = {}, None
    for line in text.splitlines():
        # A system-wide recording's lines begin with the CPU.
        m = re.match(r"(?:\d+ )?(\d+) \S+ \[\S+\]: PERF_RECORD_SAMPLE\(.*?\): (\d+)/(\d+):",
                     line)
        if m:
            key = (int(m.group(3)), int(m.group(1)))
            chains[key] = []
            continue
        m = re.match(r"\.\.\.\.\. +\d+: ([0-9a-f]+)", line)
        if m and key is not None:
            a = int(m.group(1), 16)
            if a < PERF_CONTEXT_MAX:
                chains[key].append(a)
    return chains


def script_samples(text):
    """[(comm, tid, time_ns, [(addr, sym, dso)])] from perf script."""
    out, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            cur = None
            continue
        if not line[0].isspace():
            m = re.match(r"\s*(.*?)\s+(\d+)\s+(\d+)\.(\d{9}):", line)
            if not m:
                cur = None
                continue
            cur = (m.group(1), int(m.group(2)), int(m.group(3)) * 10**9 + int(m.group(4)), [])
            out.append(cur)
            continue
        if cur is None:
            continue
        m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            cur[3].append((int(m.group(1), 16), m.group(2), m.group(3)))
    return out


def same(i, k, d):
    return k == d or (i > 0 and k - 1 == d)


def fmt(frames):
    return " <- ".join(f"{s}" if s != "[unknown]" else f"{a:#x}" for a, s, _ in frames)


KINDS = ("equal", "kernel_shorter", "dwarf_shorter", "differ", "unmatched")
# make oracle-arm64's, with --described.
ORACLE_KINDS = ("equal", "section_ends") + KINDS[1:]


def read_fdes(path):
    """[(start, end)] of an FDES file's functions."""
    out = []
    with open(path) as f:
        for line in f:
            start, size = line.split()
            out.append((int(start, 16), int(start, 16) + int(size)))
    return out


def described(fdes, i, addr):
    """Is frame @i's @addr in a function of @fdes? A caller's return
    address may be just past its function's end: the call is before it."""
    a = addr - 1 if i > 0 else addr
    return any(s <= a < e for s, e in fdes)


def classify(frames, kern):
    """How a sample's kernel stack compares with its DWARF one: (kind,
    kernel frames, DWARF frames, index of the first difference or None).
    @frames: perf script's frames of the sample (the kernel's, then
    DWARF's); @kern: the kernel's user addresses from the raw callchain,
    None if the sample is not there. "differ": a kernel frame that is not
    DWARF's at its depth, a wrong frame."""
    if kern is None or len(kern) > len(frames):
        return "unmatched", frames, [], None
    k, d = frames[: len(kern)], frames[len(kern):]
    common = min(len(k), len(d))
    bad = next((i for i in range(common) if not same(i, k[i][0], d[i][0])), None)
    if bad is not None:
        what = "differ"
    elif len(k) == len(d):
        what = "equal"
    elif len(k) < len(d):
        what = "kernel_shorter"
    else:
        what = "dwarf_shorter"
    return what, k, d, bad


def dwarf_lost(frames, kern):
    """@frames with DWARF's cut before its first frame in no object: an
    address perf maps to nothing (arm64's vDSO has given 0x1) is where
    DWARF's unwind went astray, not a frame to compare."""
    if kern is None:
        return frames
    n = len(kern)
    lost = next((i for i in range(n, len(frames)) if frames[i][2] == "[unknown]"), len(frames))
    return frames[:lost]


def compare(name, script, raw, report, fdes=None):
    chains = raw_chains(raw)
    counts = dict.fromkeys(ORACLE_KINDS, 0)
    examples, where = {}, {}
    n = 0
    for comm, tid, t, frames in script_samples(script):
        if comm in ("perf", "env"):
            continue
        n += 1
        kern = chains.get((tid, t))
        what, k, d, bad = classify(dwarf_lost(frames, kern), kern)
        if what == "kernel_shorter" and fdes is not None and not described(fdes, len(k) - 1, k[-1][0]):
            what = "section_ends"
        counts[what] += 1
        if what == "unmatched":
            continue
        if what not in ("equal", "section_ends"):
            # The object of the frame whose step the kernel got wrong or
            # ended at.
            at = (bad - 1) if bad else len(k) - 1
            obj = k[at][2].rsplit("/", 1)[-1]
            where.setdefault(what, {}).setdefault(obj, 0)
            where[what][obj] += 1
            if len(examples.setdefault(what, [])) < 3:
                examples[what].append((bad, k, d))
    line = f"{name:8} samples {n:6}"
    for c, v in counts.items():
        line += f"  {c} {v} ({100.0 * v / max(n, 1):.1f}%)"
    print(line)
    for what, objs in where.items():
        top = sorted(objs.items(), key=lambda kv: -kv[1])[:6]
        print(f"  {what}, by the object of the last frame both agree on: "
              + ", ".join(f"{o} {c}" for o, c in top))
    for what, ex in examples.items():
        for bad, k, d in ex:
            report.write(f"{name} {what} (first difference at {bad}):\n  kernel: {fmt(k)}\n  dwarf:  {fmt(d)}\n")
    return counts, n


def check(name, counts, n, min_equal):
    """Does @name meet --min-equal? Printed as an oracle-check line."""
    whole = n - counts["unmatched"] - counts["dwarf_shorter"]
    eq = 100.0 * (counts["equal"] + counts["section_ends"]) / max(whole, 1)
    good = whole > 0 and counts["differ"] == 0 and eq >= min_equal
    ends = (f" (of which {counts['section_ends']} end where the section ends)"
            if counts["section_ends"] else "")
    print(f"oracle-check {name} {'ok' if good else 'fail'} equal={eq:.1f}%{ends} "
          f"wrong={counts['differ']} samples={whole} (of {n}; "
          f"DWARF shorter {counts['dwarf_shorter']}, unmatched {counts['unmatched']})")
    return good


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("outdir")
    ap.add_argument("--min-equal", type=float)
    ap.add_argument("--described", action="append", default=[], metavar="PROGRAM=FDES")
    args = ap.parse_args()
    fdes = {p: read_fdes(f) for p, f in (d.split("=", 1) for d in args.described)}
    log, outdir = args.log, args.outdir
    data, runs, names = blocks(log)
    names = sorted(names, key=lambda n: ["xz", "sqlite3", "python3"].index(n)
                   if n in ("xz", "sqlite3", "python3") else 9)
    for r in runs:
        print(r)
    ok = True
    with open(f"{outdir}/oracle-examples.txt", "w") as report:
        for name in names:
            if ("script", name) not in data or ("raw", name) not in data:
                print(f"{name}: missing output")
                ok = False
                continue
            counts, n = compare(name, data[("script", name)], data[("raw", name)], report,
                                fdes.get(name))
            ok &= n > 0
            if args.min_equal is not None:
                ok &= check(name, counts, n, args.min_equal)
    if args.min_equal is not None:
        if not names:
            print("oracle: no program's output")
            ok = False
    else:
        ok &= startup(runs)
    print(f"oracle: examples of every kind that is not 'equal' in {outdir}/oracle-examples.txt")
    return 0 if ok else 1


def startup(runs):
    """Print curl's start-up figures; False if they were not measured."""
    starts = [guestlog.fields(r) for r in runs
              if r.startswith("### oracle-startup")]
    starts = [d for d in starts if d.get("plain_ms", "").isdigit() and d.get("audit_ms", "").isdigit()]
    if starts:
        runs_n = sum(int(d["runs"]) for d in starts)
        plain = sum(int(d["plain_ms"]) for d in starts) / runs_n
        audit = sum(int(d["audit_ms"]) for d in starts) / runs_n
        print(f"start-up of curl (33 objects), {runs_n} starts each: {plain:.1f} ms plain, "
              f"{audit:.1f} ms with the LD_AUDIT module: +{audit - plain:.1f} ms "
              f"({100.0 * (audit - plain) / max(plain, 1e-9):+.0f}%) a start")
        empty = [int(d["empty_cache_ms"]) for d in starts
                 if d.get("empty_cache_ms", "").isdigit()]
        if len(empty) == len(starts):
            empty_ms = sum(empty) / runs_n
            print(f"  of which registering the sections: {audit - empty_ms:.1f} ms "
                  f"(the module with an empty cache: {empty_ms:.1f} ms a start)")
        return True
    print("start-up: not measured")
    return False


if __name__ == "__main__":
    sys.exit(main())
