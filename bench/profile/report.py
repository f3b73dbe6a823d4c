# SPDX-License-Identifier: GPL-2.0
"""make profile's report: the kernel instructions insn_plugin.c counted,
per function and per window (one unwind_user_types() call), with the
symbols of System.map; with --annotate FUNCTION, that function's
disassembly (objdump of vmlinux) with each instruction's count per window.

    python3 -m bench.profile.report COUNTS SYSTEM_MAP [--vmlinux VMLINUX
        --annotate FUNCTION] [--top N]
"""
import argparse
import bisect
import collections
import re
import subprocess
import sys


def read_counts(path):
    """The windows and {address: executions} of the plugin's output."""
    with open(path) as f:
        first = f.readline().split()
        if first[:1] != ['windows']:
            sys.exit(f'{path}: not insn_plugin output')
        counts = collections.Counter()
        for line in f:
            addr, n = line.split()
            counts[int(addr, 16)] += int(n)
    return int(first[1]), counts


def read_symbols(path):
    """System.map's text symbols, sorted: (addresses, names)."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in 'tTwW':
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def annotate(vmlinux, addrs, names, name, counts, windows):
    """objdump of function `name`, each line with its count per window."""
    try:
        i = names.index(name)
    except ValueError:
        sys.exit(f'{name}: not in System.map')
    start = addrs[i]
    # The next symbol at a higher address (aliases share one).
    end = next((a for a in addrs[i + 1:] if a > start), start + 4096)
    dump = subprocess.run(['objdump', '-d', '--no-show-raw-insn',
                           f'--start-address={start:#x}', f'--stop-address={end:#x}',
                           vmlinux], capture_output=True, text=True, check=True).stdout
    for line in dump.splitlines():
        m = re.match(r'\s*([0-9a-f]+):\s*(.*)', line)
        if m:
            n = counts.get(int(m.group(1), 16), 0)
            print(f'{n / windows:9.1f}  {m.group(1)}  {m.group(2)}' if n
                  else f'{"":9}  {m.group(1)}  {m.group(2)}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('counts')
    ap.add_argument('system_map')
    ap.add_argument('--vmlinux')
    ap.add_argument('--annotate')
    ap.add_argument('--top', type=int, default=25)
    a = ap.parse_args()
    if a.annotate and not a.vmlinux:
        ap.error('--annotate needs --vmlinux')
    windows, counts = read_counts(a.counts)
    if not windows:
        sys.exit('profile: no window: the start function never ran')
    addrs, names = read_symbols(a.system_map)
    if a.annotate:
        annotate(a.vmlinux, addrs, names, a.annotate, counts, windows)
        return
    per = collections.Counter()
    for addr, n in counts.items():
        i = bisect.bisect_right(addrs, addr) - 1
        per[names[i] if i >= 0 else hex(addr)] += n
    total = sum(per.values())
    print(f'profile: {windows} windows, {total / windows:.1f} instructions a window')
    for name, n in per.most_common(a.top):
        print(f'{n / windows:10.1f}  {name}')


if __name__ == '__main__':
    main()
