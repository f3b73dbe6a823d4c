# SPDX-License-Identifier: GPL-2.0
"""make bench-hooks' report: each operation's time per call on the kernel
with the SFrame unwinder (nobody profiling) and without it, the fastest
of the rounds of each (interference only adds time), and their ratio.

Usage: python3 -m bench.hooks.report ON_RESULTS OFF_RESULTS
"""
import re
import sys

LINE = re.compile(r'hooks: op=(\S+) n=(\d+) ns=(\d+) what=(\S+) round=(\d+)')
# What the issue asks of a machine that does not profile.
LIMIT = 1.02


def parse(path):
    """{(op, what): [ns per call, one a round]} of one boot's results."""
    out = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.search(line)
            if m:
                out.setdefault((m[1], m[4]), []).append(int(m[3]))
    return out


def main(argv):
    on, off = parse(argv[1]), parse(argv[2])
    if not on or set(on) != set(off):
        print('bench-hooks: the two boots did not measure the same operations')
        return 1
    print('| operation | file | rounds | with the unwinder ns | without ns | ratio |')
    print('|---|---|---:|---:|---:|---:|')
    worst = 0.0
    for key in sorted(on):
        a, b = min(on[key]), min(off[key])
        ratio = a / b
        worst = max(worst, ratio)
        print(f'| {key[0]} | {key[1]} | {len(on[key])} | {a} | {b} | {ratio:.3f} |')
    verdict = 'ok' if worst <= LIMIT else 'over'
    print(f'bench-hooks: worst ratio {worst:.3f} (limit {LIMIT}): {verdict}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
