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

Usage: python3 -m demo.oracle RESULTS_LOG OUTDIR   (from the top directory)
"""
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


def compare(name, script, raw, report):
    chains = raw_chains(raw)
    counts = dict.fromkeys(KINDS, 0)
    examples, where = {}, {}
    n = 0
    for comm, tid, t, frames in script_samples(script):
        if comm in ("perf", "env"):
            continue
        n += 1
        what, k, d, bad = classify(frames, chains.get((tid, t)))
        counts[what] += 1
        if what == "unmatched":
            continue
        if what != "equal":
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


def main():
    log, outdir = sys.argv[1], sys.argv[2]
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
            counts, n = compare(name, data[("script", name)], data[("raw", name)], report)
            ok &= n > 0
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
    else:
        print("start-up: not measured")
        ok = False
    print(f"oracle: examples of every kind that is not 'equal' in {outdir}/oracle-examples.txt")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
